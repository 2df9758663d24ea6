//! A diagnosis that cites facts: the rules that turn an incident's evidence (a booking's GPUs
//! over a window: telemetry samples, XID events, the node agent's gaps, other tenants' shares,
//! admin changes) into hypotheses, each with the facts that triggered it and the action it calls
//! for. "No fault found in the evidence" is a finding too, stated with what was checked.
//!
//! The XID classes follow NVIDIA's XID catalogue and its recommended actions: 13, 31, 43, 45 and
//! 94 are application errors (restart the application), 46, 62, 64, 95, 109, 119 and 120 need a
//! GPU reset, 48 is a double-bit ECC error, 79 means the GPU fell off the bus (reboot the host),
//! 74 is an NVLink error, and 154 carries its own recovery action.

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// A stretch of time, not tied to the booking grid: an incident's window, a share, a
/// maintenance window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    start: DateTime<Utc>,
    end: DateTime<Utc>,
}

impl Span {
    /// From `start` to `end`; `None` unless `end` is after `start`.
    pub fn new(start: DateTime<Utc>, end: DateTime<Utc>) -> Option<Self> {
        (end > start).then_some(Self { start, end })
    }

    /// Start (inclusive).
    pub fn start(&self) -> DateTime<Utc> {
        self.start
    }

    /// End (exclusive).
    pub fn end(&self) -> DateTime<Utc> {
        self.end
    }

    /// Whether the two share an instant.
    pub fn overlaps(&self, other: &Span) -> bool {
        self.start < other.end && other.start < self.end
    }

    /// Whether `at` lies inside.
    pub fn contains(&self, at: DateTime<Utc>) -> bool {
        self.start <= at && at < self.end
    }
}

/// What NVIDIA's catalogue says an XID calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum XidClass {
    /// An application fault (bad memory access, illegal instruction, …): restart it.
    Application,
    /// The GPU needs a reset.
    ResetGpu,
    /// A double-bit (uncorrectable) ECC error.
    DoubleBitEcc,
    /// The GPU fell off the bus: reboot the host.
    FellOffBus,
    /// An NVLink error.
    NvLink,
    /// The driver names the recovery action itself (XID 154).
    RecoveryAction,
    /// Not in the rule set.
    Other,
}

/// The class of XID `code`.
pub fn xid_class(code: i64) -> XidClass {
    match code {
        13 | 31 | 43 | 45 | 94 => XidClass::Application,
        46 | 62 | 64 | 95 | 109 | 119 | 120 => XidClass::ResetGpu,
        48 => XidClass::DoubleBitEcc,
        crate::domain::failover::XID_FELL_OFF_BUS => XidClass::FellOffBus,
        74 => XidClass::NvLink,
        154 => XidClass::RecoveryAction,
        _ => XidClass::Other,
    }
}

/// NVML throttle bits that mean heat.
const THERMAL: u64 = 0x20 | 0x40;
/// NVML throttle bits that mean power trouble: the hardware slowdown and the power brake. Not
/// the software power cap (0x4): a GPU under full load sits at its power limit and holds its clock
/// there by design (an H200 running bf16 matrix products in this project's check on a real GPU:
/// 691 W of 700 W, SM clock 1455 of 1980 MHz, reason 0x4 only, for the whole load).
const POWER: u64 = 0x8 | 0x80;
/// NVML throttle bits that mean heat or power.
pub const HEAT_OR_POWER: u64 = THERMAL | POWER;

/// One sample of one GPU, as the rules read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    /// When.
    pub at: DateTime<Utc>,
    /// Temperature, °C.
    pub temperature_c: Option<i16>,
    /// SM clock, MHz.
    pub sm_clock_mhz: Option<u32>,
    /// NVML throttle reasons.
    pub throttle_reasons: Option<u64>,
    /// Memory in use, MiB.
    pub memory_used_mib: Option<u64>,
    /// Volatile corrected ECC errors.
    pub ecc_corrected: Option<u64>,
    /// Volatile uncorrected ECC errors.
    pub ecc_uncorrected: Option<u64>,
}

