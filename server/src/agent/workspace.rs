//! Saving and restoring a holder's workspace (`berth agent workspace save|restore`). The agent
//! runs these as the holder, never as root, with the lease's workspace token: what they read
//! and write is what the holder may, and the token reaches only the holder's workspace.
//!
//! - **Save**: walk the directory (links are stored as links, never followed), cut each file
//!   into content-defined chunks (FastCDC, so an edit changes only the chunks around it), hash
//!   them (SHA-256), ask the portal which it lacks, upload only those, then commit the manifest.
//! - **Restore**: fetch the latest manifest; if the directory already matches it, nothing
//!   happens. Otherwise the new tree is built beside the directory from chunks found in the
//!   local copy or downloaded, each one checked against its hash, and swapped in; the old
//!   directory is kept as `<dir>.previous`. A chunk whose bytes do not match its hash stops the
//!   restore and leaves the directory as it was.

use berth_app::domain::workspace::{
    AVG_CHUNK, ChunkRef, Entry, EntryKind, MAX_CHUNK, MIN_CHUNK, Manifest,
};
use futures_util::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Chunks moved at once.
const PARALLEL: usize = 8;

/// Why a save or restore failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// Reading or writing the directory.
    #[error("{path}: {source}")]
    Io {
        /// Where.
        path: String,
        /// What.
        source: std::io::Error,
    },
    /// The portal refused or could not be reached.
    #[error("the portal answered {status}: {message}")]
    Portal {
        /// The HTTP status (0: not reached).
        status: u16,
        /// Its message.
        message: String,
    },
    /// A chunk from the store does not hash to its name.
    #[error(
        "chunk {hash} of {path} is corrupted in the workspace store (its bytes hash to {actual}); the workspace was left as it was"
    )]
    Corrupted {
        /// The chunk.
        hash: String,
        /// The file it belongs to.
        path: String,
        /// What its bytes hash to.
        actual: String,
    },
    /// A file changed while it was being saved.
    #[error("{0} changed while it was being saved; save again when nothing writes to it")]
    Changed(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WorkspaceError + '_ {
    move |source| WorkspaceError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Where a chunk's bytes are on this host.
#[derive(Debug, Clone)]
struct Source {
    path: PathBuf,
    offset: u64,
    len: u32,
}

/// A directory as chunks.
#[derive(Debug, Default)]
pub struct Scan {
    /// The manifest it would be saved as.
    pub manifest: Manifest,
    sources: HashMap<String, Source>,
    sizes: HashMap<String, u32>,
    /// Entries not saved (sockets, devices, names that are not UTF-8).
    pub skipped: Vec<String>,
}

use berth_app::domain::workspace::chunk_hash as sha256;

/// Reads `dir` into a manifest (a missing directory is an empty workspace).
pub fn scan(dir: &Path) -> Result<Scan, WorkspaceError> {
    let mut scan = Scan::default();
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(scan);
    }
    let walker = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .min_depth(1)
        .sort_by_file_name();
    for item in walker {
        let item = item.map_err(|err| WorkspaceError::Io {
            path: err
                .path()
                .map_or_else(|| dir.display().to_string(), |p| p.display().to_string()),
            source: err
                .into_io_error()
                .unwrap_or_else(|| std::io::Error::other("loop")),
        })?;
        let full = item.path();
        let Some(rel) = full
            .strip_prefix(dir)
            .ok()
            .and_then(|r| r.to_str())
            .map(str::to_owned)
        else {
            scan.skipped.push(full.display().to_string());
            continue;
        };
        let meta = item.metadata().map_err(|err| WorkspaceError::Io {
            path: full.display().to_string(),
            source: err
                .into_io_error()
                .unwrap_or_else(|| std::io::Error::other("metadata")),
        })?;
        let mode = meta.mode() & 0o7777;
        let kind = item.file_type();
        let entry = if kind.is_dir() {
            Entry {
                path: rel,
                kind: EntryKind::Dir,
                mode,
                mtime: 0,
                size: 0,
                chunks: vec![],
                target: None,
            }
        } else if kind.is_symlink() {
            let target = std::fs::read_link(full).map_err(io(full))?;
            let Some(target) = target.to_str().map(str::to_owned) else {
                scan.skipped.push(rel);
                continue;
            };
            Entry {
                path: rel,
                kind: EntryKind::Symlink,
                mode: 0o777,
                mtime: 0,
                size: 0,
                chunks: vec![],
                target: Some(target),
            }
        } else if kind.is_file() {
            let file = std::fs::File::open(full).map_err(io(full))?;
            let mut chunks = Vec::new();
            let mut size = 0u64;
            for chunk in fastcdc::v2020::StreamCDC::new(
                file,
                MIN_CHUNK as usize,
                AVG_CHUNK as usize,
                MAX_CHUNK as usize,
            ) {
                let chunk = chunk.map_err(|err| WorkspaceError::Io {
                    path: full.display().to_string(),
                    source: std::io::Error::other(err.to_string()),
                })?;
                let hash = sha256(&chunk.data);
                let len = u32::try_from(chunk.length).unwrap_or(MAX_CHUNK);
                size += u64::from(len);
                scan.sizes.insert(hash.clone(), len);
                scan.sources.entry(hash.clone()).or_insert(Source {
                    path: full.to_owned(),
                    offset: chunk.offset,
                    len,
                });
                chunks.push(hash);
            }
            Entry {
                path: rel,
                kind: EntryKind::File,
                mode,
                mtime: meta.mtime(),
                size,
                chunks,
                target: None,
            }
        } else {
            scan.skipped.push(rel);
            continue;
        };
        scan.manifest.entries.push(entry);
    }
    Ok(scan)
}

