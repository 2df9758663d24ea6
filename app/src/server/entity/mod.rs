//! SeaORM entities, one module per table. Only `server::db` uses them.

pub mod api_token;
pub mod gpu;
pub mod identity;
pub mod node;
pub mod session;
pub mod team;
pub mod team_member;
pub mod user;
