//! A panic in any handler becomes an ordinary 500 and an error log line, instead of a connection
//! closed without an answer: `{"error": "internal", …}` for the JSON API, server functions and
//! forms, a short page in the reader's language for page requests.

use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use berth_app::error::AppError;
use berth_app::i18n::t_string;
use berth_app::text::language::in_language_of;
use futures_util::FutureExt;
use leptos_i18n::Locale as _;
use std::any::Any;
use std::panic::AssertUnwindSafe;

/// Middleware: runs the rest of the stack and turns a panic into a 500.
pub async fn catch_panic(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    // A page request keeps its headers for the error page's language.
    let page = wants_page(&method, &path, request.headers()).then(|| request.headers().clone());
    match AssertUnwindSafe(next.run(request)).catch_unwind().await {
        Ok(response) => response,
        Err(payload) => {
            tracing::error!(
                http.method = %method,
                http.path = %path,
                panic.message = %message(payload.as_ref()),
                "a handler panicked"
            );
            match page {
                Some(headers) => error_page(&headers),
                None => AppError::Internal.into_response(),
            }
        }
    }
}

/// What the panic said (`panic!("…")` gives a `&str` or a `String`).
fn message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// A browser loading a page: a `GET` outside the API that accepts HTML.
fn wants_page(method: &Method, path: &str, headers: &HeaderMap) -> bool {
    matches!(*method, Method::GET | Method::HEAD)
        && !path.starts_with("/api/")
        && headers
            .get(header::ACCEPT)
            .and_then(|accept| accept.to_str().ok())
            .is_some_and(|accept| accept.contains("text/html"))
}

/// The 500 page in the reader's language (cookie, else `Accept-Language`): plain HTML with the
/// site's style sheet.
fn error_page(headers: &HeaderMap) -> Response {
    let (lang, title, text) = in_language_of(headers, |i18n| {
        (
            i18n.get_locale().as_str(),
            t_string!(i18n, error_title).to_string(),
            t_string!(i18n, error_internal).to_string(),
        )
    });
    let html = format!(
        "<!DOCTYPE html><html lang=\"{lang}\"><head><meta charset=\"utf-8\"/>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\
         <title>{title} · Berth</title><link rel=\"stylesheet\" href=\"/pkg/berth.css\"/></head>\
         <body><main id=\"main\"><h1>{title}</h1><p class=\"error\" role=\"alert\">{text}</p>\
         <p><a href=\"/\">Berth</a></p></main></body></html>"
    );
    (StatusCode::INTERNAL_SERVER_ERROR, Html(html)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_panic_message_is_read_from_str_and_string_payloads() {
        let text: Box<dyn Any + Send> = Box::new("boom");
        assert_eq!(message(text.as_ref()), "boom");
        let owned: Box<dyn Any + Send> = Box::new(String::from("owned boom"));
        assert_eq!(message(owned.as_ref()), "owned boom");
        let other: Box<dyn Any + Send> = Box::new(7_u8);
        assert_eq!(message(other.as_ref()), "(no message)");
    }
}
