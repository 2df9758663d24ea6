//! Previous / today / next, day or week, and the model and memory filters: plain links and a GET
//! form, so they work without JavaScript.

use crate::domain::calendar::{CalendarView, Span};
use crate::i18n::*;
use leptos::prelude::*;

/// The calendar URL for a range, keeping the filters.
fn link(start: chrono::NaiveDate, span: Span, model: &str, memory: &str) -> String {
    let mut url = format!("/calendar?start={start}&span={}", span.as_str());
    if !model.is_empty() {
        url.push_str("&model=");
        url.push_str(&form_urlencoded::byte_serialize(model.as_bytes()).collect::<String>());
    }
    if !memory.is_empty() {
        url.push_str("&min_memory_gib=");
        url.push_str(memory);
    }
    url
}

/// The calendar's toolbar.
#[component]
pub fn CalendarToolbar(
    view: StoredValue<CalendarView>,
    /// The model filter (empty: all models).
    model: String,
    /// The minimum memory filter in GiB (empty: any).
    memory: String,
) -> impl IntoView {
    let i18n = use_i18n();
    let model = StoredValue::new(model);
    let memory = StoredValue::new(memory);
    let model = move || model.get_value();
    let memory = move || memory.get_value();
    let (span, previous, next, today, first, models, zone) = view.with_value(|v| {
        (
            v.span,
            v.previous,
            v.next,
            v.today,
            v.days[0].date,
            v.models.clone(),
            v.zone.name.clone(),
        )
    });
    let href = move |start: chrono::NaiveDate, span: Span| link(start, span, &model(), &memory());
    let memory_options = [16u32, 24, 40, 48, 80];
    view! {
        <div class="calendar-toolbar">
            <div class="calendar-title">
                <h1>{t!(i18n, calendar_title)}</h1>
                <p class="lede">{t!(i18n, calendar_intro, zone = move || zone.clone())}</p>
            </div>
            <nav class="calendar-nav" aria-label=move || t_string!(i18n, calendar_navigation).to_string()>
                <a class="button-secondary" href=move || href(previous, span) rel="prev">
                    "◀ " {t!(i18n, calendar_previous)}
                </a>
                <a class="button-secondary" href=move || href(today, span)>{t!(i18n, calendar_today)}</a>
                <a class="button-secondary" href=move || href(next, span) rel="next">
                    {t!(i18n, calendar_next)} " ▶"
                </a>
                <span class="segmented" role="group" aria-label=move || t_string!(i18n, calendar_view).to_string()>
                    <a href=move || href(first, Span::Day) aria-current=(span == Span::Day).then_some("page")>
                        {t!(i18n, calendar_day)}
                    </a>
                    <a href=move || href(first, Span::Week) aria-current=(span == Span::Week).then_some("page")>
                        {t!(i18n, calendar_week)}
                    </a>
                </span>
            </nav>
            <form class="calendar-filter" method="get" action="/calendar">
                <input type="hidden" name="start" value=first.to_string() />
                <input type="hidden" name="span" value=span.as_str() />
                <label>
                    {t!(i18n, filter_model)}
                    <select name="model">
                        <option value="" selected=move || model().is_empty()>{t!(i18n, filter_all_models)}</option>
                        {models
                            .into_iter()
                            .map(|m| {
                                let selected = { let m = m.clone(); move || model() == m };
                                view! { <option value=m.clone() selected=selected>{m.clone()}</option> }
                            })
                            .collect_view()}
                    </select>
                </label>
                <label>
                    {t!(i18n, filter_min_memory)}
                    <select name="min_memory_gib">
                        <option value="" selected=move || memory().is_empty()>{t!(i18n, filter_any_memory)}</option>
                        {memory_options
                            .into_iter()
                            .map(|gib| {
                                let value = gib.to_string();
                                let selected = { let value = value.clone(); move || memory() == value };
                                view! { <option value=value.clone() selected=selected>{format!("≥ {gib} GB")}</option> }
                            })
                            .collect_view()}
                    </select>
                </label>
                <button type="submit" class="button-secondary">{t!(i18n, filter_apply)}</button>
            </form>
        </div>
    }
}
