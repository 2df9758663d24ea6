//! The [`Actor`]: the authenticated user behind a request, from an `Authorization: Bearer` token
//! or the signed-in session. Handlers take it as an argument, so the check happens in the handler
//! itself; without valid credentials the request gets 401 (an expired token says so), and a
//! read-only token gets 403 for any request but `GET`, `HEAD` and `OPTIONS`.

use crate::backend::auth::tokens;
use crate::backend::db;
use crate::backend::db::api_tokens::TokenCheck;
use crate::backend::state::AppState;
use crate::domain::api_token::TokenScope;
use crate::domain::user::{PlatformRole, UserSummary};
use crate::error::AppError;
use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use tower_sessions::Session;

/// The user a request acts for.
#[derive(Debug, Clone)]
pub struct Actor {
    /// Who it is.
    pub user: UserSummary,
    /// The scope of the API token the request came with; `None` for a signed-in session.
    pub token_scope: Option<TokenScope>,
}

impl FromRequestParts<AppState> for Actor {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let (user, token_scope) = if let Some(token) = bearer_token(parts) {
            let hash = tokens::hash(token);
            match db::api_tokens::authenticate_token(&state.db, &hash, state.now()).await? {
                TokenCheck::Valid(user, scope) => {
                    // Checked here, for every handler and server function alike: a read token
                    // never reaches code that changes something.
                    if !scope.allows_method(parts.method.as_str()) {
                        tracing::info!(user.id = user.id, "read-only token refused for a change");
                        return Err(AppError::Forbidden);
                    }
                    (Some(user), Some(scope))
                }
                TokenCheck::Expired => return Err(AppError::TokenExpired),
                TokenCheck::Unknown => (None, None),
            }
        } else {
            match session_user_id(parts, state).await? {
                Some(user_id) => (db::users::find_user(&state.db, user_id).await?, None),
                None => (None, None),
            }
        };
        let user = user.ok_or(AppError::Unauthorized)?;
        tracing::Span::current().record("user.id", user.id);
        Ok(Actor { user, token_scope })
    }
}

/// The signed-in user of the current page render or server-function call, or `None` when there
/// is none.
pub async fn current_actor() -> Result<Option<Actor>, AppError> {
    let state = crate::backend::state::app_state()?;
    let Some(mut parts) = leptos::prelude::use_context::<Parts>() else {
        tracing::error!("request parts missing from the context");
        return Err(AppError::Internal);
    };
    match Actor::from_request_parts(&mut parts, &state).await {
        Ok(actor) => Ok(Some(actor)),
        Err(AppError::Unauthorized) => Ok(None),
        Err(other) => Err(other),
    }
}

/// The signed-in user of the current server-function call; [`AppError::Unauthorized`] when
/// there is none.
pub async fn require_actor() -> Result<Actor, AppError> {
    current_actor().await?.ok_or(AppError::Unauthorized)
}

impl Actor {
    /// Succeeds only for a signed-in session ([`AppError::Forbidden`] for an API token): what a
    /// token must not do, such as creating more tokens.
    pub fn require_session(&self) -> Result<(), AppError> {
        if self.token_scope.is_none() {
            Ok(())
        } else {
            Err(AppError::Forbidden)
        }
    }

    /// Succeeds only for platform admins ([`AppError::Forbidden`] otherwise).
    pub fn require_platform_admin(&self) -> Result<(), AppError> {
        if self.user.role == PlatformRole::PlatformAdmin {
            Ok(())
        } else {
            Err(AppError::Forbidden)
        }
    }
}

/// The session key that holds the signed-in user's id.
pub const SESSION_USER_ID: &str = "user_id";

/// The user id stored in the request's session, if it has one.
async fn session_user_id(parts: &mut Parts, state: &AppState) -> Result<Option<i64>, AppError> {
    let Ok(session) = Session::from_request_parts(parts, state).await else {
        return Ok(None);
    };
    session.get::<i64>(SESSION_USER_ID).await.map_err(|err| {
        tracing::error!(error = %err, "reading the session");
        AppError::Unavailable
    })
}

/// The token of an `Authorization: Bearer …` header.
pub fn bearer_token(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}
