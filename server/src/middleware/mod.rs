//! What runs around every request: the request log, panics turned into 500s, security headers,
//! cross-site protection, the sign-in rate limit and the sign-in guard; and the language switch
//! for browsers without JavaScript.

pub mod csrf;
pub mod guard;
pub mod locale;
pub mod panic;
pub mod rate_limit;
pub mod request_log;
pub mod security_headers;
pub mod server_fn_status;
