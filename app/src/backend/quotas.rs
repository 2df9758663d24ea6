//! Team quotas, booking rules and approvals as a service: who may change them, each change in
//! one write transaction with its audit entry, and what the team dashboard shows of them.

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::db::audit::NewEntry;
use crate::backend::state::AppState;
use crate::backend::team_access::{locked, require_manage};
use crate::domain::audit::AuditAction;
use crate::domain::notify::NewEvent;
use crate::domain::problem::Problem;
use crate::domain::quota::{
    IDLE_LOOKBACK, IdleBooking, Priority, Quota, TeamPolicy, TeamRules, idle_average, parse_policy,
    parse_quota, quota_use,
};
use crate::domain::reservation::{PaymentStatus, ReleaseReason, Reservation};
use crate::error::AppError;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Sets the team's quota for `model` (platform admins only: team admins see quotas but do not
/// set them); `guaranteed_gpus` None removes it. The guarantees of all teams for a model never
/// add up to more GPUs than the fleet has of it.
pub async fn set_quota(
    state: &AppState,
    actor: &Actor,
    team_id: i64,
    model: &str,
    guaranteed_gpus: Option<i64>,
    weekly_gpu_hours: Option<i64>,
    now: DateTime<Utc>,
) -> Result<Option<Quota>, AppError> {
    let db = &state.db;
    // Who may see the team first (404 for strangers), then only platform admins may change.
    require_manage(db, actor, team_id).await?;
    actor.require_platform_admin()?;
    let model = model.trim();
    let quota = guaranteed_gpus
        .map(|gpus| parse_quota(gpus, weekly_gpu_hours))
        .transpose()
        .map_err(|(field, problem)| AppError::invalid(field, problem))?;
    // The model's GPUs first, then the team: the order bookings lock them in.
    let txn = db::begin_write(db).await?;
    let fleet = db::quotas::lock_model(&txn, model).await?;
    // A quota of a model no longer in the fleet can still be removed.
    if fleet == 0 && quota.is_some() {
        return Err(AppError::invalid(
            "model",
            Problem::NoGpuOfModel {
                model: model.to_owned(),
            },
        ));
    }
    db::teams::lock_team(&txn, team_id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("team {team_id}")))?;
    require_manage(&txn, actor, team_id).await?;
    if let Some(quota) = &quota {
        let others = db::quotas::guaranteed_to_others(&txn, model, team_id).await?;
        let room = (fleet - others).max(0);
        if i64::from(quota.guaranteed_gpus) > room {
            return Err(AppError::invalid(
                "guaranteed_gpus",
                Problem::OutOfRange { min: 0, max: room },
            ));
        }
    }
    let before = db::quotas::quota(&txn, team_id, model).await?;
    db::quotas::set_quota(&txn, team_id, model, quota.as_ref(), now).await?;
    #[derive(Serialize)]
    struct QuotaValues<'a> {
        model: &'a str,
        quota: Option<Quota>,
    }
    db::audit::append(
        &txn,
        NewEntry {
            at: now,
            actor_id: Some(actor.user.id),
            action: AuditAction::TeamQuota,
            target_kind: "team",
            target_id: team_id.to_string(),
            team_id: Some(team_id),
        },
        Some(&QuotaValues {
            model,
            quota: before,
        }),
        Some(&QuotaValues { model, quota }),
    )
    .await?;
    txn.commit().await?;
    Ok(quota)
}

/// A team's booking rules as a form or the API sends them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PolicyForm {
    /// Bookings beyond a quota go through as preemptible.
    #[serde(default)]
    pub allow_burst: bool,
    /// `production`, `training`, `development` or `batch`.
    pub default_priority: String,
    /// Bookings of more GPU-hours than this wait for approval (absent: never).
    #[serde(default)]
    pub approval_over_gpu_hours: Option<i64>,
    /// Hours a booking waits for approval (default 24).
    #[serde(default)]
    pub approval_expiry_hours: Option<i64>,
}

/// Sets the team's booking rules (its admins, platform admins), with its audit entry.
pub async fn set_policy(
    state: &AppState,
    actor: &Actor,
    team_id: i64,
    form: &PolicyForm,
    now: DateTime<Utc>,
) -> Result<TeamPolicy, AppError> {
    let db = &state.db;
    require_manage(db, actor, team_id).await?;
    let policy = parse_policy(
        form.allow_burst,
        &form.default_priority,
        form.approval_over_gpu_hours,
        form.approval_expiry_hours.unwrap_or(24),
    )
    .map_err(|(field, problem)| AppError::invalid(field, problem))?;
    // Production is the platform's call: team admins choose up to training.
    if policy.default_priority == Priority::Production && actor.require_platform_admin().is_err() {
        return Err(AppError::invalid(
            "default_priority",
            Problem::PriorityNotAllowed {
                asked: Priority::Production.as_str().into(),
                most: Priority::Training.as_str().into(),
            },
        ));
    }
    let txn = locked(db, actor, team_id, true).await?;
    let before = db::quotas::policy(&txn, team_id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("team {team_id}")))?;
    db::quotas::set_policy(&txn, team_id, &policy).await?;
    db::audit::append(
        &txn,
        NewEntry {
            at: now,
            actor_id: Some(actor.user.id),
            action: AuditAction::TeamRules,
            target_kind: "team",
            target_id: team_id.to_string(),
            team_id: Some(team_id),
        },
        Some(&before),
        Some(&policy),
    )
    .await?;
    txn.commit().await?;
    Ok(policy)
}

