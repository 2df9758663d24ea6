//! The calendar and reservations: server functions for the pages (the JSON API under
//! `/api/v1/reservations` uses the same service layer, `server::booking`).

use crate::domain::calendar::CalendarView;
use crate::domain::reservation::{MyReservations, Reservation, SlotOffer};
use crate::error::AppError;
use leptos::prelude::*;

/// Cookie in which the browser tells the server its IANA time zone.
pub const ZONE_COOKIE: &str = "berth_tz";

/// The calendar from `start` (a local date, `YYYY-MM-DD`; default today) for a `day` or a `week`,
/// optionally only one `model` or GPUs with at least `min_memory_gib`; in the caller's time zone
/// (profile setting, else the browser's cookie, else UTC).
#[server(endpoint = "get_calendar")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn get_calendar(
    start: Option<String>,
    span: Option<String>,
    model: Option<String>,
    min_memory_gib: Option<u32>,
) -> Result<CalendarView, AppError> {
    use crate::domain::calendar::Span;
    use crate::server::{auth::actor::require_actor, booking, state};
    state::with_status(
        async {
            let actor = require_actor().await?;
            let state = state::app_state()?;
            let start = match start.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
                Some(raw) => {
                    let day = raw.parse::<chrono::NaiveDate>().map_err(|_| {
                        AppError::invalid(
                            "start",
                            crate::domain::problem::Problem::NotADate {
                                raw: raw.to_owned(),
                            },
                        )
                    })?;
                    Some(
                        crate::domain::date_range::check_day(day)
                            .map_err(|err| AppError::invalid("start", err.into()))?,
                    )
                }
                None => None,
            };
            let query = booking::CalendarQuery {
                start,
                span: Span::parse(span.as_deref()),
                model: model.filter(|m| !m.trim().is_empty()),
                min_memory_gib: min_memory_gib.filter(|gib| *gib > 0),
                zone: request_zone(&actor),
            };
            booking::calendar(&state, &actor, &query, chrono::Utc::now()).await
        }
        .await,
    )
}

/// The zone the caller sees times in: their profile setting, else the request's `berth_tz`
/// cookie.
#[cfg(feature = "ssr")]
pub(crate) fn request_zone(actor: &crate::server::auth::actor::Actor) -> Option<String> {
    let parts = use_context::<http::request::Parts>();
    match parts {
        Some(parts) => crate::server::booking::viewer_zone(actor, &parts.headers),
        None => actor.user.time_zone.clone(),
    }
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
) -> Result<i64, AppError> {
    use crate::server::booking::{BookingForm, ShareInput};
    use crate::server::{auth::actor::require_actor, booking, state};
    state::with_status(
        async {
            let actor = require_actor().await?;
            let state = state::app_state()?;
            let form = BookingForm {
                gpu_ids: Some(gpu_ids),
                model: None,
                count: None,
                share: Some(ShareInput::Text(share)),
                start,
                end,
                charge,
                team_id,
                priority: None,
            };
            let key = idempotency_key.as_deref().filter(|key| !key.is_empty());
            booking::create(&state, &actor, &form, chrono::Utc::now(), key)
                .await
                .map(|reservation| reservation.id)
        }
        .await,
    )
}

/// After a booking: a note in the reader's language when it was booked for a team and takes the
/// team's month to its budget's warning share or beyond (None otherwise).
#[server(endpoint = "get_booking_note")]
pub async fn get_booking_note(id: i64) -> Result<Option<String>, AppError> {
    use crate::server::{auth::actor::require_actor, booking, state};
    state::with_status(
        async {
            let actor = require_actor().await?;
            let state = state::app_state()?;
            booking::budget_note(&state, &actor, id).await
        }
        .await,
    )
}

/// Cancels one of the caller's reservations (platform admins: anyone's) before it starts.
#[server(endpoint = "cancel_reservation")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all, fields(reservation.id = id)))]
pub async fn cancel_reservation(id: i64) -> Result<Reservation, AppError> {
    use crate::server::{auth::actor::require_actor, booking, state};
    state::with_status(
        async {
            let actor = require_actor().await?;
            let state = state::app_state()?;
            booking::cancel(&state, &actor, id, chrono::Utc::now()).await
        }
        .await,
    )
}

/// The caller's reservations, latest first, with their time zone and currency.
#[server(endpoint = "list_my_reservations")]
pub async fn list_my_reservations() -> Result<MyReservations, AppError> {
    use crate::server::{auth::actor::require_actor, booking, db, state};
    state::with_status(
        async {
            let actor = require_actor().await?;
            let state = state::app_state()?;
            let now = chrono::Utc::now();
            let list = db::reservations::list_for_owner(&state.db, actor.user.id, now).await?;
            let from = list.iter().map(|r| r.window.start()).min().unwrap_or(now);
            let to = list.iter().map(|r| r.window.end()).max().unwrap_or(now);
            let refunds_now = list
                .iter()
                .filter(|r| {
                    r.status == crate::domain::reservation::ReservationStatus::Confirmed
                        && r.payment_status == crate::domain::reservation::PaymentStatus::Paid
                })
                .map(|r| {
                    let paid = crate::domain::money::Money::from_minor(r.price_minor);
                    (
                        r.id,
                        state
                            .portal
                            .refund
                            .refund(paid, r.window.start(), now)
                            .minor(),
                    )
                })
                .collect();
            let zone = booking::zone_named(request_zone(&actor).as_deref(), from, to);
            let payment_notes = booking::payment_notes(&list, &zone, &state.portal.charge);
            Ok(MyReservations {
                zone,
                currency: state.portal.currency.clone(),
                refunds_now,
                payment_notes,
                list,
            })
        }
        .await,
    )
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
    use crate::server::booking::{ShareInput, SlotForm};
    use crate::server::{auth::actor::require_actor, booking, state};
    state::with_status(
        async {
            require_actor().await?;
            let state = state::app_state()?;
            let form = SlotForm {
                model,
                min_memory_gib,
                count,
                share: share.map(ShareInput::Text),
                hours,
                after,
            };
            booking::find_slots(&state, &form, chrono::Utc::now()).await
        }
        .await,
    )
}
