//! Watches instead of a waitlist: "tell me when N × <model> (share) is free for H hours between
//! <from> and <to>". When a cancellation, a release or a new GPU makes such a window appear,
//! every watcher it fits is told at once and the window is *held* for watchers for [`HOLD`]:
//! anyone else's booking of it is refused meanwhile, and among the watchers the first to book it
//! gets it (the others keep watching). Pure rules: what a watch may ask, where its search runs,
//! when it expires.

use crate::domain::problem::Problem;
use crate::domain::schedule::{SLOT_MINUTES, Share, Window, slot_ceil};
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// How long a window found for watchers is held for them.
pub const HOLD: TimeDelta = TimeDelta::minutes(10);

/// Most watches one person may have watching at once.
pub const MAX_OPEN_WATCHES: usize = 20;

/// Most GPUs one watch may ask for (as one booking).
pub const MAX_WATCH_GPUS: u32 = 64;

/// Where a watch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchState {
    /// Waiting for a window.
    Watching,
    /// Its watcher booked a window it found.
    Served,
    /// No window can fit any more (its `to` minus the length has passed).
    Expired,
    /// Its watcher stopped it.
    Cancelled,
}

impl WatchState {
    /// Every state.
    pub const ALL: [WatchState; 4] = [
        WatchState::Watching,
        WatchState::Served,
        WatchState::Expired,
        WatchState::Cancelled,
    ];

    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            WatchState::Watching => "watching",
            WatchState::Served => "served",
            WatchState::Expired => "expired",
            WatchState::Cancelled => "cancelled",
        }
    }

    /// From the stored text.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|state| state.as_str() == raw)
    }
}

/// How a held window ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OfferOutcome {
    /// Its watcher booked it.
    Booked,
    /// Another watcher booked it first.
    Lost,
    /// Nobody booked it within the hold.
    Lapsed,
}

impl OfferOutcome {
    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            OfferOutcome::Booked => "booked",
            OfferOutcome::Lost => "lost",
            OfferOutcome::Lapsed => "lapsed",
        }
    }

    /// From the stored text.
    pub fn parse(raw: &str) -> Option<Self> {
        [
            OfferOutcome::Booked,
            OfferOutcome::Lost,
            OfferOutcome::Lapsed,
        ]
        .into_iter()
        .find(|outcome| outcome.as_str() == raw)
    }
}

/// What a watch asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchRequest {
    /// The GPU model.
    pub model: String,
    /// GPUs on one node.
    pub count: u32,
    /// Share of each.
    pub share: Share,
    /// How long the window must be.
    pub length: TimeDelta,
    /// The window may start at this time at the earliest …
    pub from: DateTime<Utc>,
    /// … and must end by this time.
    pub to: DateTime<Utc>,
}

/// The limits a watch is checked against.
#[derive(Debug, Clone, Copy)]
pub struct WatchLimits {
    /// The longest booking.
    pub max_length: TimeDelta,
    /// The latest start a booking may have (the booking horizon).
    pub latest_start: DateTime<Utc>,
    /// The horizon, in weeks (for the message).
    pub horizon_weeks: i64,
}

impl WatchRequest {
    /// The first field it gets wrong, as `(field, problem)`.
    pub fn check(&self, limits: &WatchLimits, now: DateTime<Utc>) -> Result<(), (String, Problem)> {
        let refuse = |field: &str, problem: Problem| Err((field.to_owned(), problem));
        if self.count == 0 || self.count > MAX_WATCH_GPUS {
            return refuse(
                "count",
                Problem::CountRange {
                    max: MAX_WATCH_GPUS as usize,
                },
            );
        }
        let minutes = self.length.num_minutes();
        if minutes < SLOT_MINUTES || minutes % SLOT_MINUTES != 0 || self.length > limits.max_length
        {
            return refuse(
                "hours",
                Problem::BadLength {
                    days: limits.max_length.num_days(),
                },
            );
        }
        if self.to <= self.from {
            return refuse("to", Problem::ToNotAfterFrom);
        }
        if self.to <= now {
            return refuse("to", Problem::AlreadyOver);
        }
        if self.latest_start() < self.search_from(now) {
            return refuse("to", Problem::WatchSpan);
        }
        if self.from > limits.latest_start {
            return refuse(
                "from",
                Problem::BeyondHorizon {
                    weeks: limits.horizon_weeks,
                },
            );
        }
        Ok(())
    }

    /// The earliest start a window may have at `now`: the watch's `from`, on the quarter-hour
    /// grid, and not before the current time.
    pub fn search_from(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        slot_ceil(self.from.max(now))
    }

    /// The latest start a window may have: it must end by `to`.
    pub fn latest_start(&self) -> DateTime<Utc> {
        self.to - self.length
    }

    /// Whether no window can fit any more at `now`.
    pub fn expired(&self, now: DateTime<Utc>) -> bool {
        self.latest_start() < self.search_from(now)
    }

    /// Whether `window` answers this watch (right length, within `[from, to]`).
    pub fn answered_by(&self, window: &Window) -> bool {
        window.length() == self.length && window.start() >= self.from && window.end() <= self.to
    }
}

/// A held window, as a watcher sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchOffer {
    /// Its id.
    pub id: i64,
    /// The node.
    pub node_name: String,
    /// The GPUs.
    pub gpu_ids: Vec<i64>,
    /// When.
    pub window: Window,
    /// What booking it costs, minor units.
    pub price_minor: i64,
    /// Held until.
    pub hold_until: DateTime<Utc>,
    /// None while held.
    pub outcome: Option<OfferOutcome>,
}

