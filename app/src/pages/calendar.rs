//! `/calendar`: every GPU as a row, grouped by node, with its bookings across a day or a week in
//! the viewer's time zone. Select a window by dragging (or with the keyboard) and book it from
//! the side panel; without JavaScript the panel's form does the same.

use crate::api::reservations::{BookReservation, get_calendar};
use crate::components::calendar::select::{draw_selection, focus_row, pointer_instant, track_of};
use crate::components::calendar::{
    BookingPanel, CalendarGrid, CalendarToolbar, Selection, cell_floor, use_browser_zone,
};
use crate::components::error::ErrorPanel;
use crate::domain::calendar::CalendarView;
use crate::i18n::*;
use chrono::TimeDelta;
use leptos::prelude::*;
use leptos::wasm_bindgen::JsCast;
use leptos_meta::Title;
use leptos_router::hooks::{use_location, use_query_map};

/// The calendar page. Query: `start=YYYY-MM-DD`, `span=day|week`, `model=`, `min_memory_gib=`.
#[component]
pub fn CalendarPage() -> impl IntoView {
    let i18n = use_i18n();
    let query = use_query_map();
    let (start, span, model, min_memory_gib) = query.with_untracked(|q| {
        (
            q.get("start"),
            q.get("span"),
            q.get("model").filter(|m| !m.is_empty()),
            q.get("min_memory_gib"),
        )
    });
    // The plain booking form's outcome comes back in the query (`booked=` or `error=`).
    let (booked, error) = query.with_untracked(|q| (q.get("booked"), q.get("error")));
    let search = use_location().search.get_untracked();
    let kept = search
        .trim_start_matches('?')
        .split('&')
        .filter(|pair| {
            !pair.starts_with("booked=") && !pair.starts_with("error=") && !pair.is_empty()
        })
        .collect::<Vec<_>>()
        .join("&");
    let return_to = if kept.is_empty() {
        "/calendar".to_owned()
    } else {
        format!("/calendar?{kept}")
    };
    let model_filter = model.clone().unwrap_or_default();
    // A team booking near or over the team's budget: said above the calendar after the reload.
    let booked_id = booked.as_deref().and_then(|raw| raw.parse::<i64>().ok());
    let note = Resource::new(
        || (),
        move |()| async move {
            match booked_id {
                Some(id) => crate::api::reservations::get_booking_note(id).await,
                None => Ok(None),
            }
        },
    );
    let filter_memory = min_memory_gib.clone().unwrap_or_default();
    let calendar = Resource::new(
        || (),
        move |()| {
            get_calendar(
                start.clone(),
                span.clone(),
                model.clone(),
                min_memory_gib.clone(),
            )
        },
    );
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
                            let panel_view = view.without_blocks();
                            let view = StoredValue::new(view);
                            let span = view.with_value(|v| v.span);
                            let model = model_filter.clone();
                            let memory = filter_memory.clone();
                            let note = note.get().and_then(Result::ok).flatten().map(|(text, link)| {
                                view! {
                                    <p class="notice notice-warn budget-note" role="status">
                                        {text}
                                        {link.map(|(href, words)| view! { " " <a href=href class="card-follow">{words}</a> })}
                                    </p>
                                }
                            });
                            view! {
                                <div class="calendar-page" data-span=span.as_str()>
                                    <CalendarToolbar view model memory />
                                    {note}
                                    <CalendarBoard
                                        view=panel_view
                                        return_to=return_to.clone()
                                        booked=booked.clone()
                                        error=error.clone()
                                    >
                                        <CalendarGrid view />
                                    </CalendarBoard>
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

/// The calendar's interactive part (an island, the only code this page loads into the browser):
/// selecting a window on the server-rendered grid (its child) and the booking panel. A booking
/// made here reloads the page, which then shows it; so does learning the browser's time zone.
#[cfg_attr(feature = "hydrate", island(lazy))]
#[cfg_attr(not(feature = "hydrate"), island)]
fn CalendarBoard(
    view: CalendarView,
    return_to: String,
    booked: Option<String>,
    error: Option<String>,
    children: Children,
) -> impl IntoView {
    let view = StoredValue::new(view);
    let cell = view.with_value(|v| TimeDelta::minutes(v.span.cell_minutes()));
    let selection = RwSignal::new(None::<Selection>);
    let book = ServerAction::<BookReservation>::new();
    let zone_known = use_browser_zone();
    {
        let return_to = return_to.clone();
        Effect::new(move |_| {
            if let Some(Ok(id)) = book.value().get() {
                let separator = if return_to.contains('?') { '&' } else { '?' };
                go_to(&format!("{return_to}{separator}booked={id}"));
            } else if let Some(browser) = zone_known.get() {
                // The server drew the grid before it knew the browser's zone: drawn again in it,
                // unless it was drawn in that zone anyway or in the one chosen on the profile.
                let redraw = view.with_value(|v| !v.zone_chosen && v.zone.name != browser);
                if redraw {
                    go_to(&return_to);
                }
            }
        });
    }
    Effect::new(move |_| draw_selection(view, selection.get()));
    // Effects run only in the browser: true once the island is hydrated (tests wait for it).
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    let start_here = move |gpu_id: i64| {
        let at = view.with_value(|v| cell_floor(v, v.now.max(v.range.start())));
        Selection {
            gpu_id,
            anchor: at,
            head: at,
            selecting: false,
        }
    };
    let on_pointer_down = move |ev: leptos::ev::PointerEvent| {
        if ev.button() != 0 {
            return;
        }
        if let Some((track, gpu_id, true)) = track_of(&ev) {
            ev.prevent_default();
            let _ = track
                .dyn_ref::<web_sys::HtmlElement>()
                .map(web_sys::HtmlElement::focus);
            let at = pointer_instant(view, &track, ev.client_x());
            selection.set(Some(Selection {
                gpu_id,
                anchor: at,
                head: at,
                selecting: true,
            }));
        }
    };
    let on_pointer_move = move |ev: leptos::ev::PointerEvent| {
        if ev.buttons() & 1 == 0 {
            return;
        }
        if let Some((track, gpu_id, _)) = track_of(&ev)
            && let Some(mut current) = selection.get_untracked()
            && current.gpu_id == gpu_id
            && current.selecting
        {
            current.head = pointer_instant(view, &track, ev.client_x());
            selection.set(Some(current));
        }
    };
    let on_pointer_up = move |_| {
        if let Some(mut current) = selection.get_untracked()
            && current.selecting
        {
            current.selecting = false;
            selection.set(Some(current));
        }
    };
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        let Some((track, gpu_id, bookable)) = track_of(&ev) else {
            return;
        };
        let key = ev.key();
        let current = selection.get_untracked().filter(|s| s.gpu_id == gpu_id);
        match key.as_str() {
            "ArrowRight" | "ArrowLeft" => {
                ev.prevent_default();
                let step = if key == "ArrowRight" { cell } else { -cell };
                let mut s = current.unwrap_or_else(|| start_here(gpu_id));
                s.head = view.with_value(|v| cell_floor(v, s.head + step));
                if !s.selecting {
                    s.anchor = s.head;
                }
                selection.set(Some(s));
            }
            "Enter" | " " if bookable => {
                ev.prevent_default();
                let mut s = current.unwrap_or_else(|| start_here(gpu_id));
                s.selecting = !s.selecting;
                if s.selecting {
                    s.anchor = s.head;
                }
                selection.set(Some(s));
            }
            "Escape" => selection.set(None),
            "ArrowUp" => {
                ev.prevent_default();
                focus_row(&track, -1);
            }
            "ArrowDown" => {
                ev.prevent_default();
                focus_row(&track, 1);
            }
            _ => {}
        }
    };
    view! {
        <div
            class="calendar-layout"
            data-hydrated=move || hydrated.get().to_string()
            on:pointerdown=on_pointer_down
            on:pointermove=on_pointer_move
            on:pointerup=on_pointer_up
            on:keydown=on_key
        >
            {children()}
            <BookingPanel view selection book return_to booked error />
        </div>
    }
}

/// Loads `url` in this tab.
fn go_to(url: &str) {
    if let Some(window) = web_sys::window() {
        let _ = window.location().assign(url);
    }
}
