//! Calendar files: `GET /ical/<token>.ics`, the feed a calendar program subscribes to (no
//! session: the secret address is the credential), and
//! `GET /api/v1/reservations/{id}/calendar.ics`, one booking for its owner ("Add to calendar").

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::calendar_feeds;
use berth_app::backend::state::AppState;
use berth_app::error::AppError;

/// Longest file name a feed address has (`berth_` and 43 characters, `.ics`), with room.
const MAX_FEED_NAME: usize = 100;

/// `GET /ical/{token}.ics`: the feed, or 404 for an unknown, revoked or malformed address.
pub async fn feed(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(file): Path<String>,
) -> Response {
    let token = file
        .strip_suffix(".ics")
        .filter(|token| file.len() <= MAX_FEED_NAME && !token.is_empty());
    let Some(token) = token else {
        return AppError::NotFound("calendar feed".to_owned()).into_response();
    };
    let base = portal_address(&state, &headers);
    match calendar_feeds::feed(&state, token, base.as_deref(), state.now()).await {
        // Calendar programs poll; a few minutes' staleness is fine, and only this client keeps it.
        Ok(ics) => calendar_response(ics, "private, max-age=300", None),
        Err(err) => err.into_response(),
    }
}

/// `GET /api/v1/reservations/{id}/calendar.ics`: one booking as a file to open in a calendar.
pub async fn reservation_file(
    State(state): State<AppState>,
    actor: Actor,
    headers: HeaderMap,
    Path(id): Path<i64>,
) -> Response {
    let base = portal_address(&state, &headers);
    match calendar_feeds::reservation_file(&state, &actor, id, base.as_deref(), state.now()).await {
        Ok(ics) => calendar_response(
            ics,
            "private, no-store",
            Some(format!(
                "attachment; filename=\"berth-reservation-{id}.ics\""
            )),
        ),
        Err(err) => err.into_response(),
    }
}

/// Where calendar entries link back to: `public_url`, else the host this request came to (only
/// the requester sees it; a host with odd characters gives no link).
fn portal_address(state: &AppState, headers: &HeaderMap) -> Option<String> {
    if let Some(public) = &state.portal.public_url {
        return Some(public.clone());
    }
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let plain = !host.is_empty()
        && host.len() <= 255
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    plain.then(|| format!("http://{host}"))
}

fn calendar_response(ics: String, cache: &'static str, disposition: Option<String>) -> Response {
    let mut response = ics.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/calendar; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    if let Some(value) = disposition.and_then(|value| HeaderValue::from_str(&value).ok()) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}
