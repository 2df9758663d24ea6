//! Cost reports: which period a report covers in the viewer's time zone, what each booking
//! contributes (reserved GPU-hours, money charged and refunded, telemetry measured while it ran),
//! the totals per team, user, GPU model or node, and the fleet's capacity, reservations and use
//! per day. Pure; the server collects the facts and the pages draw the results.
//!
//! Units are exact integers wherever the source is: money in minor units, time in
//! *share-minutes* (one minute of a quarter GPU), so a whole GPU for an hour is 240. A report
//! covers the bookings that **start** in its period, with all the money charged and refunded for
//! them (whenever posted), so that each booking's cost and its use are compared with each other.

use super::zone::ZoneOffsets;
use chrono::{DateTime, Datelike, Days, Months, NaiveDate, NaiveTime, Utc};
use serde::{Deserialize, Serialize};

/// Share-minutes in one GPU-hour (a whole GPU is four quarters, for sixty minutes).
pub const SHARE_MINUTES_PER_GPU_HOUR: i64 = 240;

/// The longest custom period, in days.
pub const MAX_PERIOD_DAYS: i64 = 366;

/// Telemetry measured over some GPU-minutes: how many minutes had readings, how many of those
/// averaged below the idle threshold, and the sum of their average utilizations (percent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Minutes with a utilization reading.
    pub measured_minutes: i64,
    /// Of those, minutes below the idle threshold.
    pub idle_minutes: i64,
    /// Sum of the minutes' average utilization (percent).
    pub util_sum: f64,
}

impl Usage {
    /// What one one-minute rollup contributes: nothing without a reading.
    pub fn of_minute(util: Option<f64>, idle_below: f64) -> Self {
        match util {
            Some(util) => Self {
                measured_minutes: 1,
                idle_minutes: i64::from(util < idle_below),
                util_sum: util,
            },
            None => Self::default(),
        }
    }

    /// `self` with `other` added.
    #[must_use]
    pub fn plus(self, other: Self) -> Self {
        Self {
            measured_minutes: self.measured_minutes + other.measured_minutes,
            idle_minutes: self.idle_minutes + other.idle_minutes,
            util_sum: self.util_sum + other.util_sum,
        }
    }

    /// `self` with `other` taken out.
    #[must_use]
    pub fn minus(self, other: Self) -> Self {
        Self {
            measured_minutes: self.measured_minutes - other.measured_minutes,
            idle_minutes: self.idle_minutes - other.idle_minutes,
            util_sum: self.util_sum - other.util_sum,
        }
    }

    /// Whether adding it changes nothing.
    pub fn is_zero(&self) -> bool {
        self.measured_minutes == 0 && self.idle_minutes == 0 && self.util_sum == 0.0
    }

    /// Mean utilization over the measured minutes.
    #[expect(clippy::cast_precision_loss, reason = "minutes in a report")]
    pub fn average(&self) -> Option<f64> {
        (self.measured_minutes > 0).then(|| self.util_sum / self.measured_minutes as f64)
    }
}

/// A report's period, as chosen on the page or in the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PeriodChoice {
    /// The calendar month so far (to its end).
    ThisMonth,
    /// The calendar month before.
    LastMonth,
    /// The week (Monday to Sunday) containing today.
    ThisWeek,
    /// The week before.
    LastWeek,
    /// From the first day to the last, both included.
    Custom(NaiveDate, NaiveDate),
}

impl PeriodChoice {
    /// The page's name for the choice (`custom` for a range).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ThisMonth => "this_month",
            Self::LastMonth => "last_month",
            Self::ThisWeek => "this_week",
            Self::LastWeek => "last_week",
            Self::Custom(..) => "custom",
        }
    }

    /// Reads a named period, or a custom one from `from` and `to` (ISO 8601 dates, both
    /// included) when the name is `custom` or absent. Nothing at all means this month.
    pub fn parse(
        name: Option<&str>,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<Self, PeriodError> {
        let from = from.map(str::trim).filter(|s| !s.is_empty());
        let to = to.map(str::trim).filter(|s| !s.is_empty());
        let name = name.map(str::trim).filter(|s| !s.is_empty());
        let custom = match name {
            Some("custom") => true,
            None => from.is_some() || to.is_some(),
            Some(_) => false,
        };
        if custom {
            let (Some(from), Some(to)) = (from, to) else {
                return Err(PeriodError::HalfRange);
            };
            let date = |raw: &str| {
                // `2026-11-01` or a full timestamp whose date is taken.
                let day = NaiveDate::parse_from_str(raw.get(..10).unwrap_or(raw), "%Y-%m-%d")
                    .map_err(|_| PeriodError::BadDate)?;
                crate::domain::date_range::check_day(day).map_err(|_| PeriodError::OutOfRange)
            };
            let (first, last) = (date(from)?, date(to)?);
            if last < first {
                return Err(PeriodError::Backwards);
            }
            if (last - first).num_days() >= MAX_PERIOD_DAYS {
                return Err(PeriodError::TooLong);
            }
            return Ok(Self::Custom(first, last));
        }
        match name {
            None | Some("this_month") => Ok(Self::ThisMonth),
            Some("last_month") => Ok(Self::LastMonth),
            Some("this_week" | "week") => Ok(Self::ThisWeek),
            Some("last_week") => Ok(Self::LastWeek),
            Some(_) => Err(PeriodError::UnknownName),
        }
    }

    /// The local days covered, given the viewer's date today: the first and the day after the
    /// last.
    pub fn days(self, today: NaiveDate) -> (NaiveDate, NaiveDate) {
        let month_start = today.with_day(1).unwrap_or(today);
        let week_start = today - Days::new(u64::from(today.weekday().num_days_from_monday()));
        match self {
            Self::ThisMonth => (month_start, month_start + Months::new(1)),
            Self::LastMonth => (month_start - Months::new(1), month_start),
            Self::ThisWeek => (week_start, week_start + Days::new(7)),
            Self::LastWeek => (week_start - Days::new(7), week_start),
            Self::Custom(first, last) => (first, last + Days::new(1)),
        }
    }
}

