//! The workspace store as a service: content-addressed chunks per user in a directory or an
//! S3-compatible bucket (through `object_store`), snapshots (manifests) in the database, the
//! per-user quota, and the tokens that let a node save and restore one reservation holder's
//! workspace — and nothing else.
//!
//! A node agent gets a workspace token with each lease in its schedule. It runs the save and
//! the restore as the holder (never as root), handing that process the token: the token can
//! reach only that holder's workspace, only around that reservation's time.

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::entity::workspace_snapshot;
use crate::backend::notify;
use crate::backend::state::AppState;
use crate::domain::notify::NewEvent;
use crate::domain::problem::Problem;
use crate::domain::workspace::hex;
use crate::domain::workspace::{self, ChunkRef, Manifest};
use crate::error::AppError;
use chrono::{DateTime, TimeDelta, Utc};
use hmac::{Hmac, Mac};
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};
use sea_orm::ActiveValue::{NotSet, Set};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::collections::HashSet;
use std::sync::Arc;

/// Where chunks are kept.
#[derive(Clone)]
pub struct WorkspaceStore {
    store: Arc<dyn ObjectStore>,
    describe: String,
}

impl std::fmt::Debug for WorkspaceStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe)
    }
}

impl WorkspaceStore {
    /// Chunks in files under `dir` (made if missing).
    pub fn directory(dir: &std::path::Path) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|err| {
            format!(
                "cannot make the workspace store directory {}: {err}",
                dir.display()
            )
        })?;
        let store = object_store::local::LocalFileSystem::new_with_prefix(dir)
            .map_err(|err| format!("workspace store {}: {err}", dir.display()))?;
        Ok(Self {
            store: Arc::new(store),
            describe: format!("directory {}", dir.display()),
        })
    }

    /// Chunks in `url` (`s3://bucket` or `s3://bucket/prefix`); credentials and region from
    /// the usual `AWS_*` variables; `endpoint` for an S3-compatible service other than AWS.
    pub fn s3(
        url: &str,
        endpoint: Option<&str>,
        region: Option<&str>,
        credentials: Option<(&str, &str)>,
    ) -> Result<Self, String> {
        let parsed =
            url::Url::parse(url).map_err(|err| format!("workspace store `{url}`: {err}"))?;
        let bucket = parsed
            .host_str()
            .filter(|b| !b.is_empty())
            .ok_or_else(|| format!("workspace store `{url}`: name a bucket, s3://BUCKET/PREFIX"))?;
        let mut builder = object_store::aws::AmazonS3Builder::from_env().with_bucket_name(bucket);
        if let Some(endpoint) = endpoint {
            builder = builder
                .with_endpoint(endpoint)
                .with_allow_http(endpoint.starts_with("http://"))
                .with_virtual_hosted_style_request(false);
        }
        if let Some(region) = region {
            builder = builder.with_region(region);
        }
        if let Some((id, secret)) = credentials {
            builder = builder
                .with_access_key_id(id)
                .with_secret_access_key(secret);
        }
        let s3 = builder
            .build()
            .map_err(|err| format!("workspace store `{url}`: {err}"))?;
        let prefix = parsed.path().trim_matches('/');
        let store: Arc<dyn ObjectStore> = if prefix.is_empty() {
            Arc::new(s3)
        } else {
            Arc::new(object_store::prefix::PrefixStore::new(s3, prefix))
        };
        Ok(Self {
            store,
            describe: format!("S3 {url}"),
        })
    }

    fn key(user_id: i64, hash: &str) -> StorePath {
        StorePath::from(format!("users/{user_id}/chunks/{}/{hash}", &hash[..2]))
    }

    async fn put(&self, user_id: i64, hash: &str, bytes: Vec<u8>) -> Result<(), AppError> {
        self.store
            .put(&Self::key(user_id, hash), bytes.into())
            .await
            .map_err(store_error)?;
        Ok(())
    }

    async fn get(&self, user_id: i64, hash: &str) -> Result<Vec<u8>, AppError> {
        let found = self
            .store
            .get(&Self::key(user_id, hash))
            .await
            .map_err(store_error)?;
        Ok(found.bytes().await.map_err(store_error)?.to_vec())
    }

    async fn delete(&self, user_id: i64, hash: &str) {
        if let Err(err) = self.store.delete(&Self::key(user_id, hash)).await {
            tracing::warn!(error = %err, user = user_id, hash, "deleting an unused workspace chunk");
        }
    }
}

