//! Live values and GPU history for the pages (the JSON API under `/api/v1/gpus/{id}/…` and
//! `/metrics` use the same service layer, `server::telemetry`).

use crate::domain::calendar::ZoneOffsets;
use crate::domain::inventory::GpuListing;
use crate::domain::telemetry::{GpuEvent, GpuHistory, LiveFleet, LiveGpu, LiveNode};
use crate::error::AppError;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// The latest values of every GPU and the state of every node's agent (the GPU list polls it).
#[server(endpoint = "get_live_fleet")]
pub async fn get_live_fleet() -> Result<LiveFleet, AppError> {
    use crate::server::{auth::actor::require_actor, state, telemetry};
    state::with_status(
        async {
            require_actor().await?;
            let state = state::app_state()?;
            telemetry::live_fleet(&state.db, chrono::Utc::now()).await
        }
        .await,
    )
}

/// What the GPU page shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuPage {
    /// The GPU.
    pub gpu: GpuListing,
    /// Its node's name.
    pub node_name: String,
    /// Its node's host name.
    pub hostname: String,
    /// PCI bus id its agent reported, when known.
    pub pci_bus_id: Option<String>,
    /// Its node's agent.
    pub node: Option<LiveNode>,
    /// Latest values and processes.
    pub live: Option<LiveGpu>,
    /// Flagged as no longer reported by its node.
    pub vanished: bool,
    /// The last hour (raw samples).
    pub hour: GpuHistory,
    /// The last day (one-minute rollups).
    pub day: GpuHistory,
    /// Recent events, newest first.
    pub events: Vec<GpuEvent>,
    /// The viewer's time zone over the last day.
    pub zone: ZoneOffsets,
    /// The server's clock when the page was read.
    pub now: chrono::DateTime<chrono::Utc>,
}

/// Everything the GPU page shows for GPU `id`.
#[server(endpoint = "get_gpu_page")]
pub async fn get_gpu_page(id: i64) -> Result<GpuPage, AppError> {
    use crate::api::reservations::request_zone;
    use crate::server::{auth::actor::require_actor, booking, db, state, telemetry};
    use chrono::Duration;
    state::with_status(
        async {
            let actor = require_actor().await?;
            let state = state::app_state()?;
            let now = chrono::Utc::now();
            let settings = &state.portal.telemetry;
            let (nodes, pci_bus_id, hour, day, events, fleet) = tokio::try_join!(
                async { Ok::<_, AppError>(db::inventory::list_nodes_with_gpus(&state.db).await?) },
                async {
                    use sea_orm::EntityTrait;
                    let row = crate::server::entity::gpu::Entity::find_by_id(id)
                        .one(&state.db)
                        .await?;
                    Ok::<_, AppError>(row.and_then(|gpu| gpu.pci_bus_id))
                },
                telemetry::history(&state.db, settings, id, now - Duration::hours(1), now, now),
                telemetry::history(&state.db, settings, id, now - Duration::days(1), now, now),
                telemetry::events(&state.db, id, now - settings.rollup_keep, now, 20),
                telemetry::live_fleet(&state.db, now),
            )?;
            let (node, gpu) = nodes
                .into_iter()
                .find_map(|node| {
                    let gpu = node.gpus.iter().find(|g| g.id == id)?.clone();
                    Some((node, gpu))
                })
                .ok_or_else(|| AppError::NotFound(format!("GPU {id}")))?;
            Ok(GpuPage {
                node: fleet.nodes.iter().find(|n| n.node_id == node.id).cloned(),
                live: fleet.gpus.into_iter().find(|g| g.gpu_id == id),
                vanished: fleet.vanished.contains(&id),
                node_name: node.name,
                hostname: node.hostname,
                pci_bus_id,
                gpu,
                hour,
                day,
                events,
                zone: booking::zone_named(
                    request_zone(&actor).as_deref(),
                    now - Duration::days(1),
                    now,
                ),
                now,
            })
        }
        .await,
    )
}

/// The GPU page's board for GPU `id` as HTML rendered on the server, in the viewer's language and
/// time zone (the page's refresh island swaps it in).
#[server(endpoint = "get_gpu_board")]
pub async fn get_gpu_board(id: i64) -> Result<String, AppError> {
    let page = get_gpu_page(id).await?;
    Ok(crate::pages::gpu::board_html(page))
}
