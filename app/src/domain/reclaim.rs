//! Idle reclaim: when a running booking's GPUs have sat idle long enough, its holder is warned,
//! then (under a `release` policy) the rest of the booking comes back to the fleet with part of
//! the unused time refunded. Pure rules: the policy, how idleness is measured from per-minute
//! utilisation, what is due at a given moment and what the release refunds.
//!
//! The field's practice: Princeton's job_defense_shield cancels GPU jobs at 0 % after 2 hours
//! with warnings at 60 and 105 minutes; Run:ai stops workloads after an "idle GPU time limit".
//! A GPU without telemetry is never called idle: gaps in its reports break an idle streak, and a
//! GPU whose agent has gone quiet is *unmeasured*.

use crate::domain::failover::{slots_between, worth};
use crate::domain::quota::Priority;
use crate::domain::schedule::{Window, slot_ceil};
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// What a policy does with an idle booking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleAction {
    /// Nothing: no warnings, no release.
    Off,
    /// Warnings only.
    Warn,
    /// Warnings, then the rest of the booking is released.
    Release,
}

impl IdleAction {
    /// Every action, as forms list them.
    pub const ALL: [IdleAction; 3] = [IdleAction::Off, IdleAction::Warn, IdleAction::Release];

    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            IdleAction::Off => "off",
            IdleAction::Warn => "warn",
            IdleAction::Release => "release",
        }
    }

    /// From the stored or sent text.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|action| action.as_str() == raw.trim())
    }
}

/// The longest idle window a policy may set (a week).
pub const MAX_WINDOW_MINUTES: u32 = 7 * 24 * 60;
/// At most this many warnings before the action.
pub const MAX_WARNINGS: usize = 5;
/// Reports further apart than this break an idle streak: the time between them is unmeasured.
pub const MAX_GAP: TimeDelta = TimeDelta::minutes(5);

/// An idle policy: the platform's default, or one team's override. Read from JSON, fields left
/// out take the default's values and unknown fields are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IdlePolicy {
    /// A GPU is idle while its utilisation stays below this, percent (1–100).
    pub threshold_percent: u8,
    /// How long all of a booking's GPUs must be idle before the action, minutes.
    pub window_minutes: u32,
    /// Minutes of idleness at which the holder is warned, ascending, each before the window.
    pub warnings: Vec<u32>,
    /// What happens at the end of the window.
    pub action: IdleAction,
    /// Bookings of at most this many GPUs …
    pub exempt_max_gpus: u32,
    /// … and at most this many hours are exempt (interactive sessions); 0 and 0: none.
    pub exempt_max_hours: u32,
    /// Priority classes never reclaimed.
    pub exempt_priorities: Vec<Priority>,
    /// Share of the unused remainder refunded on release, percent (0–100).
    pub refund_percent: u8,
}

impl Default for IdlePolicy {
    fn default() -> Self {
        Self {
            threshold_percent: 5,
            window_minutes: 120,
            warnings: vec![60, 105],
            action: IdleAction::Release,
            exempt_max_gpus: 1,
            exempt_max_hours: 8,
            exempt_priorities: vec![Priority::Production],
            refund_percent: 50,
        }
    }
}

/// Why a policy was refused. Each names the field to fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The threshold is outside 1–100 %.
    #[error("the idle threshold must be between 1 and 100 %")]
    Threshold,
    /// The window is outside 15 minutes – a week.
    #[error("the idle window must be between 15 minutes and a week")]
    Window,
    /// A warning is not a number of minutes before the window, or they are not ascending.
    #[error("warnings must be ascending minutes, each before the idle window")]
    Warnings,
    /// The refund is outside 0–100 %.
    #[error("the refund must be between 0 and 100 %")]
    Refund,
    /// Exemption limits out of range.
    #[error("exemptions must be at most 1,024 GPUs and 8,760 hours")]
    Exemptions,
}

