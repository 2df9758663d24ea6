//! Berth's server: command line, settings, logging and the axum application.
//!
//! `startup` builds the state and the application, `router` the routes: `ops` (health, metrics),
//! `auth` (sign-in), `api::v1` (the JSON API) and the Leptos pages and server functions, inside
//! `middleware`.

// Leptos view types nest deeply; the default limit (128) is too small for whole pages.
#![recursion_limit = "256"]

pub mod admin;
pub mod agent;
pub mod api;
pub mod auth;
pub mod calendar;
pub mod card_reconcile;
pub mod cli;
pub mod configuration;
pub mod logging;
pub mod middleware;
pub mod notify;
pub mod ops;
pub mod payments;
pub mod reclaim;
pub mod router;
pub mod startup;
pub mod watches;
