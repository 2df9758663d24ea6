//! Geometry of the reports' daily charts: one stacked bar per day (GPU-hours, left axis from
//! zero to a round maximum) and a utilization line over them (right axis, 0–100 %). Pure and
//! unit-tested; the report components place the results in an `<svg>` rendered on the server.

use super::chart::{decimals_for, nice_step};
use chrono::{Datelike, NaiveDate};
use std::fmt::Write;

/// The chart's size and margins (SVG user units).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BarFrame {
    /// Total width.
    pub width: f64,
    /// Total height.
    pub height: f64,
    /// Room for the left axis' labels.
    pub left: f64,
    /// Room for the right axis' labels.
    pub right: f64,
    /// Room above.
    pub top: f64,
    /// Room for the day labels.
    pub bottom: f64,
}

impl Default for BarFrame {
    fn default() -> Self {
        Self {
            width: 880.0,
            height: 300.0,
            left: 64.0,
            right: 56.0,
            top: 16.0,
            bottom: 40.0,
        }
    }
}

impl BarFrame {
    /// The plot's left edge.
    pub fn plot_left(&self) -> f64 {
        self.left
    }
    /// The plot's right edge.
    pub fn plot_right(&self) -> f64 {
        self.width - self.right
    }
    /// The plot's top edge.
    pub fn plot_top(&self) -> f64 {
        self.top
    }
    /// The plot's bottom edge (the zero line).
    pub fn plot_bottom(&self) -> f64 {
        self.height - self.bottom
    }
}

/// One day's input: its date, the stacked values (bottom first) and its utilization (percent).
#[derive(Debug, Clone, PartialEq)]
pub struct DayStack {
    /// The day.
    pub day: NaiveDate,
    /// Values from the bottom up.
    pub values: Vec<f64>,
    /// Utilization, percent.
    pub utilization: Option<f64>,
}

/// A drawn segment of a bar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// Which series (index into the stack's values).
    pub series: usize,
    /// Top edge.
    pub y: f64,
    /// Height.
    pub height: f64,
    /// The value it stands for.
    pub value: f64,
}

/// A drawn bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The day.
    pub day: NaiveDate,
    /// Left edge.
    pub x: f64,
    /// Width.
    pub width: f64,
    /// Its non-empty segments, bottom first.
    pub segments: Vec<Segment>,
    /// Sum of its values.
    pub total: f64,
    /// Whether the day's label is written under it.
    pub labelled: bool,
}

/// A tick of an axis: its value, its position and its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    /// Position (y).
    pub y: f64,
    /// Text.
    pub label: String,
}

/// Everything the SVG needs.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    /// Size and margins.
    pub frame: BarFrame,
    /// The bars.
    pub bars: Vec<Bar>,
    /// Left axis ticks (GPU-hours).
    pub value_ticks: Vec<Tick>,
    /// Right axis ticks (0–100 %).
    pub percent_ticks: Vec<Tick>,
    /// The utilization line as SVG path data (empty without data); a day without a reading
    /// breaks the line.
    pub line: String,
    /// The utilization points (x, y, percent) for markers.
    pub points: Vec<(f64, f64, f64)>,
}

