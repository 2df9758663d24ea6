//! Geometry of the telemetry charts on the GPU page: thinning a series to a drawable number of
//! points (bucketed min/mean/max), value and time axes with round tick values (times aligned to
//! the viewer's wall clock), and the SVG path strings for the mean line and the min–max band.
//! Pure and unit-tested; the components only place the results in an `<svg>`.

use super::telemetry::{ChartPoint, Stat};
use super::zone::ZoneOffsets;
use chrono::{DateTime, Duration, NaiveTime, Timelike, Utc};
use std::fmt::Write;

/// Most points a chart draws; longer series are bucketed down to this.
pub const MAX_POINTS: usize = 300;

/// Reduces `points` to at most `max` by splitting `[from, to]` into `max` equal buckets. A
/// bucket becomes one point at the mean time of its points with the smallest minimum, the mean
/// of the means and the largest maximum. Points outside the range are dropped; a series that
/// already fits is returned in time order, unchanged.
pub fn downsample(
    points: &[ChartPoint],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    max: usize,
) -> Vec<ChartPoint> {
    let mut inside: Vec<ChartPoint> = points
        .iter()
        .filter(|p| p.at >= from && p.at <= to)
        .copied()
        .collect();
    inside.sort_by_key(|p| p.at);
    let span_ms = (to - from).num_milliseconds();
    if inside.len() <= max || max == 0 || span_ms <= 0 {
        return inside;
    }
    let buckets = max as i64;
    let mut out: Vec<ChartPoint> = Vec::with_capacity(max);
    let mut current: Option<(i64, Bucket)> = None;
    for point in inside {
        let offset = (point.at - from).num_milliseconds();
        let index = std::cmp::min(offset * buckets / span_ms, buckets - 1);
        match &mut current {
            Some((at, bucket)) if *at == index => bucket.add(point),
            _ => {
                if let Some((_, bucket)) = current.take() {
                    out.push(bucket.point());
                }
                let mut bucket = Bucket::default();
                bucket.add(point);
                current = Some((index, bucket));
            }
        }
    }
    if let Some((_, bucket)) = current {
        out.push(bucket.point());
    }
    out
}

#[derive(Default)]
struct Bucket {
    n: u32,
    ms_sum: i128,
    min: f64,
    avg_sum: f64,
    max: f64,
}

impl Bucket {
    fn add(&mut self, point: ChartPoint) {
        if self.n == 0 {
            self.min = point.value.min;
            self.max = point.value.max;
        } else {
            self.min = self.min.min(point.value.min);
            self.max = self.max.max(point.value.max);
        }
        self.avg_sum += point.value.avg;
        self.ms_sum += i128::from(point.at.timestamp_millis());
        self.n += 1;
    }

    fn point(&self) -> ChartPoint {
        let n = f64::from(self.n);
        let ms = i64::try_from(self.ms_sum / i128::from(self.n)).unwrap_or_default();
        ChartPoint {
            at: DateTime::from_timestamp_millis(ms).unwrap_or_default(),
            value: Stat {
                min: self.min,
                avg: self.avg_sum / n,
                max: self.max,
            },
        }
    }
}

/// How a chart chooses its value range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRange {
    /// Exactly `min..max` (percentages; memory up to the card's size). Values outside are drawn
    /// at the edge.
    Fixed {
        /// Bottom of the chart.
        min: f64,
        /// Top of the chart.
        max: f64,
    },
    /// From zero to the largest value or `at_least`, whichever is higher, rounded up to a tick.
    FromZero {
        /// Smallest top (a power limit, for example).
        at_least: f64,
    },
    /// Around the values, rounded out to ticks (temperatures).
    Auto,
}

/// A value axis: its range and the tick values in it.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueAxis {
    /// Bottom value.
    pub min: f64,
    /// Top value.
    pub max: f64,
    /// Distance between ticks.
    pub step: f64,
    /// Tick values, bottom first.
    pub ticks: Vec<f64>,
}

impl ValueAxis {
    /// Decimal places the tick labels need.
    pub fn decimals(&self) -> usize {
        decimals_for(self.step)
    }
}

/// A round step (1, 2 or 5 times a power of ten) that splits `span` into about `target` parts.
pub fn nice_step(span: f64, target: usize) -> f64 {
    if !span.is_finite() || span <= 0.0 {
        return 1.0;
    }
    let raw = span / target.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let normal = raw / magnitude;
    let factor = if normal <= 1.0 {
        1.0
    } else if normal <= 2.0 {
        2.0
    } else if normal <= 5.0 {
        5.0
    } else {
        10.0
    };
    factor * magnitude
}

