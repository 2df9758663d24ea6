//! Idle reclaim's queries: the policies, the bookings running now with their GPUs, their GPUs'
//! per-minute utilisation, and the reservation columns the policy writes.

use crate::backend::db::telemetry::{from_ms, to_ms};
use crate::backend::entity::{gpu_rollup, gpu_sample, idle_policy, reservation, reservation_gpu};
use crate::domain::quota::Priority;
use crate::domain::reclaim::{IdleAction, IdlePolicy, Minute};
use crate::domain::reservation::PaymentStatus;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseTransaction, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};
use std::collections::HashMap;

/// The scope key of the platform's policy.
pub const PLATFORM: &str = "platform";

/// The scope key of team `team_id`'s policy.
pub fn team_scope(team_id: i64) -> String {
    format!("team:{team_id}")
}

/// The policy stored in `row` (fields that no longer parse fall back to the default's).
pub fn policy_of(row: &idle_policy::Model) -> IdlePolicy {
    let default = IdlePolicy::default();
    IdlePolicy {
        threshold_percent: u8::try_from(row.threshold_percent).unwrap_or(default.threshold_percent),
        window_minutes: u32::try_from(row.window_minutes).unwrap_or(default.window_minutes),
        warnings: crate::domain::reclaim::parse_warnings(&row.warnings).unwrap_or(default.warnings),
        action: IdleAction::parse(&row.action).unwrap_or(default.action),
        exempt_max_gpus: u32::try_from(row.exempt_max_gpus).unwrap_or(default.exempt_max_gpus),
        exempt_max_hours: u32::try_from(row.exempt_max_hours).unwrap_or(default.exempt_max_hours),
        exempt_priorities: row
            .exempt_priorities
            .split(',')
            .filter_map(Priority::parse)
            .collect(),
        refund_percent: u8::try_from(row.refund_percent).unwrap_or(default.refund_percent),
    }
}

/// Every stored policy: the platform's (if set) and the teams' overrides by team.
pub async fn policies(
    db: &impl ConnectionTrait,
) -> Result<(Option<IdlePolicy>, HashMap<i64, IdlePolicy>), DbErr> {
    let rows = idle_policy::Entity::find().all(db).await?;
    let mut platform = None;
    let mut teams = HashMap::new();
    for row in rows {
        match row.team_id {
            Some(team) => {
                teams.insert(team, policy_of(&row));
            }
            None if row.scope == PLATFORM => platform = Some(policy_of(&row)),
            None => {}
        }
    }
    Ok((platform, teams))
}

/// Stores `policy` for `team_id` (none: the platform's), replacing what was there.
pub async fn save_policy(
    txn: &DatabaseTransaction,
    team_id: Option<i64>,
    policy: &IdlePolicy,
    by: i64,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let scope = team_id.map_or_else(|| PLATFORM.to_owned(), team_scope);
    let row = idle_policy::ActiveModel {
        scope: Set(scope),
        team_id: Set(team_id),
        threshold_percent: Set(i16::from(policy.threshold_percent)),
        window_minutes: Set(i32::try_from(policy.window_minutes).unwrap_or(i32::MAX)),
        warnings: Set(policy
            .warnings
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",")),
        action: Set(policy.action.as_str().to_owned()),
        exempt_max_gpus: Set(i32::try_from(policy.exempt_max_gpus).unwrap_or(i32::MAX)),
        exempt_max_hours: Set(i32::try_from(policy.exempt_max_hours).unwrap_or(i32::MAX)),
        exempt_priorities: Set(policy
            .exempt_priorities
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(",")),
        refund_percent: Set(i16::from(policy.refund_percent)),
        updated_at: Set(now),
        updated_by: Set(Some(by)),
    };
    idle_policy::Entity::insert(row)
        .on_conflict(
            OnConflict::column(idle_policy::Column::Scope)
                .update_columns([
                    idle_policy::Column::ThresholdPercent,
                    idle_policy::Column::WindowMinutes,
                    idle_policy::Column::Warnings,
                    idle_policy::Column::Action,
                    idle_policy::Column::ExemptMaxGpus,
                    idle_policy::Column::ExemptMaxHours,
                    idle_policy::Column::ExemptPriorities,
                    idle_policy::Column::RefundPercent,
                    idle_policy::Column::UpdatedAt,
                    idle_policy::Column::UpdatedBy,
                ])
                .to_owned(),
        )
        .exec(txn)
        .await?;
    Ok(())
}

/// Removes team `team_id`'s override (the platform's policy applies again); whether it had one.
pub async fn remove_team_policy(txn: &DatabaseTransaction, team_id: i64) -> Result<bool, DbErr> {
    let done = idle_policy::Entity::delete_by_id(team_scope(team_id))
        .exec(txn)
        .await?;
    Ok(done.rows_affected > 0)
}

/// A booking running at a moment, with what the policy reads of it.
#[derive(Debug, Clone)]
pub struct Running {
    /// The reservation.
    pub row: reservation::Model,
    /// The GPUs it holds now.
    pub gpus: Vec<i64>,
}

