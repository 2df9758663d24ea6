//! SeaORM entities, one module per table. Only `server::db` uses them.

pub mod gpu;
pub mod node;
pub mod session;