fn store_error(err: object_store::Error) -> AppError {
    tracing::error!(error = %err, "workspace store");
    match err {
        object_store::Error::NotFound { .. } => AppError::NotFound("chunk".into()),
        _ => AppError::Unavailable,
    }
}

/// The workspace settings nodes follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceSettings {
    /// The most a workspace may hold, in bytes (`workspace_quota_mib`).
    pub quota_bytes: u64,
    /// The workspace directory on the nodes: relative to the holder's home, or absolute
    /// (`workspace_dir`, default `berth-workspace`).
    pub dir: String,
    /// The directory is on a filesystem every node shares: nothing is saved or restored
    /// (`workspace_shared`).
    pub shared: bool,
}

impl Default for WorkspaceSettings {
    fn default() -> Self {
        Self {
            quota_bytes: 20 * 1024 * 1024 * 1024,
            dir: "berth-workspace".to_owned(),
            shared: false,
        }
    }
}

/// A restore waits for the save of a lease of the same holder that ended this recently.
const SAVE_AWAITED: TimeDelta = TimeDelta::minutes(10);

/// Tokens start with this.
const TOKEN_PREFIX: &str = "bws1.";
/// A token works from this long before its reservation's start…
const BEFORE_START: TimeDelta = TimeDelta::hours(25);
/// …to this long after its end (a save of a large workspace after the lease closes).
const AFTER_END: TimeDelta = TimeDelta::hours(6);

async fn key(state: &AppState) -> Result<Vec<u8>, AppError> {
    use base64::Engine;
    use rand::RngCore;
    let mut fresh = [0u8; 32];
    rand::rng().fill_bytes(&mut fresh);
    let fresh = base64::engine::general_purpose::STANDARD.encode(fresh);
    let stored = db::workspaces::key_or_insert(&state.db, "workspace_tokens", fresh).await?;
    base64::engine::general_purpose::STANDARD
        .decode(stored)
        .map_err(AppError::internal)
}

fn mac(key: &[u8], reservation_id: i64, user_id: i64) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(format!("workspace:{reservation_id}:{user_id}").as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// The workspace tokens of `leases` (reservation id, holder id), as the schedule hands them.
pub async fn tokens_for(
    state: &AppState,
    leases: &[(i64, i64)],
) -> Result<std::collections::HashMap<i64, String>, AppError> {
    if leases.is_empty() || state.portal.workspace.shared {
        return Ok(Default::default());
    }
    let key = key(state).await?;
    Ok(leases
        .iter()
        .map(|(reservation, user)| {
            (
                *reservation,
                format!(
                    "{TOKEN_PREFIX}{reservation}.{}",
                    hex(&mac(&key, *reservation, *user))
                ),
            )
        })
        .collect())
}

/// Whose workspace a token reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The holder.
    pub user_id: i64,
    /// The reservation it came with.
    pub reservation_id: i64,
    /// That reservation's node.
    pub node_id: i64,
}

/// Checks a workspace token (401 when it is not one, or no longer works).
pub async fn authenticate(state: &AppState, token: Option<&str>) -> Result<Grant, AppError> {
    use subtle::ConstantTimeEq;
    let token = token.ok_or(AppError::Unauthorized)?;
    let rest = token
        .strip_prefix(TOKEN_PREFIX)
        .ok_or(AppError::Unauthorized)?;
    let (id, sent) = rest.split_once('.').ok_or(AppError::Unauthorized)?;
    let id: i64 = id.parse().map_err(|_| AppError::Unauthorized)?;
    if sent.len() != 64 {
        return Err(AppError::Unauthorized);
    }
    let row = db::reservations::row(&state.db, id)
        .await?
        .ok_or(AppError::Unauthorized)?;
    let expected = hex(&mac(&key(state).await?, row.id, row.owner_id));
    if !bool::from(expected.as_bytes().ct_eq(sent.as_bytes())) {
        return Err(AppError::Unauthorized);
    }
    let now = state.now();
    if now < row.start_at - BEFORE_START || now > row.end_at + AFTER_END {
        return Err(AppError::TokenExpired);
    }
    Ok(Grant {
        user_id: row.owner_id,
        reservation_id: row.id,
        node_id: row.node_id,
    })
}

