//! Where an agent's values come from: one trait, with NVML and a simulator behind it.

use berth_app::domain::telemetry::{GpuInfo, GpuSample, ReportedEvent, SourceKind};
use chrono::{DateTime, Utc};
use std::time::Duration;

/// A source failed to read (the agent logs it and tries again at the next interval).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SourceError(pub String);

/// A host's GPUs and their values. Calls block (NVML is synchronous), so the agent runs a
/// source on a thread of its own.
pub trait TelemetrySource: Send {
    /// NVML or simulated.
    fn kind(&self) -> SourceKind;
    /// NVIDIA driver version, when known.
    fn driver_version(&self) -> Option<String>;
    /// The GPUs present now.
    fn gpus(&mut self) -> Result<Vec<GpuInfo>, SourceError>;
    /// One sample of every GPU, stamped `at`.
    fn sample(&mut self, at: DateTime<Utc>) -> Result<Vec<GpuSample>, SourceError>;
    /// Waits up to `timeout` for an XID event; `None` when none came.
    fn wait_event(&mut self, timeout: Duration) -> Option<ReportedEvent>;
}
