//! Incidents: the workflow (who may move an incident from which state to which, and what each
//! step needs) and the SLA credit (the minutes a reserved GPU was unavailable through no fault of
//! its holder, read from the evidence, and what they are worth). Pure: the service applies it.

use crate::domain::diagnosis::{Cause, Sample, Span};
use crate::domain::problem::Problem;
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// Longest text of a report, a reply or a stated cause, in characters.
pub const MAX_TEXT_CHARS: usize = 4000;

/// How far back the evidence of a new incident reaches by default.
pub const DEFAULT_LOOKBACK: TimeDelta = TimeDelta::hours(1);

/// Longest incident window.
pub const MAX_WINDOW: TimeDelta = TimeDelta::days(7);

/// Where an incident stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IncidentState {
    /// Reported; nobody answered yet.
    Open,
    /// A platform admin took it.
    Acknowledged,
    /// A platform admin named the likely cause.
    Diagnosed,
    /// Closed with a stated cause.
    Resolved,
    /// Closed as not a fault of the platform, with a stated cause.
    Rejected,
}

impl IncidentState {
    /// Every state, in workflow order.
    pub const ALL: [IncidentState; 5] = [
        IncidentState::Open,
        IncidentState::Acknowledged,
        IncidentState::Diagnosed,
        IncidentState::Resolved,
        IncidentState::Rejected,
    ];

    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            IncidentState::Open => "open",
            IncidentState::Acknowledged => "acknowledged",
            IncidentState::Diagnosed => "diagnosed",
            IncidentState::Resolved => "resolved",
            IncidentState::Rejected => "rejected",
        }
    }

    /// From the stored text.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == raw)
    }

    /// Resolved or rejected.
    pub fn closed(self) -> bool {
        matches!(self, IncidentState::Resolved | IncidentState::Rejected)
    }
}

/// Who opened an incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The booking's holder (or someone on the GPU's page).
    User,
    /// A platform admin.
    Admin,
    /// Berth, from what the node agent reported.
    Agent,
}

impl Source {
    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::User => "user",
            Source::Admin => "admin",
            Source::Agent => "agent",
        }
    }

    /// From the stored text.
    pub fn parse(raw: &str) -> Option<Self> {
        [Source::User, Source::Admin, Source::Agent]
            .into_iter()
            .find(|s| s.as_str() == raw)
    }
}

/// What made Berth open an incident by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// XID 79: the GPU fell off the bus.
    #[serde(rename = "xid_79")]
    Xid79,
    /// The GPU went missing from its node.
    GpuGone,
    /// The node's agent went silent during a lease.
    NodeSilent,
}

impl Trigger {
    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Xid79 => "xid_79",
            Trigger::GpuGone => "gpu_gone",
            Trigger::NodeSilent => "node_silent",
        }
    }

    /// From the stored text.
    pub fn parse(raw: &str) -> Option<Self> {
        [Trigger::Xid79, Trigger::GpuGone, Trigger::NodeSilent]
            .into_iter()
            .find(|t| t.as_str() == raw)
    }
}

/// A step of the workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// A platform admin takes it.
    Acknowledge,
    /// A platform admin names the likely cause.
    Diagnose,
    /// A platform admin closes it as fixed or explained.
    Resolve,
    /// A platform admin closes it as not the platform's fault.
    Reject,
    /// The reporter opens it again, once, with new evidence.
    Reopen,
}

impl Step {
    /// As sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Acknowledge => "acknowledge",
            Step::Diagnose => "diagnose",
            Step::Resolve => "resolve",
            Step::Reject => "reject",
            Step::Reopen => "reopen",
        }
    }

    /// From a form or a request.
    pub fn parse(raw: &str) -> Option<Self> {
        [
            Step::Acknowledge,
            Step::Diagnose,
            Step::Resolve,
            Step::Reject,
            Step::Reopen,
        ]
        .into_iter()
        .find(|s| s.as_str() == raw)
    }
}

