//! What cost reports read: the bookings that start in a period with their GPU counts and the
//! money charged and refunded for them (kept on each booking with every charge and refund, equal
//! to the wallet side of the ledger), the telemetry measured while they ran
//! (`reservation_usage`), and for the fleet view the GPUs' lives, every booking held in the
//! period and the fleet's hourly telemetry. A handful of set queries, whatever the period's size.

use super::telemetry::{from_ms, to_ms};
use crate::backend::entity::{fleet_usage_hour, gpu, node, reservation, reservation_usage, team};
use crate::domain::gpu::GpuStatus;
use crate::domain::report::{BookingFact, FleetHour, GpuLife, Scope, Usage};
use crate::domain::reservation::PaymentStatus;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Alias, Condition, Expr, ExprTrait, Query, SelectStatement};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, FromQueryResult, Order, QueryFilter,
    QuerySelect,
};
use std::collections::HashMap;

/// Which reservations a report covers, as a condition on `reservations`.
fn scope_condition(scope: Scope, viewer: i64) -> Condition {
    let col = |c: reservation::Column| Expr::col((reservation::Entity, c));
    match scope {
        Scope::Mine => Condition::all().add(col(reservation::Column::OwnerId).eq(viewer)),
        Scope::Team(team) => Condition::all().add(col(reservation::Column::TeamId).eq(team)),
        Scope::All => Condition::all(),
    }
}

/// Reservations starting in `[from, to)` within `scope`, not waiting for approval.
fn starting_in(from: DateTime<Utc>, to: DateTime<Utc>, scope: Scope, viewer: i64) -> Condition {
    let col = |c: reservation::Column| Expr::col((reservation::Entity, c));
    Condition::all()
        .add(col(reservation::Column::StartAt).gte(from))
        .add(col(reservation::Column::StartAt).lt(to))
        .add(col(reservation::Column::PaymentStatus).ne(PaymentStatus::AwaitingApproval))
        .add(scope_condition(scope, viewer))
}

/// A select from `table` joined to the reservations it belongs to (by `reservation_id`).
fn joined_to_reservations(table: Alias, condition: Condition) -> SelectStatement {
    Query::select()
        .from(table.clone())
        .inner_join(
            reservation::Entity,
            Expr::col((table, Alias::new("reservation_id")))
                .equals((reservation::Entity, reservation::Column::Id)),
        )
        .cond_where(condition)
        .to_owned()
}

/// Every booking that starts in `[from, to)` within `scope` (`viewer`: whose are "mine"), with
/// its GPUs, telemetry and money, oldest first.
pub async fn booking_facts(
    db: &impl ConnectionTrait,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    scope: Scope,
    viewer: i64,
) -> Result<Vec<BookingFact>, DbErr> {
    facts_where(db, &starting_in(from, to, scope, viewer)).await
}

