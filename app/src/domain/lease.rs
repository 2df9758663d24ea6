//! Node leases: who may use which GPUs of a node, and when. The portal sends a node's agent its
//! schedule (the leases of the next 24 hours); the agent opens and closes access from it on its
//! own clock, so starts and ends happen on time while the portal is unreachable.

use crate::domain::problem::Problem;
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How far ahead a node's schedule reaches.
pub const HORIZON_HOURS: i64 = 24;
/// Most characters of a login name.
pub const LOGIN_MAX: usize = 32;
/// Names a login may not take: system accounts every node has, and the first accounts of common
/// cloud and distribution images (which can usually `sudo`): `ubuntu@example.com` must not log
/// in as a GPU host's `ubuntu`.
const RESERVED_LOGINS: &[&str] = &[
    "root",
    "daemon",
    "bin",
    "sys",
    "sync",
    "games",
    "man",
    "lp",
    "mail",
    "news",
    "uucp",
    "proxy",
    "www-data",
    "backup",
    "list",
    "irc",
    "nobody",
    "sshd",
    "berth",
    "postgres",
    "admin",
    "ubuntu",
    "debian",
    "ec2-user",
    "centos",
    "rocky",
    "almalinux",
    "fedora",
    "core",
    "opc",
    "azureuser",
    "cloud-user",
    "pi",
    "vagrant",
    "ansible",
    "nvidia",
    "operator",
    "sudo",
    "wheel",
    "administrator",
];

/// One GPU of a lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseGpu {
    /// NVML UUID (`GPU-…`).
    pub uuid: String,
    /// Its memory, MiB (a fractional share's limit is its part of this).
    pub memory_mib: u64,
}

/// A reservation as its node's agent enforces it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The reservation.
    pub reservation_id: i64,
    /// The holder's login name on the node.
    pub login: String,
    /// The holder's SSH public keys (`algorithm base64`).
    pub keys: Vec<String>,
    /// The GPUs held.
    pub gpus: Vec<LeaseGpu>,
    /// Quarters of each GPU held (4: whole).
    pub quarters: u8,
    /// Start (UTC).
    pub start: DateTime<Utc>,
    /// End (UTC).
    pub end: DateTime<Utc>,
    /// The holder's processes may run past the end until a following lease needs the GPU.
    #[serde(default)]
    pub keep_running: bool,
    /// The environment to prepare before the start (the booking's profile version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<LeaseEnvironment>,
    /// The holder's workspace: restored before access opens, saved after the lease closes
    /// (none: the workspace is on a shared filesystem, nothing to move).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<LeaseWorkspace>,
    /// A message for the holder's terminals on the node (an idle warning), written once per key
    /// while the lease is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<LeaseNotice>,
}

/// A message the agent writes to every terminal the holder has open on the node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseNotice {
    /// Written once per key (a new warning has a new key).
    pub key: String,
    /// What it says, in the holder's language.
    pub text: String,
}

/// What a node needs to move a holder's workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseWorkspace {
    /// The directory: relative to the holder's home, or absolute.
    pub dir: String,
    /// Lets the save and restore (run as the holder) reach this holder's workspace and no
    /// other, around this reservation's time.
    pub token: String,
}

/// A booking's environment as its node's agent prepares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseEnvironment {
    /// The profile's name.
    pub profile: String,
    /// The version's number.
    pub version: i32,
    /// Its content hash (the node's cache key).
    pub hash: String,
    /// What to build.
    pub spec: crate::domain::profile::ProfileSpec,
}

impl Lease {
    /// Whether access is open at `now`, opening `early` before the start.
    pub fn is_open(&self, now: DateTime<Utc>, early: TimeDelta) -> bool {
        self.start - early <= now && now < self.end
    }

    /// Whether it holds the GPU `uuid`.
    pub fn holds(&self, uuid: &str) -> bool {
        self.gpus.iter().any(|gpu| gpu.uuid == uuid)
    }
}

/// Someone whose keys a node always accepts (platform admins).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeAdmin {
    /// Login name.
    pub login: String,
    /// SSH public keys.
    pub keys: Vec<String>,
}