/// What a save asks before uploading: which of its chunks the store lacks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckRequest {
    /// The workspace's size (the quota counts it).
    pub bytes: u64,
    /// Its distinct chunks.
    pub chunks: Vec<ChunkRef>,
}

/// The answer to a [`CheckRequest`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckAnswer {
    /// Chunks to upload.
    pub missing: Vec<String>,
    /// The quota, in bytes.
    pub quota_bytes: u64,
}

/// Which chunks a save must upload; refuses a workspace over the quota (and tells the holder).
pub async fn check(
    state: &AppState,
    grant: Grant,
    request: CheckRequest,
) -> Result<CheckAnswer, AppError> {
    if request.chunks.len() > workspace::MAX_ENTRIES * 4 {
        return Err(AppError::invalid(
            "chunks",
            Problem::BadManifest {
                detail: "too many chunks".into(),
            },
        ));
    }
    if let Some(bad) = request
        .chunks
        .iter()
        .find(|c| !workspace::is_hash(&c.hash) || c.size > workspace::MAX_CHUNK)
    {
        return Err(AppError::invalid(
            "chunks",
            Problem::BadManifest {
                detail: format!(
                    "`{}` is not a chunk",
                    bad.hash.chars().take(80).collect::<String>()
                ),
            },
        ));
    }
    let quota = state.portal.workspace.quota_bytes;
    if let Err(problem) = workspace::check_quota(request.bytes, quota) {
        tell_not_saved(state, grant, Some((request.bytes, quota)), None).await?;
        return Err(AppError::invalid("bytes", problem));
    }
    let hashes: Vec<String> = request.chunks.iter().map(|c| c.hash.clone()).collect();
    let known: HashSet<String> = db::workspaces::known_chunks(&state.db, grant.user_id, &hashes)
        .await?
        .into_iter()
        .map(|(hash, _)| hash)
        .collect();
    let mut seen = HashSet::new();
    let missing = hashes
        .into_iter()
        .filter(|h| !known.contains(h) && seen.insert(h.clone()))
        .collect();
    Ok(CheckAnswer {
        missing,
        quota_bytes: quota,
    })
}

/// Stores one chunk, after checking that its bytes hash to its name.
pub async fn put_chunk(
    state: &AppState,
    grant: Grant,
    hash: &str,
    bytes: Vec<u8>,
) -> Result<(), AppError> {
    if !workspace::is_hash(hash) {
        return Err(AppError::NotFound("chunk".into()));
    }
    if bytes.len() > workspace::MAX_CHUNK as usize {
        return Err(AppError::invalid(
            "body",
            Problem::BadManifest {
                detail: format!("a chunk is at most {} bytes", workspace::MAX_CHUNK),
            },
        ));
    }
    if workspace::chunk_hash(&bytes) != hash {
        return Err(AppError::invalid(
            "body",
            Problem::ChunkMismatch {
                hash: hash.to_owned(),
            },
        ));
    }
    // Old snapshots' chunks stay until a newer save replaces them: the store may hold twice
    // the quota, no more.
    let stored = db::workspaces::stored_bytes(&state.db, grant.user_id).await?;
    let quota = state.portal.workspace.quota_bytes;
    let size = bytes.len() as u64;
    if u64::try_from(stored).unwrap_or(0) + size > quota.saturating_mul(2) {
        return Err(AppError::invalid(
            "body",
            Problem::WorkspaceOverQuota {
                mib: (u64::try_from(stored).unwrap_or(0) + size).div_ceil(1024 * 1024),
                quota_mib: quota / (1024 * 1024),
            },
        ));
    }
    state.workspaces.put(grant.user_id, hash, bytes).await?;
    db::workspaces::record_chunk(
        &state.db,
        grant.user_id,
        hash,
        i64::try_from(size).unwrap_or(i64::MAX),
        state.now(),
    )
    .await?;
    Ok(())
}

/// One of the holder's chunks (404 when the store holds no such chunk for them).
pub async fn get_chunk(state: &AppState, grant: Grant, hash: &str) -> Result<Vec<u8>, AppError> {
    if !workspace::is_hash(hash)
        || db::workspaces::known_chunks(&state.db, grant.user_id, &[hash.to_owned()])
            .await?
            .is_empty()
    {
        return Err(AppError::NotFound("chunk".into()));
    }
    state.workspaces.get(grant.user_id, hash).await
}

