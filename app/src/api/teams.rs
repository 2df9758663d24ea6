//! Data for the team pages (the JSON API uses the same service, `backend::teams`).

use crate::domain::audit::{AuditAction, AuditEntry};
use crate::domain::team::{TeamAccess, TeamRoster, TeamSummary};
use crate::domain::zone::ZoneOffsets;
use crate::error::AppError;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// What the teams page shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeamsPage {
    /// The viewer's teams (platform admins: all), by name.
    pub teams: Vec<TeamSummary>,
    /// Whether the viewer may create teams (platform admins).
    pub can_create: bool,
}

/// The viewer's teams. Invitations sent to the viewer's address since they signed in are
/// accepted here too, as at sign-in.
#[server(endpoint = "get_teams_page")]
pub async fn get_teams_page() -> Result<TeamsPage, AppError> {
    use crate::api::context::signed_in;
    use crate::backend::teams;
    use crate::domain::user::PlatformRole;
    signed_in(|call| async move {
        let (db, actor) = (&call.state.db, &call.actor);
        teams::accept_invitations(db, actor.user.id, &actor.user.email, call.now).await?;
        Ok(TeamsPage {
            teams: teams::list(db, actor).await?,
            can_create: actor.user.role == PlatformRole::PlatformAdmin,
        })
    })
    .await
}

/// What a team's page shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeamPage {
    /// Members and open invitations.
    pub roster: TeamRoster,
    /// What the viewer may do.
    pub access: TeamAccess,
    /// The viewer.
    pub viewer_id: i64,
    /// The team's latest audit entries (for those who manage it).
    pub audit: Vec<AuditEntry>,
    /// The viewer's time zone over the times shown.
    pub zone: ZoneOffsets,
    /// The team wallet, budget and this month's bookings.
    pub money: crate::domain::team::TeamMoney,
    /// The portal's currency.
    pub currency: crate::domain::money::Currency,
    /// Whether the viewer may add credits to the team wallet (platform admins).
    pub can_grant: bool,
    /// A fresh idempotency key for the credits form.
    pub form_key: String,
    /// The team's bookings from now to two weeks ahead (and those under way), soonest first.
    pub upcoming: Vec<crate::domain::reservation::Reservation>,
    /// This week's first instant (Monday 00:00 UTC).
    pub week_start: chrono::DateTime<chrono::Utc>,
    /// Booking rules, this week's use against the quotas and (for those who manage the team)
    /// bookings waiting for approval and idle bookings.
    pub rules: crate::domain::quota::TeamRules,
}

/// Team `id` for its page; 404 for teams the viewer does not belong to.
#[server(endpoint = "get_team_page")]
pub async fn get_team_page(id: i64) -> Result<TeamPage, AppError> {
    use crate::api::context::signed_in;
    use crate::domain::user::PlatformRole;
    signed_in(|call| async move {
        let now = call.now;
        let team = crate::backend::teams::overview(&call.state.db, &call.actor, id, now).await?;
        let (week_start, _) = crate::domain::team::utc_week_of(now);
        let times = team
            .roster
            .members
            .iter()
            .map(|m| m.since)
            .chain(team.roster.invitations.iter().map(|i| i.created_at))
            .chain(team.audit.iter().map(|e| e.at))
            .chain(team.rules.pending.iter().map(|r| r.created_at));
        let from = times.min().unwrap_or(now).min(now);
        let to = team
            .upcoming
            .iter()
            .chain(team.rules.pending.iter())
            .map(|r| r.window.end())
            .max()
            .unwrap_or(now)
            .max(now);
        Ok(TeamPage {
            zone: call.zone_over(from, to),
            roster: team.roster,
            access: team.access,
            viewer_id: call.actor.user.id,
            audit: team.audit,
            money: team.money,
            currency: call.state.portal.currency.clone(),
            can_grant: call.actor.user.role == PlatformRole::PlatformAdmin,
            form_key: uuid::Uuid::new_v4().to_string(),
            upcoming: team.upcoming,
            week_start,
            rules: team.rules,
        })
    })
    .await
}

/// What the audit page shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditPage {
    /// Newest first.
    pub entries: Vec<AuditEntry>,
    /// The action filtered on.
    pub action: Option<AuditAction>,
    /// Where the next (older) page starts, when there is one.
    pub older: Option<i64>,
    /// The viewer's time zone over the times shown.
    pub zone: ZoneOffsets,
}

/// A page of the audit log (platform admins); `action` is a stored action name or empty.
#[server(endpoint = "get_audit_page")]
pub async fn get_audit_page(
    action: Option<String>,
    before_id: Option<i64>,
) -> Result<AuditPage, AppError> {
    use crate::api::context::signed_in;
    use crate::backend::teams;
    use crate::domain::audit::{AUDIT_PAGE, AuditFilter};
    signed_in(|call| async move {
        let filter = teams::parse_audit_action(action.as_deref()).map(|action| AuditFilter {
            action,
            team_id: None,
            before_id,
        });
        let action = filter
            .as_ref()
            .map(|filter| filter.action)
            .unwrap_or_default();
        let entries = teams::audit_log(&call.state.db, &call.actor, None, filter).await?;
        let older = (entries.len() as u64 == AUDIT_PAGE)
            .then(|| entries.last().map(|e| e.id))
            .flatten();
        let now = call.now;
        let from = entries.iter().map(|e| e.at).min().unwrap_or(now).min(now);
        Ok(AuditPage {
            zone: call.zone_over(from, now),
            entries,
            action,
            older,
        })
    })
    .await
}