/// What an agent does about a process whose owner holds no lease on its GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntruderPolicy {
    /// Nothing.
    Off,
    /// Reports it as an event (and tells the holder).
    #[default]
    Report,
    /// Reports it and terminates the process (SIGTERM, then SIGKILL after the grace time).
    Terminate,
}

impl IntruderPolicy {
    /// All, in the order a form offers them.
    pub const ALL: [IntruderPolicy; 3] = [Self::Off, Self::Report, Self::Terminate];

    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Report => "report",
            Self::Terminate => "terminate",
        }
    }

    /// From the stored or sent text.
    pub fn parse(raw: &str) -> Result<Self, Problem> {
        Self::ALL
            .into_iter()
            .find(|policy| policy.as_str() == raw.trim())
            .ok_or_else(|| Problem::UnknownIntruderPolicy {
                raw: raw.chars().take(40).collect(),
            })
    }
}

/// A node's intruder policy, as the fleet page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodePolicy {
    /// The node.
    pub node_id: i64,
    /// Its name.
    pub name: String,
    /// What its agent does about processes of people holding no lease.
    pub intruders: IntruderPolicy,
    /// GPUs with no lease are protected too.
    pub protect_idle: bool,
}

/// A node's schedule, as the portal sends it and the agent keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NodeSchedule {
    /// Changes whenever anything in it changes (an agent asks for news after this).
    pub version: String,
    /// Leases not ended that start within [`HORIZON_HOURS`], by start.
    pub leases: Vec<Lease>,
    /// Always accepted.
    pub admins: Vec<NodeAdmin>,
    /// The node's intruder policy.
    pub intruders: IntruderPolicy,
    /// GPUs with no lease are protected too.
    pub protect_idle: bool,
    /// Environments are prepared this many seconds before their lease starts.
    #[serde(default = "default_prepare_ahead")]
    pub prepare_ahead_seconds: i64,
}

/// The default lead of environment preparation: 30 minutes.
pub const PREPARE_AHEAD_SECONDS: i64 = 30 * 60;

fn default_prepare_ahead() -> i64 {
    PREPARE_AHEAD_SECONDS
}

impl NodeSchedule {
    /// The leases open at `now`.
    pub fn open(&self, now: DateTime<Utc>, early: TimeDelta) -> impl Iterator<Item = &Lease> {
        self.leases
            .iter()
            .filter(move |lease| lease.is_open(now, early))
    }

    /// The next moment after `now` at which a lease opens or closes.
    pub fn next_change(&self, now: DateTime<Utc>, early: TimeDelta) -> Option<DateTime<Utc>> {
        self.leases
            .iter()
            .flat_map(|lease| [lease.start - early, lease.end])
            .filter(|at| *at > now)
            .min()
    }

    /// When access for someone other than `except` next opens on `uuid`, at or after `at`:
    /// the processes of whoever leaves that GPU must be gone by then.
    pub fn next_start_on(
        &self,
        uuid: &str,
        at: DateTime<Utc>,
        early: TimeDelta,
        except: &str,
    ) -> Option<DateTime<Utc>> {
        self.leases
            .iter()
            .filter(|lease| lease.holds(uuid) && lease.login != except && lease.start - early >= at)
            .map(|lease| lease.start - early)
            .min()
    }

    /// The lines `sshd` accepts for `login` at `now` (an `AuthorizedKeysCommand` answer): the
    /// holder's keys with the environment of their open leases, an admin's keys always; none
    /// otherwise.
    pub fn authorized_keys(
        &self,
        login: &str,
        now: DateTime<Utc>,
        early: TimeDelta,
    ) -> Vec<String> {
        let open: Vec<&Lease> = self.open(now, early).filter(|l| l.login == login).collect();
        let options = if open.is_empty() {
            String::new()
        } else {
            environment(&open)
                .iter()
                .map(|(name, value)| format!("environment=\"{name}={value}\""))
                .collect::<Vec<_>>()
                .join(",")
                + " "
        };
        let mut keys: Vec<&str> = Vec::new();
        for key in open.iter().flat_map(|lease| lease.keys.iter()).chain(
            self.admins
                .iter()
                .filter(|admin| admin.login == login)
                .flat_map(|admin| admin.keys.iter()),
        ) {
            if is_plain_key(key) && !keys.contains(&key.as_str()) {
                keys.push(key);
            }
        }
        keys.into_iter()
            .map(|key| format!("{options}{key}"))
            .collect()
    }
}

