//! The browser entry point. Berth renders pages on the server; only its islands (the interactive
//! parts of a page) hydrate. Each page's island is lazy: its code arrives in its own WASM chunk.

// Leptos view types nest deeply; the default limit (128) is too small for whole pages.
#![recursion_limit = "256"]

// Links the islands' exported hydration functions into this module.
#[allow(unused_imports)]
use berth_app::*;

/// Called by the generated JS loader once the WASM module is ready.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_islands();
}
