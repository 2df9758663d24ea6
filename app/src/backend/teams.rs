//! Teams as a service: who may see and change a team, and each change in one write transaction
//! with its audit entry. Server functions, the JSON API and the plain forms all come through
//! here, so every rule holds whatever the client.

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::db::audit::NewEntry;
use crate::backend::state::AppState;
use crate::backend::team_access::locked;
pub use crate::backend::team_access::{access, require_manage};
use crate::domain::audit::{AuditAction, AuditEntry, AuditFilter};
use crate::domain::problem::Problem;
use crate::domain::reservation::Reservation;
use crate::domain::team::{
    Budget, Invitation, TeamAccess, TeamMoney, TeamName, TeamRole, TeamRoster, TeamSummary,
    leaves_no_admin, parse_budget,
};
use crate::domain::user::{Email, PlatformRole};
use crate::error::AppError;
use chrono::{DateTime, Utc};
use serde::Serialize;

/// A page of the teams the actor belongs to (platform admins: every team), oldest first.
pub async fn list(
    state: &AppState,
    actor: &Actor,
    page: &crate::domain::paging::PageRequest,
) -> Result<crate::domain::paging::Page<TeamSummary>, AppError> {
    let db = &state.db;
    if actor.user.role == PlatformRole::PlatformAdmin {
        return Ok(db::teams::summaries_page(db, None, page).await?);
    }
    let ids: Vec<i64> = actor
        .memberships(db)
        .await?
        .into_iter()
        .map(|team| team.team_id)
        .collect();
    Ok(db::teams::summaries_page(db, Some(&ids), page).await?)
}

/// A page of the audit log, newest first: all of it for platform admins; with `team_id`, that
/// team's part for those who manage it. `filter` is the request's filter as parsed: a problem with
/// it is answered only once the actor is known to be allowed.
pub async fn audit_log(
    state: &AppState,
    actor: &Actor,
    team_id: Option<i64>,
    filter: Result<AuditFilter, AppError>,
) -> Result<Vec<AuditEntry>, AppError> {
    let db = &state.db;
    match team_id {
        Some(team_id) => require_manage(db, actor, team_id).await?,
        None => actor.require_platform_admin()?,
    }
    let mut filter = filter?;
    if team_id.is_some() {
        filter.team_id = team_id;
    }
    Ok(db::audit::list(db, &filter).await?)
}

/// How far ahead a team's page lists its bookings.
pub const UPCOMING: chrono::TimeDelta = chrono::TimeDelta::days(14);

/// How many of its latest audit entries a team's page shows.
pub const RECENT_AUDIT: usize = 20;

/// Everything a team's page shows about it.
#[derive(Debug, Clone)]
pub struct TeamOverview {
    /// Members (and, for those who manage it, open invitations).
    pub roster: TeamRoster,
    /// What the actor may do.
    pub access: TeamAccess,
    /// Its latest audit entries (for those who manage it).
    pub audit: Vec<AuditEntry>,
    /// Wallet, budget and this month's spending.
    pub money: TeamMoney,
    /// Its bookings from now to [`UPCOMING`] ahead (and those under way), soonest first.
    pub upcoming: Vec<Reservation>,
    /// Booking rules and this week's use (approvals waiting and idle bookings for those who
    /// manage it).
    pub rules: crate::domain::quota::TeamRules,
}

/// Team `team_id` as its page shows it to the actor (a member, or a platform admin); `NotFound`
/// for anyone else. What only those who manage the team see is left out for plain members.
pub async fn overview(
    state: &AppState,
    actor: &Actor,
    team_id: i64,
    now: DateTime<Utc>,
) -> Result<TeamOverview, AppError> {
    let db = &state.db;
    let (roster, access) = roster(state, actor, team_id).await?;
    let audit = match access {
        TeamAccess::Manage => {
            let filter = AuditFilter {
                team_id: Some(team_id),
                ..AuditFilter::default()
            };
            let mut entries = db::audit::list(db, &filter).await?;
            entries.truncate(RECENT_AUDIT);
            entries
        }
        TeamAccess::View => Vec::new(),
    };
    let upcoming = db::reservations::team_bookings(db, team_id, now, now + UPCOMING, now).await?;
    let mut rules = crate::backend::quotas::rules(state, team_id, now).await?;
    if access == TeamAccess::View {
        rules.pending.clear();
        rules.idle.clear();
    }
    Ok(TeamOverview {
        money: money(state, team_id, now).await?,
        roster,
        access,
        audit,
        upcoming,
        rules,
    })
}

