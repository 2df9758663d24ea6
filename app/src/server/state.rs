//! The state shared by every request: built once at start-up, cloned cheaply per request.

use crate::domain::money::Currency;
use crate::domain::user::Email;
use crate::error::AppError;
use crate::server::auth::oidc::OidcProviders;
use axum::extract::FromRef;
use leptos::prelude::*;
use sea_orm::DatabaseConnection;
use std::sync::Arc;

/// Portal-wide settings that pages and server functions need.
#[derive(Debug, Clone)]
pub struct PortalConfig {
    /// The currency all prices and balances are in.
    pub currency: Currency,
    /// Whether "sign in as a demo user" is offered (no identity provider needed).
    pub dev_sign_in: bool,
    /// Longest booking and how far ahead one may start.
    pub booking: crate::domain::schedule::BookingLimits,
    /// Days of inactivity after which a signed-in session ends.
    pub session_idle_days: u32,
    /// Users with these addresses become platform admins when they sign in (`BERTH_ADMIN_EMAILS`).
    pub admin_emails: Vec<Email>,
    /// What a cancellation refunds.
    pub refund: crate::domain::ledger::RefundPolicy,
    /// When bookings are charged.
    pub charge: crate::domain::payment::ChargePolicy,
    /// Telemetry retention and new-GPU defaults.
    pub telemetry: TelemetrySettings,
}

/// How long telemetry is kept, and what GPUs found by an agent start with.
#[derive(Debug, Clone)]
pub struct TelemetrySettings {
    /// Raw samples are kept this long (`raw_samples_hours`, default 24 h).
    pub raw_keep: chrono::TimeDelta,
    /// One-minute rollups and events are kept this long (`rollup_days`, default 30 days).
    pub rollup_keep: chrono::TimeDelta,
    /// Hourly price of a GPU an agent reports for the first time, in minor units.
    pub new_gpu_price_minor: i64,
    /// A minute whose average GPU utilization is below this percentage counts as idle in cost
    /// reports (`idle_util_percent`, default 10). Applied as minutes are rolled up.
    pub idle_util_percent: f64,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            raw_keep: chrono::TimeDelta::hours(24),
            rollup_keep: chrono::TimeDelta::days(30),
            new_gpu_price_minor: 200,
            idle_util_percent: crate::domain::quota::IDLE_UTIL_PERCENT,
        }
    }
}

/// Everything a handler or server function may use. Created per app instance, never global, so
/// tests can run many apps in one process.
#[derive(Clone, FromRef)]
pub struct AppState {
    /// Leptos' rendering options (site root, output name).
    pub leptos_options: LeptosOptions,
    /// Database connection pool.
    pub db: DatabaseConnection,
    /// Portal settings.
    pub portal: Arc<PortalConfig>,
    /// OpenID Connect providers (possibly none).
    pub oidc: Arc<OidcProviders>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("portal", &self.portal)
            .finish_non_exhaustive()
    }
}

/// The [`AppState`] of the current request, for server functions.
pub fn app_state() -> Result<AppState, AppError> {
    use_context::<AppState>().ok_or_else(|| {
        tracing::error!("AppState missing from the request context");
        AppError::Internal
    })
}

/// Passes `result` through, setting the HTTP status of the current response to match the error
/// (503 when the database is down, 401, 403, …) instead of the default 500. Problems with the
/// input or the current state are put into the reader's language here
/// ([`AppError::Explained`]).
pub fn with_status<T>(result: Result<T, AppError>) -> Result<T, AppError> {
    let result = result.map_err(explained);
    if let Err(error) = &result
        && let Some(response) = use_context::<leptos_axum::ResponseOptions>()
        && let Ok(status) = http::StatusCode::from_u16(error.status_code())
    {
        response.set_status(status);
    }
    result
}

/// `error` with its problem in the language of the current request (cookie or
/// `Accept-Language`); other errors unchanged.
pub fn explained(error: AppError) -> AppError {
    let (status, field, problem) = match error {
        AppError::Validation { field, problem } => (422, Some(field), problem),
        AppError::Conflict(problem) => (409, None, problem),
        other => return other,
    };
    let message =
        in_request_language(|i18n| crate::components::error::problem_text(i18n, &problem));
    AppError::Explained {
        status,
        field,
        code: problem.code(),
        message,
    }
}

/// [`explained`] outside Leptos' request handling (plain form routes): the language comes from
/// `headers` (cookie or `Accept-Language`).
pub fn explained_for(error: AppError, headers: &http::HeaderMap, state: &AppState) -> AppError {
    for_request(headers, state, || explained(error))
}

/// Runs `f` as if inside Leptos' handling of a request with `headers` (plain routes that need
/// [`in_request_language`] or [`explained`]).
pub fn for_request<R>(headers: &http::HeaderMap, state: &AppState, f: impl FnOnce() -> R) -> R {
    let (mut parts, ()) = http::Request::new(()).into_parts();
    parts.headers = headers.clone();
    Owner::new().with(|| {
        provide_context(parts);
        provide_context(state.clone());
        f()
    })
}

/// Runs `f` with the translations of the current request's language (cookie or
/// `Accept-Language`): for texts the server puts together for a page's islands, so that the
/// browser's WebAssembly carries no translation code for them.
pub fn in_request_language<R>(
    f: impl FnOnce(leptos_i18n::I18nContext<crate::i18n::Locale>) -> R,
) -> R {
    Owner::new().with(|| {
        // The same context `I18nContextProvider` provides.
        #[allow(deprecated)]
        let i18n = leptos_i18n::context::provide_i18n_context::<crate::i18n::Locale>();
        f(i18n)
    })
}
