//! Maintenance windows: set, list, end early. Setting one takes the same locks as a booking (the
//! GPUs' rows on PostgreSQL, the write lock on SQLite) and checks for confirmed reservations in
//! the same transaction, so a booking and a maintenance window can never both win a slot.

use crate::backend::db::begin_write;
use crate::backend::db::reservations::{self, holds_on, lock_gpus};
use crate::backend::entity::{gpu, maintenance_window, node, user};
use crate::domain::maintenance::{EndEarly, MaintenanceWindow, NewMaintenance, end_early};
use crate::domain::problem::Problem;
use crate::domain::reservation::ReleaseReason;
use crate::domain::schedule::Window;
use crate::error::AppError;
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr,
    EntityTrait, IntoActiveModel, QueryFilter, QueryOrder, QuerySelect,
};
use std::collections::HashMap;

/// Most windows one listing returns.
const LIST_LIMIT: u64 = 500;

/// Takes `gpu_ids` out of booking during `request.window`, one row per GPU, all or none. Fails
/// with `Validation` for unknown GPUs and `Conflict` naming the reservations in the way, unless
/// `release` is set: then those reservations are released and their charges refunded in full,
/// in the same transaction.
#[tracing::instrument(skip_all, fields(user.id = created_by))]
pub async fn create(
    db: &DatabaseConnection,
    gpu_ids: &[i64],
    request: &NewMaintenance,
    created_by: i64,
    now: DateTime<Utc>,
    release: bool,
) -> Result<Vec<MaintenanceWindow>, AppError> {
    let txn = begin_write(db).await?;
    let found: Vec<i64> = gpu::Entity::find()
        .select_only()
        .column(gpu::Column::Id)
        .filter(gpu::Column::Id.is_in(gpu_ids.to_vec()))
        .into_tuple()
        .all(&txn)
        .await?;
    if let Some(missing) = gpu_ids.iter().find(|id| !found.contains(id)) {
        return Err(AppError::invalid(
            "gpu_ids",
            Problem::NoSuchGpu { id: *missing },
        ));
    }
    lock_gpus(&txn, gpu_ids).await?;
    let mut in_the_way: Vec<i64> = holds_on(&txn, gpu_ids, &request.window)
        .await?
        .into_iter()
        .map(|hold| hold.reservation_id)
        .collect();
    in_the_way.sort_unstable();
    in_the_way.dedup();
    if !in_the_way.is_empty() && !release {
        return Err(AppError::Conflict(Problem::ReservationsInTheWay {
            ids: in_the_way,
        }));
    }
    for id in &in_the_way {
        reservations::release(&txn, *id, Some(created_by), now, ReleaseReason::Maintenance).await?;
    }
    let mut ids = Vec::with_capacity(gpu_ids.len());
    for gpu_id in gpu_ids {
        let row = maintenance_window::ActiveModel {
            gpu_id: Set(*gpu_id),
            start_at: Set(request.window.start()),
            end_at: Set(request.window.end()),
            reason: Set(request.reason.clone()),
            created_by: Set(Some(created_by)),
            created_at: Set(now),
            ..Default::default()
        }
        .insert(&txn)
        .await?;
        ids.push(row.id);
    }
    let rows = maintenance_window::Entity::find()
        .filter(maintenance_window::Column::Id.is_in(ids))
        .order_by_asc(maintenance_window::Column::GpuId)
        .all(&txn)
        .await?;
    let created = views(&txn, rows).await?;
    for window in &created {
        crate::backend::db::audit::append(
            &txn,
            crate::backend::db::audit::NewEntry {
                at: now,
                actor_id: Some(created_by),
                action: crate::domain::audit::AuditAction::MaintenanceCreate,
                target_kind: "maintenance",
                target_id: window.id.to_string(),
                team_id: None,
            },
            None::<&()>,
            Some(&serde_json::json!({
                "gpu_id": window.gpu_id,
                "start": request.window.start(),
                "end": request.window.end(),
                "reason": request.reason,
                "released_reservations": in_the_way,
            })),
        )
        .await?;
    }
    txn.commit().await?;
    Ok(created)
}