fn read_source(source: &Source) -> std::io::Result<Vec<u8>> {
    let mut file = std::fs::File::open(&source.path)?;
    file.seek(SeekFrom::Start(source.offset))?;
    let mut bytes = vec![0; source.len as usize];
    file.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// The portal's workspace endpoints, reached with a workspace token.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: String,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    #[serde(default)]
    error: String,
    #[serde(default)]
    message: String,
}

#[derive(Debug, Deserialize)]
struct CheckAnswer {
    missing: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Latest {
    id: i64,
    manifest: Manifest,
}

impl Client {
    /// A client for the portal at `portal` with `token`.
    pub fn new(portal: &str, token: &str) -> Self {
        Self {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(120))
                .build()
                .unwrap_or_default(),
            base: format!("{}/api/v1/workspace", portal.trim_end_matches('/')),
            token: token.to_owned(),
        }
    }

    async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, WorkspaceError> {
        let response = request
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|err| WorkspaceError::Portal {
                status: 0,
                message: berth_app::error::error_chain(&err),
            })?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        let message = serde_json::from_str::<ErrorBody>(&text)
            .map(|body| {
                if body.message.is_empty() {
                    body.error
                } else {
                    body.message
                }
            })
            .unwrap_or(text);
        Err(WorkspaceError::Portal { status, message })
    }

    /// Tells the holder a save failed.
    pub async fn report_failure(&self, message: &str) -> Result<(), WorkspaceError> {
        self.send(
            self.http
                .post(format!("{}/failed", self.base))
                .json(&serde_json::json!({ "message": message })),
        )
        .await
        .map(drop)
    }
}

/// What a save did.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Saved {
    /// The snapshot's id.
    pub snapshot: i64,
    /// Files saved.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Distinct chunks.
    pub chunks: usize,
    /// Chunks uploaded (the store held the rest).
    pub uploaded_chunks: usize,
    /// Bytes uploaded.
    pub uploaded_bytes: u64,
    /// Entries left out (sockets, devices, names that are not UTF-8).
    pub skipped: Vec<String>,
    /// Milliseconds it took.
    pub millis: u128,
}

