//! Per-client-address rate limit on sign-in and token creation, so that guessing and flooding
//! the identity provider from one address is slow. Over the limit: 429 with `Retry-After`.
//!
//! The client address is the connection's peer, unless the peer is one of `trusted_proxies`:
//! then `X-Forwarded-For` is read from the right, past every trusted proxy, and the right-most
//! address that is not a trusted proxy is the client (what a client writes further left cannot
//! pick its bucket).

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use berth_app::error::AppError;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use ipnet::IpNet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;

/// The limiter shared by every request of one app.
#[derive(Clone)]
pub struct SignInLimiter {
    limiter: Arc<DefaultKeyedRateLimiter<IpAddr>>,
    trusted_proxies: Arc<[IpNet]>,
}

impl SignInLimiter {
    /// Allows `per_minute` requests per address and minute (as a burst, refilled evenly);
    /// `X-Forwarded-For` is believed from `trusted_proxies` only.
    pub fn new(per_minute: NonZeroU32, trusted_proxies: Vec<IpNet>) -> Self {
        Self {
            limiter: Arc::new(RateLimiter::keyed(Quota::per_minute(per_minute))),
            trusted_proxies: trusted_proxies.into(),
        }
    }

    /// Forgets addresses that are back to a full allowance, so memory stays bounded.
    pub fn forget_idle(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }

    /// The client address of a request (see the module's documentation).
    pub fn client(&self, request: &Request) -> IpAddr {
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |info| info.0.ip());
        client_address(peer, request.headers(), &self.trusted_proxies)
    }
}

/// The right-most address in the chain peer ← `X-Forwarded-For` (read right to left) that is
/// not a trusted proxy; the peer itself when it is not trusted. An entry that is not an
/// address ends the walk at the proxy that wrote it.
pub fn client_address(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |address: &IpAddr| trusted.iter().any(|net| net.contains(address));
    let mut client = peer;
    if !is_trusted(&client) {
        return client;
    }
    let entries: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .collect();
    for entry in entries.into_iter().rev() {
        let Ok(address) = entry.trim().parse::<IpAddr>() else {
            break;
        };
        client = address;
        if !is_trusted(&client) {
            break;
        }
    }
    client
}

/// Whether the request signs in or creates a credential.
fn is_limited(method: &Method, path: &str) -> bool {
    (path.starts_with("/auth/oidc/") && (*method == Method::GET || *method == Method::HEAD))
        || (*method == Method::POST && (path == "/auth/dev" || path == "/api/create_api_token"))
}

/// Middleware: counts limited requests per client address and refuses those over the limit.
pub async fn limit_sign_in(
    State(limiter): State<SignInLimiter>,
    request: Request,
    next: Next,
) -> Response {
    if !is_limited(request.method(), request.uri().path()) {
        return next.run(request).await;
    }
    let client = limiter.client(&request);
    if let Err(not_until) = limiter.limiter.check_key(&client) {
        let wait = not_until.wait_time_from(DefaultClock::default().now());
        tracing::warn!(client.address = %client, http.path = %request.uri().path(), "rate limit reached");
        return AppError::TooManyRequests(wait.as_secs().max(1)).into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn sign_in_and_token_creation_are_limited_and_nothing_else() {
        assert!(is_limited(&Method::GET, "/auth/oidc/corp/start"));
        assert!(is_limited(&Method::GET, "/auth/oidc/corp/callback"));
        assert!(is_limited(&Method::HEAD, "/auth/oidc/corp/start"));
        assert!(is_limited(&Method::POST, "/auth/dev"));
        assert!(is_limited(&Method::POST, "/api/create_api_token"));
        assert!(!is_limited(&Method::GET, "/"));
        assert!(!is_limited(&Method::POST, "/api/list_gpus"));
        assert!(!is_limited(&Method::POST, "/auth/signout"));
    }

    fn forwarded(values: &[&'static str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append("x-forwarded-for", HeaderValue::from_static(value));
        }
        headers
    }

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|n| n.parse().unwrap()).collect()
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_right_most_untrusted_forwarded_address_is_the_client() {
        let trusted = nets(&["10.0.0.0/8", "192.0.2.7/32"]);
        let headers = forwarded(&["198.51.100.1, 203.0.113.9, 10.0.0.1", "192.0.2.7"]);
        // The peer is a trusted proxy: skip 192.0.2.7 and 10.0.0.1, stop at 203.0.113.9 (what
        // the client wrote further left, 198.51.100.1, is not believed).
        assert_eq!(
            client_address(ip("10.1.2.3"), &headers, &trusted),
            ip("203.0.113.9")
        );
        // A peer that is not a trusted proxy is the client, whatever it sends.
        assert_eq!(
            client_address(ip("198.51.100.5"), &headers, &trusted),
            ip("198.51.100.5")
        );
        // Without trusted proxies the header is ignored.
        assert_eq!(
            client_address(ip("10.1.2.3"), &headers, &[]),
            ip("10.1.2.3")
        );
    }

    #[test]
    fn a_chain_of_only_proxies_or_garbage_stops_at_the_last_address_read() {
        let trusted = nets(&["10.0.0.0/8", "::1/128"]);
        assert_eq!(
            client_address(ip("::1"), &forwarded(&["10.0.0.2, 10.0.0.3"]), &trusted),
            ip("10.0.0.2")
        );
        assert_eq!(
            client_address(ip("10.0.0.1"), &forwarded(&["unknown, 10.0.0.3"]), &trusted),
            ip("10.0.0.3")
        );
        assert_eq!(
            client_address(ip("10.0.0.1"), &HeaderMap::new(), &trusted),
            ip("10.0.0.1")
        );
    }
}