/// Approves or rejects the team's booking `id` waiting for approval (its admins, platform
/// admins), with its audit entry; answers the booking as it is afterwards.
pub async fn decide(
    state: &crate::backend::state::AppState,
    actor: &Actor,
    team_id: i64,
    id: i64,
    approve: bool,
    now: DateTime<Utc>,
) -> Result<Reservation, AppError> {
    require_manage(&state.db, actor, team_id).await?;
    let txn = db::begin_write(&state.db).await?;
    let before = crate::backend::reservations::decide_approval(
        &txn,
        team_id,
        id,
        approve,
        actor.user.id,
        now,
        (&state.portal.charge, &state.portal.currency),
    )
    .await?;
    // Again inside the transaction: an admin removed meanwhile decides nothing.
    require_manage(&txn, actor, team_id).await?;
    let after = db::reservations::view_of(&txn, id, now)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("reservation {id}")))?;
    #[derive(Serialize)]
    struct Decision {
        owner_id: i64,
        payment_status: PaymentStatus,
        price_minor: i64,
    }
    db::audit::append(
        &txn,
        NewEntry {
            at: now,
            actor_id: Some(actor.user.id),
            action: if approve {
                AuditAction::BookingApprove
            } else {
                AuditAction::BookingReject
            },
            target_kind: "reservation",
            target_id: id.to_string(),
            team_id: Some(team_id),
        },
        Some(&Decision {
            owner_id: before.owner_id,
            payment_status: before.payment_status,
            price_minor: before.price_minor,
        }),
        Some(&Decision {
            owner_id: after.owner_id,
            payment_status: after.payment_status,
            price_minor: after.price_minor,
        }),
    )
    .await?;
    let events = if approve {
        let mut events = vec![NewEvent::approved(&after, actor.user.name.clone(), now)];
        events.extend(NewEvent::reminders(&after, now));
        events
    } else {
        vec![NewEvent::released(&after, ReleaseReason::Rejected, 0, now)]
    };
    crate::backend::notify::record(&txn, &events).await?;
    txn.commit().await?;
    state.wake.poke();
    if !approve {
        state.freed.poke();
    }
    tracing::info!(reservation.id = id, approve, "booking decided");
    Ok(after)
}

/// The team's rules, this week's use against quota, pending approvals and idle bookings.
pub async fn rules(
    state: &AppState,
    team_id: i64,
    now: DateTime<Utc>,
) -> Result<TeamRules, AppError> {
    let db = &state.db;
    let policy = db::quotas::policy(db, team_id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("team {team_id}")))?;
    let (week_start, week_end) = crate::domain::team::utc_week_of(now);
    let (quotas, spans, models, pending_rows, running) = tokio::try_join!(
        db::quotas::quotas(db, team_id),
        db::quotas::team_spans(db, team_id, None, week_start, week_end, false),
        db::inventory::list_models(db),
        db::quotas::awaiting_approval(db, team_id),
        db::reservations::team_bookings(db, team_id, now, now + chrono::TimeDelta::minutes(1), now),
    )?;
    let pending = db::reservations::views(db, pending_rows, now).await?;
    let running: Vec<Reservation> = running
        .into_iter()
        .filter(|r| r.window.start() <= now && now < r.window.end())
        .collect();
    // Each booking measured from its own start at the earliest: before it, the GPUs were
    // someone else's.
    let mut idle = Vec::new();
    for reservation in running {
        let from = reservation.window.start().max(now - IDLE_LOOKBACK);
        let utilization =
            db::telemetry::average_utilization(db, &reservation.gpu_ids, from, now).await?;
        let readings: Vec<Option<(f64, i64)>> = reservation
            .gpu_ids
            .iter()
            .map(|gpu| utilization.get(gpu).copied())
            .collect();
        if let Some(average_util) = idle_average(&readings) {
            idle.push(IdleBooking {
                reservation,
                average_util,
            });
        }
    }
    Ok(TeamRules {
        policy,
        quotas: quota_use(&quotas, &spans, week_start, week_end),
        models,
        pending,
        idle,
    })
}
