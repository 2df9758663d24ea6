//! Team quotas per GPU model, priority classes, which bookings a higher-priority one may
//! displace, and when a booking waits for a team admin's approval.
//!
//! Units: a GPU share is counted in quarters (a whole GPU is 4), GPU time in quarter-minutes (a
//! whole GPU for an hour is 240), so that every sum is exact.

use crate::domain::problem::Problem;
use crate::domain::schedule::{Occupancy, Window, fits};
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// Priority classes, lowest first (as in platform practice: batch work yields to everything).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(sea_orm::EnumIter, sea_orm::DeriveActiveEnum))]
#[cfg_attr(
    feature = "ssr",
    sea_orm(rs_type = "String", db_type = "Text", rename_all = "snake_case")
)]
pub enum Priority {
    /// Work that may wait; always preemptible.
    Batch,
    /// Everyday work (the default of personal bookings and new teams).
    #[default]
    Development,
    /// Training runs.
    Training,
    /// Production services.
    Production,
}

impl Priority {
    /// Every class, highest first (as forms list them).
    pub const ALL: [Priority; 4] = [
        Priority::Production,
        Priority::Training,
        Priority::Development,
        Priority::Batch,
    ];

    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Batch => "batch",
            Priority::Development => "development",
            Priority::Training => "training",
            Priority::Production => "production",
        }
    }

    /// From the stored or sent text.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|priority| priority.as_str() == raw.trim())
    }
}

/// The priority a booking gets: the one asked for, or the team's default (personal bookings:
/// development). Nobody but a platform admin books above that default.
pub fn booking_priority(
    asked: Option<Priority>,
    team_default: Option<Priority>,
    platform_admin: bool,
) -> Result<Priority, Problem> {
    let most = team_default.unwrap_or_default();
    let priority = asked.unwrap_or(most);
    if priority > most && !platform_admin {
        return Err(Problem::PriorityNotAllowed {
            asked: priority.as_str().into(),
            most: most.as_str().into(),
        });
    }
    Ok(priority)
}

/// A team's quota for one GPU model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quota {
    /// GPUs the team may hold at the same instant (non-preemptible bookings).
    pub guaranteed_gpus: u32,
    /// GPU-hours per week (Monday to Monday, UTC); None: no weekly limit.
    pub weekly_gpu_hours: Option<u32>,
}

/// Largest quota a form accepts (GPUs at once, GPU-hours a week).
pub const MAX_QUOTA: u32 = 1_000_000;

/// Validates a quota as an admin sends it.
pub fn parse_quota(
    guaranteed_gpus: i64,
    weekly_gpu_hours: Option<i64>,
) -> Result<Quota, (&'static str, Problem)> {
    let range = Problem::OutOfRange {
        min: 0,
        max: i64::from(MAX_QUOTA),
    };
    let guaranteed = u32::try_from(guaranteed_gpus)
        .ok()
        .filter(|n| *n <= MAX_QUOTA)
        .ok_or(("guaranteed_gpus", range.clone()))?;
    let weekly = match weekly_gpu_hours {
        None => None,
        Some(hours) => Some(
            u32::try_from(hours)
                .ok()
                .filter(|n| *n <= MAX_QUOTA)
                .ok_or(("weekly_gpu_hours", range))?,
        ),
    };
    Ok(Quota {
        guaranteed_gpus: guaranteed,
        weekly_gpu_hours: weekly,
    })
}

/// A booking as team use: when, and the quarters it holds over all its GPUs (2 whole GPUs: 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TeamSpan {
    /// When.
    pub window: Window,
    /// Quarters over all its GPUs.
    pub quarters: i64,
}

impl TeamSpan {
    /// Its GPU time inside `[from, to)`, in quarter-minutes.
    pub fn quarter_minutes_in(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> i64 {
        let minutes = (self.window.end().min(to) - self.window.start().max(from))
            .num_minutes()
            .max(0);
        minutes * self.quarters
    }
}

/// Where a booking leaves its team's quota.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QuotaCheck {
    /// Inside the quota (or no quota for the model).
    Within,
    /// More GPUs at the same instant than guaranteed.
    Concurrent {
        /// The team's peak during the booking, in quarters, without it.
        used_quarters: i64,
        /// What the booking adds, in quarters.
        asked_quarters: i64,
        /// The quota, GPUs.
        limit_gpus: u32,
    },
    /// More GPU-hours in a week than the weekly limit.
    Weekly {
        /// The week's first instant (Monday 00:00 UTC).
        week_start: DateTime<Utc>,
        /// Booked that week without it, in quarter-minutes.
        used_quarter_minutes: i64,
        /// What the booking adds that week, in quarter-minutes.
        asked_quarter_minutes: i64,
        /// The limit, GPU-hours.
        limit_gpu_hours: u32,
    },
}

