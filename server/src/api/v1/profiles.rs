//! Environment profiles in the JSON API: list, create, show with versions, edit (a changed spec
//! makes a new version), delete, and the caller's default profile.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::env_profiles::{self, ProfileBody};
use berth_app::backend::state::AppState;
use berth_app::domain::profile::{Profile, ProfileVersion};
use berth_app::error::AppError;
use serde::{Deserialize, Serialize};

/// `GET /api/v1/profiles`: the caller's profiles and those shared with their teams.
pub async fn list(
    State(state): State<AppState>,
    actor: Actor,
) -> Result<Json<Vec<Profile>>, AppError> {
    Ok(Json(env_profiles::list(&state, &actor).await?))
}

/// `POST /api/v1/profiles` (201): `{"name", "team_id"?, "variables": [{"name","value"}],
/// "python"?, "packages": [..], "setup_script", "dotfiles": [{"path","content"}], "default"?}`.
pub async fn create(
    State(state): State<AppState>,
    actor: Actor,
    body: Result<Json<ProfileBody>, JsonRejection>,
) -> Result<(StatusCode, Json<Profile>), AppError> {
    let Json(body) = body.map_err(super::body_error)?;
    let profile = env_profiles::create(&state, &actor, &body).await?;
    Ok((StatusCode::CREATED, Json(profile)))
}

/// A profile with its versions.
#[derive(Debug, Serialize)]
pub struct ProfileWithVersions {
    /// The profile, with its latest version.
    #[serde(flatten)]
    profile: Profile,
    /// Every version, newest first.
    versions: Vec<ProfileVersion>,
}

/// `GET /api/v1/profiles/{id}`.
pub async fn show(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<Json<ProfileWithVersions>, AppError> {
    let (profile, versions) = env_profiles::get(&state, &actor, id).await?;
    Ok(Json(ProfileWithVersions { profile, versions }))
}

/// `PUT /api/v1/profiles/{id}`: the whole profile again (its owner only).
pub async fn update(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
    body: Result<Json<ProfileBody>, JsonRejection>,
) -> Result<Json<Profile>, AppError> {
    let Json(body) = body.map_err(super::body_error)?;
    Ok(Json(env_profiles::update(&state, &actor, id, &body).await?))
}

/// `DELETE /api/v1/profiles/{id}` (204; bookings keep their version).
pub async fn remove(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<StatusCode, AppError> {
    env_profiles::archive(&state, &actor, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Body of `PUT /api/v1/me/default-profile`.
#[derive(Debug, Deserialize)]
pub struct DefaultBody {
    /// A profile id, or null for none.
    profile: Option<i64>,
}

/// `PUT /api/v1/me/default-profile`: `{"profile": id}` or `{"profile": null}` (204).
pub async fn set_default(
    State(state): State<AppState>,
    actor: Actor,
    body: Result<Json<DefaultBody>, JsonRejection>,
) -> Result<StatusCode, AppError> {
    let Json(body) = body.map_err(super::body_error)?;
    env_profiles::set_default(&state, &actor, body.profile).await?;
    Ok(StatusCode::NO_CONTENT)
}
