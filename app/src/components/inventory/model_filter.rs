//! The model filter: a plain GET form without JavaScript, instant after hydration.

use crate::i18n::*;
use leptos::prelude::*;

/// A select of models; `selected` is the current filter (`None`: all models). After hydration a
/// change filters at once and puts the filter in the address (so a reload or a shared link shows
/// the same) or, with `reload` (a fleet shown a page at a time, filtered by the server), loads the
/// filtered first page; without JavaScript the form's button loads the filtered page.
#[component]
pub fn ModelFilter(
    models: Vec<String>,
    selected: RwSignal<Option<String>>,
    #[prop(optional)] reload: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    // Effects run only in the browser, so this turns true once the page is hydrated.
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));

    let on_change = move |ev: leptos::ev::Event| {
        let model = event_target_value(&ev);
        let target = if model.is_empty() {
            "/".to_owned()
        } else {
            format!(
                "/?model={}",
                form_urlencoded::byte_serialize(model.as_bytes()).collect::<String>()
            )
        };
        if reload {
            if let Some(window) = web_sys::window() {
                let _ = window.location().set_href(&target);
            }
            return;
        }
        if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
            let _ = history.replace_state_with_url(
                &leptos::wasm_bindgen::JsValue::NULL,
                "",
                Some(&target),
            );
        }
        selected.set((!model.is_empty()).then_some(model));
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
