//! Server functions: the API the pages call. Each one gets the state, parses its input into
//! domain types, calls one `server::` function and returns.

pub mod fleet;
pub mod inventory;
pub mod ledger;
pub mod maintenance;
pub mod nodes;
pub mod profile;
pub mod reports;
pub mod reservations;
pub mod session;
pub mod teams;
pub mod telemetry;
