//! Environments prepared before the start: for each lease of the node's schedule that carries an
//! environment profile and starts within the schedule's `prepare_ahead_seconds`, the agent
//! builds the profile as the holder (a Python virtual environment with the requirements
//! installed, the dotfiles placed in the home directory, the setup script run there), with no
//! GPU visible (`CUDA_VISIBLE_DEVICES` empty) and a time limit. Builds are cached per holder
//! and content hash (`<cache_dir>/<login>/<hash>`): a second booking with the same profile
//! version starts with nothing to build. Progress and the end of a failed build's log go to
//! the portal with the next report.
//!
//! Layout of `cache_dir` (root-owned, except each holder's own directory):
//! - `<login>/<hash>/venv`: the holder's environment, built by the holder;
//! - `.ready/<login>-<hash>`: written by the agent when a build succeeded (the lease keeper
//!   activates the environment in the login environment file only then);
//! - `.failed/<login>-<hash>`: the end of the log of a failed build;
//! - `.inputs/…`: the profile's files handed to the build (owned by the holder, removed after);
//! - `.logs/<login>-<hash>.log`: the last build's full log.

use berth_app::backend::clock::Clock;
use berth_app::domain::lease::{self, Lease, LeaseEnvironment};
use berth_app::domain::profile::{self, PrepReport, PrepState, ProfileSpec, shell_quote};
use chrono::{DateTime, TimeDelta, Utc};
use std::collections::HashMap;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Default cache directory.
pub const DEFAULT_CACHE_DIR: &str = "/var/lib/berth-agent/environments";

/// How the agent prepares environments.
#[derive(Debug, Clone)]
pub struct PrepareOptions {
    /// Where environments are built and cached.
    pub cache_dir: PathBuf,
    /// The Python interpreter of profiles that name no version (`python3`).
    pub python: String,
    /// Longest a build may run.
    pub timeout: Duration,
    /// A failed build is tried again after this long (the same version may fail for a passing
    /// reason: the network, a full disk).
    pub retry_failed_after: Duration,
}

impl Default for PrepareOptions {
    fn default() -> Self {
        Self {
            cache_dir: PathBuf::from(DEFAULT_CACHE_DIR),
            python: "python3".to_owned(),
            timeout: Duration::from_secs(30 * 60),
            retry_failed_after: Duration::from_secs(10 * 60),
        }
    }
}

/// `<cache_dir>/<login>/<hash>`: where `login`'s build of `hash` lives.
pub fn env_dir(cache_dir: &Path, login: &str, hash: &str) -> PathBuf {
    cache_dir.join(login).join(hash)
}

fn marker(cache_dir: &Path, kind: &str, login: &str, hash: &str) -> PathBuf {
    cache_dir.join(kind).join(format!("{login}-{hash}"))
}

/// Whether `login`'s build of `hash` is ready.
pub fn is_ready(cache_dir: &Path, login: &str, hash: &str) -> bool {
    lease::valid_login(login).is_ok()
        && profile::valid_hash(hash)
        && marker(cache_dir, ".ready", login, hash).exists()
}

/// The lines the login environment file gets for the first of `open` (one holder's open
/// leases, by start) whose environment is ready: the profile's variables, the virtual
/// environment on `PATH`, and `BERTH_PROFILE`. Values are shell-quoted (the file is sourced).
pub fn activation(cache_dir: &Path, login: &str, open: &[&Lease]) -> String {
    let Some(env) = open
        .iter()
        .filter_map(|lease| lease.environment.as_ref())
        .find(|env| is_ready(cache_dir, login, &env.hash))
    else {
        return String::new();
    };
    let mut out = String::new();
    for variable in &env.spec.variables {
        if profile::valid_name(&variable.name) {
            out.push_str(&format!(
                "{}={}\n",
                variable.name,
                shell_quote(&variable.value)
            ));
        }
    }
    let dir = env_dir(cache_dir, login, &env.hash);
    if env.spec.has_python() {
        let venv = dir.join("venv");
        let venv = venv.to_string_lossy();
        out.push_str(&format!("VIRTUAL_ENV={}\n", shell_quote(&venv)));
        out.push_str(&format!(
            "PATH={}:\"$PATH\"\n",
            shell_quote(&format!("{venv}/bin"))
        ));
    }
    out.push_str(&format!(
        "BERTH_PROFILE={}\n",
        shell_quote(&format!("{} v{}", env.profile, env.version))
    ));
    out
}

