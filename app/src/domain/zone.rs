//! A time zone as the pages need it: the offsets that apply over a range of instants (resolved
//! on the server, so the browser needs no time-zone database), and the cookie in which the
//! browser tells the server its zone.

use chrono::{DateTime, NaiveDateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// Cookie in which the browser tells the server its IANA time zone.
pub const ZONE_COOKIE: &str = "berth_tz";

/// From `at` on, local time is UTC + `offset_seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffsetChange {
    /// When this offset starts to apply.
    pub at: DateTime<Utc>,
    /// Seconds east of UTC.
    pub offset_seconds: i32,
}

/// A time zone as far as one calendar range needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZoneOffsets {
    /// IANA name (`America/Sao_Paulo`) or `UTC`.
    pub name: String,
    /// Offsets by start, the first at or before the range start.
    pub changes: Vec<OffsetChange>,
}

impl ZoneOffsets {
    /// UTC.
    pub fn utc() -> Self {
        Self {
            name: "UTC".into(),
            changes: vec![OffsetChange {
                at: DateTime::<Utc>::MIN_UTC,
                offset_seconds: 0,
            }],
        }
    }

    /// The offset in effect at `at`.
    pub fn offset_at(&self, at: DateTime<Utc>) -> i32 {
        self.changes
            .iter()
            .take_while(|change| change.at <= at)
            .last()
            .or(self.changes.first())
            .map_or(0, |change| change.offset_seconds)
    }

    /// Local wall-clock time of `at`.
    pub fn local(&self, at: DateTime<Utc>) -> NaiveDateTime {
        at.naive_utc() + TimeDelta::seconds(i64::from(self.offset_at(at)))
    }

    /// The instant a local wall-clock time stands for (the earlier one when a clock change makes
    /// it ambiguous; skipped times move forward).
    pub fn to_utc(&self, local: NaiveDateTime) -> DateTime<Utc> {
        let mut best: Option<DateTime<Utc>> = None;
        for change in &self.changes {
            let candidate =
                (local - TimeDelta::seconds(i64::from(change.offset_seconds))).and_utc();
            if self.offset_at(candidate) == change.offset_seconds
                && best.is_none_or(|b| candidate < b)
            {
                best = Some(candidate);
            }
        }
        best.unwrap_or_else(|| {
            let offset = self.changes.last().map_or(0, |c| c.offset_seconds);
            (local - TimeDelta::seconds(i64::from(offset))).and_utc()
        })
    }
}
