//! Signing in and out: the development sign-in (demo users, no identity provider) and sign-out.

use crate::routes::locale::is_local_path;
use axum::Form;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use berth_app::domain::user::{Email, NewUser, PlatformRole, UserName};
use berth_app::error::AppError;
use berth_app::server::auth::actor::SESSION_USER_ID;
use berth_app::server::db;
use berth_app::server::state::AppState;
use serde::Deserialize;
use tower_sessions::Session;

/// The development sign-in form.
#[derive(Debug, Deserialize)]
pub struct DevSignInForm {
    /// `user` or `platform_admin`.
    role: String,
    /// Where to go afterwards.
    return_to: Option<String>,
}

/// `POST /auth/dev`: signs in as the demo user or the demo platform admin (created on first
/// use). 404 unless dev sign-in is enabled.
pub async fn dev_sign_in(
    State(state): State<AppState>,
    session: Session,
    Form(form): Form<DevSignInForm>,
) -> Result<Response, AppError> {
    if !state.portal.dev_sign_in {
        return Err(AppError::NotFound("dev sign-in is disabled".into()));
    }
    let (email, name, role) = match form.role.as_str() {
        "user" => ("demo-user@berth.invalid", "Demo User", PlatformRole::User),
        "platform_admin" => (
            "demo-admin@berth.invalid",
            "Demo Platform Admin",
            PlatformRole::PlatformAdmin,
        ),
        other => {
            return Err(AppError::Validation {
                field: "role".into(),
                message: format!("unknown demo role `{other}`: use user or platform_admin"),
            });
        }
    };
    let new_user = NewUser {
        email: Email::parse(email).map_err(|_| AppError::Internal)?,
        name: UserName::parse(name).map_err(|_| AppError::Internal)?,
        role,
    };
    let user = db::users::upsert_user(&state.db, &new_user, chrono::Utc::now()).await?;
    sign_in(&session, user.id).await?;
    tracing::info!(user.id = user.id, "dev sign-in");
    let back = form
        .return_to
        .filter(|path| is_local_path(path))
        .unwrap_or_else(|| "/".into());
    Ok(Redirect::to(&back).into_response())
}

/// `POST /auth/signout`: deletes the session on the server and clears the cookie.
pub async fn sign_out(session: Session) -> Result<Response, AppError> {
    session.flush().await.map_err(session_error)?;
    Ok(Redirect::to("/").into_response())
}

/// Starts a signed-in session for `user_id` under a new session id, so that an id known before
/// sign-in (session fixation) is worthless afterwards.
async fn sign_in(session: &Session, user_id: i64) -> Result<(), AppError> {
    session.cycle_id().await.map_err(session_error)?;
    session
        .insert(SESSION_USER_ID, user_id)
        .await
        .map_err(session_error)
}

fn session_error(err: tower_sessions::session::Error) -> AppError {
    tracing::error!(error = %err, "session store");
    AppError::Unavailable
}