/// What the preparer knows of one build.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Build {
    Ready,
    Failed { log: String, at: Instant },
}

/// Builds the environments of the schedule's leases ahead of their start.
pub struct Preparer {
    options: PrepareOptions,
    /// Builds seen or made since the agent started (`login/hash`).
    builds: HashMap<String, Build>,
    /// What was last reported per reservation.
    reported: HashMap<i64, (String, PrepState)>,
    /// Reservations whose build this agent ran (not found ready).
    built_for: std::collections::HashSet<i64>,
}

impl Preparer {
    /// A preparer with `options`.
    pub fn new(options: PrepareOptions) -> Self {
        Self {
            options,
            builds: HashMap::new(),
            reported: HashMap::new(),
            built_for: std::collections::HashSet::new(),
        }
    }

    /// Leases of `leases` to prepare at `now`: not ended, starting within `ahead`, with an
    /// environment, by start.
    pub fn due(leases: &[Lease], now: DateTime<Utc>, ahead: TimeDelta) -> Vec<&Lease> {
        let mut due: Vec<&Lease> = leases
            .iter()
            .filter(|l| l.environment.is_some() && l.start - ahead <= now && now < l.end)
            .collect();
        due.sort_by_key(|l| l.start);
        due
    }

    fn report(
        &mut self,
        lease: &Lease,
        env: &LeaseEnvironment,
        state: PrepState,
        log: &str,
        send: &mut dyn FnMut(PrepReport),
    ) {
        let now_state = (env.hash.clone(), state);
        if self.reported.get(&lease.reservation_id) == Some(&now_state) {
            return;
        }
        self.reported.insert(lease.reservation_id, now_state);
        send(PrepReport {
            reservation_id: lease.reservation_id,
            hash: env.hash.clone(),
            state,
            at: Utc::now(),
            cached: state == PrepState::Ready && !self.built_for.contains(&lease.reservation_id),
            log: profile::log_tail(log).to_owned(),
        });
    }

    /// One round at `now`: reports the state of every due lease and builds the first one that
    /// needs it (a build blocks until it ends); answers whether it built something.
    pub fn step(
        &mut self,
        leases: &[Lease],
        now: DateTime<Utc>,
        ahead: TimeDelta,
        send: &mut dyn FnMut(PrepReport),
    ) -> bool {
        for lease in Self::due(leases, now, ahead) {
            let Some(env) = lease.environment.as_ref() else {
                continue;
            };
            if lease::valid_login(&lease.login).is_err()
                || !profile::valid_hash(&env.hash)
                || env.spec.hash() != env.hash
            {
                tracing::warn!(
                    reservation = lease.reservation_id,
                    "environment with an unusable login or hash: skipped"
                );
                continue;
            }
            let key = format!("{}/{}", lease.login, env.hash);
            let known = self.builds.get(&key).cloned().or_else(|| {
                is_ready(&self.options.cache_dir, &lease.login, &env.hash).then_some(Build::Ready)
            });
            match known {
                Some(Build::Ready) => {
                    self.builds.insert(key, Build::Ready);
                    self.report(lease, env, PrepState::Ready, "", send);
                }
                Some(Build::Failed { log, at })
                    if at.elapsed() < self.options.retry_failed_after =>
                {
                    self.report(lease, env, PrepState::Failed, &log, send);
                }
                _ => {
                    self.built_for.insert(lease.reservation_id);
                    self.report(lease, env, PrepState::Preparing, "", send);
                    let started = Instant::now();
                    let result = build(&self.options, &lease.login, &env.hash, &env.spec);
                    match result {
                        Ok(()) => {
                            tracing::info!(
                                reservation = lease.reservation_id,
                                seconds = started.elapsed().as_secs_f64(),
                                "environment ready"
                            );
                            self.builds.insert(key, Build::Ready);
                            self.report(lease, env, PrepState::Ready, "", send);
                        }
                        Err(log) => {
                            tracing::warn!(
                                reservation = lease.reservation_id,
                                "environment build failed"
                            );
                            self.builds.insert(
                                key,
                                Build::Failed {
                                    log: log.clone(),
                                    at: Instant::now(),
                                },
                            );
                            self.report(lease, env, PrepState::Failed, &log, send);
                        }
                    }
                    return true;
                }
            }
        }
        false
    }
}

