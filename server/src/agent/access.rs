//! Access on the node: the agent opens each lease of its schedule at the start and closes it at
//! the end, on its own clock, from a schedule it keeps on disk (so that starts and ends happen
//! while the portal is unreachable).
//!
//! - **Keys.** `berth agent authorized-keys USER` answers `sshd` from the cached schedule
//!   ([`authorized_keys`]): no network call on the login path. It runs as an unprivileged user,
//!   so it reads `keys.json`, the schedule without what only the agent and the holder may see
//!   (workspace tokens, profile variables and scripts, notices); `leases.json`, the whole
//!   schedule, is readable by the agent's user only.
//! - **Privileged accounts.** A lease whose login is root's, or an account in one of
//!   [`PRIVILEGED_GROUPS`] on this node, is refused here whatever the portal says: no keys, no
//!   environment, no device access (a login named like a local administrator's account would
//!   otherwise be root on the node). Platform admins' own keys for their own login are not
//!   leases and still work.
//! - **Environment.** `<env_dir>/<login>.env` holds `CUDA_VISIBLE_DEVICES` and the MPS limits of
//!   the holder's open leases, and their profile's variables; `deploy/profile.d/berth.sh` reads it
//!   into login shells. It belongs to the holder and nobody else may read it.
//! - **Devices.** With `device_acl`, the holder's UID gets a POSIX ACL entry (`rw`) on the
//!   reserved GPUs' device files (`<device_dir>/nvidia<minor>`) from the start to the end.
//! - **Processes.** At the end the holder's processes on those GPUs get SIGTERM, and SIGKILL
//!   after the grace time; a holder who chose to keep running stays until a following lease
//!   needs the GPU. Each sample, processes of people holding no lease on a GPU are reported (and
//!   terminated under the `terminate` policy). Root and the configured service accounts are never
//!   touched.
//!
//! - **Notices.** A lease's notice (the idle policy's warning) is written once to every
//!   terminal the holder has open on the node (`/dev/pts`), as soon as there is one.
//!
//! Everything done is an [`AccessEvent`] sent to the portal with the next report.

use berth_app::backend::clock::Clock;
use berth_app::domain::lease::{self, IntruderPolicy, Lease, NodeSchedule};
use berth_app::domain::telemetry::{AccessEvent, AccessKind, GpuProcess};
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The schedule file in the state directory (the whole schedule; mode 0600).
pub const SCHEDULE_FILE: &str = "leases.json";
/// What the key command reads in the state directory: the schedule without its secrets (mode
/// 0644).
pub const KEYS_FILE: &str = "keys.json";
/// Default state directory (the sshd snippet's `authorized-keys` reads it from there).
pub const DEFAULT_STATE_DIR: &str = "/var/lib/berth-agent";
/// Default directory of the per-login environment files.
pub const DEFAULT_ENV_DIR: &str = "/run/berth/leases";
/// Groups whose members administer the node: a lease never lets one of them in.
pub const PRIVILEGED_GROUPS: &[&str] = &["root", "sudo", "wheel", "admin"];

/// How the agent enforces leases on its node.
#[derive(Debug, Clone)]
pub struct AccessOptions {
    /// Where the schedule is kept (`leases.json`).
    pub state_dir: PathBuf,
    /// Where `<login>.env` files are written.
    pub env_dir: PathBuf,
    /// Where the GPUs' device files are (`/dev`).
    pub device_dir: PathBuf,
    /// Set POSIX ACLs on the device files.
    pub device_acl: bool,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Keys are accepted this long before a lease starts.
    pub early_access: Duration,
    /// Accounts whose processes are never touched (besides root).
    pub exempt_users: Vec<String>,
    /// Longest wait of one schedule request.
    pub poll_wait: Duration,
    /// Where environment profiles are built (a ready one is activated in `<login>.env`).
    pub env_cache_dir: PathBuf,
}

impl Default for AccessOptions {
    fn default() -> Self {
        Self {
            state_dir: PathBuf::from(DEFAULT_STATE_DIR),
            env_dir: PathBuf::from(DEFAULT_ENV_DIR),
            device_dir: PathBuf::from("/dev"),
            device_acl: false,
            grace: Duration::from_secs(120),
            early_access: Duration::ZERO,
            exempt_users: Vec::new(),
            poll_wait: Duration::from_secs(25),
            env_cache_dir: PathBuf::from(super::prepare::DEFAULT_CACHE_DIR),
        }
    }
}

/// The schedule as kept on disk, with the margin the agent applies (so that `authorized-keys`,
/// a separate process, answers as the agent enforces).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CachedSchedule {
    /// The schedule.
    pub schedule: NodeSchedule,
    /// Keys are accepted this many seconds before a start.
    pub early_access_seconds: i64,
    /// When it was received.
    pub received_at: Option<DateTime<Utc>>,
}

impl CachedSchedule {
    /// Reads `<state_dir>/leases.json`; `None` when there is none or it cannot be read.
    pub fn load(state_dir: &Path) -> Option<Self> {
        Self::load_file(&state_dir.join(SCHEDULE_FILE))
    }