/// One GPU of the booking over the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuEvidence {
    /// How people name it (`gpu-node-1 #3`).
    pub gpu: String,
    /// Its memory, MiB.
    pub memory_total_mib: u64,
    /// Its samples, oldest first.
    pub samples: Vec<Sample>,
    /// XID events: when, which.
    pub xids: Vec<(DateTime<Utc>, i64)>,
    /// When it went missing from its node, if it did.
    pub gone_at: Option<DateTime<Utc>>,
    /// Other tenants' shares of it during the window (a fractional booking's neighbours).
    pub others: Vec<(Span, u8)>,
}

/// An admin's change in the window (maintenance, a price, a retirement, a quota).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminChange {
    /// When.
    pub at: DateTime<Utc>,
    /// The audit action (`maintenance.set`).
    pub action: String,
    /// What it changed.
    pub target: String,
}

/// What an incident's rules read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The incident's window.
    pub window: Span,
    /// The booking's GPUs.
    pub gpus: Vec<GpuEvidence>,
    /// The node agent's report interval, seconds.
    pub report_interval_seconds: u32,
    /// Admin changes in the window (and the hour before it).
    pub admin_changes: Vec<AdminChange>,
    /// The node last reported before the window, if ever: a silence from the window's start
    /// counts from then; with no report before, the node was not there yet (a new node, a
    /// portal that just started) and nothing before its first report is a silence.
    pub reported_before: Option<DateTime<Utc>>,
}

/// When the rules speak up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thresholds {
    /// Throttling for at least this many minutes counts.
    pub throttle_minutes: i64,
    /// Memory at or above this share of the GPU's (percent) counts as exhausted.
    pub memory_percent: u8,
    /// Corrected ECC errors rising by at least this many counts.
    pub ecc_corrected_rise: u64,
    /// No report for this many intervals counts as the agent being silent.
    pub silent_intervals: u32,
    /// An admin change at most this long before the first symptom is cited.
    pub admin_lead_minutes: i64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            throttle_minutes: 1,
            memory_percent: 98,
            ecc_corrected_rise: 10,
            silent_intervals: 3,
            admin_lead_minutes: 60,
        }
    }
}

/// A fact the evidence holds, as a hypothesis cites it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fact", rename_all = "snake_case")]
pub enum Fact {
    /// The driver reported XID `code` on `gpu` at `at`.
    Xid {
        gpu: String,
        at: DateTime<Utc>,
        code: i64,
    },
    /// `gpu` was held back (`reasons`) for `minutes` between `from` and `to`, at up to
    /// `max_temperature_c` and down to `min_sm_clock_mhz`.
    Throttled {
        gpu: String,
        reasons: Vec<String>,
        minutes: i64,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        max_temperature_c: Option<i16>,
        min_sm_clock_mhz: Option<u32>,
    },
    /// `gpu`'s ECC error counters rose by so many during the window.
    EccRose {
        gpu: String,
        corrected: u64,
        uncorrected: u64,
    },
    /// The node agent sent nothing from `from` to `to`.
    AgentSilent {
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    },
    /// `gpu`'s memory was full: `used_mib` of `total_mib` at `at`.
    MemoryFull {
        gpu: String,
        at: DateTime<Utc>,
        used_mib: u64,
        total_mib: u64,
    },
    /// Other tenants held up to `quarters` of `gpu` for `minutes` of the window.
    SharedWith {
        gpu: String,
        quarters: u8,
        minutes: i64,
    },
    /// An admin changed something at `at`.
    AdminChange {
        at: DateTime<Utc>,
        action: String,
        target: String,
    },
    /// `gpu` went missing from its node at `at`.
    GpuGone { gpu: String, at: DateTime<Utc> },
}

/// What a hypothesis says went wrong, most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The GPU fell off the bus (XID 79).
    FellOffBus,
    /// The GPU went missing.
    GpuGone,
    /// A double-bit ECC error (XID 48), or uncorrected ECC errors rising.
    DoubleBitEcc,
    /// An error that needs a GPU reset.
    NeedsReset,
    /// An NVLink error.
    NvLink,
    /// The driver named its own recovery action (XID 154).
    DriverRecovery,
    /// The node agent was silent: the node or its network may have failed.
    AgentSilent,
    /// Thermal throttling.
    Thermal,
    /// Power throttling.
    Power,
    /// Corrected ECC errors rising: memory degrading.
    EccRising,
    /// The GPU's memory was exhausted.
    MemoryExhausted,
    /// Another tenant's load on the same GPU.
    SharedGpu,
    /// An application error.
    Application,
    /// An admin change just before the symptoms.
    AdminChange,
    /// An XID the rule set does not classify.
    UnknownXid,
}

