//! Node access: logins, SSH keys, what a node's schedule is made of, node policies, and what
//! agents did on the GPUs.

use crate::backend::entity::{
    gpu, gpu_access_event, node, reservation, reservation_gpu, ssh_key, user,
};
use crate::domain::reservation::PaymentStatus;
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect,
};

/// `user_id`'s keys, oldest first.
pub async fn keys_of(
    db: &impl ConnectionTrait,
    user_id: i64,
) -> Result<Vec<ssh_key::Model>, DbErr> {
    ssh_key::Entity::find()
        .filter(ssh_key::Column::UserId.eq(user_id))
        .order_by_asc(ssh_key::Column::Id)
        .all(db)
        .await
}

/// The keys of `users`, oldest first.
pub async fn keys_of_users(
    db: &impl ConnectionTrait,
    users: &[i64],
) -> Result<Vec<ssh_key::Model>, DbErr> {
    if users.is_empty() {
        return Ok(Vec::new());
    }
    ssh_key::Entity::find()
        .filter(ssh_key::Column::UserId.is_in(users.iter().copied()))
        .order_by_asc(ssh_key::Column::Id)
        .all(db)
        .await
}

/// Adds a key.
pub async fn insert_key(
    db: &impl ConnectionTrait,
    user_id: i64,
    name: &str,
    public_key: &str,
    fingerprint: &str,
    now: DateTime<Utc>,
) -> Result<ssh_key::Model, DbErr> {
    ssh_key::ActiveModel {
        user_id: Set(user_id),
        name: Set(name.to_owned()),
        public_key: Set(public_key.to_owned()),
        fingerprint: Set(fingerprint.to_owned()),
        created_at: Set(now),
        ..Default::default()
    }
    .insert(db)
    .await
}

/// Deletes key `id` if it is `user_id`'s; answers whether it did.
pub async fn delete_key(db: &impl ConnectionTrait, user_id: i64, id: i64) -> Result<bool, DbErr> {
    let deleted = ssh_key::Entity::delete_many()
        .filter(ssh_key::Column::Id.eq(id))
        .filter(ssh_key::Column::UserId.eq(user_id))
        .exec(db)
        .await?;
    Ok(deleted.rows_affected == 1)
}

/// The logins of `users` (those that have one).
pub async fn logins_of(
    db: &impl ConnectionTrait,
    users: &[i64],
) -> Result<Vec<(i64, Option<String>, String)>, DbErr> {
    if users.is_empty() {
        return Ok(Vec::new());
    }
    user::Entity::find()
        .select_only()
        .column(user::Column::Id)
        .column(user::Column::Login)
        .column(user::Column::Email)
        .filter(user::Column::Id.is_in(users.iter().copied()))
        .into_tuple()
        .all(db)
        .await
}

/// Sets `user_id`'s login (a unique violation when another user has it).
pub async fn set_login(db: &impl ConnectionTrait, user_id: i64, login: &str) -> Result<(), DbErr> {
    user::Entity::update_many()
        .col_expr(user::Column::Login, sea_orm::sea_query::Expr::value(login))
        .filter(user::Column::Id.eq(user_id))
        .exec(db)
        .await?;
    Ok(())
}

/// Sets `user_id`'s login only if it has none yet; answers whether it did.
pub async fn set_first_login(
    db: &impl ConnectionTrait,
    user_id: i64,
    login: &str,
) -> Result<bool, DbErr> {
    let result = user::Entity::update_many()
        .col_expr(user::Column::Login, sea_orm::sea_query::Expr::value(login))
        .filter(user::Column::Id.eq(user_id))
        .filter(user::Column::Login.is_null())
        .exec(db)
        .await?;
    Ok(result.rows_affected == 1)
}

/// Whether another user than `user_id` has `login`.
pub async fn login_taken(
    db: &impl ConnectionTrait,
    login: &str,
    user_id: i64,
) -> Result<bool, DbErr> {
    Ok(user::Entity::find()
        .filter(user::Column::Login.eq(login))
        .filter(user::Column::Id.ne(user_id))
        .one(db)
        .await?
        .is_some())
}

