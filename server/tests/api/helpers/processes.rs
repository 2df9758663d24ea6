//! Real processes for the production-shape tests: `berth serve` replicas started the way
//! `deploy/` runs them, Caddy in front of them with `deploy/Caddyfile`, and a PostgreSQL server
//! of the test's own that it may stop and start.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The repository's root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the repository root")
}

/// A file under `deploy/`.
pub fn deploy_file(name: &str) -> PathBuf {
    repo_root().join("deploy").join(name)
}

/// A port nobody listens on now (the test's processes must name theirs before they start).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// The `VAR=value` lines of an environment file as systemd's `EnvironmentFile=` reads them
/// (comments and blank lines skipped, no quotes).
pub fn environment_file(path: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|err| panic!("read {}: {err}", path.display()))
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (name, value) = line
                .split_once('=')
                .unwrap_or_else(|| panic!("`{line}` in {} is not VAR=value", path.display()));
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

/// `base` with each of `overrides` put in place of (or added to) its variable, and the
/// variables named in `removed` left out.
pub fn with_overrides(
    base: &[(String, String)],
    overrides: &[(&str, String)],
    removed: &[&str],
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = base
        .iter()
        .filter(|(name, _)| {
            !removed.contains(&name.as_str()) && !overrides.iter().any(|(o, _)| o == name)
        })
        .cloned()
        .collect();
    env.extend(
        overrides
            .iter()
            .map(|(name, value)| ((*name).to_owned(), value.clone())),
    );
    env
}

/// `berth serve` in a process of its own: started, killed and started again on the same port
/// and settings. Its output goes to `serve.log` in its directory.
pub struct Served {
    child: Option<Child>,
    pub port: u16,
    env: Vec<(String, String)>,
    dir: PathBuf,
}

impl Served {
    /// Starts `berth serve` in `dir` with exactly `env` (no inherited `BERTH_*` variable) on a
    /// free loopback port; answers once it is ready (`/readyz` 200).
    pub async fn start(dir: &Path, env: Vec<(String, String)>) -> Self {
        Self::start_on(dir, env, free_port()).await
    }

    /// [`Served::start`] on `port`.
    pub async fn start_on(dir: &Path, env: Vec<(String, String)>, port: u16) -> Self {
        let env = with_overrides(&env, &[("BERTH_BIND", format!("127.0.0.1:{port}"))], &[]);
        let mut served = Self {
            child: None,
            port,
            env,
            dir: dir.to_owned(),
        };
        served.spawn();
        served.ready().await;
        served
    }

    fn spawn(&mut self) {
        std::fs::create_dir_all(&self.dir).expect("the replica's directory");
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("serve.log"))
            .expect("the replica's log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_berth"));
        command
            .arg("serve")
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log);
        for (key, _) in std::env::vars() {
            if key.starts_with("BERTH_") {
                command.env_remove(key);
            }
        }
        command.envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        self.child = Some(command.spawn().expect("start berth serve"));
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Waits (up to 60 s) until `/readyz` answers 200.
    pub async fn ready(&mut self) {
        let client = crate::helpers::client_builder()
            .timeout(Duration::from_secs(2))
            .build()
            .expect("client");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("berth serve exited ({status}):\n{}", self.log());
            }
            if let Ok(response) = client.get(self.url("/readyz")).send().await
                && response.status() == 200
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "berth serve not ready within 60 s:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Kills the process with SIGKILL (no shutdown of any kind) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the process again with the same settings and port; answers once it is ready.
    pub async fn restart(&mut self) {
        self.kill();
        self.spawn();
        self.ready().await;
    }

    /// Stops the process with SIGTERM and waits for it (up to 30 s).
    pub fn terminate(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("berth serve did not stop on SIGTERM:\n{}", self.log());
    }

    /// What the process wrote so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("serve.log")).unwrap_or_default()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Caddy (Debian's package) running `deploy/Caddyfile` with `env`, its data in a directory of its
/// own; clients trust its internal CA's root.
pub struct Caddy {
    child: Child,
    pub https_port: u16,
    root_ca: reqwest::Certificate,
    dir: tempfile::TempDir,
}

