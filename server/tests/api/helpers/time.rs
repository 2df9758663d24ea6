//! Times tests book at: on the booking grid, tomorrow, next month.

use chrono::{DateTime, TimeDelta, Timelike, Utc};

/// Tomorrow at `hour`:`minute` UTC.
pub(crate) fn tomorrow(hour: u32, minute: u32) -> DateTime<Utc> {
    (Utc::now() + TimeDelta::days(1))
        .with_hour(hour)
        .and_then(|t| t.with_minute(minute))
        .and_then(|t| t.with_second(0))
        .and_then(|t| t.with_nanosecond(0))
        .unwrap()
}

/// `at` rounded down to the grid.
pub(crate) fn grid(at: DateTime<Utc>) -> DateTime<Utc> {
    berth_app::domain::schedule::slot_floor(at)
}
/// 09:00 UTC on the third day of next month: a window in one calendar month, whatever today is.
pub(crate) fn next_month_at(hour_offset: i64) -> chrono::DateTime<chrono::Utc> {
    let (_, next) = berth_app::domain::schedule::utc_month_of(chrono::Utc::now());
    next + TimeDelta::days(2) + TimeDelta::hours(9 + hour_offset)
}

/// `by` after the next quarter hour (the booking grid).
pub(crate) fn on_grid_in(by: TimeDelta) -> DateTime<Utc> {
    berth_app::domain::schedule::slot_ceil(Utc::now()) + by
}