impl WatchOffer {
    /// Whether its watcher may still book it at `now`.
    pub fn open(&self, now: DateTime<Utc>) -> bool {
        self.outcome.is_none() && now < self.hold_until
    }
}

/// A watch, as its watcher sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watch {
    /// Its id.
    pub id: i64,
    /// The GPU model.
    pub model: String,
    /// GPUs on one node.
    pub count: u32,
    /// Share of each.
    pub share: Share,
    /// Length, minutes.
    pub length_minutes: i64,
    /// Earliest start.
    pub from: DateTime<Utc>,
    /// Latest end.
    pub to: DateTime<Utc>,
    /// The team a booking from it is for (id, name).
    pub team: Option<(i64, String)>,
    /// Where it stands.
    pub state: WatchState,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// The last window found for it.
    pub offer: Option<WatchOffer>,
    /// The booking that served it.
    pub reservation_id: Option<i64>,
}

/// The hours a length is, for forms (`1.5`).
pub fn hours_text(minutes: i64) -> String {
    if minutes % 60 == 0 {
        (minutes / 60).to_string()
    } else {
        #[expect(clippy::cast_precision_loss, reason = "minutes are small")]
        let hours = minutes as f64 / 60.0;
        format!("{hours}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(hour: u32, minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 4, hour, minute, 0).unwrap()
    }

    fn limits() -> WatchLimits {
        WatchLimits {
            max_length: TimeDelta::days(7),
            latest_start: at(0, 0) + TimeDelta::weeks(8),
            horizon_weeks: 8,
        }
    }

    fn request(from: DateTime<Utc>, to: DateTime<Utc>, hours: i64) -> WatchRequest {
        WatchRequest {
            model: "H100".into(),
            count: 2,
            share: Share::Whole,
            length: TimeDelta::hours(hours),
            from,
            to,
        }
    }

    #[test]
    fn a_sound_watch_passes() {
        assert_eq!(
            request(at(10, 0), at(18, 0), 4).check(&limits(), at(9, 7)),
            Ok(())
        );
    }

    #[test]
    fn each_bad_field_is_named() {
        let now = at(9, 0);
        let field = |r: WatchRequest| r.check(&limits(), now).unwrap_err().0;
        let mut zero = request(at(10, 0), at(18, 0), 4);
        zero.count = 0;
        assert_eq!(field(zero), "count");
        let mut many = request(at(10, 0), at(18, 0), 4);
        many.count = 65;
        assert_eq!(field(many), "count");
        let mut odd = request(at(10, 0), at(18, 0), 4);
        odd.length = TimeDelta::minutes(50);
        assert_eq!(field(odd), "hours");
        assert_eq!(field(request(at(10, 0), at(18, 0), 24 * 8)), "hours");
        assert_eq!(field(request(at(18, 0), at(10, 0), 1)), "to");
        assert_eq!(field(request(at(5, 0), at(8, 0), 1)), "to");
        // Two hours between from and to cannot hold four.
        let (_, problem) = request(at(10, 0), at(12, 0), 4)
            .check(&limits(), now)
            .unwrap_err();
        assert_eq!(problem, Problem::WatchSpan);
        let far = at(0, 0) + TimeDelta::weeks(9);
        assert_eq!(field(request(far, far + TimeDelta::hours(5), 4)), "from");
    }

    #[test]
    fn the_search_starts_on_the_grid_not_before_now_and_ends_by_to() {
        let r = request(at(10, 0), at(18, 0), 4);
        assert_eq!(r.search_from(at(9, 0)), at(10, 0));
        assert_eq!(r.search_from(at(11, 5)), at(11, 15));
        assert_eq!(r.latest_start(), at(14, 0));
        assert!(!r.expired(at(14, 0)));
        assert!(r.expired(at(14, 1)));
    }

    #[test]
    fn a_window_answers_when_it_lies_within() {
        let r = request(at(10, 0), at(18, 0), 4);
        let w = |a, b| Window::new(a, b).unwrap();
        assert!(r.answered_by(&w(at(10, 0), at(14, 0))));
        assert!(r.answered_by(&w(at(14, 0), at(18, 0))));
        assert!(!r.answered_by(&w(at(14, 15), at(18, 15))));
        assert!(!r.answered_by(&w(at(10, 0), at(13, 0))));
    }

    #[test]
    fn an_offer_is_open_until_its_hold_ends_or_it_is_settled() {
        let offer = WatchOffer {
            id: 1,
            node_name: "n".into(),
            gpu_ids: vec![1],
            window: Window::new(at(10, 0), at(11, 0)).unwrap(),
            price_minor: 100,
            hold_until: at(9, 10),
            outcome: None,
        };
        assert!(offer.open(at(9, 9)));
        assert!(!offer.open(at(9, 10)));
        let booked = WatchOffer {
            outcome: Some(OfferOutcome::Booked),
            ..offer
        };
        assert!(!booked.open(at(9, 0)));
    }

    #[test]
    fn states_and_outcomes_read_back() {
        for state in WatchState::ALL {
            assert_eq!(WatchState::parse(state.as_str()), Some(state));
        }
        for outcome in [
            OfferOutcome::Booked,
            OfferOutcome::Lost,
            OfferOutcome::Lapsed,
        ] {
            assert_eq!(OfferOutcome::parse(outcome.as_str()), Some(outcome));
        }
        assert_eq!(hours_text(90), "1.5");
        assert_eq!(hours_text(240), "4");
    }
}
