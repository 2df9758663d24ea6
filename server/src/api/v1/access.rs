//! Access to the nodes in the JSON API: a user's login and SSH keys, a platform admin's
//! changes to logins and node intruder policies, and a holder's keep-running choice.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::node_access;
use berth_app::backend::state::AppState;
use berth_app::domain::lease::{IntruderPolicy, NodeAccess, SshKeyInfo};
use berth_app::error::AppError;
use serde::Deserialize;

/// `GET /api/v1/me/access`: the caller's login on the nodes and SSH keys.
pub async fn mine(
    State(state): State<AppState>,
    actor: Actor,
) -> Result<Json<NodeAccess>, AppError> {
    Ok(Json(node_access::access_of(&state, &actor).await?))
}

/// Body of `POST /api/v1/me/ssh-keys`.
#[derive(Debug, Deserialize)]
pub struct NewKey {
    /// A name (default: the key's comment).
    #[serde(default)]
    name: String,
    /// The public key line.
    key: String,
}

/// `POST /api/v1/me/ssh-keys`: adds a key (201).
pub async fn add_key(
    State(state): State<AppState>,
    actor: Actor,
    body: Result<Json<NewKey>, JsonRejection>,
) -> Result<(StatusCode, Json<SshKeyInfo>), AppError> {
    let Json(body) = body.map_err(super::body_error)?;
    let key = node_access::add_key(&state, &actor, &body.name, &body.key).await?;
    Ok((StatusCode::CREATED, Json(key)))
}

/// `DELETE /api/v1/me/ssh-keys/{id}` (204).
pub async fn remove_key(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<StatusCode, AppError> {
    node_access::remove_key(&state, &actor, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Body of `PUT /api/v1/admin/users/{id}/login`.
#[derive(Debug, Deserialize)]
pub struct LoginBody {
    login: String,
}

/// `PUT /api/v1/admin/users/{id}/login`: a platform admin changes a user's login.
pub async fn set_login(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
    body: Result<Json<LoginBody>, JsonRejection>,
) -> Result<Json<serde_json::Value>, AppError> {
    let Json(body) = body.map_err(super::body_error)?;
    let login = node_access::set_login(&state, &actor, id, &body.login).await?;
    Ok(Json(serde_json::json!({ "user_id": id, "login": login })))
}

/// Body of `PUT /api/v1/admin/nodes/{id}/policy`.
#[derive(Debug, Deserialize)]
pub struct PolicyBody {
    intruders: String,
    #[serde(default)]
    protect_idle: bool,
}

/// `PUT /api/v1/admin/nodes/{id}/policy`: `{"intruders": "off|report|terminate",
/// "protect_idle": bool}`.
pub async fn set_policy(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
    body: Result<Json<PolicyBody>, JsonRejection>,
) -> Result<StatusCode, AppError> {
    let Json(body) = body.map_err(super::body_error)?;
    let policy = IntruderPolicy::parse(&body.intruders)
        .map_err(|problem| AppError::invalid("intruders", problem))?;
    node_access::set_policy(&state, &actor, id, policy, body.protect_idle).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Body of `PUT /api/v1/reservations/{id}/keep-running`.
#[derive(Debug, Deserialize)]
pub struct KeepBody {
    keep_running: bool,
}

/// `PUT /api/v1/reservations/{id}/keep-running`: the holder's processes may run past the end
/// until a following booking needs the GPU.
pub async fn keep_running(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
    body: Result<Json<KeepBody>, JsonRejection>,
) -> Result<StatusCode, AppError> {
    let Json(body) = body.map_err(super::body_error)?;
    node_access::set_keep_running(&state, &actor, id, body.keep_running).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/v1/gpus/{id}/access-events?limit=&cursor=`: what node agents did and saw on the
/// GPU, newest first, a page at a time (platform admins; the next page is in the `Link` header).
pub async fn gpu_events(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
    axum::extract::OriginalUri(uri): axum::extract::OriginalUri,
    query: Result<axum::extract::Query<super::PageQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<
    (
        axum::http::HeaderMap,
        Json<Vec<berth_app::domain::telemetry::GpuAccessEvent>>,
    ),
    AppError,
> {
    let axum::extract::Query(query) = query.map_err(super::query_error)?;
    let page = query.page(berth_app::domain::paging::ListKind::AccessEvents);
    Ok(super::paged(
        &uri,
        node_access::gpu_access_events(&state, &actor, id, page).await?,
    ))
}

/// `GET /api/v1/reservations/{id}/access`: the reservation on its node (state, how to connect,
/// its GPUs' latest values, what the agent did), for its holder or a platform admin.
pub async fn reservation(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<Json<berth_app::domain::lease::ReservationAccess>, AppError> {
    Ok(Json(
        node_access::reservation_access(&state, &actor, id, state.now()).await?,
    ))
}