impl Cause {
    /// Every cause, most severe first.
    pub const ALL: [Cause; 15] = [
        Cause::FellOffBus,
        Cause::GpuGone,
        Cause::DoubleBitEcc,
        Cause::NeedsReset,
        Cause::NvLink,
        Cause::DriverRecovery,
        Cause::AgentSilent,
        Cause::Thermal,
        Cause::Power,
        Cause::EccRising,
        Cause::MemoryExhausted,
        Cause::SharedGpu,
        Cause::Application,
        Cause::AdminChange,
        Cause::UnknownXid,
    ];

    /// As stored and sent (`fell_off_bus`).
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::FellOffBus => "fell_off_bus",
            Cause::GpuGone => "gpu_gone",
            Cause::DoubleBitEcc => "double_bit_ecc",
            Cause::NeedsReset => "needs_reset",
            Cause::NvLink => "nv_link",
            Cause::DriverRecovery => "driver_recovery",
            Cause::AgentSilent => "agent_silent",
            Cause::Thermal => "thermal",
            Cause::Power => "power",
            Cause::EccRising => "ecc_rising",
            Cause::MemoryExhausted => "memory_exhausted",
            Cause::SharedGpu => "shared_gpu",
            Cause::Application => "application",
            Cause::AdminChange => "admin_change",
            Cause::UnknownXid => "unknown_xid",
        }
    }

    /// From the stored text.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == raw)
    }
}

/// What to do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Reboot the host (and move the booking meanwhile).
    RebootHost,
    /// Reset the GPU.
    ResetGpu,
    /// Take the GPU out of service and have it checked.
    ServiceGpu,
    /// Check NVLink cabling and the fabric manager.
    CheckNvLink,
    /// Follow the recovery action the driver logged.
    FollowDriverAction,
    /// Check the node and its network.
    CheckNode,
    /// Check the cooling (fans, airflow, inlet temperature).
    CheckCooling,
    /// Check the power supply and the power limit.
    CheckPower,
    /// Use less GPU memory (smaller batches), or a GPU with more.
    ReduceMemory,
    /// Book a whole GPU, or another one, for work that needs it alone.
    BookWholeGpu,
    /// Restart the application and look at its logs.
    RestartApplication,
    /// Review the admin change.
    ReviewChange,
    /// Look the XID up in NVIDIA's catalogue.
    LookUpXid,
}

/// One line of reasoning: a cause, the facts behind it, the action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hypothesis {
    /// What went wrong.
    pub cause: Cause,
    /// The facts that triggered it.
    pub facts: Vec<Fact>,
    /// What to do.
    pub action: Action,
}

/// What was checked, and how much of it there was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checked {
    /// GPUs looked at.
    pub gpus: usize,
    /// Samples read.
    pub samples: usize,
    /// XID events read.
    pub xids: usize,
    /// Admin changes read.
    pub admin_changes: usize,
}

/// The rules' answer: hypotheses, most severe first (none: no fault found in the evidence), and
/// what was checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// The hypotheses.
    pub hypotheses: Vec<Hypothesis>,
    /// What was checked.
    pub checked: Checked,
}

impl Diagnosis {
    /// Whether the evidence shows no fault.
    pub fn no_fault_found(&self) -> bool {
        self.hypotheses.is_empty()
    }
}