/// The cause a step states: one of the diagnosis' hypotheses, or written out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum StatedCause {
    /// A hypothesis of the diagnosis.
    Diagnosed(Cause),
    /// In the admin's words.
    Written(String),
}

/// Who takes a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taker {
    /// A platform admin.
    pub admin: bool,
    /// The holder of the booking, or whoever opened the incident.
    pub reporter: bool,
}

/// Why a step was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The taker may not take it.
    Forbidden,
    /// Its state does not allow it, or it was reopened before.
    Conflict(Problem),
    /// A field is missing or wrong.
    Invalid(&'static str, Problem),
}

/// The state after `step` on an incident in `state` (reopened before: `reopened`), taken by
/// `taker` with `cause` (needed to diagnose and to close; a diagnosed cause must be one of
/// `hypotheses`) and `note` (needed to reopen: the new evidence).
pub fn take(
    state: IncidentState,
    step: Step,
    taker: Taker,
    reopened: bool,
    cause: Option<&StatedCause>,
    note: &str,
    hypotheses: &[Cause],
) -> Result<IncidentState, Refusal> {
    use IncidentState as S;
    let allowed = match step {
        Step::Acknowledge => state == S::Open,
        Step::Diagnose => matches!(state, S::Open | S::Acknowledged),
        Step::Resolve | Step::Reject => !state.closed(),
        Step::Reopen => state.closed(),
    };
    let admin_step = step != Step::Reopen;
    if (admin_step && !taker.admin) || (!admin_step && !taker.reporter) {
        return Err(Refusal::Forbidden);
    }
    if !allowed {
        return Err(Refusal::Conflict(Problem::IncidentStep {
            state: state.as_str().to_owned(),
            step: step.as_str().to_owned(),
        }));
    }
    let needed = Problem::TextLength {
        max: MAX_TEXT_CHARS,
    };
    if matches!(step, Step::Diagnose | Step::Resolve | Step::Reject) {
        match cause {
            None => return Err(Refusal::Invalid("cause", needed)),
            Some(StatedCause::Written(text)) if text.trim().is_empty() => {
                return Err(Refusal::Invalid("cause", needed));
            }
            Some(StatedCause::Diagnosed(chosen)) if !hypotheses.contains(chosen) => {
                return Err(Refusal::Invalid("cause", Problem::NotInDiagnosis));
            }
            Some(_) => {}
        }
    }
    Ok(match step {
        Step::Acknowledge => S::Acknowledged,
        Step::Diagnose => S::Diagnosed,
        Step::Resolve => S::Resolved,
        Step::Reject => S::Rejected,
        Step::Reopen => {
            if reopened {
                return Err(Refusal::Conflict(Problem::AlreadyReopened));
            }
            if note.trim().is_empty() {
                return Err(Refusal::Invalid("note", needed));
            }
            S::Open
        }
    })
}

/// A report, reply or cause as written: trimmed, at most [`MAX_TEXT_CHARS`], no control
/// characters but line breaks and tabs.
pub fn text(raw: &str) -> Result<String, Problem> {
    let trimmed = raw.trim();
    if trimmed.chars().count() > MAX_TEXT_CHARS {
        return Err(Problem::TooLongText {
            max: MAX_TEXT_CHARS,
        });
    }
    if trimmed
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t' && c != '\r')
    {
        return Err(Problem::ControlCharacters);
    }
    Ok(trimmed.to_owned())
}

/// An incident's window: from, and to (`None`: now, while it is open).
pub type WindowAsked = (DateTime<Utc>, Option<DateTime<Utc>>);

