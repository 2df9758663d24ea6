//! The [`Actor`]: the authenticated user behind a request. Handlers take it as an argument, so
//! the check happens in the handler itself; without valid credentials the request gets 401.

use crate::domain::user::UserSummary;
use crate::error::AppError;
use crate::server::auth::tokens;
use crate::server::db;
use crate::server::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

/// The user a request acts for.
#[derive(Debug, Clone)]
pub struct Actor {
    /// Who it is.
    pub user: UserSummary,
}

impl FromRequestParts<AppState> for Actor {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let Some(token) = bearer_token(parts) else {
            return Err(AppError::Unauthorized);
        };
        let user =
            db::api_tokens::authenticate_token(&state.db, &tokens::hash(token), chrono::Utc::now())
                .await?
                .ok_or(AppError::Unauthorized)?;
        tracing::Span::current().record("user.id", user.id);
        Ok(Actor { user })
    }
}

/// The token of an `Authorization: Bearer …` header.
fn bearer_token(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}
