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
    /// A page of the viewer's teams (platform admins: all), oldest first.
    pub teams: Vec<TeamSummary>,
    /// The cursor of the next page, when there is one.
    #[serde(default)]
    pub next: Option<String>,
    /// Whether the viewer may create teams (platform admins).
    pub can_create: bool,
}

/// The viewer's teams. Invitations sent to the viewer's address since they signed in are
/// accepted here too, as at sign-in, when that sign-in vouched for the address (the identity
/// provider verified it): an account made with an address nobody verified never joins a team by
/// an invitation to that address.
#[server(endpoint = "get_teams_page")]
pub async fn get_teams_page(cursor: Option<String>) -> Result<TeamsPage, AppError> {
    use crate::api::context::signed_in;
    use crate::backend::teams;
    use crate::domain::paging::ListKind;
    use crate::domain::user::PlatformRole;
    signed_in(|call| async move {
        let (state, actor) = (&call.state, &call.actor);
        let page = crate::backend::input::page(ListKind::Teams, None, cursor.as_deref())?;
        let (user_id, email) = (actor.user.id, &actor.user.email);
        teams::accept_invitations(state, user_id, email, actor.address_vouched, call.now).await?;
        let listed = teams::list(state, actor, &page).await?;
        Ok(TeamsPage {
            teams: listed.items,
            next: listed.next,
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
        let team = crate::backend::teams::overview(&call.state, &call.actor, id, now).await?;
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
            limit: None,
        });
        let action = filter
            .as_ref()
            .map(|filter| filter.action)
            .unwrap_or_default();
        let entries = teams::audit_log(&call.state, &call.actor, None, filter).await?;
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

/// The team page's forms: each of them posts to its own function below and comes back to the
/// page with a [`TeamDone`](crate::api::forms::TeamDone) or the refusal. Outsiders learn
/// nothing: the same 404 as the page itself.
#[cfg(feature = "ssr")]
async fn team_form<Fut>(
    team_id: i64,
    done: crate::api::forms::TeamDone,
    command: impl FnOnce(crate::api::context::Call) -> Fut,
) -> Result<(), AppError>
where
    Fut: Future<Output = Result<(), AppError>>,
{
    use crate::api::forms::{Outcome, back_to};
    let call = crate::api::context::signed_in(|call| async move {
        crate::backend::teams::access(&call.state.db, &call.actor, team_id).await?;
        Ok(call)
    })
    .await?;
    let result = command(call).await;
    back_to(
        &format!("/teams/{team_id}"),
        result.map(|()| ("done", done.query_word())),
    )
}

/// Invites `email` to the team as `role` (default member).
#[server(endpoint = "forms/team/invite")]
pub async fn invite_member(
    team_id: i64,
    email: String,
    #[server(default)] role: Option<String>,
) -> Result<(), AppError> {
    use crate::api::forms::TeamDone;
    team_form(team_id, TeamDone::Invited, |call| async move {
        let role = role.as_deref().unwrap_or("member");
        crate::backend::teams::invite(&call.state, &call.actor, team_id, &email, role, call.now)
            .await
            .map(drop)
    })
    .await
}

/// Withdraws an open invitation.
#[server(endpoint = "forms/team/revoke")]
pub async fn revoke_invitation(team_id: i64, invitation_id: i64) -> Result<(), AppError> {
    use crate::api::forms::TeamDone;
    team_form(team_id, TeamDone::Revoked, |call| async move {
        crate::backend::teams::revoke_invitation(
            &call.state,
            &call.actor,
            team_id,
            invitation_id,
            call.now,
        )
        .await
    })
    .await
}

/// Gives a member another role.
#[server(endpoint = "forms/team/role")]
pub async fn set_member_role(team_id: i64, user_id: i64, role: String) -> Result<(), AppError> {
    use crate::api::forms::TeamDone;
    use crate::backend::teams;
    team_form(team_id, TeamDone::Role, |call| async move {
        let role = teams::parse_role(&role)?;
        teams::change_member(
            &call.state,
            &call.actor,
            team_id,
            user_id,
            Some(role),
            call.now,
        )
        .await
    })
    .await
}

/// Removes a member; who removes themselves has left, and goes to the teams page.
#[server(endpoint = "forms/team/remove")]
pub async fn remove_member(team_id: i64, user_id: i64) -> Result<(), AppError> {
    use crate::api::forms::{TeamDone, go_to};
    use crate::backend::teams;
    let call = crate::api::context::signed_in(|call| async move {
        teams::access(&call.state.db, &call.actor, team_id).await?;
        Ok(call)
    })
    .await?;
    if user_id == call.actor.user.id {
        // Who leaves a team can no longer see its page.
        return match teams::change_member(
            &call.state,
            &call.actor,
            team_id,
            user_id,
            None,
            call.now,
        )
        .await
        {
            Ok(()) | Err(AppError::NotFound(_)) => {
                go_to("/teams");
                Ok(())
            }
            Err(error) => crate::api::forms::back_to(&format!("/teams/{team_id}"), Err(error)),
        };
    }
    team_form(team_id, TeamDone::Removed, |call| async move {
        teams::change_member(&call.state, &call.actor, team_id, user_id, None, call.now).await
    })
    .await
}

/// Sets the team's monthly budget: `budget` in the currency as typed (empty: none), `mode`
/// `refuse` or `warn`, the warning at `warn_percent` of it.
#[server(endpoint = "forms/team/budget")]
pub async fn set_team_budget(
    team_id: i64,
    #[server(default)] budget: Option<String>,
    #[server(default)] mode: Option<String>,
    #[server(default)] warn_percent: Option<String>,
) -> Result<(), AppError> {
    use crate::api::forms::TeamDone;
    use crate::backend::input;
    team_form(team_id, TeamDone::Budget, |call| async move {
        let currency = &call.state.portal.currency;
        let limit = match budget.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(raw) => Some(input::amount("budget", raw, currency, |minor| minor >= 0)?),
        };
        let warn_percent = input::whole_number("warn_percent", warn_percent.as_deref())?;
        crate::backend::teams::set_budget(
            &call.state,
            &call.actor,
            team_id,
            limit,
            mode.as_deref().unwrap_or("refuse"),
            warn_percent,
            call.now,
        )
        .await
        .map(drop)
    })
    .await
}

/// Adds credits to the team wallet (platform admins): `amount` in the currency as typed.
#[server(endpoint = "forms/team/credits")]
pub async fn add_team_credits(
    team_id: i64,
    amount: String,
    reason: String,
    #[server(default)] idempotency_key: Option<String>,
) -> Result<(), AppError> {
    use crate::api::forms::TeamDone;
    use crate::backend::ledger;
    team_form(team_id, TeamDone::Credits, |call| async move {
        let currency = &call.state.portal.currency;
        let amount_minor =
            crate::backend::input::amount("amount", &amount, currency, |minor| minor != 0)?;
        ledger::admin_credits(
            &call.state,
            &call.actor,
            ledger::CreditWallet::Team(team_id),
            amount_minor,
            &reason,
            idempotency_key.as_deref(),
            call.now,
        )
        .await
        .map(drop)
    })
    .await
}

/// Sets (or, with both numbers empty, removes) the team's quota on a GPU model (platform admins).
#[server(endpoint = "forms/team/quota")]
pub async fn set_team_quota(
    team_id: i64,
    #[server(default)] model: Option<String>,
    #[server(default)] guaranteed_gpus: Option<String>,
    #[server(default)] weekly_gpu_hours: Option<String>,
) -> Result<(), AppError> {
    use crate::api::forms::TeamDone;
    use crate::backend::input;
    team_form(team_id, TeamDone::Quota, |call| async move {
        let model = input::required("model", model.as_deref())?;
        let guaranteed = input::whole_number("guaranteed_gpus", guaranteed_gpus.as_deref())?;
        let weekly = input::whole_number("weekly_gpu_hours", weekly_gpu_hours.as_deref())?;
        crate::backend::quotas::set_quota(
            &call.state,
            &call.actor,
            team_id,
            model,
            guaranteed,
            weekly,
            call.now,
        )
        .await
        .map(drop)
    })
    .await
}

/// Sets the team's booking rules (`allow_burst` is a checkbox: present when ticked).
#[server(endpoint = "forms/team/rules")]
pub async fn set_team_rules(
    team_id: i64,
    #[server(default)] allow_burst: Option<String>,
    #[server(default)] default_priority: Option<String>,
    #[server(default)] approval_over_gpu_hours: Option<String>,
    #[server(default)] approval_expiry_hours: Option<String>,
) -> Result<(), AppError> {
    use crate::api::forms::TeamDone;
    use crate::backend::input::whole_number;
    team_form(team_id, TeamDone::Rules, |call| async move {
        let policy = crate::backend::quotas::PolicyForm {
            allow_burst: allow_burst.is_some(),
            default_priority: default_priority.unwrap_or_default(),
            approval_over_gpu_hours: whole_number(
                "approval_over_gpu_hours",
                approval_over_gpu_hours.as_deref(),
            )?,
            approval_expiry_hours: whole_number(
                "approval_expiry_hours",
                approval_expiry_hours.as_deref(),
            )?,
        };
        crate::backend::quotas::set_policy(&call.state, &call.actor, team_id, &policy, call.now)
            .await
            .map(drop)
    })
    .await
}

/// Approves or rejects a team booking that waits for approval.
#[cfg(feature = "ssr")]
async fn decide_booking(team_id: i64, reservation_id: i64, approve: bool) -> Result<(), AppError> {
    use crate::api::forms::TeamDone;
    let done = if approve {
        TeamDone::Approved
    } else {
        TeamDone::Rejected
    };
    team_form(team_id, done, |call| async move {
        crate::backend::quotas::decide(
            &call.state,
            &call.actor,
            team_id,
            reservation_id,
            approve,
            call.now,
        )
        .await
        .map(drop)
    })
    .await
}

/// Approves a team booking that waits for approval.
#[server(endpoint = "forms/team/approve")]
pub async fn approve_booking(team_id: i64, reservation_id: i64) -> Result<(), AppError> {
    decide_booking(team_id, reservation_id, true).await
}

/// Rejects a team booking that waits for approval.
#[server(endpoint = "forms/team/reject")]
pub async fn reject_booking(team_id: i64, reservation_id: i64) -> Result<(), AppError> {
    decide_booking(team_id, reservation_id, false).await
}

/// Creates a team with its first admin invited (platform admins), then opens its page.
#[server(endpoint = "forms/teams/create")]
pub async fn create_team(name: String, admin_email: String) -> Result<(), AppError> {
    use crate::api::forms::{Outcome, TeamDone, back_to};
    let call = crate::api::context::platform_admin(|call| async move { Ok(call) }).await?;
    match crate::backend::teams::create(&call.state, &call.actor, &name, &admin_email, call.now)
        .await
    {
        Ok((id, _)) => back_to(
            &format!("/teams/{id}"),
            Ok(("done", TeamDone::Created.query_word())),
        ),
        Err(error) => back_to("/teams", Err(error)),
    }
}
