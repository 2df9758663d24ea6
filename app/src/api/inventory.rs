//! Reading the GPU inventory.

use crate::domain::inventory::Inventory;
use crate::error::AppError;
use leptos::prelude::*;

/// Every node with its GPUs, and the currency their prices are in; in a fleet of more than one
/// page of nodes, page `page` of those with GPUs of `model`. Requires sign-in.
#[server(endpoint = "list_gpus")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn list_gpus(model: Option<String>, page: Option<u32>) -> Result<Inventory, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        let page = page.map_or(1, |page| page as usize);
        crate::backend::inventory::page(&call.state, model.as_deref(), page).await
    })
    .await
}
