//! What the fault tests start besides the portal: Caddy in front of the replicas with
//! `deploy/Caddyfile`, and a PostgreSQL server of the test's own that it may stop and start.

use crate::helpers::{Served, client_builder, deploy_file, free_port, with_overrides};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills `served` with SIGKILL if it runs, starts it again with the same settings and port, and
/// answers once it is ready.
pub async fn restart(served: &mut Served) {
    served.kill();
    served.spawn();
    served.ready().await;
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
        client_builder()
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
