//! The calendar page, rendered once and sent again for a short while.
//!
//! A week of 64 busy GPUs is a 250 KB page that takes about 10 ms to render, while sending the
//! same bytes takes well under one. A viewer who reloads, and the many tabs or wall screens that
//! poll it, get a copy of their own last render for up to [`FRESH_FOR`] (on the portal's clock):
//!
//! - **Per viewer.** A copy is kept under the signed-in user, the page's address, the request's
//!   cookies (its session, language and time zone) and `Accept-Language`: nobody ever gets a
//!   page rendered for someone else. The sign-in guard runs before it on every request, so a
//!   signed-out or revoked session never reaches a copy.
//! - **Dropped by any change made through this replica.** Every request that may change
//!   something (any method but `GET`, `HEAD` and `OPTIONS`; node agents' telemetry reports
//!   aside) makes every copy made before it unusable once it has been answered, so whoever
//!   books, cancels or changes anything and then loads the calendar sees it at once. A change
//!   made through another replica, a background job, or the GPUs' utilisation shows within
//!   [`FRESH_FOR`], as if the page had been loaded that much earlier.
//! - **Fresh secrets in every copy.** The page carries two single-use values: the script nonce
//!   of its Content Security Policy and the idempotency key of its booking form (two posts with
//!   the same key book once). Both are chosen before the render and their places in the page
//!   recorded, so each copy is sent with a new nonce (the one in this response's policy) and a
//!   new key.
//! - **Bounded.** At most [`CAPACITY_BYTES`] of pages; a page larger than [`MAX_PAGE_BYTES`] is
//!   not kept. Pages with an outcome in their address (`booked=`, `error=`) are never kept.
//!
//! Concurrent requests for a page that is being rendered wait for that render rather than
//! render it again.

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use berth_app::backend::auth::actor::GuardedActor;
use berth_app::backend::clock::Clock;
use berth_app::backend::reservations::calendar::PageFormKey;
use chrono::{DateTime, TimeDelta, Utc};
use leptos::nonce::Nonce;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How long a copy is sent again.
pub const FRESH_FOR: TimeDelta = TimeDelta::seconds(2);
/// Pages kept at most, in bytes (about sixty weeks of 64 busy GPUs).
pub const CAPACITY_BYTES: u64 = 16 * 1024 * 1024;
/// A larger page is sent but not kept.
pub const MAX_PAGE_BYTES: usize = 2 * 1024 * 1024;
/// The pages kept.
const CACHED_PATHS: [&str; 1] = ["/calendar"];
/// A node agent's telemetry report: frequent, and it changes only what [`FRESH_FOR`] covers.
const NOT_A_CHANGE: [&str; 1] = ["/api/v1/agent/report"];

/// Whose copy, of what.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    /// Changes seen before the render (see [`PageCache::generation`]).
    generation: u64,
    user_id: i64,
    path_and_query: String,
    cookie: Option<HeaderValue>,
    language: Option<HeaderValue>,
}

/// A rendered page and where its single-use values are.
#[derive(Debug)]
struct Page {
    /// When it was rendered, on the portal's clock.
    at: DateTime<Utc>,
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
    /// Where the render's nonce is, and its length.
    nonce_at: Vec<usize>,
    nonce_len: usize,
    /// Where the render's form key is, and its length.
    key_at: Vec<usize>,
    key_len: usize,
}

#[derive(Debug, Clone)]
struct ByBytes;

impl quick_cache::Weighter<Key, Arc<Page>> for ByBytes {
    fn weight(&self, _key: &Key, page: &Arc<Page>) -> u64 {
        page.body.len() as u64 + 1
    }
}

/// The pages of one portal process.
pub struct PageCache {
    pages: quick_cache::sync::Cache<Key, Arc<Page>, ByBytes>,
    /// Counts the changes answered so far; a copy is made under the count seen before its
    /// render, so any change answered since makes it unreachable.
    generation: AtomicU64,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for PageCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageCache")
            .field("pages", &self.pages.len())
            .field("generation", &self.generation.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl PageCache {
    /// An empty cache on `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Arc<Self> {
        Arc::new(Self {
            pages: quick_cache::sync::Cache::with_weighter(64, CAPACITY_BYTES, ByBytes),
            generation: AtomicU64::new(0),
            clock,
        })
    }

    /// Whether `page` is young enough to send again (a key's generation is checked by the
    /// lookup itself: a key is made with the current one).
    fn fresh(&self, page: &Page) -> bool {
        let age = self.clock.now() - page.at;
        age >= TimeDelta::zero() && age < FRESH_FOR
    }

    /// Drops the copies that can no longer be sent.
    fn prune(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        self.pages
            .retain(|key, page| key.generation == generation && self.fresh(page));
    }
}

/// Whether a request may change something.
fn is_change(method: &Method, path: &str) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
        && !NOT_A_CHANGE.contains(&path)
}

