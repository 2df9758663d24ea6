//! The signed-in user's own settings: personal API tokens and the time zone times are shown in.

use crate::backend::auth::actor::Actor;
use crate::backend::auth::tokens;
use crate::backend::db;
use crate::backend::db::api_tokens::TokenGrant;
use crate::backend::state::AppState;
use crate::backend::viewer;
use crate::domain::api_token::{TokenScope, expires_at, parse_expiry_days};
use crate::domain::problem::Problem;
use crate::domain::user::{
    ApiTokenInfo, CreatedApiToken, TimeZoneChoice, TokenName, UserInputError,
};
use crate::error::AppError;
use chrono::{DateTime, Utc};

/// The actor's live API tokens, newest first.
pub async fn tokens(
    state: &AppState,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<Vec<ApiTokenInfo>, AppError> {
    let db = &state.db;
    Ok(db::api_tokens::list_own_tokens(db, actor.user.id, now).await?)
}

/// A new token for the actor; the secret is in the answer and nowhere else. `scope` is `write`
/// (empty) or `read`; `expires_days` is empty (never) or 1 to 3650. Only a signed-in session may
/// create tokens, never a token.
pub async fn create_token(
    state: &AppState,
    actor: &Actor,
    name: &str,
    scope: &str,
    expires_days: &str,
    now: DateTime<Utc>,
) -> Result<CreatedApiToken, AppError> {
    let db = &state.db;
    actor.require_session()?;
    let scope = TokenScope::parse(scope).map_err(|problem| AppError::invalid("scope", problem))?;
    let days = parse_expiry_days(expires_days)
        .map_err(|problem| AppError::invalid("expires_days", problem))?;
    let name = TokenName::parse(name).map_err(|err| {
        let max = match err {
            UserInputError::Name { max } => max,
            UserInputError::Email(_) => 100,
        };
        AppError::invalid("name", Problem::Name { max })
    })?;
    let (token, hash) = tokens::generate();
    let grant = TokenGrant {
        scope,
        expires_at: expires_at(now, days),
    };
    let id =
        db::api_tokens::insert_granted_token(db, actor.user.id, &name, &hash, grant, now).await?;
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

/// Revokes one of the actor's tokens; a token of someone else is "not found".
pub async fn revoke_token(
    state: &AppState,
    actor: &Actor,
    id: i64,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let db = &state.db;
    if db::api_tokens::revoke_own_token(db, actor.user.id, id, now).await? {
        Ok(())
    } else {
        Err(AppError::NotFound(format!("API token {id}")))
    }
}

/// The actor's time-zone setting and the zones to choose from.
pub fn time_zone_choice(actor: &Actor) -> TimeZoneChoice {
    TimeZoneChoice {
        current: actor.user.time_zone.clone(),
        zones: viewer::zone_names(),
    }
}

/// Sets the zone the actor sees times in: an IANA name, or empty for the browser's.
pub async fn set_time_zone(
    state: &AppState,
    actor: &Actor,
    raw: &str,
    now: DateTime<Utc>,
) -> Result<Option<String>, AppError> {
    let db = &state.db;
    let zone = viewer::parse_zone_choice(raw)?;
    db::users::set_time_zone(db, actor.user.id, zone.as_deref(), now).await?;
    Ok(zone)
}

/// Remembers `locale` (a code Berth speaks, checked by the caller) as the language of the actor's
/// e-mails: the language they last chose in the portal.
pub async fn set_locale(
    state: &AppState,
    actor: &Actor,
    locale: &str,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    db::users::set_locale(&state.db, actor.user.id, locale, now).await?;
    Ok(())
}

/// Sets the language of `user_id`'s e-mails at sign-in when none is set yet (the browser's).
pub async fn set_first_locale(
    state: &AppState,
    user_id: i64,
    locale: &str,
) -> Result<(), AppError> {
    db::users::set_first_locale(&state.db, user_id, locale).await?;
    Ok(())
}
