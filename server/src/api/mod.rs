//! Berth's HTTP API for programs (`/api/v1`). Pages call server functions instead.

pub mod v1;
