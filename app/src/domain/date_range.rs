//! The calendar range Berth accepts from a request: every date or time a client sends is checked
//! against it right after parsing, before any arithmetic, so that a far date (`9999-12-31`,
//! `+262142-12-31`) answers 422 at once instead of overflowing, panicking or doing work
//! proportional to the distance. The limits each feature has (booking horizon, report period,
//! history span) come on top of this one.

use crate::domain::problem::Problem;
use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, Utc};

/// The first year a request may name.
pub const FIRST_YEAR: i32 = 2000;
/// The last year a request may name.
pub const LAST_YEAR: i32 = 2100;

/// A date or time outside [`FIRST_YEAR`]..=[`LAST_YEAR`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("dates must lie in the years {FIRST_YEAR} to {LAST_YEAR}")]
pub struct OutOfRange;

impl From<OutOfRange> for Problem {
    fn from(_: OutOfRange) -> Self {
        Problem::DateOutOfRange {
            first_year: FIRST_YEAR,
            last_year: LAST_YEAR,
        }
    }
}

fn year_in_range(year: i32) -> Result<(), OutOfRange> {
    if (FIRST_YEAR..=LAST_YEAR).contains(&year) {
        Ok(())
    } else {
        Err(OutOfRange)
    }
}

/// `day` when it lies in the accepted years.
pub fn check_day(day: NaiveDate) -> Result<NaiveDate, OutOfRange> {
    year_in_range(day.year()).map(|()| day)
}

/// `local` (a wall-clock time in some zone) when it lies in the accepted years.
pub fn check_local(local: NaiveDateTime) -> Result<NaiveDateTime, OutOfRange> {
    year_in_range(local.year()).map(|()| local)
}

/// `at` when it lies in the accepted years (UTC).
pub fn check_instant(at: DateTime<Utc>) -> Result<DateTime<Utc>, OutOfRange> {
    year_in_range(at.year()).map(|()| at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(raw: &str) -> NaiveDate {
        raw.parse().unwrap()
    }

    #[test]
    fn days_from_the_first_to_the_last_accepted_year_pass() {
        assert_eq!(check_day(day("2000-01-01")), Ok(day("2000-01-01")));
        assert_eq!(check_day(day("2026-12-02")), Ok(day("2026-12-02")));
        assert_eq!(check_day(day("2100-12-31")), Ok(day("2100-12-31")));
    }

    #[test]
    fn far_days_on_either_side_are_refused() {
        assert_eq!(check_day(day("1999-12-31")), Err(OutOfRange));
        assert_eq!(check_day(day("2101-01-01")), Err(OutOfRange));
        assert_eq!(check_day(day("9999-12-31")), Err(OutOfRange));
        assert_eq!(check_day(day("+262142-12-31")), Err(OutOfRange));
        assert_eq!(check_day(NaiveDate::MIN), Err(OutOfRange));
    }

    #[test]
    fn instants_and_local_times_follow_the_same_years() {
        let at = |raw: &str| raw.parse::<DateTime<Utc>>().unwrap();
        assert!(check_instant(at("2026-12-02T09:00:00Z")).is_ok());
        assert_eq!(check_instant(at("9999-01-01T00:00:00Z")), Err(OutOfRange));
        assert_eq!(check_instant(DateTime::<Utc>::MAX_UTC), Err(OutOfRange));
        let local = |raw: &str| NaiveDateTime::parse_from_str(raw, "%Y-%m-%dT%H:%M").unwrap();
        assert!(check_local(local("2100-12-31T23:45")).is_ok());
        assert_eq!(check_local(local("2101-01-01T00:00")), Err(OutOfRange));
    }

    #[test]
    fn the_problem_names_the_accepted_years() {
        assert_eq!(
            Problem::from(OutOfRange),
            Problem::DateOutOfRange {
                first_year: 2000,
                last_year: 2100
            }
        );
    }
}
