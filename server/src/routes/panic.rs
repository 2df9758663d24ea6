//! A panic in any handler becomes an ordinary 500 and an error log line, instead of a connection
//! closed without an answer: `{"error": "internal", …}` for the JSON API, server functions and
//! forms, a short page in the reader's language for page requests.

use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use berth_app::error::AppError;
use berth_app::i18n::{Locale, td_string};
use futures_util::FutureExt;
use leptos_i18n::Locale as _;
use std::any::Any;
use std::panic::AssertUnwindSafe;

/// Middleware: runs the rest of the stack and turns a panic into a 500.
pub async fn catch_panic(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let page = wants_page(&method, &path, request.headers());
    let locale = page.then(|| locale(request.headers()));
    match AssertUnwindSafe(next.run(request)).catch_unwind().await {
        Ok(response) => response,
        Err(payload) => {
            tracing::error!(
                http.method = %method,
                http.path = %path,
                panic.message = %message(payload.as_ref()),
                "a handler panicked"
            );
            match locale {
                Some(locale) => error_page(locale),
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

/// The reader's language: the language cookie, else `Accept-Language`, else English.
fn locale(headers: &HeaderMap) -> Locale {
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == crate::routes::locale::LOCALE_COOKIE)
        .map(|(_, value)| value.to_owned());
    let accept = headers
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(',').next())
        .map(|first| first.trim().to_owned());
    cookie
        .into_iter()
        .chain(accept)
        .find_map(|wanted| {
            Locale::get_all().iter().copied().find(|locale| {
                let name = locale.as_str();
                let primary = |tag: &str| tag.split('-').next().unwrap_or_default().to_owned();
                wanted.eq_ignore_ascii_case(name)
                    || primary(&wanted).eq_ignore_ascii_case(&primary(name))
            })
        })
        .unwrap_or(Locale::en)
}

/// The 500 page: plain HTML with the site's style sheet.
fn error_page(locale: Locale) -> Response {
    let (title, text) = match locale {
        Locale::en => (
            td_string!(Locale::en, error_title),
            td_string!(Locale::en, error_internal),
        ),
        Locale::pt_BR => (
            td_string!(Locale::pt_BR, error_title),
            td_string!(Locale::pt_BR, error_internal),
        ),
    };
    let html = format!(
        "<!DOCTYPE html><html lang=\"{lang}\"><head><meta charset=\"utf-8\"/>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\
         <title>{title} · Berth</title><link rel=\"stylesheet\" href=\"/pkg/berth.css\"/></head>\
         <body><main id=\"main\"><h1>{title}</h1><p class=\"error\" role=\"alert\">{text}</p>\
         <p><a href=\"/\">Berth</a></p></main></body></html>",
        lang = locale.as_str(),
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

    #[test]
    fn the_language_comes_from_the_cookie_then_the_browser() {
        let mut headers = HeaderMap::new();
        assert_eq!(locale(&headers), Locale::en);
        headers.insert(header::ACCEPT_LANGUAGE, "pt-BR,pt;q=0.9".parse().unwrap());
        assert_eq!(locale(&headers), Locale::pt_BR);
        headers.insert(header::COOKIE, "a=b; i18n_pref_locale=en".parse().unwrap());
        assert_eq!(locale(&headers), Locale::en);
    }
}
