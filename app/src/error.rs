//! `AppError`, the one error type that server functions return and the UI shows.
//!
//! It crosses the wire as JSON, so it carries only what a client may see: `Internal` hides the
//! cause, which is logged once on the server where it happened.

use leptos::server_fn::codec::JsonEncoding;
use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::{Deserialize, Serialize};

/// An error a user or API client can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AppError {
    /// Input failed validation; `field` names the input.
    ///
    /// This and [`AppError::Conflict`] reach the browser only as [`AppError::Explained`]: the
    /// browser build neither reads them nor carries the English problem texts, which would weigh
    /// on every island's WebAssembly.
    #[cfg_attr(not(feature = "hydrate"), error("{field}: {problem}"))]
    #[cfg_attr(
        feature = "hydrate",
        error("{field}: invalid"),
        serde(skip_deserializing)
    )]
    Validation {
        /// The offending input.
        field: String,
        /// What is wrong with it.
        problem: crate::domain::problem::Problem,
    },
    /// No valid session or token.
    #[error("sign-in required")]
    Unauthorized,
    /// The API token presented has expired (401, like no credentials, but saying why).
    #[error(
        "the API token has expired: create a new one on your profile page or with `berth token create`"
    )]
    TokenExpired,
    /// Signed in, but lacking the role.
    #[error("not allowed")]
    Forbidden,
    /// The thing asked for does not exist (or is not visible to the caller).
    #[error("not found: {0}")]
    NotFound(String),
    /// The request clashes with the current state.
    #[cfg_attr(not(feature = "hydrate"), error("conflict: {0}"))]
    #[cfg_attr(feature = "hydrate", error("conflict"), serde(skip_deserializing))]
    Conflict(crate::domain::problem::Problem),
    /// A booking lost: what is taken when, and the nearest window that fits instead.
    #[error("conflict: {0}")]
    Clash(Box<crate::domain::reservation::Clash>),
    /// Too many attempts from this client address; try again after the given seconds.
    #[error("too many requests, try again in {0} s")]
    TooManyRequests(u64),
    /// The request's body is larger than the endpoint accepts.
    #[error("the request body is too large")]
    TooLarge,
    /// The database or another dependency is not reachable right now.
    #[error("service unavailable, try again shortly")]
    Unavailable,
    /// A bug or an unexpected failure; details are in the server log.
    #[error("internal error")]
    Internal,
    /// The request did not reach the server function or its answer could not be read.
    #[error("request failed: {0}")]
    Transport(String),
    /// A [`AppError::Validation`] or [`AppError::Conflict`] already put into the reader's language
    /// on the server. Server functions answer this, so pages in the browser need no translations
    /// of problems of their own.
    #[error("{message}")]
    Explained {
        /// 422 (invalid input) or 409 (clash with the current state).
        status: u16,
        /// The offending input, for invalid input.
        field: Option<String>,
        /// The problem's stable code.
        code: String,
        /// What is wrong, in the reader's language.
        message: String,
    },
}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        match value {
            // The request's arguments could not be read (a number too large for its type, a
            // missing field): the caller's input, a 422 like any other unreadable field.
            ServerFnErrorErr::Args(detail) | ServerFnErrorErr::MissingArg(detail) => {
                AppError::invalid(
                    "request",
                    crate::domain::problem::Problem::Unreadable { detail },
                )
            }
            other => AppError::Transport(other.to_string()),
        }
    }
}

impl AppError {
    /// Invalid input in `field`.
    pub fn invalid(field: &str, problem: crate::domain::problem::Problem) -> Self {
        AppError::Validation {
            field: field.into(),
            problem,
        }
    }

    /// Logs `cause` with its chain and returns [`AppError::Internal`], which tells the client
    /// nothing more.
    #[cfg(feature = "ssr")]
    pub fn internal(cause: impl std::error::Error) -> Self {
        tracing::error!(error.chain = %error_chain(&cause), "internal error");
        AppError::Internal
    }

