//! Reusable parts of pages.

pub mod access_events;
pub mod calendar;
pub mod error;
pub mod inventory;
pub mod layout;
pub mod ssh_keys;
pub mod table;
pub mod telemetry;
