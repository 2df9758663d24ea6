//! Team quotas per GPU model, team booking rules (burst, default priority, approvals), the use
//! that counts against a quota, and bookings waiting for approval.

use crate::backend::entity::{gpu, reservation, reservation_gpu, team, team_member, team_quota};
use crate::domain::gpu::GpuStatus;
use crate::domain::quota::{Quota, TeamPolicy, TeamSpan};
use crate::domain::reservation::{PaymentStatus, ReleaseReason};
use crate::domain::schedule::Window;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect,
};
use std::collections::HashMap;

/// The team's booking rules as stored.
pub fn stored_policy(row: &team::Model) -> Result<TeamPolicy, DbErr> {
    let bad = |column: &str| DbErr::Custom(format!("teams.id={}: {column}", row.id));
    Ok(TeamPolicy {
        allow_burst: row.allow_burst,
        default_priority: row.default_priority,
        approval_over_gpu_hours: row
            .approval_over_gpu_hours
            .map(u32::try_from)
            .transpose()
            .map_err(|_| bad("approval_over_gpu_hours"))?,
        approval_expiry_hours: u32::try_from(row.approval_expiry_hours)
            .map_err(|_| bad("approval_expiry_hours"))?,
    })
}

/// The team's booking rules; `None`: no such team.
pub async fn policy(db: &impl ConnectionTrait, team_id: i64) -> Result<Option<TeamPolicy>, DbErr> {
    team::Entity::find_by_id(team_id)
        .one(db)
        .await?
        .map(|row| stored_policy(&row))
        .transpose()
}

/// Stores the team's booking rules.
pub async fn set_policy(
    db: &impl ConnectionTrait,
    team_id: i64,
    policy: &TeamPolicy,
) -> Result<(), DbErr> {
    team::Entity::update_many()
        .col_expr(team::Column::AllowBurst, Expr::value(policy.allow_burst))
        .col_expr(
            team::Column::DefaultPriority,
            Expr::value(policy.default_priority),
        )
        .col_expr(
            team::Column::ApprovalOverGpuHours,
            Expr::value(
                policy
                    .approval_over_gpu_hours
                    .map(|h| i32::try_from(h).unwrap_or(i32::MAX)),
            ),
        )
        .col_expr(
            team::Column::ApprovalExpiryHours,
            Expr::value(i32::try_from(policy.approval_expiry_hours).unwrap_or(i32::MAX)),
        )
        .filter(team::Column::Id.eq(team_id))
        .exec(db)
        .await?;
    Ok(())
}

fn stored_quota(row: &team_quota::Model) -> Quota {
    Quota {
        guaranteed_gpus: u32::try_from(row.guaranteed_gpus).unwrap_or(0),
        weekly_gpu_hours: row.weekly_gpu_hours.map(|h| u32::try_from(h).unwrap_or(0)),
    }
}

/// The team's quota for `model`; `None`: no quota (no limit).
pub async fn quota(
    db: &impl ConnectionTrait,
    team_id: i64,
    model: &str,
) -> Result<Option<Quota>, DbErr> {
    Ok(team_quota::Entity::find_by_id((team_id, model.to_owned()))
        .one(db)
        .await?
        .map(|row| stored_quota(&row)))
}

/// The team's quotas, by model name.
pub async fn quotas(
    db: &impl ConnectionTrait,
    team_id: i64,
) -> Result<Vec<(String, Quota)>, DbErr> {
    Ok(team_quota::Entity::find()
        .filter(team_quota::Column::TeamId.eq(team_id))
        .order_by_asc(team_quota::Column::Model)
        .all(db)
        .await?
        .iter()
        .map(|row| (row.model.clone(), stored_quota(row)))
        .collect())
}

/// Every team's quota for `model` except `except_team`'s: GPUs guaranteed to others.
pub async fn guaranteed_to_others(
    db: &impl ConnectionTrait,
    model: &str,
    except_team: i64,
) -> Result<i64, DbErr> {
    let rows: Vec<i32> = team_quota::Entity::find()
        .select_only()
        .column(team_quota::Column::GuaranteedGpus)
        .filter(team_quota::Column::Model.eq(model))
        .filter(team_quota::Column::TeamId.ne(except_team))
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows.into_iter().map(i64::from).sum())
}

/// Every team's guaranteed GPUs of `model` (teams guaranteed none left out).
pub async fn guarantees(db: &impl ConnectionTrait, model: &str) -> Result<Vec<(i64, u32)>, DbErr> {
    let rows: Vec<(i64, i32)> = team_quota::Entity::find()
        .select_only()
        .column(team_quota::Column::TeamId)
        .column(team_quota::Column::GuaranteedGpus)
        .filter(team_quota::Column::Model.eq(model))
        .filter(team_quota::Column::GuaranteedGpus.gt(0))
        .order_by_asc(team_quota::Column::TeamId)
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(team, gpus)| (team, u32::try_from(gpus).unwrap_or(0)))
        .collect())
}

