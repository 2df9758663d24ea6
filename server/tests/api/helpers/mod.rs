//! What the HTTP tests share: starting the application against a fresh database (`app`), users
//! of each kind (`clients`), HTTP wrappers (`http`), fixtures, times on the booking grid, and the
//! invariants every test may check at its end (capacity, a balanced ledger), and a real SMTP
//! server for the e-mail tests (`smtp`), and a GPU host with the real agent (`node`).

mod app;
mod clients;
mod fixtures;
mod http;
mod invariants;
mod node;
mod receiver;
mod smtp;
mod time;

pub use app::*;
pub(crate) use clients::*;
pub(crate) use fixtures::*;
pub(crate) use http::*;
pub(crate) use invariants::*;
pub(crate) use node::*;
pub(crate) use receiver::*;
pub(crate) use smtp::*;
pub(crate) use time::*;
