//! One node with the table of its GPUs.

use crate::components::format::{HourlyPrice, MemoryText, date_text};
use crate::domain::gpu::GpuStatus;
use crate::domain::inventory::{GpuListing, NodeInventory};
use crate::domain::money::Currency;
use crate::i18n::*;
use leptos::prelude::*;

/// A node's header (name, host, GPU count, demo marker) and its GPUs.
#[component]
pub fn NodeCard(node: NodeInventory, currency: Currency) -> impl IntoView {
    let i18n = use_i18n();
    let heading_id = format!("node-{}", node.id);
    let labelled_by = heading_id.clone();
    let gpu_count = node.gpus.len();
    let added = node.created_at;
    let rows = node
        .gpus
        .into_iter()
        .map(|gpu| view! { <GpuRow gpu currency=currency.clone() /> })
        .collect_view();
    view! {
        <article class="node-card" aria-labelledby=labelled_by>
            <header class="node-head">
                <h2 id=heading_id>{node.name}</h2>
                {node.is_demo.then(|| view! { <span class="badge badge-demo">{t!(i18n, demo_badge)}</span> })}
                <span class="node-meta">
                    <span class="node-host">{node.hostname}</span>
                    <span>{t!(i18n, node_gpu_count, count = move || gpu_count)}</span>
                    <span>{move || t_string!(i18n, node_added, date = date_text(i18n, added)).to_string()}</span>
                </span>
            </header>
            <div class="table-scroll">
            <table class="gpu-table">
                <thead>
                    <tr>
                        <th scope="col" class="num">{t!(i18n, col_index)}</th>
                        <th scope="col">{t!(i18n, col_model)}</th>
                        <th scope="col" class="num">{t!(i18n, col_memory)}</th>
                        <th scope="col">{t!(i18n, col_status)}</th>
                        <th scope="col">{t!(i18n, col_sharing)}</th>
                        <th scope="col" class="num">{t!(i18n, col_price)}</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
            </div>
        </article>
    }
}

#[component]
fn GpuRow(gpu: GpuListing, currency: Currency) -> impl IntoView {
    let i18n = use_i18n();
    let status = gpu.status;
    let status_label = move || match status {
        GpuStatus::Active => t_string!(i18n, status_active).to_string(),
        GpuStatus::Maintenance => t_string!(i18n, status_maintenance).to_string(),
        GpuStatus::Retired => t_string!(i18n, status_retired).to_string(),
    };
    let sharing = if gpu.shareable {
        t!(i18n, sharing_fractional).into_any()
    } else {
        t!(i18n, sharing_whole).into_any()
    };
    view! {
        <tr class="gpu-row" data-status=status.as_str()>
            <td class="num">{gpu.device_index}</td>
            <td>
                <span class="gpu-model">{gpu.model}</span>
                <span class="gpu-uuid">{gpu.uuid}</span>
            </td>
            <td class="num"><MemoryText memory=gpu.memory /></td>
            <td><span class=format!("status status-{}", status.as_str())>{status_label}</span></td>
            <td>{sharing}</td>
            <td class="num"><HourlyPrice amount=gpu.hourly_price currency /></td>
        </tr>
    }
}
