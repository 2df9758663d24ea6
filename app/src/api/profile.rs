//! The signed-in user's settings: personal API tokens and time zone.

use crate::domain::user::{ApiTokenInfo, CreatedApiToken, TimeZoneChoice};
use crate::error::AppError;
use leptos::prelude::*;

/// The caller's live API tokens, newest first.
#[server(endpoint = "list_api_tokens")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn list_api_tokens() -> Result<Vec<ApiTokenInfo>, AppError> {
    use crate::server::{auth::actor::require_actor, db, state};
    state::with_status(
        async {
            let actor = require_actor().await?;
            let state = state::app_state()?;
            Ok(
                db::api_tokens::list_own_tokens(&state.db, actor.user.id, chrono::Utc::now())
                    .await?,
            )
        }
        .await,
    )
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
    use crate::domain::api_token::{TokenScope, expires_at, parse_expiry_days};
    use crate::domain::user::TokenName;
    use crate::server::db::api_tokens::TokenGrant;
    use crate::server::{auth::actor::require_actor, auth::tokens, db, state};
    state::with_status(
        async {
            let actor = require_actor().await?;
            actor.require_session()?;
            let scope = TokenScope::parse(scope.as_deref().unwrap_or(""))
                .map_err(|problem| AppError::invalid("scope", problem))?;
            let days = parse_expiry_days(expires_days.as_deref().unwrap_or(""))
                .map_err(|problem| AppError::invalid("expires_days", problem))?;
            let name = TokenName::parse(&name).map_err(|err| {
                let max = match err {
                    crate::domain::user::UserInputError::Name { max } => max,
                    crate::domain::user::UserInputError::Email(_) => 100,
                };
                AppError::invalid("name", crate::domain::problem::Problem::Name { max })
            })?;
            let state = state::app_state()?;
            let (token, hash) = tokens::generate();
            let now = chrono::Utc::now();
            let grant = TokenGrant {
                scope,
                expires_at: expires_at(now, days),
            };
            let id = db::api_tokens::insert_granted_token(
                &state.db,
                actor.user.id,
                &name,
                &hash,
                grant,
                now,
            )
            .await?;
            tracing::info!(
                api_token.id = id,
                user.id = actor.user.id,
                api_token.scope = scope.as_str(),
                "API token created"
            );
            Ok(CreatedApiToken {
                info: ApiTokenInfo {
                    id,
                    name: name.as_str().to_owned(),
                    created_at: now,
                    last_used_at: None,
                    scope,
                    expires_at: grant.expires_at,
                    expired: false,
                },
                token,
            })
        }
        .await,
    )
}

/// Revokes one of the caller's tokens; a token of someone else is "not found".
#[server(endpoint = "revoke_api_token")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all, fields(api_token.id = id)))]
pub async fn revoke_api_token(id: i64) -> Result<(), AppError> {
    use crate::server::{auth::actor::require_actor, db, state};
    state::with_status(
        async {
            let actor = require_actor().await?;
            let state = state::app_state()?;
            if db::api_tokens::revoke_own_token(&state.db, actor.user.id, id, chrono::Utc::now())
                .await?
            {
                Ok(())
            } else {
                Err(AppError::NotFound(format!("API token {id}")))
            }
        }
        .await,
    )
}

/// The caller's time-zone setting and the zones to choose from.
#[server(endpoint = "get_time_zone")]
pub async fn get_time_zone() -> Result<TimeZoneChoice, AppError> {
    use crate::server::{auth::actor::require_actor, booking};
    let actor = crate::server::state::with_status(require_actor().await)?;
    Ok(TimeZoneChoice {
        current: actor.user.time_zone,
        zones: booking::zone_names(),
    })
}

/// Sets the zone the caller sees times in: an IANA name, or empty for the browser's.
#[server(endpoint = "set_time_zone")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn set_time_zone(time_zone: String) -> Result<Option<String>, AppError> {
    use crate::server::{auth::actor::require_actor, booking, db, state};
    state::with_status(
        async {
            let actor = require_actor().await?;
            let zone = booking::parse_zone_choice(&time_zone)?;
            let state = state::app_state()?;
            db::users::set_time_zone(
                &state.db,
                actor.user.id,
                zone.as_deref(),
                chrono::Utc::now(),
            )
            .await?;
            Ok(zone)
        }
        .await,
    )
}
