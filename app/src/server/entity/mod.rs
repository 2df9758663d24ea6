//! SeaORM entities, one module per table. Only `server::db` uses them.

pub mod api_token;
pub mod gpu;
pub mod identity;
pub mod maintenance_window;
pub mod node;
pub mod reservation;
pub mod reservation_gpu;
pub mod session;
pub mod team;
pub mod team_member;
pub mod user;