/// Saves `dir` as the token's holder's workspace.
pub async fn save(client: &Client, dir: &Path) -> Result<Saved, WorkspaceError> {
    let started = Instant::now();
    let dir_owned = dir.to_owned();
    let scan = tokio::task::spawn_blocking(move || scan(&dir_owned))
        .await
        .map_err(|err| WorkspaceError::Changed(err.to_string()))??;
    let chunks: Vec<ChunkRef> = scan
        .manifest
        .chunk_hashes()
        .into_iter()
        .map(|hash| ChunkRef {
            hash: hash.to_owned(),
            size: scan.sizes.get(hash).copied().unwrap_or(0),
        })
        .collect();
    let answer: CheckAnswer = client
        .send(
            client
                .http
                .post(format!("{}/check", client.base))
                .json(&serde_json::json!({ "bytes": scan.manifest.bytes(), "chunks": chunks })),
        )
        .await?
        .json()
        .await
        .map_err(|err| WorkspaceError::Portal {
            status: 0,
            message: err.to_string(),
        })?;
    let uploaded_bytes: u64 = futures_util::stream::iter(answer.missing.iter().cloned())
        .map(|hash| {
            let source = scan.sources.get(&hash).cloned();
            async move {
                let source = source.ok_or_else(|| WorkspaceError::Portal {
                    status: 0,
                    message: format!("the portal asked for {hash}, which is not in this workspace"),
                })?;
                let path = source.path.display().to_string();
                let read = source.clone();
                let bytes = tokio::task::spawn_blocking(move || read_source(&read))
                    .await
                    .map_err(|err| WorkspaceError::Changed(err.to_string()))?
                    .map_err(|_| WorkspaceError::Changed(path.clone()))?;
                if sha256(&bytes) != hash {
                    return Err(WorkspaceError::Changed(path));
                }
                let len = bytes.len() as u64;
                client
                    .send(
                        client
                            .http
                            .put(format!("{}/chunks/{hash}", client.base))
                            .body(bytes),
                    )
                    .await?;
                Ok::<u64, WorkspaceError>(len)
            }
        })
        .buffer_unordered(PARALLEL)
        .try_fold(0u64, |sum, len| async move { Ok(sum + len) })
        .await?;
    #[derive(Deserialize)]
    struct Committed {
        id: i64,
    }
    let committed: Committed = client
        .send(
            client
                .http
                .post(format!("{}/snapshots", client.base))
                .json(&scan.manifest),
        )
        .await?
        .json()
        .await
        .map_err(|err| WorkspaceError::Portal {
            status: 0,
            message: err.to_string(),
        })?;
    Ok(Saved {
        snapshot: committed.id,
        files: scan.manifest.files(),
        bytes: scan.manifest.bytes(),
        chunks: chunks.len(),
        uploaded_chunks: answer.missing.len(),
        uploaded_bytes,
        skipped: scan.skipped,
        millis: started.elapsed().as_millis(),
    })
}

/// What a restore did.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Restored {
    /// The snapshot restored (none: nothing was saved yet).
    pub snapshot: Option<i64>,
    /// The directory already matched it.
    pub unchanged: bool,
    /// Files written.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Chunks downloaded.
    pub downloaded_chunks: usize,
    /// Bytes downloaded.
    pub downloaded_bytes: u64,
    /// Chunks taken from the copy already on this host.
    pub local_chunks: usize,
    /// Where the directory as it was went (when it differed).
    pub previous: Option<String>,
    /// Milliseconds it took.
    pub millis: u128,
}

/// Whether two manifests hold the same tree (modification times aside).
fn same_tree(a: &Manifest, b: &Manifest) -> bool {
    a.entries.len() == b.entries.len()
        && a.entries.iter().zip(&b.entries).all(|(x, y)| {
            x.path == y.path
                && x.kind == y.kind
                && x.size == y.size
                && x.chunks == y.chunks
                && x.target == y.target
                && (x.kind == EntryKind::Symlink || x.mode == y.mode)
        })
}

fn sibling(dir: &Path, suffix: &str) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    dir.with_file_name(name)
}

/// How long a restore waits for the holder's previous lease's save to arrive.
pub const SAVE_WAIT: Duration = Duration::from_secs(600);

