//! `/`: the GPU inventory, grouped by node, with the fleet summary beside it. Live values
//! (utilisation, memory, temperature, power) refresh every five seconds in the browser.

use crate::api::inventory::list_gpus;
use crate::components::error::ErrorPanel;
use crate::components::inventory::{FleetSummary, ModelFilter, NodeCard};
use crate::components::telemetry::LiveFeed;
use crate::domain::inventory::{Inventory, parse_model_filter};
use crate::i18n::*;
use crate::text::format::t_count;
use leptos::either::{Either, EitherOf3};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// The GPU inventory page. Query: `model=` filters by GPU model.
#[component]
pub fn InventoryPage() -> impl IntoView {
    let i18n = use_i18n();
    let query = use_query_map();
    let model = query.with_untracked(|q| parse_model_filter(q.get("model").as_deref()));
    let page = query.with_untracked(|q| q.get("page").and_then(|page| page.parse::<u32>().ok()));
    view! {
        // A plain string, read once: leptos_meta reads a reactive title after the render, and
        // under load its signal was sometimes gone by then (a panic that cut the page off).
        <Title text=t_string!(i18n, inventory_title).to_string() />
        <InventoryBoard model page />
    }
}

/// The inventory with its live values and the instant model filter (an island).
#[cfg_attr(feature = "hydrate", island(lazy))]
#[cfg_attr(not(feature = "hydrate"), island)]
fn InventoryBoard(model: Option<String>, page: Option<u32>) -> impl IntoView {
    let i18n = use_i18n();
    let selected = RwSignal::new(model.clone());
    let inventory = Resource::new(|| (), move |()| list_gpus(model.clone(), page));
    let live = LiveFeed::new();

    view! {
        <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
            {move || {
                inventory
                    .get()
                    .map(|result| match result {
                        Ok(inventory) => Either::Left(view! { <InventoryView inventory selected live /> }),
                        Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                    })
            }}
        </Transition>
    }
}

#[component]
fn InventoryView(
    inventory: Inventory,
    selected: RwSignal<Option<String>>,
    live: LiveFeed,
) -> impl IntoView {
    let i18n = use_i18n();
    // A large fleet comes a page at a time, filtered by the server: a new filter loads the page.
    let fleet = inventory.fleet.clone();
    let paged = fleet.is_some();
    let inventory = StoredValue::new(inventory);
    let nodes = Memo::new(move |_| {
        if paged {
            inventory.with_value(|inventory| inventory.nodes.clone())
        } else {
            inventory.with_value(|inventory| inventory.filtered(selected.get().as_deref()))
        }
    });
    let matching = fleet.as_ref().map(|fleet| fleet.matching);
    let shown = move || {
        matching.unwrap_or_else(|| {
            nodes.with(|nodes| nodes.iter().map(|node| node.gpus.len()).sum::<usize>())
        })
    };
    let (models, summary, total, demo, empty) = match &fleet {
        Some(fleet) => (
            fleet.models.clone(),
            fleet.summary.clone(),
            fleet.total,
            fleet.demo,
            fleet.total == 0,
        ),
        None => inventory.with_value(|inventory| {
            (
                inventory.models(),
                inventory.summary(),
                inventory.gpu_count(),
                inventory.has_demo_data(),
                inventory.nodes.is_empty(),
            )
        }),
    };
    // Above and below the node cards: a page is 32 nodes long.
    let pager_top = fleet
        .clone()
        .map(|fleet| view! { <InventoryPager fleet /> });
    let pager = fleet.map(|fleet| view! { <InventoryPager fleet /> });
    let currency = inventory.with_value(|inventory| inventory.currency.clone());

    view! {
        {demo
            .then(|| {
                view! {
                    <div class="demo-banner" role="note">
                        <strong>{t!(i18n, demo_banner_title)}</strong>
                        " "
                        {t!(i18n, demo_banner)}
                    </div>
                }
            })}
        <div class="inventory-layout">
            <section class="inventory-list" aria-labelledby="inventory-heading">
                <div class="page-head">
                    <div>
                        <h1 id="inventory-heading">{t!(i18n, inventory_title)}</h1>
                        <p class="lede">{t!(i18n, inventory_intro)}</p>
                    </div>
                    <ModelFilter models selected reload=paged />
                </div>
                <p class="result-count" aria-live="polite">
                    {move || t_count!(i18n, shown(), gpus_shown_singular, gpus_shown_plural)}
                </p>
                {pager_top}
                {move || {
                    if empty {
                        EitherOf3::A(view! { <p class="empty">{t!(i18n, empty_inventory)}</p> })
                    } else if nodes.with(Vec::is_empty) {
                        EitherOf3::B(view! { <p class="empty">{t!(i18n, no_match)}</p> })
                    } else {
                        let currency = currency.clone();
                        EitherOf3::C(
                            nodes
                                .get()
                                .into_iter()
                                .map(|node| view! { <NodeCard node currency=currency.clone() live /> })
                                .collect_view(),
                        )
                    }
                }}
                {pager}
            </section>
            <aside class="inventory-side">
                <FleetSummary summary total />
            </aside>
        </div>
    }
}

/// The links between the pages of a large inventory, keeping the model filter.
#[component]
fn InventoryPager(fleet: crate::domain::inventory::FleetPage) -> impl IntoView {
    let i18n = use_i18n();
    let (page, pages) = (fleet.page, fleet.pages);
    let href = move |page: usize| {
        let mut query = form_urlencoded::Serializer::new(String::new());
        if let Some(model) = &fleet.model {
            query.append_pair("model", model);
        }
        query.append_pair("page", &page.to_string());
        format!("/?{}", query.finish())
    };
    let previous = (page > 1).then(|| {
        view! { <a class="pager-previous" rel="prev" href=href(page - 1)>{t!(i18n, pager_previous)}</a> }
    });
    let next = (page < pages).then(|| {
        view! { <a class="pager-next" rel="next" href=href(page + 1)>{t!(i18n, pager_next)}</a> }
    });
    view! {
        <nav class="pager" aria-label=t_string!(i18n, pager_label).to_string()>
            {previous}
            <span class="pager-position">{t!(i18n, pager_position, page = move || page, pages = move || pages)}</span>
            {next}
        </nav>
    }
}
