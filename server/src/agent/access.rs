//! Access on the node: the agent opens each lease of its schedule at the start and closes it at
//! the end, on its own clock, from a schedule it keeps on disk (so that starts and ends happen
//! while the portal is unreachable).
//!
//! - **Keys.** `berth agent authorized-keys USER` answers `sshd` from the cached schedule
//!   ([`authorized_keys`]): no network call on the login path.
//! - **Environment.** `<env_dir>/<login>.env` holds `CUDA_VISIBLE_DEVICES` and the MPS limits of
//!   the holder's open leases; `deploy/profile.d/berth.sh` reads it into login shells.
//! - **Devices.** With `device_acl`, the holder's UID gets a POSIX ACL entry (`rw`) on the
//!   reserved GPUs' device files (`<device_dir>/nvidia<minor>`) from the start to the end.
//! - **Processes.** At the end the holder's processes on those GPUs get SIGTERM, and SIGKILL
//!   after the grace time; a holder who chose to keep running stays until a following lease
//!   needs the GPU. Each sample, processes of people holding no lease on a GPU are reported (and
//!   terminated under the `terminate` policy). Root and the configured service accounts are never
//!   touched.
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

/// The schedule file in the state directory.
pub const SCHEDULE_FILE: &str = "leases.json";
/// Default state directory (the sshd snippet's `authorized-keys` reads it from there).
pub const DEFAULT_STATE_DIR: &str = "/var/lib/berth-agent";
/// Default directory of the per-login environment files.
pub const DEFAULT_ENV_DIR: &str = "/run/berth/leases";

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
        let bytes = std::fs::read(state_dir.join(SCHEDULE_FILE)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Writes it atomically (a temporary file renamed over the old one), readable by all (it
    /// holds public keys only: `sshd` runs the key command as an unprivileged user).
    pub fn save(&self, state_dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(state_dir)?;
        let tmp = state_dir.join(format!(".{SCHEDULE_FILE}.{}", std::process::id()));
        std::fs::write(
            &tmp,
            serde_json::to_vec(self).map_err(std::io::Error::other)?,
        )?;
        set_mode(&tmp, 0o644)?;
        std::fs::rename(&tmp, state_dir.join(SCHEDULE_FILE))
    }

    fn early(&self) -> TimeDelta {
        TimeDelta::seconds(self.early_access_seconds.max(0))
    }
}

fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// The `AuthorizedKeysCommand` answer for `user` at `now`, from the schedule kept in
/// `state_dir`: one line per accepted key.
pub fn authorized_keys(state_dir: &Path, user: &str, now: DateTime<Utc>) -> Vec<String> {
    match CachedSchedule::load(state_dir) {
        Some(cached) => cached.schedule.authorized_keys(user, now, cached.early()),
        None => Vec::new(),
    }
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
}

/// A lease the agent has opened.
#[derive(Debug, Clone)]
struct Opened {
    login: String,
    uid: Option<u32>,
    gpus: Vec<String>,
}

/// A process on its way out: SIGTERM at `term_at` (if not sent yet), SIGKILL at `kill_at`.
#[derive(Debug, Clone)]
struct Leaving {
    pid: u32,
    uid: u32,
    uuid: String,
    reservation_id: Option<i64>,
    term_at: Option<DateTime<Utc>>,
    termed: bool,
    /// Leaves when the next lease on `uuid` starts (a holder who keeps running).
    until_next: bool,
}

/// Opens and closes leases and watches the GPUs' processes.
pub struct Keeper {
    options: AccessOptions,
    cached: CachedSchedule,
    processes: Box<dyn Processes>,
    opened: BTreeMap<i64, Opened>,
    leaving: Vec<Leaving>,
    /// (uuid, pid, kind) already reported.
    reported: HashSet<(String, u32, AccessKind)>,
    env_files: BTreeMap<String, String>,
    acl_ready: bool,
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
        Self {
            options,
            cached,
            processes,
            opened: BTreeMap::new(),
            leaving: Vec::new(),
            reported: HashSet::new(),
            env_files: BTreeMap::new(),
            acl_ready: false,
        }
    }

    /// The version of the schedule it holds.
    pub fn version(&self) -> Option<&str> {
        Some(self.cached.schedule.version.as_str()).filter(|v| !v.is_empty())
    }

    /// Takes a new schedule and keeps it on disk.
    pub fn set_schedule(&mut self, schedule: NodeSchedule, now: DateTime<Utc>) {
        self.cached.schedule = schedule;
        self.cached.received_at = Some(now);
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
    /// environment files, signals processes; answers what it did.
    pub fn tick(&mut self, now: DateTime<Utc>, view: &NodeView) -> Vec<AccessEvent> {
        let mut events = Vec::new();
        if self.options.device_acl && !self.acl_ready {
            self.reset_acls(view);
            self.acl_ready = true;
        }
        let open: BTreeMap<i64, Lease> = self
            .cached
            .schedule
            .open(now, self.early())
            .map(|lease| (lease.reservation_id, lease.clone()))
            .collect();
        // Close what ended (or vanished from the schedule: cancelled, released).
        let ended: Vec<i64> = self
            .opened
            .keys()
            .filter(|id| !open.contains_key(id))
            .copied()
            .collect();
        for id in ended {
            let Some(closed) = self.opened.remove(&id) else {
                continue;
            };
            let keep = self
                .cached
                .schedule
                .leases
                .iter()
                .find(|l| l.reservation_id == id)
                .is_some_and(|l| l.keep_running);
            for uuid in &closed.gpus {
                let still_held = closed.uid.is_some()
                    && self
                        .opened
                        .values()
                        .any(|o| o.uid == closed.uid && o.gpus.contains(uuid));
                if !still_held && let Some(uid) = closed.uid {
                    self.acl(view, uuid, uid, false);
                    // The holder's processes on it leave.
                    for process in view.processes.get(uuid).into_iter().flatten() {
                        if self.processes.owner(process.pid) == Some(uid)
                            && !self.leaving.iter().any(|l| l.pid == process.pid)
                        {
                            self.leaving.push(Leaving {
                                pid: process.pid,
                                uid,
                                uuid: uuid.clone(),
                                reservation_id: Some(id),
                                term_at: (!keep).then_some(now),
                                termed: false,
                                until_next: keep,
                            });
                        }
                    }
                }
                events.push(event(
                    uuid,
                    now,
                    AccessKind::Revoked,
                    Some(id),
                    None,
                    closed.uid,
                    Some(closed.login.clone()),
                ));
            }
        }
        // Open what started.
        for (id, lease) in &open {
            if self.opened.contains_key(id) {
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
                // Whoever kept running on it must leave now.
                for leaving in &mut self.leaving {
                    if leaving.uuid == gpu.uuid && leaving.until_next && Some(leaving.uid) != uid {
                        leaving.term_at = Some(now);
                        leaving.until_next = false;
                    }
                }
                events.push(event(
                    &gpu.uuid,
                    now,
                    AccessKind::Granted,
                    Some(*id),
                    None,
                    uid,
                    Some(lease.login.clone()),
                ));
            }
            self.opened.insert(
                *id,
                Opened {
                    login: lease.login.clone(),
                    uid,
                    gpus: lease.gpus.iter().map(|g| g.uuid.clone()).collect(),
                },
            );
        }
        self.write_env_files(&open);
        self.watch_processes(now, view, &open, &mut events);
        self.signal_leaving(now, &mut events);
        events
    }

    /// Processes on each GPU: over-share by holders, use by anyone else.
    fn watch_processes(
        &mut self,
        now: DateTime<Utc>,
        view: &NodeView,
        open: &BTreeMap<i64, Lease>,
        events: &mut Vec<AccessEvent>,
    ) {
        let schedule = &self.cached.schedule;
        let exempt: HashSet<u32> = self
            .options
            .exempt_users
            .iter()
            .filter_map(|name| self.processes.uid_of(name))
            .collect();
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
                if uid == 0 || exempt.contains(&uid) {
                    continue;
                }
                let own: Vec<&Lease> = holders
                    .iter()
                    .filter(|(_, holder)| *holder == Some(uid))
                    .map(|(lease, _)| *lease)
                    .collect();
                if !own.is_empty() {
                    let quarters: u8 = own.iter().map(|l| l.quarters).sum::<u8>().min(4);
                    let memory = view.memory_mib.get(uuid).copied().or_else(|| {
                        own.iter()
                            .flat_map(|l| l.gpus.iter())
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
                        let mut e = event(
                            uuid,
                            now,
                            AccessKind::OverShare,
                            Some(own[0].reservation_id),
                            Some(process.pid),
                            Some(uid),
                            self.processes.name_of(uid),
                        );
                        e.memory_mib = Some(used);
                        events.push(e);
                    }
                    continue;
                }
                if self.leaving.iter().any(|l| l.pid == process.pid) {
                    continue;
                }
                if holders.is_empty() && !schedule.protect_idle {
                    continue;
                }
                if schedule.intruders == IntruderPolicy::Off {
                    continue;
                }
                let holder = holders.first().map(|(lease, _)| lease.reservation_id);
                if self
                    .reported
                    .insert((uuid.clone(), process.pid, AccessKind::Unauthorized))
                {
                    events.push(event(
                        uuid,
                        now,
                        AccessKind::Unauthorized,
                        holder,
                        Some(process.pid),
                        Some(uid),
                        self.processes.name_of(uid),
                    ));
                }
                if schedule.intruders == IntruderPolicy::Terminate {
                    self.leaving.push(Leaving {
                        pid: process.pid,
                        uid,
                        uuid: uuid.clone(),
                        reservation_id: holder,
                        term_at: Some(now),
                        termed: false,
                        until_next: false,
                    });
                }
            }
        }
    }

    /// SIGTERM when due, SIGKILL after the grace time; forgets processes that are gone.
    fn signal_leaving(&mut self, now: DateTime<Utc>, events: &mut Vec<AccessEvent>) {
        let grace = self.grace();
        let mut keep = Vec::with_capacity(self.leaving.len());
        for mut leaving in std::mem::take(&mut self.leaving) {
            // Gone, or the PID now belongs to someone else.
            if self.processes.owner(leaving.pid) != Some(leaving.uid) {
                continue;
            }
            let Some(term_at) = leaving.term_at else {
                keep.push(leaving);
                continue;
            };
            if !leaving.termed && now >= term_at {
                leaving.termed = true;
                match self.processes.signal(leaving.pid, false) {
                    Ok(()) => events.push(event(
                        &leaving.uuid,
                        now,
                        AccessKind::Terminated,
                        leaving.reservation_id,
                        Some(leaving.pid),
                        Some(leaving.uid),
                        self.processes.name_of(leaving.uid),
                    )),
                    Err(err) => tracing::warn!(pid = leaving.pid, error = %err, "sending SIGTERM"),
                }
            }
            if leaving.termed && now >= term_at + grace {
                match self.processes.signal(leaving.pid, true) {
                    Ok(()) => events.push(event(
                        &leaving.uuid,
                        now,
                        AccessKind::Killed,
                        leaving.reservation_id,
                        Some(leaving.pid),
                        Some(leaving.uid),
                        self.processes.name_of(leaving.uid),
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
        for lease in open.values() {
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
            let body: String = lease::environment(&leases)
                .into_iter()
                .map(|(name, value)| format!("{name}={value}\n"))
                .collect();
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
            let tmp = self.options.env_dir.join(format!(".{login}.env.tmp"));
            let written = std::fs::write(&tmp, body)
                .and_then(|()| set_mode(&tmp, 0o644))
                .and_then(|()| std::fs::rename(&tmp, &path));
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

#[allow(clippy::too_many_arguments)]
fn event(
    uuid: &str,
    at: DateTime<Utc>,
    kind: AccessKind,
    reservation_id: Option<i64>,
    pid: Option<u32>,
    uid: Option<u32>,
    user: Option<String>,
) -> AccessEvent {
    AccessEvent {
        uuid: uuid.to_owned(),
        at,
        kind,
        reservation_id,
        pid,
        uid,
        user: user.map(|u| u.chars().take(64).collect()),
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
