//! The grid: a header with days and hours, then per node its GPU rows. Each row is a track on
//! which blocks sit by time (left/width) and by quarter lane (top/height), so fractional bookings
//! show as partial occupancy. Rendered on the server; the calendar's island selects a window on a
//! row by pointer drag or the keyboard (arrows, Enter, Escape), see `select.rs`.

use super::{pct, push_pct};
use crate::domain::calendar::{CalendarGpu, CalendarView, PlacedBlock, Span, fraction_of};
use crate::domain::reservation::BlockKind;
use crate::domain::schedule::{WHOLE_GPU, Window};
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use crate::text::format::MemoryText;
use chrono::{Datelike, Timelike};
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
    // The row's blocks (1,840 in a busy week of 64 GPUs) are written as one HTML string: a view
    // node per block was most of the week view's render time. The calendar's island never
    // renders them; it only reads the track's data attributes and adds the selection.
    let words = BlockWords {
        mine: t_string!(i18n, calendar_mine).to_string(),
        booked: t_string!(i18n, calendar_booked).to_string(),
        maintenance: t_string!(i18n, calendar_maintenance).to_string(),
        idle: t_string!(i18n, calendar_idle_now).to_string(),
        borrowing: t_string!(i18n, calendar_borrowing).to_string(),
    };
    let track = view.with_value(|v| track_html(&v.range, &v.zone, &gpu.blocks, &words, now_line));
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
                inner_html=track
            ></div>
        </div>
    }
}

/// The words a block's label is made of, in the viewer's language.
struct BlockWords {
    mine: String,
    booked: String,
    maintenance: String,
    idle: String,
    borrowing: String,
}

/// A row track's contents: its blocks, placed by time (left/width) and quarter lane
/// (top/height), then the now-line. Every text is escaped (a team block names its holder).
fn track_html(
    range: &Window,
    zone: &ZoneOffsets,
    placed: &[PlacedBlock],
    words: &BlockWords,
    now_line: Option<f64>,
) -> String {
    use html_escape::{encode_double_quoted_attribute_to_string, encode_text_to_string};
    let mut out = String::with_capacity(placed.len() * 320 + 80);
    for placed in placed {
        let block = &placed.block;
        let left = fraction_of(range, block.start);
        let width = fraction_of(range, block.end) - left;
        let quarters = block.quarters.min(WHOLE_GPU);
        let top = f64::from(placed.lane) / f64::from(WHOLE_GPU);
        let height = f64::from(quarters) / f64::from(WHOLE_GPU);
        let (kind, label) = match block.kind {
            BlockKind::Mine => ("mine", &words.mine),
            BlockKind::Booked => ("booked", &words.booked),
            BlockKind::Team => ("team", block.who.as_ref().unwrap_or(&words.booked)),
            BlockKind::Maintenance => ("maintenance", &words.maintenance),
        };
        let share = match quarters {
            1 => "¼ ",
            2 => "½ ",
            _ => "",
        };
        let mut text = format!("{share}{label}");
        let mut note = String::new();
        for (on, word) in [
            (placed.idle, &words.idle),
            (block.borrowing, &words.borrowing),
        ] {
            if on {
                note.push_str(" · ");
                note.push_str(word);
            }
        }
        out.push_str("<div class=\"cal-block kind-");
        out.push_str(kind);
        let flags = [
            (quarters < WHOLE_GPU, "partial"),
            (placed.idle, "idle"),
            (block.borrowing, "borrowing"),
        ];
        for (on, class) in flags {
            if on {
                out.push(' ');
                out.push_str(class);
            }
        }
        out.push_str("\" style=\"left:");
        push_pct(&mut out, left);
        out.push_str(";width:");
        push_pct(&mut out, width);
        out.push_str(";top:");
        push_pct(&mut out, top);
        out.push_str(";height:");
        push_pct(&mut out, height);
        out.push_str("\" title=\"");
        let (from, to) = (zone.local(block.start), zone.local(block.end));
        let title = format!(
            "{text} · {:02}:{:02}–{:02}:{:02}{note}",
            from.hour(),
            from.minute(),
            to.hour(),
            to.minute()
        );
        encode_double_quoted_attribute_to_string(&title, &mut out);
        out.push_str("\" data-kind=\"");
        out.push_str(kind);
        out.push('"');
        for (on, name) in &flags[1..] {
            if *on {
                out.push_str(" data-");
                out.push_str(name);
                out.push_str("=\"true\"");
            }
        }
        out.push_str("><span class=\"cal-block-label\">");
        text.push_str(&note);
        encode_text_to_string(&text, &mut out);
        out.push_str("</span></div>");
    }
    if let Some(now) = now_line {
        out.push_str("<div class=\"cal-now\" style=\"left:");
        push_pct(&mut out, now);
        out.push_str("\" aria-hidden=\"true\"></div>");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::reservation::BusyBlock;
    use crate::domain::zone::OffsetChange;
    use chrono::{TimeZone, Utc};

    #[test]
    fn a_track_places_its_blocks_and_escapes_every_name() {
        let at = |hour| Utc.with_ymd_and_hms(2026, 12, 7, hour, 0, 0).unwrap();
        let range = Window::new(at(0), at(0) + chrono::TimeDelta::days(1)).unwrap();
        let zone = ZoneOffsets {
            name: "America/Sao_Paulo".into(),
            changes: vec![OffsetChange {
                at: at(0),
                offset_seconds: -3 * 3600,
            }],
        };
        let team = PlacedBlock {
            block: BusyBlock {
                start: at(6),
                end: at(12),
                quarters: 2,
                kind: BlockKind::Team,
                reservation_id: None,
                who: Some("Ana <script>\"&' · Lab".into()),
                borrowing: true,
                shared: false,
            },
            lane: 2,
            idle: true,
        };
        let words = BlockWords {
            mine: "Mine".into(),
            booked: "Booked".into(),
            maintenance: "Maintenance".into(),
            idle: "idle now".into(),
            borrowing: "borrowing".into(),
        };
        let html = track_html(&range, &zone, &[team], &words, Some(0.5));
        assert_eq!(
            html,
            "<div class=\"cal-block kind-team partial idle borrowing\" \
             style=\"left:25.0000%;width:25.0000%;top:50.0000%;height:50.0000%\" \
             title=\"½ Ana &lt;script&gt;&quot;&amp;' · Lab · 03:00–09:00 · idle now · borrowing\" \
             data-kind=\"team\" data-idle=\"true\" data-borrowing=\"true\">\
             <span class=\"cal-block-label\">½ Ana &lt;script&gt;\"&amp;' · Lab · idle now · borrowing</span></div>\
             <div class=\"cal-now\" style=\"left:50.0000%\" aria-hidden=\"true\"></div>"
        );
    }
}
