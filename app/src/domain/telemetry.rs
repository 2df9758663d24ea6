//! GPU telemetry: what a node agent reports (inventory, samples, events), the rules a report
//! must follow, one-minute rollups, and when a node counts as silent.
//!
//! These types are the wire format between `berth agent` and the portal as well as what the
//! pages show, so the agent, the portal and the browser agree by construction.

use super::problem::Problem;
use chrono::{DateTime, Duration, DurationRound, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a node's values come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// Read from the GPU through NVML.
    Nvml,
    /// Generated: plausible, varying values for demos and machines without NVML.
    Simulated,
}

impl SourceKind {
    /// `nvml` or `simulated`, as stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Nvml => "nvml",
            Self::Simulated => "simulated",
        }
    }

    /// Parses what [`SourceKind::as_str`] wrote.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "nvml" => Some(Self::Nvml),
            "simulated" => Some(Self::Simulated),
            _ => None,
        }
    }
}

/// A GPU as the agent finds it on its host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// NVML UUID (`GPU-…`).
    pub uuid: String,
    /// Model name as NVML reports it.
    pub name: String,
    /// PCI bus id (`00000000:17:00.0`), when known.
    pub pci_bus_id: Option<String>,
    /// Total memory in MiB.
    pub memory_total_mib: u64,
    /// NVML device index on the host.
    pub device_index: u32,
    /// The device file's minor number (`/dev/nvidia<minor>`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minor_number: Option<u32>,
}

/// What an agent sends when it starts and whenever its host's GPUs change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    /// The host's name.
    pub hostname: String,
    /// NVIDIA driver version, when known.
    pub driver_version: Option<String>,
    /// Where the values come from.
    pub source: SourceKind,
    /// Seconds between samples.
    pub interval_seconds: u32,
    /// Every GPU the host has now.
    pub gpus: Vec<GpuInfo>,
}

/// A process using a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuProcess {
    /// Process id on the host.
    pub pid: u32,
    /// GPU memory it uses in MiB, when NVML can tell.
    pub used_memory_mib: Option<u64>,
}

/// The values read from one GPU at one moment. A value the GPU does not support is `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Readings {
    /// GPU (SM) utilisation, percent.
    pub gpu_util: Option<u8>,
    /// Memory-controller utilisation, percent.
    pub mem_util: Option<u8>,
    /// Memory in use, MiB.
    pub memory_used_mib: Option<u64>,
    /// Temperature, °C.
    pub temperature_c: Option<i16>,
    /// Power draw, milliwatts.
    pub power_mw: Option<u32>,
    /// Enforced power limit, milliwatts.
    pub power_limit_mw: Option<u32>,
    /// SM clock, MHz.
    pub sm_clock_mhz: Option<u32>,
    /// NVML clock throttle reasons (bit mask).
    pub throttle_reasons: Option<u64>,
    /// Volatile corrected ECC errors.
    pub ecc_corrected: Option<u64>,
    /// Volatile uncorrected ECC errors.
    pub ecc_uncorrected: Option<u64>,
}

/// One sample of one GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuSample {
    /// Which GPU (NVML UUID).
    pub uuid: String,
    /// When it was read (UTC).
    pub at: DateTime<Utc>,
    /// The values.
    #[serde(flatten)]
    pub readings: Readings,
    /// Compute processes on the GPU.
    #[serde(default)]
    pub processes: Vec<GpuProcess>,
}

/// Kinds of GPU event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// An XID error reported by the driver (`code` is the XID).
    Xid,
    /// The clock throttle reasons changed (`code` is the new mask).
    Throttle,
    /// The GPU appeared in its node's inventory.
    Added,
    /// The GPU is no longer reported by its node.
    Vanished,
    /// A vanished GPU is reported again.
    Returned,
}

impl EventKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Xid => "xid",
            Self::Throttle => "throttle",
            Self::Added => "added",
            Self::Vanished => "vanished",
            Self::Returned => "returned",
        }
    }

    /// Parses a stored name.
    pub fn parse(raw: &str) -> Option<Self> {
        [
            Self::Xid,
            Self::Throttle,
            Self::Added,
            Self::Vanished,
            Self::Returned,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == raw)
    }
}

