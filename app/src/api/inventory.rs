//! Reading the GPU inventory.

use crate::domain::inventory::Inventory;
use crate::error::AppError;
use leptos::prelude::*;

/// Every node with its GPUs, and the currency their prices are in. Requires sign-in.
#[server(endpoint = "list_gpus")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn list_gpus() -> Result<Inventory, AppError> {
    use crate::server::{db, state};

    state::with_status(
        async {
            let state = state::app_state()?;
            crate::server::auth::actor::require_actor().await?;
            let nodes = db::inventory::list_nodes_with_gpus(&state.db).await?;
            Ok(Inventory {
                nodes,
                currency: state.portal.currency.clone(),
            })
        }
        .await,
    )
}
