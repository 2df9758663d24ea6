//! Plain HTTP endpoints beside the Leptos pages: health checks, the language form, request logs.

pub mod api;
pub mod auth;
pub mod csrf;
pub mod health;
pub mod locale;
pub mod request_log;