/// Applies the rules to `evidence`.
pub fn diagnose(evidence: &Evidence, thresholds: &Thresholds) -> Diagnosis {
    let mut found: Vec<Hypothesis> = Vec::new();
    for gpu in &evidence.gpus {
        for &(at, code) in &gpu.xids {
            let fact = Fact::Xid {
                gpu: gpu.gpu.clone(),
                at,
                code,
            };
            let (cause, action) = match xid_class(code) {
                XidClass::Application => (Cause::Application, Action::RestartApplication),
                XidClass::ResetGpu => (Cause::NeedsReset, Action::ResetGpu),
                XidClass::DoubleBitEcc => (Cause::DoubleBitEcc, Action::ServiceGpu),
                XidClass::FellOffBus => (Cause::FellOffBus, Action::RebootHost),
                XidClass::NvLink => (Cause::NvLink, Action::CheckNvLink),
                XidClass::RecoveryAction => (Cause::DriverRecovery, Action::FollowDriverAction),
                XidClass::Other => (Cause::UnknownXid, Action::LookUpXid),
            };
            add(&mut found, cause, fact, action);
        }
        if let Some(at) = gpu.gone_at {
            add(
                &mut found,
                Cause::GpuGone,
                Fact::GpuGone {
                    gpu: gpu.gpu.clone(),
                    at,
                },
                Action::RebootHost,
            );
        }
        for (bits, cause, action) in [
            (THERMAL, Cause::Thermal, Action::CheckCooling),
            (POWER, Cause::Power, Action::CheckPower),
        ] {
            if let Some(fact) = throttled(gpu, bits, evidence, thresholds) {
                add(&mut found, cause, fact, action);
            }
        }
        if let Some((corrected, uncorrected)) = ecc_rise(&gpu.samples) {
            let fact = Fact::EccRose {
                gpu: gpu.gpu.clone(),
                corrected,
                uncorrected,
            };
            if uncorrected > 0 {
                add(&mut found, Cause::DoubleBitEcc, fact, Action::ServiceGpu);
            } else if corrected >= thresholds.ecc_corrected_rise {
                add(&mut found, Cause::EccRising, fact, Action::ServiceGpu);
            }
        }
        if let Some(fact) = memory_full(gpu, thresholds) {
            add(
                &mut found,
                Cause::MemoryExhausted,
                fact,
                Action::ReduceMemory,
            );
        }
        if let Some(fact) = shared(gpu, &evidence.window) {
            add(&mut found, Cause::SharedGpu, fact, Action::BookWholeGpu);
        }
    }
    for (from, to) in silences(evidence, thresholds) {
        add(
            &mut found,
            Cause::AgentSilent,
            Fact::AgentSilent { from, to },
            Action::CheckNode,
        );
    }
    // An admin change is a hypothesis only next to a symptom: at most the lead before the first.
    let first_symptom = found
        .iter()
        .flat_map(|h| &h.facts)
        .filter_map(fact_at)
        .min();
    if let Some(first) = first_symptom {
        let lead = TimeDelta::minutes(thresholds.admin_lead_minutes);
        for change in &evidence.admin_changes {
            if change.at <= first && first - change.at <= lead {
                add(
                    &mut found,
                    Cause::AdminChange,
                    Fact::AdminChange {
                        at: change.at,
                        action: change.action.clone(),
                        target: change.target.clone(),
                    },
                    Action::ReviewChange,
                );
            }
        }
    }
    found.sort_by_key(|h| h.cause);
    Diagnosis {
        hypotheses: found,
        checked: Checked {
            gpus: evidence.gpus.len(),
            samples: evidence.gpus.iter().map(|g| g.samples.len()).sum(),
            xids: evidence.gpus.iter().map(|g| g.xids.len()).sum(),
            admin_changes: evidence.admin_changes.len(),
        },
    }
}

/// Adds `fact` to the hypothesis of `cause`, opening it (with `action`) if there is none yet.
fn add(found: &mut Vec<Hypothesis>, cause: Cause, fact: Fact, action: Action) {
    match found.iter_mut().find(|h| h.cause == cause) {
        Some(hypothesis) => hypothesis.facts.push(fact),
        None => found.push(Hypothesis {
            cause,
            facts: vec![fact],
            action,
        }),
    }
}

/// When a fact happened (the start of a span).
fn fact_at(fact: &Fact) -> Option<DateTime<Utc>> {
    match fact {
        Fact::Xid { at, .. }
        | Fact::MemoryFull { at, .. }
        | Fact::GpuGone { at, .. }
        | Fact::AdminChange { at, .. } => Some(*at),
        Fact::Throttled { from, .. } | Fact::AgentSilent { from, .. } => Some(*from),
        Fact::EccRose { .. } | Fact::SharedWith { .. } => None,
    }
}

/// How long a sample stands for: until the next one, at most three report intervals.
fn sample_spans<'a>(
    samples: &'a [Sample],
    evidence: &Evidence,
) -> impl Iterator<Item = (&'a Sample, TimeDelta)> {
    let most = TimeDelta::seconds(i64::from(evidence.report_interval_seconds.max(1)) * 3);
    let end = evidence.window.end();
    samples.iter().enumerate().map(move |(i, sample)| {
        let next = samples.get(i + 1).map_or(end, |s| s.at);
        (sample, (next - sample.at).clamp(TimeDelta::zero(), most))
    })
}

