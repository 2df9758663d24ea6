//! The grid: a header with days and hours, then per node its GPU rows. Each row is a track on
//! which blocks sit by time (left/width) and by quarter lane (top/height), so fractional bookings
//! show as partial occupancy. Pointer drag or the keyboard (arrows, Enter, Escape) selects a
//! window on a row.

use super::{Selection, cell_floor, local_time};
use crate::components::format::MemoryText;
use crate::domain::calendar::{CalendarGpu, CalendarView, Span};
use crate::domain::reservation::BlockKind;
use crate::domain::schedule::WHOLE_GPU;
use crate::i18n::*;
use chrono::{DateTime, Datelike, TimeDelta, Utc};
use leptos::prelude::*;

fn pct(value: f64) -> String {
    format!("{:.4}%", value * 100.0)
}

/// The calendar grid.
#[component]
pub fn CalendarGrid(
    view: StoredValue<CalendarView>,
    selection: RwSignal<Option<Selection>>,
) -> impl IntoView {
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
                .map(|gpu| view! { <GpuRow view gpu selection now_line=now_fraction /> })
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
            <li><span class="swatch swatch-booked"></span>{t!(i18n, calendar_booked)}</li>
            <li><span class="swatch swatch-partial"></span>{t!(i18n, calendar_partial)}</li>
            <li><span class="swatch swatch-maintenance"></span>{t!(i18n, calendar_maintenance)}</li>
            <li><span class="swatch swatch-selected"></span>{t!(i18n, calendar_selected)}</li>
        </ul>
    }
}

/// Where a pointer event falls on the track, as a cell start.
fn pointer_instant(
    view: StoredValue<CalendarView>,
    ev: &leptos::ev::PointerEvent,
) -> Option<DateTime<Utc>> {
    use leptos::wasm_bindgen::JsCast;
    let track = ev.current_target()?.dyn_into::<web_sys::Element>().ok()?;
    let rect = track.get_bounding_client_rect();
    let fraction = ((f64::from(ev.client_x()) - rect.left()) / rect.width()).clamp(0.0, 0.999_999);
    Some(view.with_value(|v| {
        #[expect(clippy::cast_precision_loss, reason = "seconds of a week fit an f64")]
        let seconds = v.range.length().num_seconds() as f64 * fraction;
        #[expect(clippy::cast_possible_truncation, reason = "within the range")]
        let at = v.range.start() + TimeDelta::seconds(seconds as i64);
        cell_floor(v, at)
    }))
}

/// Moves keyboard focus to the previous (-1) or next (+1) GPU row.
fn focus_row(ev: &leptos::ev::KeyboardEvent, step: i32) {
    {
        use leptos::wasm_bindgen::JsCast;
        let Some(current) = ev
            .current_target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        else {
            return;
        };
        let Some(document) = web_sys::window().and_then(|w| w.document()) else {
            return;
        };
        let Ok(tracks) = document.query_selector_all(".cal-track") else {
            return;
        };
        let count = tracks.length();
        let index = (0..count).find(|i| {
            tracks
                .get(*i)
                .is_some_and(|node| node.is_same_node(Some(&current)))
        });
        if let Some(index) = index {
            let target = i64::from(index) + i64::from(step);
            if target >= 0
                && target < i64::from(count)
                && let Some(next) = tracks
                    .get(u32::try_from(target).unwrap_or(0))
                    .and_then(|n| n.dyn_into::<web_sys::HtmlElement>().ok())
            {
                let _ = next.focus();
            }
        }
    }
}

