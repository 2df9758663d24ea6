//! Where a node's values come from (simulated, NVML with its driver, no agent) and whether its
//! agent has gone silent.

use super::now_utc;
use crate::domain::telemetry::{LiveNode, SourceKind};
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use crate::text::format::date_text;
use crate::text::format::t_count;
use chrono::{DateTime, Utc};
use leptos::either::EitherOf3;
use leptos::prelude::*;

/// A badge for the source of a node's values: a loud "Simulated" for generated values,
/// "NVML · driver …" for real ones, "No agent" when nothing has reported. Nothing while the live
/// state is unknown (`None`).
#[component]
pub fn SourceBadge(#[prop(into)] node: Signal<Option<LiveNode>>) -> impl IntoView {
    let i18n = use_i18n();
    let source = Memo::new(move |_| {
        node.with(|node| {
            node.as_ref()
                .map(|node| (node.source, node.driver_version.clone()))
        })
    });
    move || {
        source.get().map(|(kind, driver)| match kind {
            Some(SourceKind::Simulated) => EitherOf3::A(view! {
                <span
                    class="badge badge-simulated"
                    data-source="simulated"
                    title=move || t_string!(i18n, source_simulated_hint).to_string()
                >
                    {t!(i18n, source_simulated)}
                </span>
            }),
            Some(SourceKind::Nvml) => {
                let text = move || match &driver {
                    Some(version) => {
                        t_string!(i18n, source_nvml_driver, version = version.clone()).to_string()
                    }
                    None => t_string!(i18n, source_nvml).to_string(),
                };
                EitherOf3::B(view! {
                    <span
                        class="source source-nvml"
                        data-source="nvml"
                        title=move || t_string!(i18n, source_nvml_hint).to_string()
                    >
                        {text}
                    </span>
                })
            }
            None => EitherOf3::C(view! {
                <span
                    class="source source-none"
                    data-source="none"
                    title=move || t_string!(i18n, source_none_hint).to_string()
                >
                    {t!(i18n, source_none)}
                </span>
            }),
        })
    }
}

/// Marks a node whose agent has been silent too long: "no report for N min", or, given the
/// viewer's `zone`, "since HH:MM". Nothing for a node that reports, or has no agent at all.
/// `tick` refreshes the minutes.
#[component]
pub fn StaleBadge(
    #[prop(into)] node: Signal<Option<LiveNode>>,
    #[prop(optional, into)] tick: Option<Signal<u64>>,
    #[prop(optional)] zone: Option<ZoneOffsets>,
) -> impl IntoView {
    let i18n = use_i18n();
    let silent = Memo::new(move |_| {
        node.with(|node| {
            node.as_ref()
                .filter(|node| node.stale && node.source.is_some())
                .map(|node| node.last_seen)
        })
    });
    let zone = StoredValue::new(zone);
    move || {
        silent.get().map(|last_seen| {
            let text = move || {
                if let Some(tick) = tick {
                    tick.track();
                }
                stale_text(i18n, last_seen, zone.get_value().as_ref(), now_utc())
            };
            let datetime = last_seen.map(|at| at.to_rfc3339());
            view! {
                <span
                    class="badge badge-stale"
                    title=move || t_string!(i18n, stale_hint).to_string()
                >
                    <span aria-hidden="true">"⚠ "</span>
                    <time datetime=datetime>{text}</time>
                </span>
            }
        })
    }
}

/// The text of a silent agent's marker.
pub fn stale_text(
    i18n: leptos_i18n::I18nContext<Locale>,
    last_seen: Option<DateTime<Utc>>,
    zone: Option<&ZoneOffsets>,
    now: DateTime<Utc>,
) -> String {
    let Some(seen) = last_seen else {
        return t_string!(i18n, stale_never).to_string();
    };
    match zone {
        Some(zone) => {
            let local = zone.local(seen);
            let mut time = crate::domain::time_text::hour_minute(local);
            if zone.local(now).date() != local.date() {
                time = format!("{} {time}", date_text(i18n, local.and_utc()));
            }
            t_string!(i18n, stale_since, time = time).to_string()
        }
        None => {
            let minutes = std::cmp::max((now - seen).num_minutes(), 1);
            t_count!(
                i18n,
                minutes,
                stale_for_minutes_singular,
                stale_for_minutes_plural
            )
        }
    }
}