/// An event an agent reports (XID errors and throttle changes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportedEvent {
    /// Which GPU (NVML UUID).
    pub uuid: String,
    /// When it happened (UTC).
    pub at: DateTime<Utc>,
    /// What happened.
    pub kind: EventKind,
    /// The XID or the throttle mask.
    pub code: Option<i64>,
}

/// One push from an agent: samples and events, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Report {
    /// Samples.
    #[serde(default)]
    pub samples: Vec<GpuSample>,
    /// Events.
    #[serde(default)]
    pub events: Vec<ReportedEvent>,
    /// What the agent did and saw about access to the GPUs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub access: Vec<AccessEvent>,
    /// Where the preparation of bookings' environments stands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub environments: Vec<crate::domain::profile::PrepReport>,
}

/// Kinds of access event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessKind {
    /// The holder of a lease got access to the GPU.
    Granted,
    /// The lease ended: access taken away.
    Revoked,
    /// A process was sent SIGTERM.
    Terminated,
    /// A process was sent SIGKILL after the grace time.
    Killed,
    /// A process of someone who holds no lease on the GPU.
    Unauthorized,
    /// A holder's process uses more memory than their share of the GPU.
    OverShare,
}

impl AccessKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Granted => "granted",
            Self::Revoked => "revoked",
            Self::Terminated => "terminated",
            Self::Killed => "killed",
            Self::Unauthorized => "unauthorized",
            Self::OverShare => "over_share",
        }
    }

    /// Parses a stored name.
    pub fn parse(raw: &str) -> Option<Self> {
        [
            Self::Granted,
            Self::Revoked,
            Self::Terminated,
            Self::Killed,
            Self::Unauthorized,
            Self::OverShare,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == raw)
    }
}

/// What an agent did or saw about access to a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessEvent {
    /// Which GPU (NVML UUID).
    pub uuid: String,
    /// When (UTC).
    pub at: DateTime<Utc>,
    /// What.
    pub kind: AccessKind,
    /// The lease it concerns.
    #[serde(default)]
    pub reservation_id: Option<i64>,
    /// The process.
    #[serde(default)]
    pub pid: Option<u32>,
    /// Its owner's UID on the node.
    #[serde(default)]
    pub uid: Option<u32>,
    /// The owner's user name, or the holder's login.
    #[serde(default)]
    pub user: Option<String>,
    /// GPU memory the process used, MiB.
    #[serde(default)]
    pub memory_mib: Option<u64>,
}

/// An access event as the pages and the API show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuAccessEvent {
    /// The GPU.
    pub gpu_id: i64,
    /// Its UUID.
    pub uuid: String,
    /// The lease.
    pub reservation_id: Option<i64>,
    /// When.
    pub at: DateTime<Utc>,
    /// What.
    pub kind: AccessKind,
    /// The process.
    pub pid: Option<i64>,
    /// Its owner's UID.
    pub uid: Option<i64>,
    /// Its owner's name, or the holder's login.
    pub user: Option<String>,
    /// Memory, MiB.
    pub memory_mib: Option<i64>,
}

/// A stored event, as the API and pages show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuEvent {
    /// Database id.
    pub id: i64,
    /// The GPU.
    pub gpu_id: i64,
    /// When it happened (UTC).
    pub at: DateTime<Utc>,
    /// What happened.
    pub kind: EventKind,
    /// The XID or the throttle mask.
    pub code: Option<i64>,
}

/// Most samples one report may carry (an hour of catch-up for 8 GPUs at one per second fits
/// in a few reports).
pub const MAX_SAMPLES_PER_REPORT: usize = 10_000;
/// Most events one report may carry.
pub const MAX_EVENTS_PER_REPORT: usize = 1_000;
/// Most GPUs one node may register.
pub const MAX_GPUS_PER_NODE: usize = 64;
/// Most processes listed per GPU sample.
pub const MAX_PROCESSES: usize = 256;
/// How far ahead of the portal's clock an agent's clock may run.
pub const MAX_CLOCK_SKEW: Duration = Duration::minutes(5);

