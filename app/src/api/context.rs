//! What every server function begins and ends with: who is calling, the state, the time and the
//! viewer's time zone at the start; at the end, the refusal put into the reader's language and
//! the response's HTTP status set to match.

use crate::backend::auth::actor::{Actor, current_actor, require_actor};
use crate::backend::state::{AppState, app_state};
use crate::backend::viewer;
use crate::domain::zone::ZoneOffsets;
use crate::error::AppError;
use chrono::{DateTime, Utc};
use leptos::prelude::*;

/// One server-function call by a signed-in user.
#[derive(Debug, Clone)]
pub struct Call {
    /// Who is calling.
    pub actor: Actor,
    /// The portal.
    pub state: AppState,
    /// The portal clock's time when the call began.
    pub now: DateTime<Utc>,
}

impl Call {
    /// The zone the caller sees times in (profile setting, else the browser's cookie).
    pub fn zone(&self) -> Option<String> {
        viewer::request_zone(&self.actor)
    }

    /// The caller's zone's offsets over `[from, to]`.
    pub fn zone_over(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> ZoneOffsets {
        viewer::zone_named(self.zone().as_deref(), from, to)
    }
}

/// Runs `f` for the signed-in caller (401 without one).
pub async fn signed_in<T, Fut>(f: impl FnOnce(Call) -> Fut) -> Result<T, AppError>
where
    Fut: Future<Output = Result<T, AppError>>,
{
    answer(
        async {
            let actor = require_actor().await?;
            let state = app_state()?;
            let now = state.now();
            f(Call { actor, state, now }).await
        }
        .await,
    )
}

/// Runs `f` for a platform admin (401 without a user, 403 for anyone else).
pub async fn platform_admin<T, Fut>(f: impl FnOnce(Call) -> Fut) -> Result<T, AppError>
where
    Fut: Future<Output = Result<T, AppError>>,
{
    signed_in(|call| async move {
        call.actor.require_platform_admin()?;
        f(call).await
    })
    .await
}

/// Runs `f` with the caller if one is signed in, else `None`.
pub async fn maybe_signed_in<T, Fut>(f: impl FnOnce(Option<Call>) -> Fut) -> Result<T, AppError>
where
    Fut: Future<Output = Result<T, AppError>>,
{
    answer(
        async {
            let state = app_state()?;
            let now = state.now();
            let call = current_actor()
                .await?
                .map(|actor| Call { actor, state, now });
            f(call).await
        }
        .await,
    )
}

/// Passes `result` through, setting the HTTP status of the current response to match the error
/// (503 when the database is down, 401, 403, …) instead of the default 500. Problems with the
/// input or the current state are put into the reader's language here
/// ([`AppError::Explained`]).
pub fn answer<T>(result: Result<T, AppError>) -> Result<T, AppError> {
    let result = result.map_err(crate::text::language::explained);
    if let Err(error) = &result
        && let Some(response) = use_context::<leptos_axum::ResponseOptions>()
        && let Ok(status) = http::StatusCode::from_u16(error.status_code())
    {
        response.set_status(status);
    }
    result
}
