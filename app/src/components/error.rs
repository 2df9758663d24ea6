//! Shows an [`AppError`] to the user in their language.

use crate::error::AppError;
use crate::i18n::*;
use leptos::prelude::*;

/// A translated, user-facing description of `error`, with validation details kept.
#[component]
pub fn ErrorPanel(error: AppError) -> impl IntoView {
    let i18n = use_i18n();
    let message = move || match &error {
        AppError::Validation { field, message } => format!("{field}: {message}"),
        AppError::Unauthorized => t_string!(i18n, error_unauthorized).to_string(),
        AppError::Forbidden => t_string!(i18n, error_forbidden).to_string(),
        AppError::NotFound(_) => t_string!(i18n, error_not_found).to_string(),
        AppError::Conflict(detail) => detail.clone(),
        AppError::Clash(clash) => clash.to_string(),
        AppError::TooManyRequests(seconds) => {
            t_string!(i18n, error_too_many_requests, seconds = *seconds).to_string()
        }
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
