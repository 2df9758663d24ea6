//! Maintenance windows' queries: insert, list, find, end early (`backend::maintenance` decides).

use crate::backend::entity::{gpu, maintenance_window, node, user};
use crate::domain::maintenance::{MaintenanceWindow, NewMaintenance};
use crate::domain::schedule::Window;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect,
};
use std::collections::HashMap;

/// Most windows one listing returns.
const LIST_LIMIT: u64 = 500;

/// Which of `gpu_ids` exist.
pub async fn existing_gpus(db: &impl ConnectionTrait, gpu_ids: &[i64]) -> Result<Vec<i64>, DbErr> {
    gpu::Entity::find()
        .select_only()
        .column(gpu::Column::Id)
        .filter(gpu::Column::Id.is_in(gpu_ids.to_vec()))
        .into_tuple()
        .all(db)
        .await
}

/// Inserts a window taking `gpu_id` out of booking for `request`; answers its id.
pub async fn insert(
    db: &impl ConnectionTrait,
    gpu_id: i64,
    request: &NewMaintenance,
    created_by: impl Into<Option<i64>>,
    now: DateTime<Utc>,
) -> Result<i64, DbErr> {
    Ok(maintenance_window::ActiveModel {
        gpu_id: Set(gpu_id),
        start_at: Set(request.window.start()),
        end_at: Set(request.window.end()),
        reason: Set(request.reason.clone()),
        reason_code: Set(request.berth_reason.map(|why| why.code())),
        created_by: Set(created_by.into()),
        created_at: Set(now),
        ..Default::default()
    }
    .insert(db)
    .await?
    .id)
}

/// The windows `ids`, by GPU.
pub async fn by_ids(
    db: &impl ConnectionTrait,
    ids: Vec<i64>,
) -> Result<Vec<MaintenanceWindow>, DbErr> {
    let rows = maintenance_window::Entity::find()
        .filter(maintenance_window::Column::Id.is_in(ids))
        .order_by_asc(maintenance_window::Column::GpuId)
        .all(db)
        .await?;
    views(db, rows).await
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

/// Window `id` as set, if it exists.
pub async fn find(db: &impl ConnectionTrait, id: i64) -> Result<Option<MaintenanceWindow>, DbErr> {
    let Some(row) = maintenance_window::Entity::find_by_id(id).one(db).await? else {
        return Ok(None);
    };
    Ok(views(db, vec![row]).await?.pop())
}

/// Removes window `id`.
pub async fn delete(db: &impl ConnectionTrait, id: i64) -> Result<(), DbErr> {
    maintenance_window::Entity::delete_by_id(id)
        .exec(db)
        .await?;
    Ok(())
}

/// Moves window `id`'s end to `end`.
pub async fn set_end(db: &impl ConnectionTrait, id: i64, end: DateTime<Utc>) -> Result<(), DbErr> {
    maintenance_window::Entity::update_many()
        .col_expr(maintenance_window::Column::EndAt, Expr::value(end))
        .filter(maintenance_window::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
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
                berth_reason: row
                    .reason_code
                    .as_deref()
                    .and_then(crate::domain::maintenance::BerthMaintenance::from_code),
                created_at: row.created_at,
            })
        })
        .collect()
}

/// Whether a maintenance window of `gpu_id` covers `at`.
pub async fn covers(
    db: &impl ConnectionTrait,
    gpu_id: i64,
    at: DateTime<Utc>,
) -> Result<bool, DbErr> {
    Ok(maintenance_window::Entity::find()
        .filter(maintenance_window::Column::GpuId.eq(gpu_id))
        .filter(maintenance_window::Column::StartAt.lte(at))
        .filter(maintenance_window::Column::EndAt.gt(at))
        .one(db)
        .await?
        .is_some())
}
