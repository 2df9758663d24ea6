//! Who is signed in, and how one can sign in.

use crate::domain::sign_in::{SignInMethods, SignedInUser};
use crate::error::AppError;
use leptos::prelude::*;

/// The signed-in user with their teams, or `None`.
#[server(endpoint = "current_user")]
pub async fn current_user() -> Result<Option<SignedInUser>, AppError> {
    use crate::api::context::maybe_signed_in;
    maybe_signed_in(|call| async move {
        match call {
            Some(call) => Ok(Some(
                crate::backend::session::signed_in_user(&call.state, call.actor, call.now).await?,
            )),
            None => Ok(None),
        }
    })
    .await
}

/// The sign-in methods this server offers.
#[server(endpoint = "list_sign_in_methods")]
pub async fn list_sign_in_methods() -> Result<SignInMethods, AppError> {
    let state = crate::backend::state::app_state()?;
    Ok(SignInMethods {
        providers: state.oidc.buttons(),
        dev_sign_in: state.portal.dev_sign_in,
    })
}
