//! Security headers on every response: a Content Security Policy with a fresh nonce per response
//! (the only inline script is Leptos's hydration loader, which carries the nonce), `nosniff`,
//! `Referrer-Policy`, HSTS when Berth is reached over HTTPS, and `Cache-Control: no-store` on
//! everything the server computes (pages, server functions, the JSON API, CSV and calendar
//! downloads) so that a shared browser or proxy keeps no copy of a signed-in user's data.
//!
//! The nonce is made here, before the request goes on, and handed to the page render as a
//! request extension (Leptos's `Nonce`); the shell provides it to Leptos (`berth_app::shell`), whose
//! `HydrationScripts` and `leptos_meta` put it on their `<script>` tags.

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use leptos::nonce::Nonce;

/// What the headers depend on.
#[derive(Debug, Clone, Default)]
pub struct SecurityHeaders {
    /// Send `Strict-Transport-Security` (the public URL is `https://…`).
    pub hsts: bool,
    /// With card payments on: where Stripe.js comes from and the API it calls.
    pub stripe: Option<std::sync::Arc<StripeOrigins>>,
}

/// The origins Stripe.js needs on the wallet page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripeOrigins {
    /// Stripe.js itself (`https://js.stripe.com`), which also frames the card field.
    pub js: String,
    /// The API it calls from the browser (`https://api.stripe.com`).
    pub api: String,
}

impl StripeOrigins {
    /// The origins of `js_url` and `api_base`; none if either is not an http(s) URL.
    pub fn of(js_url: &str, api_base: &str) -> Option<Self> {
        let origin = |raw: &str| {
            let url = url::Url::parse(raw).ok()?;
            matches!(url.scheme(), "http" | "https").then(|| url.origin().ascii_serialization())
        };
        Some(Self {
            js: origin(js_url)?,
            api: origin(api_base)?,
        })
    }
}

/// One year, the usual HSTS lifetime.
const HSTS: &str = "max-age=31536000; includeSubDomains";

/// The policy for a response whose inline scripts carry `nonce`.
///
/// - `script-src`: this origin (the `pkg/` JavaScript and the islands' lazy chunks), the inline
///   hydration loader through its nonce, and `'wasm-unsafe-eval'`, which compiling the WebAssembly
///   needs; nothing else may run.
/// - `style-src 'unsafe-inline'`: the pages set `style="…"` attributes (bar widths in charts and
///   reports, the calendar's column and block positions, the telemetry gauges). A nonce does not
///   cover attributes, and styles cannot run code, so this is the usual compromise.
/// - `connect-src 'self'`: server functions and the `.wasm` fetch; `img-src 'self' data:`: the
///   favicon and inline SVG data.
/// - `frame-ancestors 'none'` (no framing, no click-jacking), `object-src 'none'`,
///   `base-uri 'self'`. No `form-action`: browsers apply it to the redirects after a form
///   post too, and signing in through an identity provider redirects off this origin.
///
/// With card payments on, Stripe.js may load from its origin, call Stripe's API, and frame
/// the card field and the bank's authentication (`frame-src`: Stripe.js's origin and, for
/// Stripe itself, `hooks.stripe.com`).
pub fn policy(nonce: &str, stripe: Option<&StripeOrigins>) -> String {
    let (script, connect, frame) = match stripe {
        Some(origins) => {
            let hooks = if origins.js == "https://js.stripe.com" {
                " https://hooks.stripe.com"
            } else {
                ""
            };
            (
                format!(" {}", origins.js),
                format!(" {}", origins.api),
                format!(" frame-src {}{hooks};", origins.js),
            )
        }
        None => (String::new(), String::new(), String::new()),
    };
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'{script}; \
         style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'{connect};{frame} \
         font-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'"
    )
}

/// Whether `path` names a static file (the built front end under `/pkg/`, or a file with an
/// extension such as `/favicon.svg`), which browsers may cache.
fn is_static_file(path: &str) -> bool {
    if path.starts_with("/pkg/") {
        return true;
    }
    path.rsplit('/')
        .next()
        .is_some_and(|last| last.contains('.'))
}

/// Middleware: makes the response's nonce, passes it to the page render, and sets the headers.
pub async fn add_security_headers(
    State(settings): State<SecurityHeaders>,
    mut request: Request,
    next: Next,
) -> Response {
    let nonce = Nonce::new();
    let cacheable = is_static_file(request.uri().path());
    request.extensions_mut().insert(nonce.clone());
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&policy(&nonce, settings.stripe.as_deref())) {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if settings.hsts {
        headers.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static(HSTS),
        );
    }
    if !cacheable {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        // Old HTTP/1.0 caches read `Pragma` only.
        headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_scripts_from_this_origin_and_the_nonce_only() {
        let policy = policy("abc123", None);
        assert!(policy.contains("script-src 'self' 'nonce-abc123' 'wasm-unsafe-eval';"));
        assert!(!policy.contains("frame-src"));
        assert!(!policy.contains(" 'unsafe-eval'"));
        assert!(!policy.contains("script-src 'self' 'unsafe-inline'"));
        assert!(policy.contains("frame-ancestors 'none'"));
        assert!(policy.contains("object-src 'none'"));
        assert!(policy.contains("base-uri 'self'"));
    }

    #[test]
    fn with_cards_stripe_js_may_load_call_its_api_and_frame_the_card_field() {
        let stripe = StripeOrigins::of("https://js.stripe.com/v3/", "https://api.stripe.com")
            .expect("origins");
        let policy = policy("n", Some(&stripe));
        assert!(
            policy
                .contains("script-src 'self' 'nonce-n' 'wasm-unsafe-eval' https://js.stripe.com;")
        );
        assert!(policy.contains("connect-src 'self' https://api.stripe.com;"));
        assert!(policy.contains("frame-src https://js.stripe.com https://hooks.stripe.com;"));
        let local = StripeOrigins::of(
            "http://127.0.0.1:8420/js.stripe.com/v3/",
            "http://127.0.0.1:8420",
        )
        .expect("origins");
        assert_eq!(local.js, "http://127.0.0.1:8420");
        assert!(StripeOrigins::of("javascript:alert(1)", "https://api.stripe.com").is_none());
    }

    #[test]
    fn only_files_are_cacheable() {
        assert!(is_static_file("/pkg/berth.wasm"));
        assert!(is_static_file("/favicon.svg"));
        assert!(!is_static_file("/"));
        assert!(!is_static_file("/calendar"));
        assert!(!is_static_file("/api/v1/wallet"));
        assert!(!is_static_file("/api/get_wallet"));
    }
}
