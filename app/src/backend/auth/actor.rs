//! The [`Actor`]: the authenticated user behind a request, from an `Authorization: Bearer` token
//! or the signed-in session. Handlers take it as an argument, so the check happens in the handler
//! itself; without valid credentials the request gets 401 (an expired token says so), and a
//! read-only token gets 403 for any request but `GET`, `HEAD` and `OPTIONS`.

use crate::backend::auth::tokens;
use crate::backend::db;
use crate::backend::db::api_tokens::TokenCheck;
use crate::backend::state::AppState;
use crate::domain::api_token::TokenScope;
use crate::domain::team::TeamMembership;
use crate::domain::user::{PlatformRole, UserSummary};
use crate::error::AppError;
use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use sea_orm::{ConnectionTrait, DbErr};
use std::sync::Arc;
use tokio::sync::OnceCell;
use tower_sessions::Session;

/// The user a request acts for. Clones share what [`Actor::memberships`] has read: an actor
/// lives as long as its request.
#[derive(Debug, Clone)]
pub struct Actor {
    /// Who it is.
    pub user: UserSummary,
    /// The scope of the API token the request came with; `None` for a signed-in session.
    pub token_scope: Option<TokenScope>,
    /// Whether the session's sign-in vouched for the account's address (the identity provider
    /// verified it, and it is the address stored): what lets a page accept the team invitations
    /// sent to it. Never for an API token.
    pub address_vouched: bool,
    /// What the request has read about the actor for more than one reader.
    memo: Arc<Memo>,
}

/// What a page render reads about its viewer in more than one place, read once.
#[derive(Debug, Default)]
struct Memo {
    /// The viewer's teams: the navigation and the calendar both show them.
    memberships: OnceCell<Vec<TeamMembership>>,
}

impl Actor {
    /// `user`, acting through a session (`token_scope` `None`) or an API token of that scope.
    pub fn new(user: UserSummary, token_scope: Option<TokenScope>) -> Self {
        Actor {
            user,
            token_scope,
            address_vouched: false,
            memo: Arc::default(),
        }
    }

    /// The same actor, whose sign-in vouched (or not) for the account's address.
    pub fn with_address_vouched(mut self, vouched: bool) -> Self {
        self.address_vouched = vouched;
        self
    }

    /// The actor's teams, by name: read by the first caller in the request, then shared (a
    /// page's navigation and its body ask both, at once). For what a request shows; a service
    /// that decides on membership reads it under its own transaction instead.
    pub async fn memberships(
        &self,
        db: &impl ConnectionTrait,
    ) -> Result<Vec<TeamMembership>, DbErr> {
        self.memo
            .memberships
            .get_or_try_init(|| crate::backend::db::teams::memberships_of(db, self.user.id))
            .await
            .cloned()
    }
}

impl FromRequestParts<AppState> for Actor {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let (user, token_scope, vouched) = if let Some(token) = bearer_token(parts) {
            let hash = tokens::hash(token);
            match db::api_tokens::authenticate_token(&state.db, &hash, state.now()).await? {
                TokenCheck::Valid(user, scope) => {
                    // Checked here, for every handler and server function alike: a read token
                    // never reaches code that changes something.
                    if !scope.allows_method(parts.method.as_str()) {
                        tracing::info!(user.id = user.id, "read-only token refused for a change");
                        return Err(AppError::Forbidden);
                    }
                    (Some(user), Some(scope), false)
                }
                TokenCheck::Expired => return Err(AppError::TokenExpired),
                TokenCheck::Unknown => (None, None, false),
            }
        } else {
            match session_user(parts, state).await? {
                Some((user_id, vouched)) => (
                    db::users::find_user(&state.db, user_id).await?,
                    None,
                    vouched,
                ),
                None => (None, None, false),
            }
        };
        let user = user.ok_or(AppError::Unauthorized)?;
        tracing::Span::current().record("user.id", user.id);
        Ok(Actor::new(user, token_scope).with_address_vouched(vouched))
    }
}