/// The window of a new incident: `from` (default: an hour before `to`) to `to` (default: now;
/// `None` while it is open), checked.
pub fn window(
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<WindowAsked, (&'static str, Problem)> {
    let end = to.unwrap_or(now);
    if end > now {
        return Err(("to", Problem::InTheFuture));
    }
    let start = from.unwrap_or(end - DEFAULT_LOOKBACK);
    if start >= end {
        return Err(("from", Problem::ToNotAfterFrom));
    }
    if end - start > MAX_WINDOW {
        return Err((
            "from",
            Problem::RangeTooLong {
                days: MAX_WINDOW.num_days(),
            },
        ));
    }
    Ok((start, to))
}

/// How far before its start and after its end a booking's holder may look into its GPUs.
pub const BOOKING_MARGIN: TimeDelta = TimeDelta::hours(1);

/// A holder's window (`to` `None`: up to now, and on with the present) kept to their booking,
/// held from `start` until `until` (its end, or its cancellation when that came first), and
/// [`BOOKING_MARGIN`] either side: the GPUs' evidence at other times is other tenants'. `Err`
/// when nothing of the window is left.
pub fn within_booking(
    (from, to): WindowAsked,
    now: DateTime<Utc>,
    start: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<WindowAsked, Problem> {
    let (earliest, latest) = (start - BOOKING_MARGIN, until + BOOKING_MARGIN);
    let from = from.max(earliest);
    let to = match to {
        Some(to) => Some(to.min(latest)),
        None if now > latest => Some(latest),
        None => None,
    };
    if until <= start || from >= to.unwrap_or(now) {
        return Err(Problem::OutsideBooking);
    }
    Ok((from, to))
}

/// What counts as the platform's fault in an SLA credit, and what it pays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlaPolicy {
    /// Percent of the lost minutes' price credited (100: their price; 200: twice it; 0: off).
    pub percent: u32,
    /// A GPU that fell off the bus.
    pub fell_off_bus: bool,
    /// A GPU gone from its node.
    pub gpu_gone: bool,
    /// The node's agent silent.
    pub node_silent: bool,
    /// Maintenance that started after the booking was made.
    pub maintenance: bool,
    /// Thermal or power throttling that held the SM clock below
    /// [`SlaPolicy::throttle_clock_percent`] of the GPU's highest clock in the window.
    pub throttled: bool,
    /// See [`SlaPolicy::throttled`].
    pub throttle_clock_percent: u8,
    /// No report for this many report intervals counts as the node being silent.
    pub silent_intervals: u32,
}

impl Default for SlaPolicy {
    fn default() -> Self {
        Self {
            percent: 100,
            fell_off_bus: true,
            gpu_gone: true,
            node_silent: true,
            maintenance: true,
            throttled: true,
            throttle_clock_percent: 50,
            silent_intervals: 3,
        }
    }
}

/// Why a GPU was unavailable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossCause {
    /// It fell off the bus.
    FellOffBus,
    /// It went missing.
    GpuGone,
    /// Its node's agent was silent.
    NodeSilent,
    /// It was in maintenance.
    Maintenance,
    /// It was throttled far below its clock.
    Throttled,
}

/// What the SLA reads of one reserved GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuAvailability {
    /// How people name it.
    pub gpu: String,
    /// When the booking held it, within the incident's window.
    pub held: Span,
    /// Its samples, oldest first.
    pub samples: Vec<Sample>,
    /// When its node's agent reported any GPU, oldest first (its silences).
    pub node_reports: Vec<DateTime<Utc>>,
    /// When it fell off the bus (XID 79), if it did.
    pub fell_off_bus_at: Option<DateTime<Utc>>,
    /// When it went missing, if it did.
    pub gone_at: Option<DateTime<Utc>>,
    /// When the holder had GPUs again after a failure (access granted on the booking's new
    /// GPUs): what this GPU did after that no longer matters to the booking.
    pub restored: Vec<DateTime<Utc>>,
    /// Maintenance windows made after the booking.
    pub maintenance: Vec<Span>,
}

