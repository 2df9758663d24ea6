//! Server functions whose arguments cannot be read: Leptos answers them with status 500 before
//! the function runs (so it cannot set its own status), with Berth's error in the body. The
//! status is set here from that error, like every other answer of a server function: a number
//! too large or a missing field is the caller's input, a 422.

use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use berth_app::error::AppError;

/// The largest error body read back (Berth's errors are a few hundred bytes).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Middleware: a server function's 500 that carries a client error gets that error's status.
pub async fn client_errors_as_4xx(request: Request, next: Next) -> Response {
    let is_server_fn =
        request.uri().path().starts_with("/api/") && !request.uri().path().starts_with("/api/v1/");
    let response = next.run(request).await;
    if !is_server_fn || response.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_ERROR_BODY).await else {
        parts.status = StatusCode::INTERNAL_SERVER_ERROR;
        return Response::from_parts(parts, Body::empty());
    };
    if let Ok(error) = serde_json::from_slice::<AppError>(&bytes)
        && let Ok(status) = StatusCode::from_u16(error.status_code())
        && status.is_client_error()
    {
        parts.status = status;
    }
    Response::from_parts(parts, Body::from(bytes))
}
