//! The rules of booking time on GPUs: a 15-minute grid, windows `[start, end)`, shares of a GPU in
//! quarters, capacity (the shares on one GPU never sum past a whole GPU at any instant), the
//! earliest free window that fits, and the price of a booking. Pure code: the database enforces
//! the same capacity rule under concurrency, using [`fits`].

use chrono::{DateTime, TimeDelta, Timelike, Utc};
use serde::{Deserialize, Serialize};

/// Length of one slot of the booking grid.
pub const SLOT_MINUTES: i64 = 15;
/// A whole GPU, in quarters.
pub const WHOLE_GPU: u8 = 4;

/// How much of a GPU a booking takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Share {
    /// ¼ GPU.
    Quarter,
    /// ½ GPU.
    Half,
    /// The whole GPU.
    Whole,
}

impl Share {
    /// The share in quarters of a GPU (1, 2 or 4).
    pub fn quarters(self) -> u8 {
        match self {
            Share::Quarter => 1,
            Share::Half => 2,
            Share::Whole => WHOLE_GPU,
        }
    }

    /// The share with this many quarters.
    pub fn from_quarters(quarters: u8) -> Option<Self> {
        match quarters {
            1 => Some(Share::Quarter),
            2 => Some(Share::Half),
            4 => Some(Share::Whole),
            _ => None,
        }
    }

    /// Reads `1`, `0.5`, `0.25` (the API's numbers) or `whole`, `half`, `quarter`.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim() {
            "1" | "1.0" | "whole" => Some(Share::Whole),
            "0.5" | ".5" | "1/2" | "half" => Some(Share::Half),
            "0.25" | ".25" | "1/4" | "quarter" => Some(Share::Quarter),
            _ => None,
        }
    }

    /// The share as a fraction of a GPU (for the API).
    pub fn as_f64(self) -> f64 {
        f64::from(self.quarters()) / f64::from(WHOLE_GPU)
    }
}

/// A half-open interval of time `[start, end)` on the booking grid, `start < end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Window {
    start: DateTime<Utc>,
    end: DateTime<Utc>,
}

/// Why a requested window was refused. Each names the field to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    /// `end` is not after `start`.
    #[error("the end must be after the start")]
    EndNotAfterStart,
    /// A time is not on a quarter hour.
    #[error("{field} must be on a quarter hour (:00, :15, :30 or :45)")]
    OffGrid {
        /// `start` or `end`.
        field: &'static str,
    },
    /// Shorter than one slot.
    #[error("a booking lasts at least {SLOT_MINUTES} minutes")]
    TooShort,
    /// Longer than the maximum.
    #[error("a booking lasts at most {max_days} days")]
    TooLong {
        /// The limit.
        max_days: i64,
    },
    /// Starts before the current slot.
    #[error("the start is in the past")]
    InThePast,
    /// Starts beyond the booking horizon.
    #[error("bookings open at most {weeks} weeks ahead")]
    BeyondHorizon {
        /// The horizon.
        weeks: i64,
    },
}

impl WindowError {
    /// The error as a [`Problem`](crate::domain::problem::Problem) to show or send.
    pub fn problem(&self) -> crate::domain::problem::Problem {
        use crate::domain::problem::Problem;
        match self {
            WindowError::EndNotAfterStart => Problem::EndNotAfterStart,
            WindowError::OffGrid { field } => Problem::OffGrid {
                field: (*field).to_owned(),
            },
            WindowError::TooShort => Problem::TooShort {
                minutes: SLOT_MINUTES,
            },
            WindowError::TooLong { max_days } => Problem::TooLong { days: *max_days },
            WindowError::InThePast => Problem::InThePast,
            WindowError::BeyondHorizon { weeks } => Problem::BeyondHorizon { weeks: *weeks },
        }
    }

