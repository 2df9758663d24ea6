//! Builds the application: opens the database, migrates, seeds the demo fleet, assembles the
//! router and binds the listener. Tests call [`Application::build`] with port 0.

use crate::configuration::{Config, SessionSettings};
use crate::routes::rate_limit::SignInLimiter;
use crate::routes::security_headers::SecurityHeaders;
use crate::routes::{
    agent, api, auth, csrf, fleet, guard, health, ledger, locale, maintenance, panic, quotas,
    rate_limit, reports, request_log, reservations, security_headers, teams, telemetry,
};
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use berth_app::backend::auth::oidc::OidcProviders;
use berth_app::backend::db::sessions::DbSessionStore;
use berth_app::backend::state::AppState;
use berth_app::backend::{db, demo};
use berth_app::{App, shell};
use leptos::prelude::*;
use leptos_axum::{LeptosRoutes, generate_route_list};
use sea_orm::{DatabaseConnection, DbErr};
use secrecy::ExposeSecret;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tower_http::compression::CompressionLayer;
use tower_sessions::cookie::SameSite;
use tower_sessions::session_store::ExpiredDeletion;
use tower_sessions::{Expiry, SessionManagerLayer};

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "berth_session";

/// How often expired sessions are deleted.
const SESSION_SWEEP_INTERVAL: std::time::Duration = std::time::Duration::from_secs(3600);

/// Why the server could not start. Each message names what failed.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// The listen address cannot be bound.
    #[error("cannot listen on {addr} (BERTH_BIND): {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The data directory cannot be created.
    #[error("cannot create data directory {path}: {source}")]
    DataDir {
        /// The directory.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The database cannot be opened.
    #[error("cannot open database {url} (BERTH_DATABASE_URL): {source}")]
    Database {
        /// The URL without password.
        url: String,
        /// The driver's error.
        source: DbErr,
    },
    /// Migrations failed.
    #[error("cannot migrate database {url}: {source}")]
    Migrate {
        /// The URL without password.
        url: String,
        /// The driver's error.
        source: DbErr,
    },
    /// The demo fleet could not be added.
    #[error("cannot add the demo fleet: {0}")]
    Demo(DbErr),
    /// The OpenID Connect client could not be set up.
    #[error("{0}")]
    Oidc(String),
    /// The local agent could not start.
    #[error("{0}")]
    Agent(String),
    /// The server stopped with an I/O error.
    #[error("server error: {0}")]
    Serve(std::io::Error),
}

/// A started (bound, migrated) application that has not begun serving yet.
pub struct Application {
    listener: TcpListener,
    router: Router,
    addr: SocketAddr,
    db: DatabaseConnection,
    limiter: SignInLimiter,
    local_agent: crate::configuration::LocalAgentSettings,
    telemetry: berth_app::backend::state::TelemetrySettings,
    charge: berth_app::domain::payment::ChargePolicy,
    payment_job_every: std::time::Duration,
    clock: Arc<dyn berth_app::backend::clock::Clock>,
}

impl std::fmt::Debug for Application {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Application")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Application {
    /// Binds first (a bad address writes nothing), then opens and migrates the database, adds the
    /// demo fleet if enabled and the inventory is empty, and builds the router.
    pub async fn build(config: Config) -> Result<Self, StartupError> {
        let listener =
            TcpListener::bind(config.bind)
                .await
                .map_err(|source| StartupError::Bind {
                    addr: config.bind,
                    source,
                })?;
        Self::build_with_listener(config, listener).await
    }

    /// Like [`Application::build`] on a listener bound already (tests that must know the port
    /// before the settings are complete, such as an OpenID Connect redirect URL).
    pub async fn build_with_listener(
        config: Config,
        listener: TcpListener,
    ) -> Result<Self, StartupError> {
        Self::build_with_routes(config, listener, Router::new()).await
    }

