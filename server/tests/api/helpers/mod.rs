//! What the HTTP tests share: starting the application against a fresh database (`app`), users
//! of each kind (`clients`), HTTP wrappers (`http`), fixtures, times on the booking grid, and the
//! invariants every test may check at its end (capacity, a balanced ledger), and a real SMTP
//! server for the e-mail tests (`smtp`), a GPU host with the real agent (`node`), and moto's S3 server (`s3`).

mod app;
mod clients;
mod fixtures;
mod http;
mod invariants;
mod node;
mod processes;
mod receiver;
mod s3;
mod smtp;
mod stripe;
mod time;

pub use app::*;
pub(crate) use clients::*;
pub(crate) use fixtures::*;
pub(crate) use http::*;
pub(crate) use invariants::*;
pub(crate) use node::*;
pub use processes::*;
pub(crate) use receiver::*;
pub(crate) use s3::*;
pub(crate) use smtp::*;
pub(crate) use stripe::*;
pub(crate) use time::*;