/// An SSH key on a profile, as its owner sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SshKeyInfo {
    /// Database id.
    pub id: i64,
    /// The name its owner gave it.
    pub name: String,
    /// `ssh-ed25519`, `ssh-rsa`, …
    pub algorithm: String,
    /// `SHA256:…`, as `ssh-keygen -l` prints it.
    pub fingerprint: String,
    /// When it was added.
    pub created_at: DateTime<Utc>,
}

/// What a user needs to reach their GPUs: the login Berth uses on every node and their keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeAccess {
    /// Login name on the nodes.
    pub login: String,
    /// SSH public keys.
    pub keys: Vec<SshKeyInfo>,
}

/// Where a reservation stands on its node, as its holder sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaseState {
    /// More than [`PREPARING_LEAD`] before the start.
    Upcoming,
    /// About to start, or started and not yet opened by the node's agent.
    Preparing,
    /// Open on the node: the holder may log in.
    Ready,
    /// Open, and ending within [`PREPARING_LEAD`].
    EndingSoon,
    /// Over (or closed on the node).
    Ended,
    /// Cancelled or released: never takes effect.
    Cancelled,
}

/// How long before the start a reservation is "preparing", and before the end "ending soon".
pub const PREPARING_LEAD: TimeDelta = TimeDelta::minutes(15);

impl LeaseState {
    /// The state at `now` of a reservation for `start`..`end`, from whether it is cancelled and
    /// whether its node's agent has reported it opened and closed.
    pub fn at(
        cancelled: bool,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        granted: bool,
        revoked: bool,
        now: DateTime<Utc>,
    ) -> Self {
        if cancelled {
            Self::Cancelled
        } else if now >= end || (revoked && now >= start) {
            Self::Ended
        } else if granted && !revoked {
            if end - now <= PREPARING_LEAD {
                Self::EndingSoon
            } else {
                Self::Ready
            }
        } else if now >= start || start - now <= PREPARING_LEAD {
            Self::Preparing
        } else {
            Self::Upcoming
        }
    }
}

/// A GPU of a reservation with its latest values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseGpuView {
    /// Database id.
    pub gpu_id: i64,
    /// NVML UUID.
    pub uuid: String,
    /// Utilisation, percent (latest sample).
    pub gpu_util: Option<u8>,
    /// Memory in use, MiB.
    pub memory_used_mib: Option<u64>,
    /// Memory, MiB.
    pub memory_mib: u64,
    /// When the values were read.
    pub at: Option<DateTime<Utc>>,
}

/// A reservation on its node: state, how to connect, its GPUs live, what the agent did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationAccess {
    /// The reservation.
    pub reservation_id: i64,
    /// Where it stands.
    pub state: LeaseState,
    /// `ssh <login>@<host>`.
    pub connect: String,
    /// The node's host name.
    pub host: String,
    /// Start.
    pub start: DateTime<Utc>,
    /// End.
    pub end: DateTime<Utc>,
    /// Its GPUs.
    pub gpus: Vec<LeaseGpuView>,
    /// The holder's processes may run on past the end until a following booking needs the GPU.
    pub keep_running: bool,
    /// A node agent enforces access on its node (not a demo node, whose values are simulated
    /// inside the portal): the state follows what the agent reported.
    #[serde(default)]
    pub enforced: bool,
    /// What the node's agent did and saw, newest first.
    pub events: Vec<crate::domain::telemetry::GpuAccessEvent>,
    /// The booking's environment profile and its preparation on the node.
    #[serde(default)]
    pub environment: Option<crate::domain::profile::Preparation>,
    /// It continues reservation `.0`, whose GPU failed (`.1` why).
    #[serde(default)]
    pub moved_from: Option<(i64, crate::domain::failover::FailureCause)>,
    /// Its GPU failed and its rest continues as this reservation.
    #[serde(default)]
    pub moved_to: Option<i64>,
    /// A batch booking that starts early if its GPUs free up (and has not yet).
    #[serde(default)]
    pub start_early: bool,
    /// Brought forward when its GPUs freed up: the start it had before.
    #[serde(default)]
    pub early_from: Option<chrono::DateTime<chrono::Utc>>,
    /// Its GPUs sit idle and the holder was warned: what the idle policy will do.
    #[serde(default)]
    pub idle: Option<crate::domain::reclaim::IdleNote>,
    /// When its holder said "I'm still using it".
    #[serde(default)]
    pub still_using_at: Option<DateTime<Utc>>,
    /// The idle policy brought its rest back to the fleet; it would have ended then.
    #[serde(default)]
    pub reclaimed_until: Option<DateTime<Utc>>,
}

