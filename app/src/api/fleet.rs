//! The fleet admin page's data (platform admins).

use crate::domain::inventory::NodeInventory;
use crate::domain::quota::TeamQuotas;
use crate::error::AppError;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// What the fleet page shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetPage {
    /// Every node with its GPUs.
    pub nodes: Vec<NodeInventory>,
    /// Per GPU model: GPUs not retired, the lowest and highest hourly price among them.
    pub models: Vec<(String, u32, i64, i64)>,
    /// Every team with its rules and quotas.
    pub teams: Vec<TeamQuotas>,
    /// The portal's currency.
    pub currency: crate::domain::money::Currency,
}

/// The fleet page (platform admins).
#[server(endpoint = "get_fleet_page")]
pub async fn get_fleet_page() -> Result<FleetPage, AppError> {
    use crate::api::context::platform_admin;
    use crate::domain::gpu::GpuStatus;
    platform_admin(|call| async move {
        let db = &call.state.db;
        let nodes = crate::backend::inventory::nodes(db).await?;
        let mut models: Vec<(String, u32, i64, i64)> = Vec::new();
        for gpu in nodes
            .iter()
            .flat_map(|node| node.gpus.iter())
            .filter(|gpu| gpu.status != GpuStatus::Retired)
        {
            let price = gpu.hourly_price.minor();
            match models.iter_mut().find(|m| m.0 == gpu.model) {
                Some(row) => {
                    row.1 += 1;
                    row.2 = row.2.min(price);
                    row.3 = row.3.max(price);
                }
                None => models.push((gpu.model.clone(), 1, price, price)),
            }
        }
        models.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(FleetPage {
            nodes,
            models,
            teams: crate::backend::fleet::teams_with_quotas(db).await?,
            currency: call.state.portal.currency.clone(),
        })
    })
    .await
}