impl PolicyError {
    /// The form field to fix.
    pub fn field(self) -> &'static str {
        match self {
            PolicyError::Threshold => "threshold_percent",
            PolicyError::Window => "window_minutes",
            PolicyError::Warnings => "warnings",
            PolicyError::Refund => "refund_percent",
            PolicyError::Exemptions => "exempt_max_gpus",
        }
    }

    /// The problem to show.
    pub fn problem(self) -> crate::domain::problem::Problem {
        use crate::domain::problem::Problem;
        match self {
            PolicyError::Threshold => Problem::IdleThreshold,
            PolicyError::Window => Problem::IdleWindow,
            PolicyError::Warnings => Problem::IdleWarnings,
            PolicyError::Refund => Problem::IdleRefund,
            PolicyError::Exemptions => Problem::IdleExemptions,
        }
    }
}

/// Parses a warning list as typed in a form: `60, 105` (minutes; empty: no warnings).
pub fn parse_warnings(raw: &str) -> Result<Vec<u32>, PolicyError> {
    raw.split([',', ' ', ';'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| part.parse::<u32>().map_err(|_| PolicyError::Warnings))
        .collect()
}

/// The warning list as a form shows it: `60, 105`.
pub fn warnings_text(warnings: &[u32]) -> String {
    warnings
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl IdlePolicy {
    /// Checks every field; the first problem found.
    pub fn validate(&self) -> Result<(), PolicyError> {
        if !(1..=100).contains(&self.threshold_percent) {
            return Err(PolicyError::Threshold);
        }
        if !(15..=MAX_WINDOW_MINUTES).contains(&self.window_minutes) {
            return Err(PolicyError::Window);
        }
        let ascending = self.warnings.windows(2).all(|pair| pair[0] < pair[1]);
        if self.warnings.len() > MAX_WARNINGS
            || !ascending
            || self
                .warnings
                .iter()
                .any(|&at| at == 0 || at >= self.window_minutes)
        {
            return Err(PolicyError::Warnings);
        }
        if self.refund_percent > 100 {
            return Err(PolicyError::Refund);
        }
        if self.exempt_max_gpus > 1024 || self.exempt_max_hours > 8760 {
            return Err(PolicyError::Exemptions);
        }
        Ok(())
    }

    /// The booking is never reclaimed: small and short (an interactive session), or of an
    /// exempt priority class.
    pub fn exempts(&self, booking: &IdleBooking) -> bool {
        let hours = booking.window.length().num_minutes();
        let small =
            booking.gpus <= self.exempt_max_gpus && hours <= i64::from(self.exempt_max_hours) * 60;
        small || self.exempt_priorities.contains(&booking.priority)
    }

    /// The threshold as a fraction of 100, for comparisons with measured percentages.
    pub fn threshold(&self) -> f64 {
        f64::from(self.threshold_percent)
    }
}

/// The platform's policy and the teams' overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policies {
    /// The platform's default.
    pub platform: IdlePolicy,
    /// Teams' overrides: team id, its name, its policy (by name).
    pub teams: Vec<(i64, String, IdlePolicy)>,
}

impl Policies {
    /// The policy for a booking of `team` (none: personal).
    pub fn for_team(&self, team: Option<i64>) -> &IdlePolicy {
        team.and_then(|team| self.teams.iter().find(|(id, ..)| *id == team))
            .map_or(&self.platform, |(_, _, policy)| policy)
    }

    /// Whether team `team` has its own policy.
    pub fn has_own(&self, team: i64) -> bool {
        self.teams.iter().any(|(id, ..)| *id == team)
    }
}

/// What a reservation's page says about its idle GPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleNote {
    /// Idle without a break since (the streak the holder was warned about).
    pub since: DateTime<Utc>,
    /// What the policy does at `acts_at`.
    pub action: IdleAction,
    /// When.
    pub acts_at: DateTime<Utc>,
    /// The threshold, percent.
    pub threshold_percent: u8,
    /// The holder may still say "I'm still using it" (once per booking).
    pub can_snooze: bool,
}