/// The team's members and open invitations, with what the actor may do.
pub async fn roster(
    state: &AppState,
    actor: &Actor,
    team_id: i64,
) -> Result<(TeamRoster, TeamAccess), AppError> {
    let db = &state.db;
    let access = access(db, actor, team_id).await?;
    let name = db::teams::team_name(db, team_id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("team {team_id}")))?;
    let members = db::teams::members(db, team_id).await?;
    // Members see who belongs; only those who manage the team see whom it invited.
    let invitations = match access {
        TeamAccess::Manage => db::teams::open_invitations(db, team_id).await?,
        TeamAccess::View => Vec::new(),
    };
    Ok((
        TeamRoster {
            id: team_id,
            name,
            members,
            invitations,
        },
        access,
    ))
}

/// Reads the audit log's action filter as a client sends it (empty: every action).
pub fn parse_audit_action(
    raw: Option<&str>,
) -> Result<Option<crate::domain::audit::AuditAction>, AppError> {
    match raw.map(str::trim).filter(|raw| !raw.is_empty()) {
        None => Ok(None),
        Some(raw) => crate::domain::audit::AuditAction::parse(raw)
            .map(Some)
            .ok_or_else(|| {
                AppError::invalid(
                    "action",
                    Problem::Unreadable {
                        detail: format!("unknown action `{raw}`"),
                    },
                )
            }),
    }
}

/// Reads a role sent by a client.
pub fn parse_role(raw: &str) -> Result<TeamRole, AppError> {
    TeamRole::parse(raw.trim()).ok_or_else(|| {
        AppError::invalid(
            "role",
            Problem::UnknownTeamRole {
                raw: raw.to_owned(),
            },
        )
    })
}

fn parse_email(raw: &str) -> Result<Email, AppError> {
    Email::parse(raw).map_err(|_| {
        AppError::invalid(
            "email",
            Problem::NotAnEmail {
                raw: raw.to_owned(),
            },
        )
    })
}

#[derive(Serialize)]
struct InvitationValues<'a> {
    email: &'a str,
    role: &'static str,
}

#[derive(Serialize)]
struct MemberValues<'a> {
    user_id: i64,
    email: &'a str,
    role: &'static str,
}

/// Invites `email` into the team as `role`; the invitation is accepted when they sign in.
pub async fn invite(
    state: &AppState,
    actor: &Actor,
    team_id: i64,
    email: &str,
    role: &str,
    now: DateTime<Utc>,
) -> Result<Invitation, AppError> {
    let db = &state.db;
    require_manage(db, actor, team_id).await?;
    let email = parse_email(email)?;
    let role = parse_role(role)?;
    let txn = locked(db, actor, team_id, true).await?;
    let members = db::teams::members(&txn, team_id).await?;
    if members.iter().any(|member| member.email == email.as_str()) {
        return Err(AppError::Conflict(Problem::AlreadyMember {
            email: email.as_str().to_owned(),
        }));
    }
    if db::teams::is_invited(&txn, team_id, &email).await? {
        return Err(AppError::Conflict(Problem::AlreadyInvited {
            email: email.as_str().to_owned(),
        }));
    }
    let id =
        db::teams::insert_invitation(&txn, team_id, &email, role, Some(actor.user.id), now).await?;
    db::audit::append(
        &txn,
        NewEntry {
            at: now,
            actor_id: Some(actor.user.id),
            action: AuditAction::TeamInvite,
            target_kind: "invitation",
            target_id: id.to_string(),
            team_id: Some(team_id),
        },
        None::<&()>,
        Some(&InvitationValues {
            email: email.as_str(),
            role: role.as_str(),
        }),
    )
    .await?;
    txn.commit().await?;
    tracing::info!(team.id = team_id, invitation.id = id, "invitation sent");
    Ok(Invitation {
        id,
        team_id,
        email: email.as_str().to_owned(),
        role,
        invited_by: Some(actor.user.name.clone()),
        created_at: now,
    })
}