/// Decimal places needed to write multiples of `step` (`0.5` → 1, `0.25` → 2, `20` → 0).
pub fn decimals_for(step: f64) -> usize {
    if step >= 1.0 || step <= 0.0 || !step.is_finite() {
        return 0;
    }
    let mut decimals = 0;
    let mut scaled = step;
    while decimals < 6 && (scaled - scaled.round()).abs() > 1e-9 * scaled.max(1.0) {
        scaled *= 10.0;
        decimals += 1;
    }
    decimals
}

/// The value axis for `points` with about `target` ticks.
pub fn value_axis(points: &[ChartPoint], range: ValueRange, target: usize) -> ValueAxis {
    let lowest = points
        .iter()
        .map(|p| p.value.min)
        .fold(f64::INFINITY, f64::min);
    let highest = points
        .iter()
        .map(|p| p.value.max)
        .fold(f64::NEG_INFINITY, f64::max);
    let (min, max, step) = match range {
        ValueRange::Fixed { min, max } => {
            let max = if max > min { max } else { min + 1.0 };
            (min, max, nice_step(max - min, target))
        }
        ValueRange::FromZero { at_least } => {
            let top = if highest.is_finite() {
                highest.max(at_least)
            } else {
                at_least
            };
            let top = if top > 0.0 { top } else { 1.0 };
            let step = nice_step(top, target);
            (0.0, (top / step).ceil() * step, step)
        }
        ValueRange::Auto => {
            let (low, high) = if lowest.is_finite() && highest.is_finite() {
                (lowest, highest)
            } else {
                (0.0, 1.0)
            };
            let (low, high) = if high - low < 1e-9 {
                (low - 1.0, high + 1.0)
            } else {
                (low, high)
            };
            let step = nice_step(high - low, target);
            let mut min = (low / step).floor() * step;
            let mut max = (high / step).ceil() * step;
            // A value on the very edge gets a step of room, so the line does not run along it.
            if (low - min).abs() < 1e-9 {
                min -= step;
            }
            if (max - high).abs() < 1e-9 {
                max += step;
            }
            (min, max, step)
        }
    };
    let first = (min / step).ceil();
    let ticks = (0..)
        .map(|i| (first + f64::from(i)) * step)
        .take_while(|v| *v <= max + step * 1e-6)
        .take(50)
        .collect();
    ValueAxis {
        min,
        max,
        step,
        ticks,
    }
}

/// Tick spacings for time axes, in minutes.
const TIME_STEPS: [i64; 14] = [1, 2, 5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 720, 1440];

/// Up to `max` instants in `[from, to]` on round wall-clock times of `zone` (every 10 minutes,
/// every 4 hours, …), with the finest spacing that stays within `max`.
pub fn time_ticks(
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    zone: &ZoneOffsets,
    max: usize,
) -> Vec<DateTime<Utc>> {
    let span = (to - from).num_minutes();
    if span <= 0 || max == 0 {
        return vec![];
    }
    let step = TIME_STEPS
        .into_iter()
        .find(|step| span / step <= max as i64)
        .unwrap_or(1440);
    let start = zone.local(from);
    let midnight = start.date().and_time(NaiveTime::MIN);
    let seconds = i64::from(start.time().num_seconds_from_midnight());
    let first = (seconds + step * 60 - 1) / (step * 60) * step;
    let mut ticks: Vec<DateTime<Utc>> = Vec::new();
    let mut minute = first;
    // Enough rounds to pass `to` even when a clock change adds an hour.
    for _ in 0..(span / step + 3) {
        let at = zone.to_utc(midnight + Duration::minutes(minute));
        minute += step;
        if at < from || ticks.last().is_some_and(|last| *last >= at) {
            continue;
        }
        if at > to {
            break;
        }
        ticks.push(at);
    }
    ticks.truncate(max);
    ticks
}

/// The size of a chart and the margins around its plot area, in SVG user units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    /// Whole width.
    pub width: f64,
    /// Whole height.
    pub height: f64,
    /// Room for value labels on the left.
    pub left: f64,
    /// Room on the right.
    pub right: f64,
    /// Room above.
    pub top: f64,
    /// Room for time labels below.
    pub bottom: f64,
}

impl Frame {
    /// The frame the GPU page uses.
    pub const STANDARD: Frame = Frame {
        width: 480.0,
        height: 200.0,
        left: 44.0,
        right: 12.0,
        top: 10.0,
        bottom: 24.0,
    };