/// Why a period was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PeriodError {
    /// Only one end of a range was given.
    #[error("a custom period needs both from and to")]
    HalfRange,
    /// A date is not `YYYY-MM-DD`.
    #[error("dates are written YYYY-MM-DD")]
    BadDate,
    /// A date lies outside the years Berth accepts.
    #[error("dates must lie in the years 2000 to 2100")]
    OutOfRange,
    /// The range ends before it starts.
    #[error("the period ends before it starts")]
    Backwards,
    /// The range is longer than [`MAX_PERIOD_DAYS`].
    #[error("a period is at most 366 days")]
    TooLong,
    /// Not one of the named periods.
    #[error("period is this_month, last_month, this_week or last_week")]
    UnknownName,
}

/// A report's period resolved: its local days and the UTC instants they begin and end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Period {
    /// What was chosen.
    pub choice: PeriodChoice,
    /// The first local day.
    pub first_day: NaiveDate,
    /// The day after the last.
    pub end_day: NaiveDate,
    /// Local midnight starting the first day, in UTC.
    pub from: DateTime<Utc>,
    /// Local midnight ending the last day, in UTC.
    pub to: DateTime<Utc>,
    /// Each day's start in UTC, and the end of the last day.
    pub day_starts: Vec<DateTime<Utc>>,
    /// The time zone's name.
    pub zone: String,
}

impl Period {
    /// Resolves `choice` for a viewer in `zone` at `now`; `zone` must cover the period.
    pub fn resolve(choice: PeriodChoice, now: DateTime<Utc>, zone: &ZoneOffsets) -> Self {
        let today = zone.local(now).date();
        let (first_day, end_day) = choice.days(today);
        let midnight = |day: NaiveDate| zone.to_utc(day.and_time(NaiveTime::MIN));
        let mut day_starts = Vec::new();
        let mut day = first_day;
        while day <= end_day {
            day_starts.push(midnight(day));
            day = day + Days::new(1);
        }
        Self {
            choice,
            first_day,
            end_day,
            from: midnight(first_day),
            to: midnight(end_day),
            day_starts,
            zone: zone.name.clone(),
        }
    }

    /// The local days, each with its UTC start and end (23 or 25 hours on clock-change days).
    pub fn days(&self) -> Vec<(NaiveDate, DateTime<Utc>, DateTime<Utc>)> {
        self.day_starts
            .windows(2)
            .enumerate()
            .map(|(i, pair)| (self.first_day + Days::new(i as u64), pair[0], pair[1]))
            .collect()
    }

    /// The last day included.
    pub fn last_day(&self) -> NaiveDate {
        self.end_day.pred_opt().unwrap_or(self.end_day)
    }
}

/// What a report is grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GroupBy {
    /// The team that paid (personal bookings under "personal").
    Team,
    /// The user who booked.
    User,
    /// The GPU model.
    Model,
    /// The node.
    Node,
}

impl GroupBy {
    /// Every grouping, in the page's order.
    pub const ALL: [Self; 4] = [Self::Team, Self::User, Self::Model, Self::Node];

    /// The API's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Team => "team",
            Self::User => "user",
            Self::Model => "model",
            Self::Node => "node",
        }
    }

    /// Reads the API's name (absent: by team).
    pub fn parse(raw: Option<&str>) -> Option<Self> {
        match raw.map(str::trim) {
            None | Some("") => Some(Self::Team),
            Some(raw) => Self::ALL.into_iter().find(|g| g.as_str() == raw),
        }
    }
}

/// One booking as a report sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BookingFact {
    /// The reservation.
    pub id: i64,
    /// Who booked.
    pub owner_id: i64,
    /// Their name.
    pub owner_name: String,
    /// The team that paid, if any.
    pub team_id: Option<i64>,
    /// Its name.
    pub team_name: Option<String>,
    /// GPU model.
    pub model: String,
    /// Node name.
    pub node: String,
    /// Start.
    pub start: DateTime<Utc>,
    /// When the GPUs stopped being held: the end, or the cancellation if earlier.
    pub held_until: DateTime<Utc>,
    /// GPUs held.
    pub gpus: u32,
    /// Quarters of each GPU (4 whole, 2 half, 1 quarter).
    pub quarters: u32,
    /// Charged, minor units.
    pub charged_minor: i64,
    /// Refunded, minor units.
    pub refunded_minor: i64,
    /// The idle policy reclaimed its rest: the end it had before.
    #[serde(default)]
    pub reclaimed_until: Option<DateTime<Utc>>,
    /// What that reclaim refunded, minor units (part of `refunded_minor`).
    #[serde(default)]
    pub reclaim_refund_minor: i64,
    /// SLA credits its incidents paid, minor units.
    #[serde(default)]
    pub sla_credit_minor: i64,
    /// Booked from a window held for a watch.
    #[serde(default)]
    pub from_watch: bool,
    /// Telemetry of its GPUs while it was held (summed over its GPUs).
    pub usage: Usage,
}

