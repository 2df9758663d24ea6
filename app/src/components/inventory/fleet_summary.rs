//! Per-model counts of the fleet, beside the GPU list.

use crate::domain::inventory::ModelSummary;
use crate::i18n::*;
use crate::text::format::MemoryText;
use crate::text::format::{count_text, t_count};
use leptos::prelude::*;

/// How many GPUs of each model there are and how many are available.
#[component]
pub fn FleetSummary(summary: Vec<ModelSummary>, total: usize) -> impl IntoView {
    let i18n = use_i18n();
    let items = summary
        .into_iter()
        .map(|model| {
            let (active, all) = (model.active, model.total);
            let percent = (active * 100).checked_div(all).unwrap_or(0);
            view! {
                <li class="fleet-model">
                    <div class="fleet-model-head">
                        <span class="gpu-model">{model.model}</span>
                        <span class="fleet-memory"><MemoryText memory=model.memory /></span>
                    </div>
                    <div class="meter" aria-hidden="true">
                        <div class="meter-fill" style=format!("width: {percent}%")></div>
                    </div>
                    <div class="fleet-count">
                        {move || {
                            let (active, all) = (count_text(i18n, active), count_text(i18n, all));
                            t_string!(i18n, fleet_available, active, total = all).to_string()
                        }}
                    </div>
                </li>
            }
        })
        .collect_view();
    view! {
        <section class="fleet-summary" aria-labelledby="fleet-heading">
            <h2 id="fleet-heading">{t!(i18n, fleet_title)}</h2>
            <p class="fleet-total">{move || t_count!(i18n, total, fleet_total_singular, fleet_total_plural)}</p>
            <ul class="fleet-models">{items}</ul>
        </section>
    }
}
