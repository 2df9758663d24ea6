//! Idle reclaim: the job that warns the holders of idle running bookings and, under a `release`
//! policy, brings the rest of such a booking back to the fleet with part of the unused time
//! refunded; the holder's "I'm still using it"; and the policies (the platform's default and
//! teams' overrides), which only platform admins change.
//!
//! The rules are `domain::reclaim`'s. Each warning and each release is written in its own write
//! transaction that re-reads the reservation under lock (a cancellation, a snooze or another
//! replica's run that won the race leaves it alone), with its notices, its refund in the ledger
//! and its audit entry.

use crate::backend::auth::actor::Actor;
use crate::backend::db::{self, begin_write};
use crate::backend::entity::reservation;
use crate::backend::notify;
use crate::backend::state::AppState;
use crate::domain::audit::AuditAction;
use crate::domain::notify::{IdleBrief, NewEvent};
use crate::domain::problem::Problem;
use crate::domain::reclaim::{
    Due, IdleAction, IdleBooking, IdlePolicy, MAX_GAP, Measured, Policies, Told, booking_state,
    carried, due, gpu_state, release_refund,
};
use crate::domain::reservation::ReleaseReason;
use crate::domain::schedule::Window;
use crate::error::AppError;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{DatabaseConnection, DbErr};

/// What one run of the job did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Warnings sent.
    pub warned: u32,
    /// Bookings whose rest was released.
    pub released: u32,
    /// Running bookings the policy would look at but whose GPUs report nothing recent.
    pub unmeasured: u32,
}

/// The stored policies (the platform's default when none is stored), teams by name.
pub async fn policies(db: &impl sea_orm::ConnectionTrait) -> Result<Policies, DbErr> {
    let (platform, teams) = db::reclaim::policies(db).await?;
    let ids: Vec<i64> = teams.keys().copied().collect();
    let names: std::collections::HashMap<i64, String> = db::env_profiles::team_names(db, &ids)
        .await?
        .into_iter()
        .collect();
    let mut named: Vec<(i64, String, IdlePolicy)> = teams
        .into_iter()
        .map(|(team, policy)| (team, names.get(&team).cloned().unwrap_or_default(), policy))
        .collect();
    named.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
    Ok(Policies {
        platform: platform.unwrap_or_default(),
        teams: named,
    })
}

/// Looks at every running booking at `now` and sends the warnings and makes the releases that
/// are due.
#[tracing::instrument(skip_all)]
pub async fn run(db: &DatabaseConnection, now: DateTime<Utc>) -> Result<Outcome, DbErr> {
    let policies = policies(db).await?;
    let mut outcome = Outcome::default();
    let running = db::reclaim::running(db, now).await?;
    let candidates: Vec<(db::reclaim::Running, &IdlePolicy, IdleBooking)> = running
        .into_iter()
        .filter_map(|running| {
            let policy = policies.for_team(running.row.team_id);
            let booking = idle_booking(&running.row)?;
            (policy.action != IdleAction::Off && !policy.exempts(&booking))
                .then_some((running, policy, booking))
        })
        .collect();
    if candidates.is_empty() {
        return Ok(outcome);
    }
    // One read of the telemetry for all of them, as far back as the longest window needs.
    let longest = candidates
        .iter()
        .map(|(_, policy, _)| policy.window_minutes)
        .max()
        .unwrap_or(0);
    let read_from = now - TimeDelta::minutes(i64::from(longest)) - MAX_GAP * 2;
    let gpus: Vec<i64> = candidates
        .iter()
        .flat_map(|(running, ..)| running.gpus.iter().copied())
        .collect();
    let minutes = db::reclaim::minutes(db, &gpus, read_from, now).await?;
    for (running, policy, booking) in candidates {
        let row = &running.row;
        let counted_from = row
            .idle_snoozed_at
            .map_or(row.start_at, |snooze| snooze.max(row.start_at));
        let policy_from = now - TimeDelta::minutes(i64::from(policy.window_minutes)) - MAX_GAP * 2;
        let from = counted_from.max(policy_from);
        let states: Vec<Measured> = running
            .gpus
            .iter()
            .map(|gpu| {
                let minutes = minutes.get(gpu).map_or(&[][..], Vec::as_slice);
                gpu_state(minutes, policy.threshold(), from, now)
            })
            .collect();
        let told = told(row);
        let state = carried(booking_state(&states), policy_from, counted_from, told);
        if state == Measured::Unmeasured {
            outcome.unmeasured += 1;
        }
        match due(policy, &booking, state, told, now) {
            Due::Nothing => {}
            Due::Warn {
                number,
                since,
                acts_at,
            } => {
                let brief = IdleBrief {
                    since,
                    threshold_percent: policy.threshold_percent,
                    action: policy.action,
                };
                if warn(db, row, brief, number, acts_at, now).await? {
                    outcome.warned += 1;
                }
            }
            Due::Release { since, at } => {
                if release(db, row, policy, since, at, now).await? {
                    outcome.released += 1;
                }
            }
        }
    }
    Ok(outcome)
}