    /// Seconds after which the same request may be sent again (`Retry-After`): when the rate
    /// limit allows, or (503) shortly, long enough for a burst to drain from the connection pool;
    /// a write resent with its Idempotency-Key is done once.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            AppError::TooManyRequests(seconds) => Some(*seconds),
            AppError::Unavailable => Some(1),
            _ => None,
        }
    }

    /// HTTP status for plain routes and server-function responses.
    pub fn status_code(&self) -> u16 {
        match self {
            AppError::Validation { .. } => 422,
            AppError::Unauthorized | AppError::TokenExpired => 401,
            AppError::Forbidden => 403,
            AppError::NotFound(_) => 404,
            AppError::Conflict(_) | AppError::Clash(_) => 409,
            AppError::TooManyRequests(_) => 429,
            AppError::TooLarge => 413,
            AppError::Unavailable => 503,
            AppError::Internal | AppError::Transport(_) => 500,
            AppError::Explained { status, .. } => *status,
        }
    }
}

/// `error: source: source …` in one line, for logs.
#[cfg(feature = "ssr")]
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut chain = err.to_string();
    let mut source = err.source();
    while let Some(next) = source {
        chain.push_str(": ");
        chain.push_str(&next.to_string());
        source = next.source();
    }
    chain
}

#[cfg(feature = "ssr")]
impl From<sea_orm::DbErr> for AppError {
    fn from(err: sea_orm::DbErr) -> Self {
        match err {
            sea_orm::DbErr::ConnectionAcquire(_) | sea_orm::DbErr::Conn(_) => {
                tracing::warn!(error = %err, "database unavailable");
                AppError::Unavailable
            }
            other => AppError::internal(other),
        }
    }
}

/// Plain HTTP routes (the JSON API, health, forms) answer errors as
/// `{"error": "<kind>", "message": "<text>"}` with the matching status.
#[cfg(feature = "ssr")]
impl axum::response::IntoResponse for AppError {
    fn into_response(self) -> axum::response::Response {
        let status = axum::http::StatusCode::from_u16(self.status_code())
            .unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
        let kind = match &self {
            AppError::Validation { .. } => "validation",
            AppError::Unauthorized | AppError::TokenExpired => "unauthorized",
            AppError::Forbidden => "forbidden",
            AppError::NotFound(_) => "not_found",
            AppError::Conflict(_) | AppError::Clash(_) => "conflict",
            AppError::TooManyRequests(_) => "too_many_requests",
            AppError::TooLarge => "too_large",
            AppError::Unavailable => "unavailable",
            AppError::Internal | AppError::Transport(_) => "internal",
            AppError::Explained { status: 422, .. } => "validation",
            AppError::Explained { .. } => "conflict",
        };
        let mut body = serde_json::json!({ "error": kind, "message": self.to_string() });
        match &self {
            AppError::Validation { field, problem } => {
                body["field"] = serde_json::json!(field);
                body["code"] = serde_json::json!(problem.code());
            }
            AppError::Conflict(problem) => {
                body["code"] = serde_json::json!(problem.code());
                // The problem's numbers (what is missing, what the budget allows) for clients.
                body["details"] = serde_json::to_value(problem).unwrap_or_default();
            }
            AppError::Explained { field, code, .. } => {
                if let Some(field) = field {
                    body["field"] = serde_json::json!(field);
                }
                body["code"] = serde_json::json!(code);
            }
            AppError::Clash(clash) => {
                body["clash"] = serde_json::to_value(clash).unwrap_or_default();
            }
            AppError::TokenExpired => body["code"] = serde_json::json!("token_expired"),
            _ => {}
        }
        let body = axum::Json(body);
        let mut response = (status, body).into_response();
        if let Some(seconds) = self.retry_after() {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        if self == AppError::Unauthorized {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        if self == AppError::TokenExpired {
            // RFC 6750: the client should get a new token, not retry.
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static(
                    "Bearer error=\"invalid_token\", error_description=\"the token has expired\"",
                ),
            );
        }
        response
    }
}