    fn load_file(path: &Path) -> Option<Self> {
        let bytes = std::fs::read(path).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Writes it atomically (each file a temporary one renamed over the old one): the whole
    /// schedule readable by the agent's user only, and [`CachedSchedule::for_keys`] readable by
    /// all (`sshd` runs the key command as an unprivileged user).
    pub fn save(&self, state_dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(state_dir)?;
        let json =
            |cached: &CachedSchedule| serde_json::to_vec(cached).map_err(std::io::Error::other);
        write_atomically(
            &state_dir.join(KEYS_FILE),
            &json(&self.for_keys())?,
            0o644,
            None,
        )?;
        write_atomically(&state_dir.join(SCHEDULE_FILE), &json(self)?, 0o600, None)
    }

    /// What the key command needs: each lease's login, keys, GPUs and times, without its
    /// environment (profile variables, setup script, dotfiles), its workspace's token or its
    /// notice.
    pub fn for_keys(&self) -> Self {
        let mut public = self.clone();
        for lease in &mut public.schedule.leases {
            lease.environment = None;
            lease.workspace = None;
            lease.notice = None;
        }
        public
    }

    fn early(&self) -> TimeDelta {
        TimeDelta::seconds(self.early_access_seconds.max(0))
    }
}

/// Writes `bytes` to `path` through a temporary file beside it, created with `mode` (never
/// readable by more than `mode` allows, not even for a moment) and given to `owner` (a UID) when
/// there is one, then renamed over `path`.
fn write_atomically(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    owner: Option<u32>,
) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        // The umask may have taken bits away; it never adds any.
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        if let Some(uid) = owner {
            std::os::unix::fs::fchown(&file, Some(uid), None)?;
        }
        file.write_all(bytes)?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The `AuthorizedKeysCommand` answer for `user` at `now`, from the schedule kept in
/// `state_dir`: one line per accepted key.
pub fn authorized_keys(state_dir: &Path, user: &str, now: DateTime<Utc>) -> Vec<String> {
    authorized_keys_on(state_dir, user, now, &HostProcesses)
}

/// [`authorized_keys`] on a host whose accounts `host` knows.
fn authorized_keys_on(
    state_dir: &Path,
    user: &str,
    now: DateTime<Utc>,
    host: &dyn Processes,
) -> Vec<String> {
    match CachedSchedule::load_file(&state_dir.join(KEYS_FILE)) {
        Some(mut cached) => {
            // A lease whose workspace is still being restored does not let its holder in yet.
            let waiting = waiting_leases(state_dir);
            cached
                .schedule
                .leases
                .retain(|l| !waiting.contains(&l.reservation_id));
            // Nor does any lease let in an account that administers the node (a platform
            // admin's own keys still do).
            if cached.schedule.leases.iter().any(|l| l.login == user) && host.privileged(user) {
                // sshd logs the command's standard error.
                eprintln!("berth: {user} administers this node; no lease lets it in");
                cached.schedule.leases.retain(|l| l.login != user);
            }
            cached.schedule.authorized_keys(user, now, cached.early())
        }
        None => Vec::new(),
    }
}

/// The file listing leases waiting for their workspace.
fn waiting_file(state_dir: &Path) -> PathBuf {
    state_dir.join("waiting.json")
}

/// Leases due to open whose workspace is still being restored.
fn waiting_leases(state_dir: &Path) -> BTreeSet<i64> {
    std::fs::read(waiting_file(state_dir))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// What the node looks like now: the GPUs' device minors and their processes.
#[derive(Debug, Clone, Default)]
pub struct NodeView {
    /// Device minor of each GPU (by UUID).
    pub minors: HashMap<String, u32>,
    /// Processes of each GPU in the latest sample (by UUID).
    pub processes: HashMap<String, Vec<GpuProcess>>,
    /// Memory of each GPU, MiB.
    pub memory_mib: HashMap<String, u64>,
    /// The node's GPUs have been read (device minors and memory are known).
    pub inventoried: bool,
    /// Samples read so far: processes are checked once per sample.
    pub samples: u64,
}

/// Who owns a process, as the kernel says.
pub trait Processes: Send {
    /// The owner's UID, `None` when the process is gone.
    fn owner(&self, pid: u32) -> Option<u32>;
    /// Sends `SIGTERM` (`kill = false`) or `SIGKILL`.
    fn signal(&self, pid: u32, kill: bool) -> Result<(), String>;
    /// The UID of a user name on this host.
    fn uid_of(&self, login: &str) -> Option<u32>;
    /// The user name of a UID on this host.
    fn name_of(&self, uid: u32) -> Option<String>;
    /// Whether `login` is an account that administers this host: root's UID, or a member of one
    /// of [`PRIVILEGED_GROUPS`] (false for an account the host does not have).
    fn privileged(&self, login: &str) -> bool;
    /// Writes `text` to every terminal UID `uid` has open; answers how many.
    fn tell(&self, uid: u32, text: &str) -> usize;
}

/// Where the terminals of logged-in users are.
pub const TERMINALS: &str = "/dev/pts";

/// Writes `text` to every terminal in `dir` owned by `uid` (without waiting on a terminal that
/// does not take it, and without making it anyone's controlling terminal); answers how many took
/// it.
pub fn tell_terminals(dir: &Path, uid: u32, text: &str) -> usize {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let message = format!("\r\n{}\r\n", text.replace('\n', "\r\n"));
    entries
        .filter_map(Result::ok)
        .filter(|entry| entry.metadata().is_ok_and(|m| m.uid() == uid))
        .filter(|entry| {
            std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
                .open(entry.path())
                .and_then(|mut terminal| terminal.write_all(message.as_bytes()))
                .is_ok()
        })
        .count()
}

/// The host's processes and users (`/proc`, `kill(2)`, the password database).
#[derive(Debug, Clone, Copy, Default)]
pub struct HostProcesses;

impl Processes for HostProcesses {
    fn owner(&self, pid: u32) -> Option<u32> {
        std::fs::metadata(format!("/proc/{pid}"))
            .ok()
            .map(|m| m.uid())
    }

    fn signal(&self, pid: u32, kill: bool) -> Result<(), String> {
        use nix::sys::signal::{Signal, kill as send};
        let pid = i32::try_from(pid).map_err(|err| err.to_string())?;
        let signal = if kill {
            Signal::SIGKILL
        } else {
            Signal::SIGTERM
        };
        send(nix::unistd::Pid::from_raw(pid), signal).map_err(|err| err.to_string())
    }

    fn uid_of(&self, login: &str) -> Option<u32> {
        nix::unistd::User::from_name(login)
            .ok()
            .flatten()
            .map(|user| user.uid.as_raw())
    }

    fn name_of(&self, uid: u32) -> Option<String> {
        nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
            .ok()
            .flatten()
            .map(|user| user.name)
    }

    fn privileged(&self, login: &str) -> bool {
        use nix::unistd::{Group, User, getgrouplist};
        let user = match User::from_name(login) {
            Ok(Some(user)) => user,
            Ok(None) => return false,
            // The account database did not answer: no lease is worth the doubt.
            Err(_) => return true,
        };
        if user.uid.is_root() {
            return true;
        }
        let Ok(name) = std::ffi::CString::new(login) else {
            return true;
        };
        match getgrouplist(&name, user.gid) {
            Ok(groups) => groups.into_iter().any(|gid| {
                gid.as_raw() == 0
                    || Group::from_gid(gid)
                        .ok()
                        .flatten()
                        .is_some_and(|group| PRIVILEGED_GROUPS.contains(&group.name.as_str()))
            }),
            Err(_) => true,
        }
    }

    fn tell(&self, uid: u32, text: &str) -> usize {
        tell_terminals(Path::new(TERMINALS), uid, text)
    }
}

/// A lease the agent has opened.
#[derive(Debug, Clone)]
struct Opened {
    login: String,
    uid: Option<u32>,
    gpus: Vec<String>,
    workspace: Option<berth_app::domain::lease::LeaseWorkspace>,
}

/// A process on its way out: SIGTERM at `term_at`, SIGKILL at `kill_at` (`None`: not before a
/// following lease needs the GPU — a holder who keeps running).
#[derive(Debug, Clone)]
struct Leaving {
    pid: u32,
    uid: u32,
    uuid: String,
    reservation_id: Option<i64>,
    term_at: Option<DateTime<Utc>>,
    kill_at: Option<DateTime<Utc>>,
    termed: bool,
}

/// Opens and closes leases and watches the GPUs' processes.
pub struct Keeper {
    options: AccessOptions,
    cached: CachedSchedule,
    processes: Box<dyn Processes>,
    /// UIDs of `options.exempt_users` (looked up once).
    exempt: HashSet<u32>,
    opened: BTreeMap<i64, Opened>,
    leaving: Vec<Leaving>,
    /// (uuid, pid, kind) reported, while the process is on the GPU.
    reported: HashSet<(String, u32, AccessKind)>,
    env_files: BTreeMap<String, String>,
    /// The [`NodeView::samples`] whose processes were checked last.
    checked_samples: u64,
    acl_ready: bool,
    /// Restores workspaces before access opens and saves them after it closes.
    mover: Option<super::workspace::Mover>,
    /// Closed leases whose workspace is saved once the holder's processes are gone.
    pending_saves: Vec<(i64, String, berth_app::domain::lease::LeaseWorkspace)>,
    /// Leases due to open that wait for their workspace (as last written for sshd).
    waiting: BTreeSet<i64>,
    /// Holders whose lease closed this step while another of theirs due here goes on (a booking
    /// moved to another GPU of this node): their workspace stays as it is, neither saved nor
    /// restored.
    handed_over: BTreeSet<String>,
    /// Notices written to their holder's terminals, by key.
    told: HashSet<String>,
    /// Whether each login of the schedule administers this node (looked up once per schedule).
    privileged: HashMap<String, bool>,
}

impl std::fmt::Debug for Keeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keeper")
            .field("opened", &self.opened.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Keeper {
    /// A keeper starting from the schedule kept in the state directory (if any).
    pub fn new(options: AccessOptions, processes: Box<dyn Processes>) -> Self {
        let mut cached = CachedSchedule::load(&options.state_dir).unwrap_or_default();
        cached.early_access_seconds =
            i64::try_from(options.early_access.as_secs()).unwrap_or(i64::MAX);
        let exempt = options
            .exempt_users
            .iter()
            .filter_map(|name| processes.uid_of(name))
            .collect();
        Self {
            options,
            cached,
            processes,
            exempt,
            opened: BTreeMap::new(),
            leaving: Vec::new(),
            reported: HashSet::new(),
            env_files: BTreeMap::new(),
            checked_samples: 0,
            acl_ready: false,
            mover: None,
            pending_saves: Vec::new(),
            waiting: BTreeSet::new(),
            handed_over: BTreeSet::new(),
            told: HashSet::new(),
            privileged: HashMap::new(),
        }
    }

    /// Moves holders' workspaces with `mover`: restored before a lease opens, saved after it
    /// closes.
    pub fn with_mover(mut self, mover: super::workspace::Mover) -> Self {
        self.mover = Some(mover);
        self
    }

    /// The version of the schedule it holds.
    pub fn version(&self) -> Option<&str> {
        Some(self.cached.schedule.version.as_str()).filter(|v| !v.is_empty())
    }

    /// Takes a new schedule and keeps it on disk.
    pub fn set_schedule(&mut self, schedule: NodeSchedule, now: DateTime<Utc>) {
        self.cached.schedule = schedule;
        self.cached.received_at = Some(now);
        self.privileged.clear();
        if let Err(err) = self.cached.save(&self.options.state_dir) {
            tracing::error!(error = %err, dir = %self.options.state_dir.display(), "keeping the lease schedule on disk");
        }
    }

    fn early(&self) -> TimeDelta {
        self.cached.early()
    }

    fn grace(&self) -> TimeDelta {
        TimeDelta::from_std(self.options.grace).unwrap_or(TimeDelta::minutes(2))
    }

    /// One step at `now` with the node as `view` shows it: opens and closes leases, writes the
    /// environment files, signals processes; answers what it did. Nothing happens before the
    /// node's GPUs are known (their device files and processes come with the first reading).
    pub fn tick(&mut self, now: DateTime<Utc>, view: &NodeView) -> Vec<AccessEvent> {
        let mut events = Vec::new();
        if !view.inventoried {
            return events;
        }
        if self.options.device_acl && !self.acl_ready {
            self.reset_acls(view);
            self.acl_ready = true;
        }
        let early = self.early();
        let (processes, privileged) = (&self.processes, &mut self.privileged);
        let open: BTreeMap<i64, Lease> = self
            .cached
            .schedule
            .open(now, early)
            .filter(|lease| {
                let refused = *privileged.entry(lease.login.clone()).or_insert_with(|| {
                    let refused = processes.privileged(&lease.login);
                    if refused {
                        tracing::warn!(login = %lease.login, reservation = lease.reservation_id, "this account administers the node: its leases are refused here");
                    }
                    refused
                });
                !refused
            })
            .map(|lease| (lease.reservation_id, lease.clone()))
            .collect();
        self.close_ended(now, view, &open, &mut events);
        self.open_started(view, &open, now, &mut events);
        self.handed_over.clear();
        self.write_env_files(&open);
        if view.samples != self.checked_samples {
            self.checked_samples = view.samples;
            self.watch_processes(now, view, &open, &mut events);
        }
        self.signal_leaving(now, &mut events);
        self.start_saves();
        self.write_waiting(&open);
        self.tell_holders(&open);
        events
    }

    /// Writes each open lease's notice to its holder's terminals, once, as soon as the holder
    /// has one open.
    fn tell_holders(&mut self, open: &BTreeMap<i64, Lease>) {
        // Keys of leases no longer open are forgotten.
        self.told.retain(|key| {
            open.values()
                .any(|lease| lease.notice.as_ref().is_some_and(|n| &n.key == key))
        });
        for lease in open.values() {
            let Some(notice) = &lease.notice else {
                continue;
            };
            if self.told.contains(&notice.key) {
                continue;
            }
            let Some(uid) = self.processes.uid_of(&lease.login) else {
                continue;
            };
            let terminals = self.processes.tell(uid, &notice.text);
            if terminals > 0 {
                tracing::info!(
                    reservation.id = lease.reservation_id,
                    terminals,
                    "notice written to the holder's terminals"
                );
                self.told.insert(notice.key.clone());
            }
        }
    }

    /// Keeps the list of leases waiting for their workspace where `authorized-keys` reads it.
    fn write_waiting(&mut self, open: &BTreeMap<i64, Lease>) {
        let waiting: BTreeSet<i64> = open
            .keys()
            .filter(|id| !self.opened.contains_key(id))
            .copied()
            .collect();
        if waiting == self.waiting {
            return;
        }
        let path = waiting_file(&self.options.state_dir);
        let written = serde_json::to_vec(&waiting)
            .map_err(std::io::Error::other)
            .and_then(|bytes| write_atomically(&path, &bytes, 0o644, None));
        match written {
            Ok(()) => self.waiting = waiting,
            Err(err) => {
                tracing::error!(error = %err, file = %path.display(), "writing the leases waiting for their workspace");
            }
        }
    }

    /// Saves the workspaces of closed leases whose holder's processes have left.
    fn start_saves(&mut self) {
        let Some(mover) = &self.mover else {
            self.pending_saves.clear();
            return;
        };
        let leaving = &self.leaving;
        self.pending_saves.retain(|(id, login, workspace)| {
            if leaving.iter().any(|l| l.reservation_id == Some(*id)) {
                return true;
            }
            mover.save(*id, login, workspace);
            false
        });
    }

    /// Closes the opened leases not in `open` (ended, or gone from the schedule: cancelled,
    /// released): the ACL goes unless the holder still holds the GPU by another lease (back to
    /// back), and their processes there leave.
    fn close_ended(
        &mut self,
        now: DateTime<Utc>,
        view: &NodeView,
        open: &BTreeMap<i64, Lease>,
        events: &mut Vec<AccessEvent>,
    ) {
        // Ended, gone from the schedule, or moved to other GPUs (one failed): closed here, and
        // a moved one opens again on its new GPUs.
        let ended: Vec<i64> = self
            .opened
            .iter()
            .filter(|(id, opened)| {
                open.get(id).is_none_or(|lease| {
                    let mut now_on: Vec<&str> =
                        lease.gpus.iter().map(|g| g.uuid.as_str()).collect();
                    let mut was_on: Vec<&str> = opened.gpus.iter().map(String::as_str).collect();
                    now_on.sort_unstable();
                    was_on.sort_unstable();
                    now_on != was_on
                })
            })
            .map(|(id, _)| *id)
            .collect();
        let grace = self.grace();
        for id in ended {
            let Some(closed) = self.opened.remove(&id) else {
                continue;
            };
            // The workspace is saved once the holder's processes have left, unless a lease of
            // the same holder goes on here (its end saves it).
            if open.values().any(|l| l.login == closed.login) {
                self.handed_over.insert(closed.login.clone());
            } else if let Some(workspace) = &closed.workspace {
                self.pending_saves
                    .push((id, closed.login.clone(), workspace.clone()));
            }
            let keep = self
                .cached
                .schedule
                .leases
                .iter()
                .any(|l| l.reservation_id == id && l.keep_running);
            for uuid in &closed.gpus {
                let still_held = open
                    .values()
                    .any(|l| l.login == closed.login && l.holds(uuid));
                if !still_held && let Some(uid) = closed.uid {
                    self.acl(view, uuid, uid, false);
                    // Whoever comes next on this GPU starts clean: its start bounds the grace,
                    // and a holder who keeps running stops then.
                    let next =
                        self.cached
                            .schedule
                            .next_start_on(uuid, now, self.early(), &closed.login);
                    let (term_at, kill_at) = if keep {
                        (next.map(|at| (at - grace).max(now)), next)
                    } else {
                        let kill_at = next.map_or(now + grace, |at| at.min(now + grace));
                        (Some(now), Some(kill_at))
                    };
                    for process in view.processes.get(uuid).into_iter().flatten() {
                        if self.processes.owner(process.pid) == Some(uid)
                            && !self.leaving.iter().any(|l| l.pid == process.pid)
                        {
                            self.leaving.push(Leaving {
                                pid: process.pid,
                                uid,
                                uuid: uuid.clone(),
                                reservation_id: Some(id),
                                term_at,
                                kill_at,
                                termed: false,
                            });
                        }
                    }
                }
                events.push(lease_event(
                    AccessKind::Revoked,
                    uuid,
                    now,
                    id,
                    closed.uid,
                    &closed.login,
                ));
            }
        }
    }

    /// Opens the leases of `open` not opened yet: the holder's ACL on each GPU; processes still
    /// leaving that GPU must be gone now (the holder's own ones stay: they hold it again).
    fn open_started(
        &mut self,
        view: &NodeView,
        open: &BTreeMap<i64, Lease>,
        now: DateTime<Utc>,
        events: &mut Vec<AccessEvent>,
    ) {
        for (id, lease) in open {
            if self.opened.contains_key(id) {
                continue;
            }
            // The workspace comes first (unless the holder is here already by another lease,
            // or was until this step).
            if let Some(mover) = &self.mover
                && !self.opened.values().any(|o| o.login == lease.login)
                && !self.handed_over.contains(&lease.login)
                && !mover.ready(lease)
            {
                continue;
            }
            let uid = self.processes.uid_of(&lease.login);
            if uid.is_none() {
                tracing::warn!(login = %lease.login, reservation = id, "no such user on this node: keys are accepted, device access cannot be granted");
            }
            for gpu in &lease.gpus {
                if let Some(uid) = uid {
                    self.acl(view, &gpu.uuid, uid, true);
                }
                self.leaving
                    .retain(|l| !(l.uuid == gpu.uuid && Some(l.uid) == uid));
                for leaving in self.leaving.iter_mut().filter(|l| l.uuid == gpu.uuid) {
                    leaving.term_at = Some(leaving.term_at.map_or(now, |at| at.min(now)));
                    leaving.kill_at = Some(leaving.kill_at.map_or(now, |at| at.min(now)));
                }
                events.push(lease_event(
                    AccessKind::Granted,
                    &gpu.uuid,
                    now,
                    *id,
                    uid,
                    &lease.login,
                ));
            }
            self.opened.insert(
                *id,
                Opened {
                    login: lease.login.clone(),
                    uid,
                    gpus: lease.gpus.iter().map(|g| g.uuid.clone()).collect(),
                    workspace: lease.workspace.clone(),
                },
            );
        }
    }

    /// A process event, with the owner's name on this host.
    fn process_event(
        &self,
        kind: AccessKind,
        uuid: &str,
        at: DateTime<Utc>,
        reservation_id: Option<i64>,
        pid: u32,
        uid: u32,
    ) -> AccessEvent {
        AccessEvent {
            uuid: uuid.to_owned(),
            at,
            kind,
            reservation_id,
            pid: Some(pid),
            uid: Some(uid),
            user: self
                .processes
                .name_of(uid)
                .map(|name| name.chars().take(64).collect()),
            memory_mib: None,
        }
    }

    /// Processes on each GPU in a new sample: over-share by holders, use by anyone else.
    fn watch_processes(
        &mut self,
        now: DateTime<Utc>,
        view: &NodeView,
        open: &BTreeMap<i64, Lease>,
        events: &mut Vec<AccessEvent>,
    ) {
        // Forget what was reported of processes no longer on their GPU.
        self.reported.retain(|(uuid, pid, _)| {
            view.processes
                .get(uuid)
                .is_some_and(|ps| ps.iter().any(|p| p.pid == *pid))
        });
        let policy = self.cached.schedule.intruders;
        let protect_idle = self.cached.schedule.protect_idle;
        for (uuid, processes) in &view.processes {
            let holders: Vec<(&Lease, Option<u32>)> = open
                .values()
                .filter(|lease| lease.holds(uuid))
                .map(|lease| {
                    (
                        lease,
                        self.opened.get(&lease.reservation_id).and_then(|o| o.uid),
                    )
                })
                .collect();
            for process in processes {
                let Some(uid) = self.processes.owner(process.pid) else {
                    continue;
                };
                if uid == 0 || self.exempt.contains(&uid) {
                    continue;
                }
                let own: Vec<&Lease> = holders
                    .iter()
                    .filter(|(_, holder)| *holder == Some(uid))
                    .map(|(lease, _)| *lease)
                    .collect();
                if let Some(first) = own.first() {
                    let quarters: u8 = own.iter().map(|l| l.quarters).sum::<u8>().min(4);
                    let memory = view.memory_mib.get(uuid).copied().or_else(|| {
                        first
                            .gpus
                            .iter()
                            .find(|g| &g.uuid == uuid)
                            .map(|g| g.memory_mib)
                    });
                    if let (true, Some(memory), Some(used)) =
                        (quarters < 4, memory, process.used_memory_mib)
                        && used > lease::share_of(memory, quarters)
                        && self
                            .reported
                            .insert((uuid.clone(), process.pid, AccessKind::OverShare))
                    {
                        let mut e = self.process_event(
                            AccessKind::OverShare,
                            uuid,
                            now,
                            Some(first.reservation_id),
                            process.pid,
                            uid,
                        );
                        e.memory_mib = Some(used);
                        events.push(e);
                    }
                    continue;
                }
                if self.leaving.iter().any(|l| l.pid == process.pid)
                    || (holders.is_empty() && !protect_idle)
                    || policy == IntruderPolicy::Off
                {
                    continue;
                }
                let holder = holders.first().map(|(lease, _)| lease.reservation_id);
                if self
                    .reported
                    .insert((uuid.clone(), process.pid, AccessKind::Unauthorized))
                {
                    events.push(self.process_event(
                        AccessKind::Unauthorized,
                        uuid,
                        now,
                        holder,
                        process.pid,
                        uid,
                    ));
                }
                if policy == IntruderPolicy::Terminate {
                    self.leaving.push(Leaving {
                        pid: process.pid,
                        uid,
                        uuid: uuid.clone(),
                        reservation_id: holder,
                        term_at: Some(now),
                        kill_at: Some(now + self.grace()),
                        termed: false,
                    });
                }
            }
        }
    }

    /// SIGTERM when due, SIGKILL when due; forgets processes that are gone.
    fn signal_leaving(&mut self, now: DateTime<Utc>, events: &mut Vec<AccessEvent>) {
        let mut keep = Vec::with_capacity(self.leaving.len());
        for mut leaving in std::mem::take(&mut self.leaving) {
            // Gone, or the PID now belongs to someone else.
            if self.processes.owner(leaving.pid) != Some(leaving.uid) {
                continue;
            }
            let due = |at: Option<DateTime<Utc>>| at.is_some_and(|at| now >= at);
            if !leaving.termed && due(leaving.term_at) {
                leaving.termed = true;
                match self.processes.signal(leaving.pid, false) {
                    Ok(()) => events.push(self.process_event(
                        AccessKind::Terminated,
                        &leaving.uuid,
                        now,
                        leaving.reservation_id,
                        leaving.pid,
                        leaving.uid,
                    )),
                    Err(err) => tracing::warn!(pid = leaving.pid, error = %err, "sending SIGTERM"),
                }
            }
            if leaving.termed && due(leaving.kill_at) {
                match self.processes.signal(leaving.pid, true) {
                    Ok(()) => events.push(self.process_event(
                        AccessKind::Killed,
                        &leaving.uuid,
                        now,
                        leaving.reservation_id,
                        leaving.pid,
                        leaving.uid,
                    )),
                    Err(err) => tracing::warn!(pid = leaving.pid, error = %err, "sending SIGKILL"),
                }
                continue;
            }
            keep.push(leaving);
        }
        self.leaving = keep;
    }

    /// `<env_dir>/<login>.env` for each holder with open leases; removes the others' files.
    fn write_env_files(&mut self, open: &BTreeMap<i64, Lease>) {
        let mut by_login: BTreeMap<&str, Vec<&Lease>> = BTreeMap::new();
        // Only leases opened (one waiting for its workspace is not yet).
        for lease in open
            .values()
            .filter(|l| self.opened.contains_key(&l.reservation_id))
        {
            by_login
                .entry(lease.login.as_str())
                .or_default()
                .push(lease);
        }
        let mut wanted: BTreeMap<String, String> = BTreeMap::new();
        for (login, leases) in by_login {
            if lease::valid_login(login).is_err() {
                continue;
            }
            let mut body: String = lease::environment(&leases)
                .into_iter()
                .map(|(name, value)| format!("{name}={value}\n"))
                .collect();
            body.push_str(&super::prepare::activation(
                &self.options.env_cache_dir,
                login,
                &leases,
            ));
            wanted.insert(login.to_owned(), body);
        }
        if wanted == self.env_files {
            return;
        }
        if let Err(err) = std::fs::create_dir_all(&self.options.env_dir) {
            tracing::error!(error = %err, dir = %self.options.env_dir.display(), "creating the lease environment directory");
            return;
        }
        for login in self.env_files.keys() {
            if !wanted.contains_key(login) {
                let _ = std::fs::remove_file(self.options.env_dir.join(format!("{login}.env")));
            }
        }
        for (login, body) in &wanted {
            if self.env_files.get(login) == Some(body) {
                continue;
            }
            let path = self.options.env_dir.join(format!("{login}.env"));
            // The holder's own (their profile's variables may be secrets): readable by them and
            // root only. An agent that may not give files away (not root) keeps it its own.
            let holder = self
                .processes
                .uid_of(login)
                .filter(|uid| *uid != nix::unistd::geteuid().as_raw());
            let written = write_atomically(&path, body.as_bytes(), 0o600, holder).or_else(|err| {
                if holder.is_some() && err.kind() == std::io::ErrorKind::PermissionDenied {
                    tracing::warn!(login, "the agent may not give the lease environment file to its holder; it stays the agent's");
                    write_atomically(&path, body.as_bytes(), 0o600, None)
                } else {
                    Err(err)
                }
            });
            if let Err(err) = written {
                tracing::error!(error = %err, path = %path.display(), "writing a lease environment file");
            }
        }
        self.env_files = wanted;
    }

    fn device_of(&self, view: &NodeView, uuid: &str) -> Option<PathBuf> {
        view.minors
            .get(uuid)
            .map(|minor| self.options.device_dir.join(format!("nvidia{minor}")))
    }

    /// Grants (or removes) `uid`'s `rw` entry on `uuid`'s device file.
    fn acl(&self, view: &NodeView, uuid: &str, uid: u32, grant: bool) {
        if !self.options.device_acl {
            return;
        }
        let Some(device) = self.device_of(view, uuid) else {
            tracing::warn!(gpu = uuid, "no device minor known: cannot set its ACL");
            return;
        };
        let entry = if grant {
            format!("u:{uid}:rw")
        } else {
            format!("u:{uid}")
        };
        let flag = if grant { "-m" } else { "-x" };
        run_setfacl(&[flag, &entry], &device);
    }

    /// At start: no named-user entries on the GPUs' device files (a crash may have left some);
    /// the open leases' entries are granted again by the first tick.
    fn reset_acls(&self, view: &NodeView) {
        let devices: BTreeSet<PathBuf> = view
            .minors
            .keys()
            .filter_map(|uuid| self.device_of(view, uuid))
            .collect();
        for device in devices {
            run_setfacl(&["-b"], &device);
        }
    }
}

fn run_setfacl(args: &[&str], device: &Path) {
    match std::process::Command::new("setfacl")
        .args(args)
        .arg(device)
        .output()
    {
        Ok(out) if out.status.success() => {}
        Ok(out) => tracing::error!(
            device = %device.display(),
            stderr = %String::from_utf8_lossy(&out.stderr).trim(),
            "setfacl failed"
        ),
        Err(err) => tracing::error!(error = %err, "running setfacl (install the acl package)"),
    }
}

/// An event of a lease: opened or closed for its holder (`login`, UID when the host has them).
fn lease_event(
    kind: AccessKind,
    uuid: &str,
    at: DateTime<Utc>,
    reservation_id: i64,
    uid: Option<u32>,
    login: &str,
) -> AccessEvent {
    AccessEvent {
        uuid: uuid.to_owned(),
        at,
        kind,
        reservation_id: Some(reservation_id),
        pid: None,
        uid,
        user: Some(login.to_owned()),
        memory_mib: None,
    }
}

/// What the keeper task needs besides its [`Keeper`].
pub struct KeeperTask {
    /// The keeper.
    pub keeper: Keeper,
    /// The time.
    pub clock: Arc<dyn Clock>,
    /// The latest node view (from the reading thread).
    pub view: tokio::sync::watch::Receiver<NodeView>,
    /// Schedules from the portal.
    pub schedules: tokio::sync::mpsc::Receiver<NodeSchedule>,
    /// Where events go (the report buffer).
    pub events: tokio::sync::mpsc::Sender<AccessEvent>,
}

impl KeeperTask {
    /// Ticks every half second, and at once when a schedule or a sample arrives, until the
    /// event receiver is gone.
    pub async fn run(mut self) {
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                changed = self.view.changed() => if changed.is_err() { return },
                schedule = self.schedules.recv() => match schedule {
                    Some(schedule) => {
                        if self.keeper.version() != Some(schedule.version.as_str()) {
                            self.keeper.set_schedule(schedule, self.clock.now());
                        }
                    }
                    None => return,
                },
            }
            let view = self.view.borrow().clone();
            for event in self.keeper.tick(self.clock.now(), &view) {
                if self.events.send(event).await.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_app::domain::lease::LeaseGpu;
    use chrono::TimeZone;
    use std::sync::Mutex;

    /// Processes and users as a test sets them; signals are recorded, and a process dies of
    /// SIGKILL, or of SIGTERM unless it ignores it.
    #[derive(Default)]
    struct Host {
        owners: HashMap<u32, u32>,
        ignore_term: HashSet<u32>,
        users: HashMap<String, u32>,
        /// Accounts in an administrators' group.
        admins: HashSet<String>,
        signals: Vec<(u32, &'static str)>,
        /// Terminals open per UID, and what was written to them.
        terminals: HashMap<u32, usize>,
        told: Vec<(u32, String)>,
    }

    #[derive(Clone, Default)]
    struct FakeProcesses(Arc<Mutex<Host>>);

    impl Processes for FakeProcesses {
        fn owner(&self, pid: u32) -> Option<u32> {
            self.0.lock().unwrap().owners.get(&pid).copied()
        }
        fn signal(&self, pid: u32, kill: bool) -> Result<(), String> {
            let mut host = self.0.lock().unwrap();
            host.signals.push((pid, if kill { "KILL" } else { "TERM" }));
            if kill || !host.ignore_term.contains(&pid) {
                host.owners.remove(&pid);
            }
            Ok(())
        }
        fn uid_of(&self, login: &str) -> Option<u32> {
            self.0.lock().unwrap().users.get(login).copied()
        }
        fn privileged(&self, login: &str) -> bool {
            let host = self.0.lock().unwrap();
            host.users.get(login) == Some(&0) || host.admins.contains(login)
        }
        fn name_of(&self, uid: u32) -> Option<String> {
            let host = self.0.lock().unwrap();
            host.users
                .iter()
                .find(|(_, u)| **u == uid)
                .map(|(n, _)| n.clone())
        }
        fn tell(&self, uid: u32, text: &str) -> usize {
            let mut host = self.0.lock().unwrap();
            let open = host.terminals.get(&uid).copied().unwrap_or(0);
            if open > 0 {
                host.told.push((uid, text.to_owned()));
            }
            open
        }
    }

    fn at(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 3, h, m, 0).unwrap()
    }

    fn lease(id: i64, login: &str, quarters: u8, from: u32, to: u32, keep: bool) -> Lease {
        Lease {
            reservation_id: id,
            login: login.to_owned(),
            keys: vec![],
            gpus: vec![LeaseGpu {
                uuid: "GPU-a".into(),
                memory_mib: 80_000,
            }],
            quarters,
            start: at(from, 0),
            end: at(to, 0),
            keep_running: keep,
            environment: None,
            workspace: None,
            notice: None,
        }
    }

    struct Setup {
        keeper: Keeper,
        host: FakeProcesses,
        samples: u64,
        _dir: tempfile::TempDir,
    }

    impl Setup {
        fn new(leases: Vec<Lease>, intruders: IntruderPolicy) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let host = FakeProcesses::default();
            {
                let mut h = host.0.lock().unwrap();
                for (name, uid) in [("alice", 1001), ("bob", 1002), ("svc", 900), ("root", 0)] {
                    h.users.insert(name.into(), uid);
                }
            }
            let options = AccessOptions {
                state_dir: dir.path().join("state"),
                env_dir: dir.path().join("leases"),
                exempt_users: vec!["svc".into()],
                ..AccessOptions::default()
            };
            let mut keeper = Keeper::new(options, Box::new(host.clone()));
            keeper.set_schedule(
                NodeSchedule {
                    version: "1".into(),
                    leases,
                    intruders,
                    ..NodeSchedule::default()
                },
                at(0, 0),
            );
            Self {
                keeper,
                host,
                samples: 0,
                _dir: dir,
            }
        }

        fn run(&self, pid: u32, uid: u32, ignore_term: bool) {
            let mut h = self.host.0.lock().unwrap();
            h.owners.insert(pid, uid);
            if ignore_term {
                h.ignore_term.insert(pid);
            }
        }

        /// A tick with a new sample listing the live processes on GPU-a (`pid`, MiB).
        fn tick(
            &mut self,
            now: DateTime<Utc>,
            memory: &[(u32, u64)],
        ) -> Vec<(AccessKind, Option<u32>)> {
            self.samples += 1;
            let alive = self.host.0.lock().unwrap().owners.clone();
            let view = NodeView {
                minors: HashMap::from([("GPU-a".to_owned(), 0)]),
                processes: HashMap::from([(
                    "GPU-a".to_owned(),
                    alive
                        .keys()
                        .map(|pid| GpuProcess {
                            pid: *pid,
                            used_memory_mib: memory.iter().find(|(p, _)| p == pid).map(|(_, m)| *m),
                        })
                        .collect(),
                )]),
                memory_mib: HashMap::from([("GPU-a".to_owned(), 80_000)]),
                inventoried: true,
                samples: self.samples,
            };
            self.keeper
                .tick(now, &view)
                .into_iter()
                .map(|e| (e.kind, e.pid))
                .collect()
        }

        fn signals(&self) -> Vec<(u32, &'static str)> {
            std::mem::take(&mut self.host.0.lock().unwrap().signals)
        }
    }

    use AccessKind::{Granted, Killed, OverShare, Revoked, Terminated, Unauthorized};

    #[test]
    fn an_account_that_administers_the_node_is_never_let_in_by_a_lease() {
        let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA";
        let leases: Vec<Lease> = [(1, "alice"), (2, "root"), (3, "ops")]
            .into_iter()
            .map(|(id, login)| {
                let mut booked = lease(id, login, 4, 1, 5, false);
                booked.keys = vec![key.into()];
                booked
            })
            .collect();
        let mut s = Setup::new(leases.clone(), IntruderPolicy::Report);
        {
            let mut host = s.host.0.lock().unwrap();
            host.users.insert("ops".into(), 1003);
            host.admins.insert("ops".into());
        }
        // `ops` is also a platform admin's login: their own keys are not a lease, and stay.
        let admin_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB";
        s.keeper.set_schedule(
            NodeSchedule {
                version: "2".into(),
                leases,
                admins: vec![berth_app::domain::lease::NodeAdmin {
                    login: "ops".into(),
                    keys: vec![admin_key.into()],
                }],
                intruders: IntruderPolicy::Report,
                ..NodeSchedule::default()
            },
            at(0, 0),
        );
        let state = s._dir.path().join("state");
        let keys = |login: &str| authorized_keys_on(&state, login, at(2, 0), &s.host);
        let alices = keys("alice");
        assert!(alices.len() == 1 && alices[0].ends_with(key), "{alices:?}");
        assert!(keys("root").is_empty());
        assert_eq!(keys("ops"), vec![admin_key.to_owned()]);
        // Only Alice's lease opens: no environment file for the others, and a process of the
        // node's administrator on the GPU is someone holding no lease there.
        s.run(300, 1003, false);
        assert_eq!(
            s.tick(at(2, 0), &[(300, 100)]),
            vec![(Granted, None), (Unauthorized, Some(300))]
        );
        let env = s._dir.path().join("leases");
        assert!(env.join("alice.env").exists());
        assert!(!env.join("root.env").exists() && !env.join("ops.env").exists());
    }

    #[test]
    fn the_hosts_own_root_account_administers_it() {
        assert!(HostProcesses.privileged("root"));
        assert!(!HostProcesses.privileged("no-such-account-berth"));
    }

    #[test]
    fn a_notice_reaches_the_holders_terminals_once_when_she_has_one() {
        let mut warned = lease(1, "alice", 4, 1, 5, false);
        warned.notice = Some(berth_app::domain::lease::LeaseNotice {
            key: "idle_warning:1:0:1".into(),
            text: "Berth — your GPUs sit idle".into(),
        });
        let mut setup = Setup::new(vec![warned.clone()], IntruderPolicy::Report);
        let told = |setup: &Setup| setup.host.0.lock().unwrap().told.clone();
        // Not open yet: nothing.
        setup.tick(at(0, 30), &[]);
        assert!(told(&setup).is_empty());
        // Open, but no terminal of hers: nothing yet, and it waits.
        setup.tick(at(2, 0), &[]);
        assert!(told(&setup).is_empty());
        setup.host.0.lock().unwrap().terminals.insert(1001, 2);
        setup.tick(at(2, 1), &[]);
        assert_eq!(
            told(&setup),
            vec![(1001, "Berth — your GPUs sit idle".to_owned())]
        );
        // Once per key.
        setup.tick(at(2, 2), &[]);
        assert_eq!(told(&setup).len(), 1);
        // The next warning has a new key.
        warned.notice = Some(berth_app::domain::lease::LeaseNotice {
            key: "idle_warning:1:0:2".into(),
            text: "Berth — released at 03:00".into(),
        });
        setup.keeper.set_schedule(
            NodeSchedule {
                version: "2".into(),
                leases: vec![warned],
                ..NodeSchedule::default()
            },
            at(2, 3),
        );
        setup.tick(at(2, 3), &[]);
        assert_eq!(told(&setup).len(), 2);
    }

    #[test]
    fn the_schedules_secrets_are_kept_from_other_people_on_the_node() {
        use std::os::unix::fs::PermissionsExt as _;
        let mut booked = lease(1, "alice", 4, 1, 5, false);
        booked.keys = vec!["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA".into()];
        booked.workspace = Some(berth_app::domain::lease::LeaseWorkspace {
            dir: "work".into(),
            token: "bws1.1.secret-mac".into(),
        });
        booked.environment = Some(berth_app::domain::lease::LeaseEnvironment {
            profile: "train".into(),
            version: 1,
            hash: "abc".into(),
            spec: berth_app::domain::profile::ProfileSpec {
                setup_script: "echo secret-script".into(),
                ..Default::default()
            },
        });
        booked.notice = Some(berth_app::domain::lease::LeaseNotice {
            key: "k".into(),
            text: "secret-notice".into(),
        });
        let mut setup = Setup::new(vec![booked], IntruderPolicy::Report);
        let dir = setup._dir.path().to_owned();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let state = dir.join("state");
        // The whole schedule: the agent's only.
        assert_eq!(mode(&state.join(SCHEDULE_FILE)), 0o600);
        let whole = std::fs::read_to_string(state.join(SCHEDULE_FILE)).unwrap();
        assert!(whole.contains("bws1.1.secret-mac") && whole.contains("secret-script"));
        // What the key command reads: for all, and nothing secret in it.
        assert_eq!(mode(&state.join(KEYS_FILE)), 0o644);
        let public = std::fs::read_to_string(state.join(KEYS_FILE)).unwrap();
        for secret in ["secret-mac", "secret-script", "secret-notice"] {
            assert!(!public.contains(secret), "{secret} in {public}");
        }
        // … and it answers as before.
        assert_eq!(
            authorized_keys(&state, "alice", at(2, 0)).len(),
            1,
            "{public}"
        );
        assert!(authorized_keys(&state, "alice", at(6, 0)).is_empty());
        assert!(authorized_keys(&state, "bob", at(2, 0)).is_empty());
        // No temporary file is left behind.
        let names: Vec<String> = std::fs::read_dir(&state)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|name| !name.ends_with(".tmp")),
            "{names:?}"
        );
        // The holder's environment file: hers alone (given to her when the agent may).
        setup.tick(at(2, 0), &[]);
        let env = dir.join("leases/alice.env");
        assert_eq!(mode(&env), 0o600);
        let owner = std::fs::metadata(&env).unwrap().uid();
        if nix::unistd::geteuid().is_root() {
            assert_eq!(owner, 1001, "given to the holder");
        } else {
            assert_eq!(owner, nix::unistd::geteuid().as_raw(), "kept by the agent");
        }
    }

    #[test]
    fn terminals_are_written_only_when_they_are_the_holders() {
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().join("3");
        std::fs::write(&mine, "").unwrap();
        let uid = std::fs::metadata(&mine).unwrap().uid();
        assert_eq!(tell_terminals(dir.path(), uid, "idle\nsince 12:00"), 1);
        assert_eq!(
            std::fs::read_to_string(&mine).unwrap(),
            "\r\nidle\r\nsince 12:00\r\n"
        );
        assert_eq!(tell_terminals(dir.path(), uid + 1, "not yours"), 0);
        assert_eq!(
            tell_terminals(&dir.path().join("none"), uid, "no such dir"),
            0
        );
    }

    #[test]
    fn nothing_opens_before_the_gpus_are_known() {
        let mut s = Setup::new(
            vec![lease(1, "alice", 4, 10, 11, false)],
            IntruderPolicy::Report,
        );
        assert!(s.keeper.tick(at(10, 0), &NodeView::default()).is_empty());
        assert_eq!(s.tick(at(10, 0), &[]), vec![(Granted, None)]);
    }

    #[test]
    fn back_to_back_leases_of_one_holder_keep_her_processes() {
        let mut s = Setup::new(
            vec![
                lease(1, "alice", 4, 10, 11, false),
                lease(2, "alice", 4, 11, 12, false),
            ],
            IntruderPolicy::Report,
        );
        s.run(100, 1001, true);
        assert_eq!(s.tick(at(10, 0), &[]), vec![(Granted, None)]);
        assert_eq!(
            s.tick(at(11, 0), &[]),
            vec![(Revoked, None), (Granted, None)]
        );
        assert_eq!(s.signals(), vec![], "she still holds the GPU");
        // At the end of the second: SIGTERM, ignored; SIGKILL after the 2 minutes' grace.
        assert_eq!(
            s.tick(at(12, 0), &[]),
            vec![(Revoked, None), (Terminated, Some(100))]
        );
        assert_eq!(s.tick(at(12, 1), &[]), vec![]);
        assert_eq!(s.tick(at(12, 2), &[]), vec![(Killed, Some(100))]);
        assert_eq!(s.signals(), vec![(100, "TERM"), (100, "KILL")]);
    }

    #[test]
    fn a_lease_moved_to_another_gpu_opens_again_there() {
        let mut s = Setup::new(
            vec![lease(1, "alice", 4, 10, 12, false)],
            IntruderPolicy::Report,
        );
        assert_eq!(s.tick(at(10, 0), &[]), vec![(Granted, None)]);
        // GPU-a failed: the portal moves the booking (same id) to GPU-b of this node.
        let mut moved = lease(1, "alice", 4, 10, 12, false);
        moved.gpus[0].uuid = "GPU-b".into();
        s.keeper.set_schedule(
            NodeSchedule {
                version: "2".into(),
                leases: vec![moved],
                ..NodeSchedule::default()
            },
            at(10, 20),
        );
        let events: Vec<(AccessKind, String)> = s
            .keeper
            .tick(
                at(10, 20),
                &NodeView {
                    inventoried: true,
                    samples: 99,
                    ..NodeView::default()
                },
            )
            .into_iter()
            .map(|e| (e.kind, e.uuid))
            .collect();
        assert_eq!(
            events,
            vec![(Revoked, "GPU-a".into()), (Granted, "GPU-b".into())]
        );
        // Her workspace is neither saved nor restored: she never left the node.
        assert!(s.keeper.pending_saves.is_empty());
        assert!(s.keeper.handed_over.is_empty());
    }

    #[test]
    fn the_next_holder_starts_clean() {
        let mut s = Setup::new(
            vec![
                lease(1, "alice", 4, 10, 11, false),
                lease(2, "bob", 4, 11, 12, false),
            ],
            IntruderPolicy::Report,
        );
        s.run(100, 1001, true);
        s.tick(at(10, 0), &[]);
        // Bob starts when alice ends: her process gets no grace into his time.
        let events = s.tick(at(11, 0), &[]);
        assert!(
            events.contains(&(Terminated, Some(100))) && events.contains(&(Killed, Some(100))),
            "{events:?}"
        );
        assert!(!events.contains(&(Unauthorized, Some(100))));
        assert_eq!(s.signals(), vec![(100, "TERM"), (100, "KILL")]);
    }

    #[test]
    fn a_holder_who_keeps_running_leaves_before_the_next_booking() {
        let mut s = Setup::new(
            vec![
                lease(1, "alice", 4, 10, 11, true),
                lease(2, "bob", 4, 13, 14, false),
            ],
            IntruderPolicy::Terminate,
        );
        s.run(100, 1001, true);
        s.tick(at(10, 0), &[]);
        assert_eq!(s.tick(at(11, 0), &[]), vec![(Revoked, None)]);
        assert_eq!(
            s.tick(at(12, 0), &[]),
            vec![],
            "not an intruder: it was hers, and it may stay"
        );
        // SIGTERM the grace before bob's start, SIGKILL at it.
        assert_eq!(s.tick(at(12, 58), &[]), vec![(Terminated, Some(100))]);
        assert_eq!(
            s.tick(at(13, 0), &[]),
            vec![(Granted, None), (Killed, Some(100))]
        );
    }

    #[test]
    fn intruders_are_reported_once_and_terminated_under_the_policy() {
        let mut s = Setup::new(
            vec![lease(1, "alice", 4, 10, 11, false)],
            IntruderPolicy::Report,
        );
        s.run(200, 1002, false); // bob
        s.run(1, 0, false); // root
        s.run(300, 900, false); // an exempt service account
        assert_eq!(
            s.tick(at(9, 0), &[]),
            vec![],
            "no lease: the idle GPU is not protected"
        );
        assert_eq!(
            s.tick(at(10, 0), &[]),
            vec![(Granted, None), (Unauthorized, Some(200))]
        );
        assert_eq!(s.tick(at(10, 1), &[]), vec![], "reported once");
        assert_eq!(s.signals(), vec![]);

        let mut s = Setup::new(
            vec![lease(1, "alice", 4, 10, 11, false)],
            IntruderPolicy::Terminate,
        );
        s.run(200, 1002, true);
        s.run(1, 0, false);
        assert_eq!(
            s.tick(at(10, 0), &[]),
            vec![
                (Granted, None),
                (Unauthorized, Some(200)),
                (Terminated, Some(200))
            ]
        );
        assert_eq!(s.tick(at(10, 2), &[]), vec![(Killed, Some(200))]);
        assert_eq!(
            s.signals(),
            vec![(200, "TERM"), (200, "KILL")],
            "root untouched"
        );

        let mut s = Setup::new(vec![], IntruderPolicy::Report);
        s.keeper.cached.schedule.protect_idle = true;
        s.run(200, 1002, false);
        assert_eq!(
            s.tick(at(9, 0), &[]),
            vec![(Unauthorized, Some(200))],
            "protected idle GPU"
        );
    }

    #[test]
    fn a_holder_over_her_share_is_reported_once() {
        let mut s = Setup::new(
            vec![lease(1, "alice", 1, 10, 11, false)],
            IntruderPolicy::Report,
        );
        s.run(100, 1001, false);
        assert_eq!(
            s.tick(at(10, 0), &[(100, 20_000)]),
            vec![(Granted, None)],
            "a quarter of 80,000 MiB"
        );
        assert_eq!(
            s.tick(at(10, 1), &[(100, 20_001)]),
            vec![(OverShare, Some(100))]
        );
        assert_eq!(s.tick(at(10, 2), &[(100, 30_000)]), vec![]);
        assert_eq!(s.signals(), vec![], "reported, not stopped");
    }
}
