//! A GPU host for the tests: the fake NVML library, the real `berth agent` started against a
//! test portal, waiting for what it reports, and the host's own parts the agent acts on (Unix
//! users, their processes, POSIX ACLs, a real `sshd`).

use super::{TestApp, post_json, send, user_id, user_token};
use berth_app::domain::user::PlatformRole;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The fake NVML library, built next to this test binary (a dev-dependency).
pub(crate) fn fake_nvml() -> PathBuf {
    let path = std::env::current_exe()
        .expect("test binary path")
        .with_file_name("libnvidia_ml.so");
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

/// Writes `value` as the fake NVML's configuration (renamed into place, so the library never
/// reads a half-written file).
pub(crate) fn write_json(path: &Path, value: &serde_json::Value) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(value).unwrap()).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Polls `check` every 200 ms for up to 30 s.
pub(crate) async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    eventually_within(what, 30, check).await
}

/// Polls `check` every 200 ms for up to `seconds` (what builds on the host, a Python
/// environment, takes longer on a busy machine).
pub(crate) async fn eventually_within<T, F, Fut>(what: &str, seconds: u32, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..seconds * 5 {
        if let Some(value) = check().await {
            return value;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    panic!("timed out waiting for {what}");
}

/// `berth agent` against `portal` with the fake NVML library reading `config`, its token in a
/// file (with the line end an editor leaves) beside `config`, and `extra` arguments; killed when
/// dropped.
pub(crate) struct AgentProcess(Child);

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn start_agent_with(
    portal: &str,
    token: &str,
    config: &Path,
    extra: &[&str],
) -> AgentProcess {
    let token_file = config.with_file_name("agent-token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_berth"));
    for (key, _) in std::env::vars() {
        if key.starts_with("BERTH_") {
            command.env_remove(key);
        }
    }
    let child = command
        .args(["agent", "--portal", portal, "--interval", "1"])
        .arg("--token-file")
        .arg(&token_file)
        .arg("--nvml-library")
        .arg(fake_nvml())
        .args(extra)
        .env("BERTH_FAKE_NVML_CONFIG", config)
        .env("BERTH_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start berth agent");
    AgentProcess(child)
}

/// Whether the tests run as root (CI does): users, ACLs on others' files and sshd need it.
pub(crate) fn is_root() -> bool {
    nix_uid() == 0
}

fn nix_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(u32::MAX)
}

fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|err| panic!("{program}: {err}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A Unix user made for one test (`useradd -m`), removed with its home when dropped.
pub(crate) struct UnixUser {
    pub name: String,
    pub uid: u32,
}

impl UnixUser {
    /// Makes a user named `prefix` plus a random suffix.
    pub fn create(prefix: &str) -> Self {
        let name = format!(
            "{prefix}{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        run("useradd", &["-m", "-s", "/bin/sh", &name]);
        // No password, but not locked: sshd (without PAM) refuses locked accounts.
        run("usermod", &["-p", "*", &name]);
        let uid = run("id", &["-u", &name]).trim().parse().unwrap();
        Self { name, uid }
    }

    /// Starts `command` as this user (same PID: `setpriv` execs it).
    pub fn spawn(&self, command: &str) -> Child {
        Command::new("setpriv")
            .args([
                &format!("--reuid={}", self.name),
                &format!("--regid={}", self.name),
                "--init-groups",
                "sh",
                "-c",
                command,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("setpriv")
    }
}

impl Drop for UnixUser {
    fn drop(&mut self) {
        let _ = Command::new("pkill")
            .args(["-KILL", "-u", &self.name])
            .status();
        let _ = Command::new("userdel")
            .args(["-r", "-f", &self.name])
            .output();
    }
}

/// Whether `child` has ended (reaping it).
pub(crate) fn has_ended(child: &mut Child) -> bool {
    matches!(child.try_wait(), Ok(Some(_)))
}

/// Waits up to 30 s for `child` to end.
pub(crate) async fn ended(what: &str, child: &mut Child) {
    for _ in 0..150 {
        if has_ended(child) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    panic!("timed out waiting for {what}");
}

/// `getfacl`'s entries of `path` (`user:alice:rw-`, …).
pub(crate) fn acl_entries(path: &Path) -> Vec<String> {
    run("getfacl", &["-c", "-n", path.to_str().unwrap()])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// An ed25519 key pair made by `ssh-keygen` in `dir`: (private key path, public key line).
pub(crate) fn ssh_key_pair(dir: &Path, name: &str) -> (PathBuf, String) {
    let path = dir.join(name);
    run(
        "ssh-keygen",
        &[
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            &format!("{name}@test"),
            "-f",
            path.to_str().unwrap(),
        ],
    );
    let public = std::fs::read_to_string(path.with_extension("pub")).unwrap();
    (path, public.trim().to_owned())
}

/// A real OpenSSH server on a loopback port, configured with Berth's sshd snippet from
/// `deploy/` (the key command pointed at the built `berth` and the agent's state directory);
/// stopped when dropped.
pub(crate) struct Sshd {
    pub port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Sshd {
    pub fn start(state_dir: &Path) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let host_key = dir.path().join("host_ed25519");
        run(
            "ssh-keygen",
            &[
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-f",
                host_key.to_str().unwrap(),
            ],
        );
        let snippet = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/sshd_config.d/berth.conf"),
        )
        .unwrap();
        let berth = std::fs::canonicalize(env!("CARGO_BIN_EXE_berth")).unwrap();
        let snippet = snippet
            .replace("/usr/bin/berth", berth.to_str().unwrap())
            .replace(
                "authorized-keys %u",
                &format!("authorized-keys --state-dir {} %u", state_dir.display()),
            );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = dir.path().join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile {}\nUsePAM no\n\
                 StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 AuthorizedKeysFile none\nLogLevel VERBOSE\n{snippet}\n",
                host_key.display(),
                dir.path().join("sshd.pid").display(),
            ),
        )
        .unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        let child = Command::new("/usr/sbin/sshd")
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("sshd.log")).unwrap())
            .spawn()
            .expect("start sshd (Debian's openssh-server)");
        for _ in 0..50 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        Self {
            port,
            child,
            _dir: dir,
        }
    }

    /// Runs `command` over SSH as `user` with `key`: its output, or `None` when the login was
    /// refused.
    pub fn run_as(&self, user: &str, key: &Path, command: &str) -> Option<String> {
        let out = self.ssh(user, key, command);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// What `ssh` said of a login as `user` (for a failure message).
    pub fn client_log(&self, user: &str, key: &Path) -> String {
        String::from_utf8_lossy(&self.ssh(user, key, "true").stderr).into_owned()
    }

    fn ssh(&self, user: &str, key: &Path, command: &str) -> std::process::Output {
        self.ssh_command(user, key, command, false)
            .output()
            .expect("ssh")
    }

    /// Logs in as `user` with a terminal (`ssh -tt`) and runs `command` there; what the
    /// terminal shows comes out on the child's stdout.
    pub fn terminal(&self, user: &str, key: &Path, command: &str) -> Child {
        let mut ssh = self.ssh_command(user, key, command, true);
        ssh.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        ssh.spawn().expect("ssh -tt")
    }

    fn ssh_command(&self, user: &str, key: &Path, command: &str, tty: bool) -> Command {
        let mut ssh = Command::new("ssh");
        if tty {
            ssh.arg("-tt");
        }
        ssh.args(["-F", "/dev/null", "-p", &self.port.to_string(), "-i"])
            .arg(key)
            .args([
                "-o",
                "BatchMode=yes",
                "-o",
                "IdentitiesOnly=yes",
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-o",
                "LogLevel=ERROR",
                &format!("{user}@127.0.0.1"),
                command,
            ]);
        ssh
    }

    /// What sshd logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A portal user with an API token, a login equal to `unix`'s name and an SSH key pair.
pub(crate) async fn holder(
    app: &TestApp,
    admin: &str,
    unix: &UnixUser,
    keys: &Path,
) -> (String, std::path::PathBuf) {
    let email = format!("{}@example.org", unix.name);
    let token = user_token(app, &email, PlatformRole::User).await;
    let id = user_id(app, &email).await;
    let (status, body) = send(
        app,
        reqwest::Method::PUT,
        Some(admin),
        &format!("/api/v1/admin/users/{id}/login"),
        Some(json!({"login": unix.name})),
    )
    .await;
    assert_eq!((status, &body["login"]), (200, &json!(unix.name)), "{body}");
    let (private, public) = ssh_key_pair(keys, &unix.name);
    let (status, body) = post_json(
        app,
        &token,
        "/api/v1/me/ssh-keys",
        &json!({"name": "laptop", "key": public}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    (token, private)
}