/// Lays out `days` in `frame`.
#[expect(clippy::cast_precision_loss, reason = "days in a chart")]
pub fn bar_chart(days: &[DayStack], frame: BarFrame) -> BarChart {
    let max_total = days
        .iter()
        .map(|d| d.values.iter().map(|v| v.max(0.0)).sum::<f64>())
        .fold(0.0_f64, f64::max);
    let step = nice_step(if max_total > 0.0 { max_total } else { 1.0 }, 5);
    let top_value = ((max_total / step).ceil() * step).max(step);
    let plot_height = frame.plot_bottom() - frame.plot_top();
    let y_of = |value: f64| frame.plot_bottom() - value / top_value * plot_height;
    let decimals = decimals_for(step);
    let mut value_ticks = Vec::new();
    let mut value = 0.0;
    while value <= top_value + step / 2.0 {
        value_ticks.push(Tick {
            y: y_of(value),
            label: format!("{value:.decimals$}"),
        });
        value += step;
    }
    let percent_ticks = (0..=4)
        .map(|i| {
            let percent = f64::from(i) * 25.0;
            Tick {
                y: frame.plot_bottom() - percent / 100.0 * plot_height,
                label: format!("{percent:.0}"),
            }
        })
        .collect();
    let count = days.len().max(1) as f64;
    let slot = (frame.plot_right() - frame.plot_left()) / count;
    let width = (slot * 0.7).max(1.0);
    // Label every day when there is room, else every few days (always the first).
    let label_every = (40.0 / slot).ceil().max(1.0) as usize;
    let mut line = String::new();
    let mut points = Vec::new();
    let mut pen_down = false;
    let bars = days
        .iter()
        .enumerate()
        .map(|(i, day)| {
            let x = frame.plot_left() + slot * i as f64 + (slot - width) / 2.0;
            let mut base = 0.0;
            let mut segments = Vec::new();
            for (series, value) in day.values.iter().enumerate() {
                let value = value.max(0.0);
                if value <= 0.0 {
                    continue;
                }
                let y = y_of(base + value);
                segments.push(Segment {
                    series,
                    y,
                    height: y_of(base) - y,
                    value,
                });
                base += value;
            }
            match day.utilization {
                Some(percent) => {
                    let percent = percent.clamp(0.0, 100.0);
                    let (cx, cy) = (
                        x + width / 2.0,
                        frame.plot_bottom() - percent / 100.0 * plot_height,
                    );
                    if !line.is_empty() {
                        line.push(' ');
                    }
                    let _ = write!(line, "{}{cx:.1},{cy:.1}", if pen_down { "L" } else { "M" });
                    pen_down = true;
                    points.push((cx, cy, percent));
                }
                None => pen_down = false,
            }
            Bar {
                day: day.day,
                x,
                width,
                segments,
                total: base,
                labelled: i % label_every == 0,
            }
        })
        .collect();
    BarChart {
        frame,
        bars,
        value_ticks,
        percent_ticks,
        line,
        points,
    }
}

/// A day's short label under its bar: the day of the month.
pub fn day_label(day: NaiveDate) -> String {
    day.day().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, d).unwrap()
    }

    #[test]
    fn bars_stack_from_zero_under_a_round_maximum() {
        let days = vec![
            DayStack {
                day: day(1),
                values: vec![10.0, 5.0, 0.0],
                utilization: Some(50.0),
            },
            DayStack {
                day: day(2),
                values: vec![30.0, 0.0, 7.0],
                utilization: None,
            },
            DayStack {
                day: day(3),
                values: vec![0.0, 0.0, 0.0],
                utilization: Some(0.0),
            },
        ];
        let frame = BarFrame::default();
        let chart = bar_chart(&days, frame);
        assert_eq!(chart.bars.len(), 3);
        // The highest bar is 37: ticks every 10 up to 40.
        assert_eq!(chart.value_ticks.last().unwrap().label, "40");
        assert_eq!(chart.value_ticks.first().unwrap().y, frame.plot_bottom());
        let first = &chart.bars[0];
        assert_eq!(first.segments.len(), 2, "empty segments are not drawn");
        assert!(
            (first.segments[0].y + first.segments[0].height - frame.plot_bottom()).abs() < 1e-9
        );
        assert!(
            (first.segments[1].y + first.segments[1].height - first.segments[0].y).abs() < 1e-9,
            "segments sit on each other"
        );
        let plot = frame.plot_bottom() - frame.plot_top();
        assert!(
            (chart.bars[1].segments[1].y - (frame.plot_bottom() - 37.0 / 40.0 * plot)).abs() < 1e-9
        );
        assert!(chart.bars[2].segments.is_empty());
        // The line breaks on the day without telemetry.
        assert_eq!(chart.line.matches('M').count(), 2);
        assert!(!chart.line.contains('L'));
        assert_eq!(chart.points.len(), 2);
        assert_eq!(chart.percent_ticks.len(), 5);
    }

    #[test]
    fn a_month_labels_every_other_day_or_so_and_an_empty_chart_still_has_an_axis() {
        let days: Vec<DayStack> = (1..=30)
            .map(|d| DayStack {
                day: day(d),
                values: vec![1.0],
                utilization: Some(f64::from(d)),
            })
            .collect();
        let chart = bar_chart(&days, BarFrame::default());
        assert!(chart.bars[0].labelled);
        let labelled = chart.bars.iter().filter(|b| b.labelled).count();
        assert!((10..=30).contains(&labelled), "{labelled}");
        assert_eq!(chart.line.matches('M').count(), 1);
        assert_eq!(chart.line.matches('L').count(), 29);
        let empty = bar_chart(&[], BarFrame::default());
        assert!(empty.bars.is_empty());
        assert!(!empty.value_ticks.is_empty());
        assert!(empty.line.is_empty());
    }
}
