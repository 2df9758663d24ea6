//! What the HTTP tests share: starting the application against a fresh database (`app`), users
//! of each kind (`clients`), HTTP wrappers (`http`), fixtures, times on the booking grid, and the
//! invariants every test may check at its end (capacity, a balanced ledger).

mod app;
mod clients;
mod fixtures;
mod http;
mod invariants;
mod time;

pub use app::*;
pub(crate) use clients::*;
pub(crate) use fixtures::*;
pub(crate) use http::*;
pub(crate) use invariants::*;
pub(crate) use time::*;
