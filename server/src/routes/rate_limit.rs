//! Per-client-address rate limit on sign-in and token creation, so that guessing and flooding
//! the identity provider from one address is slow. Over the limit: 429 with `Retry-After`.

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use berth_app::error::AppError;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;

/// The limiter shared by every request of one app.
#[derive(Clone)]
pub struct SignInLimiter {
    limiter: Arc<DefaultKeyedRateLimiter<IpAddr>>,
    trust_forwarded_for: bool,
}

impl SignInLimiter {
    /// Allows `per_minute` requests per address and minute (as a burst, refilled evenly).
    pub fn new(per_minute: NonZeroU32, trust_forwarded_for: bool) -> Self {
        Self {
            limiter: Arc::new(RateLimiter::keyed(Quota::per_minute(per_minute))),
            trust_forwarded_for,
        }
    }

    /// Forgets addresses that are back to a full allowance, so memory stays bounded.
    pub fn forget_idle(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }

    /// The client address: the peer, or behind a trusted proxy the last `X-Forwarded-For` entry.
    fn client(&self, request: &Request) -> IpAddr {
        if self.trust_forwarded_for
            && let Some(forwarded) = last_forwarded_for(request.headers())
        {
            return forwarded;
        }
        request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |info| info.0.ip())
    }
}

/// The address the nearest proxy saw.
fn last_forwarded_for(headers: &HeaderMap) -> Option<IpAddr> {
    headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .next_back()
        .and_then(|last| last.trim().parse().ok())
}

/// Whether the request signs in or creates a credential.
fn is_limited(method: &Method, path: &str) -> bool {
    (path.starts_with("/auth/oidc/") && *method == Method::GET)
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
        assert!(is_limited(&Method::POST, "/auth/dev"));
        assert!(is_limited(&Method::POST, "/api/create_api_token"));
        assert!(!is_limited(&Method::GET, "/"));
        assert!(!is_limited(&Method::POST, "/api/list_gpus"));
        assert!(!is_limited(&Method::POST, "/auth/signout"));
    }

    #[test]
    fn the_last_forwarded_address_is_the_one_the_proxy_saw() {
        let mut headers = HeaderMap::new();
        headers.append(
            "x-forwarded-for",
            HeaderValue::from_static("203.0.113.9, 10.0.0.1"),
        );
        headers.append("x-forwarded-for", HeaderValue::from_static("192.0.2.7"));
        assert_eq!(
            last_forwarded_for(&headers),
            Some("192.0.2.7".parse().unwrap())
        );
        assert_eq!(last_forwarded_for(&HeaderMap::new()), None);
    }
}
