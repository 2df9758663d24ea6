//! The signed-in user's settings: personal API tokens and time zone.

use crate::domain::user::{ApiTokenInfo, CreatedApiToken, TimeZoneChoice};
use crate::error::AppError;
use leptos::prelude::*;

/// The caller's live API tokens, newest first.
#[server(endpoint = "list_api_tokens")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn list_api_tokens() -> Result<Vec<ApiTokenInfo>, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        crate::backend::profile::tokens(&call.state, &call.actor, call.now).await
    })
    .await
}

/// Creates a token for the caller; the secret is in the answer and nowhere else. `scope` is
/// `write` (default) or `read`; `expires_days` is empty (never) or 1 to 3650. Only a signed-in
/// session may create tokens, never a token.
#[server(endpoint = "create_api_token")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn create_api_token(
    name: String,
    scope: Option<String>,
    expires_days: Option<String>,
) -> Result<CreatedApiToken, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        crate::backend::profile::create_token(
            &call.state,
            &call.actor,
            &name,
            scope.as_deref().unwrap_or(""),
            expires_days.as_deref().unwrap_or(""),
            call.now,
        )
        .await
    })
    .await
}

/// Revokes one of the caller's tokens; a token of someone else is "not found".
#[server(endpoint = "revoke_api_token")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all, fields(api_token.id = id)))]
pub async fn revoke_api_token(id: i64) -> Result<(), AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        crate::backend::profile::revoke_token(&call.state, &call.actor, id, call.now).await
    })
    .await
}

/// The caller's time-zone setting and the zones to choose from.
#[server(endpoint = "get_time_zone")]
pub async fn get_time_zone() -> Result<TimeZoneChoice, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move { Ok(crate::backend::profile::time_zone_choice(&call.actor)) })
        .await
}

/// Sets the zone the caller sees times in: an IANA name, or empty for the browser's.
#[server(endpoint = "set_time_zone")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn set_time_zone(time_zone: String) -> Result<Option<String>, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        crate::backend::profile::set_time_zone(&call.state, &call.actor, &time_zone, call.now).await
    })
    .await
}
