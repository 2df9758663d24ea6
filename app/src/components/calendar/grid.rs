//! The grid: a header with days and hours, then per node its GPU rows. Each row is a track on
//! which blocks sit by time (left/width) and by quarter lane (top/height), so fractional bookings
//! show as partial occupancy. Rendered on the server; the calendar's island selects a window on a
//! row by pointer drag or the keyboard (arrows, Enter, Escape), see `select.rs`.

use super::{local_time, pct};
use crate::domain::calendar::{CalendarGpu, CalendarView, Span};
use crate::domain::reservation::BlockKind;
use crate::domain::schedule::WHOLE_GPU;
use crate::i18n::*;
use crate::text::format::MemoryText;
use chrono::Datelike;
use leptos::prelude::*;

/// The calendar grid.
#[component]
pub fn CalendarGrid(view: StoredValue<CalendarView>) -> impl IntoView {
    let i18n = use_i18n();
    let (days, span, now_fraction, nodes, empty) = view.with_value(|v| {
        let now = (v.range.contains(v.now)).then(|| v.fraction(v.now));
        (
            v.days.clone(),
            v.span,
            now,
            v.nodes.clone(),
            v.nodes.is_empty(),
        )
    });
    let day_headers = days
        .iter()
        .map(|day| {
            let (left, width) = view.with_value(|v| (v.fraction(day.start), v.fraction(day.end) - v.fraction(day.start)));
            let weekday = day.date.weekday().num_days_from_monday();
            let (month, dom) = (day.date.month(), day.date.day());
            let name = move || match weekday {
                0 => t_string!(i18n, weekday_mon),
                1 => t_string!(i18n, weekday_tue),
                2 => t_string!(i18n, weekday_wed),
                3 => t_string!(i18n, weekday_thu),
                4 => t_string!(i18n, weekday_fri),
                5 => t_string!(i18n, weekday_sat),
                _ => t_string!(i18n, weekday_sun),
            };
            let label = move || {
                let name = name().to_string();
                t_string!(i18n, day_header, weekday = name, day = dom, month = month).to_string()
            };
            view! {
                <div class="cal-day" style=format!("left:{};width:{}", pct(left), pct(width))>{label}</div>
            }
        })
        .collect_view();
    let tick_hours: Vec<u32> = match span {
        Span::Day => (0..24).collect(),
        Span::Week => vec![0, 6, 12, 18],
    };
    let ticks = days
        .iter()
        .flat_map(|day| {
            let hours = tick_hours.clone();
            hours.into_iter().map(move |hour| (day.clone(), hour))
        })
        .map(|(day, hour)| {
            let at = view.with_value(|v| {
                v.zone.to_utc(day.date.and_hms_opt(hour, 0, 0).unwrap_or_default())
            });
            let left = view.with_value(|v| v.fraction(at));
            view! { <span class="cal-tick" style=format!("left:{}", pct(left))>{format!("{hour:02}")}</span> }
        })
        .collect_view();
    let now_line = now_fraction.map(|f| {
        view! { <div class="cal-now" style=format!("left:{}", pct(f)) aria-hidden="true"></div> }
    });
    let rows = nodes
        .into_iter()
        .map(|node| {
            let demo = node.is_demo;
            let gpus = node
                .gpus
                .into_iter()
                .map(|gpu| view! { <GpuRow view gpu now_line=now_fraction /> })
                .collect_view();
            view! {
                <div class="cal-node" role="rowgroup">
                    <div class="cal-node-name" role="row">
                        <span role="rowheader">{node.name}</span>
                        {demo.then(|| view! { <span class="badge badge-demo">{t!(i18n, demo_badge)}</span> })}
                    </div>
                    {gpus}
                </div>
            }
        })
        .collect_view();
    view! {
        <section class="calendar" role="grid" aria-label=move || t_string!(i18n, calendar_title).to_string() data-span=span.as_str()>
            <div class="cal-head" role="row">
                <div class="cal-corner" role="columnheader">{t!(i18n, calendar_gpu)}</div>
                <div class="cal-scale" role="columnheader">
                    <div class="cal-days">{day_headers}</div>
                    <div class="cal-ticks" aria-hidden="true">{ticks}</div>
                    {now_line}
                </div>
            </div>
            {if empty {
                view! { <p class="empty">{t!(i18n, no_match)}</p> }.into_any()
            } else {
                rows.into_any()
            }}
            <Legend />
        </section>
    }
}

#[component]
fn Legend() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <ul class="cal-legend" aria-label=move || t_string!(i18n, calendar_legend).to_string()>
            <li><span class="swatch swatch-free"></span>{t!(i18n, calendar_free)}</li>
            <li><span class="swatch swatch-mine"></span>{t!(i18n, calendar_mine)}</li>
            <li><span class="swatch swatch-team"></span>{t!(i18n, calendar_team)}</li>
            <li><span class="swatch swatch-booked"></span>{t!(i18n, calendar_booked)}</li>
            <li><span class="swatch swatch-partial"></span>{t!(i18n, calendar_partial)}</li>
            <li><span class="swatch swatch-maintenance"></span>{t!(i18n, calendar_maintenance)}</li>
            <li><span class="swatch swatch-idle"></span>{t!(i18n, calendar_idle_now)}</li>
            <li title=move || t_string!(i18n, calendar_borrowing_hint).to_string()><span class="swatch swatch-borrowing"></span>{t!(i18n, calendar_borrowing)}</li>
            <li><span class="swatch swatch-selected"></span>{t!(i18n, calendar_selected)}</li>
        </ul>
    }
}

