//! SeaORM entities, one module per table. Only `backend::db` uses them.

pub mod api_token;
pub mod audit_entry;
pub mod fleet_usage_hour;
pub mod gpu;
pub mod gpu_event;
pub mod gpu_live;
pub mod gpu_rollup;
pub mod gpu_sample;
pub mod idempotency_key;
pub mod identity;
pub mod ledger_account;
pub mod ledger_entry;
pub mod ledger_transaction;
pub mod maintenance_window;
pub mod node;
pub mod node_token;
pub mod reservation;
pub mod reservation_gpu;
pub mod reservation_usage;
pub mod session;
pub mod team;
pub mod team_invitation;
pub mod team_member;
pub mod team_quota;
pub mod telemetry_state;
pub mod user;