/// Middleware: answers a page from its copy when there is a fresh one, keeps the page otherwise,
/// and counts the changes.
pub async fn serve(
    State(cache): State<Arc<PageCache>>,
    mut request: Request,
    next: Next,
) -> Response {
    if is_change(request.method(), request.uri().path()) {
        let response = next.run(request).await;
        cache.generation.fetch_add(1, Ordering::AcqRel);
        return response;
    }
    let Some(key) = key_of(&cache, &request) else {
        return next.run(request).await;
    };
    let nonce = request.extensions().get::<Nonce>().cloned();
    if let Some(page) = cache.pages.get(&key) {
        if cache.fresh(&page) {
            return copy_of(&page, nonce.as_ref());
        }
        cache.pages.remove(&key);
    }
    let guard = match cache.pages.get_value_or_guard_async(&key).await {
        Ok(page) if cache.fresh(&page) => {
            return copy_of(&page, nonce.as_ref());
        }
        Ok(_) => None,
        Err(guard) => Some(guard),
    };
    let form_key = PageFormKey::new();
    request.extensions_mut().insert(form_key.clone());
    let at = cache.clock.now();
    let response = next.run(request).await;
    if response.status() != StatusCode::OK || response.headers().contains_key(header::SET_COOKIE) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(body) => body,
        Err(error) => {
            tracing::warn!(%error, "the page's body failed");
            return Response::from_parts(parts, Body::empty());
        }
    };
    if body.len() <= MAX_PAGE_BYTES
        && let Some(guard) = guard
    {
        let nonce = nonce.as_ref().map(|n| n.to_string()).unwrap_or_default();
        let page = Page {
            at,
            status: parts.status,
            headers: parts.headers.clone(),
            nonce_at: places(&body, &nonce),
            nonce_len: nonce.len(),
            key_at: places(&body, &form_key.0),
            key_len: form_key.0.len(),
            body: body.clone(),
        };
        let _ = guard.insert(Arc::new(page));
        cache.prune();
    }
    Response::from_parts(parts, Body::from(body))
}

/// The key of a page request that may be answered from a copy, if it is one.
fn key_of(cache: &PageCache, request: &Request) -> Option<Key> {
    if request.method() != Method::GET || !CACHED_PATHS.contains(&request.uri().path()) {
        return None;
    }
    let query = request.uri().query().unwrap_or_default();
    if query
        .split('&')
        .any(|pair| pair.starts_with("booked=") || pair.starts_with("error="))
    {
        return None;
    }
    // The signed-in user, as the sign-in guard found them.
    let user_id = request.extensions().get::<GuardedActor>()?.0.user.id;
    let headers = request.headers();
    Some(Key {
        generation: cache.generation.load(Ordering::Acquire),
        user_id,
        path_and_query: request.uri().path_and_query()?.as_str().to_owned(),
        cookie: headers.get(header::COOKIE).cloned(),
        language: headers.get(header::ACCEPT_LANGUAGE).cloned(),
    })
}

/// Where `needle` occurs in `body` (none for an empty needle).
fn places(body: &[u8], needle: &str) -> Vec<usize> {
    if needle.is_empty() {
        return Vec::new();
    }
    memchr::memmem::find_iter(body, needle.as_bytes()).collect()
}

/// A copy of `page` with this response's nonce and a new form key in their places.
fn copy_of(page: &Page, nonce: Option<&Nonce>) -> Response {
    let mut body = page.body.to_vec();
    let nonce = nonce.map(|n| n.to_string()).unwrap_or_default();
    if nonce.len() == page.nonce_len {
        for &at in &page.nonce_at {
            body[at..at + nonce.len()].copy_from_slice(nonce.as_bytes());
        }
    }
    let key = PageFormKey::new().0;
    if key.len() == page.key_len {
        for &at in &page.key_at {
            body[at..at + key.len()].copy_from_slice(key.as_bytes());
        }
    }
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = page.status;
    *response.headers_mut() = page.headers.clone();
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_place_of_a_value_is_found() {
        let body = b"<script nonce=\"abc\"></script><input value=\"k-1\"><x data=\"{&quot;k&quot;:&quot;k-1&quot;}\" nonce=\"abc\">";
        assert_eq!(places(body, "abc"), vec![15, 97]);
        assert_eq!(places(body, "k-1"), vec![43, 78]);
        assert!(places(body, "").is_empty());
    }

    #[tokio::test]
    async fn a_copy_carries_this_responses_nonce_and_a_new_form_key() {
        let old_key = "00000000-0000-4000-8000-000000000000";
        let html = format!(
            "<script nonce=\"old-nonce\"></script><input value=\"{old_key}\"><i data=\"{old_key}\">"
        );
        let body = Bytes::from(html.clone());
        let page = Page {
            at: Utc::now(),
            status: StatusCode::OK,
            headers: HeaderMap::new(),
            nonce_at: places(&body, "old-nonce"),
            nonce_len: "old-nonce".len(),
            key_at: places(&body, old_key),
            key_len: old_key.len(),
            body,
        };
        let sent = |response: Response| async move {
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .unwrap();
            String::from_utf8(bytes.to_vec()).unwrap()
        };
        let first = sent(copy_of(&page, Some(&Nonce::from_value("new-nonce")))).await;
        let second = sent(copy_of(&page, Some(&Nonce::from_value("2nd-nonce")))).await;
        assert!(first.starts_with("<script nonce=\"new-nonce\">"), "{first}");
        assert!(
            second.starts_with("<script nonce=\"2nd-nonce\">"),
            "{second}"
        );
        let key = |html: &str| html.split("value=\"").nth(1).unwrap()[..36].to_owned();
        let (first_key, second_key) = (key(&first), key(&second));
        assert_ne!(first_key, old_key);
        assert_ne!(first_key, second_key, "a new key for each copy");
        assert_eq!(
            first,
            html.replace("old-nonce", "new-nonce")
                .replace(old_key, &first_key),
            "nothing else changes"
        );
    }

    #[test]
    fn writes_change_the_generation_and_reads_do_not() {
        assert!(is_change(&Method::POST, "/api/book_reservation"));
        assert!(is_change(&Method::DELETE, "/api/v1/reservations/4"));
        assert!(is_change(&Method::PATCH, "/api/v1/admin/gpus/1"));
        assert!(!is_change(&Method::GET, "/calendar"));
        assert!(!is_change(&Method::HEAD, "/calendar"));
        assert!(!is_change(&Method::POST, "/api/v1/agent/report"));
        assert!(is_change(&Method::POST, "/api/v1/agent/register"));
    }
}