/// Every model's guarantees: team and guaranteed GPUs, by model (models without any left out).
pub async fn all_guarantees(
    db: &impl ConnectionTrait,
) -> Result<HashMap<String, Vec<(i64, u32)>>, DbErr> {
    let rows: Vec<(String, i64, i32)> = team_quota::Entity::find()
        .select_only()
        .column(team_quota::Column::Model)
        .column(team_quota::Column::TeamId)
        .column(team_quota::Column::GuaranteedGpus)
        .filter(team_quota::Column::GuaranteedGpus.gt(0))
        .order_by_asc(team_quota::Column::TeamId)
        .into_tuple()
        .all(db)
        .await?;
    let mut by_model: HashMap<String, Vec<(i64, u32)>> = HashMap::new();
    for (model, team, gpus) in rows {
        by_model
            .entry(model)
            .or_default()
            .push((team, u32::try_from(gpus).unwrap_or(0)));
    }
    Ok(by_model)
}

/// How many GPUs of `model` can be booked (not retired), locking their rows until `txn` ends
/// on PostgreSQL (SQLite's write transaction holds its lock already), so that quota changes of
/// one model happen one after another.
pub async fn lock_model(db: &impl ConnectionTrait, model: &str) -> Result<i64, DbErr> {
    let ids = lock_model_gpus(db, model).await?;
    Ok(i64::try_from(ids.len()).unwrap_or(i64::MAX))
}

/// The GPUs of `model` that can be booked (not retired, accepted), in id order, locked as
/// [`lock_model`] locks them.
pub async fn lock_model_gpus(db: &impl ConnectionTrait, model: &str) -> Result<Vec<i64>, DbErr> {
    let mut query = gpu::Entity::find()
        .select_only()
        .column(gpu::Column::Id)
        .filter(gpu::Column::Model.eq(model))
        .filter(gpu::Column::Status.ne(GpuStatus::Retired))
        .filter(gpu::Column::Pending.eq(false))
        .order_by_asc(gpu::Column::Id);
    if db.get_database_backend() == sea_orm::DbBackend::Postgres {
        query = query.lock_exclusive();
    }
    query.into_tuple().all(db).await
}

/// Sets (or with `None` removes) the team's quota for `model`.
pub async fn set_quota(
    db: &impl ConnectionTrait,
    team_id: i64,
    model: &str,
    quota: Option<&Quota>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    match quota {
        None => {
            team_quota::Entity::delete_many()
                .filter(team_quota::Column::TeamId.eq(team_id))
                .filter(team_quota::Column::Model.eq(model))
                .exec(db)
                .await?;
        }
        Some(quota) => {
            let to_i32 = |n: u32| i32::try_from(n).unwrap_or(i32::MAX);
            team_quota::Entity::insert(team_quota::ActiveModel {
                team_id: Set(team_id),
                model: Set(model.to_owned()),
                guaranteed_gpus: Set(to_i32(quota.guaranteed_gpus)),
                weekly_gpu_hours: Set(quota.weekly_gpu_hours.map(to_i32)),
                updated_at: Set(now),
            })
            .on_conflict(
                OnConflict::columns([team_quota::Column::TeamId, team_quota::Column::Model])
                    .update_columns([
                        team_quota::Column::GuaranteedGpus,
                        team_quota::Column::WeeklyGpuHours,
                        team_quota::Column::UpdatedAt,
                    ])
                    .to_owned(),
            )
            .exec_without_returning(db)
            .await?;
        }
    }
    Ok(())
}

/// A reservation as team use: id, model, quarters, start, end, preemptible.
type SpanRow = (i64, String, i16, DateTime<Utc>, DateTime<Utc>, bool);