/// The booking as the policy reads it; `None` for a row whose window no longer parses.
fn idle_booking(row: &reservation::Model) -> Option<IdleBooking> {
    Some(IdleBooking {
        window: Window::new(row.start_at, row.end_at).ok()?,
        gpus: u32::try_from(row.gpu_count).unwrap_or(u32::MAX),
        priority: row.priority,
    })
}

fn told(row: &reservation::Model) -> Told {
    Told {
        since: row.idle_since,
        warnings: u32::try_from(row.idle_warnings).unwrap_or(0),
    }
}

/// The row under lock, if it is still the running booking the check read: confirmed, not
/// ended, nothing told or said since.
async fn still_as_read(
    txn: &sea_orm::DatabaseTransaction,
    read: &reservation::Model,
    now: DateTime<Utc>,
) -> Result<Option<reservation::Model>, DbErr> {
    Ok(db::reservations::lock_reservation(txn, read.id)
        .await?
        .filter(|row| {
            row.status == reservation::Status::Confirmed
                && row.end_at > now
                && row.released_reason.is_none()
                && row.reclaimed_until.is_none()
                && row.idle_snoozed_at == read.idle_snoozed_at
                && row.idle_since == read.idle_since
                && row.idle_warnings == read.idle_warnings
        }))
}

async fn warn(
    db: &DatabaseConnection,
    read: &reservation::Model,
    brief: IdleBrief,
    number: u32,
    acts_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let txn = begin_write(db).await?;
    if still_as_read(&txn, read, now).await?.is_none() {
        txn.rollback().await?;
        return Ok(false);
    }
    let since = brief.since;
    db::reclaim::set_warned(&txn, read.id, since, number).await?;
    if let Some(view) = db::reservations::view_of(&txn, read.id, now).await? {
        notify::record(
            &txn,
            &[NewEvent::idle_warning(&view, brief, number, acts_at, now)],
        )
        .await?;
    }
    txn.commit().await?;
    tracing::info!(
        reservation.id = read.id,
        warning = number,
        idle_since = %since,
        "idle booking: holder warned"
    );
    Ok(true)
}

async fn release(
    db: &DatabaseConnection,
    read: &reservation::Model,
    policy: &IdlePolicy,
    since: DateTime<Utc>,
    at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let txn = begin_write(db).await?;
    let Some(row) = still_as_read(&txn, read, now)
        .await?
        .filter(|row| row.end_at > at && row.start_at <= now)
    else {
        txn.rollback().await?;
        return Ok(false);
    };
    let window = Window::new(row.start_at, row.end_at).map_err(|e| DbErr::Custom(e.to_string()))?;
    let gpus = i64::from(row.gpu_count.max(1));
    let refund = release_refund(row.price_minor, gpus, &window, at, policy.refund_percent);
    db::reservations::shorten(&txn, &row, at).await?;
    let refunded = crate::backend::reservations::give_back(&txn, &row, refund, (None, now)).await?;
    db::reservations::set_released_reason(&txn, row.id, ReleaseReason::Idle).await?;
    db::reclaim::set_reclaimed(&txn, row.id, row.end_at, refunded).await?;
    db::audit::append(
        &txn,
        db::audit::NewEntry {
            at: now,
            actor_id: None,
            action: AuditAction::IdleReclaim,
            target_kind: "reservation",
            target_id: row.id.to_string(),
            team_id: row.team_id,
        },
        Some(&serde_json::json!({ "end": row.end_at, "price_minor": row.price_minor })),
        Some(&serde_json::json!({
            "end": at,
            "idle_since": since,
            "threshold_percent": policy.threshold_percent,
            "window_minutes": policy.window_minutes,
            "refund_minor": refunded,
        })),
    )
    .await?;
    if let Some(view) = db::reservations::view_of(&txn, row.id, now).await? {
        notify::withdrawn(&txn, row.id, &NewEvent::reclaimed(&view, refunded, now)).await?;
    }
    txn.commit().await?;
    tracing::info!(
        reservation.id = row.id,
        new_end = %at,
        refund_minor = refunded,
        "idle booking reclaimed"
    );
    Ok(true)
}

