//! The calendar's parts: the toolbar (range, view, filters), the grid (one row per GPU, blocks
//! across time, a now-line, selecting a window by pointer or keyboard) and the booking panel.

mod grid;
mod panel;
pub mod select;
mod toolbar;

pub use grid::CalendarGrid;
pub use panel::BookingPanel;
pub use toolbar::CalendarToolbar;

use crate::domain::calendar::CalendarView;
use chrono::{DateTime, NaiveDateTime, TimeDelta, Utc};
use leptos::prelude::*;

/// A percentage for CSS positions (`left`, `width`) of a fraction 0.0–1.0.
pub fn pct(value: f64) -> String {
    let mut out = String::with_capacity(10);
    push_pct(&mut out, value);
    out
}

/// [`pct`] written onto `out`.
pub fn push_pct(out: &mut String, value: f64) {
    use std::fmt::Write as _;
    // Four decimals by integer arithmetic: a week of 64 GPUs writes thousands of these, and
    // formatting floats exactly was a sixth of the page's time.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a fraction of the view, far inside i64 once scaled"
    )]
    let scaled = (value * 1_000_000.0).round() as i64;
    let sign = if scaled < 0 { "-" } else { "" };
    let magnitude = scaled.unsigned_abs();
    let _ = write!(
        out,
        "{sign}{}.{:04}%",
        magnitude / 10_000,
        magnitude % 10_000
    );
}

/// A window being selected on one GPU's row: from the cell at `anchor` to the cell at `head`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selection {
    /// The GPU.
    pub gpu_id: i64,
    /// Where the selection started (start of a cell).
    pub anchor: DateTime<Utc>,
    /// Where it is now (start of a cell).
    pub head: DateTime<Utc>,
    /// Still being dragged or extended with the keyboard.
    pub selecting: bool,
}

impl Selection {
    /// The selected window `[start, end)` for cells of `cell` length.
    pub fn window(&self, cell: TimeDelta) -> (DateTime<Utc>, DateTime<Utc>) {
        let start = self.anchor.min(self.head);
        let end = self.anchor.max(self.head) + cell;
        (start, end)
    }
}

/// The start of the cell that contains `at`, cells counted from the range start.
pub fn cell_floor(view: &CalendarView, at: DateTime<Utc>) -> DateTime<Utc> {
    let cell = view.span.cell_minutes() * 60;
    let offset = (at - view.range.start())
        .num_seconds()
        .clamp(0, view.range.length().num_seconds() - 1);
    view.range.start() + TimeDelta::seconds(offset - offset.rem_euclid(cell))
}

/// `YYYY-MM-DD HH:MM` of an instant in the viewer's zone.
pub fn local_date_time(view: &CalendarView, at: DateTime<Utc>) -> NaiveDateTime {
    view.zone.local(at)
}

/// Reports the browser's time zone to the server in the `berth_tz` cookie; the returned signal
/// becomes the browser's zone once after hydration if the server did not know it yet, so a page
/// drawn in another zone can load its data again.
pub fn use_browser_zone() -> ReadSignal<Option<String>> {
    let (learned, set_learned) = signal(None::<String>);
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        {
            use leptos::wasm_bindgen::JsCast;
            let zone =
                js_sys::Intl::DateTimeFormat::new(&js_sys::Array::new(), &js_sys::Object::new())
                    .resolved_options();
            let name = js_sys::Reflect::get(&zone, &"timeZone".into())
                .ok()
                .and_then(|value| value.as_string());
            let document = web_sys::window()
                .and_then(|window| window.document())
                .and_then(|document| document.dyn_into::<web_sys::HtmlDocument>().ok());
            if let (Some(name), Some(document)) = (name, document) {
                let current = format!(
                    "{}={}",
                    crate::domain::zone::ZONE_COOKIE,
                    name.replace('/', "%2F")
                );
                let had = document.cookie().unwrap_or_default();
                if !had.contains(&current) {
                    let cookie = format!("{current}; Path=/; Max-Age=31536000; SameSite=Lax");
                    let _ = document.set_cookie(&cookie);
                    set_learned.set(Some(name));
                }
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = set_learned;
    });
    learned
}

#[cfg(test)]
mod tests {
    #[test]
    fn percentages_have_four_decimals() {
        assert_eq!(super::pct(0.0), "0.0000%");
        assert_eq!(super::pct(0.123_456_78), "12.3457%");
        assert_eq!(super::pct(1.0), "100.0000%");
        assert_eq!(super::pct(-0.05), "-5.0000%");
        assert_eq!(super::pct(-0.000_000_1), "0.0000%");
    }
}