/// The `limit` bookings starting in `[from, to)` with the most idle reserved time (idle minutes
/// measured × quarters), most first, as facts: what the fleet view lists, read without loading
/// every other booking of the period.
pub async fn most_idle(
    db: &impl ConnectionTrait,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<BookingFact>, DbErr> {
    let col = |c: reservation::Column| Expr::col((reservation::Entity, c));
    let mut select = joined_to_reservations(
        Alias::new("reservation_usage"),
        starting_in(from, to, Scope::All, 0),
    );
    select
        .expr_as(col(reservation::Column::Id), Alias::new("rid"))
        .group_by_col((reservation::Entity, reservation::Column::Id))
        .group_by_col((reservation::Entity, reservation::Column::Quarters))
        .group_by_col((reservation::Entity, reservation::Column::StartAt))
        .and_having(Expr::cust("SUM(reservation_usage.idle_minutes) > 0"))
        .order_by_expr(
            Expr::cust("SUM(reservation_usage.idle_minutes) * reservations.quarters"),
            Order::Desc,
        )
        .order_by(
            (reservation::Entity, reservation::Column::StartAt),
            Order::Asc,
        )
        .order_by((reservation::Entity, reservation::Column::Id), Order::Asc)
        .limit(u64::try_from(limit).unwrap_or(u64::MAX));
    let mut ids = Vec::new();
    for row in db.query_all(&select).await? {
        ids.push(row.try_get::<i64>("", "rid")?);
    }
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    facts_where(
        db,
        &starting_in(from, to, Scope::All, 0).add(col(reservation::Column::Id).is_in(ids)),
    )
    .await
}

/// A booking's own columns that a report reads.
#[derive(Debug, FromQueryResult)]
struct BookingRow {
    id: i64,
    owner_id: i64,
    team_id: Option<i64>,
    node_id: i64,
    model: String,
    quarters: i16,
    start_at: DateTime<Utc>,
    end_at: DateTime<Utc>,
    cancelled_at: Option<DateTime<Utc>>,
    gpu_count: i32,
    charged_minor: i64,
    refunded_minor: i64,
    reclaimed_until: Option<DateTime<Utc>>,
    reclaim_refund_minor: i64,
    sla_credit_minor: i64,
}

/// The facts of the bookings that meet `condition` (on `reservations`), oldest first.
async fn facts_where(
    db: &impl ConnectionTrait,
    condition: &Condition,
) -> Result<Vec<BookingFact>, DbErr> {
    let rows = reservation::Entity::find()
        .select_only()
        .columns([
            reservation::Column::Id,
            reservation::Column::OwnerId,
            reservation::Column::TeamId,
            reservation::Column::NodeId,
            reservation::Column::Model,
            reservation::Column::Quarters,
            reservation::Column::StartAt,
            reservation::Column::EndAt,
            reservation::Column::CancelledAt,
            reservation::Column::GpuCount,
            reservation::Column::ChargedMinor,
            reservation::Column::RefundedMinor,
            reservation::Column::ReclaimedUntil,
            reservation::Column::ReclaimRefundMinor,
            reservation::Column::SlaCreditMinor,
        ])
        .filter(condition.clone())
        .into_model::<BookingRow>()
        .all(db)
        .await?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    // Telemetry per reservation, over its GPUs.
    let mut usage: HashMap<i64, Usage> = HashMap::new();
    let mut select = joined_to_reservations(Alias::new("reservation_usage"), condition.clone());
    select
        .expr_as(
            Expr::col((
                reservation_usage::Entity,
                reservation_usage::Column::ReservationId,
            )),
            Alias::new("rid"),
        )
        .expr_as(
            Expr::cust("CAST(SUM(reservation_usage.measured_minutes) AS BIGINT)"),
            Alias::new("measured"),
        )
        .expr_as(
            Expr::cust("CAST(SUM(reservation_usage.idle_minutes) AS BIGINT)"),
            Alias::new("idle"),
        )
        .expr_as(
            Expr::cust("SUM(reservation_usage.util_sum)"),
            Alias::new("util"),
        )
        .group_by_col((
            reservation_usage::Entity,
            reservation_usage::Column::ReservationId,
        ));
    for row in db.query_all(&select).await? {
        usage.insert(
            row.try_get("", "rid")?,
            Usage {
                measured_minutes: row.try_get("", "measured")?,
                idle_minutes: row.try_get("", "idle")?,
                util_sum: row.try_get("", "util")?,
            },
        );
    }

    let mut owner_ids: Vec<i64> = rows.iter().map(|r| r.owner_id).collect();
    owner_ids.sort_unstable();
    owner_ids.dedup();
    let owners = super::users::names_of(db, &owner_ids).await?;
    let teams: HashMap<i64, String> = team::Entity::find()
        .select_only()
        .column(team::Column::Id)
        .column(team::Column::Name)
        .into_tuple::<(i64, String)>()
        .all(db)
        .await?
        .into_iter()
        .collect();
    let nodes: HashMap<i64, String> = node::Entity::find()
        .select_only()
        .column(node::Column::Id)
        .column(node::Column::Name)
        .into_tuple::<(i64, String)>()
        .all(db)
        .await?
        .into_iter()
        .collect();

    // Bookings made from a window held for a watch.
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let mut from_watch: std::collections::HashSet<i64> = std::collections::HashSet::new();
    for chunk in ids.chunks(1000) {
        let booked: Vec<Option<i64>> = crate::backend::entity::watch_offer::Entity::find()
            .select_only()
            .column(crate::backend::entity::watch_offer::Column::ReservationId)
            .filter(
                crate::backend::entity::watch_offer::Column::ReservationId.is_in(chunk.to_vec()),
            )
            .into_tuple()
            .all(db)
            .await?;
        from_watch.extend(booked.into_iter().flatten());
    }

    let mut facts: Vec<BookingFact> = rows
        .into_iter()
        .map(|row| BookingFact {
            from_watch: from_watch.contains(&row.id),
            id: row.id,
            owner_id: row.owner_id,
            owner_name: owners
                .get(&row.owner_id)
                .cloned()
                .unwrap_or_else(|| format!("#{}", row.owner_id)),
            team_id: row.team_id,
            team_name: row.team_id.and_then(|id| teams.get(&id).cloned()),
            node: nodes
                .get(&row.node_id)
                .cloned()
                .unwrap_or_else(|| format!("#{}", row.node_id)),
            model: row.model,
            start: row.start_at,
            held_until: row
                .cancelled_at
                .map_or(row.end_at, |c| Ord::min(c, row.end_at)),
            gpus: u32::try_from(row.gpu_count).unwrap_or(0),
            quarters: u32::try_from(row.quarters).unwrap_or(4),
            charged_minor: row.charged_minor,
            refunded_minor: row.refunded_minor,
            reclaimed_until: row.reclaimed_until,
            reclaim_refund_minor: row.reclaim_refund_minor,
            sla_credit_minor: row.sla_credit_minor,
            usage: usage.get(&row.id).copied().unwrap_or_default(),
        })
        .collect();
    facts.sort_by_key(|f| (f.start, f.id));
    Ok(facts)
}

/// Every GPU's life in the fleet: added, and retired or vanished (if so).
pub async fn gpu_lives(db: &impl ConnectionTrait) -> Result<Vec<GpuLife>, DbErr> {
    // Added, status, last changed, vanished.
    type Life = (
        DateTime<Utc>,
        GpuStatus,
        DateTime<Utc>,
        Option<DateTime<Utc>>,
    );
    let rows: Vec<Life> = gpu::Entity::find()
        .select_only()
        .column(gpu::Column::CreatedAt)
        .column(gpu::Column::Status)
        .column(gpu::Column::UpdatedAt)
        .column(gpu::Column::VanishedAt)
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(created, status, updated, vanished)| GpuLife {
            from: created,
            until: vanished.or((status == GpuStatus::Retired).then_some(updated)),
        })
        .collect())
}