impl BookingFact {
    /// Share-minutes reserved (zero when cancelled before it started).
    pub fn reserved_share_minutes(&self) -> i64 {
        let minutes = (self.held_until - self.start).num_minutes().max(0);
        minutes * i64::from(self.gpus) * i64::from(self.quarters)
    }

    /// Share-minutes the idle policy brought back to the fleet (from the new end to the old).
    pub fn reclaimed_share_minutes(&self) -> i64 {
        self.reclaimed_until.map_or(0, |until| {
            (until - self.held_until).num_minutes().max(0)
                * i64::from(self.gpus)
                * i64::from(self.quarters)
        })
    }

    /// Share-minutes held from `from` to `to` (part of a day).
    pub fn share_minutes_within(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> i64 {
        let start = self.start.max(from);
        let end = self.held_until.min(to);
        let minutes = (end - start).num_minutes().max(0);
        minutes * i64::from(self.gpus) * i64::from(self.quarters)
    }

    /// The key and label it is grouped under.
    pub fn group(&self, by: GroupBy) -> (String, GroupLabel) {
        match by {
            GroupBy::Team => match (self.team_id, &self.team_name) {
                (Some(id), Some(name)) => (format!("team:{id}"), GroupLabel::Name(name.clone())),
                (Some(id), None) => (format!("team:{id}"), GroupLabel::Name(format!("#{id}"))),
                (None, _) => ("personal".into(), GroupLabel::Personal),
            },
            GroupBy::User => (
                format!("user:{}", self.owner_id),
                GroupLabel::Name(self.owner_name.clone()),
            ),
            GroupBy::Model => (
                format!("model:{}", self.model),
                GroupLabel::Name(self.model.clone()),
            ),
            GroupBy::Node => (
                format!("node:{}", self.node),
                GroupLabel::Name(self.node.clone()),
            ),
        }
    }
}

/// How a report row is named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum GroupLabel {
    /// A team, user, model or node name.
    Name(String),
    /// Bookings paid personally (grouped by team).
    Personal,
    /// The chart's groups beyond the largest few, together.
    Others,
}

/// Totals of a group of bookings (or of all of them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Bookings.
    pub bookings: u32,
    /// Share-minutes reserved.
    pub reserved_share_minutes: i64,
    /// Charged, minor units.
    pub charged_minor: i64,
    /// Refunded, minor units.
    pub refunded_minor: i64,
    /// Measured share-minutes (minutes with readings, weighted by share).
    pub measured_share_minutes: i64,
    /// Of those, idle share-minutes.
    pub idle_share_minutes: i64,
    /// Sum of utilization over the measured minutes, weighted by share.
    pub util_share_sum: f64,
    /// The net spend of the measured time: each booking's net spend times the part of its
    /// reserved time that was measured (minor units).
    pub measured_net_minor: f64,
    /// Bookings whose rest the idle policy brought back to the fleet.
    #[serde(default)]
    pub reclaimed: u32,
    /// Share-minutes brought back.
    #[serde(default)]
    pub reclaimed_share_minutes: i64,
    /// Refunded for them, minor units.
    #[serde(default)]
    pub reclaim_refund_minor: i64,
    /// SLA credits paid for incidents, minor units.
    #[serde(default)]
    pub sla_credit_minor: i64,
    /// Bookings made from a window held for a watch (watches served).
    #[serde(default)]
    pub watches_served: u32,
}

/// Converts share-minutes to GPU-hours.
#[expect(clippy::cast_precision_loss, reason = "hours in a report")]
pub fn gpu_hours(share_minutes: i64) -> f64 {
    share_minutes as f64 / SHARE_MINUTES_PER_GPU_HOUR as f64
}

impl Totals {
    /// Adds one booking.
    pub fn add(&mut self, fact: &BookingFact) {
        let share = i64::from(fact.quarters);
        self.bookings += 1;
        self.reserved_share_minutes += fact.reserved_share_minutes();
        if fact.from_watch {
            self.watches_served += 1;
        }
        if fact.reclaimed_until.is_some() {
            self.reclaimed += 1;
            self.reclaimed_share_minutes += fact.reclaimed_share_minutes();
            self.reclaim_refund_minor += fact.reclaim_refund_minor;
        }
        self.charged_minor += fact.charged_minor;
        self.refunded_minor += fact.refunded_minor;
        self.sla_credit_minor += fact.sla_credit_minor;
        self.measured_share_minutes += fact.usage.measured_minutes * share;
        self.idle_share_minutes += fact.usage.idle_minutes * share;
        #[expect(
            clippy::cast_precision_loss,
            reason = "amounts and minutes in a report"
        )]
        {
            self.util_share_sum += fact.usage.util_sum * share as f64;
            let reserved = fact.reserved_share_minutes();
            if reserved > 0 {
                let measured = (fact.usage.measured_minutes * share).min(reserved);
                self.measured_net_minor += (fact.charged_minor - fact.refunded_minor) as f64
                    * measured as f64
                    / reserved as f64;
            }
        }
    }

    /// Charged less refunded.
    pub fn net_minor(&self) -> i64 {
        self.charged_minor - self.refunded_minor - self.sla_credit_minor
    }

    /// GPU-hours reserved.
    pub fn reserved_hours(&self) -> f64 {
        gpu_hours(self.reserved_share_minutes)
    }

    /// GPU-hours the idle policy brought back to the fleet.
    pub fn reclaimed_hours(&self) -> f64 {
        gpu_hours(self.reclaimed_share_minutes)
    }

    /// Reserved GPU-hours measured below the idle threshold.
    pub fn idle_hours(&self) -> f64 {
        gpu_hours(self.idle_share_minutes)
    }

    /// Reserved GPU-hours measured at or above the idle threshold: the hours used.
    pub fn used_hours(&self) -> f64 {
        gpu_hours(self.measured_share_minutes - self.idle_share_minutes)
    }

    /// Reserved GPU-hours with no telemetry (no agent reporting, or not rolled up yet).
    pub fn unmeasured_hours(&self) -> f64 {
        gpu_hours((self.reserved_share_minutes - self.measured_share_minutes).max(0))
    }

    /// Mean GPU utilization (percent) over the measured reserved time.
    #[expect(clippy::cast_precision_loss, reason = "minutes in a report")]
    pub fn average_utilization(&self) -> Option<f64> {
        (self.measured_share_minutes > 0)
            .then(|| self.util_share_sum / self.measured_share_minutes as f64)
    }

    /// What an hour of real use cost, in minor units: the net spend of the measured time over
    /// the used GPU-hours (none when nothing was used). Each booking's spend counts in the
    /// proportion of its time that was measured, so a booking still running, or one on a GPU
    /// without telemetry, does not inflate it.
    #[expect(clippy::cast_precision_loss, reason = "money in a report")]
    pub fn cost_per_used_hour_minor(&self) -> Option<f64> {
        let used = self.measured_share_minutes - self.idle_share_minutes;
        (used > 0)
            .then(|| self.measured_net_minor * SHARE_MINUTES_PER_GPU_HOUR as f64 / used as f64)
    }
}