    /// The input field the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            WindowError::OffGrid { field } => field,
            WindowError::InThePast | WindowError::BeyondHorizon { .. } => "start",
            WindowError::EndNotAfterStart | WindowError::TooShort | WindowError::TooLong { .. } => {
                "end"
            }
        }
    }
}

/// The limits on a booking's window (settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BookingLimits {
    /// Longest booking.
    pub max_length: TimeDelta,
    /// How far ahead a booking may start.
    pub horizon: TimeDelta,
}

impl Default for BookingLimits {
    fn default() -> Self {
        Self {
            max_length: TimeDelta::days(14),
            horizon: TimeDelta::weeks(8),
        }
    }
}

/// The calendar month (UTC) that `at` falls in: its first instant and the next month's.
pub fn utc_month_of(at: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    use chrono::{Datelike, NaiveDate};
    let first = NaiveDate::from_ymd_opt(at.year(), at.month(), 1).unwrap_or(NaiveDate::MIN);
    let next = first
        .checked_add_months(chrono::Months::new(1))
        .unwrap_or(NaiveDate::MAX);
    let midnight = |day: NaiveDate| day.and_time(chrono::NaiveTime::MIN).and_utc();
    (midnight(first), midnight(next))
}

/// The start of the grid slot that contains `at`.
pub fn slot_floor(at: DateTime<Utc>) -> DateTime<Utc> {
    let seconds = at.timestamp();
    let slot = SLOT_MINUTES * 60;
    DateTime::from_timestamp(seconds - seconds.rem_euclid(slot), 0).unwrap_or(at)
}

/// The first grid instant at or after `at`.
pub fn slot_ceil(at: DateTime<Utc>) -> DateTime<Utc> {
    let floor = slot_floor(at);
    if floor == at {
        at
    } else {
        floor + TimeDelta::minutes(SLOT_MINUTES)
    }
}

fn on_grid(at: DateTime<Utc>) -> bool {
    at.second() == 0 && at.nanosecond() == 0 && i64::from(at.minute()) % SLOT_MINUTES == 0
}

impl Window {
    /// A window without the booking checks (grid and order only): for queries and existing data.
    pub fn new(start: DateTime<Utc>, end: DateTime<Utc>) -> Result<Self, WindowError> {
        if !on_grid(start) {
            return Err(WindowError::OffGrid { field: "start" });
        }
        if !on_grid(end) {
            return Err(WindowError::OffGrid { field: "end" });
        }
        if end <= start {
            return Err(WindowError::EndNotAfterStart);
        }
        Ok(Self { start, end })
    }

    /// A window a user may book at `now`: on the grid, at least one slot, at most
    /// `limits.max_length`, starting no earlier than the current slot (a start within the current
    /// slot is the current slot: booking "now") and no later than `limits.horizon` ahead.
    pub fn for_booking(
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        now: DateTime<Utc>,
        limits: BookingLimits,
    ) -> Result<Self, WindowError> {
        let window = Self::new(start, end)?;
        if window.start < slot_floor(now) {
            return Err(WindowError::InThePast);
        }
        if window.start > now + limits.horizon {
            return Err(WindowError::BeyondHorizon {
                weeks: limits.horizon.num_weeks(),
            });
        }
        if window.length() > limits.max_length {
            return Err(WindowError::TooLong {
                max_days: limits.max_length.num_days(),
            });
        }
        Ok(window)
    }

    /// Start (inclusive).
    pub fn start(&self) -> DateTime<Utc> {
        self.start
    }

    /// End (exclusive).
    pub fn end(&self) -> DateTime<Utc> {
        self.end
    }

    /// `end - start`.
    pub fn length(&self) -> TimeDelta {
        self.end - self.start
    }

    /// Whether the two windows share an instant.
    pub fn overlaps(&self, other: &Window) -> bool {
        self.start < other.end && other.start < self.end
    }

    /// Whether `at` lies inside.
    pub fn contains(&self, at: DateTime<Utc>) -> bool {
        self.start <= at && at < self.end
    }

