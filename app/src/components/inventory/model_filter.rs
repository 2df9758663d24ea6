//! The model filter: a plain GET form without JavaScript, instant after hydration.

use crate::i18n::*;
use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::hooks::use_navigate;
use leptos_router::location::Url;

/// A select of models; `selected` is the current filter (`None`: all models).
#[component]
pub fn ModelFilter(models: Vec<String>, selected: Signal<Option<String>>) -> impl IntoView {
    let i18n = use_i18n();
    let navigate = use_navigate();
    // Effects run only in the browser, so this turns true once the page is hydrated.
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));

    let on_change = move |ev: leptos::ev::Event| {
        let model = event_target_value(&ev);
        let target = if model.is_empty() {
            "/".to_owned()
        } else {
            format!("/?model={}", Url::escape(&model))
        };
        navigate(
            &target,
            NavigateOptions {
                replace: true,
                scroll: false,
                ..NavigateOptions::default()
            },
        );
    };
    let options = models
        .into_iter()
        .map(|model| {
            let value = model.clone();
            let is_selected = move || selected.get().as_deref() == Some(value.as_str());
            view! { <option value=model.clone() selected=is_selected>{model.clone()}</option> }
        })
        .collect_view();
    view! {
        <form class="model-filter" method="get" action="/" data-hydrated=move || hydrated.get().to_string()>
            <label for="model-filter">{t!(i18n, filter_model)}</label>
            <select id="model-filter" name="model" on:change=on_change>
                <option value="" selected=move || selected.get().is_none()>
                    {t!(i18n, filter_all_models)}
                </option>
                {options}
            </select>
            <button type="submit" class="button-secondary" class:js-hidden=hydrated>
                {t!(i18n, filter_apply)}
            </button>
        </form>
    }
}