/// Whether `new` fits the team's `quota` next to the team's other non-preemptible bookings of
/// the same model (`existing`).
pub fn check_quota(quota: &Quota, existing: &[TeamSpan], new: &TeamSpan) -> QuotaCheck {
    let limit = i64::from(quota.guaranteed_gpus) * 4;
    let peak = peak_quarters(existing, &new.window);
    if peak + new.quarters > limit {
        return QuotaCheck::Concurrent {
            used_quarters: peak,
            asked_quarters: new.quarters,
            limit_gpus: quota.guaranteed_gpus,
        };
    }
    if let Some(hours) = quota.weekly_gpu_hours {
        let limit = i64::from(hours) * 60 * 4;
        let (mut week, _) = crate::domain::team::utc_week_of(new.window.start());
        while week < new.window.end() {
            let next = week + TimeDelta::days(7);
            let asked = new.quarter_minutes_in(week, next);
            let used: i64 = existing
                .iter()
                .map(|span| span.quarter_minutes_in(week, next))
                .sum();
            if used + asked > limit {
                return QuotaCheck::Weekly {
                    week_start: week,
                    used_quarter_minutes: used,
                    asked_quarter_minutes: asked,
                    limit_gpu_hours: hours,
                };
            }
            week = next;
        }
    }
    QuotaCheck::Within
}

/// The highest sum of quarters the spans hold at any instant of `window`.
fn peak_quarters(spans: &[TeamSpan], window: &Window) -> i64 {
    let mut events: Vec<(DateTime<Utc>, i64)> = spans
        .iter()
        .filter(|span| span.window.overlaps(window))
        .flat_map(|span| {
            [
                (span.window.start().max(window.start()), span.quarters),
                (span.window.end().min(window.end()), -span.quarters),
            ]
        })
        .collect();
    events.sort_by_key(|&(at, delta)| (at, delta));
    let mut load = 0;
    let mut peak = 0;
    for (_, delta) in events {
        load += delta;
        peak = peak.max(load);
    }
    peak
}

/// Quarters as GPUs, for messages: "1", "1.5", "0.25".
pub fn gpus_text(quarters: i64) -> String {
    let whole = quarters / 4;
    match quarters % 4 {
        0 => whole.to_string(),
        1 => format!("{whole}.25"),
        2 => format!("{whole}.5"),
        _ => format!("{whole}.75"),
    }
}

/// Quarter-minutes as GPU-hours with one decimal, for messages.
pub fn gpu_hours_text(quarter_minutes: i64) -> String {
    let tenths = (quarter_minutes * 10 + 120) / 240;
    format!("{}.{}", tenths / 10, tenths % 10)
}

/// Where a displaceable reservation stands among victims: lowest priority first, then the
/// latest booked.
pub type VictimRank = (Priority, std::cmp::Reverse<DateTime<Utc>>);

/// Something holding a GPU during a booking's window, and whether the booking may displace it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// When, and how much of the GPU.
    pub occupancy: Occupancy,
    /// The reservation a higher-priority booking may displace (preemptible, of lower priority),
    /// with its rank among victims (lower goes first); None: it stays (non-preemptible,
    /// not lower, or maintenance).
    pub displaceable: Option<(i64, VictimRank)>,
}

/// A booking's hold on one GPU of a model, as the guarantee rule reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelHold {
    /// The reservation.
    pub reservation_id: i64,
    /// The team it is booked for (None: personal).
    pub team_id: Option<i64>,
    /// A burst or batch booking.
    pub preemptible: bool,
    /// When it was booked.
    pub created_at: DateTime<Utc>,
    /// When it holds the GPU.
    pub window: Window,
    /// How much of the GPU, in quarters.
    pub quarters: u8,
}

/// The GPUs of a model and the guarantees on them, as the guarantee rule reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guarantees {
    /// GPUs of the model in the fleet (not retired).
    pub fleet_gpus: u32,
    /// Each team's guaranteed GPUs of the model (teams with none left out).
    pub teams: Vec<(i64, u32)>,
}

impl Guarantees {
    /// GPUs nobody is guaranteed: what personal bookings and teams without a guarantee share.
    pub fn unguaranteed_gpus(&self) -> u32 {
        let promised: u32 = self.teams.iter().map(|(_, gpus)| *gpus).sum();
        self.fleet_gpus.saturating_sub(promised)
    }

    /// Whether team `team` has a guarantee on the model.
    pub fn has(&self, team: Option<i64>) -> bool {
        team.is_some_and(|team| self.teams.iter().any(|(id, gpus)| *id == team && *gpus > 0))
    }
}

