//! One node with the table of its GPUs and their live values.

use crate::components::telemetry::{
    LiveFeed, NoValue, SourceBadge, StaleBadge, celsius_text, gib_number, percent_text,
    share_percent, watts_text,
};
use crate::domain::gpu::GpuStatus;
use crate::domain::inventory::{GpuListing, NodeInventory};
use crate::domain::money::Currency;
use crate::i18n::*;
use crate::text::format::t_count;
use crate::text::format::{HourlyPrice, MemoryText, date_text};
use leptos::either::Either;
use leptos::prelude::*;

/// A node's header (name, host, GPU count, demo marker, where its live values come from, a
/// silent agent) and its GPUs.
#[component]
pub fn NodeCard(node: NodeInventory, currency: Currency, live: LiveFeed) -> impl IntoView {
    let i18n = use_i18n();
    let heading_id = format!("node-{}", node.id);
    let labelled_by = heading_id.clone();
    let gpu_count = node.gpus.len();
    let added = node.created_at;
    let live_node = live.node(node.id);
    let stale = move || live_node.with(|n| n.as_ref().is_some_and(|n| n.stale));
    let rows = node
        .gpus
        .into_iter()
        .map(|gpu| view! { <GpuRow gpu currency=currency.clone() live /> })
        .collect_view();
    view! {
        <article class="node-card" class:stale=stale aria-labelledby=labelled_by>
            <header class="node-head">
                <h2 id=heading_id>{node.name}</h2>
                {node.is_demo.then(|| view! { <span class="badge badge-demo">{t!(i18n, demo_badge)}</span> })}
                <SourceBadge node=live_node />
                <StaleBadge node=live_node tick=live.tick />
                <span class="node-meta">
                    <span class="node-host">{node.hostname}</span>
                    <span>{move || t_count!(i18n, gpu_count, node_gpu_count_singular, node_gpu_count_plural)}</span>
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
                        <th scope="col" class="live-col">{t!(i18n, col_utilisation)}</th>
                        <th scope="col" class="num live-col">{t!(i18n, col_temperature)}</th>
                        <th scope="col" class="num live-col">{t!(i18n, col_power)}</th>
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
fn GpuRow(gpu: GpuListing, currency: Currency, live: LiveFeed) -> impl IntoView {
    let i18n = use_i18n();
    let status = gpu.status;
    let status_label = move || match status {
        GpuStatus::Active => t_string!(i18n, status_active).to_string(),
        GpuStatus::Maintenance => t_string!(i18n, status_maintenance).to_string(),
        GpuStatus::Retired => t_string!(i18n, status_retired).to_string(),
    };
    let sharing = if gpu.shareable {
        Either::Left(t!(i18n, sharing_fractional))
    } else {
        Either::Right(t!(i18n, sharing_whole))
    };
    let readings = live.gpu(gpu.id);
    let vanished = live.vanished(gpu.id);
    let total_mib = gpu.memory.mib();
    let value = move |f: fn(&crate::domain::telemetry::Readings) -> Option<u64>| {
        readings.with(|r| r.as_ref().and_then(|r| f(&r.readings)))
    };

    let util = move || match value(|r| r.gpu_util.map(u64::from)) {
        Some(percent) => {
            let percent = std::cmp::min(percent, 100);
            Either::Left(view! {
                <span class="util">
                    <span class="util-bar" aria-hidden="true">
                        <span class="util-fill" style=format!("width: {percent}%")></span>
                    </span>
                    <span class="util-value">{move || percent_text(i18n, percent as u8)}</span>
                </span>
            })
        }
        None => Either::Right(view! { <NoValue /> }),
    };
    let memory_used = move || {
        value(|r| r.memory_used_mib).map(|used| {
            let share = share_percent(used, total_mib);
            view! {
                <span class="live-sub" title=format!("{share}%")>
                    {move || {
                        let used = gib_number(i18n, used);
                        t_string!(i18n, value_gib_used, used = used).to_string()
                    }}
                </span>
            }
        })
    };
    let temperature =
        move || match readings.with(|r| r.as_ref().and_then(|r| r.readings.temperature_c)) {
            Some(v) => Either::Left(view! { {move || celsius_text(i18n, v)} }),
            None => Either::Right(view! { <NoValue /> }),
        };
    let power = move || match readings.with(|r| r.as_ref().and_then(|r| r.readings.power_mw)) {
        Some(v) => Either::Left(view! { {move || watts_text(i18n, v)} }),
        None => Either::Right(view! { <NoValue /> }),
    };
    let missing = move || {
        vanished.get().then(|| {
            view! {
                <span class="badge badge-missing" title=move || t_string!(i18n, gpu_missing_hint).to_string()>
                    {t!(i18n, gpu_missing)}
                </span>
            }
        })
    };
    let href = format!("/gpus/{}", gpu.id);
    let model = gpu.model.clone();
    let uuid_title = gpu.uuid.clone();
    view! {
        <tr class="gpu-row" data-status=status.as_str() data-gpu=gpu.id class:missing=move || vanished.get()>
            <td class="num">{gpu.device_index}</td>
            <td>
                <span class="gpu-name">
                    <a
                        class="gpu-model"
                        href=href
                        title=move || t_string!(i18n, gpu_open_details, model = model.clone()).to_string()
                    >
                        {gpu.model}
                    </a>
                    {missing}
                </span>
                <span class="gpu-uuid" title=uuid_title>{short_uuid(&gpu.uuid)}</span>
            </td>
            <td class="num">
                <MemoryText memory=gpu.memory />
                {memory_used}
            </td>
            <td><span class=format!("status status-{}", status.as_str())>{status_label}</span></td>
            <td class="sharing">{sharing}</td>
            <td class="live live-util">{util}</td>
            <td class="num live live-temperature">{temperature}</td>
            <td class="num live live-power">{power}</td>
            <td class="num"><HourlyPrice amount=gpu.hourly_price currency /></td>
        </tr>
    }
}

/// A long UUID with its middle left out (`GPU-de300000…0100000000`): the start says what it is,
/// the end tells cards of one node apart. The whole UUID is in the tooltip and on the GPU page.
fn short_uuid(uuid: &str) -> String {
    let chars: Vec<char> = uuid.chars().collect();
    if chars.len() <= 24 {
        return uuid.to_owned();
    }
    let head: String = chars[..12].iter().collect();
    let tail: String = chars[chars.len() - 10..].iter().collect();
    format!("{head}…{tail}")
}