/// Restores the token's holder's latest workspace into `dir`.
pub async fn restore(
    client: &Client,
    dir: &Path,
    wait_for_save: Duration,
) -> Result<Restored, WorkspaceError> {
    let started = Instant::now();
    let deadline = Instant::now() + wait_for_save;
    let latest = loop {
        match client
            .send(client.http.get(format!("{}/latest", client.base)))
            .await
        {
            Ok(response) => {
                break Some(response.json::<Latest>().await.map_err(|err| {
                    WorkspaceError::Portal {
                        status: 0,
                        message: err.to_string(),
                    }
                })?);
            }
            Err(WorkspaceError::Portal { status: 404, .. }) => break None,
            // The holder's lease that just ended elsewhere is still being saved.
            Err(WorkspaceError::Portal { status: 409, .. }) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            Err(err) => return Err(err),
        }
    };
    let Some(latest) = latest else {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        return Ok(Restored {
            snapshot: None,
            unchanged: true,
            files: 0,
            bytes: 0,
            downloaded_chunks: 0,
            downloaded_bytes: 0,
            local_chunks: 0,
            previous: None,
            millis: started.elapsed().as_millis(),
        });
    };
    let dir_owned = dir.to_owned();
    let local = tokio::task::spawn_blocking(move || scan(&dir_owned))
        .await
        .map_err(|err| WorkspaceError::Changed(err.to_string()))??;
    let mut done = Restored {
        snapshot: Some(latest.id),
        unchanged: false,
        files: latest.manifest.files(),
        bytes: latest.manifest.bytes(),
        downloaded_chunks: 0,
        downloaded_bytes: 0,
        local_chunks: 0,
        previous: None,
        millis: 0,
    };
    if dir.is_dir() && same_tree(&local.manifest, &latest.manifest) {
        done.unchanged = true;
        done.millis = started.elapsed().as_millis();
        return Ok(done);
    }
    let building = sibling(dir, &format!(".berth-restore-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&building);
    let result = build(client, &latest.manifest, &local, &building, &mut done).await;
    if let Err(err) = result {
        let _ = std::fs::remove_dir_all(&building);
        return Err(err);
    }
    if std::fs::symlink_metadata(dir).is_ok() {
        if local.manifest.entries.is_empty() && dir.is_dir() {
            std::fs::remove_dir(dir).map_err(io(dir))?;
        } else {
            let previous = sibling(dir, ".previous");
            if std::fs::symlink_metadata(&previous).is_ok() {
                remove_any(&previous).map_err(io(&previous))?;
            }
            std::fs::rename(dir, &previous).map_err(io(dir))?;
            done.previous = Some(previous.display().to_string());
        }
    }
    std::fs::rename(&building, dir).map_err(io(dir))?;
    done.millis = started.elapsed().as_millis();
    Ok(done)
}

fn remove_any(path: &Path) -> std::io::Result<()> {
    if std::fs::symlink_metadata(path)?.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    }
}

async fn build(
    client: &Client,
    manifest: &Manifest,
    local: &Scan,
    root: &Path,
    done: &mut Restored,
) -> Result<(), WorkspaceError> {
    std::fs::create_dir_all(root).map_err(io(root))?;
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700)).map_err(io(root))?;
    let mut dirs = Vec::new();
    for entry in &manifest.entries {
        let path = root.join(&entry.path);
        match entry.kind {
            EntryKind::Dir => {
                std::fs::create_dir(&path).map_err(io(&path))?;
                dirs.push((path, entry.mode));
            }
            EntryKind::Symlink => {
                std::os::unix::fs::symlink(entry.target.as_deref().unwrap_or(""), &path)
                    .map_err(io(&path))?;
            }
            EntryKind::File => {
                let mut file = std::fs::File::create(&path).map_err(io(&path))?;
                let mut pieces = futures_util::stream::iter(entry.chunks.iter().cloned())
                    .map(|hash| {
                        let source = local.sources.get(&hash).cloned();
                        async move { fetch(client, hash, source).await }
                    })
                    .buffered(PARALLEL);
                while let Some(piece) = pieces.next().await {
                    let (hash, bytes, from_local) = piece?;
                    if !from_local {
                        let actual = sha256(&bytes);
                        if actual != hash {
                            return Err(WorkspaceError::Corrupted {
                                hash,
                                path: entry.path.clone(),
                                actual,
                            });
                        }
                    }
                    if from_local {
                        done.local_chunks += 1;
                    } else {
                        done.downloaded_chunks += 1;
                        done.downloaded_bytes += bytes.len() as u64;
                    }
                    file.write_all(&bytes).map_err(io(&path))?;
                }
                file.set_permissions(std::fs::Permissions::from_mode(entry.mode))
                    .map_err(io(&path))?;
                if let Some(when) = u64::try_from(entry.mtime)
                    .ok()
                    .map(|s| std::time::UNIX_EPOCH + Duration::from_secs(s))
                {
                    let _ = file.set_modified(when);
                }
            }
        }
    }
    // Directories' modes last, so a read-only directory was writable while it was filled.
    for (path, mode) in dirs.into_iter().rev() {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .map_err(io(&path))?;
    }
    Ok(())
}