/// `gpu`'s throttling for `bits` over the window, when it lasted long enough.
fn throttled(
    gpu: &GpuEvidence,
    bits: u64,
    evidence: &Evidence,
    thresholds: &Thresholds,
) -> Option<Fact> {
    let held: Vec<(&Sample, TimeDelta)> = sample_spans(&gpu.samples, evidence)
        .filter(|(s, _)| s.throttle_reasons.is_some_and(|mask| mask & bits != 0))
        .collect();
    let total: TimeDelta = held.iter().map(|(_, span)| *span).sum();
    if held.is_empty() || total < TimeDelta::minutes(thresholds.throttle_minutes) {
        return None;
    }
    let mask = held
        .iter()
        .filter_map(|(s, _)| s.throttle_reasons)
        .fold(0, |all, mask| all | (mask & bits));
    let (first, last) = (held[0].0, held[held.len() - 1]);
    Some(Fact::Throttled {
        gpu: gpu.gpu.clone(),
        reasons: crate::domain::telemetry::throttle_reason_names(mask),
        minutes: total.num_minutes(),
        from: first.at,
        to: last.0.at + last.1,
        max_temperature_c: held.iter().filter_map(|(s, _)| s.temperature_c).max(),
        min_sm_clock_mhz: held.iter().filter_map(|(s, _)| s.sm_clock_mhz).min(),
    })
}

/// How much the ECC counters rose between the first and the last sample that has them.
fn ecc_rise(samples: &[Sample]) -> Option<(u64, u64)> {
    let rise = |read: fn(&Sample) -> Option<u64>| -> u64 {
        let mut values = samples.iter().filter_map(read);
        let first = values.next();
        let last = values.next_back();
        match (first, last) {
            (Some(first), Some(last)) => last.saturating_sub(first),
            _ => 0,
        }
    };
    let (corrected, uncorrected) = (rise(|s| s.ecc_corrected), rise(|s| s.ecc_uncorrected));
    (corrected > 0 || uncorrected > 0).then_some((corrected, uncorrected))
}

/// The first sample at which `gpu`'s memory was full.
fn memory_full(gpu: &GpuEvidence, thresholds: &Thresholds) -> Option<Fact> {
    if gpu.memory_total_mib == 0 {
        return None;
    }
    let limit = gpu.memory_total_mib * u64::from(thresholds.memory_percent) / 100;
    gpu.samples
        .iter()
        .find(|s| s.memory_used_mib.is_some_and(|used| used >= limit))
        .map(|s| Fact::MemoryFull {
            gpu: gpu.gpu.clone(),
            at: s.at,
            used_mib: s.memory_used_mib.unwrap_or_default(),
            total_mib: gpu.memory_total_mib,
        })
}

/// Other tenants on `gpu` during `window`: their largest share, and for how long.
fn shared(gpu: &GpuEvidence, window: &Span) -> Option<Fact> {
    let overlapping: Vec<&(Span, u8)> = gpu
        .others
        .iter()
        .filter(|(w, q)| *q > 0 && w.overlaps(window))
        .collect();
    if overlapping.is_empty() {
        return None;
    }
    let minutes = overlapping
        .iter()
        .map(|(w, _)| (w.end().min(window.end()) - w.start().max(window.start())).num_minutes())
        .max()
        .unwrap_or(0);
    Some(Fact::SharedWith {
        gpu: gpu.gpu.clone(),
        quarters: overlapping.iter().map(|(_, q)| *q).max().unwrap_or(0),
        minutes,
    })
}