/// The note for a running booking (`running`) warned about the streak that began `told.since`
/// (counted from `counted_from`: its start, or the holder's "I'm still using it"), unless its
/// GPUs' latest readings (`latest_util`) show it in use again. `may_snooze`: the viewer is the
/// holder and has not said "I'm still using it" yet.
pub fn note(
    policy: &IdlePolicy,
    running: bool,
    told: Told,
    counted_from: DateTime<Utc>,
    may_snooze: bool,
    latest_util: &[Option<f64>],
) -> Option<IdleNote> {
    let since = told.since.filter(|since| *since >= counted_from)?;
    let busy = latest_util
        .iter()
        .any(|util| util.is_some_and(|u| u >= policy.threshold()));
    (running && told.warnings > 0 && policy.action != IdleAction::Off && !busy).then(|| IdleNote {
        since,
        action: policy.action,
        acts_at: since + TimeDelta::minutes(i64::from(policy.window_minutes)),
        threshold_percent: policy.threshold_percent,
        can_snooze: may_snooze,
    })
}

/// One minute of one GPU's telemetry: the highest utilisation reported in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Minute {
    /// The start of the minute.
    pub at: DateTime<Utc>,
    /// The highest GPU utilisation reported in the minute, percent.
    pub max_util: f64,
}

/// What the telemetry says about a GPU (or a whole booking) at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measured {
    /// In use now.
    Busy,
    /// Idle without a break since `since`.
    Idle {
        /// The first idle minute of the streak (measured time only).
        since: DateTime<Utc>,
    },
    /// No recent telemetry: never called idle.
    Unmeasured,
}

/// How one GPU stands at `now`, from its `minutes` (ascending, at most up to `now`), counting
/// nothing before `from` (the booking's start, or a snooze). The newest minute must be within
/// [`MAX_GAP`] of `now`, and each idle minute within [`MAX_GAP`] of the next, or the time is
/// unmeasured.
pub fn gpu_state(
    minutes: &[Minute],
    threshold: f64,
    from: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Measured {
    let recent: Vec<&Minute> = minutes
        .iter()
        .filter(|m| m.at + TimeDelta::minutes(1) > from && m.at <= now)
        .collect();
    let Some(last) = recent.last() else {
        return Measured::Unmeasured;
    };
    if now - last.at > MAX_GAP {
        return Measured::Unmeasured;
    }
    if last.max_util >= threshold {
        return Measured::Busy;
    }
    let mut since = last.at;
    for minute in recent.iter().rev().skip(1) {
        if minute.max_util >= threshold || since - minute.at > MAX_GAP {
            break;
        }
        since = minute.at;
    }
    Measured::Idle {
        since: since.max(from),
    }
}

/// A booking's state from its GPUs' states: busy if any GPU is busy, unmeasured if any is
/// unmeasured (and none busy), else idle since the latest of their streaks' starts.
pub fn booking_state(gpus: &[Measured]) -> Measured {
    if gpus.is_empty() {
        return Measured::Unmeasured;
    }
    if gpus.contains(&Measured::Busy) {
        return Measured::Busy;
    }
    let mut latest: Option<DateTime<Utc>> = None;
    for gpu in gpus {
        match gpu {
            Measured::Idle { since } => latest = Some(latest.map_or(*since, |l| l.max(*since))),
            _ => return Measured::Unmeasured,
        }
    }
    latest.map_or(Measured::Unmeasured, |since| Measured::Idle { since })
}

/// The facts about a running booking that the policy reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdleBooking {
    /// Its window.
    pub window: Window,
    /// Whole GPUs (or shares) booked.
    pub gpus: u32,
    /// Its priority class.
    pub priority: Priority,
}

/// What has been told about the current idle streak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Told {
    /// The start of the streak the warnings were about.
    pub since: Option<DateTime<Utc>>,
    /// Warnings sent for it.
    pub warnings: u32,
}

impl Told {
    /// Warnings already sent for the streak that began `since`.
    pub fn for_streak(&self, since: DateTime<Utc>) -> u32 {
        if self.since == Some(since) {
            self.warnings
        } else {
            0
        }
    }
}