/// The holder says "I'm still using it" about running reservation `id`: the policy counts idle
/// time from now on. Once per booking; only its holder (others: not found).
#[tracing::instrument(skip_all, fields(reservation.id = id, user.id = actor.user.id))]
pub async fn still_using(
    state: &AppState,
    actor: &Actor,
    id: i64,
) -> Result<DateTime<Utc>, AppError> {
    let now = state.now();
    let txn = begin_write(&state.db).await?;
    let row = db::reservations::lock_reservation(&txn, id)
        .await?
        .filter(|row| row.owner_id == actor.user.id)
        .ok_or_else(|| AppError::NotFound(format!("reservation {id}")))?;
    let running = row.status == reservation::Status::Confirmed
        && row.start_at <= now
        && now < row.end_at
        && row.released_reason.is_none();
    if !running {
        return Err(AppError::Conflict(Problem::NotRunning { id }));
    }
    if !db::reclaim::snooze(&txn, id, now).await? {
        return Err(AppError::Conflict(Problem::AlreadySnoozed { id }));
    }
    db::audit::append(
        &txn,
        db::audit::NewEntry {
            at: now,
            actor_id: Some(actor.user.id),
            action: AuditAction::IdleSnooze,
            target_kind: "reservation",
            target_id: id.to_string(),
            team_id: row.team_id,
        },
        None::<&()>,
        Some(&serde_json::json!({ "still_using_at": now, "idle_warnings": row.idle_warnings })),
    )
    .await?;
    txn.commit().await?;
    tracing::info!(reservation.id = id, "holder is still using an idle booking");
    Ok(now)
}

/// The policy that applies to team `team_id` (none: the platform's) and whether it is the team's
/// own override. Platform admins only.
pub async fn policy(
    state: &AppState,
    actor: &Actor,
    team_id: Option<i64>,
) -> Result<(IdlePolicy, bool), AppError> {
    actor.require_platform_admin()?;
    if let Some(team) = team_id {
        db::teams::team_name(&state.db, team)
            .await?
            .ok_or_else(|| AppError::NotFound(format!("team {team}")))?;
    }
    let policies = policies(&state.db).await?;
    let own = team_id.is_some_and(|team| policies.has_own(team));
    Ok((policies.for_team(team_id).clone(), own))
}

/// Sets the policy of team `team_id` (none: the platform's default), after checking it.
/// Platform admins only; audited.
pub async fn set_policy(
    state: &AppState,
    actor: &Actor,
    team_id: Option<i64>,
    policy: IdlePolicy,
) -> Result<IdlePolicy, AppError> {
    actor.require_platform_admin()?;
    policy.validate().map_err(|err| AppError::Validation {
        field: err.field().to_owned(),
        problem: err.problem(),
    })?;
    let now = state.now();
    let txn = begin_write(&state.db).await?;
    if let Some(team) = team_id {
        db::teams::team_name(&txn, team)
            .await?
            .ok_or_else(|| AppError::NotFound(format!("team {team}")))?;
    }
    let stored = policies(&txn).await?;
    let before = match team_id {
        Some(team) => stored.has_own(team).then(|| stored.for_team(Some(team))),
        None => Some(&stored.platform),
    };
    db::reclaim::save_policy(&txn, team_id, &policy, actor.user.id, now).await?;
    audit_policy(&txn, actor, team_id, before, Some(&policy), now).await?;
    txn.commit().await?;
    Ok(policy)
}