/// The reservations among `holds` (every hold on the model's GPUs during some range) that
/// *borrow* guaranteed capacity, and so give way to a team booking within its guarantee: burst and
/// batch bookings of anyone but `claimant` (the team booking), and, of the bookings on the shared
/// part of the fleet (non-preemptible, personal or of a team without a guarantee), those beyond
/// the unguaranteed GPUs at some instant, latest booked first. (No guarantees on the model: none
/// borrow.)
pub fn borrowing(
    holds: &[ModelHold],
    guarantees: &Guarantees,
    claimant: Option<i64>,
) -> std::collections::BTreeSet<i64> {
    let mut borrowing = std::collections::BTreeSet::new();
    if guarantees.teams.iter().all(|(_, gpus)| *gpus == 0) {
        return borrowing;
    }
    for hold in holds {
        if hold.preemptible && (claimant.is_none() || hold.team_id != claimant) {
            borrowing.insert(hold.reservation_id);
        }
    }
    let shared: Vec<&ModelHold> = holds
        .iter()
        .filter(|h| !h.preemptible && !guarantees.has(h.team_id))
        .collect();
    let room = u32::from(crate::domain::schedule::WHOLE_GPU) * guarantees.unguaranteed_gpus();
    let mut instants: Vec<DateTime<Utc>> = shared.iter().map(|h| h.window.start()).collect();
    instants.sort_unstable();
    instants.dedup();
    // The load only rises at a start: checking each start covers every instant.
    for at in instants {
        let mut on: Vec<&ModelHold> = shared
            .iter()
            .copied()
            .filter(|h| h.window.contains(at) && !borrowing.contains(&h.reservation_id))
            .collect();
        let mut load: u32 = on.iter().map(|h| u32::from(h.quarters)).sum();
        // The latest booked go first.
        on.sort_by_key(|h| std::cmp::Reverse((h.created_at, h.reservation_id)));
        for hold in on {
            if load <= room {
                break;
            }
            if borrowing.insert(hold.reservation_id) {
                load -= shared
                    .iter()
                    .filter(|h| h.reservation_id == hold.reservation_id && h.window.contains(at))
                    .map(|h| u32::from(h.quarters))
                    .sum::<u32>();
            }
        }
    }
    borrowing
}

/// Which of `gpus` (with what holds each) a booking of `count` GPUs at `quarters` during
/// `window` takes, and which displaceable reservations it displaces: as few as it can. GPUs are
/// taken one at a time, each time the one that needs the fewest victims besides those already
/// chosen (a reservation on several GPUs frees all of them), then the one whose most important
/// victim ranks lowest (lowest priority, latest booked), then by id. None when even displacing
/// every displaceable reservation leaves fewer than `count` GPUs.
pub fn plan_displacement(
    gpus: &[(i64, Vec<Holder>)],
    count: usize,
    window: &Window,
    quarters: u8,
) -> Option<(Vec<i64>, Vec<i64>)> {
    let mut chosen: Vec<i64> = Vec::with_capacity(count);
    let mut victims: Vec<i64> = Vec::new();
    while chosen.len() < count {
        let best = gpus
            .iter()
            .filter(|(gpu_id, _)| !chosen.contains(gpu_id))
            .filter_map(|(gpu_id, holders)| {
                let more = victims_for(holders, &victims, window, quarters)?;
                let top = more.iter().map(|(_, rank)| *rank).max();
                Some(((more.len(), top, *gpu_id), more))
            })
            .min_by_key(|(key, _)| *key)?;
        let ((_, _, gpu_id), more) = best;
        chosen.push(gpu_id);
        victims.extend(more.into_iter().map(|(id, _)| id));
    }
    chosen.sort_unstable();
    victims.sort_unstable();
    victims.dedup();
    Some((chosen, victims))
}

/// The fewest more victims on one GPU (`holders`), in rank order, after which a booking of
/// `quarters` during `window` fits there, besides `gone` (already displaced); None if it never
/// does.
fn victims_for(
    holders: &[Holder],
    gone: &[i64],
    window: &Window,
    quarters: u8,
) -> Option<Vec<(i64, VictimRank)>> {
    let mut candidates: Vec<(i64, VictimRank)> = holders
        .iter()
        .filter(|h| h.occupancy.window.overlaps(window))
        .filter_map(|h| h.displaceable)
        .filter(|(id, _)| !gone.contains(id))
        .collect();
    candidates.sort_by_key(|&(id, rank)| (rank, id));
    candidates.dedup_by_key(|v| v.0);
    let remaining = |taken: &[(i64, VictimRank)]| -> Vec<Occupancy> {
        holders
            .iter()
            .filter(|h| {
                h.displaceable.is_none_or(|(id, _)| {
                    !gone.contains(&id) && !taken.iter().any(|(t, _)| *t == id)
                })
            })
            .map(|h| h.occupancy)
            .collect()
    };
    let mut taken: Vec<(i64, VictimRank)> = Vec::new();
    for candidate in candidates {
        if fits(&remaining(&taken), window, quarters) {
            return Some(taken);
        }
        taken.push(candidate);
    }
    fits(&remaining(&taken), window, quarters).then_some(taken)
}

