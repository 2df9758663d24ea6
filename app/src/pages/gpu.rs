//! `/gpus/:id`: one GPU's live values, processes, events and its last hour and day as charts.
//! The server renders all of it; a small island asks the server for the board again every ten
//! seconds (as HTML, in the viewer's language and zone) and swaps it in.

use crate::api::telemetry::{GpuPage, get_gpu_board, get_gpu_page};
use crate::components::calendar::use_browser_zone;
use crate::components::error::ErrorPanel;
use crate::components::telemetry::{
    ChartRange, CurrentValues, EventTable, ProcessTable, SourceBadge, StaleBadge, TelemetryChart,
    use_poll,
};
use crate::domain::chart::ValueRange;
use crate::domain::gpu::GpuStatus;
use crate::domain::telemetry::{GpuHistory, Metric, SourceKind, in_gib};
use crate::domain::zone::ZoneOffsets;
use crate::error::AppError;
use crate::i18n::*;
use crate::text::format::MemoryText;
use leptos::either::Either;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
use std::time::Duration;

/// The element whose content the refresh island replaces.
const BOARD_ID: &str = "gpu-board";

/// The GPU page.
#[component]
pub fn GpuDetailPage() -> impl IntoView {
    let i18n = use_i18n();
    let params = use_params_map();
    let id = params.with_untracked(|p| p.get("id").and_then(|raw| raw.parse::<i64>().ok()));
    let page = Resource::new(
        || (),
        move |()| async move {
            match id {
                Some(id) => get_gpu_page(id).await,
                None => Err(AppError::NotFound("GPU".into())),
            }
        },
    );
    view! {
        // A plain string, read once: leptos_meta reads a reactive title after the render, and
        // under load its signal was sometimes gone by then (a panic that cut the page off).
        <Title text=t_string!(i18n, gpu_title).to_string() />
        <section class="gpu-page">
            <p class="breadcrumb">
                <a href="/">{t!(i18n, back_to_inventory)}</a>
            </p>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    page.get()
                        .map(|result| match result {
                            Ok(page) => Either::Left(view! {
                                <GpuRefresh id=page.gpu.id />
                                <div id=BOARD_ID class="gpu-board">
                                    <GpuView page />
                                </div>
                            }),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

/// The GPU's board (values, charts, tables) as HTML, rendered on the server for the refresh
/// island, in the language and time zone of the request.
#[cfg(feature = "ssr")]
pub fn board_html(page: GpuPage) -> String {
    // In the request's language (cookie or `Accept-Language` header).
    crate::text::language::in_request_language(|_| view! { <GpuView page /> }.to_html())
}

/// Refreshes the board every ten seconds, and at once when the browser has just told the
/// server its time zone (an island). A failed refresh keeps the last board and says why.
#[cfg_attr(feature = "hydrate", island(lazy))]
#[cfg_attr(not(feature = "hydrate"), island)]
fn GpuRefresh(id: i64) -> impl IntoView {
    let zone_known = use_browser_zone();
    let tick = use_poll(Duration::from_secs(10));
    let (failure, set_failure) = signal(None::<AppError>);
    Effect::new(move |first: Option<()>| {
        tick.track();
        zone_known.track();
        // The first run is the page the server just sent.
        if first.is_none() {
            return;
        }
        leptos::task::spawn_local(async move {
            match get_gpu_board(id).await {
                Ok(html) => {
                    if let Some(board) = document().get_element_by_id(BOARD_ID) {
                        board.set_inner_html(&html);
                    }
                    set_failure.set(None);
                }
                Err(error) => set_failure.set(Some(error)),
            }
        });
    });
    move || failure.get().map(|error| view! { <ErrorPanel error /> })
}

#[component]
fn GpuView(page: GpuPage) -> impl IntoView {
    let i18n = use_i18n();
    let GpuPage {
        gpu,
        node_name,
        hostname,
        pci_bus_id,
        node,
        live,
        vanished,
        hour,
        day,
        events,
        zone,
        now: _,
        access,
    } = page;
    let status = gpu.status;
    let status_label = move || match status {
        GpuStatus::Active => t_string!(i18n, status_active).to_string(),
        GpuStatus::Maintenance => t_string!(i18n, status_maintenance).to_string(),
        GpuStatus::Retired => t_string!(i18n, status_retired).to_string(),
    };
    let stale = node.as_ref().is_some_and(|n| n.stale);
    let simulated = hour.simulated
        || day.simulated
        || node
            .as_ref()
            .is_some_and(|n| n.source == Some(SourceKind::Simulated));
    let total_mib = gpu.memory.mib();
    let power_limit_w = live
        .as_ref()
        .and_then(|l| l.readings.power_limit_mw)
        .map_or(0.0, |mw| f64::from(mw) / 1000.0);
    let processes = live
        .as_ref()
        .map(|l| l.processes.clone())
        .unwrap_or_default();
    let zone_name = zone.name.clone();
    let node_signal = Signal::stored(node);

    view! {
        <header class="gpu-head" class:stale=stale>
            <div class="gpu-title">
                <h1>{gpu.model.clone()}</h1>
                <span class=format!("status status-{}", status.as_str())>{status_label}</span>
                <SourceBadge node=node_signal />
                <StaleBadge node=node_signal zone=zone.clone() />
                {vanished.then(|| view! {
                    <span class="badge badge-missing" title=move || t_string!(i18n, gpu_missing_hint).to_string()>
                        {t!(i18n, gpu_missing)}
                    </span>
                })}
            </div>
            <dl class="gpu-facts">
                <div>
                    <dt>{t!(i18n, gpu_node)}</dt>
                    <dd>{node_name}" "<span class="node-host">"("{hostname}")"</span></dd>
                </div>
                <div>
                    <dt>{t!(i18n, gpu_uuid)}</dt>
                    <dd class="mono">{gpu.uuid.clone()}</dd>
                </div>
                {pci_bus_id.map(|pci| view! {
                    <div>
                        <dt>{t!(i18n, gpu_pci_bus)}</dt>
                        <dd class="mono">{pci}</dd>
                    </div>
                })}
                <div>
                    <dt>{t!(i18n, gpu_device_index)}</dt>
                    <dd>{gpu.device_index}</dd>
                </div>
                <div>
                    <dt>{t!(i18n, gpu_memory_total)}</dt>
                    <dd><MemoryText memory=gpu.memory /></dd>
                </div>
            </dl>
        </header>
        {vanished.then(|| view! { <p class="notice notice-warn" role="note">{t!(i18n, gpu_vanished_note)}</p> })}
        <crate::pages::incident::ReportProblem gpu_id=gpu.id back=format!("/gpus/{}", gpu.id) />
        {stale.then(|| view! { <p class="notice notice-warn" role="note">{t!(i18n, stale_hint)}</p> })}

        <section class="gpu-section" class:stale=stale aria-labelledby="current-heading">
            <div class="section-head">
                <h2 id="current-heading">{t!(i18n, gpu_current)}</h2>
                {simulated.then(|| view! {
                    <span class="badge badge-simulated">{t!(i18n, history_simulated)}</span>
                })}
            </div>
            <CurrentValues live=live.clone() total_mib zone=zone.clone() />
        </section>

        <HistorySection
            window=ChartRange::Hour
            history=hour
            zone=zone.clone()
            total_mib
            power_limit_w
            simulated
        />
        <HistorySection
            window=ChartRange::Day
            history=day
            zone=zone.clone()
            total_mib
            power_limit_w
            simulated
        />
        <p class="hint">{t!(i18n, times_in_zone, zone = move || zone_name.clone())}</p>

        <div class="gpu-tables">
            <section class="gpu-section" aria-labelledby="processes-heading">
                <h2 id="processes-heading">{t!(i18n, processes_title)}</h2>
                <ProcessTable processes />
            </section>
            <section class="gpu-section" aria-labelledby="events-heading">
                <h2 id="events-heading">{t!(i18n, events_title)}</h2>
                <EventTable events zone=zone.clone() />
            </section>
        </div>
        {access.map(|events| view! {
            <section class="gpu-section gpu-access" aria-labelledby="access-heading">
                <h2 id="access-heading">{t!(i18n, gpu_access_title)}</h2>
                <crate::components::access_events::AccessEventTable events zone />
            </section>
        })}
    }
}

/// Four charts (utilisation, memory, temperature, power) over one period.
#[component]
fn HistorySection(
    window: ChartRange,
    history: GpuHistory,
    zone: ZoneOffsets,
    total_mib: u64,
    power_limit_w: f64,
    simulated: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    let (from, to) = (history.from, history.to);
    let heading_id = match window {
        ChartRange::Hour => "history-hour",
        ChartRange::Day | ChartRange::Incident => "history-day",
    };
    let heading = move || match window {
        ChartRange::Hour => t_string!(i18n, history_hour).to_string(),
        ChartRange::Day | ChartRange::Incident => t_string!(i18n, history_day).to_string(),
    };
    let total_gib = total_mib as f64 / 1024.0;
    let charts = [
        (
            Metric::GpuUtil,
            history.series.chart(Metric::GpuUtil),
            ValueRange::Fixed {
                min: 0.0,
                max: 100.0,
            },
        ),
        (
            Metric::MemoryUsed,
            in_gib(history.series.chart(Metric::MemoryUsed)),
            ValueRange::Fixed {
                min: 0.0,
                max: total_gib,
            },
        ),
        (
            Metric::Temperature,
            history.series.chart(Metric::Temperature),
            ValueRange::Auto,
        ),
        (
            Metric::Power,
            history.series.chart(Metric::Power),
            ValueRange::FromZero {
                at_least: power_limit_w,
            },
        ),
    ]
    .into_iter()
    .map(|(metric, points, range)| {
        view! { <TelemetryChart metric window points from to range zone=zone.clone() /> }
    })
    .collect_view();
    view! {
        <section class="gpu-section" aria-labelledby=heading_id>
            <div class="section-head">
                <h2 id=heading_id>{heading}</h2>
                {simulated.then(|| view! {
                    <span class="badge badge-simulated">{t!(i18n, history_simulated)}</span>
                })}
                {(window == ChartRange::Day).then(|| view! {
                    <p class="hint">{t!(i18n, history_day_note)}</p>
                })}
            </div>
            <div class="chart-grid">{charts}</div>
        </section>
    }
}