/// A reservation of a node's schedule, with its GPUs.
#[derive(Debug, Clone)]
pub struct LeaseRow {
    /// The reservation.
    pub reservation: reservation::Model,
    /// Its GPUs: (uuid, memory MiB).
    pub gpus: Vec<(String, i64)>,
}

/// The reservations on `node_id` in force (not cancelled, not waiting for approval) that end
/// after `from` and start before `to`, by start.
pub async fn leases_on(
    db: &impl ConnectionTrait,
    node_id: i64,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<LeaseRow>, DbErr> {
    let rows = reservation::Entity::find()
        .filter(reservation::Column::NodeId.eq(node_id))
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::PaymentStatus.ne(PaymentStatus::AwaitingApproval))
        .filter(reservation::Column::EndAt.gt(from))
        .filter(reservation::Column::StartAt.lt(to))
        .order_by_asc(reservation::Column::StartAt)
        .order_by_asc(reservation::Column::Id)
        .all(db)
        .await?;
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let pairs: Vec<(i64, i64)> = if ids.is_empty() {
        Vec::new()
    } else {
        reservation_gpu::Entity::find()
            .select_only()
            .column(reservation_gpu::Column::ReservationId)
            .column(reservation_gpu::Column::GpuId)
            .filter(reservation_gpu::Column::ReservationId.is_in(ids))
            .into_tuple()
            .all(db)
            .await?
    };
    let mut gpu_ids: Vec<i64> = pairs.iter().map(|(_, gpu)| *gpu).collect();
    gpu_ids.sort_unstable();
    gpu_ids.dedup();
    let gpus = gpus_with_memory(db, gpu_ids).await?;
    let held: Vec<(i64, String, i64)> = gpus
        .iter()
        .flat_map(|(gpu_id, uuid, memory)| {
            pairs
                .iter()
                .filter(move |(_, g)| g == gpu_id)
                .map(move |(reservation, _)| (*reservation, uuid.clone(), *memory))
        })
        .collect();
    Ok(rows
        .into_iter()
        .map(|reservation| {
            let gpus = held
                .iter()
                .filter(|(id, _, _)| *id == reservation.id)
                .map(|(_, uuid, memory)| (uuid.clone(), *memory))
                .collect();
            LeaseRow { reservation, gpus }
        })
        .collect())
}

/// Node `id`.
pub async fn node(db: &impl ConnectionTrait, id: i64) -> Result<Option<node::Model>, DbErr> {
    node::Entity::find_by_id(id).one(db).await
}

/// Every node, by name.
pub async fn nodes(db: &impl ConnectionTrait) -> Result<Vec<node::Model>, DbErr> {
    node::Entity::find()
        .order_by_asc(node::Column::Name)
        .all(db)
        .await
}

/// Sets a node's intruder policy; answers whether the node exists.
pub async fn set_policy(
    db: &impl ConnectionTrait,
    node_id: i64,
    policy: &str,
    protect_idle: bool,
) -> Result<bool, DbErr> {
    let result = node::Entity::update_many()
        .col_expr(
            node::Column::IntruderPolicy,
            sea_orm::sea_query::Expr::value(policy),
        )
        .col_expr(
            node::Column::ProtectIdle,
            sea_orm::sea_query::Expr::value(protect_idle),
        )
        .filter(node::Column::Id.eq(node_id))
        .exec(db)
        .await?;
    Ok(result.rows_affected == 1)
}

/// Sets whether a reservation's processes may keep running past its end.
pub async fn set_keep_running(
    db: &impl ConnectionTrait,
    reservation_id: i64,
    keep: bool,
) -> Result<(), DbErr> {
    reservation::Entity::update_many()
        .col_expr(
            reservation::Column::KeepRunning,
            sea_orm::sea_query::Expr::value(keep),
        )
        .filter(reservation::Column::Id.eq(reservation_id))
        .exec(db)
        .await?;
    Ok(())
}