/// Confirmed bookings holding GPUs at `now` (begun, not ended, paid or free), oldest first.
pub async fn running(db: &impl ConnectionTrait, now: DateTime<Utc>) -> Result<Vec<Running>, DbErr> {
    let rows = reservation::Entity::find()
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::StartAt.lte(now))
        .filter(reservation::Column::EndAt.gt(now))
        .filter(reservation::Column::PaymentStatus.is_in([
            PaymentStatus::Paid,
            PaymentStatus::Free,
            PaymentStatus::Unpaid,
        ]))
        .order_by_asc(reservation::Column::Id)
        .all(db)
        .await?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let mut held: HashMap<i64, Vec<i64>> = HashMap::new();
    for chunk in ids.chunks(500) {
        let holds: Vec<(i64, i64)> = reservation_gpu::Entity::find()
            .select_only()
            .column(reservation_gpu::Column::ReservationId)
            .column(reservation_gpu::Column::GpuId)
            .filter(reservation_gpu::Column::ReservationId.is_in(chunk.to_vec()))
            .filter(reservation_gpu::Column::StartAt.lte(now))
            .filter(reservation_gpu::Column::EndAt.gt(now))
            .into_tuple()
            .all(db)
            .await?;
        for (reservation, gpu) in holds {
            held.entry(reservation).or_default().push(gpu);
        }
    }
    Ok(rows
        .into_iter()
        .map(|row| Running {
            gpus: held.remove(&row.id).unwrap_or_default(),
            row,
        })
        .collect())
}

/// Per GPU of `gpu_ids`: each minute in `[from, to]` with telemetry and the highest utilisation
/// reported in it (from the one-minute rollups and the raw samples not rolled up yet), ascending.
pub async fn minutes(
    db: &impl ConnectionTrait,
    gpu_ids: &[i64],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<HashMap<i64, Vec<Minute>>, DbErr> {
    let mut best: HashMap<(i64, i64), f64> = HashMap::new();
    for chunk in gpu_ids.chunks(500) {
        let rolled: Vec<(i64, i64, Option<f64>)> = gpu_rollup::Entity::find()
            .select_only()
            .column(gpu_rollup::Column::GpuId)
            .column(gpu_rollup::Column::MinuteMs)
            .column(gpu_rollup::Column::UtilMax)
            .filter(gpu_rollup::Column::GpuId.is_in(chunk.to_vec()))
            .filter(gpu_rollup::Column::MinuteMs.gte(to_ms(from)))
            .filter(gpu_rollup::Column::MinuteMs.lte(to_ms(to)))
            .into_tuple()
            .all(db)
            .await?;
        let minute = || Expr::cust("(gpu_samples.at_ms / 60000) * 60000");
        let raw: Vec<(i64, i64, Option<i32>)> = gpu_sample::Entity::find()
            .select_only()
            .column(gpu_sample::Column::GpuId)
            .column_as(minute(), "minute_ms")
            .column_as(
                Expr::cust("CAST(MAX(gpu_samples.gpu_util) AS INTEGER)"),
                "max_util",
            )
            .filter(gpu_sample::Column::GpuId.is_in(chunk.to_vec()))
            .filter(gpu_sample::Column::AtMs.gte(to_ms(from)))
            .filter(gpu_sample::Column::AtMs.lte(to_ms(to)))
            .group_by(gpu_sample::Column::GpuId)
            .group_by(minute())
            .into_tuple()
            .all(db)
            .await?;
        let readings = rolled.into_iter().chain(
            raw.into_iter()
                .map(|(gpu, minute, util)| (gpu, minute, util.map(f64::from))),
        );
        for (gpu, minute, util) in readings {
            if let Some(util) = util {
                let slot = best.entry((gpu, minute)).or_insert(util);
                *slot = slot.max(util);
            }
        }
    }
    let mut out: HashMap<i64, Vec<Minute>> = HashMap::new();
    for ((gpu, minute), max_util) in best {
        out.entry(gpu).or_default().push(Minute {
            at: from_ms(minute),
            max_util,
        });
    }
    for minutes in out.values_mut() {
        minutes.sort_by_key(|m| m.at);
    }
    Ok(out)
}

/// Records that warning `number` about the idle streak that began `since` was sent.
pub async fn set_warned(
    txn: &DatabaseTransaction,
    id: i64,
    since: DateTime<Utc>,
    number: u32,
) -> Result<(), DbErr> {
    reservation::Entity::update_many()
        .col_expr(reservation::Column::IdleSince, Expr::value(since))
        .col_expr(
            reservation::Column::IdleWarnings,
            Expr::value(i32::try_from(number).unwrap_or(i32::MAX)),
        )
        .filter(reservation::Column::Id.eq(id))
        .exec(txn)
        .await?;
    Ok(())
}

/// Records the holder's "I'm still using it" at `now`, unless one is recorded already; whether
/// this one was.
pub async fn snooze(txn: &DatabaseTransaction, id: i64, now: DateTime<Utc>) -> Result<bool, DbErr> {
    let done = reservation::Entity::update_many()
        .col_expr(reservation::Column::IdleSnoozedAt, Expr::value(now))
        .filter(reservation::Column::Id.eq(id))
        .filter(reservation::Column::IdleSnoozedAt.is_null())
        .exec(txn)
        .await?;
    Ok(done.rows_affected > 0)
}

/// Records that reservation `id` was reclaimed: it would have ended at `until`; the reclaim
/// refunded `refund_minor`.
pub async fn set_reclaimed(
    txn: &DatabaseTransaction,
    id: i64,
    until: DateTime<Utc>,
    refund_minor: i64,
) -> Result<(), DbErr> {
    reservation::Entity::update_many()
        .col_expr(reservation::Column::ReclaimedUntil, Expr::value(until))
        .col_expr(
            reservation::Column::ReclaimRefundMinor,
            Expr::value(refund_minor),
        )
        .filter(reservation::Column::Id.eq(id))
        .exec(txn)
        .await?;
    Ok(())
}
