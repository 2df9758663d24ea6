//! Routed pages, one per file.

pub mod audit;
pub mod calendar;
pub mod credits;
pub mod deliveries;
pub mod env_profiles;
pub mod fleet;
pub mod gpu;
pub mod inbox;
pub mod incident;
pub mod inventory;
pub mod maintenance;
pub mod nodes;
pub mod not_found;
pub mod payments;
pub mod profile;
pub mod reports;
pub mod reservation;
pub mod reservations;
pub mod sign_in;
pub mod team;
pub mod team_rules;
pub mod teams;
pub mod wallet;
pub mod watches;
