//! Maintenance windows for the admin page (the JSON API under `/api/v1/maintenance` uses the
//! same service layer, `backend::maintenance`).

use crate::domain::maintenance::MaintenanceWindow;
use crate::domain::zone::ZoneOffsets;
use crate::error::AppError;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// A GPU the admin can choose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuChoice {
    /// Database id.
    pub id: i64,
    /// `node-a #3`.
    pub label: String,
    /// Its model.
    pub model: String,
}

/// A node with its GPUs, for the GPU picker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeChoice {
    /// Database id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Its GPUs by device index.
    pub gpus: Vec<GpuChoice>,
}

/// What the maintenance page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MaintenancePage {
    /// Current and upcoming windows, soonest first.
    pub list: Vec<MaintenanceWindow>,
    /// Every node and GPU.
    pub nodes: Vec<NodeChoice>,
    /// The viewer's time zone over the windows' times.
    pub zone: ZoneOffsets,
    /// The server's clock when the page was read (upcoming or under way).
    pub now: chrono::DateTime<chrono::Utc>,
}

/// The page's data (platform admins).
#[server(endpoint = "get_maintenance_page")]
pub async fn get_maintenance_page() -> Result<MaintenancePage, AppError> {
    use crate::api::context::platform_admin;
    platform_admin(|call| async move {
        let now = call.now;
        let list = crate::backend::maintenance::list(&call.state, &call.actor, now).await?;
        let nodes = crate::backend::inventory::nodes(&call.state)
            .await?
            .into_iter()
            .map(|node| NodeChoice {
                gpus: node
                    .gpus
                    .into_iter()
                    .map(|gpu| GpuChoice {
                        label: format!("{} #{}", node.name, gpu.device_index),
                        id: gpu.id,
                        model: gpu.model,
                    })
                    .collect(),
                id: node.id,
                name: node.name,
            })
            .collect();
        // The zone's offsets over the times shown (the form's times are converted on the
        // server, with the full zone).
        let from = list.iter().map(|m| m.window.start()).min().unwrap_or(now);
        let to = list.iter().map(|m| m.window.end()).max().unwrap_or(now);
        Ok(MaintenancePage {
            zone: call.zone_over(from, to),
            list,
            nodes,
            now,
        })
    })
    .await
}

/// Takes `target` out of booking: `gpu:ID` for one GPU, `node:ID` for every GPU of a node; from
/// `start` to `end` (`datetime-local` values in the viewer's time zone), with a `reason`.
#[server(endpoint = "set_maintenance")]
pub async fn set_maintenance(
    target: String,
    start: String,
    end: String,
    reason: String,
    /// `on` (a ticked checkbox): release the reservations in the way, refunded in full.
    #[server(default)]
    release: Option<String>,
) -> Result<Vec<MaintenanceWindow>, AppError> {
    use crate::api::context::platform_admin;
    use crate::backend::maintenance::{self, MaintenanceForm};
    use crate::backend::reservations::local_to_rfc3339;
    platform_admin(|call| async move {
        let invalid_target =
            || AppError::invalid("target", crate::domain::problem::Problem::NoTarget);
        let gpu_ids = match target.split_once(':') {
            Some(("gpu", id)) => vec![id.parse::<i64>().map_err(|_| invalid_target())?],
            Some(("node", id)) => {
                let node_id = id.parse::<i64>().map_err(|_| invalid_target())?;
                let node = crate::backend::inventory::node(&call.state, node_id)
                    .await?
                    .ok_or_else(invalid_target)?;
                node.gpus.iter().map(|gpu| gpu.id).collect()
            }
            _ => return Err(invalid_target()),
        };
        let zone = call.zone();
        let form = MaintenanceForm {
            gpu_ids,
            start: local_to_rfc3339(zone.as_deref(), "start", &start)?,
            end: local_to_rfc3339(zone.as_deref(), "end", &end)?,
            reason,
            release_reservations: release.is_some_and(|value| !value.is_empty()),
        };
        maintenance::create(&call.state, &call.actor, &form, call.now).await
    })
    .await
}

/// Ends maintenance window `id` early.
#[server(endpoint = "end_maintenance")]
pub async fn end_maintenance(id: i64) -> Result<MaintenanceWindow, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        crate::backend::maintenance::end(&call.state, &call.actor, id, call.now).await
    })
    .await
}
