//! Who is signed in, and how one can sign in.

use crate::domain::sign_in::{SignInMethods, SignedInUser};
use crate::error::AppError;
use leptos::prelude::*;

/// The signed-in user with their teams, or `None`.
#[server(endpoint = "current_user")]
pub async fn current_user() -> Result<Option<SignedInUser>, AppError> {
    use crate::server::{auth::actor::current_actor, db, state};
    state::with_status(
        async {
            let Some(actor) = current_actor().await? else {
                return Ok(None);
            };
            let state = state::app_state()?;
            let (teams, payments_due, displaced, approvals_waiting) = tokio::try_join!(
                db::teams::memberships_of(&state.db, actor.user.id),
                db::payments::count_due(&state.db, actor.user.id),
                db::quotas::count_displaced(&state.db, actor.user.id, chrono::Utc::now()),
                db::quotas::count_awaiting_for_admin(&state.db, actor.user.id),
            )?;
            Ok(Some(SignedInUser {
                user: actor.user,
                teams,
                payments_due,
                displaced,
                approvals_waiting,
            }))
        }
        .await,
    )
}

/// The sign-in methods this server offers.
#[server(endpoint = "list_sign_in_methods")]
pub async fn list_sign_in_methods() -> Result<SignInMethods, AppError> {
    let state = crate::server::state::app_state()?;
    Ok(SignInMethods {
        providers: state.oidc.buttons(),
        dev_sign_in: state.portal.dev_sign_in,
    })
}