#[component]
fn GpuRow(
    view: StoredValue<CalendarView>,
    gpu: CalendarGpu,
    now_line: Option<f64>,
) -> impl IntoView {
    let i18n = use_i18n();
    let gpu_id = gpu.gpu.id;
    let bookable = gpu.gpu.status.is_bookable();
    // One reactive closure for all of a row's blocks (not two per block): it re-renders the row's
    // blocks when the language changes, and costs little to create for 64 rows × a week.
    let placed = StoredValue::new(gpu.blocks.clone());
    let blocks = move || {
        let mine = t_string!(i18n, calendar_mine).to_string();
        let booked = t_string!(i18n, calendar_booked).to_string();
        let maintenance = t_string!(i18n, calendar_maintenance).to_string();
        let idle = t_string!(i18n, calendar_idle_now).to_string();
        let borrowing = t_string!(i18n, calendar_borrowing).to_string();
        placed.with_value(|placed| {
            placed
                .iter()
                .map(|placed| {
                    let block = &placed.block;
                    let (left, width, from, to) = view.with_value(|v| {
                        let left = v.fraction(block.start);
                        (left, v.fraction(block.end) - left, local_time(v, block.start), local_time(v, block.end))
                    });
                    let quarters = block.quarters.min(WHOLE_GPU);
                    let top = f64::from(placed.lane) / f64::from(WHOLE_GPU);
                    let height = f64::from(quarters) / f64::from(WHOLE_GPU);
                    let (kind, label) = match block.kind {
                        BlockKind::Mine => ("mine", &mine),
                        BlockKind::Booked => ("booked", &booked),
                        BlockKind::Team => ("team", block.who.as_ref().unwrap_or(&booked)),
                        BlockKind::Maintenance => ("maintenance", &maintenance),
                    };
                    let share = match quarters {
                        1 => "¼ ",
                        2 => "½ ",
                        _ => "",
                    };
                    let partial = if quarters < WHOLE_GPU { " partial" } else { "" };
                    let idle_class = if placed.idle { " idle" } else { "" };
                    let mut idle_note = if placed.idle { format!(" · {idle}") } else { String::new() };
                    let borrowing_class = if block.borrowing { " borrowing" } else { "" };
                    if block.borrowing {
                        idle_note.push_str(&format!(" · {borrowing}"));
                    }
                    view! {
                        <div
                            class=format!("cal-block kind-{kind}{partial}{idle_class}{borrowing_class}")
                            style=format!("left:{};width:{};top:{};height:{}", pct(left), pct(width), pct(top), pct(height))
                            title=format!("{share}{label} · {from}–{to}{idle_note}")
                            data-kind=kind
                            data-idle=placed.idle.then_some("true")
                            data-borrowing=block.borrowing.then_some("true")
                        >
                            <span class="cal-block-label">{format!("{share}{label}{idle_note}")}</span>
                        </div>
                    }
                })
                .collect_view()
        })
    };
    let label = format!("#{} {}", gpu.gpu.device_index, gpu.gpu.model);
    let aria = {
        let label = label.clone();
        move || t_string!(i18n, calendar_row_label, gpu = label.clone()).to_string()
    };
    let status_note = (!bookable).then(|| {
        let status = gpu.gpu.status;
        view! { <span class="cal-status">{move || match status {
            crate::domain::gpu::GpuStatus::Maintenance => t_string!(i18n, status_maintenance).to_string(),
            crate::domain::gpu::GpuStatus::Retired => t_string!(i18n, status_retired).to_string(),
            crate::domain::gpu::GpuStatus::Active => String::new(),
        }}</span> }
    });
    let memory = gpu.gpu.memory;
    let shareable = gpu.gpu.shareable;
    let util_now = gpu.util_now;
    view! {
        <div class="cal-row" role="row" data-gpu=gpu_id class:unbookable=!bookable>
            <div class="cal-label" role="rowheader">
                <span class="cal-gpu-index">{format!("#{}", gpu.gpu.device_index)}</span>
                <span class="cal-gpu-model">{gpu.gpu.model.clone()}</span>
                <span class="cal-gpu-meta">
                    <MemoryText memory />
                    {shareable.then_some(" · ½ ¼")}
                    {util_now
                        .map(|util| {
                            let busy = util >= 50;
                            view! {
                                " · "
                                <span
                                    class="cal-util"
                                    class:cal-util-busy=busy
                                    title=move || t_string!(i18n, calendar_util_title).to_string()
                                >
                                    {move || t_string!(i18n, calendar_util_now, util = util).to_string()}
                                </span>
                            }
                        })}
                </span>
                {status_note}
            </div>
            <div
                class="cal-track"
                role="gridcell"
                tabindex="0"
                aria-label=aria
                data-gpu=gpu_id
                data-bookable=bookable.to_string()
            >
                {blocks}
                {now_line.map(|f| view! { <div class="cal-now" style=format!("left:{}", pct(f)) aria-hidden="true"></div> })}
            </div>
        </div>
    }
}