/// Checks a registration; the error names the field at fault.
pub fn validate_registration(registration: &Registration) -> Result<(), (String, Problem)> {
    if registration.hostname.trim().is_empty() || registration.hostname.len() > 255 {
        return Err(("hostname".into(), Problem::Name { max: 255 }));
    }
    // These texts become `/metrics` label values and page text: no control characters.
    no_control_characters("hostname", &registration.hostname)?;
    if let Some(driver) = &registration.driver_version {
        no_control_characters("driver_version", driver)?;
        if driver.len() > 64 {
            return Err(("driver_version".into(), Problem::Name { max: 64 }));
        }
    }
    if !(1..=3600).contains(&registration.interval_seconds) {
        return Err((
            "interval_seconds".into(),
            Problem::OutOfRange { min: 1, max: 3600 },
        ));
    }
    if registration.gpus.len() > MAX_GPUS_PER_NODE {
        return Err((
            "gpus".into(),
            Problem::TooMany {
                max: MAX_GPUS_PER_NODE,
            },
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for (i, gpu) in registration.gpus.iter().enumerate() {
        check_uuid(&gpu.uuid).map_err(|problem| (format!("gpus[{i}].uuid"), problem))?;
        if !seen.insert(gpu.uuid.as_str()) {
            return Err((format!("gpus[{i}].uuid"), Problem::GpuTwice));
        }
        if gpu.name.trim().is_empty() || gpu.name.len() > 128 {
            return Err((format!("gpus[{i}].name"), Problem::Name { max: 128 }));
        }
        no_control_characters(&format!("gpus[{i}].name"), &gpu.name)?;
        if let Some(bus) = &gpu.pci_bus_id {
            no_control_characters(&format!("gpus[{i}].pci_bus_id"), bus)?;
            if bus.len() > 64 {
                return Err((format!("gpus[{i}].pci_bus_id"), Problem::Name { max: 64 }));
            }
        }
        if !(1..=16 * 1024 * 1024).contains(&gpu.memory_total_mib) {
            return Err((
                format!("gpus[{i}].memory_total_mib"),
                Problem::OutOfRange {
                    min: 1,
                    max: 16 * 1024 * 1024,
                },
            ));
        }
        if gpu.device_index > 1023 {
            return Err((
                format!("gpus[{i}].device_index"),
                Problem::OutOfRange { min: 0, max: 1023 },
            ));
        }
    }
    Ok(())
}

/// Refuses a text with a control character (a line break would split a `/metrics` line).
fn no_control_characters(field: &str, value: &str) -> Result<(), (String, Problem)> {
    if value.chars().any(char::is_control) {
        return Err((
            field.to_owned(),
            Problem::Unreadable {
                detail: format!("{field} may not contain control characters"),
            },
        ));
    }
    Ok(())
}

fn check_uuid(uuid: &str) -> Result<(), Problem> {
    let ok = !uuid.is_empty()
        && uuid.len() <= 96
        && uuid
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == ':' || c == '.');
    if ok { Ok(()) } else { Err(Problem::BadUuid) }
}

/// Checks a report against the portal's clock: values in range, times no older than `keep`
/// (the raw-sample window) and not from the future. The error names the field at fault.
pub fn validate_report(
    report: &Report,
    now: DateTime<Utc>,
    keep: Duration,
) -> Result<(), (String, Problem)> {
    if report.samples.len() > MAX_SAMPLES_PER_REPORT {
        return Err((
            "samples".into(),
            Problem::TooMany {
                max: MAX_SAMPLES_PER_REPORT,
            },
        ));
    }
    if report.events.len() > MAX_EVENTS_PER_REPORT {
        return Err((
            "events".into(),
            Problem::TooMany {
                max: MAX_EVENTS_PER_REPORT,
            },
        ));
    }
    if report.environments.len() > MAX_EVENTS_PER_REPORT {
        return Err((
            "environments".into(),
            Problem::TooMany {
                max: MAX_EVENTS_PER_REPORT,
            },
        ));
    }
    let check_time = |at: DateTime<Utc>| {
        if at > now + MAX_CLOCK_SKEW || at < now - keep {
            Err(Problem::OutsideWindow {
                hours: keep.num_hours(),
            })
        } else {
            Ok(())
        }
    };
    for (i, prep) in report.environments.iter().enumerate() {
        check_time(prep.at).map_err(|p| (format!("environments[{i}].at"), p))?;
    }
    for (i, sample) in report.samples.iter().enumerate() {
        let field = |name: &str| format!("samples[{i}].{name}");
        check_uuid(&sample.uuid).map_err(|p| (field("uuid"), p))?;
        check_time(sample.at).map_err(|p| (field("at"), p))?;
        let r = &sample.readings;
        in_range(r.gpu_util.map(i64::from), 0, 100).map_err(|p| (field("gpu_util"), p))?;
        in_range(r.mem_util.map(i64::from), 0, 100).map_err(|p| (field("mem_util"), p))?;
        in_range(r.temperature_c.map(i64::from), -50, 200)
            .map_err(|p| (field("temperature_c"), p))?;
        in_range(r.memory_used_mib.map(clamp_i64), 0, 16 * 1024 * 1024)
            .map_err(|p| (field("memory_used_mib"), p))?;
        in_range(r.power_mw.map(i64::from), 0, 10_000_000).map_err(|p| (field("power_mw"), p))?;
        in_range(r.power_limit_mw.map(i64::from), 0, 10_000_000)
            .map_err(|p| (field("power_limit_mw"), p))?;
        in_range(r.sm_clock_mhz.map(i64::from), 0, 20_000)
            .map_err(|p| (field("sm_clock_mhz"), p))?;
        in_range(r.ecc_corrected.map(clamp_i64), 0, i64::MAX - 1)
            .map_err(|p| (field("ecc_corrected"), p))?;
        in_range(r.ecc_uncorrected.map(clamp_i64), 0, i64::MAX - 1)
            .map_err(|p| (field("ecc_uncorrected"), p))?;
        in_range(r.throttle_reasons.map(clamp_i64), 0, i64::MAX - 1)
            .map_err(|p| (field("throttle_reasons"), p))?;
        if sample.processes.len() > MAX_PROCESSES {
            return Err((field("processes"), Problem::TooMany { max: MAX_PROCESSES }));
        }
    }
    for (i, event) in report.events.iter().enumerate() {
        let field = |name: &str| format!("events[{i}].{name}");
        check_uuid(&event.uuid).map_err(|p| (field("uuid"), p))?;
        check_time(event.at).map_err(|p| (field("at"), p))?;
        if !matches!(event.kind, EventKind::Xid | EventKind::Throttle) {
            return Err((field("kind"), Problem::BadEventKind));
        }
    }
    if report.access.len() > MAX_EVENTS_PER_REPORT {
        return Err((
            "access".into(),
            Problem::TooMany {
                max: MAX_EVENTS_PER_REPORT,
            },
        ));
    }
    for (i, event) in report.access.iter().enumerate() {
        let field = |name: &str| format!("access[{i}].{name}");
        check_uuid(&event.uuid).map_err(|p| (field("uuid"), p))?;
        check_time(event.at).map_err(|p| (field("at"), p))?;
        if let Some(user) = &event.user {
            if user.is_empty() || user.len() > 64 {
                return Err((field("user"), Problem::Name { max: 64 }));
            }
            no_control_characters(&field("user"), user)?;
        }
        in_range(event.memory_mib.map(clamp_i64), 0, 16 * 1024 * 1024)
            .map_err(|p| (field("memory_mib"), p))?;
    }
    Ok(())
}

fn clamp_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn in_range(value: Option<i64>, min: i64, max: i64) -> Result<(), Problem> {
    match value {
        Some(v) if v < min || v > max => Err(Problem::OutOfRange { min, max }),
        _ => Ok(()),
    }
}

/// Throttle reason bits as NVML names them.
pub const THROTTLE_REASONS: [(u64, &str); 9] = [
    (0x1, "GPU_IDLE"),
    (0x2, "APPLICATIONS_CLOCKS_SETTING"),
    (0x4, "SW_POWER_CAP"),
    (0x8, "HW_SLOWDOWN"),
    (0x10, "SYNC_BOOST"),
    (0x20, "SW_THERMAL_SLOWDOWN"),
    (0x40, "HW_THERMAL_SLOWDOWN"),
    (0x80, "HW_POWER_BRAKE_SLOWDOWN"),
    (0x100, "DISPLAY_CLOCK_SETTING"),
];

/// The names of the bits set in a throttle mask (unknown bits as hex).
pub fn throttle_reason_names(mask: u64) -> Vec<String> {
    let mut names: Vec<String> = THROTTLE_REASONS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, name)| (*name).to_owned())
        .collect();
    let known = THROTTLE_REASONS.iter().fold(0, |acc, (bit, _)| acc | bit);
    if mask & !known != 0 {
        names.push(format!("0x{:x}", mask & !known));
    }
    names
}

