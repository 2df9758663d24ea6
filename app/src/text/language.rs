//! The language of the request being served, on the server: texts the server puts together for a
//! page's islands, and refusals put into words before they go out.

use crate::backend::state::AppState;
use crate::error::AppError;
use leptos::prelude::*;

/// `error` with its problem in the language of the current request (cookie or
/// `Accept-Language`); other errors unchanged.
pub fn explained(error: AppError) -> AppError {
    let (status, field, problem) = match error {
        AppError::Validation { field, problem } => (422, Some(field), problem),
        AppError::Conflict(problem) => (409, None, problem),
        other => return other,
    };
    let message = in_request_language(|i18n| crate::text::problem::problem_text(i18n, &problem));
    AppError::Explained {
        status,
        field,
        code: problem.code(),
        message,
    }
}

/// [`explained`] outside Leptos' request handling (plain form routes): the language comes from
/// `headers` (cookie or `Accept-Language`).
pub fn explained_for(error: AppError, headers: &http::HeaderMap, state: &AppState) -> AppError {
    for_request(headers, state, || explained(error))
}

/// Runs `f` as if inside Leptos' handling of a request with `headers` (plain routes that need
/// [`in_request_language`] or [`explained`]).
pub fn for_request<R>(headers: &http::HeaderMap, state: &AppState, f: impl FnOnce() -> R) -> R {
    with_request_headers(headers, || {
        provide_context(state.clone());
        f()
    })
}

/// Runs `f` with the translations of the language a request with `headers` asks for (cookie,
/// else `Accept-Language`), where no Leptos request handling and no state are at hand (the panic
/// layer's error page).
pub fn in_language_of<R>(
    headers: &http::HeaderMap,
    f: impl FnOnce(leptos_i18n::I18nContext<crate::i18n::Locale>) -> R,
) -> R {
    with_request_headers(headers, || in_request_language(f))
}

/// Runs `f` in a reactive owner that holds a request with `headers`, where the i18n context
/// looks for the language.
fn with_request_headers<R>(headers: &http::HeaderMap, f: impl FnOnce() -> R) -> R {
    let (mut parts, ()) = http::Request::new(()).into_parts();
    parts.headers = headers.clone();
    detached(|| {
        provide_context(parts);
        f()
    })
}

/// Runs `f` under a new root owner: for texts put together outside Leptos' handling of a
/// request (plain routes, the notification worker).
///
/// Not a child of this thread's current owner: `leptos_axum` leaves each request's root owner
/// current on the worker thread that served it, and a child made there belongs to that request.
/// When the request ends, perhaps on another thread while `f` runs, its clean-up disposes the
/// child's signals too, and reading the locale then panics. The thread's owner is put back
/// afterwards.
pub fn detached<R>(f: impl FnOnce() -> R) -> R {
    new_root_owner().with(f)
}

/// A new root owner, leaving the thread's current owner as it was (`Owner::new_root` makes
/// itself current).
pub fn new_root_owner() -> Owner {
    let before = Owner::current();
    let root = Owner::new_root(None);
    if let Some(before) = before {
        before.set();
    }
    root
}

/// Runs `f` with the translations of the current request's language (cookie or
/// `Accept-Language`): for texts the server puts together for a page's islands, so that the
/// browser's WebAssembly carries no translation code for them.
pub fn in_request_language<R>(
    f: impl FnOnce(leptos_i18n::I18nContext<crate::i18n::Locale>) -> R,
) -> R {
    let owner = Owner::new();
    owner.with(|| {
        // The same context `I18nContextProvider` provides.
        #[allow(deprecated)]
        let i18n = leptos_i18n::context::provide_i18n_context::<crate::i18n::Locale>();
        // The context spawns an isomorphic effect (it keeps the language cookie in step with the
        // locale) on the async runtime. A text needs none of it, and run on another worker after
        // this owner is gone, it would read the locale's disposed signal and panic there. Paused
        // (the pause reaches the effect's own owner, a child of this one), the task finds it so
        // and does nothing, unless it began in the moment between its spawn and this line.
        owner.pause();
        f(i18n)
    })
}

/// The language a request with `headers` asks for (cookie, else `Accept-Language`), as a code
/// (`en`, `pt-BR`).
pub fn language_of(headers: &http::HeaderMap) -> &'static str {
    use leptos_i18n::Locale as _;
    in_language_of(headers, |i18n| i18n.get_locale_untracked()).as_str()
}