/// The holder's account.
pub(crate) struct Account {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) home: PathBuf,
}

pub(crate) fn account(login: &str) -> Result<Account, String> {
    match nix::unistd::User::from_name(login) {
        Ok(Some(user)) => Ok(Account {
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
            home: user.dir,
        }),
        Ok(None) => Err(format!("no account `{login}` on this node")),
        Err(err) => Err(format!("looking up `{login}`: {err}")),
    }
}

fn mkdir(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// The build script, run as the holder with the profile's files in `$BERTH_INPUT`.
const BUILD_SCRIPT: &str = r#"set -euo pipefail
mkdir -p "$BERTH_ENV_DIR"
if [ -f "$BERTH_INPUT/python" ]; then
    py="$(cat "$BERTH_INPUT/python")"
    echo "== creating the Python environment with $py"
    "$py" -m venv "$BERTH_ENV_DIR/venv"
    export VIRTUAL_ENV="$BERTH_ENV_DIR/venv" PATH="$BERTH_ENV_DIR/venv/bin:$PATH"
    if [ -s "$BERTH_INPUT/requirements.txt" ]; then
        echo "== installing the packages"
        pip install --disable-pip-version-check --no-input -r "$BERTH_INPUT/requirements.txt"
    fi
fi
if [ -s "$BERTH_INPUT/dotfiles.list" ]; then
    echo "== placing the dotfiles"
    i=0
    while IFS= read -r path; do
        mkdir -p "$(dirname "$HOME/$path")"
        cp "$BERTH_INPUT/dotfile.$i" "$HOME/$path"
        i=$((i + 1))
    done < "$BERTH_INPUT/dotfiles.list"
fi
if [ -s "$BERTH_INPUT/setup.sh" ]; then
    echo "== running the setup script"
    cd "$HOME"
    bash "$BERTH_INPUT/setup.sh"
fi
echo "== ready"
"#;

/// Builds `spec` for `login` into its cache directory; `Err` with the end of the log.
fn build(
    options: &PrepareOptions,
    login: &str,
    hash: &str,
    spec: &ProfileSpec,
) -> Result<(), String> {
    let account = account(login)?;
    let cache = &options.cache_dir;
    let prepared = (|| -> std::io::Result<(PathBuf, PathBuf)> {
        mkdir(cache, 0o755)?;
        for dir in [".ready", ".failed", ".logs", ".inputs"] {
            mkdir(&cache.join(dir), 0o711)?;
        }
        let _ = std::fs::remove_file(marker(cache, ".ready", login, hash));
        let _ = std::fs::remove_file(marker(cache, ".failed", login, hash));
        let home = cache.join(login);
        if !home.exists() {
            std::fs::create_dir(&home)?;
        }
        std::os::unix::fs::lchown(&home, Some(account.uid), Some(account.gid))?;
        mkdir(&home, 0o700)?;
        // A build cut short leaves a partial environment: start over.
        let dir = env_dir(cache, login, hash);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        let inputs = cache
            .join(".inputs")
            .join(format!("{login}-{hash}-{}", std::process::id()));
        if inputs.exists() {
            std::fs::remove_dir_all(&inputs)?;
        }
        std::fs::create_dir(&inputs)?;
        mkdir(&inputs, 0o700)?;
        let mut files: Vec<(String, Vec<u8>)> = Vec::new();
        if spec.has_python() {
            let python = spec
                .python
                .as_ref()
                .map_or_else(|| options.python.clone(), |v| format!("python{v}"));
            files.push(("python".into(), python.into_bytes()));
            files.push(("requirements.txt".into(), spec.packages_text().into_bytes()));
        }
        if !spec.setup_script.is_empty() {
            files.push(("setup.sh".into(), spec.setup_script.clone().into_bytes()));
        }
        let mut list = String::new();
        for (i, dotfile) in spec.dotfiles.iter().enumerate() {
            list.push_str(&dotfile.path);
            list.push('\n');
            files.push((format!("dotfile.{i}"), dotfile.content.clone().into_bytes()));
        }
        files.push(("dotfiles.list".into(), list.into_bytes()));
        files.push(("build.sh".into(), BUILD_SCRIPT.as_bytes().to_vec()));
        for (name, body) in files {
            let path = inputs.join(name);
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)?;
            file.write_all(&body)?;
            std::os::unix::fs::lchown(&path, Some(account.uid), Some(account.gid))?;
        }
        std::os::unix::fs::lchown(&inputs, Some(account.uid), Some(account.gid))?;
        Ok((dir, inputs))
    })();
    let (dir, inputs) = prepared.map_err(|err| format!("preparing {}: {err}", cache.display()))?;
    let log_path = cache.join(".logs").join(format!("{login}-{hash}.log"));
    let outcome = run_build(options, &account, login, &dir, &inputs, spec, &log_path);
    let _ = std::fs::remove_dir_all(&inputs);
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    match outcome {
        Ok(()) => {
            std::fs::write(marker(cache, ".ready", login, hash), b"")
                .map_err(|err| format!("marking the build ready: {err}"))?;
            Ok(())
        }
        Err(reason) => {
            let log = format!("{log}\n{reason}\n");
            let tail = profile::log_tail(&log).to_owned();
            let _ = std::fs::write(marker(cache, ".failed", login, hash), &tail);
            Err(tail)
        }
    }
}