    /// Left edge of the plot area.
    pub fn plot_left(&self) -> f64 {
        self.left
    }

    /// Right edge of the plot area.
    pub fn plot_right(&self) -> f64 {
        self.width - self.right
    }

    /// Top edge of the plot area.
    pub fn plot_top(&self) -> f64 {
        self.top
    }

    /// Bottom edge of the plot area.
    pub fn plot_bottom(&self) -> f64 {
        self.height - self.bottom
    }

    /// The x of `at` on a time axis from `from` to `to`.
    pub fn x(&self, from: DateTime<Utc>, to: DateTime<Utc>, at: DateTime<Utc>) -> f64 {
        let span = (to - from).num_milliseconds().max(1) as f64;
        let fraction = ((at - from).num_milliseconds() as f64 / span).clamp(0.0, 1.0);
        self.plot_left() + fraction * (self.plot_right() - self.plot_left())
    }

    /// The y of `value` on `axis` (clamped to the plot area).
    pub fn y(&self, axis: &ValueAxis, value: f64) -> f64 {
        let span = axis.max - axis.min;
        let fraction = if span > 0.0 {
            ((value - axis.min) / span).clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.plot_bottom() - fraction * (self.plot_bottom() - self.plot_top())
    }
}

/// A tick on the time axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeTick {
    /// Its x.
    pub x: f64,
    /// Its instant.
    pub at: DateTime<Utc>,
}

/// A tick on the value axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ValueTick {
    /// Its y.
    pub y: f64,
    /// Its value.
    pub value: f64,
}

/// Everything needed to draw one chart.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartGeometry {
    /// The frame it was laid out in.
    pub frame: Frame,
    /// SVG path of the mean, broken where data is missing.
    pub line: String,
    /// SVG path of the min–max band; empty when every point is a single value.
    pub band: String,
    /// Time ticks.
    pub x_ticks: Vec<TimeTick>,
    /// Value ticks.
    pub y_ticks: Vec<ValueTick>,
    /// Decimal places for value labels.
    pub decimals: usize,
    /// Points drawn (after thinning).
    pub points: usize,
    /// The newest point.
    pub last: ChartPoint,
}

/// Lays out `points` over `[from, to]` in `frame`: thinned to [`MAX_POINTS`], value axis by
/// `range`, time ticks on round times of `zone`. `None` when no point falls in the range.
pub fn layout(
    points: &[ChartPoint],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    range: ValueRange,
    zone: &ZoneOffsets,
    frame: Frame,
) -> Option<ChartGeometry> {
    let points = downsample(points, from, to, MAX_POINTS);
    let last = *points.last()?;
    let axis = value_axis(&points, range, 4);
    let segments = segments(&points);
    let x = |at| frame.x(from, to, at);
    let y = |v| frame.y(&axis, v);

    let mut line = String::new();
    let mut band = String::new();
    let has_range = points
        .iter()
        .any(|p| p.value.max - p.value.min > 1e-9 * p.value.max.abs().max(1.0));
    for segment in &segments {
        for (i, p) in segment.iter().enumerate() {
            let command = if i == 0 { 'M' } else { 'L' };
            push_point(&mut line, command, x(p.at), y(p.value.avg));
        }
        if segment.len() == 1 {
            // A lone point: a zero-length stroke that round caps draw as a dot.
            line.push_str("h0");
        }
        if has_range && segment.len() > 1 {
            for (i, p) in segment.iter().enumerate() {
                let command = if i == 0 { 'M' } else { 'L' };
                push_point(&mut band, command, x(p.at), y(p.value.max));
            }
            for p in segment.iter().rev() {
                push_point(&mut band, 'L', x(p.at), y(p.value.min));
            }
            band.push('Z');
        }
    }
    Some(ChartGeometry {
        frame,
        line,
        band,
        x_ticks: time_ticks(from, to, zone, 6)
            .into_iter()
            .map(|at| TimeTick {
                x: round1(x(at)),
                at,
            })
            .collect(),
        y_ticks: axis
            .ticks
            .iter()
            .map(|&value| ValueTick {
                y: round1(y(value)),
                value,
            })
            .collect(),
        decimals: axis.decimals(),
        points: points.len(),
        last,
    })
}

