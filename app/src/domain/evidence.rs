//! An incident as both sides see it: the incident, its messages, and the evidence over its
//! window (telemetry per GPU, events, the node agents' health and driver versions, other
//! tenants' shares, lease events, maintenance, admin changes), the diagnosis and the SLA's
//! reading. The JSON export is this report as it serialises, described by
//! `docs/incident-evidence.schema.json` (its `schema` field names the version).

use crate::domain::diagnosis::{Cause, Diagnosis};
use crate::domain::incident::{IncidentState, LostSpan, Source, Trigger};
use crate::domain::telemetry::Series;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The version of the export's format.
pub const SCHEMA: &str = "berth.incident-evidence/1";

/// An incident, as its page and the API show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IncidentView {
    /// Id.
    pub id: i64,
    /// Where it stands.
    pub state: IncidentState,
    /// Who opened it.
    pub source: Source,
    /// What opened it by itself.
    pub trigger: Option<Trigger>,
    /// Who opened it, by name (none: Berth).
    pub opened_by: Option<String>,
    /// … and their user id.
    pub opened_by_id: Option<i64>,
    /// When.
    pub opened_at: DateTime<Utc>,
    /// What the reporter saw.
    pub report: String,
    /// The reservation it is about.
    pub reservation: Option<BookingBrief>,
    /// The GPU it was opened from.
    pub gpu_id: Option<i64>,
    /// The evidence window: from …
    pub from: DateTime<Utc>,
    /// … to (now, while it follows the present).
    pub to: DateTime<Utc>,
    /// The window follows the present (it grows until the incident is closed).
    pub to_now: bool,
    /// The first response is due by.
    pub first_response_due: DateTime<Utc>,
    /// When a platform admin first answered.
    pub first_response_at: Option<DateTime<Utc>>,
    /// No answer yet, and the target has passed.
    pub first_response_overdue: bool,
    /// The stated cause: one of the diagnosis' hypotheses …
    pub cause: Option<Cause>,
    /// … and/or in words.
    pub cause_text: Option<String>,
    /// Reopened by its reporter (once).
    pub reopened: bool,
    /// The SLA credit paid.
    pub credit: Option<CreditView>,
}

/// A booking, as an incident names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BookingBrief {
    /// Reservation id.
    pub id: i64,
    /// Its holder's user id.
    pub owner_id: i64,
    /// GPU model.
    pub model: String,
    /// Node.
    pub node: String,
    /// GPUs (`node-a #3`).
    pub gpus: Vec<String>,
    /// Share of each, in quarters.
    pub quarters: u8,
    /// From.
    pub start: DateTime<Utc>,
    /// To.
    pub end: DateTime<Utc>,
    /// Price, minor units.
    pub price_minor: i64,
}

/// An SLA credit, as an incident shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreditView {
    /// Minor units paid into the payer's wallet.
    pub minor: i64,
    /// The GPU-minutes it pays for.
    pub gpu_minutes: i64,
    /// When.
    pub at: DateTime<Utc>,
}

/// A reply or a change of state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageView {
    /// Id.
    pub id: i64,
    /// When.
    pub at: DateTime<Utc>,
    /// Who (none: Berth).
    pub author: Option<String>,
    /// Written by a platform admin.
    pub by_admin: bool,
    /// The state it moved the incident to (none: a reply).
    pub state: Option<IncidentState>,
    /// What was written.
    pub body: String,
}

/// One GPU's part of the evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuTrack {
    /// Id.
    pub id: i64,
    /// `node-a #3`.
    pub label: String,
    /// UUID.
    pub uuid: String,
    /// Model.
    pub model: String,
    /// Memory, MiB.
    pub memory_mib: i64,
    /// When it went missing, if it did.
    pub vanished_at: Option<DateTime<Utc>>,
    /// Its telemetry over the window (raw samples, or one-minute rollups beyond their keep).
    pub series: Series,
    /// XID and throttle events.
    pub events: Vec<EventEntry>,
    /// Other tenants' shares of it that overlap the window (no names: only shares and times).
    pub others: Vec<ShareEntry>,
}

/// A GPU event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventEntry {
    /// When.
    pub at: DateTime<Utc>,
    /// `xid`, `throttle`, `vanished`, …
    pub kind: String,
    /// The XID code or throttle mask.
    pub code: Option<i64>,
}

/// Another tenant's share of a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareEntry {
    /// Quarters of the GPU.
    pub quarters: u8,
    /// From.
    pub from: DateTime<Utc>,
    /// To.
    pub to: DateTime<Utc>,
}

