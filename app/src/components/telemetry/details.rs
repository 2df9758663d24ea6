//! The GPU page's current values (cards), running processes and recent events.

use super::{
    NoValue, celsius_text, gib_of_text, number_text, percent_text, share_percent, watts_number,
    watts_text,
};
use crate::domain::telemetry::{EventKind, GpuEvent, GpuProcess, LiveGpu, throttle_reason_names};
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use crate::text::format::date_text;
use chrono::{DateTime, Utc};
use leptos::either::{Either, EitherOf3};
use leptos::prelude::*;

/// A local date and time in the current language ("Nov 30, 2026 14:05:09").
fn local_date_time(
    i18n: leptos_i18n::I18nContext<Locale>,
    zone: &ZoneOffsets,
    at: DateTime<Utc>,
) -> String {
    let local = zone.local(at);
    format!(
        "{} {}",
        date_text(i18n, local.and_utc()),
        crate::domain::time_text::hour_minute_second(local)
    )
}

/// One labelled value card.
#[component]
fn Card(
    #[prop(into)] label: Signal<String>,
    #[prop(optional)] metric: &'static str,
    #[prop(default = None)] bar: Option<u64>,
    children: Children,
) -> impl IntoView {
    view! {
        <div class="stat-card" data-metric=metric>
            <dt>{label}</dt>
            <dd>
                <span class="stat-value">{children()}</span>
                {bar.map(|percent| view! {
                    <span class="meter" aria-hidden="true">
                        <span class="meter-fill" style=format!("width: {percent}%")></span>
                    </span>
                })}
            </dd>
        </div>
    }
}

/// The latest readings of a GPU as cards; a note when nothing was reported yet.
#[component]
pub fn CurrentValues(live: Option<LiveGpu>, total_mib: u64, zone: ZoneOffsets) -> impl IntoView {
    let i18n = use_i18n();
    let Some(live) = live else {
        return Either::Left(view! { <p class="empty">{t!(i18n, gpu_no_live)}</p> });
    };
    let r = live.readings;
    let at = live.at;

    let util = r.gpu_util;
    let used = r.memory_used_mib;
    let mem_util = r.mem_util;
    let temperature = r.temperature_c;
    let (power, limit) = (r.power_mw, r.power_limit_mw);
    let clock = r.sm_clock_mhz;
    let throttle = r.throttle_reasons;
    let (corrected, uncorrected) = (r.ecc_corrected, r.ecc_uncorrected);

    Either::Right(view! {
        <dl class="stat-cards">
            <Card
                label=Signal::derive(move || t_string!(i18n, card_utilisation).to_string())
                metric="gpu_util"
                bar=util.map(u64::from)
            >
                {match util {
                    Some(v) => Either::Left(view! { {move || percent_text(i18n, v)} }),
                    None => Either::Right(view! { <NoValue /> }),
                }}
            </Card>
            <Card
                label=Signal::derive(move || t_string!(i18n, card_memory).to_string())
                metric="memory_used"
                bar=used.map(|u| share_percent(u, total_mib))
            >
                {match used {
                    Some(v) => Either::Left(view! { {move || gib_of_text(i18n, v, total_mib)} }),
                    None => Either::Right(view! { <NoValue /> }),
                }}
            </Card>
            <Card
                label=Signal::derive(move || t_string!(i18n, card_mem_util).to_string())
                metric="mem_util"
            >
                {match mem_util {
                    Some(v) => Either::Left(view! { {move || percent_text(i18n, v)} }),
                    None => Either::Right(view! { <NoValue /> }),
                }}
            </Card>
            <Card
                label=Signal::derive(move || t_string!(i18n, card_temperature).to_string())
                metric="temperature"
            >
                {match temperature {
                    Some(v) => Either::Left(view! { {move || celsius_text(i18n, v)} }),
                    None => Either::Right(view! { <NoValue /> }),
                }}
            </Card>
            <Card
                label=Signal::derive(move || t_string!(i18n, card_power).to_string())
                metric="power"
            >
                {match power {
                    Some(v) => Either::Left(view! {
                        {move || watts_text(i18n, v)}
                        {limit.map(|limit| view! {
                            <span class="stat-sub">
                                {move || {
                                    let value = watts_number(i18n, limit);
                                    t_string!(i18n, card_power_limit, value = value).to_string()
                                }}
                            </span>
                        })}
                    }),
                    None => Either::Right(view! { <NoValue /> }),
                }}
            </Card>
            <Card
                label=Signal::derive(move || t_string!(i18n, card_sm_clock).to_string())
                metric="sm_clock"
            >
                {match clock {
                    Some(v) => Either::Left(view! {
                        {move || {
                            let value = number_text(i18n, f64::from(v), 0);
                            t_string!(i18n, value_mhz, value = value).to_string()
                        }}
                    }),
                    None => Either::Right(view! { <NoValue /> }),
                }}
            </Card>
            <Card
                label=Signal::derive(move || t_string!(i18n, card_throttle).to_string())
                metric="throttle"
            >
                {match throttle {
                    Some(0) => EitherOf3::A(view! { {t!(i18n, throttle_none)} }),
                    Some(mask) => EitherOf3::B(view! {
                        <span class="throttle-reasons">
                            {throttle_reason_names(mask)
                                .into_iter()
                                .map(|name| view! { <code>{name}</code> })
                                .collect_view()}
                        </span>
                    }),
                    None => EitherOf3::C(view! { <NoValue /> }),
                }}
            </Card>
            <Card
                label=Signal::derive(move || t_string!(i18n, card_ecc).to_string())
                metric="ecc"
            >
                {match (corrected, uncorrected) {
                    (None, None) => Either::Left(view! { <NoValue /> }),
                    (c, u) => Either::Right(view! {
                        {move || {
                            let count = |v: Option<u64>| {
                                v.map_or_else(|| "—".to_owned(), |v| number_text(i18n, v as f64, 0))
                            };
                            t_string!(i18n, ecc_counts, corrected = count(c), uncorrected = count(u))
                                .to_string()
                        }}
                    }),
                }}
            </Card>
            <Card
                label=Signal::derive(move || t_string!(i18n, card_sample_time).to_string())
                metric="sample_time"
            >
                <time datetime=at.to_rfc3339()>{move || local_date_time(i18n, &zone, at)}</time>
            </Card>
        </dl>
    })
}

