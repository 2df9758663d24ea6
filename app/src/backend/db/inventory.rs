//! Nodes and GPUs: reading the inventory and adding hardware to it.

use crate::backend::entity::{gpu, node};
use crate::domain::gpu::{GpuMemory, GpuStatus};
use crate::domain::inventory::{
    GpuListing, ModelSummary, NewGpu, NewNode, NodeInventory, PendingGpu,
};
use crate::domain::money::Money;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, Query};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DbErr,
    EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect,
};
use std::collections::HashMap;

/// Every node, ordered by name, with its accepted GPUs in device-index order (GPUs waiting for
/// a platform admin's acceptance are never part of the inventory: see [`pending_gpus`]).
#[tracing::instrument(skip_all)]
pub async fn list_nodes_with_gpus(db: &impl ConnectionTrait) -> Result<Vec<NodeInventory>, DbErr> {
    nodes_with_gpus_where(db, Condition::all()).await
}

/// Where GPU `id` sits and what its agent last said of it, when the GPU exists.
#[derive(Debug, Clone, sea_orm::FromQueryResult)]
pub struct GpuPlace {
    /// Its node.
    pub node_id: i64,
    /// The PCI bus id its agent reported, when known.
    pub pci_bus_id: Option<String>,
    /// When its node stopped reporting it.
    pub vanished_at: Option<DateTime<Utc>>,
}

/// [`GpuPlace`] of GPU `id`.
pub async fn gpu_place(db: &impl ConnectionTrait, id: i64) -> Result<Option<GpuPlace>, DbErr> {
    gpu::Entity::find_by_id(id)
        .select_only()
        .column(gpu::Column::NodeId)
        .column(gpu::Column::PciBusId)
        .column(gpu::Column::VanishedAt)
        .into_model::<GpuPlace>()
        .one(db)
        .await
}

/// The GPUs of one `model` (if given) with at least `min_memory_mib` (if given), on their nodes
/// (ordered by name; nodes without such GPUs are left out).
#[tracing::instrument(skip_all)]
pub async fn list_matching_gpus(
    db: &impl ConnectionTrait,
    model: Option<&str>,
    min_memory_mib: Option<i64>,
) -> Result<Vec<NodeInventory>, DbErr> {
    let mut condition = Condition::all();
    if let Some(model) = model {
        condition = condition.add(gpu::Column::Model.eq(model));
    }
    if let Some(memory) = min_memory_mib {
        condition = condition.add(gpu::Column::MemoryMib.gte(memory));
    }
    let gpus = gpus_where(db, condition).await?;
    // Only the nodes of the GPUs found: at fleet scale the calendar of one model shows a few
    // nodes out of more than a thousand.
    let mut node_ids: Vec<i64> = gpus.iter().map(|gpu| gpu.node_id).collect();
    node_ids.sort_unstable();
    node_ids.dedup();
    let mut nodes = Vec::with_capacity(node_ids.len());
    for chunk in node_ids.chunks(super::IDS_PER_STATEMENT) {
        nodes.extend(
            nodes_query()
                .filter(node::Column::Id.is_in(chunk.to_vec()))
                .into_model::<NodeRow>()
                .all(db)
                .await?,
        );
    }
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    group_by_node(nodes, gpus)
}

/// Accepted GPUs counted per model: how many, how many active, the largest memory (in no
/// particular order).
#[tracing::instrument(skip_all)]
pub async fn model_counts(db: &impl ConnectionTrait) -> Result<Vec<ModelSummary>, DbErr> {
    let rows: Vec<(String, i64, i64, i64)> = gpu::Entity::find()
        .select_only()
        .column(gpu::Column::Model)
        .column_as(Expr::cust("COUNT(*)"), "total")
        .column_as(
            Expr::cust(format!(
                "CAST(SUM(CASE WHEN status = '{}' THEN 1 ELSE 0 END) AS BIGINT)",
                GpuStatus::Active.as_str()
            )),
            "active",
        )
        .column_as(Expr::cust("MAX(memory_mib)"), "memory")
        .filter(gpu::Column::Pending.eq(false))
        .group_by(gpu::Column::Model)
        .into_tuple()
        .all(db)
        .await?;
    rows.into_iter()
        .map(|(model, total, active, memory)| {
            Ok(ModelSummary {
                memory: GpuMemory::from_mib(u64::try_from(memory).map_err(|_| {
                    DbErr::Custom(format!("gpus.memory_mib of {model} is negative"))
                })?),
                model,
                total: usize::try_from(total).unwrap_or(0),
                active: usize::try_from(active).unwrap_or(0),
            })
        })
        .collect()
}