impl Caddy {
    /// Starts Caddy for the site `127.0.0.1` with HTTPS on `https_port` (HTTP on a free one),
    /// with `env` (which names the upstreams); answers once it serves `/healthz` over TLS.
    pub async fn start(env: Vec<(String, String)>, https_port: u16) -> Self {
        let dir = tempfile::tempdir().expect("Caddy's directory");
        let http_port = free_port();
        let env = with_overrides(
            &env,
            &[
                ("BERTH_SITE_ADDRESS", "127.0.0.1".to_owned()),
                ("BERTH_TLS", "internal".to_owned()),
                ("BERTH_HTTPS_PORT", https_port.to_string()),
                ("BERTH_HTTP_PORT", http_port.to_string()),
                ("BERTH_CADDY_ADMIN", "off".to_owned()),
            ],
            &[],
        );
        let log = File::create(dir.path().join("caddy.log")).expect("Caddy's log");
        let child = Command::new("caddy")
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(deploy_file("Caddyfile"))
            .env("HOME", dir.path())
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start caddy (Debian package `caddy`; scripts/test.sh installs it)");
        let root = dir.path().join("data/caddy/pki/authorities/local/root.crt");
        let deadline = Instant::now() + Duration::from_secs(30);
        let root_ca = loop {
            if let Ok(pem) = std::fs::read(&root) {
                break reqwest::Certificate::from_pem(&pem).expect("Caddy's root certificate");
            }
            assert!(
                Instant::now() < deadline,
                "Caddy made no CA within 30 s:\n{}",
                std::fs::read_to_string(dir.path().join("caddy.log")).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let caddy = Self {
            child,
            https_port,
            root_ca,
            dir,
        };
        let client = caddy.client_builder().build().expect("client");
        loop {
            if let Ok(response) = client.get(caddy.url("/healthz")).send().await
                && response.status() == 200
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "Caddy does not serve /healthz over TLS within 30 s:\n{}",
                caddy.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        caddy
    }

    /// `https://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.https_port)
    }

    /// A client builder that trusts Caddy's certificate (and nothing it does not).
    pub fn client_builder(&self) -> reqwest::ClientBuilder {
        crate::helpers::client_builder()
            .tls_built_in_root_certs(false)
            .add_root_certificate(self.root_ca.clone())
    }

    /// What Caddy logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("caddy.log")).unwrap_or_default()
    }
}

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A PostgreSQL server of the test's own (Debian's binaries, trust authentication on loopback),
/// so that a test can stop and start it without touching the server the other tests share.
pub struct PrivatePostgres {
    dir: tempfile::TempDir,
    pub port: u16,
}

/// Where Debian keeps PostgreSQL's server programs (`/usr/lib/postgresql/<version>/bin`).
fn postgres_program(name: &str) -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL's programs in /usr/lib/postgresql")
        .filter_map(|entry| entry.ok().map(|e| e.path().join("bin").join(name)))
        .filter(|path| path.exists())
        .collect();
    found.sort();
    found
        .pop()
        .unwrap_or_else(|| panic!("{name} in /usr/lib/postgresql/*/bin"))
}

/// Whether this process runs as root (PostgreSQL's programs refuse to, so they run as the
/// `postgres` user then).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
        .unwrap_or(false)
}

fn as_postgres_user(program: &Path) -> Command {
    if is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

impl PrivatePostgres {
    /// Creates a cluster in a temporary directory and starts it on a free port.
    pub fn start() -> Self {
        let dir = tempfile::tempdir().expect("the cluster's directory");
        if is_root() {
            let owned = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .expect("chown");
            assert!(owned.success(), "chown the cluster's directory to postgres");
        }
        let data = dir.path().join("data");
        let out = as_postgres_user(&postgres_program("initdb"))
            .args([
                "--auth=trust",
                "--username=postgres",
                "--encoding=UTF8",
                "-D",
            ])
            .arg(&data)
            .output()
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let server = Self {
            dir,
            port: free_port(),
        };
        server.start_again();
        server
    }

    /// Starts the stopped server (same data, same port) and waits until it accepts connections.
    pub fn start_again(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let out = as_postgres_user(&postgres_program("pg_ctl"))
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-w", "-t", "60", "-o", &options, "-l"])
            .arg(self.dir.path().join("postgres.log"))
            .arg("start")
            .output()
            .expect("run pg_ctl start");
        assert!(
            out.status.success(),
            "pg_ctl start: {}{}",
            String::from_utf8_lossy(&out.stdout),
            self.log()
        );
    }

    /// Stops the server at once, as a crash would (`pg_ctl stop -m immediate`: no checkpoint,
    /// every connection cut).
    pub fn stop(&self) {
        let out = as_postgres_user(&postgres_program("pg_ctl"))
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-w", "-m", "immediate", "stop"])
            .output()
            .expect("run pg_ctl stop");
        assert!(
            out.status.success(),
            "pg_ctl stop: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The URL of database `name` on this server.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// The server's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default()
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = as_postgres_user(&postgres_program("pg_ctl"))
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-w", "-m", "immediate", "stop"])
            .output();
    }
}
