//! Signing in and out: OpenID Connect (start and callback), the development sign-in (demo
//! accounts, no identity provider) and sign-out.

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use berth_app::backend::auth::actor::{SESSION_ADDRESS_VOUCHED, SESSION_USER_ID};
use berth_app::backend::auth::oidc::{CallbackParams, PendingSignIn, SESSION_PENDING_SIGN_IN};
use berth_app::backend::demo::{self, DemoAccount};
use berth_app::backend::session::{self, IdentitySignIn};
use berth_app::backend::state::AppState;
use berth_app::domain::return_to::local_path_or_home;
use berth_app::domain::sign_in::{SignInFailure, vouched_address};
use berth_app::error::AppError;
use serde::Deserialize;
use tower_sessions::{Expiry, Session};

/// How long a signed-out visitor's session lives while they are at the identity provider.
const PENDING_SESSION_LIFETIME: time::Duration = time::Duration::minutes(15);

/// Where to go after signing in.
#[derive(Debug, Deserialize)]
pub struct ReturnTo {
    /// A path on this site; anything else is replaced by `/`.
    return_to: Option<String>,
}

impl ReturnTo {
    fn path(self) -> String {
        local_path_or_home(self.return_to.as_deref())
    }
}

/// `GET /auth/oidc/{provider}/start`: remembers state, PKCE verifier and nonce in the session and
/// sends the browser to the provider.
#[tracing::instrument(skip_all, fields(oidc.provider = %provider))]
pub async fn oidc_start(
    State(state): State<AppState>,
    Path(provider): Path<String>,
    session: Session,
    Query(return_to): Query<ReturnTo>,
) -> Result<Response, AppError> {
    match state
        .oidc
        .start(&provider, return_to.path(), state.now())
        .await
    {
        Ok((url, pending)) => {
            // A visitor's session that only waits for the provider is kept for minutes, not
            // the days of a signed-in one.
            let signed_in = session
                .get::<i64>(SESSION_USER_ID)
                .await
                .map_err(session_error)?
                .is_some();
            if !signed_in {
                session.set_expiry(Some(Expiry::OnInactivity(PENDING_SESSION_LIFETIME)));
            }
            session
                .insert(SESSION_PENDING_SIGN_IN, pending)
                .await
                .map_err(session_error)?;
            Ok(Redirect::to(&url).into_response())
        }
        Err(failure) => Ok(failed(failure)),
    }
}

/// `GET /auth/oidc/{provider}/callback`: the provider sends the browser back here. Verifies
/// everything, binds or creates the user, and starts the signed-in session under a new id. Any
/// failure goes back to the sign-in page with the reason and no session.
#[tracing::instrument(skip_all, fields(oidc.provider = %provider, user.id))]
pub async fn oidc_callback(
    State(state): State<AppState>,
    Path(provider): Path<String>,
    session: Session,
    headers: axum::http::HeaderMap,
    Query(params): Query<CallbackParams>,
) -> Result<Response, AppError> {
    // Single use: whatever happens next, this sign-in attempt is over.
    let pending: Option<PendingSignIn> = session
        .remove(SESSION_PENDING_SIGN_IN)
        .await
        .map_err(session_error)?;
    let now = state.now();
    let (identity, return_to) = match state.oidc.finish(&provider, pending, params, now).await {
        Ok(found) => found,
        Err(failure) => {
            tracing::warn!(failure = failure.code(), "sign-in refused");
            return Ok(failed(failure));
        }
    };
    match session::sign_in_identity(&state, &identity, now).await? {
        IdentitySignIn::User(user) => {
            // Invitations go to an address: they are accepted only when the provider verifies,
            // at this sign-in, the very address stored on the account.
            let verified =
                vouched_address(&user.email, &identity.email, identity.email_verified).is_some();
            sign_in(&session, &state, &user, verified, &headers).await?;
            tracing::Span::current().record("user.id", user.id);
            tracing::info!(user.id = user.id, "signed in");
            Ok(Redirect::to(&local_path_or_home(Some(&return_to))).into_response())
        }
        IdentitySignIn::EmailTaken => {
            tracing::warn!("sign-in refused: the e-mail address belongs to another account");
            Ok(failed(SignInFailure::AccountConflict))
        }
    }
}

/// Back to the sign-in page, which explains `failure`.
fn failed(failure: SignInFailure) -> Response {
    Redirect::to(&format!("/signin?error={}", failure.code())).into_response()
}

/// The development sign-in form.
#[derive(Debug, Deserialize)]
pub struct DevSignInForm {
    /// `user`, `team_admin` or `platform_admin`.
    role: String,
    /// Where to go afterwards.
    return_to: Option<String>,
}

/// `POST /auth/dev`: signs in as a demo account (created on first use). 404 unless dev sign-in
/// is enabled.
pub async fn dev_sign_in(
    State(state): State<AppState>,
    session: Session,
    headers: axum::http::HeaderMap,
    Form(form): Form<DevSignInForm>,
) -> Result<Response, AppError> {
    if !state.portal.dev_sign_in {
        return Err(AppError::NotFound("dev sign-in is disabled".into()));
    }
    let account = DemoAccount::parse(&form.role).ok_or_else(|| {
        AppError::invalid(
            "role",
            berth_app::domain::problem::Problem::UnknownAccount {
                raw: form.role.clone(),
            },
        )
    })?;
    let user = demo::demo_account(&state.db, account, state.now()).await?;
    sign_in(&session, &state, &user, true, &headers).await?;
    tracing::info!(user.id = user.id, "dev sign-in");
    let back = ReturnTo {
        return_to: form.return_to,
    }
    .path();
    Ok(Redirect::to(&back).into_response())
}

/// `POST /auth/signout`: deletes the session on the server and clears the cookie.
pub async fn sign_out(session: Session) -> Result<Response, AppError> {
    session.flush().await.map_err(session_error)?;
    Ok(Redirect::to("/signin").into_response())
}

/// Starts a signed-in session for `user` under a new session id, so that an id known before
/// sign-in (session fixation) is worthless afterwards, and accepts the team invitations sent to
/// their address when it is verified. The language the browser asks for becomes the language of
/// the user's e-mails if they have none yet.
async fn sign_in(
    session: &Session,
    state: &AppState,
    user: &berth_app::domain::user::UserSummary,
    email_verified: bool,
    headers: &axum::http::HeaderMap,
) -> Result<(), AppError> {
    let user_id = user.id;
    berth_app::backend::profile::set_first_locale(
        state,
        user_id,
        berth_app::text::language::language_of(headers),
    )
    .await?;
    let joined = berth_app::backend::teams::accept_invitations(
        state,
        user_id,
        &user.email,
        email_verified,
        state.now(),
    )
    .await?;
    for team in joined {
        tracing::info!(
            user.id = user_id,
            team.id = team.team_id,
            "joined a team by invitation"
        );
    }
    session.cycle_id().await.map_err(session_error)?;
    // The configured inactivity expiry (a visitor's session waiting for the provider was short).
    session.set_expiry(Some(Expiry::OnInactivity(time::Duration::days(i64::from(
        state.portal.session_idle_days,
    )))));
    session
        .insert(SESSION_ADDRESS_VOUCHED, email_verified)
        .await
        .map_err(session_error)?;
    session
        .insert(SESSION_USER_ID, user_id)
        .await
        .map_err(session_error)
}

fn session_error(err: tower_sessions::session::Error) -> AppError {
    tracing::error!(error = %err, "session store");
    AppError::Unavailable
}
