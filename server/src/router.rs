//! Every route, in groups: ops (health, metrics), auth (sign-in, the language switch), the JSON
//! API nested under `/api/v1`, and the Leptos pages and server functions (the pages' plain forms
//! among them); all inside the middleware (see [`router`] for their order).

use crate::auth;
use crate::configuration::SessionSettings;
use crate::middleware::rate_limit::SignInLimiter;
use crate::middleware::security_headers::SecurityHeaders;
use crate::middleware::{
    csrf, guard, locale, page_cache, panic, rate_limit, request_log, request_owner,
    security_headers, server_fn_status,
};
use crate::ops::health;
use crate::ops::metrics::{self, MetricsToken};
use crate::startup::SESSION_COOKIE;
use axum::Router;
use axum::routing::{get, post};
use berth_app::backend::db::sessions::DbSessionStore;
use berth_app::backend::state::AppState;
use berth_app::{App, shell};
use leptos_axum::{LeptosRoutes, generate_route_list};
use tower_http::compression::CompressionLayer;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, SessionManagerLayer};

/// The page routes, worked out once per process.
///
/// Generating the list renders the app with resource loading suppressed through a flag that is
/// global to the process (leptos_server's `SuppressResourceLoad`): a page whose resource first
/// polls while another application in the same process generates its list waits forever
/// (leptos-rs/leptos#4773). One portal per process never meets this, but the test suite starts
/// many in one process, and it hung about once in eight runs. The routes never change, so they
/// are generated once, before any application serves.
fn route_list() -> Vec<leptos_axum::AxumRouteListing> {
    static ROUTES: std::sync::LazyLock<Vec<leptos_axum::AxumRouteListing>> =
        std::sync::LazyLock::new(|| generate_route_list(App));
    ROUTES.clone()
}

/// The whole HTTP surface: ops endpoints, the language form, the JSON API, server functions, pages
/// and static files, with cross-site protection, compression and request logging.
pub fn router(
    state: AppState,
    sessions: SessionSettings,
    limiter: SignInLimiter,
    metrics_token: MetricsToken,
    extra: Router<AppState>,
) -> Router {
    let routes = route_list();
    // `public_url` is https exactly when session cookies are `Secure` (see configuration).
    let headers_settings = SecurityHeaders {
        hsts: sessions.secure_cookie,
        stripe: state.stripe.as_ref().and_then(|client| {
            let settings = client.settings();
            crate::middleware::security_headers::StripeOrigins::of(
                &settings.js_url,
                &settings.api_base,
            )
            .map(std::sync::Arc::new)
        }),
    };
    let shell_options = state.leptos_options.clone();
    let session_layer = SessionManagerLayer::new(DbSessionStore::new(state.db.clone()))
        .with_name(SESSION_COOKIE)
        .with_http_only(true)
        // Strict would drop the cookie on the identity provider's redirect back.
        .with_same_site(SameSite::Lax)
        .with_secure(sessions.secure_cookie)
        .with_expiry(Expiry::OnInactivity(time::Duration::days(i64::from(
            sessions.idle_days,
        ))));
    Router::new()
        .merge(ops_routes(metrics_token))
        .merge(auth_routes())
        .nest("/api/v1", crate::api::v1::routes())
        .route(
            "/incidents/{id}/export.html",
            get(crate::api::v1::incidents::export_html),
        )
        .merge(extra)
        // Also registers the server functions, with `AppState` in their context.
        .leptos_routes(&state, routes, move || shell(shell_options.clone()))
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        .layer(axum::middleware::from_fn(request_owner::own_owner))
        .layer(axum::middleware::from_fn(
            server_fn_status::client_errors_as_4xx,
        ))
        .layer(axum::middleware::from_fn_with_state(
            page_cache::PageCache::new(state.clock.clone()),
            page_cache::serve,
        ))
        // Layers run outside-in from the bottom: set the security headers (and the page's script
        // nonce), count, log, turn a panic into a 500, compress, refuse cross-site writes, limit
        // sign-in attempts, load the session, require sign-in for pages, then answer the calendar
        // page from its copy (and count the changes that make copies stale); innermost, a
        // server function's error status, and a reactive owner of the request's own.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::require_sign_in,
        ))
        .layer(session_layer)
        .layer(axum::middleware::from_fn_with_state(
            limiter,
            rate_limit::limit_sign_in,
        ))
        .layer(axum::middleware::from_fn(csrf::reject_cross_site))
        .layer(CompressionLayer::new())
        .layer(axum::middleware::from_fn(panic::catch_panic))
        .layer(axum::middleware::from_fn(request_log::log_request))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::track_requests,
        ))
        .layer(axum::middleware::from_fn_with_state(
            headers_settings,
            security_headers::add_security_headers,
        ))
        .with_state(state)
}

/// Health checks and metrics, for load balancers and Prometheus.
fn ops_routes(metrics_token: MetricsToken) -> Router<AppState> {
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route(
            "/metrics",
            get(metrics::metrics).layer(axum::Extension(metrics_token)),
        )
}

/// Signing in and out, the language switch for browsers without JavaScript, and calendar feeds.
fn auth_routes() -> Router<AppState> {
    Router::new()
        .route("/auth/oidc/{provider}/start", get(auth::oidc_start))
        .route("/auth/oidc/{provider}/callback", get(auth::oidc_callback))
        .route("/auth/dev", post(auth::dev_sign_in))
        .route("/auth/signout", post(auth::sign_out))
        .route("/locale", post(locale::set_locale))
        // A calendar program's subscription: the secret address is the credential.
        .route("/ical/{file}", get(crate::calendar::feed))
}
