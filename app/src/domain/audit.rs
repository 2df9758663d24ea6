//! The audit log: who did what, when, to what, with the values before and after, for every
//! admin and money action. Entries are only ever appended (the database refuses changes).

use serde::{Deserialize, Serialize};

/// What was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AuditAction {
    /// A platform admin created a team.
    TeamCreate,
    /// A team admin invited an address.
    TeamInvite,
    /// An invitation was withdrawn.
    TeamInvitationRevoke,
    /// An invited person signed in and joined.
    TeamInvitationAccept,
    /// A member was removed from a team.
    TeamMemberRemove,
    /// A member's role changed.
    TeamMemberRole,
    /// A team's monthly budget changed.
    TeamBudget,
    /// A team's quota for a GPU model was set or removed.
    TeamQuota,
    /// A team's booking rules (burst, default priority, approvals) changed.
    TeamRules,
    /// A team admin approved a booking.
    BookingApprove,
    /// A team admin rejected a booking.
    BookingReject,
    /// Credits were granted.
    CreditsGrant,
    /// Credits were deducted.
    CreditsDeduct,
    /// A maintenance window was scheduled.
    MaintenanceCreate,
    /// A maintenance window was cancelled.
    MaintenanceCancel,
    /// A GPU was retired.
    GpuRetire,
    /// A GPU's (or a whole model's) price or sharing changed.
    GpuPrice,
    /// A node's agent token was issued.
    NodeTokenIssue,
    /// A node's agent token was revoked.
    NodeTokenRevoke,
    /// A GPU an agent reported was accepted into the inventory.
    GpuAccept,
    /// A platform admin changed the idle policy (the platform's or a team's).
    IdlePolicy,
    /// A holder said "I'm still using it" about an idle booking.
    IdleSnooze,
    /// The idle policy released the rest of an idle booking.
    IdleReclaim,
    /// A watcher booked the window held for their watch (the other watchers' holds lost).
    WatchBooked,
}

impl AuditAction {
    /// Every action, in the order the audit page's filter lists them.
    pub const ALL: [AuditAction; 24] = [
        AuditAction::TeamCreate,
        AuditAction::TeamInvite,
        AuditAction::TeamInvitationRevoke,
        AuditAction::TeamInvitationAccept,
        AuditAction::TeamMemberRemove,
        AuditAction::TeamMemberRole,
        AuditAction::TeamBudget,
        AuditAction::TeamQuota,
        AuditAction::TeamRules,
        AuditAction::BookingApprove,
        AuditAction::BookingReject,
        AuditAction::CreditsGrant,
        AuditAction::CreditsDeduct,
        AuditAction::MaintenanceCreate,
        AuditAction::MaintenanceCancel,
        AuditAction::GpuRetire,
        AuditAction::GpuPrice,
        AuditAction::NodeTokenIssue,
        AuditAction::NodeTokenRevoke,
        AuditAction::GpuAccept,
        AuditAction::IdlePolicy,
        AuditAction::IdleSnooze,
        AuditAction::IdleReclaim,
        AuditAction::WatchBooked,
    ];

    /// The stored (and API) name.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditAction::TeamCreate => "team.create",
            AuditAction::TeamInvite => "team.invite",
            AuditAction::TeamInvitationRevoke => "team.invitation.revoke",
            AuditAction::TeamInvitationAccept => "team.invitation.accept",
            AuditAction::TeamMemberRemove => "team.member.remove",
            AuditAction::TeamMemberRole => "team.member.role",
            AuditAction::TeamBudget => "team.budget",
            AuditAction::TeamQuota => "team.quota",
            AuditAction::TeamRules => "team.rules",
            AuditAction::BookingApprove => "booking.approve",
            AuditAction::BookingReject => "booking.reject",
            AuditAction::CreditsGrant => "credits.grant",
            AuditAction::CreditsDeduct => "credits.deduct",
            AuditAction::MaintenanceCreate => "maintenance.create",
            AuditAction::MaintenanceCancel => "maintenance.cancel",
            AuditAction::GpuRetire => "gpu.retire",
            AuditAction::GpuPrice => "gpu.price",
            AuditAction::NodeTokenIssue => "node.token.issue",
            AuditAction::NodeTokenRevoke => "node.token.revoke",
            AuditAction::GpuAccept => "gpu.accept",
            AuditAction::IdlePolicy => "idle.policy",
            AuditAction::IdleSnooze => "booking.still_using",
            AuditAction::IdleReclaim => "booking.reclaim",
            AuditAction::WatchBooked => "watch.booked",
        }
    }

    /// Reads a stored name.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|action| action.as_str() == raw)
    }
}

/// One entry of the log, as the audit page and the API show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Its id (entries are numbered in the order they were written).
    pub id: i64,
    /// When (UTC).
    pub at: chrono::DateTime<chrono::Utc>,
    /// Who: id and name (None: the command line or a background job).
    pub actor: Option<(i64, String)>,
    /// What.
    pub action: AuditAction,
    /// The kind of thing acted on (`team`, `user`, `gpu`, `maintenance`, `node`).
    pub target_kind: String,
    /// Its id.
    pub target_id: String,
    /// The team concerned.
    pub team_id: Option<i64>,
    /// Values before (JSON), for changes and removals.
    pub before: Option<String>,
    /// Values after (JSON), for creations and changes.
    pub after: Option<String>,
}

/// Which entries to show.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditFilter {
    /// Only this action.
    pub action: Option<AuditAction>,
    /// Only this team's.
    pub team_id: Option<i64>,
    /// Only entries older than this id (the next page).
    pub before_id: Option<i64>,
    /// At most this many entries ([`AUDIT_PAGE`] when absent).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// How many entries a page of the log shows.
pub const AUDIT_PAGE: u64 = 100;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_round_trips_through_its_stored_name_and_names_are_distinct() {
        let mut names = std::collections::HashSet::new();
        for action in AuditAction::ALL {
            assert_eq!(AuditAction::parse(action.as_str()), Some(action));
            assert!(names.insert(action.as_str()));
        }
        assert_eq!(AuditAction::parse("team.delete"), None);
    }
}
