//! Pages need a signed-in user: a page request without one is sent to the sign-in page, which
//! returns to the page afterwards. Sign-in, health checks and static files stay public; server
//! functions and the JSON API check the caller themselves (401 / 403).

use axum::extract::{FromRequestParts, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use berth_app::backend::auth::actor::{Actor, GuardedActor};
use berth_app::backend::state::AppState;
use berth_app::error::AppError;
use tower_sessions::Session;

/// Session key with the day (UTC) the session's inactivity deadline was last pushed back.
const SEEN_ON: &str = "seen_on";

/// Paths anyone may fetch.
const PUBLIC_PATHS: [&str; 5] = ["/signin", "/healthz", "/readyz", "/locale", "/metrics"];
/// Path prefixes that are not pages or check the caller themselves (a calendar feed's secret
/// address is its own credential).
const PUBLIC_PREFIXES: [&str; 4] = ["/auth/", "/api/", "/pkg/", "/ical/"];

/// Whether a request is for a page that needs sign-in.
fn is_guarded_page(method: &Method, path: &str) -> bool {
    if !matches!(*method, Method::GET | Method::HEAD) {
        return false;
    }
    if PUBLIC_PATHS.contains(&path) || PUBLIC_PREFIXES.iter().any(|p| path.starts_with(p)) {
        return false;
    }
    // Static files (favicon.svg, robots.txt) have an extension; pages do not.
    let last = path.rsplit('/').next().unwrap_or("");
    !last.contains('.')
}

/// Middleware: redirects signed-out page requests to `/signin?return_to=<page>`.
pub async fn require_sign_in(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    if !is_guarded_page(request.method(), request.uri().path()) {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    match Actor::from_request_parts(&mut parts, &state).await {
        Ok(actor) => {
            // The page cache keys its copies by this user, and the render's server functions
            // take it from here instead of reading it again.
            parts.extensions.insert(GuardedActor(actor));
            keep_alive(&parts).await;
            next.run(Request::from_parts(parts, body)).await
        }
        Err(AppError::Unauthorized) => {
            let page = parts.uri.path_and_query().map_or("/", |page| page.as_str());
            // A page the sign-in would refuse to return to (`//host/…`) is not offered at all.
            match berth_app::domain::return_to::local_path(page) {
                Some(page) => {
                    let encoded: String =
                        url::form_urlencoded::byte_serialize(page.as_bytes()).collect();
                    Redirect::to(&format!("/signin?return_to={encoded}")).into_response()
                }
                None => Redirect::to("/signin").into_response(),
            }
        }
        // The database is down (or similar): let the page render; its own data calls check
        // the caller again and show the error with the right status.
        Err(other) => {
            tracing::warn!(error = %other, "cannot check the session; the page will say why");
            next.run(Request::from_parts(parts, body)).await
        }
    }
}

/// Sessions end after `session_idle_days` without activity. The store only learns of activity
/// when the session is saved, so a page view saves it once a day (a mark in the session), which
/// pushes the deadline back without a write on every request.
async fn keep_alive(parts: &axum::http::request::Parts) {
    let Some(session) = parts.extensions.get::<Session>() else {
        return;
    };
    let today = chrono::Utc::now().date_naive().to_string();
    match session.get::<String>(SEEN_ON).await {
        Ok(Some(day)) if day == today => {}
        Ok(_) => {
            if let Err(err) = session.insert(SEEN_ON, today).await {
                tracing::warn!(error = %err, "cannot mark the session as active");
            }
        }
        Err(err) => tracing::warn!(error = %err, "cannot read the session"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_guarded_and_the_rest_is_not() {
        assert!(is_guarded_page(&Method::GET, "/"));
        assert!(is_guarded_page(&Method::GET, "/profile"));
        assert!(is_guarded_page(&Method::HEAD, "/no-such-page"));
        assert!(!is_guarded_page(&Method::GET, "/signin"));
        assert!(!is_guarded_page(&Method::GET, "/healthz"));
        assert!(!is_guarded_page(&Method::GET, "/pkg/berth.wasm"));
        assert!(!is_guarded_page(&Method::GET, "/favicon.svg"));
        assert!(!is_guarded_page(&Method::GET, "/auth/oidc/corp/callback"));
        assert!(!is_guarded_page(&Method::POST, "/api/list_gpus"));
        assert!(!is_guarded_page(&Method::POST, "/profile"));
    }
}