    /// Like [`Application::build_with_listener`] with `extra` routes inside all the middleware.
    /// Only tests add routes (one that panics, to prove the panic layer); `berth serve` never does.
    #[doc(hidden)]
    pub async fn build_with_routes(
        config: Config,
        listener: TcpListener,
        extra: Router<AppState>,
    ) -> Result<Self, StartupError> {
        let addr = listener.local_addr().map_err(|source| StartupError::Bind {
            addr: config.bind,
            source,
        })?;

        let (db, applied) = open_and_migrate(&config).await?;
        if applied > 0 {
            tracing::info!(db.migrations_applied = applied, "database migrated");
        }
        if config.demo {
            match demo::seed_if_empty(&db, config.clock.now())
                .await
                .map_err(StartupError::Demo)?
            {
                demo::SeedOutcome::Seeded { nodes, gpus } => {
                    tracing::info!(demo.nodes = nodes, demo.gpus = gpus, "added the demo fleet");
                    if config.demo_bookings {
                        let added = demo::seed_demo_bookings(
                            &db,
                            config.clock.now(),
                            &config.portal.currency,
                        )
                        .await
                        .map_err(StartupError::Demo)?;
                        tracing::info!(demo.reservations = added, "added demo bookings");
                    }
                }
                demo::SeedOutcome::AlreadyPopulated => {}
            }
        }

        if config.portal.dev_sign_in {
            tracing::warn!(
                "development sign-in is on: anyone who reaches this server can sign in as a demo \
                 user, team admin or platform admin (turn it off with BERTH_DEV_SIGN_IN=false)"
            );
        }

        let leptos_options = LeptosOptions::builder()
            .output_name("berth")
            .site_root(config.site_root.to_string_lossy().into_owned())
            .site_pkg_dir("pkg")
            .site_addr(addr)
            .build();
        let oidc = OidcProviders::new(config.oidc.clone()).map_err(StartupError::Oidc)?;
        for provider in &config.oidc {
            tracing::info!(
                oidc.provider = %provider.id,
                oidc.issuer = %provider.issuer.as_str(),
                oidc.redirect_url = %provider.redirect_url.as_str(),
                "OpenID Connect sign-in configured"
            );
        }
        let state = AppState {
            leptos_options,
            db: db.clone(),
            portal: Arc::new(config.portal.clone()),
            oidc: Arc::new(oidc),
            clock: config.clock.clone(),
        };
        let per_minute = std::num::NonZeroU32::new(config.rate_limit.per_minute)
            .unwrap_or(std::num::NonZeroU32::MIN);
        let limiter = SignInLimiter::new(per_minute, config.rate_limit.trusted_proxies.clone());
        let router = router(
            state.clone(),
            config.sessions,
            limiter.clone(),
            crate::metrics::MetricsToken(config.metrics_token.clone()),
            extra,
        );
        tracing::info!(
            http.addr = %addr,
            db.url = %config.database.redacted_url(),
            "Berth is listening on http://{addr}/"
        );
        Ok(Self {
            listener,
            router,
            addr,
            db,
            limiter,
            local_agent: config.local_agent.clone(),
            telemetry: config.portal.telemetry.clone(),
            charge: config.portal.charge,
            payment_job_every: config.payment_job_every,
            clock: config.clock.clone(),
        })
    }

    /// The bound address (with the real port when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The database pool, for tests that inspect what the app wrote.
    pub fn db(&self) -> &DatabaseConnection {
        &self.db
    }

    /// Serves until `shutdown` completes, then finishes in-flight requests and closes the pool.
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), StartupError> {
        let store = DbSessionStore::new(self.db.clone());
        let limiter = self.limiter.clone();
        let sweeper = tokio::spawn(async move {
            loop {
                if let Err(err) = store.delete_expired().await {
                    tracing::warn!(error = %err, "deleting expired sessions");
                }
                limiter.forget_idle();
                tokio::time::sleep(SESSION_SWEEP_INTERVAL).await;
            }
        });
        let agents = crate::agent::local::start(&self.db, &self.telemetry, &self.local_agent)
            .await
            .map_err(StartupError::Agent)?;
        let job = crate::agent::local::spawn_job(
            self.db.clone(),
            self.telemetry.clone(),
            self.local_agent.job_every,
            self.clock.clone(),
        );
        let payments = crate::payments::spawn_job(
            self.db.clone(),
            self.charge,
            self.payment_job_every,
            self.clock.clone(),
        );
        // The peer address feeds the sign-in rate limit.
        let service = self
            .router
            .into_make_service_with_connect_info::<SocketAddr>();
        let served = axum::serve(self.listener, service)
            .with_graceful_shutdown(shutdown)
            .await;
        sweeper.abort();
        job.abort();
        payments.abort();
        for agent in agents {
            let _ = agent.stop().await;
        }
        served.map_err(StartupError::Serve)?;
        tracing::info!("server stopped");
        if let Err(err) = self.db.close().await {
            tracing::warn!(error = %err, "closing the database pool");
        }
        Ok(())
    }
}

/// Opens the database and applies pending migrations; returns how many were applied.
pub async fn migrate_only(config: &Config) -> Result<usize, StartupError> {
    let (db, applied) = open_and_migrate(config).await?;
    let _ = db.close().await;
    Ok(applied)
}