/// A chunk's bytes: from the copy on this host when it still holds them, else from the store.
async fn fetch(
    client: &Client,
    hash: String,
    local: Option<Source>,
) -> Result<(String, Vec<u8>, bool), WorkspaceError> {
    if let Some(source) = local
        && let Ok(Ok(bytes)) = tokio::task::spawn_blocking(move || read_source(&source)).await
        && sha256(&bytes) == hash
    {
        return Ok((hash, bytes, true));
    }
    let bytes = client
        .send(client.http.get(format!("{}/chunks/{hash}", client.base)))
        .await?
        .bytes()
        .await
        .map_err(|err| WorkspaceError::Portal {
            status: 0,
            message: err.to_string(),
        })?;
    Ok((hash, bytes.to_vec(), false))
}

/// How the agent moves workspaces.
#[derive(Debug, Clone)]
pub struct MoverOptions {
    /// The portal's address (the save and restore reach it with the lease's token).
    pub portal: String,
    /// The `berth` binary to run as the holder (default: this one).
    pub binary: PathBuf,
    /// Longest a save or restore may run.
    pub timeout: Duration,
    /// Longest a restore waits for the holder's previous lease's save.
    pub wait_for_save: Duration,
}

/// Where a lease's restore or save stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveState {
    /// Queued or running.
    Running,
    /// Done.
    Done,
    /// Failed (logged; a failed save was told to the holder).
    Failed,
}

#[derive(Debug)]
enum Job {
    Restore(i64, String, berth_app::domain::lease::LeaseWorkspace),
    Save(i64, String, berth_app::domain::lease::LeaseWorkspace),
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Progress {
    restores: HashMap<i64, MoveState>,
    saves: HashMap<i64, MoveState>,
}

/// Finished moves kept on disk, so an agent that restarts during a lease does not restore its
/// workspace again over the holder's work.
const KEPT_MOVES: usize = 2000;

impl Progress {
    fn load(file: &Path) -> Self {
        let mut progress: Self = std::fs::read(file)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        progress.restores.retain(|_, s| *s != MoveState::Running);
        progress.saves.retain(|_, s| *s != MoveState::Running);
        progress
    }

