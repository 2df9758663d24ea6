//! Reading the GPU inventory.

use crate::domain::inventory::Inventory;
use crate::error::AppError;
use leptos::prelude::*;

/// Every node with its GPUs, and the currency their prices are in. Requires sign-in.
#[server(endpoint = "list_gpus")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn list_gpus() -> Result<Inventory, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        Ok(Inventory {
            nodes: crate::backend::inventory::nodes(&call.state).await?,
            currency: call.state.portal.currency.clone(),
        })
    })
    .await
}
