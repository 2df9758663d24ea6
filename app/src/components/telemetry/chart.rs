//! One telemetry chart as inline SVG: the mean as a line, the min–max spread as a shaded band,
//! value and time ticks, and an empty state. The geometry comes from `domain::chart`.

use super::number_text;
use crate::domain::chart::{Frame, ValueRange, layout};
use crate::domain::telemetry::{ChartPoint, Metric};
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use chrono::{DateTime, Utc};
use leptos::either::Either;
use leptos::prelude::*;

/// Which period a chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartRange {
    /// The last hour, raw samples.
    Hour,
    /// The last day, one-minute rollups.
    Day,
    /// An incident's window.
    Incident,
}

/// A chart of one metric over `[from, to]`. `points` are in the unit the chart shows (memory in
/// GiB, power in W); `zone` places the time ticks.
#[component]
pub fn TelemetryChart(
    metric: Metric,
    window: ChartRange,
    points: Vec<ChartPoint>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    range: ValueRange,
    zone: ZoneOffsets,
) -> impl IntoView {
    let i18n = use_i18n();
    let frame = Frame::STANDARD;
    let geometry = layout(&points, from, to, range, &zone, frame);
    let metric_name = move || match metric {
        Metric::GpuUtil => t_string!(i18n, chart_utilisation).to_string(),
        Metric::MemoryUsed => t_string!(i18n, chart_memory).to_string(),
        Metric::Temperature => t_string!(i18n, chart_temperature).to_string(),
        Metric::Power => t_string!(i18n, chart_power).to_string(),
        Metric::SmClock => t_string!(i18n, chart_sm_clock).to_string(),
    };
    let range_name = move || match window {
        ChartRange::Hour => t_string!(i18n, history_hour).to_string(),
        ChartRange::Day => t_string!(i18n, history_day).to_string(),
        ChartRange::Incident => t_string!(i18n, incident_window_title).to_string(),
    };
    let label = move || {
        t_string!(
            i18n,
            chart_label,
            metric = metric_name(),
            range = range_name()
        )
        .to_string()
    };
    let metric_key = match metric {
        Metric::GpuUtil => "gpu_util",
        Metric::MemoryUsed => "memory_used",
        Metric::Temperature => "temperature",
        Metric::Power => "power",
        Metric::SmClock => "sm_clock",
    };
    // Memory keeps a decimal; the others are whole numbers.
    let value_decimals = if metric == Metric::MemoryUsed { 1 } else { 0 };

    let Some(geometry) = geometry else {
        return Either::Left(view! {
            <figure class="chart chart-no-data" data-metric=metric_key>
                <figcaption class="chart-caption">
                    <span class="chart-title">{metric_name}</span>
                </figcaption>
                <div class="chart-empty" role="img" aria-label=label>
                    {t!(i18n, chart_no_data)}
                </div>
            </figure>
        });
    };

    let latest = geometry.last.value.avg;
    let decimals = geometry.decimals;
    let (left, right) = (frame.plot_left(), frame.plot_right());
    let (top, bottom) = (frame.plot_top(), frame.plot_bottom());
    let y_ticks = geometry
        .y_ticks
        .iter()
        .map(|tick| {
            let (y, value) = (tick.y, tick.value);
            view! {
                <line class="chart-gridline" x1=left x2=right y1=y y2=y />
                <text class="chart-tick" x=left - 6.0 y=y + 4.0 text-anchor="end">
                    {move || number_text(i18n, value, decimals)}
                </text>
            }
        })
        .collect_view();
    let x_ticks = geometry
        .x_ticks
        .iter()
        .map(|tick| {
            let x = tick.x;
            let text = crate::domain::time_text::hour_minute(zone.local(tick.at));
            let anchor = if x > right - 18.0 {
                "end"
            } else if x < left + 18.0 {
                "start"
            } else {
                "middle"
            };
            view! {
                <line class="chart-tickmark" x1=x x2=x y1=bottom y2=bottom + 4.0 />
                <text class="chart-tick" x=x y=bottom + 16.0 text-anchor=anchor>{text}</text>
            }
        })
        .collect_view();
    let band = (!geometry.band.is_empty())
        .then(|| view! { <path class="chart-band" d=geometry.band.clone() /> });
    let view_box = format!("0 0 {} {}", frame.width, frame.height);
    Either::Right(view! {
        <figure class="chart" data-metric=metric_key data-points=geometry.points>
            <figcaption class="chart-caption">
                <span class="chart-title">{metric_name}</span>
                <span class="chart-latest">
                    {move || {
                        let value = number_text(i18n, latest, value_decimals);
                        let value = match metric {
                            Metric::GpuUtil => t_string!(i18n, value_percent, value = value),
                            Metric::MemoryUsed => t_string!(i18n, value_gib, value = value),
                            Metric::Temperature => t_string!(i18n, value_celsius, value = value),
                            Metric::Power => t_string!(i18n, value_watts, value = value),
                            Metric::SmClock => t_string!(i18n, value_mhz, value = value),
                        }
                        .to_string();
                        t_string!(i18n, chart_latest, value = value).to_string()
                    }}
                </span>
            </figcaption>
            <svg class="chart-svg" viewBox=view_box role="img" aria-label=label>
                <g class="chart-y">{y_ticks}</g>
                <g class="chart-x">
                    <line class="chart-axis" x1=left x2=right y1=bottom y2=bottom />
                    {x_ticks}
                </g>
                <line class="chart-axis" x1=left x2=left y1=top y2=bottom />
                {band}
                <path class="chart-line" d=geometry.line.clone() />
            </svg>
        </figure>
    })
}