/// Processes using the GPU, by memory used.
#[component]
pub fn ProcessTable(processes: Vec<GpuProcess>) -> impl IntoView {
    let i18n = use_i18n();
    if processes.is_empty() {
        return Either::Left(view! { <p class="hint">{t!(i18n, processes_none)}</p> });
    }
    let mut processes = processes;
    processes.sort_by_key(|p| (std::cmp::Reverse(p.used_memory_mib), p.pid));
    let rows = processes
        .into_iter()
        .map(|p| {
            let memory = match p.used_memory_mib {
                Some(mib) => Either::Left(view! {
                    {move || {
                        let value = number_text(i18n, mib as f64, 0);
                        t_string!(i18n, value_mib, value = value).to_string()
                    }}
                }),
                None => Either::Right(view! { <NoValue /> }),
            };
            view! {
                <tr>
                    <td class="num">{p.pid}</td>
                    <td class="num">{memory}</td>
                </tr>
            }
        })
        .collect_view();
    Either::Right(view! {
        <table class="telemetry-table process-table">
            <thead>
                <tr>
                    <th scope="col" class="num">{t!(i18n, col_pid)}</th>
                    <th scope="col" class="num">{t!(i18n, col_gpu_memory)}</th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
    })
}

/// Recent events, newest first, with times in the viewer's zone.
#[component]
pub fn EventTable(events: Vec<GpuEvent>, zone: ZoneOffsets) -> impl IntoView {
    let i18n = use_i18n();
    if events.is_empty() {
        return Either::Left(view! { <p class="hint">{t!(i18n, events_none)}</p> });
    }
    let zone = StoredValue::new(zone);
    let rows = events
        .into_iter()
        .map(|event| {
            let at = event.at;
            let (kind, code) = (event.kind, event.code);
            let text = move || match (kind, code) {
                (EventKind::Xid, Some(code)) => t_string!(i18n, event_xid, code = code).to_string(),
                (EventKind::Xid, None) => t_string!(i18n, event_xid_unknown).to_string(),
                (EventKind::Throttle, code) => {
                    let names = throttle_reason_names(code.map_or(0, |c| c as u64));
                    if names.is_empty() {
                        t_string!(i18n, event_throttle_cleared).to_string()
                    } else {
                        t_string!(i18n, event_throttle, reasons = names.join(", ")).to_string()
                    }
                }
                (EventKind::Added, _) => t_string!(i18n, event_added).to_string(),
                (EventKind::Vanished, _) => t_string!(i18n, event_vanished).to_string(),
                (EventKind::Returned, _) => t_string!(i18n, event_returned).to_string(),
            };
            view! {
                <tr data-kind=kind.as_str()>
                    <td>
                        <time datetime=at.to_rfc3339()>
                            {move || zone.with_value(|zone| local_date_time(i18n, zone, at))}
                        </time>
                    </td>
                    <td>{text}</td>
                </tr>
            }
        })
        .collect_view();
    Either::Right(view! {
        <table class="telemetry-table event-table">
            <thead>
                <tr>
                    <th scope="col">{t!(i18n, col_time)}</th>
                    <th scope="col">{t!(i18n, col_event)}</th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
    })
}