/// A new access event.
#[derive(Debug, Clone)]
pub struct NewAccessEvent {
    /// The GPU.
    pub gpu_id: i64,
    /// The lease, if any.
    pub reservation_id: Option<i64>,
    /// When.
    pub at: DateTime<Utc>,
    /// The kind's stored name.
    pub kind: &'static str,
    /// The process.
    pub pid: Option<i64>,
    /// Its owner's UID.
    pub uid: Option<i64>,
    /// Its owner's name, or the holder's login.
    pub user_name: Option<String>,
    /// Memory it used, MiB.
    pub memory_mib: Option<i64>,
}

/// Stores access events.
pub async fn insert_access_events(
    db: &impl ConnectionTrait,
    events: &[NewAccessEvent],
) -> Result<(), DbErr> {
    if events.is_empty() {
        return Ok(());
    }
    gpu_access_event::Entity::insert_many(events.iter().map(|e| gpu_access_event::ActiveModel {
        gpu_id: Set(e.gpu_id),
        reservation_id: Set(e.reservation_id),
        at: Set(e.at),
        kind: Set(e.kind.to_owned()),
        pid: Set(e.pid),
        uid: Set(e.uid),
        user_name: Set(e.user_name.clone()),
        memory_mib: Set(e.memory_mib),
        ..Default::default()
    }))
    .exec_without_returning(db)
    .await?;
    Ok(())
}

/// Access events of GPU `gpu_id`, newest first.
pub async fn access_events_of_gpu(
    db: &impl ConnectionTrait,
    gpu_id: i64,
    after: Option<crate::domain::paging::Cursor>,
    limit: u64,
) -> Result<Vec<gpu_access_event::Model>, DbErr> {
    let mut query =
        gpu_access_event::Entity::find().filter(gpu_access_event::Column::GpuId.eq(gpu_id));
    if let Some(after) = after {
        query = query.filter(super::before_key(
            gpu_access_event::Column::At,
            gpu_access_event::Column::Id,
            after,
        ));
    }
    query
        .order_by_desc(gpu_access_event::Column::At)
        .order_by_desc(gpu_access_event::Column::Id)
        .limit(limit)
        .all(db)
        .await
}

/// Access events of reservation `id`, newest first.
pub async fn access_events_of_reservation(
    db: &impl ConnectionTrait,
    id: i64,
    limit: u64,
) -> Result<Vec<gpu_access_event::Model>, DbErr> {
    gpu_access_event::Entity::find()
        .filter(gpu_access_event::Column::ReservationId.eq(id))
        .order_by_desc(gpu_access_event::Column::At)
        .order_by_desc(gpu_access_event::Column::Id)
        .limit(limit)
        .all(db)
        .await
}

/// The GPUs reservation `id` holds: (id, uuid, memory MiB), by device index.
pub async fn gpus_of_reservation(
    db: &impl ConnectionTrait,
    id: i64,
) -> Result<Vec<(i64, String, i64)>, DbErr> {
    let ids: Vec<i64> = reservation_gpu::Entity::find()
        .select_only()
        .column(reservation_gpu::Column::GpuId)
        .filter(reservation_gpu::Column::ReservationId.eq(id))
        .into_tuple()
        .all(db)
        .await?;
    gpus_with_memory(db, ids).await
}

/// GPUs `ids`: (id, uuid, memory MiB), by device index.
async fn gpus_with_memory(
    db: &impl ConnectionTrait,
    ids: Vec<i64>,
) -> Result<Vec<(i64, String, i64)>, DbErr> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    gpu::Entity::find()
        .select_only()
        .column(gpu::Column::Id)
        .column(gpu::Column::Uuid)
        .column(gpu::Column::MemoryMib)
        .filter(gpu::Column::Id.is_in(ids))
        .order_by_asc(gpu::Column::DeviceIndex)
        .into_tuple()
        .all(db)
        .await
}

/// GPU `id`'s UUID.
pub async fn gpu_uuid(db: &impl ConnectionTrait, id: i64) -> Result<Option<String>, DbErr> {
    gpu::Entity::find_by_id(id)
        .select_only()
        .column(gpu::Column::Uuid)
        .into_tuple()
        .one(db)
        .await
}