/// Whether any node is demo data.
pub async fn any_demo_node(db: &impl ConnectionTrait) -> Result<bool, DbErr> {
    Ok(node::Entity::find()
        .select_only()
        .column(node::Column::Id)
        .filter(node::Column::IsDemo.eq(true))
        .into_tuple::<i64>()
        .one(db)
        .await?
        .is_some())
}

/// The condition on nodes of having an accepted GPU of `model`.
fn has_model(model: &str) -> Condition {
    Condition::all().add(
        node::Column::Id.in_subquery(
            Query::select()
                .column(gpu::Column::NodeId)
                .from(gpu::Entity)
                .and_where(gpu::Column::Model.eq(model))
                .and_where(gpu::Column::Pending.eq(false))
                .to_owned(),
        ),
    )
}

/// How many nodes have accepted GPUs of `model`.
pub async fn count_nodes_with(db: &impl ConnectionTrait, model: &str) -> Result<u64, DbErr> {
    node::Entity::find()
        .filter(has_model(model))
        .count(db)
        .await
}

/// `limit` nodes from the `offset`-th in name order of those with accepted GPUs of `model`
/// (every node when `None`), each with its GPUs of that model (all of them when `None`).
#[tracing::instrument(skip_all)]
pub async fn node_page(
    db: &impl ConnectionTrait,
    model: Option<&str>,
    offset: u64,
    limit: u64,
) -> Result<Vec<NodeInventory>, DbErr> {
    let mut nodes = nodes_query();
    if let Some(model) = model {
        nodes = nodes.filter(has_model(model));
    }
    let nodes = nodes
        .order_by_asc(node::Column::Name)
        .offset(offset)
        .limit(limit)
        .into_model::<NodeRow>()
        .all(db)
        .await?;
    let mut condition = Condition::all().add(gpu::Column::NodeId.is_in(nodes.iter().map(|n| n.id)));
    if let Some(model) = model {
        condition = condition.add(gpu::Column::Model.eq(model));
    }
    let gpus = gpus_where(db, condition).await?;
    group_by_node(nodes, gpus)
}

/// Node `node_id` with its accepted GPUs, if it exists.
pub async fn node_with_gpus(
    db: &impl ConnectionTrait,
    node_id: i64,
) -> Result<Option<NodeInventory>, DbErr> {
    let nodes = nodes_query()
        .filter(node::Column::Id.eq(node_id))
        .into_model::<NodeRow>()
        .all(db)
        .await?;
    let gpus = gpus_where(db, Condition::all().add(gpu::Column::NodeId.eq(node_id))).await?;
    Ok(group_by_node(nodes, gpus)?.pop())
}

/// Every GPU model in the inventory, sorted.
pub async fn list_models(db: &impl ConnectionTrait) -> Result<Vec<String>, DbErr> {
    // A walk along the model index, one probe per model (a handful), instead of `SELECT
    // DISTINCT model`, which reads every GPU: 2-9 ms per calendar page on PostgreSQL at 10,000
    // GPUs (issue 29's statement log).
    const MODELS: &str = "WITH RECURSIVE models(model) AS (\
        SELECT MIN(model) FROM gpus WHERE pending = false \
        UNION ALL \
        SELECT (SELECT MIN(later.model) FROM gpus later \
                WHERE later.pending = false AND later.model > models.model) \
        FROM models WHERE models.model IS NOT NULL) \
        SELECT model FROM models WHERE model IS NOT NULL ORDER BY model";
    db.query_all_raw(sea_orm::Statement::from_string(
        db.get_database_backend(),
        MODELS,
    ))
    .await?
    .iter()
    .map(|row| row.try_get::<String>("", "model"))
    .collect()
}

async fn nodes_with_gpus_where(
    db: &impl ConnectionTrait,
    condition: Condition,
) -> Result<Vec<NodeInventory>, DbErr> {
    let nodes = nodes_query()
        .order_by_asc(node::Column::Name)
        .into_model::<NodeRow>()
        .all(db)
        .await?;
    group_by_node(nodes, gpus_where(db, condition).await?)
}

/// The columns of a node the inventory shows.
#[derive(Debug, sea_orm::FromQueryResult)]
struct NodeRow {
    id: i64,
    name: String,
    hostname: String,
    is_demo: bool,
    created_at: DateTime<Utc>,
}