/// A saved snapshot, as answered after a save and listed for its owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotView {
    /// Its id.
    pub id: i64,
    /// When (UTC).
    pub saved_at: DateTime<Utc>,
    /// The reservation it was saved at the end of.
    pub reservation_id: Option<i64>,
    /// Files.
    pub files: i64,
    /// Bytes of all files.
    pub bytes: i64,
    /// Distinct chunks.
    pub chunks: i64,
    /// Chunks not in the snapshot before it.
    pub new_chunks: i64,
    /// Their bytes.
    pub new_bytes: i64,
}

impl From<&workspace_snapshot::Model> for SnapshotView {
    fn from(row: &workspace_snapshot::Model) -> Self {
        Self {
            id: row.id,
            saved_at: row.created_at,
            reservation_id: row.reservation_id,
            files: row.files,
            bytes: row.bytes,
            chunks: row.chunks,
            new_chunks: row.new_chunks,
            new_bytes: row.new_bytes,
        }
    }
}

/// Records a save whose chunks are all stored; keeps the latest [`workspace::KEEP_SNAPSHOTS`]
/// snapshots and deletes the chunks only older ones used.
pub async fn commit(
    state: &AppState,
    grant: Grant,
    manifest: Manifest,
) -> Result<SnapshotView, AppError> {
    manifest
        .check()
        .map_err(|problem| AppError::invalid("manifest", problem))?;
    let quota = state.portal.workspace.quota_bytes;
    let bytes = manifest.bytes();
    if let Err(problem) = workspace::check_quota(bytes, quota) {
        tell_not_saved(state, grant, Some((bytes, quota)), None).await?;
        return Err(AppError::invalid("manifest", problem));
    }
    let hashes: Vec<String> = manifest
        .chunk_hashes()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let now = state.now();
    let txn = db::begin_write(&state.db).await?;
    let known: std::collections::HashMap<String, i64> =
        db::workspaces::known_chunks(&txn, grant.user_id, &hashes)
            .await?
            .into_iter()
            .collect();
    if let Some(missing) = hashes.iter().find(|h| !known.contains_key(*h)) {
        return Err(AppError::invalid(
            "manifest",
            Problem::ChunkMissing {
                hash: missing.clone(),
            },
        ));
    }
    let before: HashSet<String> = match db::workspaces::latest(&txn, grant.user_id).await? {
        Some(row) => serde_json::from_str::<Manifest>(&row.manifest)
            .map(|m| m.chunk_hashes().into_iter().map(str::to_owned).collect())
            .unwrap_or_default(),
        None => HashSet::new(),
    };
    let fresh: Vec<&String> = hashes.iter().filter(|h| !before.contains(*h)).collect();
    let new_bytes: i64 = fresh.iter().filter_map(|h| known.get(*h)).sum();
    let text = serde_json::to_string(&manifest).map_err(AppError::internal)?;
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let row = db::workspaces::insert_snapshot(
        &txn,
        workspace_snapshot::ActiveModel {
            id: NotSet,
            user_id: Set(grant.user_id),
            reservation_id: Set(Some(grant.reservation_id)),
            node_id: Set(Some(grant.node_id)),
            files: Set(count(manifest.files())),
            bytes: Set(i64::try_from(bytes).unwrap_or(i64::MAX)),
            chunks: Set(count(hashes.len())),
            new_chunks: Set(count(fresh.len())),
            new_bytes: Set(new_bytes),
            manifest: Set(text),
            created_at: Set(now),
        },
    )
    .await?;
    // Prune: the newest snapshots stay; chunks none of them uses go, unless stored in the last
    // hour (a save running now may be about to name them).
    let all = db::workspaces::snapshots(&txn, grant.user_id).await?;
    let (kept, old) = all.split_at(all.len().min(workspace::KEEP_SNAPSHOTS));
    db::workspaces::delete_snapshots(&txn, &old.iter().map(|s| s.id).collect::<Vec<_>>()).await?;
    let mut used: HashSet<String> = HashSet::new();
    for snapshot in kept {
        if let Ok(m) = serde_json::from_str::<Manifest>(&snapshot.manifest) {
            used.extend(m.chunk_hashes().into_iter().map(str::to_owned));
        }
    }
    let recent: HashSet<String> =
        db::workspaces::chunks_created_since(&txn, grant.user_id, now - TimeDelta::hours(1))
            .await?
            .into_iter()
            .collect();
    let unused: Vec<String> = db::workspaces::all_chunks(&txn, grant.user_id)
        .await?
        .into_iter()
        .filter(|h| !used.contains(h) && !recent.contains(h))
        .collect();
    db::workspaces::delete_chunks(&txn, grant.user_id, &unused).await?;
    txn.commit().await?;
    for hash in &unused {
        state.workspaces.delete(grant.user_id, hash).await;
    }
    Ok(SnapshotView::from(&row))
}

