//! One log line per request: method, path, status and duration in milliseconds.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use std::time::Instant;

/// Middleware that logs every request after its response is produced.
pub async fn log_request(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    let status = response.status().as_u16();
    if response.status().is_server_error() {
        tracing::warn!(http.method = %method, http.path = %path, http.status = status, duration_ms, "request");
    } else {
        tracing::info!(http.method = %method, http.path = %path, http.status = status, duration_ms, "request");
    }
    response
}
