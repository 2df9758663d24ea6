//! The calendar and reservations: server functions for the pages (the JSON API under
//! `/api/v1/reservations` uses the same service layer, `backend::reservations`).

// A server function's arguments are its form's fields (the browser build's generated client
// takes them one by one too).
#![allow(clippy::too_many_arguments)]

use crate::domain::calendar::CalendarView;
use crate::domain::reservation::{MyReservations, Reservation, SlotOffer};
use crate::error::AppError;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// The calendar from `start` (a local date, `YYYY-MM-DD`; default today) for a `day` or a `week`,
/// optionally only one `model` or GPUs with at least `min_memory_gib`; in the caller's time zone
/// (profile setting, else the browser's cookie, else UTC).
#[server(endpoint = "get_calendar")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn get_calendar(
    start: Option<String>,
    span: Option<String>,
    model: Option<String>,
    min_memory_gib: Option<String>,
) -> Result<CalendarView, AppError> {
    use crate::api::context::signed_in;
    use crate::backend::reservations;
    use crate::domain::calendar::Span;
    let start = match start.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        Some(raw) => {
            let day = raw.parse::<chrono::NaiveDate>().map_err(|_| {
                AppError::invalid(
                    "start",
                    crate::domain::problem::Problem::NotADate {
                        raw: raw.to_owned(),
                    },
                )
            });
            Some(day.and_then(|day| {
                crate::domain::date_range::check_day(day)
                    .map_err(|err| AppError::invalid("start", err.into()))
            }))
        }
        None => None,
    };
    let min_memory_gib =
        crate::domain::calendar::parse_min_memory(min_memory_gib.as_deref().unwrap_or_default())
            .map_err(|err| AppError::invalid("min_memory_gib", err));
    signed_in(|call| async move {
        let query = reservations::CalendarQuery {
            start: start.transpose()?,
            span: Span::parse(span.as_deref()),
            model: model.filter(|m| !m.trim().is_empty()),
            min_memory_gib: min_memory_gib?,
            zone: call.zone(),
        };
        let mut view = reservations::calendar(&call.state, &call.actor, &query, call.now).await?;
        view.texts = crate::text::booking::panel_texts(call.state.portal.charge.lead.num_minutes());
        Ok(view)
    })
    .await
}

/// Books `share` (`1`, `0.5`, `0.25`) of GPU `gpu_id` from `start` to `end` (RFC 3339); answers
/// the new reservation's id (the calendar needs no more, and its WebAssembly stays smaller).
#[server(endpoint = "book_reservation")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn book_reservation(
    gpu_ids: Vec<i64>,
    share: String,
    start: String,
    end: String,
    /// `at_booking` or `before_start` (default: the portal's).
    #[server(default)]
    charge: Option<String>,
    /// The booking form's key: the same key again books once.
    #[server(default)]
    idempotency_key: Option<String>,
    /// Book for this team (paid from its wallet); absent: a personal booking.
    #[server(default)]
    team_id: Option<i64>,
    /// The environment profile to prepare (absent: the default profile).
    #[server(default)]
    profile: Option<i64>,
    /// A flexible batch booking: batch priority, and it starts early if its GPUs free up.
    #[server(default)]
    flexible: bool,
    /// Pay with this saved card instead of credits.
    #[server(default)]
    card: Option<i64>,
) -> Result<i64, AppError> {
    use crate::api::context::signed_in;
    use crate::backend::reservations::{self, BookingForm, ShareInput};
    signed_in(|call| async move {
        let form = BookingForm {
            gpu_ids: Some(gpu_ids),
            model: None,
            count: None,
            share: Some(ShareInput::Text(share)),
            start,
            end,
            charge,
            team_id,
            priority: flexible.then(|| "batch".to_owned()),
            profile,
            start_early: flexible,
            card,
        };
        let key = idempotency_key.as_deref().filter(|key| !key.is_empty());
        reservations::create(&call.state, &call.actor, &form, call.now, key)
            .await
            .map(|reservation| reservation.id)
    })
    .await
}

/// After a booking: a note in the reader's language when it waits for approval, when it was
/// booked for a team and takes the team's month to its budget's warning share or beyond, or when
/// a card pays it (None otherwise); with a link to follow (its address and words) when there is
/// one.
#[server(endpoint = "get_booking_note")]
pub async fn get_booking_note(
    id: i64,
) -> Result<Option<(String, Option<(String, String)>)>, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        let note = crate::backend::reservations::booking_note(&call.state, &call.actor, id).await?;
        Ok(note.map(|note| {
            let text = crate::text::booking::booking_note(&note, &call.state.portal.currency);
            let link = match note {
                crate::backend::reservations::BookingNote::PaidByCard { id, .. } => Some((
                    format!("/reservations/{id}#card-payment"),
                    crate::text::booking::card_follow_text(),
                )),
                _ => None,
            };
            (text, link)
        }))
    })
    .await
}

/// Cancels one of the caller's reservations (platform admins: anyone's) before it starts.
#[server(endpoint = "cancel_reservation")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all, fields(reservation.id = id)))]
pub async fn cancel_reservation(id: i64) -> Result<Reservation, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        crate::backend::reservations::cancel(&call.state, &call.actor, id, call.now).await
    })
    .await
}