/// A node agent's health over the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeHealth {
    /// Id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// `nvml` or `simulated` (none: no agent).
    pub source: Option<String>,
    /// Seconds between reports.
    pub report_interval_s: Option<i32>,
    /// Its last report.
    pub last_seen_at: Option<DateTime<Utc>>,
    /// Stretches with no report, longer than three intervals.
    pub gaps: Vec<Gap>,
    /// Driver versions in force during the window, oldest first.
    pub drivers: Vec<DriverEntry>,
}

/// A stretch with no report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gap {
    /// From.
    pub from: DateTime<Utc>,
    /// To.
    pub to: DateTime<Utc>,
}

/// A driver version, from when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverEntry {
    /// From.
    pub from: DateTime<Utc>,
    /// The version (none: not reported).
    pub version: Option<String>,
    /// `nvml` or `simulated`.
    pub source: String,
}

/// What a node agent did about access, or saw, on a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessEntry {
    /// When.
    pub at: DateTime<Utc>,
    /// The GPU.
    pub gpu: String,
    /// `granted`, `revoked`, `terminated`, `killed`, `unauthorized`, `over_share`.
    pub kind: String,
    /// This booking's lease (false: someone else's, or none).
    pub this_booking: bool,
    /// The process.
    pub pid: Option<i64>,
    /// Its owner on the node.
    pub user: Option<String>,
    /// GPU memory it used, MiB.
    pub memory_mib: Option<i64>,
}

/// A maintenance window on one of the GPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MaintenanceEntry {
    /// The GPU.
    pub gpu: String,
    /// From.
    pub from: DateTime<Utc>,
    /// To.
    pub to: DateTime<Utc>,
    /// Why.
    pub reason: String,
    /// When it was set.
    pub created_at: DateTime<Utc>,
}

/// An admin change from the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminEntry {
    /// When.
    pub at: DateTime<Utc>,
    /// The audit action (`maintenance.create`).
    pub action: String,
    /// What it changed (`gpu 7`).
    pub target: String,
    /// Values after, as the log holds them.
    pub after: Option<String>,
}

/// The SLA's reading of the evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Availability {
    /// Stretches a reserved GPU was unavailable through no fault of its holder.
    pub lost: Vec<LostSpan>,
    /// GPU-minutes lost (each GPU's stretches joined).
    pub lost_gpu_minutes: i64,
    /// What they are worth at the policy's rate, minor units.
    pub credit_minor: i64,
    /// The policy's rate, percent of the lost minutes' price.
    pub percent: u32,
}

/// The whole evidence of an incident.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceReport {
    /// [`SCHEMA`].
    pub schema: String,
    /// When it was built.
    pub generated_at: DateTime<Utc>,
    /// The portal's currency (ISO 4217).
    pub currency: String,
    /// The incident.
    pub incident: IncidentView,
    /// Its replies and changes.
    pub messages: Vec<MessageView>,
    /// The GPUs.
    pub gpus: Vec<GpuTrack>,
    /// Their nodes.
    pub nodes: Vec<NodeHealth>,
    /// Lease events on the GPUs.
    pub access: Vec<AccessEntry>,
    /// Maintenance on the GPUs.
    pub maintenance: Vec<MaintenanceEntry>,
    /// Admin changes in the window and the hour before it.
    pub admin_changes: Vec<AdminEntry>,
    /// The rules' answer.
    pub diagnosis: Diagnosis,
    /// The SLA's reading.
    pub availability: Availability,
}

impl EvidenceReport {
    /// The report as its reporter sees it ([`others_unnamed`] on its lease events); platform
    /// admins see all.
    pub fn for_reporter(mut self) -> Self {
        others_unnamed(&mut self.access);
        self
    }
}

/// Lease events that are not this booking's keep their time, GPU, kind and memory, but not who
/// (the login on the node) or which process: other tenants are never named to a reporter, as
/// their shares are not.
pub fn others_unnamed(access: &mut [AccessEntry]) {
    for entry in access.iter_mut().filter(|e| !e.this_booking) {
        entry.user = None;
        entry.pid = None;
    }
}

#[cfg(test)]
mod reporter_tests {
    use super::*;

    #[test]
    fn a_reporter_sees_other_peoples_lease_events_without_their_names() {
        let entry = |this_booking: bool, user: &str| AccessEntry {
            at: DateTime::<Utc>::UNIX_EPOCH,
            gpu: "node-1 GPU 0".into(),
            kind: "unauthorized".into(),
            this_booking,
            pid: Some(4242),
            user: Some(user.into()),
            memory_mib: Some(512),
        };
        let mut access = vec![entry(true, "ana"), entry(false, "bruno")];
        others_unnamed(&mut access);
        let shown: Vec<_> = access
            .into_iter()
            .map(|e| (e.user, e.pid, e.memory_mib))
            .collect();
        assert_eq!(
            shown,
            vec![
                (Some("ana".into()), Some(4242), Some(512)),
                (None, None, Some(512)),
            ]
        );
    }
}