/// A key line holds nothing but `algorithm base64` (no options, quotes or line breaks that could
/// widen what `sshd` allows).
fn is_plain_key(key: &str) -> bool {
    let mut parts = key.split(' ');
    matches!(
        (parts.next(), parts.next(), parts.next()),
        (Some(algorithm), Some(data), None)
            if !algorithm.is_empty()
                && algorithm.chars().all(|c| c.is_ascii_alphanumeric() || "-@.".contains(c))
                && !data.is_empty()
                && data.chars().all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c))
    )
}

/// Characters safe inside an `environment="…"` value and a shell `KEY=value` line.
fn is_plain_value(value: &str) -> bool {
    value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_,.=:".contains(c))
}

/// The environment of a holder's open leases on one node: `CUDA_VISIBLE_DEVICES` (the UUIDs
/// held, in lease order), `BERTH_RESERVATIONS`, and for fractional shares the MPS limits
/// (`CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`, the smallest share; `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`,
/// each shared GPU's part of its memory by its position in `CUDA_VISIBLE_DEVICES`).
pub fn environment(open: &[&Lease]) -> Vec<(String, String)> {
    let mut order: Vec<(&str, u64)> = Vec::new();
    let mut quarters: BTreeMap<&str, u8> = BTreeMap::new();
    for lease in open {
        for gpu in &lease.gpus {
            if !is_plain_value(&gpu.uuid) {
                continue;
            }
            if !order.iter().any(|(uuid, _)| *uuid == gpu.uuid) {
                order.push((&gpu.uuid, gpu.memory_mib));
            }
            let held = quarters.entry(&gpu.uuid).or_insert(0);
            *held = (*held + lease.quarters).min(4);
        }
    }
    let mut env = vec![
        (
            "CUDA_VISIBLE_DEVICES".to_owned(),
            order
                .iter()
                .map(|(uuid, _)| *uuid)
                .collect::<Vec<_>>()
                .join(","),
        ),
        (
            "BERTH_RESERVATIONS".to_owned(),
            open.iter()
                .map(|lease| lease.reservation_id.to_string())
                .collect::<Vec<_>>()
                .join(","),
        ),
    ];
    let shared: Vec<(usize, u64, u8)> = order
        .iter()
        .enumerate()
        .filter_map(|(index, (uuid, memory))| {
            let held = quarters[uuid];
            (held < 4).then_some((index, *memory, held))
        })
        .collect();
    if let Some(smallest) = shared.iter().map(|(_, _, held)| *held).min() {
        env.push((
            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE".to_owned(),
            (u32::from(smallest) * 25).to_string(),
        ));
        env.push((
            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT".to_owned(),
            shared
                .iter()
                .map(|(index, memory, held)| format!("{index}={}M", share_of(*memory, *held)))
                .collect::<Vec<_>>()
                .join(","),
        ));
    }
    env
}

/// `quarters` of `memory_mib`, MiB.
pub fn share_of(memory_mib: u64, quarters: u8) -> u64 {
    memory_mib * u64::from(quarters.min(4)) / 4
}