/// The actor the page guard (the server's sign-in middleware) already found for a page request,
/// kept in the request's extensions so that the server functions the page's render calls do not
/// read the user again: one user read per page instead of one per call (three on the calendar,
/// issue 29's statement log). Only server code inserts extensions; a page request changes
/// nothing while it renders, so the actor cannot go stale within it.
#[derive(Debug, Clone)]
pub struct GuardedActor(pub Actor);

/// The signed-in user of the current page render or server-function call, or `None` when there
/// is none.
pub async fn current_actor() -> Result<Option<Actor>, AppError> {
    let Some(mut parts) = leptos::prelude::use_context::<Parts>() else {
        tracing::error!("request parts missing from the context");
        return Err(AppError::Internal);
    };
    if let Some(GuardedActor(actor)) = parts.extensions.get::<GuardedActor>() {
        return Ok(Some(actor.clone()));
    }
    let state = crate::backend::state::app_state()?;
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

/// The session key that says whether the sign-in vouched for the account's address
/// ([`Actor::address_vouched`]); absent: it did not.
pub const SESSION_ADDRESS_VOUCHED: &str = "address_vouched";

/// The user id stored in the request's session, if it has one, and whether its sign-in vouched
/// for the account's address.
async fn session_user(
    parts: &mut Parts,
    state: &AppState,
) -> Result<Option<(i64, bool)>, AppError> {
    let Ok(session) = Session::from_request_parts(parts, state).await else {
        return Ok(None);
    };
    let unreadable = |err: tower_sessions::session::Error| {
        tracing::error!(error = %err, "reading the session");
        AppError::Unavailable
    };
    let Some(user_id) = session
        .get::<i64>(SESSION_USER_ID)
        .await
        .map_err(unreadable)?
    else {
        return Ok(None);
    };
    let vouched = session
        .get::<bool>(SESSION_ADDRESS_VOUCHED)
        .await
        .map_err(unreadable)?
        .unwrap_or(false);
    Ok(Some((user_id, vouched)))
}

/// The token of an `Authorization: Bearer …` header.
pub fn bearer_token(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::user::Email;
    use leptos::prelude::{Owner, provide_context};

    /// Polls `future` once: what it is asked here needs no waiting.
    fn at_once<T>(future: impl Future<Output = T>) -> T {
        let mut future = std::pin::pin!(future);
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        match future.as_mut().poll(&mut context) {
            std::task::Poll::Ready(value) => value,
            std::task::Poll::Pending => panic!("current_actor waited"),
        }
    }

    fn actor(id: i64) -> Actor {
        Actor::new(
            UserSummary {
                id,
                email: Email::parse("ana@example.com").expect("address"),
                name: "Ana".to_owned(),
                role: PlatformRole::User,
                time_zone: Some("America/Sao_Paulo".to_owned()),
                default_profile_id: None,
            },
            None,
        )
    }

    #[test]
    fn a_guarded_page_render_takes_the_guards_actor_without_the_database() {
        let (mut parts, ()) = http::Request::new(()).into_parts();
        parts.extensions.insert(GuardedActor(actor(42)));
        let found = Owner::new().with(|| {
            provide_context(parts);
            at_once(current_actor())
        });
        let found = found.expect("no error").expect("an actor");
        assert_eq!(found.user.id, 42);
        assert_eq!(found.user.time_zone.as_deref(), Some("America/Sao_Paulo"));
        assert!(found.token_scope.is_none());
    }

    #[test]
    fn without_the_guards_actor_the_request_is_resolved_again() {
        // No application state here: the only way on is the database's, which is not at hand.
        let (parts, ()) = http::Request::new(()).into_parts();
        let found = Owner::new().with(|| {
            provide_context(parts);
            at_once(current_actor())
        });
        assert!(found.is_err(), "{found:?}");
    }
}
