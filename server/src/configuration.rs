//! Typed settings: defaults, overridden by an optional `berth.toml`, overridden by `BERTH_*`
//! environment variables. Loaded and validated once, before anything is opened or written.

use berth_app::backend::auth::oidc::OidcProviderSettings;
use berth_app::backend::db::DEFAULT_MAX_CONNECTIONS;
use berth_app::backend::state::PortalConfig;
use berth_app::domain::money::{Currency, CurrencyError};
use berth_app::domain::payment::{ChargeMode, ChargePolicy};
use berth_app::domain::schedule::BookingLimits;
use berth_app::domain::user::Email;
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use openidconnect::{IssuerUrl, RedirectUrl};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The largest `database_max_connections` accepted.
pub const MAX_POOL_CONNECTIONS: u32 = 1000;

/// The settings file read when `--config` is not given, if it exists.
pub const DEFAULT_CONFIG_FILE: &str = "berth.toml";

/// Settings as written in `berth.toml` or `BERTH_*` variables (see README for each).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSettings {
    /// Address and port to listen on.
    pub bind: String,
    /// `sqlite://…` or `postgres://…`; default: `berth.db` in `data_dir`.
    pub database_url: Option<String>,
    /// Most connections this portal process keeps open to the database (1 to 1000).
    pub database_max_connections: u32,
    /// Directory for the embedded database.
    pub data_dir: PathBuf,
    /// Log filter: a level (`info`) or directives (`berth=debug,tower_http=info`).
    pub log: String,
    /// `pretty` or `json`.
    pub log_format: LogFormat,
    /// Add the demo fleet to an empty database. Default: on for SQLite, off for PostgreSQL.
    pub demo: Option<bool>,
    /// ISO 4217 code of the currency prices are in.
    pub currency: String,
    /// Directory with the built front end (`pkg/berth.js`, `.wasm`, `.css`) and static files.
    pub site_root: PathBuf,
    /// The address users reach Berth at (`https://…` makes session cookies `Secure`).
    pub public_url: Option<String>,
    /// Days of inactivity after which a session ends.
    pub session_idle_days: u32,
    /// Offer "sign in as demo user / admin" without an identity provider. Off unless `true`:
    /// anyone who reaches the server can then sign in as a platform admin.
    pub dev_sign_in: Option<bool>,
    /// Allow `dev_sign_in` on a bind address other than loopback (a demo on a network).
    pub dev_sign_in_public: bool,
    /// E-mail addresses that become platform admins when they sign in (a list, or one string
    /// separated by commas).
    pub admin_emails: TextList,
    /// OpenID Connect providers by id: `[oidc.<id>]` tables.
    pub oidc: BTreeMap<String, RawOidcProvider>,
    /// Sign-in and token-creation requests allowed per client address and minute.
    pub sign_in_rate_per_minute: u32,
    /// Reverse proxies or load balancers (addresses or CIDR networks, a list or one string
    /// separated by commas) whose `X-Forwarded-For` is believed for the client address.
    pub trusted_proxies: TextList,
    /// Replaced by `trusted_proxies`; kept only to refuse it with a helpful message.
    #[serde(default, skip_serializing)]
    pub trust_forwarded_for: Option<bool>,
    /// Add a fortnight of demo bookings along with the demo fleet. Default: same as `demo`.
    pub demo_bookings: Option<bool>,
    /// Longest booking, in days.
    pub max_booking_days: u32,
    /// How many weeks ahead a booking may start.
    pub booking_horizon_weeks: u32,
    /// Cancelling at least this many hours before the start refunds the whole price.
    pub refund_full_hours: u32,
    /// Cancelling at least this many hours before the start refunds `refund_partial_percent`.
    pub refund_partial_hours: u32,
    /// The partial refund, in percent of the price.
    pub refund_partial_percent: u8,
    /// Charge modes users may choose: `at_booking`, `before_start` (a list, or one string
    /// separated by commas).
    pub charge_modes: TextList,
    /// The charge mode of a booking that names none.
    pub charge_default: String,
    /// Node agents prepare a booking's environment profile this many minutes before its start
    /// (1 to 1440).
    pub prepare_ahead_minutes: u32,
    /// Minutes before the start at which `before_start` bookings are charged.
    pub charge_lead_minutes: u32,
    /// Minutes before the start at which a booking still unpaid is released.
    pub release_unpaid_minutes: u32,
    /// Seconds between runs of the payment job.
    pub payment_job_seconds: u32,
    /// Seconds between runs of the notification worker (it also runs at once after a change
    /// that recorded events).
    pub notify_job_seconds: u32,
    /// Seconds between runs of the idle reclaim job (it also pays incidents' SLA credits).
    pub idle_job_seconds: u32,
    /// Minutes within which a platform admin answers an incident (the first-response target).
    pub incident_first_response_minutes: u32,
    /// Percent of the lost minutes' price an SLA credit pays (100: their price; 200: twice it;
    /// 0: no credits).
    pub sla_credit_percent: u32,
    /// A GPU that fell off the bus counts as unavailable.
    pub sla_fell_off_bus: bool,
    /// A GPU gone from its node counts as unavailable.
    pub sla_gpu_gone: bool,
    /// A silent node agent counts as unavailable.
    pub sla_node_silent: bool,
    /// Maintenance set after the booking was made counts as unavailable.
    pub sla_maintenance: bool,
    /// Thermal or power throttling below `sla_throttle_clock_percent` of the GPU's highest SM
    /// clock counts as unavailable.
    pub sla_throttled: bool,
    /// See `sla_throttled`.
    pub sla_throttle_clock_percent: u8,
    /// Seconds between runs of the watch job (it also runs at once when capacity comes free).
    pub watch_job_seconds: u32,
    /// Hours raw GPU samples are kept.
    pub raw_samples_hours: u32,
    /// Days one-minute rollups and GPU events are kept.
    pub rollup_days: u32,
    /// Average GPU utilization (percent) under which a minute counts as idle in cost reports.
    pub idle_util_percent: u32,
    /// Hourly price (minor units) of a GPU a node agent reports for the first time.
    pub new_gpu_price_minor: i64,
    /// The agent inside `berth serve`: `auto` (NVML for this host if present; demo nodes
    /// simulated), `nvml` (NVML required), `simulated` (demo nodes only) or `off`.
    pub local_agent: LocalAgentMode,
    /// Seconds between samples of the agent inside `berth serve`.
    pub agent_interval_seconds: u32,
    /// Path of `libnvidia-ml.so` for the agent inside `berth serve` (default: the system's).
    pub nvml_library: Option<PathBuf>,
    /// Seconds a replica's hold on the local agent's work lasts unless renewed (renewed every
    /// third of it): after a replica dies, another takes the demo fleet's simulation (or this
    /// host's GPUs) over within this time.
    pub local_agent_lease_seconds: u32,
    /// Seconds between runs of the telemetry rollup-and-prune job.
    pub telemetry_job_seconds: u32,
    /// If set, `GET /metrics` requires `Authorization: Bearer <this>`.
    pub metrics_token: Option<String>,
    /// The SMTP server notices are e-mailed through: `smtp://host:25` (plain),
    /// `smtp://user:password@host:587?tls=required` (STARTTLS) or `smtps://host:465` (TLS).
    /// Unset: no e-mail, notices stay in the portal's inbox. Needs `public_url` for the links.
    pub smtp_url: Option<String>,
    /// The sender of Berth's e-mails (`Berth <berth@example.org>`); default
    /// `Berth <noreply@<public_url's host>>`.
    pub mail_from: Option<String>,
    /// Let webhooks call private and local addresses (loopback, 10/8, 192.168/16, …). Off: a
    /// user cannot make Berth call inside the network it runs in.
    pub webhook_allow_private: bool,
    /// Where money comes from: `manual` (platform admins grant credits received by invoice or
    /// transfer) or `stripe` (users also save cards and top up by card; needs the three
    /// `stripe_*` keys).
    pub payments: PaymentsMode,
    /// Stripe's secret key (`sk_…`).
    pub stripe_secret_key: Option<String>,
    /// Stripe's publishable key (`pk_…`), given to Stripe.js on the wallet page.
    pub stripe_publishable_key: Option<String>,
    /// The signing secret of the webhook endpoint set up in Stripe's dashboard (`whsec_…`)
    /// for `<public_url>/api/v1/stripe/webhook`.
    pub stripe_webhook_secret: Option<String>,
    /// Stripe's API (default `https://api.stripe.com`; the tests point it at `localstripe`).
    pub stripe_api_base: String,
    /// Where the wallet page loads Stripe.js from (default `https://js.stripe.com/v3/`).
    pub stripe_js_url: String,
    /// The smallest top-up by card, in minor units.
    pub top_up_min_minor: i64,
    /// The largest top-up by card, in minor units.
    pub top_up_max_minor: i64,
    /// Where the refund of a booking paid by card goes: `card` (back to it, through Stripe;
    /// the default) or `credits` (to the wallet).
    pub refund_to: berth_app::domain::payment::RefundTo,
    /// Where saved workspaces are kept: a directory (default `workspaces` in `data_dir`) or
    /// `s3://BUCKET/PREFIX` (credentials and region from the `AWS_*` variables).
    pub workspace_store: Option<String>,
    /// The S3 endpoint of an S3-compatible service that is not AWS (`http://host:9000`).
    pub workspace_s3_endpoint: Option<String>,
    /// The S3 region (default: `AWS_REGION`, else `us-east-1`).
    pub workspace_s3_region: Option<String>,
    /// The S3 access key id (default: `AWS_ACCESS_KEY_ID`).
    pub workspace_s3_access_key_id: Option<String>,
    /// The S3 secret access key (default: `AWS_SECRET_ACCESS_KEY`).
    pub workspace_s3_secret_access_key: Option<String>,
    /// The most one user's workspace may hold, in MiB.
    pub workspace_quota_mib: u64,
    /// The workspace directory on the nodes: relative to the holder's home, or absolute.
    pub workspace_dir: String,
    /// The workspace directory is on a filesystem all nodes share: nothing is saved or restored.
    pub workspace_shared: bool,
}

