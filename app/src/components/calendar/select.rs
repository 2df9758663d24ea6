//! Selecting a window on the server-rendered grid: the calendar's island listens on the grid
//! (events bubble up from each row's track), turns pointer positions into cells, and draws the
//! selection into the chosen row.

use super::{Selection, cell_floor, pct};
use crate::domain::calendar::CalendarView;
use chrono::{DateTime, TimeDelta, Utc};
use leptos::prelude::*;
use leptos::wasm_bindgen::JsCast;

/// The row track (`.cal-track`) an event happened in, with its GPU id and whether it is bookable.
pub fn track_of(event: &web_sys::Event) -> Option<(web_sys::Element, i64, bool)> {
    let target = event.target()?.dyn_into::<web_sys::Element>().ok()?;
    let track = target.closest(".cal-track").ok()??;
    let gpu_id = track.get_attribute("data-gpu")?.parse().ok()?;
    let bookable = track.get_attribute("data-bookable").as_deref() == Some("true");
    Some((track, gpu_id, bookable))
}

/// The cell start under `client_x` on `track`.
pub fn pointer_instant(
    view: StoredValue<CalendarView>,
    track: &web_sys::Element,
    client_x: i32,
) -> DateTime<Utc> {
    let rect = track.get_bounding_client_rect();
    let fraction = ((f64::from(client_x) - rect.left()) / rect.width()).clamp(0.0, 0.999_999);
    view.with_value(|v| {
        #[expect(clippy::cast_precision_loss, reason = "seconds of a week fit an f64")]
        let seconds = v.range.length().num_seconds() as f64 * fraction;
        #[expect(clippy::cast_possible_truncation, reason = "within the range")]
        let at = v.range.start() + TimeDelta::seconds(seconds as i64);
        cell_floor(v, at)
    })
}

/// Moves keyboard focus from `current` to the previous (-1) or next (+1) GPU row.
pub fn focus_row(current: &web_sys::Element, step: i32) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let Ok(tracks) = document.query_selector_all(".cal-track") else {
        return;
    };
    let count = tracks.length();
    let index = (0..count).find(|i| {
        tracks
            .get(*i)
            .is_some_and(|node| node.is_same_node(Some(current)))
    });
    if let Some(index) = index {
        let target = i64::from(index) + i64::from(step);
        if target >= 0
            && target < i64::from(count)
            && let Some(next) = tracks
                .get(u32::try_from(target).unwrap_or(0))
                .and_then(|n| n.dyn_into::<web_sys::HtmlElement>().ok())
        {
            let _ = next.focus();
        }
    }
}

/// Draws `selection` into its row (and removes the previous drawing).
pub fn draw_selection(view: StoredValue<CalendarView>, selection: Option<Selection>) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    if let Ok(old) = document.query_selector_all(".cal-track .cal-selection") {
        for i in 0..old.length() {
            if let Some(element) = old
                .get(i)
                .and_then(|n| n.dyn_into::<web_sys::Element>().ok())
            {
                element.remove();
            }
        }
    }
    let Some(selection) = selection else {
        return;
    };
    let selector = format!(".cal-track[data-gpu=\"{}\"]", selection.gpu_id);
    let Ok(Some(track)) = document.query_selector(&selector) else {
        return;
    };
    let (left, width) = view.with_value(|v| {
        let (start, end) = selection.window(TimeDelta::minutes(v.span.cell_minutes()));
        let left = v.fraction(start);
        (left, v.fraction(end) - left)
    });
    if let Ok(element) = document.create_element("div") {
        element.set_class_name("cal-selection");
        let _ = element.set_attribute("aria-hidden", "true");
        let _ = element.set_attribute("style", &format!("left:{};width:{}", pct(left), pct(width)));
        let _ = track.append_child(&element);
    }
}
