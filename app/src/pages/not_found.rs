//! Shown for any path that no route matches, with HTTP status 404.

use crate::i18n::*;
use leptos::prelude::*;
use leptos_meta::Title;

/// The 404 page.
#[component]
pub fn NotFoundPage() -> impl IntoView {
    let i18n = use_i18n();
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(http::StatusCode::NOT_FOUND);
    }
    view! {
        // A plain string, read once: leptos_meta reads a reactive title after the render, and
        // under load its signal was sometimes gone by then (a panic that cut the page off).
        <Title text=t_string!(i18n, not_found_title).to_string() />
        <section class="not-found">
            <h1>{t!(i18n, not_found_title)}</h1>
            <p>{t!(i18n, not_found_body)}</p>
            <p><a href="/">{t!(i18n, back_to_inventory)}</a></p>
        </section>
    }
}
