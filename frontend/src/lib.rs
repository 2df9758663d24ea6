//! The browser entry point: hydrates the HTML that the server rendered.

// Leptos view types nest deeply; the default limit (128) is too small for whole pages.
#![recursion_limit = "256"]

/// Called by the generated JS loader once the WASM module is ready.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(berth_app::App);
}
