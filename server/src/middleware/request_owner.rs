//! Every request runs under a reactive owner of its own.
//!
//! `leptos_axum` makes a server function's owner with `Owner::new()`: a child of whatever owner
//! is current on the worker thread that first polls it. That is often another request's: a page
//! render sets its root owner current and leaves it so. While that other request lives (its page
//! still streaming from another thread), the server function's owner hangs under it, and when it
//! ends, its clean-up disposes the server function's signals mid-use (a text's locale: "already
//! disposed"), and a context looked up through the parents may be the other request's. Here the
//! request's handling is polled with a fresh root owner current, so what Leptos makes for it
//! belongs to it alone; the root goes when the answer is ready.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

/// Middleware: runs the rest of the request under a root owner of its own.
pub async fn own_owner(request: Request, next: Next) -> Response {
    let root = berth_app::text::language::new_root_owner();
    let mut handling = std::pin::pin!(next.run(request));
    std::future::poll_fn(|cx| root.with(|| handling.as_mut().poll(cx))).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::routing::get;
    use leptos::prelude::*;
    use tower::ServiceExt;

    /// A handler that does what `leptos_axum` does for a server function (an owner from
    /// `Owner::new()`, a signal in it) while `other`, the request this thread served before,
    /// ends (in the portal: on another thread).
    fn router(other: Owner) -> Router {
        Router::new().route(
            "/",
            get(move || {
                let other = other.clone();
                async move {
                    let owner = Owner::new();
                    let value = owner.with(|| RwSignal::new("kept".to_owned()));
                    other.cleanup();
                    value
                        .try_get_untracked()
                        .unwrap_or_else(|| "disposed".to_owned())
                }
            }),
        )
    }

    async fn answer(router: Router) -> String {
        let response = router
            .oneshot(Request::new(Body::empty()))
            .await
            .expect("an answer");
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .expect("a body");
        String::from_utf8(body.to_vec()).expect("text")
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_server_functions_owner_outlives_the_request_the_thread_served_before() {
        // A page render's root owner, left current on this thread as leptos_axum leaves it.
        let other = Owner::new_root(None);
        assert_eq!(answer(router(other)).await, "disposed");

        let other = Owner::new_root(None);
        let owned = router(other.clone()).layer(axum::middleware::from_fn(own_owner));
        assert_eq!(answer(owned).await, "kept");
        // The thread's owner is as it was.
        assert!(Owner::current().is_some_and(|owner| owner == other));
    }
}