    fn keep(&mut self, file: &Path) {
        for map in [&mut self.restores, &mut self.saves] {
            if map.len() > KEPT_MOVES {
                let mut ids: Vec<i64> = map.keys().copied().collect();
                ids.sort_unstable();
                for id in &ids[..ids.len() - KEPT_MOVES] {
                    map.remove(id);
                }
            }
        }
        let tmp = file.with_extension("tmp");
        let written = serde_json::to_vec(self)
            .map_err(std::io::Error::other)
            .and_then(|bytes| std::fs::write(&tmp, bytes))
            .and_then(|()| std::fs::rename(&tmp, file));
        if let Err(err) = written {
            tracing::error!(error = %err, file = %file.display(), "keeping the workspace moves");
        }
    }
}

/// Runs workspace restores and saves one after the other on a thread of its own (a lease's
/// save finishes before a later lease's restore begins), each as the holder.
#[derive(Debug, Clone)]
pub struct Mover {
    progress: std::sync::Arc<std::sync::Mutex<Progress>>,
    jobs: std::sync::mpsc::Sender<Job>,
}

impl Mover {
    /// Starts the mover's thread; what it finished is kept in `state_dir`.
    pub fn start(options: MoverOptions, state_dir: &Path) -> Self {
        let file = state_dir.join("workspace-moves.json");
        let progress = std::sync::Arc::new(std::sync::Mutex::new(Progress::load(&file)));
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let shared = progress.clone();
        let spawned = std::thread::Builder::new()
            .name("berth-agent-workspace".into())
            .spawn(move || {
                for job in queue {
                    let (id, restore) = match &job {
                        Job::Restore(id, ..) => (*id, true),
                        Job::Save(id, ..) => (*id, false),
                    };
                    let state = match run_job(&options, &job) {
                        Ok(summary) => {
                            tracing::info!(reservation = id, restore, summary = %summary, "workspace moved");
                            MoveState::Done
                        }
                        Err(err) => {
                            tracing::error!(reservation = id, restore, error = %err, "workspace not moved");
                            MoveState::Failed
                        }
                    };
                    if let Ok(mut progress) = shared.lock() {
                        let map = if restore {
                            &mut progress.restores
                        } else {
                            &mut progress.saves
                        };
                        map.insert(id, state);
                        progress.keep(&file);
                    }
                }
            });
        if let Err(err) = spawned {
            tracing::error!(error = %err, "starting the workspace mover");
        }
        Self { progress, jobs }
    }

    /// Whether the lease's workspace is in place, so access may open: its restore is done (or
    /// failed: the holder is not kept out). Starts the restore the first time it is asked.
    pub fn ready(&self, lease: &berth_app::domain::lease::Lease) -> bool {
        let Some(workspace) = &lease.workspace else {
            return true;
        };
        let Ok(mut progress) = self.progress.lock() else {
            return true;
        };
        match progress.restores.get(&lease.reservation_id) {
            Some(MoveState::Running) => false,
            Some(_) => true,
            None => {
                progress
                    .restores
                    .insert(lease.reservation_id, MoveState::Running);
                let job =
                    Job::Restore(lease.reservation_id, lease.login.clone(), workspace.clone());
                self.jobs.send(job).is_err()
            }
        }
    }

