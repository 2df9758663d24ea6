//! The workspace store as nodes reach it, with `Authorization: Bearer <workspace token>` (the
//! token a lease carries; the node's save and restore run as the holder and can reach only the
//! holder's workspace): which chunks a save must upload, chunks up and down, the snapshot, the
//! latest manifest, and a failure to tell the holder. And the caller's own workspace
//! (`GET /api/v1/me/workspace`).

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use berth_app::backend::auth::actor::{Actor, bearer_token};
use berth_app::backend::state::AppState;
use berth_app::backend::workspaces::{self, CheckAnswer, CheckRequest, Grant, SnapshotView, Usage};
use berth_app::domain::workspace::Manifest;
use berth_app::error::AppError;
use serde::{Deserialize, Serialize};

/// Largest manifest body (about 300 bytes an entry).
pub const MAX_MANIFEST_BYTES: usize = 96 * 1024 * 1024;
/// Largest chunk body.
pub const MAX_CHUNK_BYTES: usize = berth_app::domain::workspace::MAX_CHUNK as usize;

/// The grant of the workspace token the request came with.
#[derive(Debug, Clone, Copy)]
pub struct WorkspaceCaller(pub Grant);

impl FromRequestParts<AppState> for WorkspaceCaller {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        Ok(Self(
            workspaces::authenticate(state, bearer_token(parts)).await?,
        ))
    }
}

/// `POST /api/v1/workspace/check` `{"bytes", "chunks": [{"hash","size"}]}`: the chunks to
/// upload (422 `workspace_over_quota` when the workspace is over the quota).
pub async fn check(
    State(state): State<AppState>,
    WorkspaceCaller(grant): WorkspaceCaller,
    body: Result<Json<CheckRequest>, JsonRejection>,
) -> Result<Json<CheckAnswer>, AppError> {
    let Json(body) = body.map_err(super::body_error)?;
    Ok(Json(workspaces::check(&state, grant, body).await?))
}

/// `PUT /api/v1/workspace/chunks/{hash}` with the chunk's bytes (204; 422 when they do not hash
/// to its name).
pub async fn put_chunk(
    State(state): State<AppState>,
    WorkspaceCaller(grant): WorkspaceCaller,
    Path(hash): Path<String>,
    body: Bytes,
) -> Result<StatusCode, AppError> {
    workspaces::put_chunk(&state, grant, &hash, body.to_vec()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/v1/workspace/chunks/{hash}`: the chunk's bytes (the caller checks their hash).
pub async fn get_chunk(
    State(state): State<AppState>,
    WorkspaceCaller(grant): WorkspaceCaller,
    Path(hash): Path<String>,
) -> Result<Response, AppError> {
    let bytes = workspaces::get_chunk(&state, grant, &hash).await?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/octet-stream")],
        bytes,
    )
        .into_response())
}

/// `POST /api/v1/workspace/snapshots` with the manifest (201): records the save.
pub async fn commit(
    State(state): State<AppState>,
    WorkspaceCaller(grant): WorkspaceCaller,
    body: Result<Json<Manifest>, JsonRejection>,
) -> Result<(StatusCode, Json<SnapshotView>), AppError> {
    let Json(manifest) = body.map_err(super::body_error)?;
    Ok((
        StatusCode::CREATED,
        Json(workspaces::commit(&state, grant, manifest).await?),
    ))
}

/// The latest snapshot.
#[derive(Debug, Serialize)]
pub struct Latest {
    id: i64,
    manifest: Manifest,
}

/// `GET /api/v1/workspace/latest`: the holder's latest snapshot (404 `not_found` when nothing
/// was saved yet).
pub async fn latest(
    State(state): State<AppState>,
    WorkspaceCaller(grant): WorkspaceCaller,
) -> Result<Json<Latest>, AppError> {
    let (id, manifest) = workspaces::latest(&state, grant).await?;
    Ok(Json(Latest { id, manifest }))
}

/// What a node says when a save failed.
#[derive(Debug, Deserialize)]
pub struct Failure {
    message: String,
}

/// `POST /api/v1/workspace/failed` `{"message"}` (204): tells the holder their workspace was
/// not saved.
pub async fn failed(
    State(state): State<AppState>,
    WorkspaceCaller(grant): WorkspaceCaller,
    body: Result<Json<Failure>, JsonRejection>,
) -> Result<StatusCode, AppError> {
    let Json(body) = body.map_err(super::body_error)?;
    workspaces::failed(&state, grant, &body.message).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/v1/me/workspace`: the caller's workspace: where it is on the nodes, the quota, what
/// the store holds and the kept snapshots.
pub async fn mine(State(state): State<AppState>, actor: Actor) -> Result<Json<Usage>, AppError> {
    Ok(Json(workspaces::usage(&state, &actor).await?))
}
