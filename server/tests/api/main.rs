//! HTTP integration tests: each test starts the real application on port 0 against a fresh
//! database — an SQLite file and a PostgreSQL database — and talks to it like a browser.

mod calendar;
mod calendar_feeds;
mod cli;
mod csrf;
mod email;
mod env_profiles;
mod events;
mod failover;
mod health;
mod helpers;
mod idle_reclaim;
mod input_ranges;
mod inventory;
mod ledger;
mod locale;
mod maintenance;
mod migrations;
mod node_access;
mod notify;
mod oidc;
mod oidc_provider;
mod payments;
mod profile;
mod properties;
mod quotas;
mod reports;
mod reservations;
mod security_headers;
mod sessions;
mod sign_in;
mod teams;
mod telemetry;
mod tokens;
mod webhooks;
mod workspaces;
