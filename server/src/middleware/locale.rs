//! `POST /locale`: the language switch for browsers without JavaScript. Sets the same cookie the
//! i18n context uses, remembers the choice as the language of a signed-in user's e-mails, and
//! sends the browser back where it came from.

use axum::Form;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::state::AppState;
use berth_app::domain::return_to::local_path_or_home;
use berth_app::error::AppError;
use berth_app::i18n::Locale;
use leptos_i18n::Locale as _;
use serde::Deserialize;

/// Name of the cookie that remembers the language (leptos_i18n's default).
pub const LOCALE_COOKIE: &str = "i18n_pref_locale";

/// The language form.
#[derive(Debug, Deserialize)]
pub struct LocaleForm {
    locale: String,
    return_to: Option<String>,
}

/// Stores the chosen language and redirects back (303).
pub async fn set_locale(
    State(state): State<AppState>,
    actor: Result<Actor, AppError>,
    Form(form): Form<LocaleForm>,
) -> Response {
    let Some(locale) = Locale::get_all()
        .iter()
        .find(|locale| locale.as_str().eq_ignore_ascii_case(form.locale.trim()))
    else {
        return (
            StatusCode::BAD_REQUEST,
            format!("unknown language `{}`: use en or pt-BR", form.locale),
        )
            .into_response();
    };
    // Signed in: e-mails follow. Without a session (or with a read-only token) the cookie alone.
    if let Ok(actor) = actor
        && let Err(err) =
            berth_app::backend::profile::set_locale(&state, &actor, locale.as_str(), state.now())
                .await
    {
        return err.into_response();
    }
    let back = local_path_or_home(form.return_to.as_deref());
    let cookie = format!(
        "{LOCALE_COOKIE}={}; Path=/; Max-Age=31536000; SameSite=Lax",
        locale.as_str()
    );
    let mut response = Redirect::to(&back).into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}
