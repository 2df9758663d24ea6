//! Server functions: the API the pages call. Each one starts from [`context`] (caller, state,
//! time), parses its input into domain types, calls `backend::` services (never the database
//! layer) and returns; texts come from `text`.

#[cfg(feature = "ssr")]
pub mod context;
pub mod env_profiles;
pub mod fleet;
pub mod forms;
pub mod incidents;
pub mod inventory;
pub mod ledger;
pub mod maintenance;
pub mod node_access;
pub mod nodes;
pub mod notify;
pub mod profile;
pub mod reports;
pub mod reservations;
pub mod session;
pub mod teams;
pub mod telemetry;
pub mod watches;