/// Every booking held at some time in `[from, to)` (not waiting for approval): its start, when
/// it stopped being held, and its share-GPUs (GPUs × quarters).
pub async fn held_in(
    db: &impl ConnectionTrait,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<(DateTime<Utc>, DateTime<Utc>, i64)>, DbErr> {
    type Held = (
        DateTime<Utc>,
        DateTime<Utc>,
        Option<DateTime<Utc>>,
        i16,
        i32,
    );
    let rows: Vec<Held> = reservation::Entity::find()
        .select_only()
        .columns([
            reservation::Column::StartAt,
            reservation::Column::EndAt,
            reservation::Column::CancelledAt,
            reservation::Column::Quarters,
            reservation::Column::GpuCount,
        ])
        .filter(reservation::Column::StartAt.lt(to))
        .filter(reservation::Column::EndAt.gt(from))
        .filter(reservation::Column::PaymentStatus.ne(PaymentStatus::AwaitingApproval))
        .into_tuple()
        .all(db)
        .await?;
    let mut held = Vec::new();
    for (start, end, cancelled, quarters, gpus) in rows {
        let until = cancelled.map_or(end, |c| Ord::min(c, end));
        if until > start && gpus > 0 {
            held.push((start, until, i64::from(gpus) * i64::from(quarters)));
        }
    }
    Ok(held)
}

/// The time the idle policy brought back to the fleet in `[from, to)`: each reclaimed booking's
/// new end, its old end, and its shares (GPUs × quarters).
pub async fn reclaimed_in(
    db: &impl ConnectionTrait,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<(DateTime<Utc>, DateTime<Utc>, i64)>, DbErr> {
    type Reclaimed = (DateTime<Utc>, Option<DateTime<Utc>>, i16, i32);
    let rows: Vec<Reclaimed> = reservation::Entity::find()
        .select_only()
        .columns([
            reservation::Column::EndAt,
            reservation::Column::ReclaimedUntil,
            reservation::Column::Quarters,
            reservation::Column::GpuCount,
        ])
        .filter(reservation::Column::ReclaimedUntil.gt(from))
        .filter(reservation::Column::EndAt.lt(to))
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(end, until, quarters, gpus)| {
            until
                .filter(|until| *until > end)
                .map(|until| (end, until, i64::from(gpus) * i64::from(quarters)))
        })
        .collect())
}

/// The fleet's telemetry per UTC hour starting in `[from, to)`.
pub async fn fleet_hours(
    db: &impl ConnectionTrait,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<FleetHour>, DbErr> {
    Ok(fleet_usage_hour::Entity::find()
        .filter(fleet_usage_hour::Column::HourMs.gte(to_ms(from)))
        .filter(fleet_usage_hour::Column::HourMs.lt(to_ms(to)))
        .all(db)
        .await?
        .into_iter()
        .map(|row| FleetHour {
            hour: from_ms(row.hour_ms),
            usage: Usage {
                measured_minutes: row.measured_minutes,
                idle_minutes: row.idle_minutes,
                util_sum: row.util_sum,
            },
        })
        .collect())
}