/// Where money comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PaymentsMode {
    /// Platform admins grant credits.
    Manual,
    /// Cards through Stripe, besides the admins' grants.
    Stripe,
}

/// The agent inside `berth serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LocalAgentMode {
    /// NVML for this host when it loads; demo nodes simulated.
    Auto,
    /// NVML for this host; fail to start without it. Demo nodes simulated.
    Nvml,
    /// Demo nodes simulated; this host not read.
    Simulated,
    /// No local agent.
    Off,
}

/// The agent inside `berth serve` and the telemetry job.
#[derive(Debug, Clone)]
pub struct LocalAgentSettings {
    /// Which sources run.
    pub mode: LocalAgentMode,
    /// Time between samples.
    pub interval: std::time::Duration,
    /// `libnvidia-ml.so` to load instead of the system's.
    pub nvml_library: Option<PathBuf>,
    /// How long a replica's hold on a local agent's work lasts unless renewed.
    pub lease: std::time::Duration,
    /// Time between rollup-and-prune runs.
    pub job_every: std::time::Duration,
}

/// Items as a TOML list or one comma-separated string (`BERTH_ADMIN_EMAILS=a@x.org,b@y.org`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TextList {
    /// `["a@x.org", "b@y.org"]`
    List(Vec<String>),
    /// `"a@x.org, b@y.org"`
    Joined(String),
    /// Not set.
    #[default]
    None,
}

impl TextList {
    fn items(&self) -> Vec<String> {
        match self {
            TextList::List(items) => items.clone(),
            TextList::Joined(joined) => joined
                .split([',', ' ', ';'])
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(str::to_owned)
                .collect(),
            TextList::None => Vec::new(),
        }
    }
}

/// One `[oidc.<id>]` table.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOidcProvider {
    /// Button text; default: the id.
    pub label: Option<String>,
    /// Issuer URL (its `/.well-known/openid-configuration` is read).
    pub issuer: String,
    /// Client id registered at the provider.
    pub client_id: String,
    /// Client secret (omit for a public client).
    pub client_secret: Option<String>,
    /// Default: `<public_url>/auth/oidc/<id>/callback`.
    pub redirect_url: Option<String>,
    /// Scopes besides `openid`; default `["email", "profile"]`.
    pub scopes: Option<Vec<String>>,
    /// Treat every address this provider gives as verified, also without `email_verified`
    /// (only for providers that issue nothing but verified addresses).
    #[serde(default)]
    pub trust_email: bool,
}

impl std::fmt::Debug for RawOidcProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawOidcProvider")
            .field("label", &self.label)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "***"))
            .field("redirect_url", &self.redirect_url)
            .field("scopes", &self.scopes)
            .field("trust_email", &self.trust_email)
            .finish()
    }
}

impl Default for RawSettings {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:3000".to_owned(),
            database_url: None,
            database_max_connections: DEFAULT_MAX_CONNECTIONS,
            data_dir: PathBuf::from("data"),
            log: "info".to_owned(),
            log_format: LogFormat::Pretty,
            demo: None,
            currency: "USD".to_owned(),
            site_root: PathBuf::from("target/site"),
            public_url: None,
            session_idle_days: 7,
            dev_sign_in: None,
            dev_sign_in_public: false,
            admin_emails: TextList::None,
            oidc: BTreeMap::new(),
            sign_in_rate_per_minute: 20,
            trusted_proxies: TextList::None,
            trust_forwarded_for: None,
            demo_bookings: None,
            max_booking_days: 14,
            booking_horizon_weeks: 8,
            refund_full_hours: 24,
            refund_partial_hours: 2,
            refund_partial_percent: 50,
            charge_modes: TextList::Joined("at_booking,before_start".to_owned()),
            charge_default: "at_booking".to_owned(),
            charge_lead_minutes: 120,
            prepare_ahead_minutes: 30,
            release_unpaid_minutes: 15,
            payment_job_seconds: 60,
            notify_job_seconds: 15,
            idle_job_seconds: 60,
            incident_first_response_minutes: 240,
            sla_credit_percent: 100,
            sla_fell_off_bus: true,
            sla_gpu_gone: true,
            sla_node_silent: true,
            sla_maintenance: true,
            sla_throttled: true,
            sla_throttle_clock_percent: 50,
            watch_job_seconds: 60,
            raw_samples_hours: 24,
            rollup_days: 30,
            idle_util_percent: 10,
            new_gpu_price_minor: 200,
            local_agent: LocalAgentMode::Auto,
            agent_interval_seconds: 5,
            nvml_library: None,
            local_agent_lease_seconds: 15,
            telemetry_job_seconds: 60,
            metrics_token: None,
            smtp_url: None,
            mail_from: None,
            webhook_allow_private: false,
            payments: PaymentsMode::Manual,
            stripe_secret_key: None,
            stripe_publishable_key: None,
            stripe_webhook_secret: None,
            stripe_api_base: "https://api.stripe.com".to_owned(),
            stripe_js_url: "https://js.stripe.com/v3/".to_owned(),
            top_up_min_minor: 500,
            top_up_max_minor: 1_000_000,
            refund_to: berth_app::domain::payment::RefundTo::Card,
            workspace_store: None,
            workspace_s3_endpoint: None,
            workspace_s3_region: None,
            workspace_s3_access_key_id: None,
            workspace_s3_secret_access_key: None,
            workspace_quota_mib: 20 * 1024,
            workspace_dir: "berth-workspace".to_owned(),
            workspace_shared: false,
        }
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable, coloured on a terminal.
    Pretty,
    /// One JSON object per line.
    Json,
}

