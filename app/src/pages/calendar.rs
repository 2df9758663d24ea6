//! `/calendar`: every GPU as a row, grouped by node, with its bookings across a day or a week in
//! the viewer's time zone. Select a window by dragging (or with the keyboard) and book it from
//! the side panel; without JavaScript the panel's form does the same.

use crate::api::reservations::{BookReservation, get_calendar};
use crate::components::calendar::{BookingPanel, CalendarGrid, CalendarToolbar, Selection};
use crate::components::error::ErrorPanel;
use crate::i18n::*;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// The calendar page. Query: `start=YYYY-MM-DD`, `span=day|week`, `model=`, `min_memory_gib=`.
#[component]
pub fn CalendarPage() -> impl IntoView {
    let i18n = use_i18n();
    let query = use_query_map();
    let params = move || {
        let q = query.read();
        (
            q.get("start"),
            q.get("span"),
            q.get("model").filter(|m| !m.is_empty()),
            q.get("min_memory_gib").and_then(|g| g.parse::<u32>().ok()),
        )
    };
    // Bumped after a booking so the grid reloads.
    let reload = RwSignal::new(0u32);
    let zone_known = crate::components::calendar::use_browser_zone();
    let calendar = Resource::new(
        move || (params(), reload.get(), zone_known.get()),
        |((start, span, model, min_memory), _, _)| get_calendar(start, span, model, min_memory),
    );
    let selection = RwSignal::new(None::<Selection>);
    // Lives outside the reloading part, so the outcome stays on screen after the grid reloads.
    let book = ServerAction::<BookReservation>::new();
    Effect::new(move |_| {
        if let Some(Ok(_)) = book.value().get() {
            selection.set(None);
            reload.update(|n| *n += 1);
        }
    });
    view! {
        // A plain string, read once: leptos_meta reads a reactive title after the render, and
        // under load its signal was sometimes gone by then (a panic that cut the page off).
        <Title text=t_string!(i18n, calendar_title).to_string() />
        <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
            {move || {
                calendar
                    .get()
                    .map(|result| match result {
                        Ok(view) => {
                            let view = StoredValue::new(view);
                            let span = view.with_value(|v| v.span);
                            view! {
                                <div class="calendar-page" data-span=span.as_str()>
                                    <CalendarToolbar view />
                                    <div class="calendar-layout">
                                        <CalendarGrid view selection />
                                        <BookingPanel view selection book />
                                    </div>
                                </div>
                            }
                                .into_any()
                        }
                        Err(error) => view! { <ErrorPanel error /> }.into_any(),
                    })
            }}
        </Transition>
    }
}