fn run_build(
    options: &PrepareOptions,
    account: &Account,
    login: &str,
    dir: &Path,
    inputs: &Path,
    spec: &ProfileSpec,
    log_path: &Path,
) -> Result<(), String> {
    let log = std::fs::File::create(log_path).map_err(|err| format!("creating the log: {err}"))?;
    let err_log = log
        .try_clone()
        .map_err(|err| format!("creating the log: {err}"))?;
    let me = nix::unistd::getuid().as_raw();
    let mut command = if me == account.uid {
        Command::new("bash")
    } else if me == 0 {
        let mut command = Command::new("setpriv");
        command.args([
            &format!("--reuid={}", account.uid),
            &format!("--regid={}", account.gid),
            "--init-groups",
            "--",
            "bash",
        ]);
        command
    } else {
        return Err(format!(
            "the agent runs as UID {me} and cannot build for `{login}`: run it as root"
        ));
    };
    command
        .arg(inputs.join("build.sh"))
        .env_clear()
        .envs(
            spec.variables
                .iter()
                .map(|v| (v.name.as_str(), v.value.as_str())),
        )
        .env("HOME", &account.home)
        .env("USER", login)
        .env("LOGNAME", login)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .env("CUDA_VISIBLE_DEVICES", "")
        .env("BERTH_ENV_DIR", dir)
        .env("BERTH_INPUT", inputs)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err_log)
        .process_group(0);
    let mut child = command
        .spawn()
        .map_err(|err| format!("starting the build: {err}"))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("the build failed ({status})")),
            Ok(None) if started.elapsed() > options.timeout => {
                let group = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(0));
                let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
                let _ = child.wait();
                return Err(format!(
                    "the build ran longer than {} s and was stopped",
                    options.timeout.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(100)),
            Err(err) => return Err(format!("waiting for the build: {err}")),
        }
    }
}

