//! Builds the application: opens the database, migrates, seeds the demo fleet, builds the state
//! and the router (`router.rs`) and binds the listener. Tests call [`Application::build`] with port 0.

use crate::configuration::Config;
use crate::middleware::rate_limit::SignInLimiter;
use crate::router::router;
use axum::Router;
use berth_app::backend::auth::oidc::OidcProviders;
use berth_app::backend::db::sessions::DbSessionStore;
use berth_app::backend::state::AppState;
use berth_app::backend::{db, demo};
use leptos::prelude::*;
use sea_orm::{DatabaseConnection, DbErr};
use secrecy::ExposeSecret;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tower_sessions::session_store::ExpiredDeletion;

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
    /// The webhook client could not be built.
    #[error("webhooks: {0}")]
    Webhooks(String),
    /// The workspace store could not be opened.
    #[error("{0}")]
    Workspaces(String),
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
    notify_job_every: std::time::Duration,
    idle_job_every: std::time::Duration,
    watch_job_every: std::time::Duration,
    clock: Arc<dyn berth_app::backend::clock::Clock>,
    metrics: Arc<berth_app::backend::metrics::PortalMetrics>,
    state: AppState,
    /// This process among the portal's replicas (the holder named in its leases).
    replica: String,
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
            metrics: Arc::default(),
            wake: Arc::default(),
            freed: Arc::default(),
            payments: Arc::new(berth_app::backend::ledger::ManualProvider),
            mail: config.mail.clone(),
            stripe: config
                .stripe
                .clone()
                .map(berth_app::backend::stripe::StripeClient::new),
            webhooks: berth_app::backend::webhooks::WebhookClient::new(
                config.webhook_allow_private,
            )
            .map_err(StartupError::Webhooks)?,
            workspaces: config
                .workspace_store
                .open()
                .map_err(StartupError::Workspaces)?,
            words: Arc::new(berth_app::text::email::Words),
        };
        let per_minute = std::num::NonZeroU32::new(config.rate_limit.per_minute)
            .unwrap_or(std::num::NonZeroU32::MIN);
        let limiter = SignInLimiter::new(per_minute, config.rate_limit.trusted_proxies.clone());
        let router = router(
            state.clone(),
            config.sessions,
            limiter.clone(),
            crate::ops::metrics::MetricsToken(config.metrics_token.clone()),
            extra,
        );
        let replica = format!("{}-{:016x}", std::process::id(), rand::random::<u64>());
        tracing::info!(
            http.addr = %addr,
            db.url = %config.database.redacted_url(),
            replica = %replica,
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
            notify_job_every: config.notify_job_every,
            idle_job_every: config.idle_job_every,
            watch_job_every: config.watch_job_every,
            clock: config.clock.clone(),
            metrics: state.metrics.clone(),
            state,
            replica,
        })
    }

    /// This replica's id: the holder its leases name.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// The bound address (with the real port when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The database pool, for tests that inspect what the app wrote.
    pub fn db(&self) -> &DatabaseConnection {
        &self.db
    }

    /// The state every request sees (services take it, so tests that call a service directly
    /// use this one).
    pub fn state(&self) -> &AppState {
        &self.state
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
        let agents =
            crate::agent::local::start(&self.db, &self.telemetry, &self.local_agent, &self.replica)
                .await
                .map_err(StartupError::Agent)?;
        let job = crate::agent::local::spawn_job(
            self.db.clone(),
            self.telemetry.clone(),
            self.local_agent.job_every,
            self.clock.clone(),
            self.metrics.clone(),
        );
        let payments = crate::payments::spawn_job(
            self.db.clone(),
            self.charge,
            self.payment_job_every,
            self.clock.clone(),
            self.metrics.clone(),
        );
        let notices = crate::notify::spawn_job(self.state.clone(), self.notify_job_every);
        let reclaim = crate::reclaim::spawn_job(self.state.clone(), self.idle_job_every);
        let watches = crate::watches::spawn_job(self.state.clone(), self.watch_job_every);
        let cards = crate::card_reconcile::spawn_job(self.state.clone(), self.payment_job_every);
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
        notices.abort();
        reclaim.abort();
        watches.abort();
        if let Some(cards) = cards {
            cards.abort();
        }
        agents.stop().await;
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
    let db = db::connect_with_pool(
        config.database.url.expose_secret(),
        config.database.max_connections,
    )
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
