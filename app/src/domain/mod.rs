//! Pure domain code, compiled for the server and the browser: validated types and rules with no
//! I/O. Everything here is unit-tested inline.

pub mod api_token;
pub mod audit;
pub mod bars;
pub mod calendar;
pub mod chart;
pub mod date_range;
pub mod diagnosis;
pub mod evidence;
pub mod failover;
pub mod gpu;
pub mod incident;
pub mod inventory;
pub mod lease;
pub mod ledger;
pub mod maintenance;
pub mod money;
pub mod notify;
pub mod numbers;
pub mod payment;
pub mod problem;
pub mod profile;
pub mod quota;
pub mod reclaim;
pub mod report;
pub mod reservation;
pub mod return_to;
pub mod schedule;
pub mod sign_in;
pub mod team;
pub mod telemetry;
pub mod time_text;
pub mod user;
pub mod watch;
pub mod workspace;
pub mod zone;