/// A stretch a reserved GPU was unavailable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostSpan {
    /// The GPU.
    pub gpu: String,
    /// Why.
    pub cause: LossCause,
    /// From.
    pub from: DateTime<Utc>,
    /// To.
    pub to: DateTime<Utc>,
}

/// The stretches each of `gpus` was unavailable, by the policy's causes, reported every
/// `interval_seconds`.
pub fn lost_spans(
    gpus: &[GpuAvailability],
    interval_seconds: u32,
    policy: &SlaPolicy,
) -> Vec<LostSpan> {
    let interval = TimeDelta::seconds(i64::from(interval_seconds.max(1)));
    let mut spans = Vec::new();
    for gpu in gpus {
        let held = gpu.held;
        let restored_after =
            |at: DateTime<Utc>| gpu.restored.iter().copied().filter(|r| *r > at).min();
        let mut push = |cause: LossCause, from: DateTime<Utc>, to: DateTime<Utc>| {
            let to = restored_after(from).map_or(to, |r| r.min(to));
            let (from, to) = (from.max(held.start()), to.min(held.end()));
            if from < to {
                spans.push(LostSpan {
                    gpu: gpu.gpu.clone(),
                    cause,
                    from,
                    to,
                });
            }
        };
        // A failure lasts until the GPU reports again or the holder has GPUs again.
        let back_after = |at: DateTime<Utc>| {
            let sample = gpu.samples.iter().map(|s| s.at).find(|s| *s > at);
            let restored = gpu.restored.iter().copied().filter(|r| *r > at).min();
            [sample, restored, Some(held.end())]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(held.end())
        };
        if policy.fell_off_bus
            && let Some(at) = gpu.fell_off_bus_at
        {
            push(LossCause::FellOffBus, at, back_after(at));
        }
        if policy.gpu_gone
            && let Some(at) = gpu.gone_at
        {
            push(LossCause::GpuGone, at, back_after(at));
        }
        if policy.node_silent {
            let longest = interval * i32::try_from(policy.silent_intervals.max(1)).unwrap_or(3);
            // From the node's last report before the booking's stretch, if it had one: with
            // none, the node was not there yet (new, or the portal just started).
            let mut marks: Vec<DateTime<Utc>> = gpu
                .node_reports
                .iter()
                .copied()
                .filter(|at| *at < held.start())
                .max()
                .map(|_| held.start())
                .into_iter()
                .collect();
            marks.extend(
                gpu.node_reports
                    .iter()
                    .copied()
                    .filter(|at| held.contains(*at)),
            );
            marks.push(held.end());
            for pair in marks.windows(2) {
                if pair[1] - pair[0] > longest {
                    push(LossCause::NodeSilent, pair[0], pair[1]);
                }
            }
        }
        if policy.maintenance {
            for window in &gpu.maintenance {
                push(LossCause::Maintenance, window.start(), window.end());
            }
        }
        if policy.throttled {
            let top = gpu.samples.iter().filter_map(|s| s.sm_clock_mhz).max();
            if let Some(top) = top {
                let floor = u64::from(top) * u64::from(policy.throttle_clock_percent) / 100;
                for (i, sample) in gpu.samples.iter().enumerate() {
                    let slow = sample
                        .sm_clock_mhz
                        .is_some_and(|clock| u64::from(clock) < floor);
                    let throttled = sample
                        .throttle_reasons
                        .is_some_and(|mask| mask & crate::domain::diagnosis::HEAT_OR_POWER != 0);
                    if slow && throttled {
                        let next = gpu
                            .samples
                            .get(i + 1)
                            .map_or(sample.at + interval, |s| s.at)
                            .min(sample.at + interval * 3);
                        push(LossCause::Throttled, sample.at, next);
                    }
                }
            }
        }
    }
    spans
}