/// The team's confirmed bookings (of `model`, if given) overlapping `[from, to)`, those waiting
/// for approval included (they hold their slots), as `(model, span, preemptible)`; with
/// `held_only`, only the non-preemptible ones: what counts against its quota.
pub async fn team_spans(
    db: &impl ConnectionTrait,
    team_id: i64,
    model: Option<&str>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    held_only: bool,
) -> Result<Vec<(String, TeamSpan, bool)>, DbErr> {
    let mut query = reservation::Entity::find()
        .select_only()
        .column(reservation::Column::Id)
        .column(reservation::Column::Model)
        .column(reservation::Column::Quarters)
        .column(reservation::Column::StartAt)
        .column(reservation::Column::EndAt)
        .column(reservation::Column::Preemptible)
        .filter(reservation::Column::TeamId.eq(team_id))
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::StartAt.lt(to))
        .filter(reservation::Column::EndAt.gt(from));
    if held_only {
        query = query.filter(reservation::Column::Preemptible.eq(false));
    }
    if let Some(model) = model {
        query = query.filter(reservation::Column::Model.eq(model));
    }
    let rows: Vec<SpanRow> = query.into_tuple().all(db).await?;
    let counts = gpu_counts(db, &rows.iter().map(|r| r.0).collect::<Vec<_>>()).await?;
    rows.into_iter()
        .map(|(id, model, quarters, start, end, preemptible)| {
            let window = Window::new(start, end)
                .map_err(|err| DbErr::Custom(format!("reservations.id={id}: {err}")))?;
            let gpus = counts.get(&id).copied().unwrap_or(0);
            Ok((
                model,
                TeamSpan {
                    window,
                    quarters: i64::from(quarters) * gpus,
                },
                preemptible,
            ))
        })
        .collect()
}

/// How many GPUs each reservation holds.
async fn gpu_counts(db: &impl ConnectionTrait, ids: &[i64]) -> Result<HashMap<i64, i64>, DbErr> {
    let mut counts = HashMap::new();
    for chunk in ids.chunks(5000) {
        let held: Vec<i64> = reservation_gpu::Entity::find()
            .select_only()
            .column(reservation_gpu::Column::ReservationId)
            .filter(reservation_gpu::Column::ReservationId.is_in(chunk.to_vec()))
            .into_tuple()
            .all(db)
            .await?;
        for id in held {
            *counts.entry(id).or_insert(0) += 1;
        }
    }
    Ok(counts)
}

/// Who `user_id` is for the team: `Some(true)` an admin of it (or a platform admin),
/// `Some(false)` a member, `None` neither.
pub async fn standing(
    db: &impl ConnectionTrait,
    team_id: i64,
    user_id: i64,
    platform_admin: bool,
) -> Result<Option<bool>, DbErr> {
    if platform_admin {
        return Ok(Some(true));
    }
    Ok(team_member::Entity::find_by_id((team_id, user_id))
        .one(db)
        .await?
        .map(|row| row.role == "admin"))
}

/// The team's bookings waiting for approval, earliest expiry first.
pub async fn awaiting_approval(
    db: &impl ConnectionTrait,
    team_id: i64,
) -> Result<Vec<reservation::Model>, DbErr> {
    reservation::Entity::find()
        .filter(reservation::Column::TeamId.eq(team_id))
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::PaymentStatus.eq(PaymentStatus::AwaitingApproval))
        .order_by_asc(reservation::Column::ApprovalExpiresAt)
        .order_by_asc(reservation::Column::Id)
        .all(db)
        .await
}

/// How many of the user's bookings a higher-priority booking displaced in the last week whose
/// window has not ended: what the app tells them about on every page.
pub async fn count_displaced(
    db: &impl ConnectionTrait,
    user_id: i64,
    now: DateTime<Utc>,
) -> Result<u32, DbErr> {
    use sea_orm::PaginatorTrait;
    let count = reservation::Entity::find()
        .filter(reservation::Column::OwnerId.eq(user_id))
        .filter(reservation::Column::ReleasedReason.eq(ReleaseReason::Preempted))
        .filter(reservation::Column::CancelledAt.gt(now - chrono::TimeDelta::days(7)))
        .filter(reservation::Column::EndAt.gt(now))
        .count(db)
        .await?;
    Ok(u32::try_from(count).unwrap_or(u32::MAX))
}

/// How many bookings wait for approval in the teams the user administers.
pub async fn count_awaiting_for_admin(
    db: &impl ConnectionTrait,
    user_id: i64,
) -> Result<u32, DbErr> {
    use sea_orm::PaginatorTrait;
    let teams: Vec<i64> = team_member::Entity::find()
        .select_only()
        .column(team_member::Column::TeamId)
        .filter(team_member::Column::UserId.eq(user_id))
        .filter(team_member::Column::Role.eq("admin"))
        .into_tuple()
        .all(db)
        .await?;
    if teams.is_empty() {
        return Ok(0);
    }
    let count = reservation::Entity::find()
        .filter(reservation::Column::TeamId.is_in(teams))
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::PaymentStatus.eq(PaymentStatus::AwaitingApproval))
        .count(db)
        .await?;
    Ok(u32::try_from(count).unwrap_or(u32::MAX))
}