/// Which database engine a URL points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Embedded SQLite file.
    Sqlite,
    /// PostgreSQL server.
    Postgres,
}

/// Where the data lives.
#[derive(Debug, Clone)]
pub struct DatabaseSettings {
    /// Connection URL (may hold a password).
    pub url: SecretString,
    /// The engine.
    pub backend: Backend,
    /// Directory to create before opening the default embedded database.
    pub create_dir: Option<PathBuf>,
    /// Most connections kept open to it.
    pub max_connections: u32,
}

impl DatabaseSettings {
    /// The URL with any password replaced by `***`, for messages and logs.
    pub fn redacted_url(&self) -> String {
        redact(self.url.expose_secret())
    }
}

/// Logging settings.
#[derive(Debug, Clone)]
pub struct LogSettings {
    /// `EnvFilter` directives.
    pub filter: String,
    /// Output format.
    pub format: LogFormat,
}

/// Sign-in sessions.
#[derive(Debug, Clone, Copy)]
pub struct SessionSettings {
    /// Mark the cookie `Secure` (Berth is served over https).
    pub secure_cookie: bool,
    /// Inactivity after which a session ends.
    pub idle_days: u32,
}

/// Limits on sign-in attempts.
#[derive(Debug, Clone)]
pub struct RateLimitSettings {
    /// Requests per client address and minute.
    pub per_minute: u32,
    /// Proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<ipnet::IpNet>,
}

/// Validated settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Listen address.
    pub bind: SocketAddr,
    /// Database.
    pub database: DatabaseSettings,
    /// Logging.
    pub log: LogSettings,
    /// Whether to add the demo fleet to an empty database.
    pub demo: bool,
    /// Whether to add demo bookings with it.
    pub demo_bookings: bool,
    /// Settings the pages need.
    pub portal: PortalConfig,
    /// Built front-end assets.
    pub site_root: PathBuf,
    /// Sessions.
    pub sessions: SessionSettings,
    /// OpenID Connect providers, in id order.
    pub oidc: Vec<OidcProviderSettings>,
    /// Sign-in rate limit.
    pub rate_limit: RateLimitSettings,
    /// The agent inside `berth serve` and the telemetry job.
    pub local_agent: LocalAgentSettings,
    /// Bearer token `GET /metrics` requires, if any.
    pub metrics_token: Option<String>,
    /// Time between runs of the payment job.
    pub payment_job_every: std::time::Duration,
    /// Time between runs of the notification worker.
    pub notify_job_every: std::time::Duration,
    /// Time between runs of the idle reclaim job.
    pub idle_job_every: std::time::Duration,
    /// Time between runs of the watch job.
    pub watch_job_every: std::time::Duration,
    /// The e-mail channel, when `smtp_url` is set.
    pub mail: Option<std::sync::Arc<berth_app::backend::mail::MailChannel>>,
    /// Whether webhooks may call private and local addresses.
    pub webhook_allow_private: bool,
    /// Where saved workspaces are kept.
    pub workspace_store: WorkspaceStoreSpec,
    /// Stripe, when `payments = stripe`.
    pub stripe: Option<berth_app::backend::stripe::StripeSettings>,
    /// The time every service and job reads: the system clock, or a clock a test moves.
    pub clock: std::sync::Arc<dyn berth_app::backend::clock::Clock>,
}

/// A setting that cannot be used. Each message names the setting and the problem.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `--config` names a file that does not exist.
    #[error("settings file {0} does not exist")]
    MissingFile(PathBuf),
    /// The file or a variable could not be read into the settings (syntax, type, unknown key).
    #[error("invalid settings: {0}")]
    Parse(String),
    /// `bind` is not `host:port`.
    #[error("invalid bind address `{value}` (BERTH_BIND): expected IP:PORT such as 127.0.0.1:3000")]
    Bind {
        /// The value given.
        value: String,
    },
    /// `database_url` has a scheme Berth does not support.
    #[error(
        "unsupported database URL `{0}` (BERTH_DATABASE_URL): use sqlite://PATH or postgres://USER@HOST/DB"
    )]
    DatabaseUrl(String),
    /// `log` is not a valid filter.
    #[error("invalid log filter `{value}` (BERTH_LOG): {reason}")]
    Log {
        /// The value given.
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// `currency` is not an ISO 4217 code.
    #[error(
        "unknown currency `{0}` (BERTH_CURRENCY): expected an ISO 4217 code such as USD, EUR or BRL"
    )]
    UnknownCurrency(String),
    /// `public_url` is not an http(s) URL.
    #[error("invalid public URL `{0}` (BERTH_PUBLIC_URL): expected http://… or https://…")]
    PublicUrl(String),
    /// `smtp_url` or `mail_from` is unusable, or `public_url` is missing for the links.
    #[error("{0}")]
    Mail(String),
    /// A `workspace_*` setting is unusable.
    #[error("{0}")]
    Workspace(String),
    /// `session_idle_days` is 0.
    #[error("session_idle_days (BERTH_SESSION_IDLE_DAYS) must be at least 1")]
    SessionIdle,
    /// An `[oidc.<id>]` table is unusable.
    #[error("OpenID Connect provider `{id}` (oidc.{id}): {problem}")]
    Oidc {
        /// The provider id.
        id: String,
        /// What is wrong.
        problem: String,
    },
    /// The development sign-in is on, on an address other machines can reach.
    #[error(
        "dev_sign_in (BERTH_DEV_SIGN_IN) lets anyone sign in as a platform admin, and bind `{bind}` \
         (BERTH_BIND) is reachable from other machines: bind to 127.0.0.1, turn dev_sign_in off, \
         or set dev_sign_in_public = true (BERTH_DEV_SIGN_IN_PUBLIC) if that is really meant"
    )]
    DevSignInPublic {
        /// The bind address.
        bind: SocketAddr,
    },
    /// An address in `admin_emails` is malformed.
    #[error("admin_emails (BERTH_ADMIN_EMAILS): {0}")]
    AdminEmail(String),
    /// A booking limit is out of range.
    #[error("{0}")]
    BookingLimit(&'static str),
    /// A charge-mode setting cannot be used.
    #[error("charge settings: {0}")]
    Charge(String),
    /// `sign_in_rate_per_minute` is 0.
    #[error("sign_in_rate_per_minute (BERTH_SIGN_IN_RATE_PER_MINUTE) must be at least 1")]
    RateLimit,
    /// `database_max_connections` is 0 or too large.
    #[error(
        "database_max_connections (BERTH_DATABASE_MAX_CONNECTIONS) must be between 1 and {max}, not {value}",
        max = MAX_POOL_CONNECTIONS
    )]
    PoolSize {
        /// The value given.
        value: u32,
    },
    /// An entry of `trusted_proxies` is neither an address nor a network.
    #[error(
        "trusted_proxies (BERTH_TRUSTED_PROXIES): `{0}` is not an IP address or a CIDR network such as 10.0.0.0/8"
    )]
    TrustedProxy(String),
    /// The removed `trust_forwarded_for` setting is still set.
    #[error(
        "trust_forwarded_for (BERTH_TRUST_FORWARDED_FOR) was replaced by trusted_proxies \
         (BERTH_TRUSTED_PROXIES): list the addresses or networks of your reverse proxies, \
         e.g. trusted_proxies = [\"10.0.0.0/8\"], and remove trust_forwarded_for"
    )]
    TrustForwardedForRemoved,
    /// The currency cannot be represented.
    #[error("currency (BERTH_CURRENCY): {0}")]
    Currency(#[from] CurrencyError),
    /// `payments = stripe` without its keys, or top-up limits that make no sense.
    #[error("{0}")]
    Payments(String),
    /// An incident or SLA setting out of range.
    #[error(
        "incident_first_response_minutes must be 1-10080, sla_credit_percent 0-1000 and \
         sla_throttle_clock_percent 1-100"
    )]
    Incidents,
}

