//! Berth's Leptos application, compiled twice: with `ssr` for the server (pages rendered to HTML,
//! server functions, data access) and with `hydrate` for the browser (WASM that makes the pages
//! interactive).
//!
//! - [`domain`]: pure rules and types shared by both sides; no I/O.
//! - [`api`]: `#[server]` functions, thin wrappers over [`backend`].
//! - [`backend`] (`ssr` only): application state and database access.
//! - [`text`]: data put into words in the reader's language.
//! - [`pages`] and [`components`]: the user interface.

// Leptos view types nest deeply; the default limit (128) is too small for whole pages.
#![recursion_limit = "512"]

pub mod api;
#[cfg(feature = "ssr")]
pub mod backend;
pub mod components;
pub mod domain;
pub mod error;
pub mod pages;
pub mod text;

mod app;

pub use app::{App, shell};

include!(concat!(env!("OUT_DIR"), "/i18n/mod.rs"));