/// Windows that end after `from`, soonest first (at most 500).
pub async fn list_ending_after(
    db: &impl ConnectionTrait,
    from: DateTime<Utc>,
) -> Result<Vec<MaintenanceWindow>, DbErr> {
    let rows = maintenance_window::Entity::find()
        .filter(maintenance_window::Column::EndAt.gt(from))
        .order_by_asc(maintenance_window::Column::StartAt)
        .order_by_asc(maintenance_window::Column::GpuId)
        .limit(LIST_LIMIT)
        .all(db)
        .await?;
    views(db, rows).await
}

/// Ends window `id` early at `now`: removes an upcoming one, shortens an ongoing one to the next
/// slot boundary; a finished one answers `Conflict`. Returns the window as it was set.
pub async fn end(
    db: &DatabaseConnection,
    id: i64,
    actor_id: Option<i64>,
    now: DateTime<Utc>,
) -> Result<MaintenanceWindow, AppError> {
    let txn = begin_write(db).await?;
    let row = maintenance_window::Entity::find_by_id(id)
        .one(&txn)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("maintenance window {id}")))?;
    let window = stored(&row)?;
    let view = views(&txn, vec![row.clone()]).await?.remove(0);
    let before = serde_json::json!({
        "gpu_id": row.gpu_id,
        "start": window.start(),
        "end": window.end(),
    });
    let after = match end_early(&window, now) {
        EndEarly::Remove => {
            maintenance_window::Entity::delete_by_id(id)
                .exec(&txn)
                .await?;
            None
        }
        EndEarly::EndAt(end) => {
            let mut active = row.into_active_model();
            active.end_at = Set(end);
            active.update(&txn).await?;
            Some(serde_json::json!({
                "gpu_id": view.gpu_id,
                "start": window.start(),
                "end": end,
            }))
        }
        EndEarly::AlreadyOver => {
            return Err(AppError::Conflict(Problem::MaintenanceOver { id }));
        }
    };
    crate::backend::db::audit::append(
        &txn,
        crate::backend::db::audit::NewEntry {
            at: now,
            actor_id,
            action: crate::domain::audit::AuditAction::MaintenanceCancel,
            target_kind: "maintenance",
            target_id: id.to_string(),
            team_id: None,
        },
        Some(&before),
        after.as_ref(),
    )
    .await?;
    txn.commit().await?;
    Ok(view)
}

fn stored(row: &maintenance_window::Model) -> Result<Window, DbErr> {
    Window::new(row.start_at, row.end_at)
        .map_err(|err| DbErr::Custom(format!("maintenance_windows.id={}: {err}", row.id)))
}

/// Rows as [`MaintenanceWindow`]s, reading GPUs, nodes and admins in three queries.
async fn views(
    db: &impl ConnectionTrait,
    rows: Vec<maintenance_window::Model>,
) -> Result<Vec<MaintenanceWindow>, DbErr> {
    let gpus: HashMap<i64, gpu::Model> = gpu::Entity::find()
        .filter(gpu::Column::Id.is_in(rows.iter().map(|r| r.gpu_id).collect::<Vec<_>>()))
        .all(db)
        .await?
        .into_iter()
        .map(|g| (g.id, g))
        .collect();
    let nodes: HashMap<i64, String> = node::Entity::find()
        .filter(node::Column::Id.is_in(gpus.values().map(|g| g.node_id).collect::<Vec<_>>()))
        .all(db)
        .await?
        .into_iter()
        .map(|n| (n.id, n.name))
        .collect();
    let admins: HashMap<i64, String> = user::Entity::find()
        .filter(
            user::Column::Id.is_in(rows.iter().filter_map(|r| r.created_by).collect::<Vec<_>>()),
        )
        .all(db)
        .await?
        .into_iter()
        .map(|u| (u.id, u.name))
        .collect();
    rows.into_iter()
        .map(|row| {
            let window = stored(&row)?;
            let gpu = gpus.get(&row.gpu_id);
            Ok(MaintenanceWindow {
                gpu_label: gpu
                    .map(|g| {
                        let node = nodes.get(&g.node_id).map(String::as_str).unwrap_or("?");
                        format!("{node} #{}", g.device_index)
                    })
                    .unwrap_or_else(|| format!("GPU {}", row.gpu_id)),
                model: gpu.map(|g| g.model.clone()).unwrap_or_default(),
                created_by: row.created_by.and_then(|id| admins.get(&id).cloned()),
                window,
                id: row.id,
                gpu_id: row.gpu_id,
                reason: row.reason,
                created_at: row.created_at,
            })
        })
        .collect()
}