/// Stretches of the window with no sample from any GPU, longer than the silence threshold.
fn silences(evidence: &Evidence, thresholds: &Thresholds) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
    let longest = TimeDelta::seconds(
        i64::from(evidence.report_interval_seconds.max(1))
            * i64::from(thresholds.silent_intervals.max(1)),
    );
    let mut times: Vec<DateTime<Utc>> = evidence
        .gpus
        .iter()
        .flat_map(|g| g.samples.iter().map(|s| s.at))
        .filter(|at| evidence.window.contains(*at))
        .collect();
    times.sort_unstable();
    times.dedup();
    let mut marks: Vec<DateTime<Utc>> = evidence
        .reported_before
        .map(|_| evidence.window.start())
        .into_iter()
        .collect();
    marks.extend(times);
    marks.push(evidence.window.end());
    marks
        .windows(2)
        .filter(|pair| pair[1] - pair[0] > longest)
        .map(|pair| (pair[0], pair[1]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cause_names_are_the_serialised_ones() {
        for cause in Cause::ALL {
            assert_eq!(serde_json::to_value(cause).unwrap(), cause.as_str());
            assert_eq!(Cause::parse(cause.as_str()), Some(cause));
        }
    }
    use chrono::TimeZone;

    fn at(minute: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 4, 10, 0, 0).unwrap() + TimeDelta::minutes(minute)
    }

    fn sample(minute: i64) -> Sample {
        Sample {
            at: at(minute),
            temperature_c: Some(60),
            sm_clock_mhz: Some(1980),
            throttle_reasons: Some(0),
            memory_used_mib: Some(20_000),
            ecc_corrected: Some(0),
            ecc_uncorrected: Some(0),
        }
    }

    /// One GPU sampled every minute for an hour, nothing wrong.
    fn clean() -> Evidence {
        Evidence {
            window: Span::new(at(0), at(60)).unwrap(),
            gpus: vec![GpuEvidence {
                gpu: "node-1 #0".into(),
                memory_total_mib: 81_920,
                samples: (0..60).map(sample).collect(),
                xids: vec![],
                gone_at: None,
                others: vec![],
            }],
            report_interval_seconds: 60,
            admin_changes: vec![],
            reported_before: Some(at(-1)),
        }
    }

    #[test]
    fn the_xid_catalogue_classes() {
        for (code, class) in [
            (13, XidClass::Application),
            (31, XidClass::Application),
            (94, XidClass::Application),
            (46, XidClass::ResetGpu),
            (62, XidClass::ResetGpu),
            (64, XidClass::ResetGpu),
            (95, XidClass::ResetGpu),
            (109, XidClass::ResetGpu),
            (119, XidClass::ResetGpu),
            (120, XidClass::ResetGpu),
            (48, XidClass::DoubleBitEcc),
            (79, XidClass::FellOffBus),
            (74, XidClass::NvLink),
            (154, XidClass::RecoveryAction),
            (999, XidClass::Other),
        ] {
            assert_eq!(xid_class(code), class, "XID {code}");
        }
    }

    #[test]
    fn clean_evidence_finds_no_fault_and_says_what_it_checked() {
        let diagnosis = diagnose(&clean(), &Thresholds::default());
        assert!(diagnosis.no_fault_found(), "{diagnosis:?}");
        assert_eq!(
            diagnosis.checked,
            Checked {
                gpus: 1,
                samples: 60,
                xids: 0,
                admin_changes: 0
            }
        );
    }

    #[test]
    fn xid_79_means_reboot_the_host_and_cites_the_event() {
        let mut evidence = clean();
        evidence.gpus[0].xids.push((at(30), 79));
        evidence.gpus[0].samples.truncate(30);
        let diagnosis = diagnose(&evidence, &Thresholds::default());
        let first = &diagnosis.hypotheses[0];
        assert_eq!(first.cause, Cause::FellOffBus);
        assert_eq!(first.action, Action::RebootHost);
        assert_eq!(
            first.facts,
            vec![Fact::Xid {
                gpu: "node-1 #0".into(),
                at: at(30),
                code: 79
            }]
        );
        // The GPU stopped reporting after it: the agent's silence is cited too, after it.
        assert!(
            diagnosis
                .hypotheses
                .iter()
                .any(|h| h.cause == Cause::AgentSilent)
        );
    }

    #[test]
    fn thermal_throttling_comes_with_its_numbers() {
        let mut evidence = clean();
        for s in &mut evidence.gpus[0].samples[20..35] {
            s.throttle_reasons = Some(0x40);
            s.temperature_c = Some(91);
            s.sm_clock_mhz = Some(1110);
        }
        evidence.gpus[0].samples[25].temperature_c = Some(94);
        let diagnosis = diagnose(&evidence, &Thresholds::default());
        assert_eq!(diagnosis.hypotheses.len(), 1, "{diagnosis:?}");
        let thermal = &diagnosis.hypotheses[0];
        assert_eq!(thermal.cause, Cause::Thermal);
        assert_eq!(thermal.action, Action::CheckCooling);
        assert_eq!(
            thermal.facts,
            vec![Fact::Throttled {
                gpu: "node-1 #0".into(),
                reasons: vec!["HW_THERMAL_SLOWDOWN".into()],
                minutes: 15,
                from: at(20),
                to: at(35),
                max_temperature_c: Some(94),
                min_sm_clock_mhz: Some(1110),
            }]
        );
        // Under a minute is not worth a hypothesis.
        let mut brief = clean();
        brief.gpus[0].samples.push(Sample {
            throttle_reasons: Some(0x80),
            ..sample(59)
        });
        brief.gpus[0].samples.remove(59);
        let thresholds = Thresholds {
            throttle_minutes: 2,
            ..Thresholds::default()
        };
        assert!(diagnose(&brief, &thresholds).no_fault_found());
    }

    #[test]
    fn a_gpu_at_its_power_cap_under_full_load_is_not_a_fault() {
        // What a real H200 reported under a bf16 matrix-product load: SW power cap only.
        let mut evidence = clean();
        for s in &mut evidence.gpus[0].samples[10..40] {
            s.throttle_reasons = Some(0x4);
            s.sm_clock_mhz = Some(1455);
            s.temperature_c = Some(56);
        }
        assert!(diagnose(&evidence, &Thresholds::default()).no_fault_found());
        // The power brake is.
        for s in &mut evidence.gpus[0].samples[10..40] {
            s.throttle_reasons = Some(0x80);
        }
        let diagnosis = diagnose(&evidence, &Thresholds::default());
        assert_eq!(diagnosis.hypotheses[0].cause, Cause::Power);
    }

    #[test]
    fn ecc_memory_neighbours_and_an_admin_change_before_the_symptom() {
        let mut evidence = clean();
        let gpu = &mut evidence.gpus[0];
        gpu.samples[40].ecc_corrected = Some(3);
        gpu.samples[59].ecc_corrected = Some(25);
        gpu.samples[50].memory_used_mib = Some(81_000);
        gpu.others.push((Span::new(at(-30), at(45)).unwrap(), 2));
        evidence.admin_changes = vec![
            AdminChange {
                at: at(-10),
                action: "price.set".into(),
                target: "NVIDIA H100".into(),
            },
            AdminChange {
                at: at(55),
                action: "quota.set".into(),
                target: "team 3".into(),
            },
        ];
        let diagnosis = diagnose(&evidence, &Thresholds::default());
        let causes: Vec<Cause> = diagnosis.hypotheses.iter().map(|h| h.cause).collect();
        assert_eq!(
            causes,
            vec![
                Cause::EccRising,
                Cause::MemoryExhausted,
                Cause::SharedGpu,
                Cause::AdminChange
            ]
        );
        assert!(diagnosis.hypotheses[0].facts.contains(&Fact::EccRose {
            gpu: "node-1 #0".into(),
            corrected: 25,
            uncorrected: 0
        }));
        assert!(diagnosis.hypotheses[2].facts.contains(&Fact::SharedWith {
            gpu: "node-1 #0".into(),
            quarters: 2,
            minutes: 45
        }));
        // Only the change before the first symptom (the memory at 10:50) is cited.
        assert_eq!(diagnosis.hypotheses[3].facts.len(), 1);
        // Uncorrected errors rising are a double-bit fault.
        let mut dbe = clean();
        dbe.gpus[0].samples[59].ecc_uncorrected = Some(1);
        assert_eq!(
            diagnose(&dbe, &Thresholds::default()).hypotheses[0].cause,
            Cause::DoubleBitEcc
        );
    }

    #[test]
    fn a_silent_agent_is_a_hypothesis_with_its_gap() {
        let mut evidence = clean();
        evidence.gpus[0]
            .samples
            .retain(|s| s.at < at(10) || s.at >= at(20));
        let diagnosis = diagnose(&evidence, &Thresholds::default());
        assert_eq!(diagnosis.hypotheses.len(), 1, "{diagnosis:?}");
        assert_eq!(
            diagnosis.hypotheses[0].facts,
            vec![Fact::AgentSilent {
                from: at(9),
                to: at(20)
            }]
        );
    }
}