/// GPU-minutes lost: for each GPU the union of its spans, whole minutes.
pub fn lost_gpu_minutes(spans: &[LostSpan]) -> i64 {
    type Stretches = Vec<(DateTime<Utc>, DateTime<Utc>)>;
    let mut by_gpu: std::collections::BTreeMap<&str, Stretches> = std::collections::BTreeMap::new();
    for span in spans {
        by_gpu
            .entry(span.gpu.as_str())
            .or_default()
            .push((span.from, span.to));
    }
    by_gpu
        .into_values()
        .map(|mut spans| {
            spans.sort();
            let mut seconds = 0;
            let mut current: Option<(DateTime<Utc>, DateTime<Utc>)> = None;
            for (from, to) in spans {
                match current {
                    Some((start, end)) if from <= end => current = Some((start, end.max(to))),
                    Some((start, end)) => {
                        seconds += (end - start).num_seconds();
                        current = Some((from, to));
                    }
                    None => current = Some((from, to)),
                }
            }
            if let Some((start, end)) = current {
                seconds += (end - start).num_seconds();
            }
            seconds / 60
        })
        .sum()
}

/// The credit for `lost_gpu_minutes` of a booking priced `price_minor` for `booking_gpu_minutes`
/// (its GPUs times its minutes), at `percent`: rounded down, at most `percent` of the price.
pub fn credit_minor(
    price_minor: i64,
    booking_gpu_minutes: i64,
    lost_gpu_minutes: i64,
    percent: u32,
) -> i64 {
    if price_minor <= 0 || booking_gpu_minutes <= 0 || lost_gpu_minutes <= 0 || percent == 0 {
        return 0;
    }
    let lost = i128::from(lost_gpu_minutes.min(booking_gpu_minutes));
    let credit = i128::from(price_minor) * lost * i128::from(percent)
        / (i128::from(booking_gpu_minutes) * 100);
    i64::try_from(credit).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_holders_window_stays_within_the_booking_and_an_hour_around_it() {
        let t = |h: i64| DateTime::<Utc>::UNIX_EPOCH + TimeDelta::hours(h);
        // Booked from 10 to 14.
        let inside = super::within_booking((t(11), Some(t(12))), t(20), t(10), t(14));
        assert_eq!(inside, Ok((t(11), Some(t(12)))));
        // Days before and after: cut to an hour either side.
        let wide = super::within_booking((t(0), Some(t(19))), t(20), t(10), t(14));
        assert_eq!(wide, Ok((t(9), Some(t(15)))));
        // Up to now, long after the end: up to an hour after it.
        assert_eq!(
            super::within_booking((t(13), None), t(20), t(10), t(14)),
            Ok((t(13), Some(t(15))))
        );
        // Up to now, while it runs: on with the present.
        assert_eq!(
            super::within_booking((t(11), None), t(12), t(10), t(14)),
            Ok((t(11), None))
        );
        // Nothing of it within the booking.
        assert_eq!(
            super::within_booking((t(0), Some(t(8))), t(20), t(10), t(14)),
            Err(Problem::OutsideBooking)
        );
        assert_eq!(
            super::within_booking((t(16), Some(t(19))), t(20), t(10), t(14)),
            Err(Problem::OutsideBooking)
        );
        // Cancelled before its start: never held.
        assert_eq!(
            super::within_booking((t(9), Some(t(12))), t(20), t(10), t(9)),
            Err(Problem::OutsideBooking)
        );
    }

    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    fn at(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 4, h, m, 0).unwrap()
    }

    fn sample(when: DateTime<Utc>) -> Sample {
        Sample {
            at: when,
            temperature_c: Some(60),
            sm_clock_mhz: Some(1980),
            throttle_reasons: Some(0),
            memory_used_mib: Some(1024),
            ecc_corrected: Some(0),
            ecc_uncorrected: Some(0),
        }
    }

    fn every_minute(from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<Sample> {
        let mut out = Vec::new();
        let mut t = from;
        while t < to {
            out.push(sample(t));
            t += TimeDelta::minutes(1);
        }
        out
    }

    fn gpu(samples: Vec<Sample>) -> GpuAvailability {
        GpuAvailability {
            gpu: "node-a #0".into(),
            held: Span::new(at(10, 0), at(12, 0)).unwrap(),
            node_reports: std::iter::once(at(9, 59))
                .chain(samples.iter().map(|s| s.at))
                .collect(),
            samples,
            fell_off_bus_at: None,
            gone_at: None,
            restored: Vec::new(),
            maintenance: Vec::new(),
        }
    }

    const ADMIN: Taker = Taker {
        admin: true,
        reporter: false,
    };
    const HOLDER: Taker = Taker {
        admin: false,
        reporter: true,
    };

    #[test]
    fn the_workflow_runs_open_acknowledged_diagnosed_resolved() {
        let cause = StatedCause::Diagnosed(Cause::Thermal);
        let found = [Cause::Thermal];
        let s = take(
            IncidentState::Open,
            Step::Acknowledge,
            ADMIN,
            false,
            None,
            "",
            &found,
        );
        assert_eq!(s, Ok(IncidentState::Acknowledged));
        let s = take(
            IncidentState::Acknowledged,
            Step::Diagnose,
            ADMIN,
            false,
            Some(&cause),
            "",
            &found,
        );
        assert_eq!(s, Ok(IncidentState::Diagnosed));
        let s = take(
            IncidentState::Diagnosed,
            Step::Resolve,
            ADMIN,
            false,
            Some(&cause),
            "",
            &found,
        );
        assert_eq!(s, Ok(IncidentState::Resolved));
    }

    #[test]
    fn closing_needs_a_stated_cause_from_the_diagnosis_or_written() {
        let found = [Cause::Thermal];
        for step in [Step::Resolve, Step::Reject, Step::Diagnose] {
            assert_eq!(
                take(IncidentState::Open, step, ADMIN, false, None, "", &found),
                Err(Refusal::Invalid(
                    "cause",
                    Problem::TextLength {
                        max: MAX_TEXT_CHARS
                    }
                ))
            );
            let blank = StatedCause::Written("  ".into());
            assert_eq!(
                take(
                    IncidentState::Open,
                    step,
                    ADMIN,
                    false,
                    Some(&blank),
                    "",
                    &found
                ),
                Err(Refusal::Invalid(
                    "cause",
                    Problem::TextLength {
                        max: MAX_TEXT_CHARS
                    }
                ))
            );
            let other = StatedCause::Diagnosed(Cause::FellOffBus);
            assert_eq!(
                take(
                    IncidentState::Open,
                    step,
                    ADMIN,
                    false,
                    Some(&other),
                    "",
                    &found
                ),
                Err(Refusal::Invalid("cause", Problem::NotInDiagnosis))
            );
            let written = StatedCause::Written("The job ran out of host memory".into());
            assert!(
                take(
                    IncidentState::Open,
                    step,
                    ADMIN,
                    false,
                    Some(&written),
                    "",
                    &found
                )
                .is_ok()
            );
        }
    }

    #[test]
    fn only_admins_move_it_and_only_the_reporter_reopens_once_with_new_evidence() {
        let written = StatedCause::Written("fixed".into());
        assert_eq!(
            take(
                IncidentState::Open,
                Step::Resolve,
                HOLDER,
                false,
                Some(&written),
                "",
                &[]
            ),
            Err(Refusal::Forbidden)
        );
        assert_eq!(
            take(
                IncidentState::Resolved,
                Step::Reopen,
                ADMIN,
                false,
                None,
                "again",
                &[]
            ),
            Err(Refusal::Forbidden)
        );
        assert_eq!(
            take(
                IncidentState::Resolved,
                Step::Reopen,
                HOLDER,
                false,
                None,
                " ",
                &[]
            ),
            Err(Refusal::Invalid(
                "note",
                Problem::TextLength {
                    max: MAX_TEXT_CHARS
                }
            ))
        );
        assert_eq!(
            take(
                IncidentState::Rejected,
                Step::Reopen,
                HOLDER,
                false,
                None,
                "it crashed again at 14:02",
                &[]
            ),
            Ok(IncidentState::Open)
        );
        assert_eq!(
            take(
                IncidentState::Resolved,
                Step::Reopen,
                HOLDER,
                true,
                None,
                "and again",
                &[]
            ),
            Err(Refusal::Conflict(Problem::AlreadyReopened))
        );
        assert!(matches!(
            take(
                IncidentState::Open,
                Step::Reopen,
                HOLDER,
                false,
                None,
                "x",
                &[]
            ),
            Err(Refusal::Conflict(Problem::IncidentStep { .. }))
        ));
        assert!(matches!(
            take(
                IncidentState::Resolved,
                Step::Acknowledge,
                ADMIN,
                false,
                None,
                "",
                &[]
            ),
            Err(Refusal::Conflict(Problem::IncidentStep { .. }))
        ));
    }

    #[test]
    fn the_window_defaults_to_the_hour_before_now_and_refuses_the_future_and_huge_spans() {
        let now = at(12, 0);
        assert_eq!(window(None, None, now), Ok((at(11, 0), None)));
        assert_eq!(
            window(Some(at(9, 0)), Some(at(10, 0)), now),
            Ok((at(9, 0), Some(at(10, 0))))
        );
        assert_eq!(window(None, Some(at(13, 0)), now).unwrap_err().0, "to");
        assert_eq!(window(Some(at(12, 0)), None, now).unwrap_err().0, "from");
        assert_eq!(
            window(Some(now - TimeDelta::days(8)), None, now)
                .unwrap_err()
                .0,
            "from"
        );
    }

    #[test]
    fn names_are_the_serialised_ones() {
        for trigger in [Trigger::Xid79, Trigger::GpuGone, Trigger::NodeSilent] {
            assert_eq!(serde_json::to_value(trigger).unwrap(), trigger.as_str());
        }
        for state in IncidentState::ALL {
            assert_eq!(serde_json::to_value(state).unwrap(), state.as_str());
        }
    }

    #[test]
    fn text_is_trimmed_and_bounded() {
        assert_eq!(text("  it froze \n").unwrap(), "it froze");
        assert!(text(&"x".repeat(MAX_TEXT_CHARS + 1)).is_err());
        assert!(text("bell\u{7}").is_err());
    }

    #[test]
    fn a_gpu_that_fell_off_the_bus_is_lost_until_the_holder_has_gpus_again() {
        let mut g = gpu(every_minute(at(10, 0), at(10, 30)));
        // The node's other GPUs go on reporting.
        g.node_reports = every_minute(at(10, 0), at(12, 0))
            .iter()
            .map(|s| s.at)
            .collect();
        g.fell_off_bus_at = Some(at(10, 30));
        g.restored = vec![at(10, 47)];
        let spans = lost_spans(&[g], 60, &SlaPolicy::default());
        assert_eq!(spans.len(), 1);
        assert_eq!((spans[0].from, spans[0].to), (at(10, 30), at(10, 47)));
        assert_eq!(spans[0].cause, LossCause::FellOffBus);
        assert_eq!(lost_gpu_minutes(&spans), 17);
    }

    #[test]
    fn a_silence_longer_than_the_threshold_is_lost_and_counted_once_with_a_failure() {
        let mut samples = every_minute(at(10, 0), at(10, 20));
        samples.extend(every_minute(at(10, 50), at(12, 0)));
        let mut g = gpu(samples);
        // The GPU also fell off the bus inside the silence: the minutes count once.
        g.fell_off_bus_at = Some(at(10, 25));
        let spans = lost_spans(&[g], 60, &SlaPolicy::default());
        assert!(spans.iter().any(|s| s.cause == LossCause::NodeSilent));
        assert_eq!(lost_gpu_minutes(&spans), 31);
    }

    #[test]
    fn nothing_before_a_new_nodes_first_report_is_a_silence() {
        let mut g = gpu(every_minute(at(10, 20), at(12, 0)));
        g.node_reports = g.samples.iter().map(|s| s.at).collect();
        assert!(lost_spans(std::slice::from_ref(&g), 60, &SlaPolicy::default()).is_empty());
        // A node that reported before the booking and then went quiet is silent from its start.
        g.node_reports.insert(0, at(9, 0));
        let spans = lost_spans(&[g], 60, &SlaPolicy::default());
        assert_eq!(lost_gpu_minutes(&spans), 20);
    }

    #[test]
    fn throttling_far_below_the_clock_counts_and_light_throttling_does_not() {
        let mut samples = every_minute(at(10, 0), at(10, 10));
        for (i, s) in samples.iter_mut().enumerate() {
            if (3..7).contains(&i) {
                s.throttle_reasons = Some(0x20);
                s.sm_clock_mhz = Some(600);
            }
            if i == 8 {
                s.throttle_reasons = Some(0x20);
                s.sm_clock_mhz = Some(1800);
            }
        }
        let mut g = gpu(samples);
        g.held = Span::new(at(10, 0), at(10, 10)).unwrap();
        let spans = lost_spans(&[g], 60, &SlaPolicy::default());
        assert_eq!(lost_gpu_minutes(&spans), 4);
        assert!(spans.iter().all(|s| s.cause == LossCause::Throttled));
    }

    #[test]
    fn causes_the_policy_leaves_out_cost_nothing() {
        let mut g = gpu(every_minute(at(10, 0), at(10, 30)));
        g.fell_off_bus_at = Some(at(10, 30));
        let policy = SlaPolicy {
            fell_off_bus: false,
            node_silent: false,
            ..SlaPolicy::default()
        };
        assert!(lost_spans(&[g], 60, &policy).is_empty());
    }

    #[test]
    fn the_credit_is_the_lost_minutes_price_at_the_rate() {
        // 2 GPUs for 2 hours at 4800: 240 GPU-minutes, 20 per GPU-minute.
        assert_eq!(credit_minor(4800, 240, 17, 100), 340);
        assert_eq!(credit_minor(4800, 240, 17, 200), 680);
        assert_eq!(credit_minor(4800, 240, 17, 0), 0);
        assert_eq!(credit_minor(4800, 240, 1000, 100), 4800);
    }

    proptest! {
        #[test]
        fn a_credit_never_exceeds_the_rate_of_the_price(
            price in 0i64..10_000_000,
            booked in 1i64..100_000,
            lost in 0i64..200_000,
            percent in 0u32..1000,
        ) {
            let credit = credit_minor(price, booked, lost, percent);
            prop_assert!(credit >= 0);
            prop_assert!(i128::from(credit) <= i128::from(price) * i128::from(percent) / 100);
        }

        #[test]
        fn lost_minutes_never_exceed_the_held_window(
            failed in 0i64..120,
            restored in 0i64..240,
            silence_from in 0i64..120,
            silence_len in 0i64..120,
        ) {
            let mut samples = every_minute(at(10, 0), at(10, 0) + TimeDelta::minutes(silence_from));
            samples.extend(every_minute(
                at(10, 0) + TimeDelta::minutes(silence_from + silence_len),
                at(12, 0),
            ));
            let mut g = gpu(samples);
            g.fell_off_bus_at = Some(at(10, 0) + TimeDelta::minutes(failed));
            g.restored = vec![at(10, 0) + TimeDelta::minutes(restored)];
            let spans = lost_spans(&[g], 60, &SlaPolicy::default());
            prop_assert!(lost_gpu_minutes(&spans) <= 120);
            for span in &spans {
                prop_assert!(span.from >= at(10, 0) && span.to <= at(12, 0) && span.from < span.to);
            }
        }
    }
}