/// Runs the preparer on a thread of its own: every second it reads the schedule the lease
/// keeper keeps in `state_dir` and sends its reports through `send`, until `send` fails.
pub fn spawn(
    options: PrepareOptions,
    state_dir: PathBuf,
    clock: Arc<dyn Clock>,
    send: impl Fn(PrepReport) -> bool + Send + 'static,
) {
    let spawned = std::thread::Builder::new()
        .name("berth-agent-prepare".into())
        .spawn(move || {
            let mut preparer = Preparer::new(options);
            let mut open = true;
            while open {
                if let Some(cached) = super::access::CachedSchedule::load(&state_dir) {
                    let ahead = TimeDelta::seconds(cached.schedule.prepare_ahead_seconds.max(0));
                    let mut sink = |report: PrepReport| open &= send(report);
                    let built =
                        preparer.step(&cached.schedule.leases, clock.now(), ahead, &mut sink);
                    if built {
                        continue;
                    }
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        });
    if let Err(err) = spawned {
        tracing::error!(error = %err, "starting the environment preparer");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_app::domain::lease::LeaseGpu;
    use berth_app::domain::profile::{Dotfile, Variable};
    use chrono::TimeZone;

    fn at(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 3, h, m, 0).unwrap()
    }

    /// An account to build for: this user, or (as root, which never builds) a user made for
    /// the test, removed when dropped; with a home directory it may write.
    struct TestUser {
        login: String,
        home: PathBuf,
        made: bool,
        _dir: tempfile::TempDir,
    }

    impl TestUser {
        fn new(tag: &str) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let me = nix::unistd::User::from_uid(nix::unistd::getuid())
                .unwrap()
                .unwrap();
            if me.uid.as_raw() != 0 {
                return Self {
                    login: me.name,
                    home: dir.path().to_owned(),
                    made: false,
                    _dir: dir,
                };
            }
            let login = format!("bprep{tag}{}", std::process::id() % 100_000);
            let home = dir.path().join(&login);
            std::fs::create_dir(&home).unwrap();
            let status = Command::new("useradd")
                .args(["-M", "-s", "/bin/bash", "-d"])
                .arg(&home)
                .arg(&login)
                .status()
                .expect("useradd");
            assert!(status.success());
            let user = nix::unistd::User::from_name(&login).unwrap().unwrap();
            std::os::unix::fs::chown(&home, Some(user.uid.as_raw()), Some(user.gid.as_raw()))
                .unwrap();
            // The temporary directory itself must be reachable by the user.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
            Self {
                login,
                home,
                made: true,
                _dir: dir,
            }
        }
    }

    /// A temporary directory other users may traverse (builds run as the holder).
    fn open_dir() -> tempfile::TempDir {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    impl Drop for TestUser {
        fn drop(&mut self) {
            if self.made {
                let _ = Command::new("userdel").arg(&self.login).status();
            }
        }
    }

    fn lease(id: i64, login: &str, spec: ProfileSpec, from: u32, to: u32) -> Lease {
        Lease {
            reservation_id: id,
            login: login.to_owned(),
            keys: vec![],
            gpus: vec![LeaseGpu {
                uuid: "GPU-a".into(),
                memory_mib: 80_000,
            }],
            quarters: 4,
            start: at(from, 0),
            end: at(to, 0),
            keep_running: false,
            environment: Some(LeaseEnvironment {
                profile: "base".into(),
                version: 1,
                hash: spec.hash(),
                spec,
            }),
            workspace: None,
            notice: None,
        }
    }

    fn spec(script: &str) -> ProfileSpec {
        ProfileSpec {
            variables: vec![Variable {
                name: "GREETING".into(),
                value: "it's me".into(),
            }],
            setup_script: script.into(),
            dotfiles: vec![Dotfile {
                path: "berth-test/.rc".into(),
                content: "set -o vi\n".into(),
            }],
            ..ProfileSpec::default()
        }
    }

    #[test]
    fn nothing_is_built_before_the_lead_or_after_the_end() {
        let leases = vec![lease(1, "alice", spec(""), 10, 11)];
        let ahead = TimeDelta::minutes(30);
        assert!(Preparer::due(&leases, at(9, 29), ahead).is_empty());
        assert_eq!(Preparer::due(&leases, at(9, 30), ahead).len(), 1);
        assert_eq!(Preparer::due(&leases, at(10, 59), ahead).len(), 1);
        assert!(Preparer::due(&leases, at(11, 0), ahead).is_empty());
    }

    #[test]
    fn a_build_runs_once_then_comes_from_the_cache_and_a_failure_is_reported_with_its_log() {
        let user = TestUser::new("a");
        let login = user.login.clone();
        let dir = open_dir();
        let options = PrepareOptions {
            cache_dir: dir.path().join("cache"),
            ..PrepareOptions::default()
        };
        // The build runs in the account's home; count the runs in the test's directory.
        let marker = user.home.join("ran");
        let script = format!("echo built >> '{}'\n", marker.display());
        let mut good = spec(&script);
        good.dotfiles.clear();
        let leases = vec![
            lease(1, &login, good.clone(), 10, 11),
            lease(2, &login, good.clone(), 12, 13),
        ];
        let mut preparer = Preparer::new(options.clone());
        let mut reports = Vec::new();
        let now = at(9, 45);
        while preparer.step(&leases, now, TimeDelta::minutes(30), &mut |r| {
            reports.push(r)
        }) {}
        let states: Vec<_> = reports
            .iter()
            .map(|r| (r.reservation_id, r.state, r.cached))
            .collect();
        assert_eq!(
            states,
            vec![
                (1, PrepState::Preparing, false),
                (1, PrepState::Ready, false)
            ]
        );
        assert!(is_ready(&options.cache_dir, &login, &good.hash()));
        // The second lease, due later, finds the build in the cache.
        reports.clear();
        let mut fresh = Preparer::new(options.clone());
        while fresh.step(&leases, at(11, 45), TimeDelta::minutes(30), &mut |r| {
            reports.push(r)
        }) {}
        let states: Vec<_> = reports
            .iter()
            .map(|r| (r.reservation_id, r.state, r.cached))
            .collect();
        assert_eq!(states, vec![(2, PrepState::Ready, true)]);
        assert_eq!(std::fs::read_to_string(&marker).unwrap(), "built\n");
        // The login environment carries the variables, quoted.
        let open = [&leases[0]];
        let activation = activation(&options.cache_dir, &login, &open);
        assert!(
            activation.contains("GREETING='it'\\''s me'\n"),
            "{activation}"
        );
        assert!(
            activation.contains("BERTH_PROFILE='base v1'"),
            "{activation}"
        );
        assert!(
            !activation.contains("VIRTUAL_ENV"),
            "no Python in this profile"
        );
        // A failing script: reported once, with the end of its log.
        let bad = spec("echo 'pip: no such package' >&2\nexit 3\n");
        let mut bad_no_dot = bad.clone();
        bad_no_dot.dotfiles.clear();
        let leases = vec![lease(3, &login, bad_no_dot.clone(), 10, 11)];
        reports.clear();
        while preparer.step(&leases, now, TimeDelta::minutes(30), &mut |r| {
            reports.push(r)
        }) {}
        preparer.step(&leases, now, TimeDelta::minutes(30), &mut |r| {
            reports.push(r)
        });
        assert_eq!(reports.len(), 2, "{reports:?}");
        assert_eq!(reports[1].state, PrepState::Failed);
        assert!(
            reports[1].log.contains("pip: no such package"),
            "{}",
            reports[1].log
        );
        assert!(!is_ready(&options.cache_dir, &login, &bad_no_dot.hash()));
        assert!(super::activation(&options.cache_dir, &login, &[&leases[0]]).is_empty());
    }

    #[test]
    fn a_build_past_its_time_limit_is_stopped() {
        let user = TestUser::new("b");
        let login = user.login.clone();
        let dir = open_dir();
        let options = PrepareOptions {
            cache_dir: dir.path().join("cache"),
            timeout: Duration::from_millis(500),
            ..PrepareOptions::default()
        };
        let mut slow = spec("sleep 30\n");
        slow.dotfiles.clear();
        let started = Instant::now();
        let result = build(&options, &login, &slow.hash(), &slow);
        assert!(started.elapsed() < Duration::from_secs(10));
        let log = result.unwrap_err();
        assert!(log.contains("longer than"), "{log}");
    }
}