/// Opens (creating the default data directory) and migrates the database; returns the pool
/// and the number of migrations applied.
pub async fn open_and_migrate(
    config: &Config,
) -> Result<(DatabaseConnection, usize), StartupError> {
    if let Some(dir) = &config.database.create_dir {
        std::fs::create_dir_all(dir).map_err(|source| StartupError::DataDir {
            path: dir.display().to_string(),
            source,
        })?;
    }
    let url = config.database.redacted_url();
    let db = db::connect(config.database.url.expose_secret())
        .await
        .map_err(|source| StartupError::Database {
            url: url.clone(),
            source,
        })?;
    let applied = db::migrate(&db)
        .await
        .map_err(|source| StartupError::Migrate { url, source })?;
    Ok((db, applied))
}

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
    metrics_token: crate::metrics::MetricsToken,
    extra: Router<AppState>,
) -> Router {
    let routes = route_list();
    // `public_url` is https exactly when session cookies are `Secure` (see configuration).
    let headers_settings = SecurityHeaders {
        hsts: sessions.secure_cookie,
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
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/locale", post(locale::set_locale))
        .route("/api/v1/me", get(api::me))
        .route("/api/v1/users", get(api::list_users))
        .route("/api/v1/gpus", get(reservations::list_gpus))
        .route("/api/v1/availability", get(reservations::availability))
        .route("/api/v1/slots", get(reservations::slots))
        .route(
            "/api/v1/reservations",
            get(reservations::list).post(reservations::create),
        )
        .route(
            "/api/v1/reservations/{id}",
            axum::routing::delete(reservations::cancel),
        )
        .route(
            "/api/v1/maintenance",
            get(maintenance::list).post(maintenance::create),
        )
        .route(
            "/api/v1/maintenance/{id}",
            axum::routing::delete(maintenance::end),
        )
        .route("/api/v1/wallet", get(ledger::wallet))
        .route("/api/v1/reports/usage", get(reports::usage))
        .route("/api/v1/reports/fleet", get(reports::fleet))
        .route("/api/v1/admin/credits", post(ledger::change_credits))
        .route("/api/v1/admin/payments-due", get(ledger::payments_due))
        .route("/api/v1/admin/gpus/{id}/retire", post(maintenance::retire))
        .route("/api/v1/admin/gpus/pending", get(fleet::pending_gpus))
        .route("/api/v1/admin/gpus/{id}/accept", post(fleet::accept_gpu))
        .route(
            "/api/v1/admin/gpus/{id}",
            axum::routing::patch(fleet::update_gpu),
        )
        .route(
            "/api/v1/admin/models/{model}/price",
            axum::routing::put(fleet::set_model_price),
        )
        .route("/admin/fleet", post(fleet::fleet_form))
        .route("/admin/credits", post(ledger::credits_form))
        .route("/api/v1/teams", get(teams::list))
        .route("/api/v1/teams/{id}", get(teams::show))
        .route("/api/v1/teams/{id}/invitations", post(teams::invite))
        .route(
            "/api/v1/teams/{id}/invitations/{invitation}",
            axum::routing::delete(teams::revoke),
        )
        .route(
            "/api/v1/teams/{id}/members/{user}",
            axum::routing::patch(teams::set_role).delete(teams::remove),
        )
        .route("/api/v1/teams/{id}/audit", get(teams::team_audit))
        .route(
            "/api/v1/teams/{id}/budget",
            axum::routing::put(teams::set_budget),
        )
        .route(
            "/api/v1/teams/{id}/rules",
            get(quotas::show).put(quotas::set_rules),
        )
        .route(
            "/api/v1/teams/{id}/quotas/{model}",
            axum::routing::put(quotas::set_quota).delete(quotas::remove_quota),
        )
        .route(
            "/api/v1/teams/{id}/approvals/{reservation}",
            post(quotas::decide),
        )
        .route("/api/v1/admin/teams", post(teams::create))
        .route("/api/v1/admin/audit", get(teams::audit))
        .route("/teams", post(teams::create_form))
        .route("/teams/{id}", post(teams::team_form))
        .route("/api/v1/gpus/{id}/telemetry", get(telemetry::history))
        .route("/api/v1/gpus/{id}/events", get(telemetry::events))
        .route(
            "/api/v1/agent/register",
            post(agent::register).layer(DefaultBodyLimit::max(agent::MAX_BODY_BYTES)),
        )
        .route(
            "/api/v1/agent/report",
            post(agent::report).layer(DefaultBodyLimit::max(agent::MAX_BODY_BYTES)),
        )
        .route(
            "/metrics",
            get(crate::metrics::metrics).layer(axum::Extension(metrics_token)),
        )
        .route("/auth/oidc/{provider}/start", get(auth::oidc_start))
        .route("/auth/oidc/{provider}/callback", get(auth::oidc_callback))
        .route("/calendar/book", post(reservations::book_form))
        .route("/auth/dev", post(auth::dev_sign_in))
        .route("/auth/signout", post(auth::sign_out))
        .merge(extra)
        // Also registers the server functions, with `AppState` in their context.
        .leptos_routes(&state, routes, move || shell(shell_options.clone()))
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        // Layers run outside-in from the bottom: set the security headers (and the page's script
        // nonce), count, log, turn a panic into a 500, compress, refuse cross-site writes, limit
        // sign-in attempts, load the session, then require sign-in for pages.
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
        .layer(axum::middleware::from_fn(crate::metrics::track_requests))
        .layer(axum::middleware::from_fn_with_state(
            headers_settings,
            security_headers::add_security_headers,
        ))
        .with_state(state)
}

/// Completes on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %err, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(err) => {
                tracing::error!(error = %err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutdown signal received, finishing in-flight requests");
}