    /// Queues the save of a closed lease's workspace (once).
    pub fn save(&self, id: i64, login: &str, workspace: &berth_app::domain::lease::LeaseWorkspace) {
        let Ok(mut progress) = self.progress.lock() else {
            return;
        };
        if progress.saves.contains_key(&id) {
            return;
        }
        progress.saves.insert(id, MoveState::Running);
        let _ = self
            .jobs
            .send(Job::Save(id, login.to_owned(), workspace.clone()));
    }
}

/// The holder's workspace directory: `dir` inside their home, or `dir` itself when absolute
/// (`{login}` in it becomes the login).
pub fn workspace_dir(home: &Path, login: &str, dir: &str) -> PathBuf {
    let dir = dir.replace("{login}", login);
    if dir.starts_with('/') {
        PathBuf::from(dir)
    } else {
        home.join(dir)
    }
}

fn run_job(options: &MoverOptions, job: &Job) -> Result<String, String> {
    use std::process::{Command, Stdio};
    let (what, login, workspace) = match job {
        Job::Restore(_, login, workspace) => ("restore", login, workspace),
        Job::Save(_, login, workspace) => ("save", login, workspace),
    };
    let account = super::prepare::account(login)?;
    let dir = workspace_dir(&account.home, login, &workspace.dir);
    let me = nix::unistd::getuid().as_raw();
    let mut command = if me == account.uid {
        Command::new(&options.binary)
    } else if me == 0 {
        let mut command = Command::new("setpriv");
        command.args([
            &format!("--reuid={}", account.uid),
            &format!("--regid={}", account.gid),
            "--init-groups",
            "--",
        ]);
        command.arg(&options.binary);
        command
    } else {
        return Err(format!(
            "the agent runs as UID {me} and cannot move the workspace of `{login}`: run it as root"
        ));
    };
    command
        .args(["agent", "workspace", what, "--dir"])
        .arg(&dir)
        .args([
            "--wait-seconds",
            &options.wait_for_save.as_secs().to_string(),
        ])
        .env_clear()
        .env("HOME", &account.home)
        .env("USER", login)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("BERTH_AGENT_PORTAL", &options.portal)
        .env("BERTH_WORKSPACE_TOKEN", &workspace.token)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command
        .spawn()
        .map_err(|err| format!("starting the workspace {what}: {err}"))?;
    let pid = child.id();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait_with_output());
    });
    match done_rx.recv_timeout(options.timeout) {
        Ok(Ok(output)) if output.status.success() => {
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
        }
        Ok(Ok(output)) => Err(String::from_utf8_lossy(&output.stderr).trim().to_owned()),
        Ok(Err(err)) => Err(format!("waiting for the workspace {what}: {err}")),
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap_or(0)),
                nix::sys::signal::Signal::SIGKILL,
            );
            Err(format!(
                "the workspace {what} ran longer than {} s and was stopped",
                options.timeout.as_secs()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_directory_is_in_the_home_or_absolute_with_the_login() {
        let home = Path::new("/home/ana");
        assert_eq!(
            workspace_dir(home, "ana", "berth-workspace"),
            Path::new("/home/ana/berth-workspace")
        );
        assert_eq!(
            workspace_dir(home, "ana", "/shared/{login}/work"),
            Path::new("/shared/ana/work")
        );
    }

    #[test]
    fn a_scan_keeps_links_as_links_and_cuts_large_files_into_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        let mut big = vec![0u8; 9 * 1024 * 1024];
        let mut x: u32 = 1;
        for byte in &mut big {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            *byte = (x >> 16) as u8;
        }
        std::fs::write(root.join("sub/big.bin"), &big).unwrap();
        std::os::unix::fs::symlink("/etc/shadow", root.join("secret")).unwrap();
        let scan = scan(&root).unwrap();
        let paths: Vec<&str> = scan
            .manifest
            .entries
            .iter()
            .map(|e| e.path.as_str())
            .collect();
        assert_eq!(paths, vec!["secret", "sub", "sub/big.bin"]);
        let link = &scan.manifest.entries[0];
        assert_eq!(link.kind, EntryKind::Symlink);
        assert_eq!(link.target.as_deref(), Some("/etc/shadow"));
        assert!(link.chunks.is_empty(), "never followed");
        let file = &scan.manifest.entries[2];
        assert_eq!(file.size, big.len() as u64);
        assert!(file.chunks.len() >= 3, "{}", file.chunks.len());
        assert_eq!(scan.manifest.check(), Ok(()));
        assert!(same_tree(&scan.manifest, &scan.manifest));
        // A missing directory is an empty workspace.
        assert!(
            super::scan(&dir.path().join("none"))
                .unwrap()
                .manifest
                .entries
                .is_empty()
        );
    }

    #[test]
    fn finished_moves_survive_a_restart_and_running_ones_run_again() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("moves.json");
        let mut progress = Progress::default();
        progress.restores.insert(1, MoveState::Done);
        progress.restores.insert(2, MoveState::Running);
        progress.saves.insert(3, MoveState::Failed);
        progress.keep(&file);
        let loaded = Progress::load(&file);
        assert_eq!(loaded.restores.get(&1), Some(&MoveState::Done));
        assert_eq!(loaded.restores.get(&2), None);
        assert_eq!(loaded.saves.get(&3), Some(&MoveState::Failed));
    }
}
