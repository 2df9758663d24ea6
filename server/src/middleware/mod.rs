//! What runs around every request: the request log, panics turned into 500s, security headers,
//! cross-site protection, the sign-in rate limit, the sign-in guard, the calendar page's cache
//! and a reactive owner of the request's own; and the language switch for browsers without
//! JavaScript.

pub mod csrf;
pub mod guard;
pub mod locale;
pub mod page_cache;
pub mod panic;
pub mod rate_limit;
pub mod request_log;
pub mod request_owner;
pub mod security_headers;
pub mod server_fn_status;
