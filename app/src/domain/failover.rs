//! When a reserved GPU fails (it fell off the bus, vanished, was retired or taken for
//! maintenance), its booking moves to an equivalent free GPU. These rules say from when the
//! booking moves, which part of it the holder lost, and what that is worth: pure arithmetic on
//! the slot grid, with the search for the GPU and the writes in `backend::reservations::failover`.
//!
//! Time is counted in *GPU-slots*: one GPU (at the booking's share) for one 15-minute slot. A
//! booking of `n` GPUs over `s` slots has `n × s` of them, and each is worth the same part of its
//! price, so every refund is `price × gpu_slots / (n × s)`, rounded down to a minor unit (the
//! holder never gets back more than was paid).

use crate::domain::schedule::{SLOT_MINUTES, Window, slot_floor};
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// Why a booking left its GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureCause {
    /// The driver reported XID 79: the GPU fell off the bus.
    FellOffBus,
    /// The node's agent no longer finds the GPU.
    Missing,
    /// A platform admin retired the GPU.
    Retired,
    /// A platform admin took the GPU for maintenance.
    Maintenance,
}

impl FailureCause {
    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureCause::FellOffBus => "fell_off_bus",
            FailureCause::Missing => "missing",
            FailureCause::Retired => "retired",
            FailureCause::Maintenance => "maintenance",
        }
    }

    /// From the stored text.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "fell_off_bus" => Some(FailureCause::FellOffBus),
            "missing" => Some(FailureCause::Missing),
            "retired" => Some(FailureCause::Retired),
            "maintenance" => Some(FailureCause::Maintenance),
            _ => None,
        }
    }
}

/// The XID code of a GPU that fell off the bus.
pub const XID_FELL_OFF_BUS: i64 = 79;

/// How long Berth takes a GPU that fell off the bus out of booking (a platform admin ends it
/// early once the GPU is back).
pub const FELL_OFF_BUS_OUT_FOR: TimeDelta = TimeDelta::hours(24);

/// Where one booking stands when its GPU fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    /// The booking's window.
    pub window: Window,
    /// From when the rest of the booking is held elsewhere (a slot boundary inside the window).
    pub at: DateTime<Utc>,
    /// The booking had begun: its holder was (or would have been) on the GPU when it failed.
    pub interrupted: bool,
    /// The slots the failed GPUs stood idle before `at` (from the slot the failure fell in).
    pub idle_before: i64,
}

/// The move of a booking over `window` whose GPU failed (or goes into maintenance) at
/// `failed_at`, seen at `now`; `None` when the booking is over by then. A booking that has not
/// begun at `now` moves whole, however late the failure falls in it: nobody is interrupted.
pub fn plan(window: Window, failed_at: DateTime<Utc>, now: DateTime<Utc>) -> Option<Move> {
    let moment = if now < window.start() {
        window.start()
    } else {
        failed_at.max(now)
    };
    let at = slot_floor(moment).max(window.start());
    if at >= window.end() {
        return None;
    }
    let interrupted = window.start() < moment;
    let idle_from = slot_floor(failed_at).max(window.start());
    let idle_before = if interrupted && idle_from < at {
        slots_between(idle_from, at)
    } else {
        0
    };
    Some(Move {
        window,
        at,
        interrupted,
        idle_before,
    })
}

impl Move {
    /// The booking is split: the part before `at` stays where it was.
    pub fn splits(&self) -> bool {
        self.at > self.window.start()
    }

    /// The rest of the booking, from `at` to its end.
    pub fn rest(&self) -> Window {
        Window::new(self.at, self.window.end()).unwrap_or(self.window)
    }

    /// Slots in the rest.
    pub fn rest_slots(&self) -> i64 {
        slots_between(self.at, self.window.end())
    }

    /// GPU-slots the holder lost when the booking moves: `failed` GPUs idle before `at`, and
    /// `moved` GPUs (the failed ones on the same node, all of them on another node) for the
    /// slot the move takes; nothing for a booking moved before it began.
    pub fn lost(&self, failed: i64, moved: i64) -> Lost {
        if !self.interrupted {
            return Lost::default();
        }
        Lost {
            before: failed * self.idle_before,
            after: moved * self.rest_slots().min(1),
        }
    }

