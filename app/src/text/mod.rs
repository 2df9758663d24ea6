//! Everything that turns data into words in the reader's language: money, memory, hours and
//! dates; why a request was refused; and the texts the server puts together for the pages.
//! Services (`backend`) never build text; pages and server functions call in here.

#[cfg(feature = "ssr")]
pub mod booking;
#[cfg(feature = "ssr")]
pub mod email;
pub mod failover;
pub mod format;
pub mod incident;
#[cfg(feature = "ssr")]
pub mod language;
pub mod ledger;
#[cfg(feature = "ssr")]
pub mod notify;
pub mod problem;
#[cfg(feature = "ssr")]
pub mod report;