/// The login Berth proposes for an address: its local part before any `+`, lower-cased, dots
/// as `_`, other characters dropped, starting with a letter or `_`, at most [`LOGIN_MAX`].
pub fn login_from_email(email: &str) -> String {
    let local = email.split('@').next().unwrap_or_default();
    let local = local.split('+').next().unwrap_or_default();
    let mut login: String = local
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            'a'..='z' | '0'..='9' | '_' | '-' => Some(c),
            '.' => Some('_'),
            _ => None,
        })
        .collect();
    let prefixed = !login.starts_with(|c: char| c.is_ascii_lowercase() || c == '_');
    if prefixed {
        login.insert(0, 'u');
    }
    login.truncate(LOGIN_MAX);
    if login.len() < 2 || RESERVED_LOGINS.contains(&login.as_str()) || login.starts_with("systemd")
    {
        let own = if prefixed { &login[1..] } else { &login[..] };
        login = format!("user_{own}").chars().take(LOGIN_MAX).collect();
    }
    login
}

/// The `n`-th alternative to a taken `login` (`maria2`, `maria3`, …), within [`LOGIN_MAX`].
pub fn login_alternative(login: &str, n: u32) -> String {
    let suffix = n.to_string();
    let keep = LOGIN_MAX.saturating_sub(suffix.len());
    format!("{}{suffix}", login.chars().take(keep).collect::<String>())
}

