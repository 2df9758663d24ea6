//! Shows an [`AppError`] to the user in their language.

use crate::domain::problem::Problem;
use crate::error::AppError;
use crate::i18n::*;
use leptos::prelude::*;

/// A translated, user-facing description of `error`, with validation details kept.
/// What a server-rendered page shows after one of its plain forms posted and came back: `done`
/// (already in words) as a status line, else the error its `error=` query carries (an
/// [`AppError`] as JSON, or plain text) as an [`ErrorPanel`].
pub fn form_outcome(done: Option<String>, error: Option<String>) -> Option<impl IntoView> {
    use leptos::either::Either;
    match (done, error) {
        (Some(text), _) => Some(Either::Left(
            view! { <p class="notice notice-ok" role="status">{text}</p> },
        )),
        (None, Some(raw)) => {
            let error = serde_json::from_str::<AppError>(&raw).unwrap_or(AppError::Transport(raw));
            Some(Either::Right(view! { <ErrorPanel error /> }))
        }
        (None, None) => None,
    }
}

#[component]
pub fn ErrorPanel(error: AppError) -> impl IntoView {
    let i18n = use_i18n();
    let message = move || match &error {
        AppError::Validation { problem, .. } | AppError::Conflict(problem) => {
            described(i18n, problem)
        }
        AppError::Explained { message, .. } => message.clone(),
        AppError::Unauthorized => t_string!(i18n, error_unauthorized).to_string(),
        AppError::TokenExpired => t_string!(i18n, error_token_expired).to_string(),
        AppError::Forbidden => t_string!(i18n, error_forbidden).to_string(),
        AppError::NotFound(_) => t_string!(i18n, error_not_found).to_string(),
        // The calendar shows clashes itself (with the nearest free window, in the viewer's
        // zone); elsewhere the server says what is taken when (UTC), and the browser has no copy
        // of that sentence.
        #[cfg(not(feature = "hydrate"))]
        AppError::Clash(clash) => {
            let at = crate::domain::time_text::date_minute(clash.at.naive_utc());
            t_string!(
                i18n,
                clash_body,
                what = clash.what.clone(),
                at = format!("{at} UTC")
            )
            .to_string()
        }
        #[cfg(feature = "hydrate")]
        AppError::Clash(_) => t_string!(i18n, error_refused).to_string(),
        AppError::TooManyRequests(seconds) => {
            t_string!(i18n, error_too_many_requests, seconds = *seconds).to_string()
        }
        AppError::TooLarge => t_string!(i18n, error_too_large).to_string(),
        AppError::Unavailable => t_string!(i18n, error_unavailable).to_string(),
        AppError::Internal => t_string!(i18n, error_internal).to_string(),
        AppError::Transport(_) => t_string!(i18n, error_request).to_string(),
    };
    view! {
        <div class="error-panel" role="alert">
            <h2>{t!(i18n, error_title)}</h2>
            <p>{message}</p>
        </div>
    }
}

/// `problem` in the current language. In the browser, problems arrive already explained by the
/// server ([`AppError::Explained`]); the browser has no texts of its own for them (they would
/// weigh on every page's WebAssembly), only a general one.
fn described(i18n: leptos_i18n::I18nContext<Locale>, problem: &Problem) -> String {
    #[cfg(feature = "hydrate")]
    {
        let _ = problem;
        t_string!(i18n, error_refused).to_string()
    }
    #[cfg(not(feature = "hydrate"))]
    crate::text::problem::problem_text(i18n, problem)
}