/// A team's booking rules besides quotas and budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamPolicy {
    /// Bookings beyond a quota go through as preemptible instead of being refused.
    pub allow_burst: bool,
    /// The priority of the team's bookings unless one asks for a lower one.
    pub default_priority: Priority,
    /// Bookings by members (not admins) of more GPU-hours than this wait for an admin's approval.
    pub approval_over_gpu_hours: Option<u32>,
    /// How long a booking waits for approval before it is released (hours; never past its start).
    pub approval_expiry_hours: u32,
}

impl Default for TeamPolicy {
    fn default() -> Self {
        Self {
            allow_burst: false,
            default_priority: Priority::Development,
            approval_over_gpu_hours: None,
            approval_expiry_hours: 24,
        }
    }
}

/// Longest wait for an approval a team may set (30 days).
pub const MAX_APPROVAL_EXPIRY_HOURS: u32 = 720;

/// Validates a team policy as an admin sends it.
pub fn parse_policy(
    allow_burst: bool,
    default_priority: &str,
    approval_over_gpu_hours: Option<i64>,
    approval_expiry_hours: i64,
) -> Result<TeamPolicy, (&'static str, Problem)> {
    let priority = Priority::parse(default_priority).ok_or((
        "default_priority",
        Problem::Unreadable {
            detail: format!("`{default_priority}`: use production, training, development or batch"),
        },
    ))?;
    let over = match approval_over_gpu_hours {
        None => None,
        Some(hours) => Some(
            u32::try_from(hours)
                .ok()
                .filter(|h| (1..=MAX_QUOTA).contains(h))
                .ok_or((
                    "approval_over_gpu_hours",
                    Problem::OutOfRange {
                        min: 1,
                        max: i64::from(MAX_QUOTA),
                    },
                ))?,
        ),
    };
    let expiry = u32::try_from(approval_expiry_hours)
        .ok()
        .filter(|h| (1..=MAX_APPROVAL_EXPIRY_HOURS).contains(h))
        .ok_or((
            "approval_expiry_hours",
            Problem::OutOfRange {
                min: 1,
                max: i64::from(MAX_APPROVAL_EXPIRY_HOURS),
            },
        ))?;
    Ok(TeamPolicy {
        allow_burst,
        default_priority: priority,
        approval_over_gpu_hours: over,
        approval_expiry_hours: expiry,
    })
}

impl TeamPolicy {
    /// Whether a booking of `span` by a member (`by_admin`: a team or platform admin) waits for
    /// approval, and until when: `now` plus the expiry, never past its start (or, for a booking
    /// starting about now, past the next quarter hour).
    pub fn approval_until(
        &self,
        span: &TeamSpan,
        by_admin: bool,
        now: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let over = self.approval_over_gpu_hours?;
        let asked = span.quarter_minutes_in(span.window.start(), span.window.end());
        // Until the start, but a booking starting about now still leaves its admins a slot.
        let latest = span
            .window
            .start()
            .max(now + TimeDelta::minutes(crate::domain::schedule::SLOT_MINUTES));
        (!by_admin && asked > i64::from(over) * 240)
            .then(|| (now + TimeDelta::hours(i64::from(self.approval_expiry_hours))).min(latest))
    }
}

/// A team's use of one GPU model in a week, against its quota.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaUse {
    /// The GPU model.
    pub model: String,
    /// The quota (None: none set).
    pub quota: Option<Quota>,
    /// Most quarters held at once by non-preemptible bookings during the week.
    pub peak_quarters: i64,
    /// GPU time of non-preemptible bookings in the week, quarter-minutes.
    pub week_quarter_minutes: i64,
    /// GPU time of preemptible (burst and batch) bookings in the week, quarter-minutes.
    pub burst_quarter_minutes: i64,
}

/// Per model (those with a quota or with bookings), the team's use in `[from, to)` against its
/// quota. Each span is `(model, span, preemptible)`.
pub fn quota_use(
    quotas: &[(String, Quota)],
    spans: &[(String, TeamSpan, bool)],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Vec<QuotaUse> {
    let mut models: Vec<String> = quotas
        .iter()
        .map(|(model, _)| model.clone())
        .chain(spans.iter().map(|(model, _, _)| model.clone()))
        .collect();
    models.sort();
    models.dedup();
    let Ok(week) = Window::new(from, to) else {
        return Vec::new();
    };
    models
        .into_iter()
        .map(|model| {
            let of_model = |preemptible: bool| -> Vec<TeamSpan> {
                spans
                    .iter()
                    .filter(|(m, _, p)| *m == model && *p == preemptible)
                    .map(|(_, span, _)| *span)
                    .collect()
            };
            let held = of_model(false);
            let burst = of_model(true);
            QuotaUse {
                quota: quotas.iter().find(|(m, _)| *m == model).map(|(_, q)| *q),
                peak_quarters: peak_quarters(&held, &week),
                week_quarter_minutes: held.iter().map(|s| s.quarter_minutes_in(from, to)).sum(),
                burst_quarter_minutes: burst.iter().map(|s| s.quarter_minutes_in(from, to)).sum(),
                model,
            }
        })
        .filter(|row| {
            row.quota.is_some() || row.week_quarter_minutes > 0 || row.burst_quarter_minutes > 0
        })
        .collect()
}

/// A running team booking whose GPUs sit idle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleBooking {
    /// The booking.
    pub reservation: crate::domain::reservation::Reservation,
    /// Its GPUs' average utilization over the lookback, percent.
    pub average_util: f64,
}