/// One row of a grouped report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportRow {
    /// Stable key (`team:3`, `user:7`, `model:…`, `node:…`, `personal`).
    pub key: String,
    /// What the row is named.
    pub label: GroupLabel,
    /// Its totals.
    pub totals: Totals,
}

/// Groups `facts` by `by`: rows by net spend (largest first), then by key.
pub fn group(facts: &[BookingFact], by: GroupBy) -> Vec<ReportRow> {
    let mut rows: Vec<ReportRow> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for fact in facts {
        let (key, label) = fact.group(by);
        let at = *index.entry(key.clone()).or_insert_with(|| {
            rows.push(ReportRow {
                key,
                label,
                totals: Totals::default(),
            });
            rows.len() - 1
        });
        rows[at].totals.add(fact);
    }
    rows.sort_by(|a, b| {
        b.totals
            .net_minor()
            .cmp(&a.totals.net_minor())
            .then_with(|| a.key.cmp(&b.key))
    });
    rows
}

/// The totals of all `facts`.
pub fn total(facts: &[BookingFact]) -> Totals {
    let mut totals = Totals::default();
    for fact in facts {
        totals.add(fact);
    }
    totals
}

/// Most groups drawn as their own colour in the daily chart; the rest are "others".
pub const CHART_GROUPS: usize = 5;

/// One day of the grouped report's chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupDay {
    /// The local day.
    pub day: NaiveDate,
    /// Reserved GPU-hours per charted group, in the order of [`GroupedDays::groups`].
    pub hours: Vec<f64>,
    /// Mean measured utilization of the bookings held that day, weighted by the hours each held
    /// that day (none without telemetry).
    pub utilization: Option<f64>,
}

/// The grouped report's chart: reserved GPU-hours per day stacked by group, and utilization.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupedDays {
    /// The charted groups (the largest by reserved hours; an "others" group last when more).
    pub groups: Vec<GroupLabel>,
    /// Whether the last group gathers the rest.
    pub has_others: bool,
    /// Each day.
    pub days: Vec<GroupDay>,
}

/// Splits each booking's reserved time over the period's local days, per group.
pub fn grouped_days(facts: &[BookingFact], by: GroupBy, period: &Period) -> GroupedDays {
    // Each booking's group, worked out once: (key, label, share-minutes in the period).
    let keyed: Vec<(String, GroupLabel)> = facts.iter().map(|fact| fact.group(by)).collect();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut by_hours: Vec<(&str, &GroupLabel, i64)> = Vec::new();
    let mut group_of: Vec<usize> = Vec::with_capacity(facts.len());
    for (fact, (key, label)) in facts.iter().zip(&keyed) {
        let at = *index.entry(key.as_str()).or_insert_with(|| {
            by_hours.push((key.as_str(), label, 0));
            by_hours.len() - 1
        });
        by_hours[at].2 += fact.share_minutes_within(period.from, period.to);
        group_of.push(at);
    }
    let mut order: Vec<usize> = (0..by_hours.len()).collect();
    order.sort_by(|&a, &b| {
        by_hours[b]
            .2
            .cmp(&by_hours[a].2)
            .then_with(|| by_hours[a].0.cmp(by_hours[b].0))
    });
    let has_others = order.len() > CHART_GROUPS;
    let shown = if has_others {
        CHART_GROUPS - 1
    } else {
        order.len()
    };
    // The chart slot of each group: its rank among the largest, else "others" (the last slot).
    let mut slot_of = vec![shown; by_hours.len()];
    for (rank, group) in order.iter().take(shown).enumerate() {
        slot_of[*group] = rank;
    }
    let mut groups: Vec<GroupLabel> = order
        .iter()
        .take(shown)
        .map(|group| by_hours[*group].1.clone())
        .collect();
    if has_others {
        groups.push(GroupLabel::Others);
    }
    let days = period
        .days()
        .into_iter()
        .map(|(day, from, to)| {
            let mut share_minutes = vec![0_i64; groups.len()];
            let mut util_weight = 0.0;
            let mut util_sum = 0.0;
            for (n, fact) in facts.iter().enumerate() {
                let within = fact.share_minutes_within(from, to);
                if within == 0 {
                    continue;
                }
                share_minutes[slot_of[group_of[n]]] += within;
                if let Some(average) = fact.usage.average() {
                    #[expect(clippy::cast_precision_loss, reason = "minutes in a day")]
                    let weight = within as f64;
                    util_weight += weight;
                    util_sum += average * weight;
                }
            }
            GroupDay {
                day,
                hours: share_minutes.into_iter().map(gpu_hours).collect(),
                utilization: (util_weight > 0.0).then(|| util_sum / util_weight),
            }
        })
        .collect();
    GroupedDays {
        groups,
        has_others,
        days,
    }
}