/// Withdraws an open invitation.
pub async fn revoke_invitation(
    state: &AppState,
    actor: &Actor,
    team_id: i64,
    invitation_id: i64,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let db = &state.db;
    require_manage(db, actor, team_id).await?;
    let txn = locked(db, actor, team_id, true).await?;
    let revoked = db::teams::revoke_invitation(&txn, team_id, invitation_id, actor.user.id, now)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("open invitation {invitation_id}")))?;
    db::audit::append(
        &txn,
        NewEntry {
            at: now,
            actor_id: Some(actor.user.id),
            action: AuditAction::TeamInvitationRevoke,
            target_kind: "invitation",
            target_id: invitation_id.to_string(),
            team_id: Some(team_id),
        },
        Some(&InvitationValues {
            email: &revoked.email,
            role: revoked.role.as_str(),
        }),
        None::<&()>,
    )
    .await?;
    txn.commit().await?;
    Ok(())
}

/// Changes a member's role (`Some`) or removes them (`None`). A team keeps at least one admin;
/// members may leave a team themselves.
pub async fn change_member(
    state: &AppState,
    actor: &Actor,
    team_id: i64,
    user_id: i64,
    new_role: Option<TeamRole>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let db = &state.db;
    let leaving = new_role.is_none() && user_id == actor.user.id;
    if leaving {
        access(db, actor, team_id).await?;
    } else {
        require_manage(db, actor, team_id).await?;
    }
    let txn = locked(db, actor, team_id, !leaving).await?;
    let members = db::teams::members(&txn, team_id).await?;
    let member = members
        .iter()
        .find(|member| member.user_id == user_id)
        .ok_or_else(|| AppError::NotFound(format!("member {user_id} of team {team_id}")))?;
    if new_role == Some(member.role) {
        return Ok(());
    }
    if leaves_no_admin(&members, user_id, new_role) {
        return Err(AppError::Conflict(Problem::LastAdmin));
    }
    let before = MemberValues {
        user_id,
        email: &member.email,
        role: member.role.as_str(),
    };
    let action = match new_role {
        Some(role) => {
            db::teams::set_member(&txn, team_id, user_id, role, now).await?;
            AuditAction::TeamMemberRole
        }
        None => {
            db::teams::remove_member(&txn, team_id, user_id).await?;
            AuditAction::TeamMemberRemove
        }
    };
    let after = new_role.map(|role| MemberValues {
        user_id,
        email: &member.email,
        role: role.as_str(),
    });
    db::audit::append(
        &txn,
        NewEntry {
            at: now,
            actor_id: Some(actor.user.id),
            action,
            target_kind: "user",
            target_id: user_id.to_string(),
            team_id: Some(team_id),
        },
        Some(&before),
        after.as_ref(),
    )
    .await?;
    txn.commit().await?;
    Ok(())
}

/// The team's wallet, what its unpaid bookings hold, its budget and this month's bookings.
pub async fn money(
    state: &AppState,
    team_id: i64,
    now: DateTime<Utc>,
) -> Result<TeamMoney, AppError> {
    let db = &state.db;
    let budget = db::teams::budget(db, team_id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("team {team_id}")))?;
    let (month, next) = crate::domain::schedule::utc_month_of(now);
    let (balance, unpaid, month_spent) = tokio::try_join!(
        db::ledger::account_balance(db, crate::domain::ledger::Account::TeamWallet(team_id)),
        db::payments::unpaid_of_team(db, team_id),
        db::teams::month_spend(db, team_id, month, next),
    )?;
    let payments_due = unpaid
        .iter()
        .filter(|row| row.payment_status == crate::domain::reservation::PaymentStatus::Due)
        .count();
    Ok(TeamMoney {
        balance,
        on_hold: db::payments::held(&unpaid),
        payments_due: u32::try_from(payments_due).unwrap_or(u32::MAX),
        budget,
        month,
        month_spent,
    })
}

