//! The fleet admin page's data (platform admins).
// A plain form's server function takes one argument per field.
#![allow(clippy::too_many_arguments)]

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
    /// Every node's intruder policy.
    pub policies: Vec<crate::domain::lease::NodePolicy>,
    /// The idle policies: the platform's and the teams' overrides.
    pub idle: crate::domain::reclaim::Policies,
}

/// The fleet page (platform admins).
#[server(endpoint = "get_fleet_page")]
pub async fn get_fleet_page() -> Result<FleetPage, AppError> {
    use crate::api::context::platform_admin;
    use crate::domain::gpu::GpuStatus;
    platform_admin(|call| async move {
        let nodes = crate::backend::inventory::nodes(&call.state).await?;
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
            teams: crate::backend::fleet::teams_with_quotas(&call.state).await?,
            policies: crate::backend::node_access::policies(&call.state, &call.actor).await?,
            currency: call.state.portal.currency.clone(),
            idle: crate::backend::reclaim::policies(&call.state.db).await?,
        })
    })
    .await
}

/// The fleet page's forms (platform admins): each posts to its own function below and comes
/// back to the page with a [`FleetDone`](crate::api::forms::FleetDone) or the refusal.
#[cfg(feature = "ssr")]
async fn fleet_form<Fut>(
    done: crate::api::forms::FleetDone,
    command: impl FnOnce(crate::api::context::Call) -> Fut,
) -> Result<(), AppError>
where
    Fut: Future<Output = Result<(), AppError>>,
{
    use crate::api::forms::{Outcome, back_to};
    let call = crate::api::context::platform_admin(|call| async move { Ok(call) }).await?;
    let result = command(call).await;
    back_to("/admin/fleet", result.map(|()| ("done", done.query_word())))
}

/// Sets the hourly price (in the currency as typed) of every GPU of `model`.
#[server(endpoint = "forms/fleet/model_price")]
pub async fn set_model_price(model: String, price: String) -> Result<(), AppError> {
    use crate::api::forms::FleetDone;
    use crate::backend::fleet;
    fleet_form(FleetDone::Price, |call| async move {
        let price = fleet::parse_price("price", &price, &call.state.portal.currency)?;
        fleet::set_model_price(&call.state, &call.actor, &model, price, call.now)
            .await
            .map(drop)
    })
    .await
}

/// Sets one GPU's hourly price and whether it may be shared (a checkbox: present when ticked).
#[server(endpoint = "forms/fleet/gpu")]
pub async fn change_gpu(
    gpu_id: i64,
    price: String,
    #[server(default)] shareable: Option<String>,
) -> Result<(), AppError> {
    use crate::api::forms::FleetDone;
    use crate::backend::fleet;
    fleet_form(FleetDone::Gpu, |call| async move {
        let change = fleet::GpuChange {
            hourly_price_minor: Some(fleet::parse_price(
                "price",
                &price,
                &call.state.portal.currency,
            )?),
            shareable: Some(shareable.is_some()),
        };
        fleet::update_gpu(&call.state, &call.actor, gpu_id, &change, call.now).await
    })
    .await
}

/// Retires a GPU: its bookings are released with a full refund.
#[server(endpoint = "forms/fleet/retire")]
pub async fn retire_gpu(gpu_id: i64) -> Result<(), AppError> {
    use crate::api::forms::FleetDone;
    fleet_form(FleetDone::Retired, |call| async move {
        crate::backend::reservations::retire_gpu(&call.state, &call.actor, gpu_id, call.now)
            .await
            .map(drop)
    })
    .await
}

/// Sets what a node's agent does about processes of people holding no lease on a GPU
/// (`off`, `report`, `terminate`) and whether idle GPUs are protected (a checkbox).
#[server(endpoint = "forms/fleet/node_policy")]
pub async fn set_node_policy(
    node_id: i64,
    intruders: String,
    #[server(default)] protect_idle: Option<String>,
) -> Result<(), AppError> {
    use crate::api::forms::FleetDone;
    fleet_form(FleetDone::NodePolicy, |call| async move {
        let policy = crate::domain::lease::IntruderPolicy::parse(&intruders)
            .map_err(|problem| AppError::invalid("intruders", problem))?;
        crate::backend::node_access::set_policy(
            &call.state,
            &call.actor,
            node_id,
            policy,
            protect_idle.is_some(),
        )
        .await
    })
    .await
}

/// Sets the idle policy of a team (`team`: its id) or the platform's default (`team` empty).
#[server(endpoint = "forms/fleet/idle_policy")]
pub async fn set_idle_policy(
    #[server(default)] team: String,
    action: String,
    threshold_percent: String,
    window_minutes: String,
    #[server(default)] warnings: String,
    exempt_max_gpus: String,
    exempt_max_hours: String,
    #[server(default)] exempt_production: Option<String>,
    #[server(default)] exempt_training: Option<String>,
    #[server(default)] exempt_development: Option<String>,
    #[server(default)] exempt_batch: Option<String>,
    refund_percent: String,
) -> Result<(), AppError> {
    use crate::api::forms::FleetDone;
    use crate::backend::reclaim::{PolicyForm, read_form, set_policy};
    use crate::domain::quota::Priority;
    fleet_form(FleetDone::IdlePolicy, |call| async move {
        let team = crate::backend::input::whole_number("team", Some(&team))?;
        let ticked = [
            (exempt_production, Priority::Production),
            (exempt_training, Priority::Training),
            (exempt_development, Priority::Development),
            (exempt_batch, Priority::Batch),
        ];
        let form = PolicyForm {
            action,
            threshold_percent,
            window_minutes,
            warnings,
            exempt_max_gpus,
            exempt_max_hours,
            exempt_priorities: ticked
                .into_iter()
                .filter_map(|(on, priority)| on.map(|_| priority))
                .collect(),
            refund_percent,
        };
        let policy = read_form(&form)?;
        set_policy(&call.state, &call.actor, team, policy)
            .await
            .map(drop)
    })
    .await
}

/// Removes a team's idle policy: the platform's applies to it again.
#[server(endpoint = "forms/fleet/idle_policy_clear")]
pub async fn clear_idle_policy(team_id: i64) -> Result<(), AppError> {
    use crate::api::forms::FleetDone;
    fleet_form(FleetDone::IdlePolicyCleared, |call| async move {
        crate::backend::reclaim::clear_team_policy(&call.state, &call.actor, team_id).await
    })
    .await
}