impl Config {
    /// Loads settings from defaults, the settings file and `BERTH_*` variables, and validates
    /// them. Reads nothing else and writes nothing.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        let mut figment = Figment::from(Serialized::defaults(RawSettings::default()));
        match file {
            Some(path) if !path.is_file() => return Err(ConfigError::MissingFile(path.to_owned())),
            Some(path) => figment = figment.merge(Toml::file_exact(path)),
            None if Path::new(DEFAULT_CONFIG_FILE).is_file() => {
                figment = figment.merge(Toml::file_exact(DEFAULT_CONFIG_FILE));
            }
            None => {}
        }
        // `BERTH_CONFIG` names the file and `BERTH_AGENT_PORTAL` / `_TOKEN` / `_TOKEN_FILE` /
        // `_NVML_LIBRARY`
        // are `berth agent` options (command-line options); `BERTH_FAKE_NVML_CONFIG` belongs to
        // the fake NVML library and `BERTH_TEST_*` to the test suite. Every other `BERTH_*`
        // variable must be a setting.
        // `__` separates nesting: `BERTH_OIDC__CORP__CLIENT_SECRET` sets `oidc.corp.client_secret`.
        let env = Env::prefixed("BERTH_")
            .ignore(&[
                "config",
                "agent_portal",
                "agent_token",
                "agent_token_file",
                "agent_nvml_library",
                "fake_nvml_config",
            ])
            .split("__")
            .filter(|key| !key.as_str().to_ascii_lowercase().starts_with("test_"));
        let raw: RawSettings = figment
            .merge(env)
            .extract()
            .map_err(|err| ConfigError::Parse(one_line(&err)))?;
        Self::from_raw(raw)
    }

    /// Validates raw settings.
    pub fn from_raw(raw: RawSettings) -> Result<Self, ConfigError> {
        let bind: SocketAddr = raw.bind.trim().parse().map_err(|_| ConfigError::Bind {
            value: raw.bind.clone(),
        })?;

        tracing_subscriber::EnvFilter::try_new(&raw.log).map_err(|err| ConfigError::Log {
            value: raw.log.clone(),
            reason: err.to_string(),
        })?;

        if !(1..=MAX_POOL_CONNECTIONS).contains(&raw.database_max_connections) {
            return Err(ConfigError::PoolSize {
                value: raw.database_max_connections,
            });
        }
        let database = database_settings(
            raw.database_url.as_deref(),
            &raw.data_dir,
            raw.database_max_connections,
        )?;
        let currency = currency(&raw.currency)?;
        let secure_cookie = match raw.public_url.as_deref().map(str::trim) {
            None | Some("") => false,
            Some(public) => match url::Url::parse(public) {
                Ok(parsed) if parsed.scheme() == "https" => true,
                Ok(parsed) if parsed.scheme() == "http" => false,
                _ => return Err(ConfigError::PublicUrl(public.to_owned())),
            },
        };
        if raw.session_idle_days == 0 {
            return Err(ConfigError::SessionIdle);
        }
        let mail = mail_channel(&raw)?;
        if !(1..=366).contains(&raw.max_booking_days) {
            return Err(ConfigError::BookingLimit(
                "max_booking_days (BERTH_MAX_BOOKING_DAYS) must be between 1 and 366",
            ));
        }
        if !(1..=104).contains(&raw.booking_horizon_weeks) {
            return Err(ConfigError::BookingLimit(
                "booking_horizon_weeks (BERTH_BOOKING_HORIZON_WEEKS) must be between 1 and 104",
            ));
        }
        if raw.refund_full_hours > 24 * 366
            || raw.refund_partial_hours > raw.refund_full_hours
            || raw.refund_partial_percent > 100
        {
            return Err(ConfigError::BookingLimit(
                "refund settings: refund_partial_hours at most refund_full_hours (at most 8784), \
                 refund_partial_percent 0-100",
            ));
        }
        let charge = charge_policy(&raw)?;
        let incidents = incident_settings(&raw)?;
        if !(1..=24 * 30).contains(&raw.raw_samples_hours)
            || !(1..=3660).contains(&raw.rollup_days)
            || !(1..=100).contains(&raw.idle_util_percent)
            || !(1..=3600).contains(&raw.agent_interval_seconds)
            || !(1..=3600).contains(&raw.telemetry_job_seconds)
            || !(1..=3600).contains(&raw.local_agent_lease_seconds)
            || raw.new_gpu_price_minor < 0
        {
            return Err(ConfigError::BookingLimit(
                "telemetry settings: raw_samples_hours 1-720, rollup_days 1-3660, \
                 idle_util_percent 1-100, agent_interval_seconds 1-3600, telemetry_job_seconds 1-3600, \
                 local_agent_lease_seconds 1-3600, new_gpu_price_minor at least 0",
            ));
        }
        if raw.sign_in_rate_per_minute == 0 {
            return Err(ConfigError::RateLimit);
        }
        if raw.trust_forwarded_for.is_some() {
            return Err(ConfigError::TrustForwardedForRemoved);
        }
        let trusted_proxies = raw
            .trusted_proxies
            .items()
            .iter()
            .map(|item| trusted_proxy(item))
            .collect::<Result<Vec<_>, _>>()?;
        let admin_emails = raw
            .admin_emails
            .items()
            .iter()
            .map(|item| Email::parse(item).map_err(|err| ConfigError::AdminEmail(err.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        let oidc = raw
            .oidc
            .iter()
            .map(|(id, provider)| oidc_provider(id, provider, raw.public_url.as_deref()))
            .collect::<Result<Vec<_>, _>>()?;
        let workspace = workspace_settings(&raw)?;
        let workspace_store = workspace_store(&raw)?;
        let (stripe, top_up) = payment_settings(&raw)?;
        let demo = raw.demo.unwrap_or(database.backend == Backend::Sqlite);
        let dev_sign_in = raw.dev_sign_in.unwrap_or(false);
        if dev_sign_in && !bind.ip().is_loopback() && !raw.dev_sign_in_public {
            return Err(ConfigError::DevSignInPublic { bind });
        }
        Ok(Self {
            bind,
            demo,
            demo_bookings: raw.demo_bookings.unwrap_or(demo),
            database,
            log: LogSettings {
                filter: raw.log,
                format: raw.log_format,
            },
            portal: PortalConfig {
                currency,
                dev_sign_in,
                session_idle_days: raw.session_idle_days,
                booking: BookingLimits {
                    max_length: chrono::TimeDelta::days(i64::from(raw.max_booking_days)),
                    horizon: chrono::TimeDelta::weeks(i64::from(raw.booking_horizon_weeks)),
                },
                admin_emails,
                refund: berth_app::domain::ledger::RefundPolicy {
                    full_before: chrono::TimeDelta::hours(i64::from(raw.refund_full_hours)),
                    partial_before: chrono::TimeDelta::hours(i64::from(raw.refund_partial_hours)),
                    partial_percent: raw.refund_partial_percent,
                },
                charge,
                telemetry: berth_app::backend::state::TelemetrySettings {
                    raw_keep: chrono::TimeDelta::hours(i64::from(raw.raw_samples_hours)),
                    rollup_keep: chrono::TimeDelta::days(i64::from(raw.rollup_days)),
                    new_gpu_price_minor: raw.new_gpu_price_minor,
                    idle_util_percent: f64::from(raw.idle_util_percent),
                    offer_horizon: chrono::TimeDelta::weeks(i64::from(raw.booking_horizon_weeks)),
                    incident_first_response: incidents.first_response,
                },
                public_url: raw
                    .public_url
                    .as_deref()
                    .map(|url| url.trim().trim_end_matches('/').to_owned())
                    .filter(|url| !url.is_empty()),
                prepare_ahead: chrono::TimeDelta::minutes(i64::from(raw.prepare_ahead_minutes)),
                workspace,
                incidents,
                top_up,
                refund_to: raw.refund_to,
            },
            site_root: raw.site_root,
            sessions: SessionSettings {
                secure_cookie,
                idle_days: raw.session_idle_days,
            },
            oidc,
            rate_limit: RateLimitSettings {
                per_minute: raw.sign_in_rate_per_minute,
                trusted_proxies,
            },
            local_agent: LocalAgentSettings {
                mode: raw.local_agent,
                interval: std::time::Duration::from_secs(u64::from(raw.agent_interval_seconds)),
                nvml_library: raw.nvml_library,
                lease: std::time::Duration::from_secs(u64::from(raw.local_agent_lease_seconds)),
                job_every: std::time::Duration::from_secs(u64::from(raw.telemetry_job_seconds)),
            },
            metrics_token: raw.metrics_token.filter(|t| !t.trim().is_empty()),
            payment_job_every: std::time::Duration::from_secs(u64::from(raw.payment_job_seconds)),
            notify_job_every: std::time::Duration::from_secs(u64::from(raw.notify_job_seconds)),
            idle_job_every: std::time::Duration::from_secs(u64::from(raw.idle_job_seconds)),
            watch_job_every: std::time::Duration::from_secs(u64::from(raw.watch_job_seconds)),
            mail,
            webhook_allow_private: raw.webhook_allow_private,
            workspace_store,
            stripe,
            clock: std::sync::Arc::new(berth_app::backend::clock::SystemClock),
        })
    }
}

/// Stripe's settings when `payments = stripe`, and the top-up limits, checked.
fn payment_settings(
    raw: &RawSettings,
) -> Result<
    (
        Option<berth_app::backend::stripe::StripeSettings>,
        berth_app::domain::payment::TopUpLimits,
    ),
    ConfigError,
> {
    let top_up = berth_app::domain::payment::TopUpLimits {
        min_minor: raw.top_up_min_minor,
        max_minor: raw.top_up_max_minor,
    };
    if top_up.min_minor < 1 || top_up.max_minor < top_up.min_minor {
        return Err(ConfigError::Payments(
            "top_up_min_minor must be at least 1 and top_up_max_minor at least top_up_min_minor"
                .to_owned(),
        ));
    }
    if raw.payments == PaymentsMode::Manual {
        return Ok((None, top_up));
    }
    let key = |value: &Option<String>, name: &str, prefix: &str| {
        value
            .as_deref()
            .map(str::trim)
            .filter(|v| v.starts_with(prefix) && v.len() > prefix.len())
            .map(str::to_owned)
            .ok_or_else(|| {
                ConfigError::Payments(format!(
                    "payments = stripe needs {name} (BERTH_{}), starting with `{prefix}`",
                    name.to_ascii_uppercase()
                ))
            })
    };
    let api_base = raw.stripe_api_base.trim().trim_end_matches('/').to_owned();
    if !(api_base.starts_with("https://") || api_base.starts_with("http://")) {
        return Err(ConfigError::Payments(format!(
            "stripe_api_base `{api_base}`: give an http(s) URL"
        )));
    }
    Ok((
        Some(berth_app::backend::stripe::StripeSettings {
            api_base,
            secret_key: key(&raw.stripe_secret_key, "stripe_secret_key", "sk_")?,
            publishable_key: key(&raw.stripe_publishable_key, "stripe_publishable_key", "pk_")?,
            webhook_secret: key(
                &raw.stripe_webhook_secret,
                "stripe_webhook_secret",
                "whsec_",
            )?,
            js_url: raw.stripe_js_url.trim().to_owned(),
        }),
        top_up,
    ))
}

/// The incident settings, checked.
fn incident_settings(
    raw: &RawSettings,
) -> Result<berth_app::backend::incidents::IncidentSettings, ConfigError> {
    if !(1..=10_080).contains(&raw.incident_first_response_minutes)
        || raw.sla_credit_percent > 1000
        || !(1..=100).contains(&raw.sla_throttle_clock_percent)
    {
        return Err(ConfigError::Incidents);
    }
    Ok(berth_app::backend::incidents::IncidentSettings {
        first_response: chrono::TimeDelta::minutes(i64::from(raw.incident_first_response_minutes)),
        sla: berth_app::domain::incident::SlaPolicy {
            percent: raw.sla_credit_percent,
            fell_off_bus: raw.sla_fell_off_bus,
            gpu_gone: raw.sla_gpu_gone,
            node_silent: raw.sla_node_silent,
            maintenance: raw.sla_maintenance,
            throttled: raw.sla_throttled,
            throttle_clock_percent: raw.sla_throttle_clock_percent,
            ..berth_app::domain::incident::SlaPolicy::default()
        },
        thresholds: berth_app::domain::diagnosis::Thresholds::default(),
    })
}

/// Where saved workspaces are kept.
#[derive(Debug, Clone)]
pub enum WorkspaceStoreSpec {
    /// Files under a directory.
    Directory(PathBuf),
    /// An S3 (or S3-compatible) bucket.
    S3 {
        /// `s3://BUCKET/PREFIX`.
        url: String,
        /// A service other than AWS.
        endpoint: Option<String>,
        /// The region.
        region: Option<String>,
        /// Credentials (else the `AWS_*` variables).
        credentials: Option<(String, secrecy::SecretString)>,
    },
}

impl WorkspaceStoreSpec {
    /// Opens it.
    pub fn open(&self) -> Result<berth_app::backend::workspaces::WorkspaceStore, String> {
        use berth_app::backend::workspaces::WorkspaceStore;
        match self {
            Self::Directory(dir) => WorkspaceStore::directory(dir),
            Self::S3 {
                url,
                endpoint,
                region,
                credentials,
            } => {
                use secrecy::ExposeSecret;
                WorkspaceStore::s3(
                    url,
                    endpoint.as_deref(),
                    region.as_deref(),
                    credentials
                        .as_ref()
                        .map(|(id, secret)| (id.as_str(), secret.expose_secret())),
                )
            }
        }
    }
}

fn workspace_store(raw: &RawSettings) -> Result<WorkspaceStoreSpec, ConfigError> {
    let given = raw
        .workspace_store
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    Ok(match given {
        None => WorkspaceStoreSpec::Directory(raw.data_dir.join("workspaces")),
        Some(url) if url.starts_with("s3://") => {
            let endpoint = raw
                .workspace_s3_endpoint
                .as_deref()
                .map(str::trim)
                .filter(|e| !e.is_empty());
            if let Some(endpoint) = endpoint
                && !(endpoint.starts_with("http://") || endpoint.starts_with("https://"))
            {
                return Err(ConfigError::Workspace(format!(
                    "workspace_s3_endpoint `{endpoint}` must be an http:// or https:// URL"
                )));
            }
            WorkspaceStoreSpec::S3 {
                url: url.to_owned(),
                endpoint: endpoint.map(str::to_owned),
                region: raw
                    .workspace_s3_region
                    .clone()
                    .filter(|r| !r.trim().is_empty()),
                credentials: match (
                    raw.workspace_s3_access_key_id.clone(),
                    raw.workspace_s3_secret_access_key.clone(),
                ) {
                    (Some(id), Some(secret)) => Some((id, SecretString::from(secret))),
                    (None, None) => None,
                    _ => {
                        return Err(ConfigError::Workspace(
                            "set both workspace_s3_access_key_id and \
                             workspace_s3_secret_access_key, or neither"
                                .to_owned(),
                        ));
                    }
                },
            }
        }
        Some(url) if url.contains("://") => {
            return Err(ConfigError::Workspace(format!(
                "workspace_store `{url}`: give a directory or s3://BUCKET/PREFIX"
            )));
        }
        Some(dir) => WorkspaceStoreSpec::Directory(PathBuf::from(dir)),
    })
}

fn workspace_settings(
    raw: &RawSettings,
) -> Result<berth_app::backend::workspaces::WorkspaceSettings, ConfigError> {
    let dir = raw.workspace_dir.trim();
    let bad_part = dir.split('/').any(|part| part == "..");
    if dir.is_empty() || dir.len() > 1024 || bad_part || dir.contains('\0') {
        return Err(ConfigError::Workspace(format!(
            "workspace_dir `{dir}` must be a directory inside the holder's home (such as \
             berth-workspace) or an absolute path, without `..`"
        )));
    }
    if !(1..=1024 * 1024 * 1024).contains(&raw.workspace_quota_mib) {
        return Err(ConfigError::Workspace(
            "workspace_quota_mib must be 1 to 1073741824".to_owned(),
        ));
    }
    Ok(berth_app::backend::workspaces::WorkspaceSettings {
        quota_bytes: raw.workspace_quota_mib.saturating_mul(1024 * 1024),
        dir: dir.to_owned(),
        shared: raw.workspace_shared,
    })
}

/// The e-mail channel `smtp_url` asks for (none when it is unset).
fn mail_channel(
    raw: &RawSettings,
) -> Result<Option<std::sync::Arc<berth_app::backend::mail::MailChannel>>, ConfigError> {
    let Some(smtp_url) = raw.smtp_url.as_deref().filter(|url| !url.trim().is_empty()) else {
        return Ok(None);
    };
    let Some(public_url) = raw
        .public_url
        .as_deref()
        .filter(|url| !url.trim().is_empty())
    else {
        return Err(ConfigError::Mail(
            "smtp_url (BERTH_SMTP_URL) needs public_url (BERTH_PUBLIC_URL): e-mails link back \
             to the portal"
                .to_owned(),
        ));
    };
    berth_app::backend::mail::MailChannel::smtp(smtp_url, raw.mail_from.as_deref(), public_url)
        .map(|channel| Some(std::sync::Arc::new(channel)))
        .map_err(ConfigError::Mail)
}

/// The charge modes offered and their timing.
fn charge_policy(raw: &RawSettings) -> Result<ChargePolicy, ConfigError> {
    let parse = |raw: &str| {
        ChargeMode::parse(raw.trim()).ok_or_else(|| {
            ConfigError::Charge(format!(
                "`{raw}` is not a charge mode (at_booking or before_start)"
            ))
        })
    };
    let modes = raw
        .charge_modes
        .items()
        .iter()
        .map(|item| parse(item))
        .collect::<Result<Vec<_>, _>>()?;
    if modes.is_empty() {
        return Err(ConfigError::Charge(
            "charge_modes names no mode (at_booking, before_start)".to_owned(),
        ));
    }
    let default = parse(&raw.charge_default)?;
    if !modes.contains(&default) {
        return Err(ConfigError::Charge(format!(
            "charge_default {} is not one of charge_modes",
            default.as_str()
        )));
    }
    if raw.charge_lead_minutes > 24 * 60 * 30
        || raw.release_unpaid_minutes > raw.charge_lead_minutes
        || !(1..=3600).contains(&raw.payment_job_seconds)
        || !(1..=3600).contains(&raw.notify_job_seconds)
        || !(1..=3600).contains(&raw.idle_job_seconds)
        || !(1..=3600).contains(&raw.watch_job_seconds)
        || !(1..=1440).contains(&raw.prepare_ahead_minutes)
    {
        return Err(ConfigError::Charge(
            "charge_lead_minutes at most 43200, release_unpaid_minutes at most \
             charge_lead_minutes, payment_job_seconds 1-3600, notify_job_seconds 1-3600, \
             idle_job_seconds 1-3600, watch_job_seconds 1-3600, prepare_ahead_minutes 1-1440"
                .to_owned(),
        ));
    }
    Ok(ChargePolicy {
        at_booking: modes.contains(&ChargeMode::AtBooking),
        before_start: modes.contains(&ChargeMode::BeforeStart),
        default,
        lead: chrono::TimeDelta::minutes(i64::from(raw.charge_lead_minutes)),
        release_before: chrono::TimeDelta::minutes(i64::from(raw.release_unpaid_minutes)),
    })
}

fn database_settings(
    url: Option<&str>,
    data_dir: &Path,
    max_connections: u32,
) -> Result<DatabaseSettings, ConfigError> {
    let Some(url) = url.map(str::trim).filter(|url| !url.is_empty()) else {
        let file = data_dir.join("berth.db");
        return Ok(DatabaseSettings {
            url: SecretString::from(format!("sqlite://{}?mode=rwc", file.display())),
            backend: Backend::Sqlite,
            create_dir: Some(data_dir.to_owned()),
            max_connections,
        });
    };
    if url.starts_with("sqlite:") {
        // Create the file if it is missing (its directory must exist), unless a mode is given.
        let url = if url.contains("mode=") {
            url.to_owned()
        } else if url.contains('?') {
            format!("{url}&mode=rwc")
        } else {
            format!("{url}?mode=rwc")
        };
        Ok(DatabaseSettings {
            url: SecretString::from(url),
            backend: Backend::Sqlite,
            create_dir: None,
            max_connections,
        })
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(DatabaseSettings {
            url: SecretString::from(url.to_owned()),
            backend: Backend::Postgres,
            create_dir: None,
            max_connections,
        })
    } else {
        Err(ConfigError::DatabaseUrl(redact(url)))
    }
}

/// One `trusted_proxies` entry: a network (`10.0.0.0/8`) or one address (`192.0.2.7`).
fn trusted_proxy(item: &str) -> Result<ipnet::IpNet, ConfigError> {
    item.parse::<ipnet::IpNet>()
        .or_else(|_| item.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| ConfigError::TrustedProxy(item.to_owned()))
}

/// Validates one `[oidc.<id>]` table.
fn oidc_provider(
    id: &str,
    raw: &RawOidcProvider,
    public_url: Option<&str>,
) -> Result<OidcProviderSettings, ConfigError> {
    let problem = |problem: String| ConfigError::Oidc {
        id: id.to_owned(),
        problem,
    };
    if id.is_empty()
        || id.len() > 32
        || !id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(problem(
            "the id must be 1 to 32 characters a-z, 0-9 or -".into(),
        ));
    }
    let issuer = url::Url::parse(raw.issuer.trim())
        .map_err(|err| problem(format!("issuer `{}` is not a URL: {err}", raw.issuer)))?;
    let loopback = matches!(issuer.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
    if issuer.scheme() != "https" && !(issuer.scheme() == "http" && loopback) {
        return Err(problem(format!(
            "issuer `{}` must be an https:// URL (http:// only on localhost)",
            raw.issuer
        )));
    }
    // Kept exactly as written: the discovery document and the ID tokens must name the issuer
    // the same way, character for character.
    let issuer = IssuerUrl::new(raw.issuer.trim().to_owned())
        .map_err(|err| problem(format!("issuer `{}`: {err}", raw.issuer)))?;
    if raw.client_id.trim().is_empty() {
        return Err(problem("client_id is empty".into()));
    }
    let redirect = match (raw.redirect_url.as_deref(), public_url) {
        (Some(redirect), _) => redirect.trim().to_owned(),
        (None, Some(public)) => format!(
            "{}/auth/oidc/{id}/callback",
            public.trim().trim_end_matches('/')
        ),
        (None, None) => {
            return Err(problem(
                "set public_url (BERTH_PUBLIC_URL) or oidc.<id>.redirect_url, so the provider \
                 knows where to send users back"
                    .into(),
            ));
        }
    };
    let expected_path = format!("/auth/oidc/{id}/callback");
    let redirect_url = url::Url::parse(&redirect)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https") && url.path() == expected_path)
        .ok_or_else(|| {
            problem(format!(
                "redirect_url `{redirect}` must be an http(s) URL ending in {expected_path}"
            ))
        })?;
    Ok(OidcProviderSettings {
        id: id.to_owned(),
        label: raw
            .label
            .clone()
            .filter(|label| !label.trim().is_empty())
            .unwrap_or_else(|| id.to_owned()),
        issuer,
        client_id: raw.client_id.trim().to_owned(),
        client_secret: raw
            .client_secret
            .clone()
            .filter(|secret| !secret.is_empty())
            .map(SecretString::from),
        redirect_url: RedirectUrl::from_url(redirect_url),
        scopes: raw
            .scopes
            .clone()
            .unwrap_or_else(|| vec!["email".to_owned(), "profile".to_owned()]),
        trust_email: raw.trust_email,
    })
}

fn currency(code: &str) -> Result<Currency, ConfigError> {
    let found = iso_currency::Currency::from_code(&code.trim().to_ascii_uppercase())
        .ok_or_else(|| ConfigError::UnknownCurrency(code.to_owned()))?;
    let exponent = found.exponent().unwrap_or(0);
    let exponent =
        u8::try_from(exponent).map_err(|_| ConfigError::UnknownCurrency(code.to_owned()))?;
    Ok(Currency::new(
        found.code(),
        &found.symbol().symbol,
        exponent,
    )?)
}

/// Query parameters of a database URL that carry a secret (libpq's `password` and
/// `sslpassword`), compared without regard to case.
const SECRET_PARAMETERS: [&str; 2] = ["password", "sslpassword"];

/// Replaces the password of a URL with `***`, in the user part (`user:secret@host`) and in
/// query parameters (`?password=secret`). A URL that does not parse keeps only its scheme.
pub fn redact(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return match url.split_once("://") {
            Some((scheme, _)) => format!("{scheme}://***"),
            None => "***".to_owned(),
        };
    };
    let secret = |key: &str| {
        SECRET_PARAMETERS
            .iter()
            .any(|s| key.eq_ignore_ascii_case(s))
    };
    let in_query = parsed.query_pairs().any(|(key, _)| secret(&key));
    if parsed.password().is_none() && !in_query {
        return url.to_owned();
    }
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some("***"));
    }
    if in_query {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(key, value)| {
                let value = if secret(&key) {
                    "***".to_owned()
                } else {
                    value.into_owned()
                };
                (key.into_owned(), value)
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}

fn one_line(err: &figment::Error) -> String {
    err.to_string().replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_give_an_embedded_database_in_the_data_directory_with_demo_on() {
        let config = Config::from_raw(RawSettings::default()).unwrap();
        assert_eq!(config.bind.to_string(), "127.0.0.1:3000");
        assert_eq!(config.database.backend, Backend::Sqlite);
        assert_eq!(
            config.database.url.expose_secret(),
            "sqlite://data/berth.db?mode=rwc"
        );
        assert!(config.demo);
        assert_eq!(config.portal.currency.code(), "USD");
    }

    #[test]
    fn trusted_proxies_are_addresses_or_networks() {
        let config = Config::from_raw(RawSettings {
            trusted_proxies: TextList::Joined("10.0.0.0/8, 192.0.2.7 ::1".into()),
            ..RawSettings::default()
        })
        .unwrap();
        let expected: Vec<ipnet::IpNet> = ["10.0.0.0/8", "192.0.2.7/32", "::1/128"]
            .iter()
            .map(|n| n.parse().unwrap())
            .collect();
        assert_eq!(config.rate_limit.trusted_proxies, expected);
        let err = Config::from_raw(RawSettings {
            trusted_proxies: TextList::List(vec!["proxy.internal".into()]),
            ..RawSettings::default()
        })
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("`proxy.internal` is not an IP address"),
            "{err}"
        );
        assert!(
            Config::from_raw(RawSettings::default())
                .unwrap()
                .rate_limit
                .trusted_proxies
                .is_empty()
        );
    }

    #[test]
    fn the_removed_trust_forwarded_for_setting_points_to_trusted_proxies() {
        let err = Config::from_raw(RawSettings {
            trust_forwarded_for: Some(true),
            ..RawSettings::default()
        })
        .unwrap_err();
        assert!(
            err.to_string().contains("replaced by trusted_proxies"),
            "{err}"
        );
    }

    #[test]
    fn redact_hides_passwords_in_the_user_part_and_in_query_parameters() {
        assert_eq!(
            redact("postgres://berth:s3cret@db/berth"),
            "postgres://berth:***@db/berth"
        );
        assert_eq!(
            redact("postgres://db/berth?password=s3cret"),
            "postgres://db/berth?password=***"
        );
        assert_eq!(
            redact("postgres://db/berth?user=x&Password=y&sslmode=require&sslpassword=z"),
            "postgres://db/berth?user=x&Password=***&sslmode=require&sslpassword=***"
        );
        assert_eq!(
            redact("postgresql://db/berth?user=x"),
            "postgresql://db/berth?user=x"
        );
        assert_eq!(
            redact("sqlite://data/berth.db?mode=rwc"),
            "sqlite://data/berth.db?mode=rwc"
        );
        assert_eq!(redact("mysql://u:p@[bad/db"), "mysql://***");
    }

    #[test]
    fn postgres_turns_the_demo_off_unless_asked() {
        let raw = RawSettings {
            database_url: Some("postgres://berth:s3cret@db/berth".into()),
            ..RawSettings::default()
        };
        let config = Config::from_raw(raw.clone()).unwrap();
        assert_eq!(config.database.backend, Backend::Postgres);
        assert!(!config.demo);
        assert_eq!(
            config.database.redacted_url(),
            "postgres://berth:***@db/berth"
        );
        let config = Config::from_raw(RawSettings {
            demo: Some(true),
            ..raw
        })
        .unwrap();
        assert!(config.demo);
    }

    #[test]
    fn bad_values_name_the_setting() {
        let bind = Config::from_raw(RawSettings {
            bind: "localhost".into(),
            ..RawSettings::default()
        });
        assert!(bind.unwrap_err().to_string().contains("BERTH_BIND"));
        let url = Config::from_raw(RawSettings {
            database_url: Some("mysql://x".into()),
            ..RawSettings::default()
        });
        assert!(url.unwrap_err().to_string().contains("BERTH_DATABASE_URL"));
        for value in [0, MAX_POOL_CONNECTIONS + 1, u32::MAX] {
            let pool = Config::from_raw(RawSettings {
                database_max_connections: value,
                ..RawSettings::default()
            });
            let message = pool.unwrap_err().to_string();
            assert!(
                message.contains("BERTH_DATABASE_MAX_CONNECTIONS"),
                "{message}"
            );
            assert!(message.contains(&value.to_string()), "{message}");
        }
        let pool = Config::from_raw(RawSettings {
            database_max_connections: 32,
            database_url: Some("postgres://berth@db/berth".into()),
            ..RawSettings::default()
        })
        .unwrap();
        assert_eq!(pool.database.max_connections, 32);
        assert_eq!(
            Config::from_raw(RawSettings::default())
                .unwrap()
                .database
                .max_connections,
            DEFAULT_MAX_CONNECTIONS
        );
        let currency = Config::from_raw(RawSettings {
            currency: "XXY".into(),
            ..RawSettings::default()
        });
        assert!(currency.unwrap_err().to_string().contains("BERTH_CURRENCY"));
        let log = Config::from_raw(RawSettings {
            log: "=[".into(),
            ..RawSettings::default()
        });
        assert!(log.unwrap_err().to_string().contains("BERTH_LOG"));
    }

    #[test]
    fn sqlite_urls_get_create_mode_unless_they_set_one() {
        let settings =
            database_settings(Some("sqlite:///tmp/x.db"), Path::new("data"), 10).unwrap();
        assert_eq!(settings.url.expose_secret(), "sqlite:///tmp/x.db?mode=rwc");
        let settings =
            database_settings(Some("sqlite:///tmp/x.db?mode=ro"), Path::new("data"), 10).unwrap();
        assert_eq!(settings.url.expose_secret(), "sqlite:///tmp/x.db?mode=ro");
    }

    #[test]
    fn currencies_come_with_their_decimals() {
        assert_eq!(currency("brl").unwrap().exponent(), 2);
        assert_eq!(currency("JPY").unwrap().exponent(), 0);
    }

    fn provider(issuer: &str) -> RawOidcProvider {
        RawOidcProvider {
            label: None,
            issuer: issuer.into(),
            client_id: "berth".into(),
            client_secret: Some("s3cret".into()),
            redirect_url: None,
            scopes: None,
            trust_email: false,
        }
    }

    #[test]
    fn the_dev_sign_in_is_off_unless_asked_and_public_only_when_said_so() {
        let default = Config::from_raw(RawSettings::default()).unwrap();
        assert!(default.demo, "the demo is on with SQLite");
        assert!(!default.portal.dev_sign_in, "but the dev sign-in is not");
        let on = |bind: &str, public: bool| {
            Config::from_raw(RawSettings {
                bind: bind.into(),
                dev_sign_in: Some(true),
                dev_sign_in_public: public,
                ..RawSettings::default()
            })
        };
        assert!(on("127.0.0.1:3000", false).unwrap().portal.dev_sign_in);
        assert!(on("[::1]:3000", false).unwrap().portal.dev_sign_in);
        for bind in ["0.0.0.0:3000", "192.168.1.5:3000", "[::]:3000"] {
            let refused = on(bind, false).unwrap_err().to_string();
            assert!(refused.contains("BERTH_DEV_SIGN_IN_PUBLIC"), "{refused}");
            assert!(refused.contains(bind), "{refused}");
            assert!(on(bind, true).unwrap().portal.dev_sign_in);
        }
        let off_in_public = Config::from_raw(RawSettings {
            bind: "0.0.0.0:3000".into(),
            ..RawSettings::default()
        });
        assert!(!off_in_public.unwrap().portal.dev_sign_in);
    }

    #[test]
    fn a_provider_turns_the_dev_sign_in_off_unless_asked_and_gets_its_redirect_url() {
        let raw = RawSettings {
            public_url: Some("https://berth.example.com/".into()),
            oidc: BTreeMap::from([("corp".to_owned(), provider("https://sso.example.com"))]),
            ..RawSettings::default()
        };
        let config = Config::from_raw(raw.clone()).unwrap();
        assert!(config.demo, "the demo is still on with SQLite");
        assert!(
            !config.portal.dev_sign_in,
            "but no dev sign-in beside a provider"
        );
        assert_eq!(
            config.oidc[0].redirect_url.as_str(),
            "https://berth.example.com/auth/oidc/corp/callback"
        );
        assert_eq!(config.oidc[0].label, "corp");
        assert_eq!(config.oidc[0].scopes, ["email", "profile"]);
        let explicit = Config::from_raw(RawSettings {
            dev_sign_in: Some(true),
            ..raw
        })
        .unwrap();
        assert!(explicit.portal.dev_sign_in);
    }

    #[test]
    fn bad_provider_ids_and_redirects_are_refused() {
        let with = |id: &str, redirect: Option<&str>| {
            let mut provider = provider("https://sso.example.com");
            provider.redirect_url = redirect.map(str::to_owned);
            Config::from_raw(RawSettings {
                public_url: Some("https://berth.example.com".into()),
                oidc: BTreeMap::from([(id.to_owned(), provider)]),
                ..RawSettings::default()
            })
        };
        assert!(
            with("Corp SSO", None)
                .unwrap_err()
                .to_string()
                .contains("a-z, 0-9")
        );
        let wrong_path = with("corp", Some("https://berth.example.com/callback"));
        assert!(
            wrong_path
                .unwrap_err()
                .to_string()
                .contains("/auth/oidc/corp/callback")
        );
        assert!(
            with(
                "corp",
                Some("https://berth.example.com/auth/oidc/corp/callback")
            )
            .is_ok()
        );
    }

    #[test]
    fn admin_emails_come_as_a_list_or_one_string() {
        let joined = TextList::Joined(" A@Example.com, b@example.com;c@example.com ".into());
        assert_eq!(
            joined.items(),
            ["A@Example.com", "b@example.com", "c@example.com"]
        );
        let config = Config::from_raw(RawSettings {
            admin_emails: TextList::List(vec!["Ops@Example.com".into()]),
            ..RawSettings::default()
        })
        .unwrap();
        assert_eq!(config.portal.admin_emails[0].as_str(), "ops@example.com");
    }
}