/// One day of the fleet view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetDay {
    /// The local day.
    pub day: NaiveDate,
    /// GPU-hours the fleet's GPUs could be booked that day.
    pub capacity_hours: f64,
    /// GPU-hours reserved.
    pub reserved_hours: f64,
    /// Of those, GPU-hours still to come (after the report's moment): booked, not yet used or
    /// unused.
    #[serde(default)]
    pub upcoming_hours: f64,
    /// GPU-hours the idle policy brought back to the fleet (free again; not in `reserved_hours`).
    #[serde(default)]
    pub reclaimed_hours: f64,
    /// GPU-hours measured at or above the idle threshold (on any GPU).
    pub used_hours: f64,
    /// Mean utilization over the minutes measured that day.
    pub utilization: Option<f64>,
}

/// A GPU's life in the fleet: from when it was added until it was retired or vanished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuLife {
    /// Added.
    pub from: DateTime<Utc>,
    /// Retired or vanished (none: still in the fleet).
    pub until: Option<DateTime<Utc>>,
}

/// The fleet's telemetry in one UTC hour.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FleetHour {
    /// The hour's start.
    pub hour: DateTime<Utc>,
    /// What was measured in it, over all GPUs.
    pub usage: Usage,
}

/// The fleet per local day: capacity from the GPUs' lives, reservations from `held` (each
/// booking's start, end of holding and share-GPUs: GPUs × quarters), use from the hourly fleet
/// telemetry (an hour counts for the day it starts in).
pub fn fleet_days(
    period: &Period,
    gpus: &[GpuLife],
    held: &[(DateTime<Utc>, DateTime<Utc>, i64)],
    reclaimed: &[(DateTime<Utc>, DateTime<Utc>, i64)],
    hours: &[FleetHour],
    now: DateTime<Utc>,
) -> Vec<FleetDay> {
    period
        .days()
        .into_iter()
        .map(|(day, from, to)| {
            let overlap = |start: DateTime<Utc>, end: DateTime<Utc>| {
                (end.min(to) - start.max(from)).num_minutes().max(0)
            };
            let capacity: i64 = gpus
                .iter()
                .map(|life| overlap(life.from, life.until.unwrap_or(to)))
                .sum();
            let reserved: i64 = held
                .iter()
                .map(|(start, end, shares)| overlap(*start, *end) * shares)
                .sum();
            let upcoming: i64 = held
                .iter()
                .map(|(start, end, shares)| overlap((*start).max(now), *end) * shares)
                .sum();
            let freed: i64 = reclaimed
                .iter()
                .map(|(start, end, shares)| overlap(*start, *end) * shares)
                .sum();
            let usage = hours
                .iter()
                .filter(|h| h.hour >= from && h.hour < to)
                .fold(Usage::default(), |sum, h| sum.plus(h.usage));
            FleetDay {
                day,
                capacity_hours: gpu_hours(capacity * 4),
                reserved_hours: gpu_hours(reserved),
                upcoming_hours: gpu_hours(upcoming),
                reclaimed_hours: gpu_hours(freed),
                used_hours: gpu_hours((usage.measured_minutes - usage.idle_minutes) * 4),
                utilization: usage.average(),
            }
        })
        .collect()
}

/// The bookings with the most idle reserved time, most first (ties: earlier start).
pub fn top_idle(facts: &[BookingFact], limit: usize) -> Vec<BookingFact> {
    let mut idle: Vec<&BookingFact> = facts.iter().filter(|f| f.usage.idle_minutes > 0).collect();
    idle.sort_by(|a, b| {
        (b.usage.idle_minutes * i64::from(b.quarters))
            .cmp(&(a.usage.idle_minutes * i64::from(a.quarters)))
            .then_with(|| a.start.cmp(&b.start))
            .then_with(|| a.id.cmp(&b.id))
    });
    idle.into_iter().take(limit).cloned().collect()
}

/// The raw parameters, as the page's form and the API send them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportQuery {
    /// `this_month`, `last_month`, `this_week`, `last_week`.
    pub period: Option<String>,
    /// First day of a custom period (`YYYY-MM-DD`).
    pub from: Option<String>,
    /// Last day of a custom period, included.
    pub to: Option<String>,
    /// `team`, `user`, `model` or `node`.
    pub group_by: Option<String>,
    /// `me`, `team:ID` or `all`.
    pub scope: Option<String>,
}

/// Whose bookings a report covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scope {
    /// The viewer's own (personal and team bookings they made).
    Mine,
    /// One team's bookings.
    Team(i64),
    /// Everyone's (platform admins).
    All,
}

impl Scope {
    /// Reads `me`, `all` or `team:ID` (absent: the viewer's own).
    pub fn parse(raw: Option<&str>) -> Option<Self> {
        match raw.map(str::trim) {
            None | Some("" | "me") => Some(Self::Mine),
            Some("all") => Some(Self::All),
            Some(other) => other
                .strip_prefix("team:")
                .and_then(|id| id.parse().ok())
                .filter(|id: &i64| *id > 0)
                .map(Self::Team),
        }
    }

