//! Live values and GPU history for the pages (the JSON API under `/api/v1/gpus/{id}/…` and
//! `/metrics` use the same service layer, `backend::telemetry`).

use crate::domain::inventory::GpuListing;
use crate::domain::telemetry::{GpuEvent, GpuHistory, LiveFleet, LiveGpu, LiveNode};
use crate::domain::zone::ZoneOffsets;
use crate::error::AppError;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// The latest values of every GPU and the state of every node's agent (the GPU list polls it).
#[server(endpoint = "get_live_fleet")]
pub async fn get_live_fleet() -> Result<LiveFleet, AppError> {
    use crate::api::context::signed_in;
    signed_in(
        |call| async move { crate::backend::telemetry::live_fleet(&call.state, call.now).await },
    )
    .await
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
    /// What node agents did and saw about access to it, newest first (platform admins only).
    #[serde(default)]
    pub access: Option<Vec<crate::domain::telemetry::GpuAccessEvent>>,
}

/// Everything the GPU page shows for GPU `id`.
#[server(endpoint = "get_gpu_page")]
pub async fn get_gpu_page(id: i64) -> Result<GpuPage, AppError> {
    use crate::api::context::signed_in;
    use crate::backend::{inventory, telemetry};
    use chrono::Duration;
    signed_in(|call| async move {
        let (state, now) = (&call.state, call.now);
        let settings = &call.state.portal.telemetry;
        // The GPU's own node and values only: the page stays as quick with 10,000 GPUs.
        let place = inventory::gpu_place(state, id).await?;
        let (node, hour, day, events, (agent, live)) = tokio::try_join!(
            inventory::node(state, place.node_id),
            telemetry::history(state, id, now - Duration::hours(1), now, now),
            telemetry::history(state, id, now - Duration::days(1), now, now),
            telemetry::events(
                state,
                id,
                now - settings.rollup_keep,
                now,
                &crate::domain::paging::PageRequest {
                    limit: 20,
                    after: None
                }
            ),
            telemetry::live_gpu(state, place.node_id, id, now),
        )?;
        // A GPU waiting for acceptance is not listed.
        let (node, gpu) = node
            .and_then(|node| {
                let gpu = node.gpus.iter().find(|g| g.id == id)?.clone();
                Some((node, gpu))
            })
            .ok_or_else(|| AppError::NotFound(format!("GPU {id}")))?;
        let access = if call.actor.require_platform_admin().is_ok() {
            Some(
                crate::backend::node_access::gpu_access_events(
                    state,
                    &call.actor,
                    id,
                    Ok(crate::domain::paging::PageRequest {
                        limit: 20,
                        after: None,
                    }),
                )
                .await?
                .items,
            )
        } else {
            None
        };
        Ok(GpuPage {
            access,
            node: agent,
            live,
            vanished: place.vanished_at.is_some(),
            node_name: node.name,
            hostname: node.hostname,
            pci_bus_id: place.pci_bus_id,
            gpu,
            hour,
            day,
            events: events.items,
            zone: call.zone_over(now - Duration::days(1), now),
            now,
        })
    })
    .await
}

/// The GPU page's board for GPU `id` as HTML rendered on the server, in the viewer's language and
/// time zone (the page's refresh island swaps it in).
#[server(endpoint = "get_gpu_board")]
pub async fn get_gpu_board(id: i64) -> Result<String, AppError> {
    let page = get_gpu_page(id).await?;
    Ok(crate::pages::gpu::board_html(page))
}