/// The reasons that mean the GPU is held back (idle and the application clock setting are
/// normal states, not worth an event).
pub fn notable_throttle(mask: u64) -> u64 {
    mask & !0x3
}

/// Whether a change from `before` to `after` is worth a throttle event.
pub fn throttle_changed(before: Option<u64>, after: Option<u64>) -> bool {
    match (before, after) {
        (Some(a), Some(b)) => notable_throttle(a) != notable_throttle(b),
        (None, Some(b)) => notable_throttle(b) != 0,
        _ => false,
    }
}

/// A node counts as silent when nothing arrived for three report intervals (at least 15 s).
pub fn is_stale(
    last_seen: Option<DateTime<Utc>>,
    interval_seconds: u32,
    now: DateTime<Utc>,
) -> bool {
    let allowed = Duration::seconds(i64::from(interval_seconds.max(5)) * 3);
    last_seen.is_none_or(|seen| now - seen > allowed)
}

/// Minimum, mean and maximum of one value over a minute.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    /// Smallest.
    pub min: f64,
    /// Mean.
    pub avg: f64,
    /// Largest.
    pub max: f64,
}

/// One minute of one GPU, summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollup {
    /// The GPU.
    pub gpu_id: i64,
    /// Start of the minute (UTC).
    pub minute: DateTime<Utc>,
    /// Samples in the minute.
    pub samples: u32,
    /// GPU utilisation, percent.
    pub gpu_util: Option<Stat>,
    /// Memory used, MiB.
    pub memory_used_mib: Option<Stat>,
    /// Temperature, °C.
    pub temperature_c: Option<Stat>,
    /// Power draw, watts.
    pub power_w: Option<Stat>,
}