/// The holder's latest snapshot: its id and manifest (404 when nothing was saved yet).
pub async fn latest(state: &AppState, grant: Grant) -> Result<(i64, Manifest), AppError> {
    let now = state.now();
    let pending = db::workspaces::unsaved_ended(
        &state.db,
        grant.user_id,
        grant.reservation_id,
        now - SAVE_AWAITED,
        now,
    )
    .await?;
    if let Some(reservation) = pending.first() {
        return Err(AppError::Conflict(Problem::WorkspaceSavePending {
            reservation: *reservation,
        }));
    }
    // The same booking, moved here from a failed GPU's node while running: that node saves it.
    if db::workspaces::moved_unsaved(&state.db, grant.reservation_id, now - SAVE_AWAITED).await? {
        return Err(AppError::Conflict(Problem::WorkspaceSavePending {
            reservation: grant.reservation_id,
        }));
    }
    let row = db::workspaces::latest(&state.db, grant.user_id)
        .await?
        .ok_or_else(|| AppError::NotFound("workspace".into()))?;
    let manifest = serde_json::from_str(&row.manifest).map_err(AppError::internal)?;
    Ok((row.id, manifest))
}

/// A node says a save or restore failed (`why`, as the node's tool wrote it).
pub async fn failed(state: &AppState, grant: Grant, why: &str) -> Result<(), AppError> {
    let why: String = why.chars().take(2000).collect();
    tell_not_saved(state, grant, None, Some(&why)).await
}

async fn tell_not_saved(
    state: &AppState,
    grant: Grant,
    over: Option<(u64, u64)>,
    why: Option<&str>,
) -> Result<(), AppError> {
    let now = state.now();
    let txn = db::begin_write(&state.db).await?;
    if let Some(view) = db::reservations::view_of(&txn, grant.reservation_id, now).await? {
        let mut event = NewEvent::workspace_not_saved(&view, why.unwrap_or(""), now);
        if let Some((bytes, quota)) = over {
            let mib = |b: u64| i64::try_from(b.div_ceil(1024 * 1024)).unwrap_or(i64::MAX);
            event.notice.amount_minor = Some(mib(bytes));
            event.notice.limit_minor = Some(mib(quota));
            event.notice.error = None;
        }
        notify::record(&txn, &[event]).await?;
    }
    txn.commit().await?;
    state.wake.poke();
    Ok(())
}

/// A user's workspace as their profile page and `GET /api/v1/me/workspace` show it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Usage {
    /// The directory on the nodes.
    pub dir: String,
    /// On a shared filesystem: nothing is saved or restored.
    pub shared: bool,
    /// The quota, in bytes.
    pub quota_bytes: u64,
    /// What the store holds for the user (the kept snapshots together), in bytes.
    pub stored_bytes: i64,
    /// Kept snapshots, newest first.
    pub snapshots: Vec<SnapshotView>,
}

/// The actor's workspace.
pub async fn usage(state: &AppState, actor: &Actor) -> Result<Usage, AppError> {
    let user = actor.user.id;
    let snapshots = db::workspaces::snapshots(&state.db, user).await?;
    Ok(Usage {
        dir: state.portal.workspace.dir.clone(),
        shared: state.portal.workspace.shared,
        quota_bytes: state.portal.workspace.quota_bytes,
        stored_bytes: db::workspaces::stored_bytes(&state.db, user).await?,
        snapshots: snapshots.iter().map(SnapshotView::from).collect(),
    })
}