/// Removes team `team_id`'s override: the platform's policy applies to it again. Platform
/// admins only; audited.
pub async fn clear_team_policy(
    state: &AppState,
    actor: &Actor,
    team_id: i64,
) -> Result<(), AppError> {
    actor.require_platform_admin()?;
    let now = state.now();
    let txn = begin_write(&state.db).await?;
    let stored = policies(&txn).await?;
    if db::reclaim::remove_team_policy(&txn, team_id).await? {
        let before = stored.for_team(Some(team_id));
        audit_policy(&txn, actor, Some(team_id), Some(before), None, now).await?;
    }
    txn.commit().await?;
    Ok(())
}

async fn audit_policy(
    txn: &sea_orm::DatabaseTransaction,
    actor: &Actor,
    team_id: Option<i64>,
    before: Option<&IdlePolicy>,
    after: Option<&IdlePolicy>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    db::audit::append(
        txn,
        db::audit::NewEntry {
            at: now,
            actor_id: Some(actor.user.id),
            action: AuditAction::IdlePolicy,
            target_kind: "idle_policy",
            target_id: team_id.map_or_else(|| "platform".to_owned(), db::reclaim::team_scope),
            team_id,
        },
        before,
        after,
    )
    .await?;
    Ok(())
}

/// An idle policy as typed in the fleet page's form (every field text; a ticked checkbox is
/// present).
#[derive(Debug, Clone, Default)]
pub struct PolicyForm {
    /// `off`, `warn` or `release`.
    pub action: String,
    /// Percent.
    pub threshold_percent: String,
    /// Minutes.
    pub window_minutes: String,
    /// `60, 105`.
    pub warnings: String,
    /// GPUs.
    pub exempt_max_gpus: String,
    /// Hours.
    pub exempt_max_hours: String,
    /// The priority classes ticked.
    pub exempt_priorities: Vec<crate::domain::quota::Priority>,
    /// Percent.
    pub refund_percent: String,
}

/// The policy `form` describes, or the first field it gets wrong.
pub fn read_form(form: &PolicyForm) -> Result<IdlePolicy, AppError> {
    use crate::backend::input::required_number;
    use crate::domain::reclaim::{PolicyError, parse_warnings};
    let refuse = |err: PolicyError| AppError::Validation {
        field: err.field().to_owned(),
        problem: err.problem(),
    };
    let number = |field: &str, raw: &str, err: PolicyError| -> Result<u32, AppError> {
        let value = required_number(field, raw)?;
        u32::try_from(value).map_err(|_| refuse(err))
    };
    let percent = |field: &str, raw: &str, err: PolicyError| -> Result<u8, AppError> {
        u8::try_from(number(field, raw, err)?).map_err(|_| refuse(err))
    };
    let action = IdleAction::parse(&form.action).ok_or_else(|| {
        AppError::invalid(
            "action",
            Problem::Unreadable {
                detail: format!("`{}` is not off, warn or release", form.action.trim()),
            },
        )
    })?;
    let policy = IdlePolicy {
        threshold_percent: percent(
            "threshold_percent",
            &form.threshold_percent,
            PolicyError::Threshold,
        )?,
        window_minutes: number("window_minutes", &form.window_minutes, PolicyError::Window)?,
        warnings: parse_warnings(&form.warnings).map_err(refuse)?,
        action,
        exempt_max_gpus: number(
            "exempt_max_gpus",
            &form.exempt_max_gpus,
            PolicyError::Exemptions,
        )?,
        exempt_max_hours: number(
            "exempt_max_hours",
            &form.exempt_max_hours,
            PolicyError::Exemptions,
        )?,
        exempt_priorities: form.exempt_priorities.clone(),
        refund_percent: percent("refund_percent", &form.refund_percent, PolicyError::Refund)?,
    };
    policy.validate().map_err(refuse)?;
    Ok(policy)
}