/// A page of the caller's reservations (100, after `cursor`), latest first, with their time zone
/// and currency.
#[server(endpoint = "list_my_reservations")]
pub async fn list_my_reservations(cursor: Option<String>) -> Result<MyReservations, AppError> {
    use crate::api::context::signed_in;
    use crate::domain::paging::ListKind;
    signed_in(|call| async move {
        let page = crate::backend::input::page(ListKind::Reservations, None, cursor.as_deref())?;
        let crate::backend::reservations::Mine {
            list,
            next,
            refunds_now,
            idle_now,
        } = crate::backend::reservations::mine(&call.state, &call.actor, &page, call.now).await?;
        let from = list
            .iter()
            .map(|r| r.window.start())
            .min()
            .unwrap_or(call.now);
        let to = list
            .iter()
            .map(|r| r.window.end())
            .max()
            .unwrap_or(call.now);
        let zone = call.zone_over(from, to);
        let payment_notes =
            crate::text::booking::payment_notes(&list, &zone, &call.state.portal.charge);
        Ok(MyReservations {
            zone,
            currency: call.state.portal.currency.clone(),
            refunds_now,
            payment_notes,
            list,
            idle_now,
            next,
        })
    })
    .await
}

/// Up to five earliest windows that fit: `model` (or `min_memory_gib`), `count` GPUs on one node,
/// `share`, `hours` long, from `after` (RFC 3339; default now).
#[server(endpoint = "find_slots")]
pub async fn find_slots(
    model: Option<String>,
    min_memory_gib: Option<u32>,
    count: Option<u32>,
    share: Option<String>,
    hours: f64,
    after: Option<String>,
) -> Result<Vec<SlotOffer>, AppError> {
    use crate::api::context::signed_in;
    use crate::backend::reservations::{self, ShareInput, SlotForm};
    signed_in(|call| async move {
        let form = SlotForm {
            model,
            min_memory_gib,
            count,
            share: share.map(ShareInput::Text),
            hours,
            after,
        };
        reservations::find_slots(&call.state, &form, call.now).await
    })
    .await
}

/// The calendar's booking form without JavaScript, as the browser sends it: every field is text,
/// read by `backend::input` (a flattened form keeps no numbers).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BookFormFields {
    /// The GPU's id.
    pub gpu_id: String,
    /// `1`, `0.5` or `0.25` (absent: whole).
    #[serde(default)]
    pub share: Option<String>,
    /// Local start (`YYYY-MM-DDTHH:MM`) in the viewer's zone.
    pub start: String,
    /// Local end in the viewer's zone.
    pub end: String,
    /// The calendar view to go back to.
    #[serde(default)]
    pub return_to: Option<String>,
    /// `at_booking` or `before_start` (absent: the portal's).
    #[serde(default)]
    pub charge: Option<String>,
    /// The form's key: the same key again books once.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// A team's id, or empty for a personal booking.
    #[serde(default)]
    pub team_id: Option<String>,
    /// A priority class, or empty for the default.
    #[serde(default)]
    pub priority: Option<String>,
    /// An environment profile's id, or empty for the default profile.
    #[serde(default)]
    pub profile: Option<String>,
    /// A checked checkbox (`on`): a flexible batch booking that starts early if its GPU frees up.
    #[serde(default)]
    pub flexible: Option<String>,
    /// A saved card's id, or empty to pay with credits.
    #[serde(default)]
    pub card: Option<String>,
}

/// The calendar's booking form without JavaScript: `share` of GPU `gpu_id` from `start` to
/// `end`, local times in the viewer's zone (profile setting, else the browser's cookie); back to
/// the calendar view it came from (`return_to`, a calendar address) with `booked=` the new
/// reservation's id, or the refusal.
#[server(endpoint = "forms/book")]
pub async fn book_form(#[server(flatten)] form: BookFormFields) -> Result<(), AppError> {
    use crate::api::forms::{back_with_error, go_to};
    use crate::backend::input::{required_number, whole_number};
    use crate::backend::reservations::{self, BookingForm, ShareInput};
    let call = crate::api::context::signed_in(|call| async move { Ok(call) }).await?;
    let BookFormFields {
        gpu_id,
        share,
        start,
        end,
        return_to,
        charge,
        idempotency_key,
        team_id,
        priority,
        profile,
        flexible,
        card,
    } = form;
    let flexible = flexible.is_some_and(|on| !on.is_empty() && on != "false");
    let back = return_to
        .filter(|path| {
            crate::domain::return_to::local_path(path).is_some() && path.starts_with("/calendar")
        })
        .unwrap_or_else(|| "/calendar".into());
    let zone = call.zone();
    let result = async {
        let form = BookingForm {
            gpu_ids: Some(vec![required_number("gpu_id", &gpu_id)?]),
            model: None,
            count: None,
            share: share.map(ShareInput::Text),
            start: reservations::local_to_rfc3339(zone.as_deref(), "start", &start)?,
            end: reservations::local_to_rfc3339(zone.as_deref(), "end", &end)?,
            charge,
            priority: if flexible {
                Some("batch".to_owned())
            } else {
                priority
            },
            team_id: whole_number("team_id", team_id.as_deref())?,
            profile: whole_number("profile", profile.as_deref())?,
            start_early: flexible,
            card: whole_number("card", card.as_deref())?,
        };
        let key = idempotency_key.as_deref().filter(|key| !key.is_empty());
        reservations::create(&call.state, &call.actor, &form, call.now, key).await
    }
    .await;
    match result {
        Ok(reservation) => {
            let separator = if back.contains('?') { '&' } else { '?' };
            go_to(&format!("{back}{separator}booked={}", reservation.id));
        }
        Err(error) => back_with_error(&back, error),
    }
    Ok(())
}
