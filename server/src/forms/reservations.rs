//! The calendar's booking form without JavaScript. The rules live in
//! `berth_app::backend::reservations`.

use axum::extract::State;
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::reservations::{self, BookingForm};
use berth_app::backend::state::AppState;
use serde::Deserialize;

/// The calendar's booking form without JavaScript: local times in the viewer's zone (profile
/// setting, else the browser's cookie).
#[derive(Debug, Deserialize)]
pub struct BookFormPost {
    gpu_id: i64,
    #[serde(default)]
    share: Option<String>,
    start: String,
    end: String,
    #[serde(default)]
    return_to: Option<String>,
    #[serde(default)]
    charge: Option<String>,
    #[serde(default)]
    idempotency_key: Option<String>,
    /// A team's id, or empty for a personal booking.
    #[serde(default)]
    team_id: Option<String>,
    /// A priority class, or empty for the default.
    #[serde(default)]
    priority: Option<String>,
}

/// `POST /calendar/book`: books, then back to the calendar with `booked=ID` or `error=message`.
pub async fn book_form(
    State(state): State<AppState>,
    actor: Actor,
    headers: axum::http::HeaderMap,
    axum::Form(form): axum::Form<BookFormPost>,
) -> axum::response::Redirect {
    let zone = berth_app::backend::viewer::viewer_zone(&actor, &headers);
    let back = form
        .return_to
        .clone()
        .filter(|path| {
            berth_app::domain::return_to::local_path(path).is_some()
                && path.starts_with("/calendar")
        })
        .unwrap_or_else(|| "/calendar".into());
    let separator = if back.contains('?') { '&' } else { '?' };
    let result = async {
        let start = reservations::local_to_rfc3339(zone.as_deref(), "start", &form.start)?;
        let end = reservations::local_to_rfc3339(zone.as_deref(), "end", &form.end)?;
        let booking_form = BookingForm {
            gpu_ids: Some(vec![form.gpu_id]),
            model: None,
            count: None,
            share: form.share.clone().map(reservations::ShareInput::Text),
            start,
            end,
            charge: form.charge.clone(),
            priority: form.priority.clone(),
            team_id: match form.team_id.as_deref().map(str::trim) {
                None | Some("") => None,
                Some(raw) => Some(raw.parse::<i64>().map_err(|_| {
                    berth_app::error::AppError::invalid(
                        "team_id",
                        berth_app::domain::problem::Problem::Unreadable {
                            detail: format!("`{raw}` is not a team id"),
                        },
                    )
                })?),
            },
        };
        let key = form
            .idempotency_key
            .as_deref()
            .filter(|key| !key.is_empty());
        reservations::create(&state, &actor, &booking_form, state.now(), key).await
    }
    .await;
    let target = match result {
        Ok(reservation) => format!("{back}{separator}booked={}", reservation.id),
        Err(error) => {
            // The error as data, already in the reader's language.
            let error = berth_app::text::language::explained_for(error, &headers, &state);
            let data = serde_json::to_string(&error).unwrap_or_else(|_| error.to_string());
            let message: String = url::form_urlencoded::byte_serialize(data.as_bytes()).collect();
            format!("{back}{separator}error={message}")
        }
    };
    axum::response::Redirect::to(&target)
}
