//! The state shared by every request: built once at start-up, cloned cheaply per request.

use crate::backend::auth::oidc::OidcProviders;
use crate::backend::clock::Clock;
use crate::domain::money::Currency;
use crate::domain::user::Email;
use crate::error::AppError;
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
    /// The address users reach Berth at, without a trailing slash (`public_url`), for links
    /// that leave the portal (calendar feeds); `None`: not set.
    pub public_url: Option<String>,
    /// Node agents prepare a booking's environment this long before its start
    /// (`prepare_ahead_minutes`, default 30).
    pub prepare_ahead: chrono::TimeDelta,
    /// The workspace that follows users from node to node.
    pub workspace: crate::backend::workspaces::WorkspaceSettings,
    /// How incidents are answered and what the SLA credits.
    pub incidents: crate::backend::incidents::IncidentSettings,
    /// The smallest and largest top-up by card.
    pub top_up: crate::domain::payment::TopUpLimits,
    /// Where the refund of a booking paid by card goes (fixed on each payment when it is made).
    pub refund_to: crate::domain::payment::RefundTo,
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
    /// How far ahead a booking moved off a failed GPU may be offered a window (the booking
    /// horizon).
    pub offer_horizon: chrono::TimeDelta,
    /// The first-response target of the incidents Berth opens from agents' reports (the
    /// incidents' setting).
    pub incident_first_response: chrono::TimeDelta,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            offer_horizon: chrono::TimeDelta::weeks(8),
            raw_keep: chrono::TimeDelta::hours(24),
            rollup_keep: chrono::TimeDelta::days(30),
            new_gpu_price_minor: 200,
            idle_util_percent: crate::domain::quota::IDLE_UTIL_PERCENT,
            incident_first_response: chrono::TimeDelta::hours(4),
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
    /// The time: the system clock, or one a test moves. Services never read `Utc::now()`.
    pub clock: Arc<dyn Clock>,
    /// The portal's own metrics (requests, jobs, samples), counted per application.
    pub metrics: Arc<crate::backend::metrics::PortalMetrics>,
    /// Wakes the notification worker after a change that recorded events.
    pub wake: Arc<crate::backend::notify::Wake>,
    /// Wakes the watch job after a change that may have freed capacity (a cancellation, a
    /// release, a GPU added).
    #[from_ref(skip)]
    pub freed: Arc<crate::backend::notify::Wake>,
    /// Where the money of a top-up comes from (confirms each grant before it is posted):
    /// [`crate::backend::ledger::ManualProvider`], money received by invoice or transfer and
    /// recorded by a platform admin.
    pub payments: Arc<dyn crate::backend::ledger::PaymentProvider>,
    /// Stripe, when card payments are on (`payments = stripe`).
    pub stripe: Option<crate::backend::stripe::StripeClient>,
    /// The e-mail channel (`smtp_url`); `None`: notices stay in the portal.
    pub mail: Option<Arc<crate::backend::mail::MailChannel>>,
    /// Posts webhook calls.
    pub webhooks: crate::backend::webhooks::WebhookClient,
    /// Where saved workspaces' chunks are kept (`workspace_store`).
    pub workspaces: crate::backend::workspaces::WorkspaceStore,
    /// The words of e-mails, webhook texts and calendar entries, in each reader's language.
    pub words: Arc<dyn crate::backend::words::NoticeWords>,
}

impl AppState {
    /// The current time on the portal's clock.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }
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