    /// The window moved to start at `start`, same length.
    pub fn starting_at(&self, start: DateTime<Utc>) -> Window {
        Window {
            start,
            end: start + self.length(),
        }
    }

    /// The window brought forward to the first grid instant at or after `now`, same length (a
    /// backfilled booking); None when that is not earlier than its start.
    pub fn brought_forward(&self, now: DateTime<Utc>) -> Option<Window> {
        let start = slot_ceil(now);
        (start < self.start).then(|| self.starting_at(start))
    }
}

/// Something that occupies part of a GPU for a while: a booking, or maintenance (a whole GPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occupancy {
    /// When.
    pub window: Window,
    /// How much, in quarters (4 for maintenance).
    pub quarters: u8,
}

/// The highest total load, in quarters, that `busy` puts on a GPU at any instant of `window`.
pub fn peak_load(busy: &[Occupancy], window: &Window) -> u32 {
    // Sweep over the start and end points of what overlaps the window.
    let mut events: Vec<(DateTime<Utc>, i32)> = busy
        .iter()
        .filter(|o| o.window.overlaps(window))
        .flat_map(|o| {
            let start = o.window.start.max(window.start);
            let end = o.window.end.min(window.end);
            [
                (start, i32::from(o.quarters)),
                (end, -i32::from(o.quarters)),
            ]
        })
        .collect();
    // Ends before starts at the same instant: `[a, b)` and `[b, c)` do not overlap.
    events.sort_by_key(|&(at, delta)| (at, delta));
    let mut load = 0i32;
    let mut peak = 0i32;
    for (_, delta) in events {
        load += delta;
        peak = peak.max(load);
    }
    u32::try_from(peak).unwrap_or(0)
}

/// Whether `quarters` more fit on a GPU during `window`, given what already occupies it.
pub fn fits(busy: &[Occupancy], window: &Window, quarters: u8) -> bool {
    peak_load(busy, window) + u32::from(quarters) <= u32::from(WHOLE_GPU)
}

/// The first instant of `window` at which `quarters` more would not fit, if any.
pub fn first_overflow(busy: &[Occupancy], window: &Window, quarters: u8) -> Option<DateTime<Utc>> {
    let mut events: Vec<(DateTime<Utc>, i32)> = busy
        .iter()
        .filter(|o| o.window.overlaps(window))
        .flat_map(|o| {
            let start = o.window.start.max(window.start);
            let end = o.window.end.min(window.end);
            [
                (start, i32::from(o.quarters)),
                (end, -i32::from(o.quarters)),
            ]
        })
        .collect();
    events.sort_by_key(|&(at, delta)| (at, delta));
    let room = i32::from(WHOLE_GPU) - i32::from(quarters);
    let mut load = 0i32;
    for (at, delta) in events {
        load += delta;
        if load > room {
            return Some(at);
        }
    }
    None
}

/// The earliest start at or after `earliest` (on the grid) and no later than `latest_start` at
/// which `quarters` fit for `length` on at least `count` of the GPUs whose occupancies are
/// `gpus`; returns the start and the indexes of the first `count` GPUs that fit.
///
/// Availability only changes where an occupancy ends, so only `earliest` and those ends are
/// tried.
pub fn earliest_fit(
    gpus: &[Vec<Occupancy>],
    count: usize,
    quarters: u8,
    length: TimeDelta,
    earliest: DateTime<Utc>,
    latest_start: DateTime<Utc>,
) -> Option<(DateTime<Utc>, Vec<usize>)> {
    if count == 0 || count > gpus.len() || length <= TimeDelta::zero() {
        return None;
    }
    let earliest = slot_ceil(earliest);
    let mut candidates: Vec<DateTime<Utc>> = gpus
        .iter()
        .flatten()
        .map(|o| o.window.end)
        .filter(|end| *end > earliest && *end <= latest_start)
        .collect();
    candidates.push(earliest);
    candidates.sort_unstable();
    candidates.dedup();
    for start in candidates {
        let window = Window {
            start,
            end: start + length,
        };
        let fitting: Vec<usize> = gpus
            .iter()
            .enumerate()
            .filter(|(_, busy)| fits(busy, &window, quarters))
            .map(|(index, _)| index)
            .take(count)
            .collect();
        if fitting.len() == count {
            return Some((start, fitting));
        }
    }
    None
}

