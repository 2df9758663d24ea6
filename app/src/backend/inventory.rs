//! The GPU inventory as people see it: every node with its GPUs (signed-in users), and what
//! platform admins see besides (agents' state, tokens, GPUs waiting for acceptance).

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::db::inventory::GpuPlace;
use crate::backend::db::telemetry::NodeAgentState;
use crate::backend::state::AppState;
use crate::domain::inventory::{
    FleetPage, INVENTORY_PAGE_NODES, Inventory, NodeInventory, PendingGpu,
};
use crate::error::AppError;
use std::collections::HashMap;

/// Every node with its accepted GPUs, by name.
pub async fn nodes(state: &AppState) -> Result<Vec<NodeInventory>, AppError> {
    let db = &state.db;
    Ok(db::inventory::list_nodes_with_gpus(db).await?)
}

/// Where GPU `gpu_id` sits (its node, PCI bus id, whether it vanished), or `NotFound`.
pub async fn gpu_place(state: &AppState, gpu_id: i64) -> Result<GpuPlace, AppError> {
    db::inventory::gpu_place(&state.db, gpu_id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("GPU {gpu_id}")))
}

/// Node `node_id` with its accepted GPUs, if there is such a node.
pub async fn node(state: &AppState, node_id: i64) -> Result<Option<NodeInventory>, AppError> {
    Ok(db::inventory::node_with_gpus(&state.db, node_id).await?)
}

/// What the inventory page `page` shows of the nodes with GPUs of `model` (all when `None`):
/// the whole inventory when it fits one page, else that page read from the store with the
/// fleet's facts from grouped counts (equal to `Inventory::page` of the whole inventory, without
/// reading the other pages' nodes).
pub async fn page(
    state: &AppState,
    model: Option<&str>,
    page: usize,
) -> Result<Inventory, AppError> {
    let db = &state.db;
    let currency = state.portal.currency.clone();
    let nodes = db::inventory::count_nodes(db).await?;
    if nodes <= INVENTORY_PAGE_NODES as u64 {
        return Ok(Inventory {
            nodes: db::inventory::list_nodes_with_gpus(db).await?,
            currency,
            fleet: None,
        });
    }
    let matching_nodes = async {
        match model {
            Some(model) => db::inventory::count_nodes_with(db, model).await,
            None => Ok(nodes),
        }
    };
    let (summary, demo, matching_nodes) = tokio::try_join!(
        db::inventory::model_counts(db),
        db::inventory::any_demo_node(db),
        matching_nodes,
    )?;
    let fleet = FleetPage::new(
        summary,
        demo,
        model,
        usize::try_from(matching_nodes).unwrap_or(usize::MAX),
        page,
    );
    let nodes = db::inventory::node_page(
        db,
        model,
        fleet.first_node() as u64,
        INVENTORY_PAGE_NODES as u64,
    )
    .await?;
    Ok(Inventory {
        nodes,
        currency,
        fleet: Some(fleet),
    })
}

/// GPUs agents reported that wait for a platform admin's acceptance, oldest first.
pub async fn pending(state: &AppState, actor: &Actor) -> Result<Vec<PendingGpu>, AppError> {
    let db = &state.db;
    actor.require_platform_admin()?;
    Ok(db::inventory::pending_gpus(db).await?)
}

/// What the nodes page lists (platform admins).
#[derive(Debug)]
pub struct NodesOverview {
    /// Every node with its GPUs.
    pub nodes: Vec<NodeInventory>,
    /// Each node's agent.
    pub agents: Vec<NodeAgentState>,
    /// Live tokens per node id.
    pub live_tokens: HashMap<i64, u64>,
    /// GPUs waiting for acceptance.
    pub pending: Vec<PendingGpu>,
}

/// Nodes, their agents, tokens and pending GPUs (platform admins).
pub async fn overview(state: &AppState, actor: &Actor) -> Result<NodesOverview, AppError> {
    let db = &state.db;
    actor.require_platform_admin()?;
    let (nodes, agents, live_tokens, pending) = tokio::try_join!(
        db::inventory::list_nodes_with_gpus(db),
        db::telemetry::node_states(db),
        db::telemetry::live_token_counts(db),
        db::inventory::pending_gpus(db),
    )?;
    Ok(NodesOverview {
        nodes,
        agents,
        live_tokens,
        pending,
    })
}
