//! Who is signed in, and how one can sign in.

use crate::domain::user::{SignInMethods, UserSummary};
use crate::error::AppError;
use leptos::prelude::*;

/// The signed-in user, or `None`.
#[server(endpoint = "current_user")]
pub async fn current_user() -> Result<Option<UserSummary>, AppError> {
    use crate::server::{auth::actor::current_actor, state::with_status};
    with_status(
        current_actor()
            .await
            .map(|actor| actor.map(|actor| actor.user)),
    )
}

/// The sign-in methods this server offers.
#[server(endpoint = "list_sign_in_methods")]
pub async fn list_sign_in_methods() -> Result<SignInMethods, AppError> {
    let state = crate::server::state::app_state()?;
    Ok(SignInMethods {
        dev_sign_in: state.portal.dev_sign_in,
    })
}