/// The telemetry read for a check reaches back only so far (`read_from`, later than
/// `counted_from`, the booking's start or the holder's "I'm still using it"): a streak that runs
/// to the start of what was read continues the one already warned about (`told.since`), when
/// that began earlier but not before `counted_from`, so a long idle streak stays one streak and
/// its warnings are not sent again.
pub fn carried(
    state: Measured,
    read_from: DateTime<Utc>,
    counted_from: DateTime<Utc>,
    told: Told,
) -> Measured {
    match (state, told.since) {
        (Measured::Idle { since }, Some(earlier))
            if read_from > counted_from
                && since - read_from <= MAX_GAP
                && earlier < since
                && earlier >= counted_from =>
        {
            Measured::Idle { since: earlier }
        }
        _ => state,
    }
}

/// What the policy asks for now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// Nothing to do.
    Nothing,
    /// Warn the holder: warning number `number` (1-based) of the streak that began `since`;
    /// at `acts_at` the policy's action follows (if the GPUs stay idle).
    Warn {
        /// 1-based.
        number: u32,
        /// The streak's start.
        since: DateTime<Utc>,
        /// When the window ends.
        acts_at: DateTime<Utc>,
    },
    /// Release the rest of the booking from `at` (the next slot boundary).
    Release {
        /// The streak's start.
        since: DateTime<Utc>,
        /// The new end of the booking.
        at: DateTime<Utc>,
    },
}

/// What `policy` asks for at `now` for `booking` in `state`, given what was `told` already.
/// Only the latest warning due is sent (a portal that was down does not send three at once);
/// a release at or after the booking's end is nothing (it ends anyway).
pub fn due(
    policy: &IdlePolicy,
    booking: &IdleBooking,
    state: Measured,
    told: Told,
    now: DateTime<Utc>,
) -> Due {
    let Measured::Idle { since } = state else {
        return Due::Nothing;
    };
    if policy.action == IdleAction::Off
        || policy.exempts(booking)
        || now < booking.window.start()
        || now >= booking.window.end()
    {
        return Due::Nothing;
    }
    let idle = (now - since).num_minutes().max(0);
    let window = i64::from(policy.window_minutes);
    let acts_at = since + TimeDelta::minutes(window);
    if idle >= window && policy.action == IdleAction::Release {
        let at = slot_ceil(now);
        return if at < booking.window.end() {
            Due::Release { since, at }
        } else {
            Due::Nothing
        };
    }
    let reached = u32::try_from(
        policy
            .warnings
            .iter()
            .filter(|&&at| i64::from(at) <= idle)
            .count(),
    )
    .unwrap_or(0);
    if reached > told.for_streak(since) {
        Due::Warn {
            number: reached,
            since,
            acts_at,
        }
    } else {
        Due::Nothing
    }
}