/// The price of holding `quarters` of a GPU at `hourly_price_minor` for `window`: price × hours ×
/// share, in minor units, rounded half up to a whole minor unit.
pub fn price_minor(hourly_price_minor: i64, quarters: u8, window: &Window) -> i64 {
    let minutes = i128::from(window.length().num_minutes());
    let numerator = i128::from(hourly_price_minor) * minutes * i128::from(quarters);
    let denominator = 60 * i128::from(WHOLE_GPU);
    let rounded = (numerator * 2 + denominator) / (denominator * 2);
    i64::try_from(rounded).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    #[test]
    fn brought_forward_to_the_next_quarter_hour_keeping_the_length() {
        use chrono::TimeZone;
        let at = |h: u32, m: u32, s: u32| Utc.with_ymd_and_hms(2026, 12, 4, h, m, s).unwrap();
        let window = super::Window::new(at(15, 0, 0), at(17, 30, 0)).unwrap();
        let moved = window.brought_forward(at(12, 7, 30)).unwrap();
        assert_eq!((moved.start(), moved.end()), (at(12, 15, 0), at(14, 45, 0)));
        // On the grid: from that instant.
        let moved = window.brought_forward(at(12, 0, 0)).unwrap();
        assert_eq!(moved.start(), at(12, 0, 0));
        // Nothing earlier to move to.
        assert_eq!(window.brought_forward(at(14, 50, 0)), None);
        assert_eq!(window.brought_forward(at(15, 0, 0)), None);
    }

    use super::*;

    #[test]
    fn utc_months_run_from_the_first_to_the_next_first_across_a_year_end() {
        let at = |raw: &str| raw.parse::<DateTime<Utc>>().unwrap();
        assert_eq!(
            utc_month_of(at("2026-12-31T23:59:59Z")),
            (at("2026-12-01T00:00:00Z"), at("2027-01-01T00:00:00Z"))
        );
        assert_eq!(
            utc_month_of(at("2027-02-01T00:00:00Z")),
            (at("2027-02-01T00:00:00Z"), at("2027-03-01T00:00:00Z"))
        );
    }
    use chrono::TimeZone;
    use proptest::prelude::*;

    fn at(hour: u32, minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, hour, minute, 0).unwrap()
    }

    fn window(from: (u32, u32), to: (u32, u32)) -> Window {
        Window::new(at(from.0, from.1), at(to.0, to.1)).unwrap()
    }

    fn occupied(from: (u32, u32), to: (u32, u32), quarters: u8) -> Occupancy {
        Occupancy {
            window: window(from, to),
            quarters,
        }
    }

    #[test]
    fn windows_must_be_on_the_grid_and_forward() {
        assert_eq!(
            Window::new(at(10, 5), at(11, 0)),
            Err(WindowError::OffGrid { field: "start" })
        );
        assert_eq!(
            Window::new(at(10, 0), at(10, 50)),
            Err(WindowError::OffGrid { field: "end" })
        );
        assert_eq!(
            Window::new(at(10, 0), at(10, 0)),
            Err(WindowError::EndNotAfterStart)
        );
        assert_eq!(window((10, 0), (10, 15)).length(), TimeDelta::minutes(15));
    }

    #[test]
    fn booking_now_snaps_to_the_current_slot_and_the_past_is_refused() {
        let now = at(10, 7);
        let limits = BookingLimits::default();
        assert!(Window::for_booking(at(10, 0), at(11, 0), now, limits).is_ok());
        assert_eq!(
            Window::for_booking(at(9, 45), at(11, 0), now, limits),
            Err(WindowError::InThePast)
        );
        assert_eq!(slot_floor(now), at(10, 0));
        assert_eq!(slot_ceil(now), at(10, 15));
        assert_eq!(slot_ceil(at(10, 15)), at(10, 15));
    }

    #[test]
    fn length_and_horizon_are_limited() {
        let now = at(10, 0);
        let limits = BookingLimits::default();
        let too_long = Window::for_booking(now, now + TimeDelta::days(15), now, limits);
        assert_eq!(too_long, Err(WindowError::TooLong { max_days: 14 }));
        let start = now + TimeDelta::weeks(9);
        let too_far = Window::for_booking(start, start + TimeDelta::hours(1), now, limits);
        assert_eq!(too_far, Err(WindowError::BeyondHorizon { weeks: 8 }));
        assert_eq!(WindowError::TooLong { max_days: 14 }.field(), "end");
    }

    #[test]
    fn shares_parse_from_numbers_and_words() {
        assert_eq!(Share::parse("0.25"), Some(Share::Quarter));
        assert_eq!(Share::parse("half"), Some(Share::Half));
        assert_eq!(Share::parse("1"), Some(Share::Whole));
        assert_eq!(Share::parse("0.3"), None);
        assert_eq!(Share::from_quarters(3), None);
    }

    #[test]
    fn overlapping_quarter_shares_fit_on_one_gpu() {
        let busy = [occupied((10, 0), (12, 0), 1), occupied((11, 0), (13, 0), 2)];
        let wanted = window((11, 0), (12, 0));
        assert_eq!(peak_load(&busy, &wanted), 3);
        assert!(fits(&busy, &wanted, 1));
        assert!(!fits(&busy, &wanted, 2));
        assert!(fits(&busy, &window((12, 0), (13, 0)), 2));
    }

    #[test]
    fn the_first_overflow_is_where_the_load_gets_too_high() {
        let busy = [
            occupied((11, 0), (12, 0), 2),
            occupied((11, 30), (13, 0), 2),
        ];
        let wanted = window((10, 0), (14, 0));
        assert_eq!(first_overflow(&busy, &wanted, 1), Some(at(11, 30)));
        assert_eq!(first_overflow(&busy, &wanted, 2), Some(at(11, 30)));
        assert_eq!(first_overflow(&busy, &wanted, 4), Some(at(11, 0)));
        assert_eq!(first_overflow(&busy, &window((13, 0), (14, 0)), 4), None);
    }

    #[test]
    fn back_to_back_windows_do_not_clash() {
        let busy = [occupied((10, 0), (11, 0), 4)];
        assert!(fits(&busy, &window((11, 0), (12, 0)), 4));
        assert!(fits(&busy, &window((9, 0), (10, 0)), 4));
        assert!(!fits(&busy, &window((10, 45), (11, 15)), 1));
    }

    #[test]
    fn the_earliest_fit_waits_for_enough_gpus_at_once() {
        let gpus = vec![
            vec![occupied((10, 0), (12, 0), 4)],
            vec![occupied((10, 0), (11, 0), 4)],
            vec![],
        ];
        let two = earliest_fit(&gpus, 2, 4, TimeDelta::hours(1), at(10, 0), at(23, 0));
        assert_eq!(two, Some((at(11, 0), vec![1, 2])));
        let three = earliest_fit(&gpus, 3, 4, TimeDelta::hours(1), at(10, 0), at(23, 0));
        assert_eq!(three, Some((at(12, 0), vec![0, 1, 2])));
        let quarter = earliest_fit(&gpus, 1, 1, TimeDelta::hours(1), at(10, 5), at(23, 0));
        assert_eq!(quarter, Some((at(10, 15), vec![2])));
        assert_eq!(
            earliest_fit(&gpus, 4, 1, TimeDelta::hours(1), at(10, 0), at(23, 0)),
            None
        );
    }

    #[test]
    fn prices_are_hourly_price_times_hours_times_share_rounded_half_up() {
        // $3.49/h × 1.5 h × ¼ = 130.875 cents → 131.
        assert_eq!(price_minor(349, 1, &window((10, 0), (11, 30))), 131);
        assert_eq!(price_minor(349, 4, &window((10, 0), (12, 0))), 698);
        // 2 cents/h × 15 min × ¼ = 0.125 → 0.
        assert_eq!(price_minor(2, 1, &window((10, 0), (10, 15))), 0);
    }

    fn arb_occupancy() -> impl Strategy<Value = Occupancy> {
        (
            0i64..96,
            1i64..24,
            prop_oneof![Just(1u8), Just(2u8), Just(4u8)],
        )
            .prop_map(|(start_slot, slots, quarters)| {
                let base = at(0, 0);
                let start = base + TimeDelta::minutes(start_slot * SLOT_MINUTES);
                Occupancy {
                    window: Window::new(start, start + TimeDelta::minutes(slots * SLOT_MINUTES))
                        .unwrap(),
                    quarters,
                }
            })
    }

    /// The load of one slot, counted directly.
    fn load_at(busy: &[Occupancy], slot_start: DateTime<Utc>) -> u32 {
        busy.iter()
            .filter(|o| o.window.contains(slot_start))
            .map(|o| u32::from(o.quarters))
            .sum()
    }

    proptest! {
        #[test]
        fn peak_load_equals_the_busiest_slot(
            busy in proptest::collection::vec(arb_occupancy(), 0..12),
            wanted in arb_occupancy(),
        ) {
            let mut expected = 0;
            let mut slot = wanted.window.start();
            while slot < wanted.window.end() {
                expected = expected.max(load_at(&busy, slot));
                slot += TimeDelta::minutes(SLOT_MINUTES);
            }
            prop_assert_eq!(peak_load(&busy, &wanted.window), expected);
        }

        #[test]
        fn admitting_only_what_fits_never_exceeds_a_whole_gpu(
            requests in proptest::collection::vec(arb_occupancy(), 0..30),
        ) {
            let mut accepted: Vec<Occupancy> = Vec::new();
            for request in requests {
                if fits(&accepted, &request.window, request.quarters) {
                    accepted.push(request);
                }
            }
            let mut slot = at(0, 0);
            while slot < at(0, 0) + TimeDelta::hours(30) {
                prop_assert!(load_at(&accepted, slot) <= u32::from(WHOLE_GPU));
                slot += TimeDelta::minutes(SLOT_MINUTES);
            }
        }

        #[test]
        fn the_earliest_fit_fits_and_nothing_earlier_does(
            gpus in proptest::collection::vec(proptest::collection::vec(arb_occupancy(), 0..6), 1..4),
            count in 1usize..3,
            quarters in prop_oneof![Just(1u8), Just(2u8), Just(4u8)],
            slots in 1i64..16,
        ) {
            let length = TimeDelta::minutes(slots * SLOT_MINUTES);
            let found = earliest_fit(&gpus, count, quarters, length, at(0, 0), at(0, 0) + TimeDelta::days(3));
            if let Some((start, chosen)) = found {
                let window = Window::new(start, start + length).unwrap();
                prop_assert_eq!(chosen.len(), count);
                for index in &chosen {
                    prop_assert!(fits(&gpus[*index], &window, quarters));
                }
                // No earlier grid start has enough GPUs.
                let mut earlier = at(0, 0);
                while earlier < start {
                    let w = Window::new(earlier, earlier + length).unwrap();
                    let n = gpus.iter().filter(|busy| fits(busy, &w, quarters)).count();
                    prop_assert!(n < count, "an earlier start {} fits", earlier);
                    earlier += TimeDelta::minutes(SLOT_MINUTES);
                }
            } else {
                prop_assert!(count > gpus.len());
            }
        }
    }
}
