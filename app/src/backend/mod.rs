//! Server-only code (`ssr`): application state, database access and start-up jobs. Every
//! function takes its connection or transaction explicitly.

pub mod auth;
pub mod backfill;
pub mod calendar_feeds;
pub mod calendar_file;
pub mod clock;
pub mod db;
pub mod demo;
pub mod entity;
pub mod env_profiles;
pub mod fleet;
pub mod input;
pub mod inventory;
pub mod ledger;
pub mod mail;
pub mod maintenance;
pub mod metrics;
pub mod node_access;
pub mod notify;
pub mod payment_job;
pub mod profile;
pub mod quotas;
pub mod reclaim;
pub mod reports;
pub mod reservations;
pub mod retry;
pub mod session;
pub mod state;
pub mod team_access;
pub mod teams;
pub mod telemetry;
pub mod viewer;
pub mod watches;
pub mod webhooks;
pub mod words;
pub mod workspaces;
