//! The browser entry point: hydrates the HTML that the server rendered.

// Leptos view types nest deeply; the default limit (128) is too small for whole pages.
#![recursion_limit = "256"]

/// Called by the generated JS loader once the WASM module is ready.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    // Lazy: each page's code arrives in its own chunk before that page hydrates.
    leptos::mount::hydrate_lazy(berth_app::App);
}
