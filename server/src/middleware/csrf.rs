//! Cross-site request protection: a state-changing request (anything but GET, HEAD, OPTIONS)
//! that a browser sends from another site is refused with 403. Browsers say where a request comes
//! from in `Sec-Fetch-Site` and `Origin`; an attacker's page cannot forge either. Requests with an
//! `Authorization: Bearer …` header are exempt: a cross-site page cannot attach one without a
//! CORS grant, which Berth never gives, and API clients authenticate that way. Any other scheme
//! (`Basic`, `Negotiate`, …) is checked like any browser request: browsers attach those they
//! have cached to every request to the site, cross-site forms included.

use axum::Json;
use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Middleware that refuses cross-site state-changing requests.
pub async fn reject_cross_site(request: Request, next: Next) -> Response {
    if let Some(reason) = cross_site_reason(request.method(), request.headers()) {
        tracing::warn!(http.path = %request.uri().path(), reason, "cross-site request refused");
        let body = json!({ "error": "forbidden", "message": format!("cross-site request refused: {reason}") });
        return (StatusCode::FORBIDDEN, Json(body)).into_response();
    }
    next.run(request).await
}

/// Why the request must be refused, or `None` when it may proceed.
fn cross_site_reason(method: &Method, headers: &HeaderMap) -> Option<&'static str> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) || has_bearer(headers) {
        return None;
    }
    let text = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    // Current browsers say it directly; trust that over comparing host names, which a reverse
    // proxy may rewrite.
    if let Some(site) = text("sec-fetch-site") {
        return (!site.eq_ignore_ascii_case("same-origin") && !site.eq_ignore_ascii_case("none"))
            .then_some("Sec-Fetch-Site is not same-origin");
    }
    if let Some(origin) = text("origin") {
        let origin_host = origin
            .split_once("://")
            .map(|(_, rest)| rest.trim_end_matches('/'));
        let ours = [text("host"), text("x-forwarded-host")];
        if origin_host.is_none() || !ours.contains(&origin_host) {
            return Some("Origin is another site");
        }
    }
    None
}

/// Whether the request carries `Authorization: Bearer <something>`, which only a script sets.
fn has_bearer(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| {
            value.split_once(' ').is_some_and(|(scheme, token)| {
                scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty()
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn same_origin_posts_pass() {
        let same = headers(&[
            ("host", "berth.example:3000"),
            ("origin", "https://berth.example:3000"),
            ("sec-fetch-site", "same-origin"),
        ]);
        assert_eq!(cross_site_reason(&Method::POST, &same), None);
    }

    #[test]
    fn posts_from_other_sites_are_refused() {
        let other = headers(&[
            ("host", "berth.example"),
            ("origin", "https://evil.example"),
        ]);
        assert!(cross_site_reason(&Method::POST, &other).is_some());
        let fetch = headers(&[("host", "berth.example"), ("sec-fetch-site", "cross-site")]);
        assert!(cross_site_reason(&Method::DELETE, &fetch).is_some());
        let opaque = headers(&[("host", "berth.example"), ("origin", "null")]);
        assert!(cross_site_reason(&Method::POST, &opaque).is_some());
    }

    #[test]
    fn a_proxy_that_rewrites_host_does_not_break_same_origin_browsers() {
        let proxied = headers(&[
            ("host", "127.0.0.1:3000"),
            ("origin", "https://berth.example"),
            ("sec-fetch-site", "same-origin"),
        ]);
        assert_eq!(cross_site_reason(&Method::POST, &proxied), None);
        let forwarded = headers(&[
            ("host", "127.0.0.1:3000"),
            ("x-forwarded-host", "berth.example"),
            ("origin", "https://berth.example"),
        ]);
        assert_eq!(cross_site_reason(&Method::POST, &forwarded), None);
    }

    #[test]
    fn reads_and_token_authenticated_requests_are_exempt() {
        let other = headers(&[
            ("host", "berth.example"),
            ("origin", "https://evil.example"),
        ]);
        assert_eq!(cross_site_reason(&Method::GET, &other), None);
        let bearer = headers(&[
            ("host", "berth.example"),
            ("origin", "https://evil.example"),
            ("authorization", "Bearer berth_x"),
        ]);
        assert_eq!(cross_site_reason(&Method::POST, &bearer), None);
    }

    #[test]
    fn other_authorization_schemes_are_browser_requests() {
        for value in [
            "Basic dXNlcjpwYXNz",
            "Negotiate YIIB",
            "NTLM TlRMTVNTUAAB",
            "Bearer",
            "Bearer ",
            "Bearerx y",
        ] {
            let mut map = headers(&[
                ("host", "berth.example"),
                ("origin", "https://evil.example"),
            ]);
            map.insert("authorization", HeaderValue::from_static(value));
            assert!(
                cross_site_reason(&Method::POST, &map).is_some(),
                "{value} does not exempt"
            );
        }
    }
}