    /// The name [`Scope::parse`] reads.
    pub fn as_param(self) -> String {
        match self {
            Self::Mine => "me".into(),
            Self::All => "all".into(),
            Self::Team(id) => format!("team:{id}"),
        }
    }
}

/// A whole report: what the report page shows and the API answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageReport {
    /// The period.
    pub period: Period,
    /// Whose bookings.
    pub scope: Scope,
    /// The grouping.
    pub group_by: GroupBy,
    /// Grouped rows.
    pub rows: Vec<ReportRow>,
    /// All bookings together.
    pub totals: Totals,
    /// The chart's days.
    pub chart: GroupedDays,
    /// The idle threshold, percent.
    pub idle_threshold: f64,
    /// The portal's currency.
    pub currency: super::money::Currency,
}

/// The fleet view (platform admins).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetReport {
    /// The period.
    pub period: Period,
    /// Per day.
    pub days: Vec<FleetDay>,
    /// The bookings with the most idle time.
    pub top_idle: Vec<BookingFact>,
    /// The idle threshold, percent.
    pub idle_threshold: f64,
}

/// Hours of a day, for labels: 23, 24 or 25.
pub fn day_hours(from: DateTime<Utc>, to: DateTime<Utc>) -> i64 {
    (to - from).num_hours()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::zone::OffsetChange;
    use chrono::{TimeDelta, TimeZone};

    fn at(y: i32, m: u32, d: u32, h: u32, min: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, h, min, 0).unwrap()
    }

    /// America/New_York around November 2026: EDT (-4) until 2026-11-01 06:00 UTC, then EST.
    fn new_york() -> ZoneOffsets {
        ZoneOffsets {
            name: "America/New_York".into(),
            changes: vec![
                OffsetChange {
                    at: at(2026, 3, 8, 7, 0),
                    offset_seconds: -4 * 3600,
                },
                OffsetChange {
                    at: at(2026, 11, 1, 6, 0),
                    offset_seconds: -5 * 3600,
                },
            ],
        }
    }

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    #[test]
    fn named_periods_are_local_calendar_ranges() {
        let today = day(2026, 12, 1); // a Tuesday
        assert_eq!(
            PeriodChoice::ThisMonth.days(today),
            (day(2026, 12, 1), day(2027, 1, 1))
        );
        assert_eq!(
            PeriodChoice::LastMonth.days(today),
            (day(2026, 11, 1), day(2026, 12, 1))
        );
        assert_eq!(
            PeriodChoice::ThisWeek.days(today),
            (day(2026, 11, 30), day(2026, 12, 7))
        );
        assert_eq!(
            PeriodChoice::LastWeek.days(today),
            (day(2026, 11, 23), day(2026, 11, 30))
        );
        assert_eq!(
            PeriodChoice::LastMonth.days(day(2027, 1, 31)),
            (day(2026, 12, 1), day(2027, 1, 1))
        );
    }

    #[test]
    fn last_month_in_new_york_spans_the_clock_change() {
        // 2026-12-01 03:00 UTC is still 30 November in New York.
        let period = Period::resolve(PeriodChoice::LastMonth, at(2026, 12, 1, 3, 0), &new_york());
        assert_eq!(period.first_day, day(2026, 10, 1));
        assert_eq!(period.from, at(2026, 10, 1, 4, 0), "midnight EDT");
        assert_eq!(
            period.to,
            at(2026, 11, 1, 4, 0),
            "midnight EDT, before the change"
        );
        let period = Period::resolve(PeriodChoice::LastMonth, at(2026, 12, 1, 6, 0), &new_york());
        assert_eq!(period.first_day, day(2026, 11, 1));
        assert_eq!(period.from, at(2026, 11, 1, 4, 0));
        assert_eq!(period.to, at(2026, 12, 1, 5, 0), "midnight EST");
        let days = period.days();
        assert_eq!(days.len(), 30);
        assert_eq!(
            day_hours(days[0].1, days[0].2),
            25,
            "1 November has 25 hours"
        );
        assert_eq!(day_hours(days[1].1, days[1].2), 24);
        assert_eq!(days[29].2, period.to);
    }

    #[test]
    fn periods_are_parsed_with_clear_refusals() {
        assert_eq!(
            PeriodChoice::parse(None, None, None),
            Ok(PeriodChoice::ThisMonth)
        );
        assert_eq!(
            PeriodChoice::parse(Some("last_month"), None, None),
            Ok(PeriodChoice::LastMonth)
        );
        assert_eq!(
            PeriodChoice::parse(Some("week"), None, None),
            Ok(PeriodChoice::ThisWeek)
        );
        assert_eq!(
            PeriodChoice::parse(None, Some("2026-11-01"), Some("2026-11-30")),
            Ok(PeriodChoice::Custom(day(2026, 11, 1), day(2026, 11, 30)))
        );
        assert_eq!(
            PeriodChoice::parse(None, Some("2026-11-01T00:00:00Z"), Some("2026-11-01")),
            Ok(PeriodChoice::Custom(day(2026, 11, 1), day(2026, 11, 1)))
        );
        assert_eq!(
            PeriodChoice::parse(None, Some("2026-11-01"), None),
            Err(PeriodError::HalfRange)
        );
        assert_eq!(
            PeriodChoice::parse(None, Some("1 Nov"), Some("2026-11-30")),
            Err(PeriodError::BadDate)
        );
        assert_eq!(
            PeriodChoice::parse(None, Some("2026-11-30"), Some("2026-11-01")),
            Err(PeriodError::Backwards)
        );
        assert_eq!(
            PeriodChoice::parse(None, Some("9999-01-01"), Some("9999-12-31")),
            Err(PeriodError::OutOfRange),
            "a far period is refused before any arithmetic"
        );
        assert_eq!(
            PeriodChoice::parse(None, Some("2026-11-01"), Some("2101-01-01")),
            Err(PeriodError::OutOfRange)
        );
        assert_eq!(
            PeriodChoice::parse(None, Some("2025-01-01"), Some("2026-11-01")),
            Err(PeriodError::TooLong)
        );
        assert_eq!(
            PeriodChoice::parse(Some("last_week"), Some("2026-11-01"), Some("2026-11-30")),
            Ok(PeriodChoice::LastWeek),
            "a named period ignores the range fields"
        );
        assert_eq!(
            PeriodChoice::parse(Some("custom"), Some(""), Some("")),
            Err(PeriodError::HalfRange)
        );
        assert_eq!(
            PeriodChoice::parse(Some("fortnight"), None, None),
            Err(PeriodError::UnknownName)
        );
        assert_eq!(GroupBy::parse(Some("node")), Some(GroupBy::Node));
        assert_eq!(GroupBy::parse(Some("gpu")), None);
        assert_eq!(Scope::parse(Some("team:4")), Some(Scope::Team(4)));
        assert_eq!(Scope::parse(Some("team:x")), None);
        assert_eq!(Scope::parse(None), Some(Scope::Mine));
    }

    fn fact(id: i64, team: Option<i64>, start: DateTime<Utc>, hours: i64) -> BookingFact {
        BookingFact {
            id,
            owner_id: 10 + id,
            owner_name: format!("user {id}"),
            team_id: team,
            team_name: team.map(|t| format!("team {t}")),
            model: "H100".into(),
            node: "n1".into(),
            start,
            held_until: start + TimeDelta::hours(hours),
            gpus: 1,
            quarters: 4,
            charged_minor: 1000 * hours,
            refunded_minor: 0,
            reclaimed_until: None,
            reclaim_refund_minor: 0,
            sla_credit_minor: 0,
            from_watch: false,
            usage: Usage::default(),
        }
    }

    #[test]
    fn totals_add_up_money_hours_and_use() {
        let mut a = fact(1, Some(1), at(2026, 11, 2, 10, 0), 2);
        a.usage = Usage {
            measured_minutes: 120,
            idle_minutes: 60,
            util_sum: 60.0 * 80.0 + 60.0 * 2.0,
        };
        let mut b = fact(2, Some(1), at(2026, 11, 3, 10, 0), 1);
        b.quarters = 2; // half a GPU for an hour
        b.refunded_minor = 400;
        b.usage = Usage {
            measured_minutes: 60,
            idle_minutes: 0,
            util_sum: 60.0 * 50.0,
        };
        let c = fact(3, None, at(2026, 11, 3, 10, 0), 4);
        let rows = group(&[a.clone(), b.clone(), c.clone()], GroupBy::Team);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].label, GroupLabel::Personal, "4000 net before 2600");
        let team = &rows[1].totals;
        assert_eq!(team.bookings, 2);
        assert!((team.reserved_hours() - 2.5).abs() < 1e-9);
        assert_eq!(team.charged_minor, 3000);
        assert_eq!(team.net_minor(), 2600);
        assert!((team.idle_hours() - 1.0).abs() < 1e-9);
        assert!((team.used_hours() - 1.5).abs() < 1e-9);
        // (4800 + 120) × 4 + 3000 × 2 over 120 × 4 + 60 × 2 share-minutes.
        let expected = (4920.0 * 4.0 + 3000.0 * 2.0) / 600.0;
        assert!((team.average_utilization().unwrap() - expected).abs() < 1e-9);
        // Booking a: 2000 for 2 measured hours of 2 reserved, 1 used; b: 600 net for its whole
        // half-GPU hour, measured and used (half a GPU-hour).
        let per_hour = team.cost_per_used_hour_minor().unwrap();
        assert!((per_hour - (2000.0 + 600.0) / 1.5).abs() < 1e-6);
        // Half of a's time unmeasured: only half its spend counts.
        let mut half = a.clone();
        half.usage = Usage {
            measured_minutes: 60,
            idle_minutes: 0,
            util_sum: 60.0 * 80.0,
        };
        let alone = total(&[half]);
        assert!((alone.cost_per_used_hour_minor().unwrap() - 1000.0).abs() < 1e-6);
        assert_eq!(rows[0].totals.average_utilization(), None);
        assert_eq!(rows[0].totals.cost_per_used_hour_minor(), None);
        assert!((rows[0].totals.unmeasured_hours() - 4.0).abs() < 1e-9);
        let all = total(&[a, b, c]);
        assert_eq!(all.net_minor(), 6600);
    }

    #[test]
    fn a_booking_cancelled_before_its_start_reserved_nothing() {
        let mut f = fact(1, None, at(2026, 11, 2, 10, 0), 3);
        f.held_until = f.start - TimeDelta::hours(1);
        assert_eq!(f.reserved_share_minutes(), 0);
        f.held_until = f.start + TimeDelta::minutes(90);
        assert_eq!(f.reserved_share_minutes(), 90 * 4);
    }

    #[test]
    fn the_chart_splits_bookings_over_local_days() {
        let zone = new_york();
        let period = Period::resolve(
            PeriodChoice::Custom(day(2026, 11, 1), day(2026, 11, 2)),
            at(2026, 12, 1, 12, 0),
            &zone,
        );
        // 22:00 EST on 1 November to 02:00 on the 2nd: 2 hours each day.
        let mut f = fact(1, Some(1), at(2026, 11, 2, 3, 0), 4);
        f.usage = Usage {
            measured_minutes: 240,
            idle_minutes: 0,
            util_sum: 240.0 * 40.0,
        };
        let chart = grouped_days(&[f], GroupBy::Team, &period);
        assert_eq!(chart.days.len(), 2);
        assert!((chart.days[0].hours[0] - 2.0).abs() < 1e-9);
        assert!((chart.days[1].hours[0] - 2.0).abs() < 1e-9);
        assert_eq!(chart.days[0].utilization, Some(40.0));
        assert!(!chart.has_others);
    }

    #[test]
    fn more_groups_than_colours_gather_in_others() {
        let period = Period::resolve(
            PeriodChoice::Custom(day(2026, 11, 2), day(2026, 11, 2)),
            at(2026, 12, 1, 12, 0),
            &ZoneOffsets::utc(),
        );
        let facts: Vec<BookingFact> = (1..=7)
            .map(|i| fact(i, Some(i), at(2026, 11, 2, 1, 0), i))
            .collect();
        let chart = grouped_days(&facts, GroupBy::Team, &period);
        assert_eq!(chart.groups.len(), CHART_GROUPS);
        assert!(chart.has_others);
        let hours = &chart.days[0].hours;
        assert!((hours[0] - 7.0).abs() < 1e-9, "largest first");
        assert!(
            (hours[4] - (1.0 + 2.0 + 3.0)).abs() < 1e-9,
            "the rest as others"
        );
        let sum: f64 = hours.iter().sum();
        assert!((sum - 28.0).abs() < 1e-9);
    }

    #[test]
    fn fleet_days_count_capacity_reservations_and_use() {
        let period = Period::resolve(
            PeriodChoice::Custom(day(2026, 11, 1), day(2026, 11, 2)),
            at(2026, 12, 1, 12, 0),
            &new_york(),
        );
        let (d1, d2) = (period.days()[0], period.days()[1]);
        let gpus = [
            GpuLife {
                from: at(2026, 1, 1, 0, 0),
                until: None,
            },
            // Added at noon UTC on the 2nd (07:00 EST): 17 hours that day.
            GpuLife {
                from: at(2026, 11, 2, 12, 0),
                until: None,
            },
        ];
        let held = [
            (d1.1, d1.1 + TimeDelta::hours(3), 4),
            (d2.1, d2.1 + TimeDelta::hours(2), 2),
        ];
        let hours = [
            FleetHour {
                hour: d1.1,
                usage: Usage {
                    measured_minutes: 60,
                    idle_minutes: 30,
                    util_sum: 30.0 * 90.0,
                },
            },
            FleetHour {
                hour: d2.2,
                usage: Usage {
                    measured_minutes: 60,
                    idle_minutes: 0,
                    util_sum: 6000.0,
                },
            },
        ];
        // Seen at 01:00 (UTC) on the second day, an hour into its two-hour booking; a booking
        // on the first day was reclaimed for its last two hours.
        let now = d2.1 + TimeDelta::hours(1);
        let reclaimed = [(d1.1 + TimeDelta::hours(3), d1.1 + TimeDelta::hours(5), 4)];
        let days = fleet_days(&period, &gpus, &held, &reclaimed, &hours, now);
        assert_eq!(days.len(), 2);
        assert!((days[0].upcoming_hours - 0.0).abs() < 1e-9, "the past");
        assert!(
            (days[1].upcoming_hours - 0.5).abs() < 1e-9,
            "half the booking is to come"
        );
        assert!((days[0].reclaimed_hours - 2.0).abs() < 1e-9);
        assert!((days[1].reclaimed_hours - 0.0).abs() < 1e-9);
        assert!(
            (days[0].capacity_hours - 25.0).abs() < 1e-9,
            "the 25-hour day"
        );
        assert!((days[1].capacity_hours - (24.0 + 17.0)).abs() < 1e-9);
        assert!((days[0].reserved_hours - 3.0).abs() < 1e-9);
        assert!((days[1].reserved_hours - 1.0).abs() < 1e-9);
        assert!((days[0].used_hours - 0.5).abs() < 1e-9);
        assert_eq!(days[0].utilization, Some(45.0));
        assert_eq!(
            days[1].used_hours, 0.0,
            "the hour after the period is not counted"
        );
    }

    #[test]
    fn usage_of_a_recomputed_minute_replaces_the_old_one() {
        let old = Usage::of_minute(Some(5.0), 10.0);
        let new = Usage::of_minute(Some(50.0), 10.0);
        let total = old.plus(Usage::of_minute(Some(20.0), 10.0));
        let fixed = total.minus(old).plus(new);
        assert_eq!(fixed.measured_minutes, 2);
        assert_eq!(fixed.idle_minutes, 0);
        assert!((fixed.util_sum - 70.0).abs() < 1e-9);
        assert!(Usage::of_minute(None, 10.0).is_zero());
        assert!(new.minus(new).is_zero());
    }

    #[test]
    fn top_idle_lists_the_most_idle_bookings_first() {
        let mut a = fact(1, None, at(2026, 11, 2, 10, 0), 2);
        a.usage.idle_minutes = 30;
        let mut b = fact(2, None, at(2026, 11, 2, 9, 0), 2);
        b.usage.idle_minutes = 100;
        let c = fact(3, None, at(2026, 11, 2, 9, 0), 2);
        let top = top_idle(&[a, b, c], 5);
        assert_eq!(top.iter().map(|f| f.id).collect::<Vec<_>>(), vec![2, 1]);
    }
}
