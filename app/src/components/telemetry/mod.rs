//! Live GPU telemetry in the interface: polling, the source and silence markers, value
//! formatting, the GPU page's cards, tables and SVG charts.

mod chart;
mod details;
mod source;

pub use chart::{ChartRange, TelemetryChart};
pub use details::{CurrentValues, EventTable, ProcessTable};
pub use source::{SourceBadge, StaleBadge};

use crate::api::telemetry::get_live_fleet;
use crate::domain::numbers::format_decimal;
use crate::domain::telemetry::{LiveFleet, LiveGpu, LiveNode};
use crate::error::AppError;
use crate::i18n::*;
use crate::text::format::with_number_style;
use chrono::{DateTime, Utc};
use leptos::prelude::*;
use leptos_i18n::I18nContext;
use std::time::Duration;

/// A counter that goes up every `period` in the browser (never on the server), while the tab is
/// visible; the interval stops when the calling component is unmounted. Resources keyed on it
/// refetch on each tick.
pub fn use_poll(period: Duration) -> ReadSignal<u64> {
    let (tick, set_tick) = signal(0u64);
    Effect::new(move |_| {
        let handle = set_interval_with_handle(
            move || {
                if !document().hidden() {
                    set_tick.update(|n| *n += 1);
                }
            },
            period,
        )
        .ok();
        on_cleanup(move || {
            if let Some(handle) = handle {
                handle.clear();
            }
        });
    });
    tick
}

/// The current time: the browser's clock in the browser (chrono cannot read it on
/// `wasm32-unknown-unknown`), the system clock on the server.
pub fn now_utc() -> DateTime<Utc> {
    #[cfg(target_arch = "wasm32")]
    {
        DateTime::from_timestamp_millis(js_sys::Date::now() as i64).unwrap_or_default()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        Utc::now()
    }
}

/// The live values of the fleet, refetched every few seconds, with per-node and per-GPU views
/// that change only when that node's or GPU's values do.
#[derive(Clone, Copy)]
pub struct LiveFeed {
    fleet: Resource<Result<LiveFleet, AppError>>,
    /// Goes up on each poll (also used to refresh "no report for N min").
    pub tick: ReadSignal<u64>,
}

impl LiveFeed {
    /// Starts polling [`get_live_fleet`] every five seconds.
    pub fn new() -> Self {
        let tick = use_poll(Duration::from_secs(5));
        let fleet = Resource::new(move || tick.get(), |_| get_live_fleet());
        Self { fleet, tick }
    }

    fn read<R: PartialEq + Send + Sync + 'static>(
        self,
        f: impl Fn(&LiveFleet) -> R + Send + Sync + 'static,
    ) -> Memo<Option<R>> {
        let fleet = self.fleet;
        Memo::new(move |_| {
            fleet.with(|result| result.as_ref().and_then(|r| r.as_ref().ok()).map(&f))
        })
    }

    /// The agent state of node `id` (`None` until loaded, or when the portal does not know it).
    pub fn node(self, id: i64) -> Memo<Option<LiveNode>> {
        let inner = self.read(move |fleet| fleet.nodes.iter().find(|n| n.node_id == id).cloned());
        Memo::new(move |_| inner.get().flatten())
    }

    /// The latest values of GPU `id`.
    pub fn gpu(self, id: i64) -> Memo<Option<LiveGpu>> {
        let inner = self.read(move |fleet| fleet.gpus.iter().find(|g| g.gpu_id == id).cloned());
        Memo::new(move |_| inner.get().flatten())
    }

    /// Whether GPU `id` is flagged as no longer reported.
    pub fn vanished(self, id: i64) -> Memo<bool> {
        let inner = self.read(move |fleet| fleet.vanished.contains(&id));
        Memo::new(move |_| inner.get().unwrap_or(false))
    }
}

impl Default for LiveFeed {
    fn default() -> Self {
        Self::new()
    }
}

/// `value` with `decimals` places and the language's separators.
pub fn number_text(i18n: I18nContext<Locale>, value: f64, decimals: usize) -> String {
    with_number_style(i18n, |style| format_decimal(value, decimals, style))
}

/// "37%".
pub fn percent_text(i18n: I18nContext<Locale>, value: u8) -> String {
    t_string!(i18n, value_percent, value = value).to_string()
}

/// "64 °C".
pub fn celsius_text(i18n: I18nContext<Locale>, value: i16) -> String {
    t_string!(i18n, value_celsius, value = value).to_string()
}

/// Whole watts of a milliwatt reading ("312").
pub fn watts_number(i18n: I18nContext<Locale>, milliwatts: u32) -> String {
    number_text(i18n, f64::from(milliwatts) / 1000.0, 0)
}

/// "312 W".
pub fn watts_text(i18n: I18nContext<Locale>, milliwatts: u32) -> String {
    let value = watts_number(i18n, milliwatts);
    t_string!(i18n, value_watts, value = value).to_string()
}

/// GiB with one decimal of a MiB amount ("23.4").
pub fn gib_number(i18n: I18nContext<Locale>, mib: u64) -> String {
    number_text(i18n, mib as f64 / 1024.0, 1)
}

/// "23.4 / 79.6 GiB".
pub fn gib_of_text(i18n: I18nContext<Locale>, used_mib: u64, total_mib: u64) -> String {
    let used = gib_number(i18n, used_mib);
    let total = gib_number(i18n, total_mib);
    t_string!(i18n, value_gib_of, used = used, total = total).to_string()
}

/// Share of `used` in `total`, 0–100, for bars.
pub fn share_percent(used: u64, total: u64) -> u64 {
    (used.saturating_mul(100))
        .checked_div(total)
        .map_or(0, |p| std::cmp::min(p, 100))
}

/// A dash for a value the GPU did not report.
#[component]
pub fn NoValue() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <span class="no-value" title=move || t_string!(i18n, no_reading).to_string()>
            "—"
            <span class="visually-hidden">{t!(i18n, no_reading)}</span>
        </span>
    }
}