/// Sets the team's monthly budget (its admins, platform admins), with its audit entry.
pub async fn set_budget(
    state: &AppState,
    actor: &Actor,
    team_id: i64,
    limit_minor: Option<i64>,
    mode: &str,
    warn_percent: Option<i64>,
    now: DateTime<Utc>,
) -> Result<Budget, AppError> {
    let db = &state.db;
    require_manage(db, actor, team_id).await?;
    let budget = parse_budget(limit_minor, mode, warn_percent)
        .map_err(|(field, problem)| AppError::invalid(field, problem))?;
    let txn = locked(db, actor, team_id, true).await?;
    let before = db::teams::budget(&txn, team_id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("team {team_id}")))?;
    db::teams::set_budget(&txn, team_id, &budget).await?;
    db::audit::append(
        &txn,
        NewEntry {
            at: now,
            actor_id: Some(actor.user.id),
            action: AuditAction::TeamBudget,
            target_kind: "team",
            target_id: team_id.to_string(),
            team_id: Some(team_id),
        },
        Some(&before),
        Some(&budget),
    )
    .await?;
    txn.commit().await?;
    Ok(budget)
}

/// Creates a team (platform admins) and invites its first admin.
pub async fn create(
    state: &AppState,
    actor: &Actor,
    name: &str,
    admin_email: &str,
    now: DateTime<Utc>,
) -> Result<(i64, Invitation), AppError> {
    let db = &state.db;
    actor.require_platform_admin()?;
    let name =
        TeamName::parse(name).map_err(|_| AppError::invalid("name", Problem::Name { max: 100 }))?;
    let email = parse_email(admin_email)?;
    let txn = db::begin_write(db).await?;
    let team_id = db::teams::create_team(&txn, &name, now)
        .await?
        .ok_or_else(|| {
            AppError::Conflict(Problem::TeamNameTaken {
                name: name.as_str().to_owned(),
            })
        })?;
    let invitation_id = db::teams::insert_invitation(
        &txn,
        team_id,
        &email,
        TeamRole::Admin,
        Some(actor.user.id),
        now,
    )
    .await?;
    #[derive(Serialize)]
    struct TeamValues<'a> {
        name: &'a str,
        admin_email: &'a str,
    }
    db::audit::append(
        &txn,
        NewEntry {
            at: now,
            actor_id: Some(actor.user.id),
            action: AuditAction::TeamCreate,
            target_kind: "team",
            target_id: team_id.to_string(),
            team_id: Some(team_id),
        },
        None::<&()>,
        Some(&TeamValues {
            name: name.as_str(),
            admin_email: email.as_str(),
        }),
    )
    .await?;
    txn.commit().await?;
    Ok((
        team_id,
        Invitation {
            id: invitation_id,
            team_id,
            email: email.as_str().to_owned(),
            role: TeamRole::Admin,
            invited_by: Some(actor.user.name.clone()),
            created_at: now,
        },
    ))
}

/// Accepts the open invitations sent to `email`, the address of user `user_id`, when the
/// user's sign-in `vouched` for it (the identity provider verified it and it is the address
/// stored): an account made with an address nobody verified never joins a team by an
/// invitation to it. Answers the teams joined.
pub async fn accept_invitations(
    state: &AppState,
    user_id: i64,
    email: &Email,
    vouched: bool,
    now: DateTime<Utc>,
) -> Result<Vec<db::teams::Accepted>, AppError> {
    let db = &state.db;
    if !vouched || !db::teams::has_open_invitations(db, email).await? {
        return Ok(Vec::new());
    }
    let txn = db::begin_write(db).await?;
    let accepted = db::teams::accept_invitations(&txn, user_id, email, now).await?;
    for joined in &accepted {
        db::audit::append(
            &txn,
            NewEntry {
                at: now,
                actor_id: Some(user_id),
                action: AuditAction::TeamInvitationAccept,
                target_kind: "invitation",
                target_id: joined.invitation_id.to_string(),
                team_id: Some(joined.team_id),
            },
            None::<&()>,
            Some(&MemberValues {
                user_id,
                email: email.as_str(),
                role: joined.role.as_str(),
            }),
        )
        .await?;
    }
    txn.commit().await?;
    Ok(accepted)
}