#[derive(Default)]
struct Acc {
    n: u32,
    min: f64,
    max: f64,
    sum: f64,
}

impl Acc {
    fn add(&mut self, value: Option<f64>) {
        let Some(v) = value else { return };
        if self.n == 0 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.sum += v;
        self.n += 1;
    }

    fn stat(&self) -> Option<Stat> {
        (self.n > 0).then(|| Stat {
            min: self.min,
            avg: self.sum / f64::from(self.n),
            max: self.max,
        })
    }
}

/// The start of the minute `at` falls in.
pub fn minute_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(Duration::minutes(1)).unwrap_or(at)
}

/// Summarises samples `(gpu id, time, values)` per GPU and minute, ordered by GPU then minute.
pub fn roll_up<'a>(
    samples: impl IntoIterator<Item = (i64, DateTime<Utc>, &'a Readings)>,
) -> Vec<Rollup> {
    let mut groups: BTreeMap<(i64, DateTime<Utc>), (u32, [Acc; 4])> = BTreeMap::new();
    for (gpu_id, at, readings) in samples {
        let (count, accs) = groups.entry((gpu_id, minute_of(at))).or_default();
        *count += 1;
        accs[0].add(readings.gpu_util.map(f64::from));
        accs[1].add(readings.memory_used_mib.map(|v| v as f64));
        accs[2].add(readings.temperature_c.map(f64::from));
        accs[3].add(readings.power_mw.map(|mw| f64::from(mw) / 1000.0));
    }
    groups
        .into_iter()
        .map(|((gpu_id, minute), (samples, accs))| Rollup {
            gpu_id,
            minute,
            samples,
            gpu_util: accs[0].stat(),
            memory_used_mib: accs[1].stat(),
            temperature_c: accs[2].stat(),
            power_w: accs[3].stat(),
        })
        .collect()
}