#[component]
fn GpuRow(
    view: StoredValue<CalendarView>,
    gpu: CalendarGpu,
    selection: RwSignal<Option<Selection>>,
    now_line: Option<f64>,
) -> impl IntoView {
    let i18n = use_i18n();
    let gpu_id = gpu.gpu.id;
    let bookable = gpu.gpu.status.is_bookable();
    let cell = view.with_value(|v| TimeDelta::minutes(v.span.cell_minutes()));
    // One reactive closure for all of a row's blocks (not two per block): it re-renders the row's
    // blocks when the language changes, and costs little to create for 64 rows × a week.
    let placed = StoredValue::new(gpu.blocks.clone());
    let blocks = move || {
        let mine = t_string!(i18n, calendar_mine).to_string();
        let booked = t_string!(i18n, calendar_booked).to_string();
        let maintenance = t_string!(i18n, calendar_maintenance).to_string();
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
                        BlockKind::Maintenance => ("maintenance", &maintenance),
                    };
                    let share = match quarters {
                        1 => "¼ ",
                        2 => "½ ",
                        _ => "",
                    };
                    view! {
                        <div
                            class=if quarters < WHOLE_GPU { format!("cal-block kind-{kind} partial") } else { format!("cal-block kind-{kind}") }
                            style=format!("left:{};width:{};top:{};height:{}", pct(left), pct(width), pct(top), pct(height))
                            title=format!("{share}{label} · {from}–{to}")
                            data-kind=kind
                        >
                            <span class="cal-block-label">{format!("{share}{label}")}</span>
                        </div>
                    }
                })
                .collect_view()
        })
    };
    let selected = move || {
        selection.get().filter(|s| s.gpu_id == gpu_id).map(|s| {
            let (start, end) = s.window(cell);
            let (left, width) = view.with_value(|v| (v.fraction(start), v.fraction(end) - v.fraction(start)));
            view! {
                <div class="cal-selection" style=format!("left:{};width:{}", pct(left), pct(width)) aria-hidden="true"></div>
            }
        })
    };
    let on_pointer_down = move |ev: leptos::ev::PointerEvent| {
        if !bookable || ev.button() != 0 {
            return;
        }
        if let Some(at) = pointer_instant(view, &ev) {
            ev.prevent_default();
            selection.set(Some(Selection {
                gpu_id,
                anchor: at,
                head: at,
                selecting: true,
            }));
        }
    };
    let on_pointer_move = move |ev: leptos::ev::PointerEvent| {
        if ev.buttons() & 1 == 0 {
            return;
        }
        if let Some(at) = pointer_instant(view, &ev)
            && let Some(mut current) = selection.get_untracked()
            && current.gpu_id == gpu_id
            && current.selecting
        {
            current.head = at;
            selection.set(Some(current));
        }
    };
    let on_pointer_up = move |_| {
        if let Some(mut current) = selection.get_untracked()
            && current.gpu_id == gpu_id
        {
            current.selecting = false;
            selection.set(Some(current));
        }
    };
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        let key = ev.key();
        let current = selection.get_untracked().filter(|s| s.gpu_id == gpu_id);
        let start_here = || view.with_value(|v| cell_floor(v, v.now.max(v.range.start())));
        match key.as_str() {
            "ArrowRight" | "ArrowLeft" => {
                ev.prevent_default();
                let step = if key == "ArrowRight" { cell } else { -cell };
                let mut s = current.unwrap_or(Selection {
                    gpu_id,
                    anchor: start_here(),
                    head: start_here(),
                    selecting: false,
                });
                let moved = view.with_value(|v| cell_floor(v, s.head + step));
                s.head = moved;
                if !s.selecting {
                    s.anchor = moved;
                }
                selection.set(Some(s));
            }
            "Enter" | " " if bookable => {
                ev.prevent_default();
                let mut s = current.unwrap_or(Selection {
                    gpu_id,
                    anchor: start_here(),
                    head: start_here(),
                    selecting: false,
                });
                s.selecting = !s.selecting;
                if s.selecting {
                    s.anchor = s.head;
                }
                selection.set(Some(s));
            }
            "Escape" => selection.set(None),
            "ArrowUp" => {
                ev.prevent_default();
                focus_row(&ev, -1);
            }
            "ArrowDown" => {
                ev.prevent_default();
                focus_row(&ev, 1);
            }
            _ => {}
        }
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
    view! {
        <div class="cal-row" role="row" data-gpu=gpu_id class:unbookable=!bookable>
            <div class="cal-label" role="rowheader">
                <span class="cal-gpu-index">{format!("#{}", gpu.gpu.device_index)}</span>
                <span class="cal-gpu-model">{gpu.gpu.model.clone()}</span>
                <span class="cal-gpu-meta">
                    <MemoryText memory />
                    {shareable.then_some(" · ½ ¼")}
                </span>
                {status_note}
            </div>
            <div
                class="cal-track"
                role="gridcell"
                tabindex="0"
                aria-label=aria
                data-gpu=gpu_id
                on:pointerdown=on_pointer_down
                on:pointermove=on_pointer_move
                on:pointerup=on_pointer_up
                on:keydown=on_key
            >
                {blocks}
                {selected}
                {now_line.map(|f| view! { <div class="cal-now" style=format!("left:{}", pct(f)) aria-hidden="true"></div> })}
            </div>
        </div>
    }
}