/// Checks a login a platform admin gives: 1 to 32 of `a-z 0-9 _ -`, starting with a letter or
/// `_`, not a system account.
pub fn valid_login(raw: &str) -> Result<String, Problem> {
    let login = raw.trim();
    let bad = || Problem::BadLogin {
        raw: login.chars().take(40).collect(),
    };
    if login.is_empty() || login.len() > LOGIN_MAX {
        return Err(bad());
    }
    if !login.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        || !login
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
    {
        return Err(bad());
    }
    if RESERVED_LOGINS.contains(&login) || login.starts_with("systemd") {
        return Err(Problem::ReservedLogin {
            raw: login.to_owned(),
        });
    }
    Ok(login.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 3, h, m, 0).unwrap()
    }

    fn lease(
        id: i64,
        login: &str,
        gpus: &[&str],
        quarters: u8,
        from: (u32, u32),
        to: (u32, u32),
    ) -> Lease {
        Lease {
            reservation_id: id,
            login: login.to_owned(),
            keys: vec![format!("ssh-ed25519 AAAA{login}")],
            gpus: gpus
                .iter()
                .map(|uuid| LeaseGpu {
                    uuid: (*uuid).to_owned(),
                    memory_mib: 81920,
                })
                .collect(),
            quarters,
            start: at(from.0, from.1),
            end: at(to.0, to.1),
            keep_running: false,
            environment: None,
            workspace: None,
            notice: None,
        }
    }

    fn schedule(leases: Vec<Lease>) -> NodeSchedule {
        NodeSchedule {
            version: "v".into(),
            leases,
            admins: vec![NodeAdmin {
                login: "ops".into(),
                keys: vec!["ssh-ed25519 AAAAops".into()],
            }],
            ..NodeSchedule::default()
        }
    }

    const NO_EARLY: TimeDelta = TimeDelta::zero();

    #[test]
    fn keys_are_accepted_from_the_start_to_the_end_only() {
        let s = schedule(vec![lease(1, "alice", &["GPU-a"], 4, (10, 0), (11, 0))]);
        assert!(s.authorized_keys("alice", at(9, 59), NO_EARLY).is_empty());
        assert_eq!(
            s.authorized_keys("alice", at(10, 0), NO_EARLY),
            vec![
                "environment=\"CUDA_VISIBLE_DEVICES=GPU-a\",environment=\"BERTH_RESERVATIONS=1\" ssh-ed25519 AAAAalice"
                    .to_owned()
            ]
        );
        assert!(s.authorized_keys("alice", at(11, 0), NO_EARLY).is_empty());
        assert!(s.authorized_keys("bob", at(10, 30), NO_EARLY).is_empty());
        // The early-access margin opens it before the start, never after the end.
        assert_eq!(
            s.authorized_keys("alice", at(9, 50), TimeDelta::minutes(10))
                .len(),
            1
        );
        assert!(
            s.authorized_keys("alice", at(11, 0), TimeDelta::minutes(10))
                .is_empty()
        );
    }

    #[test]
    fn admins_are_always_accepted_and_without_a_lease_get_no_gpus() {
        let s = schedule(vec![]);
        assert_eq!(
            s.authorized_keys("ops", at(3, 0), NO_EARLY),
            vec!["ssh-ed25519 AAAAops".to_owned()]
        );
    }

    #[test]
    fn overlapping_and_back_to_back_leases_of_one_user_join_and_hand_over() {
        let s = schedule(vec![
            lease(1, "alice", &["GPU-a"], 4, (10, 0), (11, 0)),
            lease(2, "alice", &["GPU-b"], 4, (10, 30), (12, 0)),
            lease(3, "alice", &["GPU-a"], 4, (12, 0), (13, 0)),
        ]);
        let env = |now| {
            let open: Vec<&Lease> = s.open(now, NO_EARLY).collect();
            environment(&open)
        };
        assert_eq!(env(at(10, 45))[0].1, "GPU-a,GPU-b");
        assert_eq!(env(at(10, 45))[1].1, "1,2");
        assert_eq!(env(at(11, 0))[0].1, "GPU-b");
        // Back to back: at 12:00 lease 2 has ended and lease 3 has begun, with no gap.
        assert_eq!(env(at(11, 59))[0].1, "GPU-b");
        assert_eq!(env(at(12, 0))[0].1, "GPU-a");
        assert_eq!(s.next_change(at(10, 45), NO_EARLY), Some(at(11, 0)));
        assert_eq!(s.next_change(at(13, 0), NO_EARLY), None);
        assert_eq!(
            s.authorized_keys("alice", at(10, 45), NO_EARLY).len(),
            1,
            "one line per key"
        );
    }

    #[test]
    fn fractional_shares_carry_the_mps_limits() {
        let s = schedule(vec![
            lease(1, "alice", &["GPU-a"], 4, (10, 0), (11, 0)),
            lease(2, "alice", &["GPU-b"], 1, (10, 0), (11, 0)),
            lease(3, "alice", &["GPU-c"], 2, (10, 0), (11, 0)),
        ]);
        let open: Vec<&Lease> = s.open(at(10, 0), NO_EARLY).collect();
        let env = environment(&open);
        assert_eq!(
            env[2],
            ("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE".into(), "25".into())
        );
        assert_eq!(
            env[3],
            (
                "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT".into(),
                "1=20480M,2=40960M".into()
            )
        );
        // Two quarters of one GPU by the same holder add up.
        let s = schedule(vec![
            lease(1, "alice", &["GPU-a"], 2, (10, 0), (11, 0)),
            lease(2, "alice", &["GPU-a"], 2, (10, 0), (11, 0)),
        ]);
        let open: Vec<&Lease> = s.open(at(10, 0), NO_EARLY).collect();
        assert_eq!(environment(&open).len(), 2, "a whole GPU: no limits");
    }

    #[test]
    fn a_changed_clock_reads_the_same_schedule_afresh() {
        // The agent keeps absolute times: a clock set back reopens nothing that was not open
        // then, and a clock jumping ahead closes what ended meanwhile.
        let s = schedule(vec![lease(1, "alice", &["GPU-a"], 4, (10, 0), (11, 0))]);
        assert_eq!(s.open(at(10, 30), NO_EARLY).count(), 1);
        assert_eq!(s.open(at(12, 0), NO_EARLY).count(), 0);
        assert_eq!(s.open(at(9, 0), NO_EARLY).count(), 0);
        assert_eq!(s.open(at(10, 30), NO_EARLY).count(), 1);
    }

    #[test]
    fn keys_and_values_that_could_widen_access_are_left_out() {
        let mut bad = lease(1, "alice", &["GPU-a\",command=\"sh"], 4, (10, 0), (11, 0));
        bad.keys = vec![
            "ssh-ed25519 AAAA\ncommand=\"x\" ssh-rsa BBBB".into(),
            "command=\"x\" ssh-ed25519 AAAA".into(),
            "ssh-ed25519 AAAAgood".into(),
        ];
        let s = schedule(vec![bad]);
        let lines = s.authorized_keys("alice", at(10, 0), NO_EARLY);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].ends_with(" ssh-ed25519 AAAAgood"));
        assert!(
            lines[0].starts_with("environment=\"CUDA_VISIBLE_DEVICES=\","),
            "{lines:?}"
        );
    }

    #[test]
    fn the_next_start_on_a_gpu_bounds_keep_running() {
        let s = schedule(vec![
            lease(1, "alice", &["GPU-a"], 4, (10, 0), (11, 0)),
            lease(2, "alice", &["GPU-a"], 4, (12, 0), (13, 0)),
            lease(3, "bob", &["GPU-a"], 4, (13, 0), (14, 0)),
        ]);
        assert_eq!(
            s.next_start_on("GPU-a", at(11, 0), NO_EARLY, "alice"),
            Some(at(13, 0)),
            "not her own"
        );
        assert_eq!(
            s.next_start_on("GPU-a", at(11, 0), TimeDelta::minutes(10), "alice"),
            Some(at(12, 50))
        );
        assert_eq!(s.next_start_on("GPU-b", at(11, 0), NO_EARLY, "alice"), None);
    }

    #[test]
    fn logins_come_from_the_address() {
        assert_eq!(login_from_email("Maria.Silva+gpu@lab.org"), "maria_silva");
        assert_eq!(login_from_email("42@lab.org"), "u42");
        assert_eq!(login_from_email("root@lab.org"), "user_root");
        assert_eq!(login_from_email("ubuntu@lab.org"), "user_ubuntu");
        assert_eq!(login_from_email("ec2-user@lab.org"), "user_ec2-user");
        assert_eq!(login_from_email("ü@lab.org"), "user_");
        assert_eq!(
            login_from_email(&format!("{}@x", "a".repeat(40))).len(),
            LOGIN_MAX
        );
        assert_eq!(login_alternative("maria", 2), "maria2");
        assert_eq!(login_alternative(&"a".repeat(32), 12).len(), LOGIN_MAX);
        for email in ["a@x", "Ö.ß@x", "-x@x", "_@x", "systemd-x@x"] {
            let login = login_from_email(email);
            assert_eq!(valid_login(&login), Ok(login.clone()), "{email}");
        }
    }

    #[test]
    fn given_logins_are_checked() {
        assert_eq!(valid_login(" ana "), Ok("ana".to_owned()));
        assert!(matches!(valid_login("Ana"), Err(Problem::BadLogin { .. })));
        assert!(matches!(valid_login("1ana"), Err(Problem::BadLogin { .. })));
        assert!(matches!(valid_login("a b"), Err(Problem::BadLogin { .. })));
        assert!(matches!(valid_login(""), Err(Problem::BadLogin { .. })));
        assert!(matches!(
            valid_login(&"a".repeat(33)),
            Err(Problem::BadLogin { .. })
        ));
        assert!(matches!(
            valid_login("root"),
            Err(Problem::ReservedLogin { .. })
        ));
    }

    #[test]
    fn a_reservation_moves_through_its_states() {
        let (start, end) = (at(10, 0), at(12, 0));
        let state =
            |granted, revoked, now| LeaseState::at(false, start, end, granted, revoked, now);
        assert_eq!(state(false, false, at(9, 0)), LeaseState::Upcoming);
        assert_eq!(state(false, false, at(9, 45)), LeaseState::Preparing);
        assert_eq!(
            state(false, false, at(10, 1)),
            LeaseState::Preparing,
            "not opened yet"
        );
        assert_eq!(
            state(true, false, at(9, 55)),
            LeaseState::Ready,
            "early access"
        );
        assert_eq!(state(true, false, at(11, 0)), LeaseState::Ready);
        assert_eq!(state(true, false, at(11, 45)), LeaseState::EndingSoon);
        assert_eq!(
            state(true, true, at(11, 50)),
            LeaseState::Ended,
            "closed early"
        );
        assert_eq!(state(true, false, at(12, 0)), LeaseState::Ended);
        assert_eq!(
            LeaseState::at(true, start, end, false, false, at(9, 0)),
            LeaseState::Cancelled
        );
    }

    #[test]
    fn policies_parse() {
        assert_eq!(
            IntruderPolicy::parse("terminate"),
            Ok(IntruderPolicy::Terminate)
        );
        assert!(IntruderPolicy::parse("kill").is_err());
    }
}