/// What a release at `at` of a booking over `window` for `gpus` priced `price_minor` refunds
/// under `refund_percent`: that share of the unused GPU-slots' worth, rounded down.
pub fn release_refund(
    price_minor: i64,
    gpus: i64,
    window: &Window,
    at: DateTime<Utc>,
    refund_percent: u8,
) -> i64 {
    let unused = gpus * slots_between(at.max(window.start()), window.end());
    let value = worth(price_minor, gpus, window, unused);
    i64::try_from(i128::from(value) * i128::from(refund_percent.min(100)) / 100).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    fn at(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 3, h, m, 0).unwrap()
    }

    fn booking(gpus: u32, from: u32, to: u32) -> IdleBooking {
        IdleBooking {
            window: Window::new(at(from, 0), at(to, 0)).unwrap(),
            gpus,
            priority: Priority::Development,
        }
    }

    /// One minute per entry from `start`, with these utilisations.
    fn minutes(start: DateTime<Utc>, utils: &[f64]) -> Vec<Minute> {
        utils
            .iter()
            .enumerate()
            .map(|(i, &max_util)| Minute {
                at: start + TimeDelta::minutes(i64::try_from(i).unwrap()),
                max_util,
            })
            .collect()
    }

    #[test]
    fn the_default_policy_is_the_fields_practice_and_valid() {
        let policy = IdlePolicy::default();
        assert_eq!(policy.threshold_percent, 5);
        assert_eq!(policy.window_minutes, 120);
        assert_eq!(policy.warnings, vec![60, 105]);
        assert_eq!(policy.refund_percent, 50);
        assert_eq!(policy.validate(), Ok(()));
    }

    #[test]
    fn bad_policies_name_their_field() {
        let base = IdlePolicy::default();
        let bad = |edit: fn(&mut IdlePolicy)| {
            let mut policy = base.clone();
            edit(&mut policy);
            policy.validate().unwrap_err().field()
        };
        assert_eq!(bad(|p| p.threshold_percent = 0), "threshold_percent");
        assert_eq!(bad(|p| p.threshold_percent = 101), "threshold_percent");
        assert_eq!(bad(|p| p.window_minutes = 5), "window_minutes");
        assert_eq!(bad(|p| p.window_minutes = u32::MAX), "window_minutes");
        assert_eq!(bad(|p| p.warnings = vec![105, 60]), "warnings");
        assert_eq!(bad(|p| p.warnings = vec![60, 120]), "warnings");
        assert_eq!(bad(|p| p.warnings = vec![0]), "warnings");
        assert_eq!(bad(|p| p.warnings = vec![1, 2, 3, 4, 5, 6]), "warnings");
        assert_eq!(bad(|p| p.refund_percent = 101), "refund_percent");
        assert_eq!(bad(|p| p.exempt_max_gpus = 1_000_000), "exempt_max_gpus");
        assert_eq!(parse_warnings("60, 105"), Ok(vec![60, 105]));
        assert_eq!(parse_warnings(""), Ok(vec![]));
        assert_eq!(parse_warnings("60, soon"), Err(PolicyError::Warnings));
        assert_eq!(parse_warnings("-5"), Err(PolicyError::Warnings));
        assert_eq!(warnings_text(&[60, 105]), "60, 105");
    }

    #[test]
    fn an_idle_streak_starts_after_the_last_busy_minute() {
        // Busy until 10:04, idle from 10:05 to 10:09.
        let data = minutes(
            at(10, 0),
            &[90.0, 80.0, 70.0, 60.0, 50.0, 0.0, 1.0, 0.0, 4.9, 0.0],
        );
        assert_eq!(
            gpu_state(&data, 5.0, at(9, 0), at(10, 10)),
            Measured::Idle { since: at(10, 5) }
        );
        // The last minute busy: busy.
        let data = minutes(at(10, 0), &[0.0, 0.0, 5.0]);
        assert_eq!(gpu_state(&data, 5.0, at(9, 0), at(10, 3)), Measured::Busy);
        // Counted from the booking's start (or a snooze) at the earliest.
        let data = minutes(at(10, 0), &[0.0; 10]);
        assert_eq!(
            gpu_state(&data, 5.0, at(10, 7), at(10, 10)),
            Measured::Idle { since: at(10, 7) }
        );
    }

    #[test]
    fn a_gpu_without_recent_telemetry_is_unmeasured_and_gaps_break_a_streak() {
        // Nothing at all.
        assert_eq!(
            gpu_state(&[], 5.0, at(9, 0), at(10, 0)),
            Measured::Unmeasured
        );
        // The agent went quiet 6 minutes ago.
        let data = minutes(at(9, 0), &[0.0; 54]);
        assert_eq!(
            gpu_state(&data, 5.0, at(9, 0), at(10, 0)),
            Measured::Unmeasured
        );
        // Idle 9:00–9:29, no reports for 20 minutes, idle again from 9:50: the streak starts
        // at 9:50, not 9:00.
        let mut data = minutes(at(9, 0), &[0.0; 30]);
        data.extend(minutes(at(9, 50), &[0.0; 10]));
        assert_eq!(
            gpu_state(&data, 5.0, at(8, 0), at(10, 0)),
            Measured::Idle { since: at(9, 50) }
        );
        // A gap of up to five minutes is fine.
        let mut data = minutes(at(9, 0), &[0.0; 30]);
        data.extend(minutes(at(9, 34), &[0.0; 26]));
        assert_eq!(
            gpu_state(&data, 5.0, at(8, 0), at(10, 0)),
            Measured::Idle { since: at(9, 0) }
        );
    }

    #[test]
    fn a_booking_is_idle_only_when_every_gpu_is() {
        let idle = |h, m| Measured::Idle { since: at(h, m) };
        assert_eq!(
            booking_state(&[idle(9, 0), idle(9, 30)]),
            idle(9, 30),
            "idle since the later streak"
        );
        assert_eq!(booking_state(&[idle(9, 0), Measured::Busy]), Measured::Busy);
        assert_eq!(
            booking_state(&[idle(9, 0), Measured::Unmeasured]),
            Measured::Unmeasured
        );
        assert_eq!(
            booking_state(&[Measured::Busy, Measured::Unmeasured]),
            Measured::Busy
        );
        assert_eq!(booking_state(&[]), Measured::Unmeasured);
    }

    #[test]
    fn warnings_come_at_60_and_105_minutes_then_the_release_at_the_next_slot() {
        let policy = IdlePolicy::default();
        let booking = booking(2, 8, 20);
        let since = at(9, 0);
        let state = Measured::Idle { since };
        let told = |warnings| Told {
            since: Some(since),
            warnings,
        };
        let due_at = |h, m, t| due(&policy, &booking, state, t, at(h, m));
        assert_eq!(due_at(9, 59, Told::default()), Due::Nothing);
        let first = Due::Warn {
            number: 1,
            since,
            acts_at: at(11, 0),
        };
        assert_eq!(due_at(10, 0, Told::default()), first);
        assert_eq!(due_at(10, 30, told(1)), Due::Nothing, "sent once");
        assert_eq!(
            due_at(10, 45, told(1)),
            Due::Warn {
                number: 2,
                since,
                acts_at: at(11, 0),
            }
        );
        // A portal that was down sends only the latest warning.
        assert_eq!(
            due_at(10, 50, Told::default()),
            Due::Warn {
                number: 2,
                since,
                acts_at: at(11, 0),
            }
        );
        assert_eq!(
            due_at(11, 0, told(2)),
            Due::Release {
                since,
                at: at(11, 0)
            }
        );
        assert_eq!(
            due_at(11, 1, told(2)),
            Due::Release {
                since,
                at: at(11, 15)
            }
        );
        // A new streak starts the warnings again.
        let later = Measured::Idle { since: at(12, 0) };
        assert_eq!(
            due(&policy, &booking, later, told(2), at(13, 0)),
            Due::Warn {
                number: 1,
                since: at(12, 0),
                acts_at: at(14, 0),
            }
        );
    }

    #[test]
    fn exempt_busy_unmeasured_or_off_means_nothing_and_warn_never_releases() {
        let mut policy = IdlePolicy::default();
        let state = Measured::Idle { since: at(8, 0) };
        let now = at(12, 0);
        // 1 GPU for 8 hours: an interactive session.
        assert_eq!(
            due(&policy, &booking(1, 8, 16), state, Told::default(), now),
            Due::Nothing
        );
        // 1 GPU for 9 hours is not.
        assert!(matches!(
            due(&policy, &booking(1, 8, 17), state, Told::default(), now),
            Due::Release { .. }
        ));
        let production = IdleBooking {
            priority: Priority::Production,
            ..booking(4, 8, 20)
        };
        assert_eq!(
            due(&policy, &production, state, Told::default(), now),
            Due::Nothing
        );
        for state in [Measured::Busy, Measured::Unmeasured] {
            assert_eq!(
                due(&policy, &booking(4, 8, 20), state, Told::default(), now),
                Due::Nothing
            );
        }
        // The release would fall at the booking's end: nothing.
        assert_eq!(
            due(
                &policy,
                &booking(4, 8, 12),
                state,
                Told::default(),
                at(11, 50)
            ),
            Due::Nothing
        );
        policy.action = IdleAction::Warn;
        assert_eq!(
            due(&policy, &booking(4, 8, 20), state, Told::default(), now),
            Due::Warn {
                number: 2,
                since: at(8, 0),
                acts_at: at(10, 0),
            }
        );
        policy.action = IdleAction::Off;
        assert_eq!(
            due(&policy, &booking(4, 8, 20), state, Told::default(), now),
            Due::Nothing
        );
    }

    #[test]
    fn the_release_refunds_its_share_of_the_unused_part() {
        // 2 GPUs 8:00–20:00 (48 slots each) for 9,600: 100 per GPU-slot.
        let window = Window::new(at(8, 0), at(20, 0)).unwrap();
        // Released at 11:00: 36 slots × 2 GPUs unused = 7,200, half refunded.
        assert_eq!(release_refund(9_600, 2, &window, at(11, 0), 50), 3_600);
        assert_eq!(release_refund(9_600, 2, &window, at(11, 0), 100), 7_200);
        assert_eq!(release_refund(9_600, 2, &window, at(11, 0), 0), 0);
        assert_eq!(release_refund(9_600, 2, &window, at(20, 0), 50), 0);
        assert_eq!(release_refund(0, 2, &window, at(11, 0), 50), 0);
    }

    #[test]
    fn a_long_streak_read_in_part_stays_the_streak_warned_about() {
        let told = Told {
            since: Some(at(6, 0)),
            warnings: 2,
        };
        let booked = at(5, 0);
        // Idle since the start of what was read (10:00): the streak warned about at 6:00.
        let state = Measured::Idle { since: at(10, 1) };
        assert_eq!(
            carried(state, at(10, 0), booked, told),
            Measured::Idle { since: at(6, 0) }
        );
        // Busy in between: a new streak.
        let state = Measured::Idle { since: at(11, 0) };
        assert_eq!(carried(state, at(10, 0), booked, told), state);
        assert_eq!(
            carried(Measured::Busy, at(10, 0), booked, told),
            Measured::Busy
        );
        // Nothing told: as read.
        let state = Measured::Idle { since: at(10, 0) };
        assert_eq!(carried(state, at(10, 0), booked, Told::default()), state);
        // The holder said "I'm still using it" at 7:00, after the warnings: the count starts
        // there, whether the read reaches back to it or not.
        assert_eq!(carried(state, at(10, 0), at(7, 0), told), state);
        let snoozed = Measured::Idle { since: at(7, 0) };
        assert_eq!(carried(snoozed, at(7, 0), at(7, 0), told), snoozed);
    }

    proptest! {
        #[test]
        fn a_release_never_refunds_more_than_the_unused_part(
            price in 0i64..10_000_000_000,
            gpus in 1i64..64,
            slots in 1i64..4_000,
            released_after in 0i64..4_000,
            percent in 0u8..=100,
        ) {
            let start = at(0, 0);
            let window = Window::new(start, start + TimeDelta::minutes(15 * slots)).unwrap();
            let release = start + TimeDelta::minutes(15 * released_after.min(slots));
            let refund = release_refund(price, gpus, &window, release, percent);
            let unused = worth(price, gpus, &window, gpus * slots_between(release, window.end()));
            prop_assert!(refund >= 0 && refund <= unused && unused <= price);
        }

        #[test]
        fn idle_streaks_never_start_before_the_count_begins_or_after_now(
            utils in proptest::collection::vec(0.0f64..12.0, 1..300),
            from_minute in 0i64..300,
        ) {
            let data = minutes(at(6, 0), &utils);
            let now = data.last().unwrap().at;
            let from = at(6, 0) + TimeDelta::minutes(from_minute);
            if let Measured::Idle { since } = gpu_state(&data, 5.0, from, now) {
                prop_assert!(since >= from && since <= now);
                // Every minute of the streak is below the threshold.
                prop_assert!(data.iter().filter(|m| m.at >= since).all(|m| m.max_util < 5.0));
            }
        }
    }
}