/// The latest state of one GPU for the live list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveGpu {
    /// The GPU.
    pub gpu_id: i64,
    /// When the values were read.
    pub at: DateTime<Utc>,
    /// The values.
    pub readings: Readings,
    /// Processes on the GPU.
    pub processes: Vec<GpuProcess>,
}

/// The live state of one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveNode {
    /// The node.
    pub node_id: i64,
    /// Where its values come from (`None`: no agent has reported).
    pub source: Option<SourceKind>,
    /// Its agent has been silent too long.
    pub stale: bool,
    /// Last report.
    pub last_seen: Option<DateTime<Utc>>,
    /// Driver version.
    pub driver_version: Option<String>,
}

/// Live values of the whole fleet: nodes and their GPUs' latest readings.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LiveFleet {
    /// Per node.
    pub nodes: Vec<LiveNode>,
    /// Per GPU with a reading.
    pub gpus: Vec<LiveGpu>,
    /// GPUs no longer reported by their node.
    pub vanished: Vec<i64>,
}

/// One point of a chart: a raw sample (min = avg = max) or a rollup.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChartPoint {
    /// When.
    pub at: DateTime<Utc>,
    /// The value range.
    pub value: Stat,
}

/// A raw sample as the history API returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawPoint {
    /// When it was read.
    pub at: DateTime<Utc>,
    /// The values.
    #[serde(flatten)]
    pub readings: Readings,
}

/// A GPU's history over a range: raw samples for short recent ranges, one-minute rollups
/// otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "resolution", content = "points")]
pub enum Series {
    /// Every sample.
    #[serde(rename = "raw")]
    Raw(Vec<RawPoint>),
    /// One point per minute.
    #[serde(rename = "1m")]
    Minute(Vec<Rollup>),
}

/// The values charted on the GPU page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Metric {
    /// GPU utilisation, percent.
    GpuUtil,
    /// Memory used, MiB.
    MemoryUsed,
    /// Temperature, °C.
    Temperature,
    /// Power draw, W.
    Power,
    /// SM clock, MHz (raw samples only: rollups do not keep it).
    SmClock,
}