/// The columns of a GPU the inventory shows (at fleet scale the whole rows, with their three
/// timestamps, cost more to decode than to read).
#[derive(Debug, sea_orm::FromQueryResult)]
struct ListingRow {
    id: i64,
    node_id: i64,
    device_index: i32,
    uuid: String,
    model: String,
    memory_mib: i64,
    status: GpuStatus,
    shareable: bool,
    hourly_price_minor: i64,
}

/// Nodes, the columns of a [`NodeRow`].
fn nodes_query() -> sea_orm::Select<node::Entity> {
    node::Entity::find()
        .select_only()
        .column(node::Column::Id)
        .column(node::Column::Name)
        .column(node::Column::Hostname)
        .column(node::Column::IsDemo)
        .column(node::Column::CreatedAt)
}

/// Accepted GPUs matching `condition`, by node and device index.
async fn gpus_where(
    db: &impl ConnectionTrait,
    condition: Condition,
) -> Result<Vec<ListingRow>, DbErr> {
    gpu::Entity::find()
        .select_only()
        .column(gpu::Column::Id)
        .column(gpu::Column::NodeId)
        .column(gpu::Column::DeviceIndex)
        .column(gpu::Column::Uuid)
        .column(gpu::Column::Model)
        .column(gpu::Column::MemoryMib)
        .column(gpu::Column::Status)
        .column(gpu::Column::Shareable)
        .column(gpu::Column::HourlyPriceMinor)
        .filter(condition)
        .filter(gpu::Column::Pending.eq(false))
        .order_by_asc(gpu::Column::NodeId)
        .order_by_asc(gpu::Column::DeviceIndex)
        .into_model::<ListingRow>()
        .all(db)
        .await
}

/// `nodes` (in their order), each with its GPUs among `gpus`.
fn group_by_node(nodes: Vec<NodeRow>, gpus: Vec<ListingRow>) -> Result<Vec<NodeInventory>, DbErr> {
    let mut by_node: HashMap<i64, Vec<GpuListing>> = HashMap::new();
    for row in gpus {
        by_node.entry(row.node_id).or_default().push(listing(row)?);
    }
    Ok(nodes
        .into_iter()
        .map(|node| NodeInventory {
            gpus: by_node.remove(&node.id).unwrap_or_default(),
            id: node.id,
            name: node.name,
            hostname: node.hostname,
            is_demo: node.is_demo,
            created_at: node.created_at,
        })
        .collect())
}

/// GPUs waiting for a platform admin's acceptance, oldest first.
pub async fn pending_gpus(db: &impl ConnectionTrait) -> Result<Vec<PendingGpu>, DbErr> {
    let rows = gpu::Entity::find()
        .filter(gpu::Column::Pending.eq(true))
        .find_also_related(node::Entity)
        .order_by_asc(gpu::Column::CreatedAt)
        .order_by_asc(gpu::Column::Id)
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(gpu, node)| PendingGpu {
            id: gpu.id,
            node_id: gpu.node_id,
            node: node.map(|n| n.name).unwrap_or_default(),
            uuid: gpu.uuid,
            model: gpu.model,
            memory_mib: gpu.memory_mib,
            pci_bus_id: gpu.pci_bus_id,
            reported_at: gpu.created_at,
        })
        .collect())
}

/// Accepts a pending GPU: from now on it is in the inventory and bookable. Answers it as it was
/// (`None`: no such GPU). Accepting an accepted GPU changes nothing.
pub async fn accept_gpu(
    db: &impl ConnectionTrait,
    id: i64,
    now: DateTime<Utc>,
) -> Result<Option<gpu::Model>, DbErr> {
    let Some(before) = gpu::Entity::find_by_id(id).one(db).await? else {
        return Ok(None);
    };
    if before.pending {
        let mut row: gpu::ActiveModel = before.clone().into();
        row.pending = Set(false);
        row.updated_at = Set(now);
        row.update(db).await?;
    }
    Ok(Some(before))
}

/// The node a GPU sits in.
pub async fn gpu_node(db: &impl ConnectionTrait, gpu_id: i64) -> Result<Option<i64>, DbErr> {
    gpu::Entity::find_by_id(gpu_id)
        .select_only()
        .column(gpu::Column::NodeId)
        .into_tuple()
        .one(db)
        .await
}

/// Number of nodes.
pub async fn count_nodes(db: &impl ConnectionTrait) -> Result<u64, DbErr> {
    node::Entity::find().count(db).await
}

