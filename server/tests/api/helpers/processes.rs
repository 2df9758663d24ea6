//! Real processes for the production-shape tests: `berth serve` started the way `deploy/` runs
//! it, with the settings of `deploy/`'s files. (Caddy and a PostgreSQL server of a test's own
//! are in `tests/faults/services.rs`.)

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader};
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

/// Starts the Python fixture `script` (under `tests/api/fixtures/`) with `args`; it binds a free
/// loopback port itself and prints it on its first line: the process and its port. Its standard
/// input is a pipe (a fixture may stop when it closes) and its errors go to the test's. It
/// panics with `missing` when the fixture prints no port (its package is not installed, say).
pub fn python_fixture(script: &str, args: &[String], missing: &str) -> (Child, u16) {
    let path = repo_root().join("server/tests/api/fixtures").join(script);
    let mut child = Command::new(crate::helpers::python())
        .arg(&path)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("start {script}: {err}"));
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("the fixture's output"))
        .read_line(&mut first)
        .unwrap_or_default();
    let port = first
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{script} did not start (printed {first:?}): {missing}"));
    (child, port)
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

/// `deploy/compose.yaml`, merge keys resolved.
pub fn compose_file() -> serde_yaml::Value {
    let text = std::fs::read_to_string(deploy_file("compose.yaml")).unwrap();
    let mut value: serde_yaml::Value = serde_yaml::from_str(&text).expect("compose.yaml is YAML");
    value.apply_merge().expect("merge keys");
    value
}

/// A service's `environment` map with `${VAR:-default}` replaced by its default.
pub fn compose_environment(service: &serde_yaml::Value) -> Vec<(String, String)> {
    service["environment"]
        .as_mapping()
        .expect("an environment map")
        .iter()
        .map(|(k, v)| {
            let value = match v {
                serde_yaml::Value::String(s) => s.clone(),
                other => serde_yaml::to_string(other).unwrap().trim().to_owned(),
            };
            (k.as_str().unwrap().to_owned(), with_defaults(&value))
        })
        .collect()
}

/// `text` with each `${VAR:-default}` replaced by its default, as compose does with the
/// variable unset.
fn with_defaults(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').expect("closing brace") + start;
        let inner = &rest[start + 2..end];
        out.push_str(inner.split_once(":-").map_or("", |(_, default)| default));
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
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

    /// Starts the process (again) with its settings and port.
    pub fn spawn(&mut self) {
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