impl Series {
    /// The points of one value, for a chart.
    pub fn chart(&self, metric: Metric) -> Vec<ChartPoint> {
        match self {
            Self::Raw(points) => points
                .iter()
                .filter_map(|p| {
                    let r = &p.readings;
                    let v = match metric {
                        Metric::GpuUtil => r.gpu_util.map(f64::from),
                        Metric::MemoryUsed => r.memory_used_mib.map(|v| v as f64),
                        Metric::Temperature => r.temperature_c.map(f64::from),
                        Metric::Power => r.power_mw.map(|mw| f64::from(mw) / 1000.0),
                        Metric::SmClock => r.sm_clock_mhz.map(f64::from),
                    }?;
                    Some(ChartPoint {
                        at: p.at,
                        value: Stat {
                            min: v,
                            avg: v,
                            max: v,
                        },
                    })
                })
                .collect(),
            Self::Minute(rollups) => rollups
                .iter()
                .filter_map(|r| {
                    let value = match metric {
                        Metric::GpuUtil => r.gpu_util,
                        Metric::MemoryUsed => r.memory_used_mib,
                        Metric::Temperature => r.temperature_c,
                        Metric::Power => r.power_w,
                        Metric::SmClock => None,
                    }?;
                    Some(ChartPoint {
                        at: r.minute,
                        value,
                    })
                })
                .collect(),
        }
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        match self {
            Self::Raw(points) => points.len(),
            Self::Minute(points) => points.len(),
        }
    }

    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Memory points in MiB as GiB, for a chart.
pub fn in_gib(points: Vec<ChartPoint>) -> Vec<ChartPoint> {
    points
        .into_iter()
        .map(|p| ChartPoint {
            at: p.at,
            value: Stat {
                min: p.value.min / 1024.0,
                avg: p.value.avg / 1024.0,
                max: p.value.max / 1024.0,
            },
        })
        .collect()
}

/// Longest range the history API serves.
pub const MAX_HISTORY_DAYS: i64 = 31;
/// Longest range served as raw samples.
pub const MAX_RAW_RANGE: Duration = Duration::hours(6);

/// Whether `[from, to)` is served raw: short, and within the raw window.
pub fn wants_raw(
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    now: DateTime<Utc>,
    raw_keep: Duration,
) -> bool {
    to - from <= MAX_RAW_RANGE && from >= now - raw_keep
}

/// A GPU's history and what it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuHistory {
    /// The GPU.
    pub gpu_id: i64,
    /// Start of the range.
    pub from: DateTime<Utc>,
    /// End of the range.
    pub to: DateTime<Utc>,
    /// Where the values come from (`None`: nothing reported yet).
    pub source: Option<SourceKind>,
    /// Whether the values are simulated.
    pub simulated: bool,
    /// The points.
    #[serde(flatten)]
    pub series: Series,
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, h, m, s).unwrap()
    }

    fn sample(uuid: &str, when: DateTime<Utc>) -> GpuSample {
        GpuSample {
            uuid: uuid.into(),
            at: when,
            readings: Readings {
                gpu_util: Some(50),
                temperature_c: Some(60),
                ..Readings::default()
            },
            processes: vec![],
        }
    }

    #[test]
    fn rollups_take_min_mean_and_max_per_gpu_and_minute() {
        let values = [10u8, 30, 20];
        let readings: Vec<Readings> = values
            .iter()
            .map(|&u| Readings {
                gpu_util: Some(u),
                power_mw: Some(u32::from(u) * 10_000),
                ..Readings::default()
            })
            .collect();
        let rows = vec![
            (1, at(10, 0, 5), &readings[0]),
            (1, at(10, 0, 35), &readings[1]),
            (1, at(10, 1, 0), &readings[2]),
            (2, at(10, 0, 59), &readings[2]),
        ];
        let rollups = roll_up(rows);
        assert_eq!(rollups.len(), 3);
        assert_eq!(rollups[0].gpu_id, 1);
        assert_eq!(rollups[0].minute, at(10, 0, 0));
        assert_eq!(rollups[0].samples, 2);
        assert_eq!(
            rollups[0].gpu_util,
            Some(Stat {
                min: 10.0,
                avg: 20.0,
                max: 30.0
            })
        );
        assert_eq!(rollups[0].power_w.map(|s| s.max), Some(300.0));
        assert_eq!(rollups[0].temperature_c, None);
        assert_eq!(rollups[1].minute, at(10, 1, 0));
        assert_eq!(rollups[2].gpu_id, 2);
    }

    #[test]
    fn reports_are_checked_against_ranges_and_the_clock() {
        let now = at(12, 0, 0);
        let keep = Duration::hours(24);
        let mut report = Report {
            access: vec![],
            environments: vec![],
            samples: vec![sample("GPU-a", now)],
            events: vec![],
        };
        assert_eq!(validate_report(&report, now, keep), Ok(()));

        report.samples[0].readings.gpu_util = Some(101);
        let (field, problem) = validate_report(&report, now, keep).unwrap_err();
        assert_eq!(field, "samples[0].gpu_util");
        assert_eq!(problem, Problem::OutOfRange { min: 0, max: 100 });

        report.samples[0].readings.gpu_util = Some(1);
        report.samples[0].at = now + Duration::minutes(6);
        assert_eq!(
            validate_report(&report, now, keep).unwrap_err().0,
            "samples[0].at"
        );
        report.samples[0].at = now - Duration::hours(25);
        assert_eq!(
            validate_report(&report, now, keep).unwrap_err().0,
            "samples[0].at"
        );

        report.samples[0].at = now;
        report.samples[0].uuid = "GPU a; DROP".into();
        assert_eq!(
            validate_report(&report, now, keep).unwrap_err(),
            ("samples[0].uuid".into(), Problem::BadUuid)
        );

        let mut events = Report::default();
        events.events.push(ReportedEvent {
            uuid: "GPU-a".into(),
            at: now,
            kind: EventKind::Vanished,
            code: None,
        });
        assert_eq!(
            validate_report(&events, now, keep).unwrap_err().1,
            Problem::BadEventKind
        );
    }

    #[test]
    fn registrations_need_unique_uuids_and_sane_sizes() {
        let gpu = GpuInfo {
            minor_number: None,
            uuid: "GPU-1".into(),
            name: "NVIDIA H100".into(),
            pci_bus_id: None,
            memory_total_mib: 81_559,
            device_index: 0,
        };
        let mut registration = Registration {
            hostname: "gpu-01".into(),
            driver_version: None,
            source: SourceKind::Nvml,
            interval_seconds: 5,
            gpus: vec![gpu.clone(), gpu],
        };
        assert_eq!(
            validate_registration(&registration).unwrap_err().1,
            Problem::GpuTwice
        );
        registration.gpus.pop();
        assert_eq!(validate_registration(&registration), Ok(()));
        registration.interval_seconds = 0;
        assert_eq!(
            validate_registration(&registration).unwrap_err().0,
            "interval_seconds"
        );
    }

    #[test]
    fn registrations_refuse_control_characters_in_texts_that_become_labels() {
        let gpu = GpuInfo {
            minor_number: None,
            uuid: "GPU-1".into(),
            name: "NVIDIA H100".into(),
            pci_bus_id: Some("00000000:17:00.0".into()),
            memory_total_mib: 81_559,
            device_index: 0,
        };
        let good = Registration {
            hostname: "gpu-01 \"rack\" 7".into(),
            driver_version: Some("550.54.15".into()),
            source: SourceKind::Nvml,
            interval_seconds: 5,
            gpus: vec![gpu],
        };
        assert_eq!(validate_registration(&good), Ok(()));
        let mut bad = good.clone();
        bad.hostname = "gpu-01\nDCGM_FI_DEV_GPU_UTIL{gpu=\"9\"} 100".into();
        assert_eq!(validate_registration(&bad).unwrap_err().0, "hostname");
        let mut bad = good.clone();
        bad.gpus[0].name = "H100\r".into();
        assert_eq!(validate_registration(&bad).unwrap_err().0, "gpus[0].name");
        let mut bad = good.clone();
        bad.gpus[0].pci_bus_id = Some("0000\u{0}".into());
        assert_eq!(
            validate_registration(&bad).unwrap_err().0,
            "gpus[0].pci_bus_id"
        );
        let mut bad = good;
        bad.driver_version = Some("550\n".into());
        assert_eq!(validate_registration(&bad).unwrap_err().0, "driver_version");
    }

    #[test]
    fn throttle_events_ignore_idle_and_name_the_bits() {
        assert!(!throttle_changed(Some(0x1), Some(0x0)));
        assert!(throttle_changed(Some(0x1), Some(0x4)));
        assert!(throttle_changed(None, Some(0x40)));
        assert!(!throttle_changed(None, Some(0x1)));
        assert_eq!(
            throttle_reason_names(0x44 | 0x1000),
            vec!["SW_POWER_CAP", "HW_THERMAL_SLOWDOWN", "0x1000"]
        );
    }

    #[test]
    fn a_node_is_stale_after_three_silent_intervals() {
        let now = at(12, 0, 0);
        assert!(is_stale(None, 5, now));
        assert!(!is_stale(Some(now - Duration::seconds(15)), 5, now));
        assert!(is_stale(Some(now - Duration::seconds(16)), 5, now));
        assert!(!is_stale(Some(now - Duration::seconds(170)), 60, now));
    }

    #[test]
    fn samples_travel_as_flat_json() {
        let json = serde_json::to_value(sample("GPU-a", at(1, 2, 3))).unwrap();
        assert_eq!(json["gpu_util"], 50);
        assert_eq!(json["uuid"], "GPU-a");
        let back: GpuSample = serde_json::from_value(json).unwrap();
        assert_eq!(back, sample("GPU-a", at(1, 2, 3)));
    }
}
