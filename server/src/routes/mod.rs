//! Plain HTTP endpoints beside the Leptos pages (health checks, sign-in, the language form, the
//! JSON API) and the middleware around everything (sign-in guard, rate limit, cross-site
//! protection, request log).

pub mod agent;
pub mod api;
pub mod auth;
pub mod csrf;
pub mod csv_export;
pub mod fleet;
pub mod guard;
pub mod health;
pub mod ledger;
pub mod locale;
pub mod maintenance;
pub mod panic;
pub mod quotas;
pub mod rate_limit;
pub mod reports;
pub mod request_log;
pub mod reservations;
pub mod security_headers;
pub mod teams;
pub mod telemetry;
