//! Berth's server: command line, settings, logging and the axum application.
//!
//! `startup` builds the router and state; `routes` holds the plain (non-Leptos) HTTP endpoints.

// Leptos view types nest deeply; the default limit (128) is too small for whole pages.
#![recursion_limit = "256"]

pub mod admin;
pub mod agent;
pub mod cli;
pub mod configuration;
pub mod logging;
pub mod metrics;
pub mod payments;
pub mod routes;
pub mod startup;