/// Adds a node and its GPUs; returns the node's id. Run it inside a transaction so that the node
/// and its GPUs appear together or not at all.
#[tracing::instrument(skip_all, fields(node.name = %new_node.name, gpu.count = gpus.len()))]
pub async fn insert_node_with_gpus(
    db: &impl ConnectionTrait,
    new_node: &NewNode,
    gpus: &[NewGpu],
    now: DateTime<Utc>,
) -> Result<i64, DbErr> {
    let inserted = node::ActiveModel {
        name: Set(new_node.name.clone()),
        hostname: Set(new_node.hostname.clone()),
        is_demo: Set(new_node.is_demo),
        created_at: Set(now),
        ..Default::default()
    }
    .insert(db)
    .await?;
    for new_gpu in gpus {
        gpu::ActiveModel {
            node_id: Set(inserted.id),
            device_index: Set(i32::try_from(new_gpu.device_index)
                .map_err(|_| DbErr::Custom("device index out of range".into()))?),
            uuid: Set(new_gpu.uuid.clone()),
            model: Set(new_gpu.model.clone()),
            memory_mib: Set(i64::try_from(new_gpu.memory.mib())
                .map_err(|_| DbErr::Custom("memory size out of range".into()))?),
            status: Set(new_gpu.status),
            shareable: Set(new_gpu.shareable),
            hourly_price_minor: Set(new_gpu.hourly_price.minor()),
            created_at: Set(now),
            updated_at: Set(now),
            ..Default::default()
        }
        .insert(db)
        .await?;
    }
    Ok(inserted.id)
}

fn listing(row: ListingRow) -> Result<GpuListing, DbErr> {
    let corrupt = |what: &str| DbErr::Custom(format!("gpus.id={}: invalid {what}", row.id));
    Ok(GpuListing {
        id: row.id,
        device_index: u32::try_from(row.device_index).map_err(|_| corrupt("device_index"))?,
        memory: GpuMemory::from_mib(
            u64::try_from(row.memory_mib).map_err(|_| corrupt("memory_mib"))?,
        ),
        status: row.status,
        hourly_price: Money::from_minor(row.hourly_price_minor),
        uuid: row.uuid,
        model: row.model,
        shareable: row.shareable,
    })
}

/// Sets the hourly price of every GPU of `model` that is not retired (bookings keep the price
/// they locked); answers how many changed and the prices they had.
pub async fn set_model_price(
    db: &impl ConnectionTrait,
    model: &str,
    hourly_price_minor: i64,
    now: DateTime<Utc>,
) -> Result<(u64, Vec<i64>), DbErr> {
    // Their rows locked in id order first (PostgreSQL), as bookings lock them.
    let mut query = gpu::Entity::find()
        .select_only()
        .column(gpu::Column::Id)
        .column(gpu::Column::HourlyPriceMinor)
        .filter(gpu::Column::Model.eq(model))
        .filter(gpu::Column::Status.ne(GpuStatus::Retired))
        .order_by_asc(gpu::Column::Id);
    if db.get_database_backend() == sea_orm::DbBackend::Postgres {
        query = query.lock_exclusive();
    }
    let rows: Vec<(i64, i64)> = query.into_tuple().all(db).await?;
    let mut before: Vec<i64> = rows.into_iter().map(|(_, price)| price).collect();
    before.sort_unstable();
    before.dedup();
    let updated = gpu::Entity::update_many()
        .col_expr(
            gpu::Column::HourlyPriceMinor,
            sea_orm::sea_query::Expr::value(hourly_price_minor),
        )
        .col_expr(gpu::Column::UpdatedAt, sea_orm::sea_query::Expr::value(now))
        .filter(gpu::Column::Model.eq(model))
        .filter(gpu::Column::Status.ne(GpuStatus::Retired))
        .exec(db)
        .await?;
    Ok((updated.rows_affected, before))
}

/// Changes one GPU's price and whether it can be shared; answers it before the change, `None`
/// when there is no such GPU.
pub async fn update_gpu(
    db: &impl ConnectionTrait,
    id: i64,
    hourly_price_minor: Option<i64>,
    shareable: Option<bool>,
    now: DateTime<Utc>,
) -> Result<Option<gpu::Model>, DbErr> {
    let Some(before) = gpu::Entity::find_by_id(id).one(db).await? else {
        return Ok(None);
    };
    let mut row: gpu::ActiveModel = before.clone().into();
    if let Some(price) = hourly_price_minor {
        row.hourly_price_minor = Set(price);
    }
    if let Some(shareable) = shareable {
        row.shareable = Set(shareable);
    }
    row.updated_at = Set(now);
    row.update(db).await?;
    Ok(Some(before))
}