    /// GPU-slots refunded when no equivalent GPU is free: all `gpus` for the rest, and the
    /// failed ones idle before it.
    pub fn released(&self, failed: i64, gpus: i64) -> i64 {
        let idle = if self.interrupted {
            failed * self.idle_before
        } else {
            0
        };
        gpus * self.rest_slots() + idle
    }
}

/// GPU-slots lost by a moved booking: before the move point (refunded by its first part) and in
/// the slot of the move (taken off the rest's price).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lost {
    /// Before the move point.
    pub before: i64,
    /// From the move point.
    pub after: i64,
}

impl Lost {
    /// Both.
    pub fn total(&self) -> i64 {
        self.before + self.after
    }
}

/// Whole slots from `from` to `to` (both on the grid).
pub fn slots_between(from: DateTime<Utc>, to: DateTime<Utc>) -> i64 {
    ((to - from).num_minutes() / SLOT_MINUTES).max(0)
}

/// What `gpu_slots` of a booking of `gpus` GPUs over `window` priced `price_minor` are worth,
/// rounded down.
pub fn worth(price_minor: i64, gpus: i64, window: &Window, gpu_slots: i64) -> i64 {
    let all = i128::from(gpus.max(1)) * i128::from(slots_between(window.start(), window.end()));
    if all <= 0 || price_minor <= 0 {
        return 0;
    }
    let part = i128::from(gpu_slots.clamp(0, i64::MAX)).min(all);
    i64::try_from(i128::from(price_minor) * part / all).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    fn at(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 3, h, m, 0).unwrap()
    }

    fn window(from: (u32, u32), to: (u32, u32)) -> Window {
        Window::new(at(from.0, from.1), at(to.0, to.1)).unwrap()
    }

    #[test]
    fn a_failure_during_the_booking_splits_it_at_the_slot_of_the_failure() {
        // Booked 10:00–12:00; the GPU falls off the bus at 10:40, seen at 10:41.
        let plan = plan(window((10, 0), (12, 0)), at(10, 40), at(10, 41)).unwrap();
        assert_eq!(plan.at, at(10, 30));
        assert!(plan.splits() && plan.interrupted);
        assert_eq!(plan.rest_slots(), 6);
        // One failed GPU of one: the slot of the move is lost, nothing idle before it.
        assert_eq!(
            plan.lost(1, 1),
            Lost {
                before: 0,
                after: 1
            }
        );
    }

    #[test]
    fn a_failure_reported_late_counts_the_idle_slots_before_the_move() {
        // The failure at 10:10 reaches the portal at 10:50: 10:00 (its slot) to 10:45 idle.
        let plan = plan(window((10, 0), (12, 0)), at(10, 10), at(10, 50)).unwrap();
        assert_eq!(plan.at, at(10, 45));
        assert_eq!(plan.idle_before, 3);
        // Two GPUs of the booking failed, all four moved to another node.
        assert_eq!(
            plan.lost(2, 4),
            Lost {
                before: 6,
                after: 4
            }
        );
        // No equivalent GPU: the rest of all four, and the failed two idle before it.
        assert_eq!(plan.released(2, 4), 4 * 5 + 6);
    }

    #[test]
    fn a_booking_moved_before_it_begins_loses_nothing() {
        // Maintenance from 13:00 set at 10:00 for a booking 14:00–16:00.
        let plan = plan(window((14, 0), (16, 0)), at(13, 0), at(10, 0)).unwrap();
        assert_eq!(plan.at, at(14, 0));
        assert!(!plan.splits() && !plan.interrupted);
        assert_eq!(plan.lost(1, 1).total(), 0);
        assert_eq!(plan.released(1, 1), 8);
    }

    #[test]
    fn maintenance_ahead_during_a_booking_moves_it_at_the_maintenance() {
        // Booked 10:00–14:00, at 10:05 maintenance is set from 12:00.
        let plan = plan(window((10, 0), (14, 0)), at(12, 0), at(10, 5)).unwrap();
        assert_eq!(plan.at, at(12, 0));
        assert!(plan.splits() && plan.interrupted);
        assert_eq!(plan.idle_before, 0);
        assert_eq!(
            plan.lost(1, 1),
            Lost {
                before: 0,
                after: 1
            }
        );
    }

    #[test]
    fn maintenance_within_a_booking_not_begun_moves_it_whole() {
        // Booked 14:00–18:00; at 10:00 maintenance is set from 16:00.
        let plan = plan(window((14, 0), (18, 0)), at(16, 0), at(10, 0)).unwrap();
        assert_eq!(plan.at, at(14, 0));
        assert!(!plan.splits() && !plan.interrupted);
        assert_eq!(plan.lost(1, 1).total(), 0);
    }

    #[test]
    fn a_failure_in_the_first_slot_moves_the_whole_booking() {
        let plan = plan(window((10, 0), (11, 0)), at(10, 5), at(10, 6)).unwrap();
        assert_eq!(plan.at, at(10, 0));
        assert!(!plan.splits() && plan.interrupted);
        assert_eq!(
            plan.lost(1, 1),
            Lost {
                before: 0,
                after: 1
            }
        );
    }

    #[test]
    fn an_ended_booking_does_not_move() {
        assert_eq!(plan(window((10, 0), (11, 0)), at(11, 0), at(11, 1)), None);
        assert_eq!(plan(window((10, 0), (11, 0)), at(10, 59), at(11, 2)), None);
    }

    #[test]
    fn worth_is_the_share_of_the_price_rounded_down() {
        let w = window((10, 0), (12, 0));
        // 8 slots of 2 GPUs for 16.00: one GPU-slot is 1.00.
        assert_eq!(worth(1600, 2, &w, 1), 100);
        assert_eq!(worth(1600, 2, &w, 16), 1600);
        assert_eq!(worth(1600, 2, &w, 99), 1600);
        assert_eq!(worth(1000, 3, &w, 1), 41);
        assert_eq!(worth(0, 1, &w, 4), 0);
    }

    #[test]
    fn causes_round_trip() {
        for cause in [
            FailureCause::FellOffBus,
            FailureCause::Missing,
            FailureCause::Retired,
            FailureCause::Maintenance,
        ] {
            assert_eq!(FailureCause::parse(cause.as_str()), Some(cause));
        }
        assert_eq!(FailureCause::parse("xid"), None);
    }

    proptest! {
        /// Whatever the times, the holder never gets back more than the booking's price: the
        /// refund of the first part and the discount on the rest together stay within it.
        #[test]
        fn refunds_never_exceed_the_price(
            slots in 1i64..400,
            start_slot in 0i64..400,
            failed_offset in -40i64..800,
            seen_after in 0i64..200,
            gpus in 1i64..9,
            failed in 1i64..9,
            price in 0i64..10_000_000,
        ) {
            let failed = failed.min(gpus);
            let base = at(0, 0);
            let start = base + TimeDelta::minutes(start_slot * SLOT_MINUTES);
            let w = Window::new(start, start + TimeDelta::minutes(slots * SLOT_MINUTES)).unwrap();
            let failed_at = start + TimeDelta::minutes(failed_offset);
            let now = failed_at + TimeDelta::minutes(seen_after);
            if let Some(plan) = plan(w, failed_at, now) {
                prop_assert!(plan.at >= w.start() && plan.at < w.end());
                let moved = worth(price, gpus, &w, gpus * plan.rest_slots());
                let lost = plan.lost(failed, gpus);
                let refund_first = if plan.splits() { moved } else { 0 } + worth(price, gpus, &w, lost.before);
                let rest_price = moved - worth(price, gpus, &w, lost.after);
                prop_assert!(rest_price >= 0);
                prop_assert!(refund_first <= price);
                prop_assert!(worth(price, gpus, &w, plan.released(failed, gpus)) <= price);
            }
        }
    }
}