/// What the team dashboard shows of quotas, rules and approvals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeamRules {
    /// The booking rules.
    pub policy: TeamPolicy,
    /// This week's use per model against the quotas.
    pub quotas: Vec<QuotaUse>,
    /// Every GPU model of the fleet (for the quota form).
    pub models: Vec<String>,
    /// Bookings waiting for approval, earliest expiry first.
    pub pending: Vec<crate::domain::reservation::Reservation>,
    /// Running bookings whose GPUs are idle.
    pub idle: Vec<IdleBooking>,
}

/// A team as the fleet page lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamQuotas {
    /// The team.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Its booking rules.
    pub policy: TeamPolicy,
    /// Its quotas by model.
    pub quotas: Vec<(String, Quota)>,
}

/// Below this average GPU utilization (percent) a running booking counts as idle.
pub const IDLE_UTIL_PERCENT: f64 = 10.0;
/// How far back an idle booking's utilization is measured.
pub const IDLE_LOOKBACK: TimeDelta = TimeDelta::minutes(30);
/// The fewest measured minutes before a booking may be called idle.
pub const IDLE_MIN_MINUTES: i64 = 10;

/// Whether a running booking is idle: its GPUs' measured minutes (each `(average utilization,
/// minutes measured)`) cover at least [`IDLE_MIN_MINUTES`] on every GPU and average under
/// [`IDLE_UTIL_PERCENT`]. Returns the average when idle.
pub fn idle_average(per_gpu: &[Option<(f64, i64)>]) -> Option<f64> {
    if per_gpu.is_empty() {
        return None;
    }
    let mut sum = 0.0;
    for reading in per_gpu {
        let (avg, minutes) = (*reading)?;
        if minutes < IDLE_MIN_MINUTES {
            return None;
        }
        sum += avg;
    }
    #[expect(clippy::cast_precision_loss, reason = "a handful of GPUs")]
    let average = sum / per_gpu.len() as f64;
    (average < IDLE_UTIL_PERCENT).then_some(average)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use std::cmp::Reverse;

    fn at(hour: i64) -> DateTime<Utc> {
        // Monday 2026-12-07 00:00 UTC plus `hour` hours.
        Utc.with_ymd_and_hms(2026, 12, 7, 0, 0, 0).unwrap() + TimeDelta::hours(hour)
    }

    fn span(from: i64, to: i64, quarters: i64) -> TeamSpan {
        TeamSpan {
            window: Window::new(at(from), at(to)).unwrap(),
            quarters,
        }
    }

    fn hold(
        id: i64,
        team: Option<i64>,
        preemptible: bool,
        booked: i64,
        from: i64,
        to: i64,
    ) -> ModelHold {
        ModelHold {
            reservation_id: id,
            team_id: team,
            preemptible,
            created_at: at(booked),
            window: Window::new(at(from), at(to)).unwrap(),
            quarters: 4,
        }
    }

    #[test]
    fn burst_bookings_and_shared_bookings_beyond_the_unguaranteed_gpus_borrow() {
        // 8 GPUs; teams 1 and 2 are guaranteed 3 each: 2 GPUs are shared.
        let guarantees = Guarantees {
            fleet_gpus: 8,
            teams: vec![(1, 3), (2, 3)],
        };
        assert_eq!(guarantees.unguaranteed_gpus(), 2);
        let holds = vec![
            // Four personal bookings, booked one after another.
            hold(10, None, false, 0, 10, 12),
            hold(11, None, false, 1, 10, 12),
            hold(12, None, false, 2, 10, 12),
            hold(13, None, false, 3, 10, 12),
            // A team without a guarantee shares too; booked first.
            hold(20, Some(3), false, -1, 10, 11),
            // Team 3's burst booking and team 1's own burst booking.
            hold(30, Some(3), true, 4, 10, 12),
            hold(31, Some(1), true, 5, 10, 12),
            // Team 2's booking within its guarantee never borrows.
            hold(40, Some(2), false, 6, 10, 12),
        ];
        let found = borrowing(&holds, &guarantees, Some(1));
        // 10..11: five shared (20, 10..13) on 2 shared GPUs: the three latest booked borrow.
        assert_eq!(found.into_iter().collect::<Vec<_>>(), vec![11, 12, 13, 30]);
        // Seen by nobody in particular (the calendar): every burst booking borrows.
        let seen = borrowing(&holds, &guarantees, None);
        assert!(seen.contains(&31) && seen.contains(&30));
        // Without guarantees nothing borrows.
        let none = Guarantees {
            fleet_gpus: 8,
            teams: vec![(1, 0)],
        };
        assert!(borrowing(&holds, &none, Some(1)).is_empty());
    }

    #[test]
    fn shared_bookings_borrow_only_where_they_overlap_beyond_the_room() {
        let guarantees = Guarantees {
            fleet_gpus: 2,
            teams: vec![(1, 1)],
        };
        // One shared GPU: two personal bookings one after the other fit; a third overlapping the
        // second borrows, not the first.
        let holds = vec![
            hold(1, None, false, 0, 0, 2),
            hold(2, None, false, 1, 2, 4),
            hold(3, None, false, 2, 3, 5),
        ];
        let found = borrowing(&holds, &guarantees, Some(1));
        assert_eq!(found.into_iter().collect::<Vec<_>>(), vec![3]);
        // Quarter shares add up: four quarters fill the shared GPU, a fifth borrows.
        let quarters: Vec<ModelHold> = (0..5)
            .map(|i| ModelHold {
                quarters: 1,
                ..hold(i, None, false, i, 0, 2)
            })
            .collect();
        let found = borrowing(&quarters, &guarantees, Some(1));
        assert_eq!(found.into_iter().collect::<Vec<_>>(), vec![4]);
    }

    #[test]
    fn priorities_order_and_round_trip() {
        assert!(Priority::Production > Priority::Training);
        assert!(Priority::Training > Priority::Development);
        assert!(Priority::Development > Priority::Batch);
        for p in Priority::ALL {
            assert_eq!(Priority::parse(p.as_str()), Some(p));
        }
        assert_eq!(Priority::parse("urgent"), None);
    }

    #[test]
    fn nobody_but_platform_admins_books_above_the_default() {
        assert_eq!(
            booking_priority(None, Some(Priority::Training), false),
            Ok(Priority::Training)
        );
        assert_eq!(
            booking_priority(None, None, false),
            Ok(Priority::Development)
        );
        assert_eq!(
            booking_priority(Some(Priority::Batch), Some(Priority::Training), false),
            Ok(Priority::Batch)
        );
        assert!(booking_priority(Some(Priority::Production), None, false).is_err());
        assert_eq!(
            booking_priority(Some(Priority::Production), None, true),
            Ok(Priority::Production)
        );
    }

    #[test]
    fn concurrent_quota_counts_the_peak_with_the_numbers() {
        let quota = Quota {
            guaranteed_gpus: 2,
            weekly_gpu_hours: None,
        };
        // One GPU 0–4 h, another 2–6 h: peak 2 GPUs during 2–4 h.
        let existing = [span(0, 4, 4), span(2, 6, 4)];
        assert_eq!(
            check_quota(&quota, &existing, &span(3, 5, 2)),
            QuotaCheck::Concurrent {
                used_quarters: 8,
                asked_quarters: 2,
                limit_gpus: 2
            }
        );
        // After 4 h only one is held: a second whole GPU fits.
        assert_eq!(
            check_quota(&quota, &existing, &span(4, 8, 4)),
            QuotaCheck::Within
        );
        // Back-to-back is not overlap.
        assert_eq!(
            check_quota(&quota, &[span(0, 4, 8)], &span(4, 5, 8)),
            QuotaCheck::Within
        );
    }

    #[test]
    fn weekly_quota_counts_gpu_hours_per_utc_week() {
        let quota = Quota {
            guaranteed_gpus: 100,
            weekly_gpu_hours: Some(10),
        };
        // 8 GPU-hours booked on Monday.
        let existing = [span(0, 8, 4)];
        assert_eq!(
            check_quota(&quota, &existing, &span(10, 12, 4)),
            QuotaCheck::Within
        );
        let over = check_quota(&quota, &existing, &span(10, 13, 4));
        assert_eq!(
            over,
            QuotaCheck::Weekly {
                week_start: at(0),
                used_quarter_minutes: 8 * 240,
                asked_quarter_minutes: 3 * 240,
                limit_gpu_hours: 10
            }
        );
        // The next week starts empty: a booking across midnight counts each part in its week.
        let sunday_night = span(7 * 24 - 1, 7 * 24 + 9, 4);
        assert!(matches!(
            check_quota(&quota, &existing, &sunday_night),
            QuotaCheck::Within
        ));
        let longer = span(7 * 24 - 1, 7 * 24 + 11, 4);
        assert!(matches!(
            check_quota(&quota, &existing, &longer),
            QuotaCheck::Weekly { week_start, .. } if week_start == at(7 * 24)
        ));
    }

    #[test]
    fn texts_of_gpus_and_hours() {
        assert_eq!(gpus_text(8), "2");
        assert_eq!(gpus_text(6), "1.5");
        assert_eq!(gpus_text(1), "0.25");
        assert_eq!(gpu_hours_text(240 * 3), "3.0");
        assert_eq!(gpu_hours_text(60), "0.3");
    }

    fn holder(from: i64, to: i64, quarters: u8, victim: Option<(i64, Priority)>) -> Holder {
        Holder {
            occupancy: Occupancy {
                window: Window::new(at(from), at(to)).unwrap(),
                quarters,
            },
            displaceable: victim.map(|(id, p)| (id, (p, Reverse(at(0))))),
        }
    }

    #[test]
    fn displacement_prefers_one_victim_on_several_gpus_to_several_victims() {
        let window = Window::new(at(1), at(3)).unwrap();
        let on = |id: i64, booked: i64| Holder {
            occupancy: Occupancy {
                window: Window::new(at(0), at(4)).unwrap(),
                quarters: 4,
            },
            displaceable: Some((id, (Priority::Development, Reverse(at(booked))))),
        };
        // Reservation 20 (booked last) holds GPUs 3 and 4; 10 and 11 hold GPUs 1 and 2.
        let gpus = vec![
            (1, vec![on(10, 0)]),
            (2, vec![on(11, 1)]),
            (3, vec![on(20, 2)]),
            (4, vec![on(20, 2)]),
        ];
        assert_eq!(
            plan_displacement(&gpus, 2, &window, 4),
            Some((vec![3, 4], vec![20]))
        );
        assert_eq!(
            plan_displacement(&gpus, 3, &window, 4),
            Some((vec![2, 3, 4], vec![11, 20]))
        );
    }

    #[test]
    fn displacement_prefers_free_gpus_then_fewest_victims() {
        let window = Window::new(at(1), at(3)).unwrap();
        let gpus = vec![
            (1, vec![holder(0, 4, 4, Some((10, Priority::Batch)))]),
            (2, vec![]),
            (
                3,
                vec![
                    holder(0, 2, 2, Some((11, Priority::Batch))),
                    holder(2, 4, 4, Some((12, Priority::Development))),
                ],
            ),
            (4, vec![holder(0, 4, 4, None)]),
        ];
        assert_eq!(
            plan_displacement(&gpus, 1, &window, 4),
            Some((vec![2], vec![]))
        );
        assert_eq!(
            plan_displacement(&gpus, 2, &window, 4),
            Some((vec![1, 2], vec![10]))
        );
        assert_eq!(
            plan_displacement(&gpus, 3, &window, 4),
            Some((vec![1, 2, 3], vec![10, 11, 12]))
        );
        // GPU 4 is held by a booking that cannot be displaced.
        assert_eq!(plan_displacement(&gpus, 4, &window, 4), None);
        // A quarter fits on GPU 3 once only the overlapping half-GPU booking 11 goes... but
        // 12 holds the whole GPU from 2 h: both go, while GPU 1 needs one.
        assert_eq!(
            plan_displacement(&gpus[..1], 1, &window, 1),
            Some((vec![1], vec![10]))
        );
    }

    #[test]
    fn approval_is_needed_above_the_threshold_for_members_only() {
        let policy = TeamPolicy {
            approval_over_gpu_hours: Some(4),
            approval_expiry_hours: 24,
            ..TeamPolicy::default()
        };
        let now = at(-48);
        assert_eq!(policy.approval_until(&span(0, 4, 4), false, now), None);
        assert_eq!(
            policy.approval_until(&span(0, 4, 8), false, now),
            Some(now + TimeDelta::hours(24))
        );
        assert_eq!(policy.approval_until(&span(0, 4, 8), true, now), None);
        // Never past the start.
        assert_eq!(
            policy.approval_until(&span(0, 4, 8), false, at(-2)),
            Some(at(0))
        );
        // Starting now: a quarter of an hour to decide.
        assert_eq!(
            policy.approval_until(&span(0, 4, 8), false, at(0)),
            Some(at(0) + TimeDelta::minutes(15))
        );
        assert_eq!(
            TeamPolicy::default().approval_until(&span(0, 99, 64), false, now),
            None
        );
    }

    #[test]
    fn policy_and_quota_forms_are_validated() {
        assert!(parse_policy(true, "training", Some(8), 48).is_ok());
        assert_eq!(
            parse_policy(false, "urgent", None, 24).unwrap_err().0,
            "default_priority"
        );
        assert_eq!(
            parse_policy(false, "batch", Some(0), 24).unwrap_err().0,
            "approval_over_gpu_hours"
        );
        assert_eq!(
            parse_policy(false, "batch", None, 0).unwrap_err().0,
            "approval_expiry_hours"
        );
        assert_eq!(parse_quota(-1, None).unwrap_err().0, "guaranteed_gpus");
        assert_eq!(parse_quota(2, Some(-5)).unwrap_err().0, "weekly_gpu_hours");
        assert_eq!(
            parse_quota(2, Some(40)),
            Ok(Quota {
                guaranteed_gpus: 2,
                weekly_gpu_hours: Some(40)
            })
        );
    }

    #[test]
    fn week_use_per_model_against_quota() {
        let quotas = vec![(
            "H100".to_owned(),
            Quota {
                guaranteed_gpus: 2,
                weekly_gpu_hours: Some(40),
            },
        )];
        let spans = vec![
            ("H100".to_owned(), span(0, 4, 8), false),
            ("H100".to_owned(), span(2, 3, 4), false),
            ("H100".to_owned(), span(5, 6, 4), true),
            ("A100".to_owned(), span(0, 2, 2), false),
            // Last week: not counted.
            ("L4".to_owned(), span(-30, -20, 4), false),
        ];
        let rows = quota_use(&quotas, &spans, at(0), at(7 * 24));
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].model, "A100");
        assert_eq!(rows[0].quota, None);
        assert_eq!(rows[0].week_quarter_minutes, 2 * 60 * 2);
        assert_eq!(rows[1].model, "H100");
        assert_eq!(rows[1].peak_quarters, 12);
        assert_eq!(rows[1].week_quarter_minutes, (4 * 8 + 4) * 60);
        assert_eq!(rows[1].burst_quarter_minutes, 4 * 60);
    }

    #[test]
    fn idle_means_measured_and_low_on_every_gpu() {
        assert_eq!(idle_average(&[Some((2.0, 30)), Some((4.0, 30))]), Some(3.0));
        assert_eq!(idle_average(&[Some((2.0, 30)), Some((40.0, 30))]), None);
        assert_eq!(idle_average(&[Some((2.0, 30)), None]), None);
        assert_eq!(idle_average(&[Some((2.0, 5))]), None);
        assert_eq!(idle_average(&[]), None);
    }

    proptest::proptest! {
        /// Whatever holds the GPUs, a plan leaves each chosen GPU with room for the booking once
        /// its victims are gone, displaces only displaceable reservations, and is missing only
        /// when even displacing all of them leaves too few GPUs.
        #[test]
        fn displacement_plans_are_sound(
            layout in proptest::collection::vec(
                proptest::collection::vec((0i64..8, 1i64..5, 1u8..5, proptest::option::of(0i64..6)), 0..5),
                1..6,
            ),
            count in 1usize..4,
            quarters in 1u8..5,
        ) {
            let window = Window::new(at(2), at(5)).unwrap();
            let gpus: Vec<(i64, Vec<Holder>)> = layout
                .iter()
                .enumerate()
                .map(|(i, holders)| {
                    let id = i64::try_from(i).unwrap();
                    let list = holders
                        .iter()
                        .map(|&(from, len, q, victim)| {
                            holder(from, from + len, q, victim.map(|v| (v, Priority::Batch)))
                        })
                        .collect();
                    (id, list)
                })
                .collect();
            let left = |gpu: &[Holder], gone: &[i64]| -> Vec<Occupancy> {
                gpu.iter()
                    .filter(|h| h.displaceable.is_none_or(|(id, _)| !gone.contains(&id)))
                    .map(|h| h.occupancy)
                    .collect()
            };
            match plan_displacement(&gpus, count, &window, quarters) {
                Some((chosen, victims)) => {
                    proptest::prop_assert_eq!(chosen.len(), count);
                    for gpu_id in &chosen {
                        let holders = &gpus.iter().find(|g| g.0 == *gpu_id).unwrap().1;
                        proptest::prop_assert!(fits(&left(holders, &victims), &window, quarters));
                    }
                    let displaceable: Vec<i64> = gpus
                        .iter()
                        .flat_map(|g| g.1.iter().filter_map(|h| h.displaceable.map(|d| d.0)))
                        .collect();
                    for victim in &victims {
                        proptest::prop_assert!(displaceable.contains(victim));
                    }
                }
                None => {
                    let all: Vec<i64> = (0..6).collect();
                    let could = gpus
                        .iter()
                        .filter(|(_, holders)| fits(&left(holders, &all), &window, quarters))
                        .count();
                    proptest::prop_assert!(could < count);
                }
            }
        }

        /// A booking the check lets through never takes the team above its guaranteed GPUs.
        #[test]
        fn accepted_bookings_stay_within_the_quota(
            bookings in proptest::collection::vec((0i64..20, 1i64..6, 1i64..9), 1..30),
            limit in 0u32..5,
        ) {
            let quota = Quota { guaranteed_gpus: limit, weekly_gpu_hours: None };
            let mut accepted: Vec<TeamSpan> = Vec::new();
            for (from, len, quarters) in bookings {
                let new = span(from, from + len, quarters);
                if check_quota(&quota, &accepted, &new) == QuotaCheck::Within {
                    accepted.push(new);
                }
            }
            let whole = Window::new(at(0), at(30)).unwrap();
            proptest::prop_assert!(peak_quarters(&accepted, &whole) <= i64::from(limit) * 4);
        }
    }
}