/// `value` to one decimal place, enough for SVG user units.
fn round1(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

fn push_point(path: &mut String, command: char, x: f64, y: f64) {
    let _ = write!(path, "{command}{x:.1} {y:.1}");
}

/// Splits a time-ordered series where the distance between two points is more than three times
/// the usual (median) distance: a silent agent leaves a gap instead of a straight line across.
pub fn segments(points: &[ChartPoint]) -> Vec<&[ChartPoint]> {
    if points.len() < 3 {
        return if points.is_empty() {
            vec![]
        } else {
            vec![points]
        };
    }
    let mut gaps: Vec<i64> = points
        .windows(2)
        .map(|pair| (pair[1].at - pair[0].at).num_milliseconds())
        .collect();
    gaps.sort_unstable();
    let limit = gaps[gaps.len() / 2].max(1) * 3;
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..points.len() {
        if (points[i].at - points[i - 1].at).num_milliseconds() > limit {
            out.push(&points[start..i]);
            start = i;
        }
    }
    out.push(&points[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::zone::OffsetChange;
    use chrono::TimeZone;

    fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, h, m, s).unwrap()
    }

    fn point(when: DateTime<Utc>, v: f64) -> ChartPoint {
        ChartPoint {
            at: when,
            value: Stat {
                min: v,
                avg: v,
                max: v,
            },
        }
    }

    fn zone(offset_seconds: i32) -> ZoneOffsets {
        ZoneOffsets {
            name: "Test".into(),
            changes: vec![OffsetChange {
                at: DateTime::<Utc>::MIN_UTC,
                offset_seconds,
            }],
        }
    }

    #[test]
    fn a_short_series_is_kept_as_it_is_in_time_order() {
        let points = vec![point(at(10, 0, 10), 2.0), point(at(10, 0, 5), 1.0)];
        let out = downsample(&points, at(10, 0, 0), at(11, 0, 0), 300);
        assert_eq!(out, vec![points[1], points[0]]);
    }

    #[test]
    fn a_long_series_is_bucketed_into_min_mean_and_max() {
        // One hour at one sample per second: 3600 points into 300 buckets of 12 s.
        let from = at(10, 0, 0);
        let points: Vec<ChartPoint> = (0..3600)
            .map(|s| point(from + Duration::seconds(s), (s % 12) as f64))
            .collect();
        let out = downsample(&points, from, from + Duration::hours(1), 300);
        assert_eq!(out.len(), 300);
        assert_eq!(
            out[0].value,
            Stat {
                min: 0.0,
                avg: 5.5,
                max: 11.0
            }
        );
        // The bucket's time is the mean of its points' times.
        assert_eq!(out[0].at, from + Duration::milliseconds(5_500));
        assert!(out.windows(2).all(|pair| pair[0].at < pair[1].at));
    }

    #[test]
    fn points_outside_the_range_are_dropped() {
        let points = vec![point(at(9, 59, 59), 1.0), point(at(10, 30, 0), 2.0)];
        assert_eq!(
            downsample(&points, at(10, 0, 0), at(11, 0, 0), 300).len(),
            1
        );
    }

    #[test]
    fn steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(100.0, 5), 20.0);
        assert_eq!(nice_step(100.0, 4), 50.0);
        assert_eq!(nice_step(700.0, 4), 200.0);
        assert!((nice_step(1.3, 4) - 0.5).abs() < 1e-12);
        assert_eq!(decimals_for(20.0), 0);
        assert_eq!(decimals_for(0.5), 1);
        assert_eq!(decimals_for(0.25), 2);
        assert_eq!(decimals_for(0.2), 1);
    }

    #[test]
    fn a_fixed_range_keeps_its_bounds() {
        let axis = value_axis(
            &[point(at(10, 0, 0), 130.0)],
            ValueRange::Fixed {
                min: 0.0,
                max: 100.0,
            },
            4,
        );
        assert_eq!((axis.min, axis.max), (0.0, 100.0));
        assert_eq!(axis.ticks, vec![0.0, 50.0, 100.0]);
    }

    #[test]
    fn a_zero_based_range_reaches_the_limit_or_the_highest_value() {
        let points = [point(at(10, 0, 0), 310.0)];
        let axis = value_axis(&points, ValueRange::FromZero { at_least: 700.0 }, 4);
        assert_eq!((axis.min, axis.max), (0.0, 800.0));
        assert_eq!(axis.ticks, vec![0.0, 200.0, 400.0, 600.0, 800.0]);
        let axis = value_axis(&points, ValueRange::FromZero { at_least: 0.0 }, 4);
        assert_eq!(axis.max, 400.0);
    }

    #[test]
    fn an_automatic_range_surrounds_the_values_even_when_flat() {
        let points = [point(at(10, 0, 0), 41.0), point(at(10, 0, 1), 67.0)];
        let axis = value_axis(&points, ValueRange::Auto, 4);
        assert!(axis.min <= 41.0 && axis.max >= 67.0);
        assert_eq!(axis.step, 10.0);
        assert_eq!(axis.ticks.first(), Some(&40.0));

        let flat = [point(at(10, 0, 0), 50.0)];
        let axis = value_axis(&flat, ValueRange::Auto, 4);
        assert!(axis.min < 50.0 && axis.max > 50.0);
    }

    #[test]
    fn time_ticks_fall_on_round_local_times() {
        // An hour from 10:07:30 UTC in a zone at +05:30: local 15:37:30 to 16:37:30.
        let from = at(10, 7, 30);
        let ticks = time_ticks(from, from + Duration::hours(1), &zone(5 * 3600 + 1800), 6);
        let local: Vec<String> = ticks
            .iter()
            .map(|t| zone(5 * 3600 + 1800).local(*t).format("%H:%M").to_string())
            .collect();
        assert_eq!(
            local,
            vec!["15:40", "15:50", "16:00", "16:10", "16:20", "16:30"]
        );

        // A day gets a tick every four hours, on local midnight and its multiples.
        let from = at(10, 7, 30);
        let ticks = time_ticks(from, from + Duration::days(1), &zone(-3 * 3600), 6);
        let local: Vec<String> = ticks
            .iter()
            .map(|t| zone(-3 * 3600).local(*t).format("%H:%M").to_string())
            .collect();
        assert_eq!(
            local,
            vec!["08:00", "12:00", "16:00", "20:00", "00:00", "04:00"]
        );
    }

    #[test]
    fn the_line_breaks_where_the_agent_was_silent() {
        let mut points: Vec<ChartPoint> = (0..10)
            .map(|i| point(at(10, 0, 0) + Duration::seconds(5 * i), 10.0))
            .collect();
        points.extend((0..5).map(|i| point(at(10, 10, 0) + Duration::seconds(5 * i), 20.0)));
        let parts = segments(&points);
        assert_eq!(
            parts.iter().map(|s| s.len()).collect::<Vec<_>>(),
            vec![10, 5]
        );

        let chart = layout(
            &points,
            at(10, 0, 0),
            at(11, 0, 0),
            ValueRange::Fixed {
                min: 0.0,
                max: 100.0,
            },
            &ZoneOffsets::utc(),
            Frame::STANDARD,
        )
        .unwrap();
        assert_eq!(chart.line.matches('M').count(), 2);
        assert!(chart.line.starts_with("M44.0 159.4L"));
        // Raw samples have no spread: no band.
        assert_eq!(chart.band, "");
        assert_eq!(chart.last.value.avg, 20.0);
    }

    #[test]
    fn rollups_draw_a_closed_band_from_max_to_min() {
        let points: Vec<ChartPoint> = (0..3)
            .map(|i| ChartPoint {
                at: at(10, i, 0),
                value: Stat {
                    min: 10.0,
                    avg: 20.0,
                    max: 30.0,
                },
            })
            .collect();
        let chart = layout(
            &points,
            at(10, 0, 0),
            at(10, 2, 0),
            ValueRange::Fixed {
                min: 0.0,
                max: 100.0,
            },
            &ZoneOffsets::utc(),
            Frame::STANDARD,
        )
        .unwrap();
        let f = Frame::STANDARD;
        assert!(chart.band.starts_with(&format!("M{:.1} ", f.plot_left())));
        assert!(chart.band.ends_with('Z'));
        assert_eq!(chart.band.matches('L').count(), 5);
        assert_eq!(chart.x_ticks.first().map(|t| t.x), Some(f.plot_left()));
        assert_eq!(chart.y_ticks.last().map(|t| t.y), Some(f.plot_top()));
    }

    #[test]
    fn nothing_in_range_means_no_chart() {
        let points = [point(at(9, 0, 0), 1.0)];
        let chart = layout(
            &points,
            at(10, 0, 0),
            at(11, 0, 0),
            ValueRange::Auto,
            &ZoneOffsets::utc(),
            Frame::STANDARD,
        );
        assert_eq!(chart, None);
        let lone = layout(
            &[point(at(10, 30, 0), 1.0)],
            at(10, 0, 0),
            at(11, 0, 0),
            ValueRange::Auto,
            &ZoneOffsets::utc(),
            Frame::STANDARD,
        )
        .unwrap();
        assert!(lone.line.ends_with("h0"));
    }
}
