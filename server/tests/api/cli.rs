//! The `berth` binary itself: commands, bad input, request logging and graceful shutdown.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use tempfile::TempDir;

/// `berth` in `dir`, with no inherited `BERTH_*` variables.
fn berth(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_berth"));
    command.current_dir(dir);
    for (key, _) in std::env::vars() {
        if key.starts_with("BERTH_") {
            command.env_remove(key);
        }
    }
    command
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts a clean failure: non-zero exit, one `berth: error:` line containing `expected`,
/// no panic, and nothing written to the working directory.
fn assert_fails_cleanly(dir: &Path, output: &Output, expected: &str) {
    let stderr = stderr_of(output);
    assert!(!output.status.success(), "exit status is not 0: {stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "exactly one error line, got: {stderr}");
    assert!(lines[0].starts_with("berth: error: "), "{stderr}");
    assert!(lines[0].contains(expected), "`{expected}` in: {stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("backtrace"),
        "{stderr}"
    );
    let written: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "berth.toml")
        .collect();
    assert!(written.is_empty(), "nothing is written, found {written:?}");
}

#[test]
fn help_lists_the_commands() {
    let dir = tempfile::tempdir().unwrap();
    let output = berth(dir.path()).arg("--help").output().unwrap();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("serve") && help.contains("migrate"), "{help}");
}

/// Runs `berth ARGS` with the variables `env` in a fresh directory, which holds `berth.toml` with
/// the text `toml` if given.
fn run_in_empty_dir(args: &[&str], env: &[(&str, &str)], toml: Option<&str>) -> (TempDir, Output) {
    let dir = tempfile::tempdir().unwrap();
    if let Some(toml) = toml {
        std::fs::write(dir.path().join("berth.toml"), toml).unwrap();
    }
    let output = berth(dir.path())
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (dir, output)
}

#[test]
fn the_agent_explains_a_missing_or_empty_token_file() {
    let args = [
        "agent",
        "--portal",
        "http://127.0.0.1:9",
        "--simulate",
        "--token-file",
        "agent-token",
    ];
    let (dir, output) = run_in_empty_dir(&args, &[], None);
    assert_fails_cleanly(
        dir.path(),
        &output,
        "cannot read the token file agent-token",
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let empty = elsewhere.path().join("agent-token");
    std::fs::write(&empty, "\n").unwrap();
    let mut with_empty = args;
    with_empty[5] = empty.to_str().unwrap();
    let (dir, output) = run_in_empty_dir(&with_empty, &[], None);
    assert_fails_cleanly(dir.path(), &output, "agent-token is empty");
    let (dir, output) = run_in_empty_dir(&args[..4], &[], None);
    assert_fails_cleanly(dir.path(), &output, "the node's token is missing");
}

#[test]
fn the_removed_trust_forwarded_for_setting_names_its_replacement() {
    let (dir, output) = run_in_empty_dir(&[], &[("BERTH_TRUST_FORWARDED_FOR", "true")], None);
    assert_fails_cleanly(
        dir.path(),
        &output,
        "trust_forwarded_for (BERTH_TRUST_FORWARDED_FOR) was replaced by trusted_proxies",
    );
    let (dir, output) = run_in_empty_dir(&[], &[("BERTH_TRUSTED_PROXIES", "10.0.0.0/33")], None);
    assert_fails_cleanly(dir.path(), &output, "`10.0.0.0/33` is not an IP address");
}

#[test]
fn a_malformed_bind_address_is_refused() {
    let (dir, output) = run_in_empty_dir(&[], &[("BERTH_BIND", "localhost-3000")], None);
    assert_fails_cleanly(dir.path(), &output, "invalid bind address `localhost-3000`");
}

#[test]
fn the_dev_sign_in_on_an_address_others_reach_is_refused() {
    let env = [("BERTH_BIND", "0.0.0.0:0"), ("BERTH_DEV_SIGN_IN", "true")];
    let (dir, output) = run_in_empty_dir(&["serve"], &env, None);
    assert_fails_cleanly(dir.path(), &output, "set dev_sign_in_public = true");
}

#[test]
fn an_address_that_cannot_be_bound_is_refused() {
    // 192.0.2.0/24 is reserved for documentation and never assigned to this machine.
    let (dir, output) = run_in_empty_dir(&[], &[("BERTH_BIND", "192.0.2.1:3000")], None);
    assert_fails_cleanly(dir.path(), &output, "cannot listen on 192.0.2.1:3000");
}

#[test]
fn an_unreachable_database_is_refused() {
    let env = [
        ("BERTH_BIND", "127.0.0.1:0"),
        (
            "BERTH_DATABASE_URL",
            "postgres://berth:secret@127.0.0.1:1/berth",
        ),
    ];
    let (dir, output) = run_in_empty_dir(&[], &env, None);
    assert_fails_cleanly(
        dir.path(),
        &output,
        "cannot open database postgres://berth:***@127.0.0.1:1/berth",
    );
    assert!(
        !stderr_of(&output).contains("secret"),
        "the password is not printed"
    );
}

#[test]
fn an_unsupported_database_url_is_refused() {
    let env = [("BERTH_DATABASE_URL", "mysql://localhost/berth")];
    let (dir, output) = run_in_empty_dir(&[], &env, None);
    assert_fails_cleanly(dir.path(), &output, "unsupported database URL");
}

#[test]
fn a_malformed_settings_file_is_refused() {
    let (dir, output) = run_in_empty_dir(&[], &[], Some("bind = [\n"));
    assert_fails_cleanly(dir.path(), &output, "invalid settings");
    assert!(
        stderr_of(&output).contains("berth.toml"),
        "the file is named"
    );
}

#[test]
fn an_unknown_setting_in_the_file_is_refused() {
    let (dir, output) = run_in_empty_dir(&[], &[], Some("colour = \"blue\"\n"));
    assert_fails_cleanly(dir.path(), &output, "colour");
}

#[test]
fn an_unknown_setting_in_the_environment_is_refused() {
    let (dir, output) = run_in_empty_dir(&[], &[("BERTH_COLOUR", "blue")], None);
    assert_fails_cleanly(dir.path(), &output, "colour");
}

#[test]
fn a_missing_settings_file_is_refused() {
    let (dir, output) = run_in_empty_dir(&["--config", "nope.toml"], &[], None);
    assert_fails_cleanly(dir.path(), &output, "nope.toml does not exist");
}

#[test]
fn the_test_suite_variables_and_the_settings_file_variable_are_not_settings() {
    let env = [
        (
            "BERTH_TEST_PG_URL",
            "postgres://postgres@127.0.0.1:5432/postgres",
        ),
        ("BERTH_CONFIG", "custom.toml"),
    ];
    let (dir, output) = run_in_empty_dir(&["migrate"], &env, None);
    assert!(
        !output.status.success(),
        "custom.toml is read, and it is missing"
    );
    assert_fails_cleanly(dir.path(), &output, "custom.toml does not exist");

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("custom.toml"),
        "data_dir = \"custom-data\"\n",
    )
    .unwrap();
    let output = berth(dir.path()).arg("migrate").envs(env).output().unwrap();
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert!(dir.path().join("custom-data/berth.db").is_file());
}

#[test]
fn migrate_creates_the_embedded_database_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let first = berth(dir.path()).arg("migrate").output().unwrap();
    assert!(first.status.success(), "{}", stderr_of(&first));
    assert!(dir.path().join("data/berth.db").is_file());
    let first_out = String::from_utf8_lossy(&first.stdout);
    assert!(
        first_out.contains("migration(s) applied") && !first_out.contains(" 0 migration"),
        "{first_out}"
    );
    // The answer only: no start-up log lines unless asked for.
    assert!(!stderr_of(&first).contains("INFO"), "{}", stderr_of(&first));
    let second = berth(dir.path()).arg("migrate").output().unwrap();
    assert!(second.status.success());
    assert!(String::from_utf8_lossy(&second.stdout).contains("0 migration(s) applied"));
    let verbose = berth(dir.path())
        .args(["migrate", "--verbose"])
        .env("BERTH_LOG", "debug")
        .output()
        .unwrap();
    assert!(verbose.status.success());
    assert!(
        stderr_of(&verbose).contains("DEBUG") || stderr_of(&verbose).contains("INFO"),
        "{}",
        stderr_of(&verbose)
    );
}

/// A `berth serve` child whose JSON log lines arrive on a channel.
struct Served {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Served {
    fn start(dir: &Path) -> Self {
        let mut child = berth(dir)
            .arg("serve")
            .env("BERTH_BIND", "127.0.0.1:0")
            .env("BERTH_DEV_SIGN_IN", "true")
            .env("BERTH_LOG_FORMAT", "json")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for a log line containing `needle`.
    fn wait_for(&mut self, needle: &str) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no log line with {needle}; saw {:?}", self.seen));
            self.seen.push(line.clone());
            if line.contains(needle) {
                return line;
            }
        }
    }

    fn base_url(&mut self) -> String {
        let line = self.wait_for("\"http.addr\"");
        let json: serde_json::Value = serde_json::from_str(&line).unwrap();
        format!("http://{}", json["http.addr"].as_str().unwrap())
    }

    /// Sends SIGTERM and waits for a clean exit.
    fn terminate(mut self) -> Vec<String> {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "exit after SIGTERM is clean: {status}");
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "berth did not stop after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        self.seen.extend(self.lines.try_iter());
        self.seen
    }
}

/// Signs in with the dev sign-in (turned on, on loopback) at `url`, which redirects to the
/// inventory; answers that page.
async fn signed_in_inventory(client: &reqwest::Client, url: &str) -> String {
    client
        .post(format!("{url}/auth/dev"))
        .form(&[("role", "user"), ("return_to", "/")])
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test]
async fn serve_logs_each_request_stops_on_sigterm_and_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let client = crate::helpers::client_builder()
        .cookie_store(true)
        .build()
        .unwrap();

    let mut first = Served::start(dir.path());
    let url = first.base_url();
    let html = signed_in_inventory(&client, &url).await;
    assert_eq!(crate::helpers::gpu_rows(&html), 16);
    let health = client.get(format!("{url}/healthz")).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    first.wait_for("\"http.path\":\"/healthz\"");
    let logs = first.terminate();

    let request_line = logs
        .iter()
        .find(|line| line.contains("\"http.path\":\"/healthz\""))
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(request_line).unwrap();
    assert_eq!(json["http.method"], "GET");
    assert_eq!(json["http.status"], 200);
    assert!(json["duration_ms"].as_f64().is_some());
    assert!(
        logs.iter()
            .any(|line| line.contains("shutdown signal received"))
    );
    assert!(
        logs.iter()
            .any(|line| line.contains("added the demo fleet"))
    );

    // The second start on the same file keeps the data and adds nothing.
    let mut second = Served::start(dir.path());
    let url = second.base_url();
    let html = client
        .get(format!("{url}/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(crate::helpers::gpu_rows(&html), 16);
    let logs = second.terminate();
    assert!(
        !logs
            .iter()
            .any(|line| line.contains("added the demo fleet"))
    );
}

#[test]
fn user_add_refuses_a_malformed_address() {
    let (dir, output) = run_in_empty_dir(&["user", "add", "not-an-address"], &[], None);
    assert_fails_cleanly(
        dir.path(),
        &output,
        "`not-an-address` is not an e-mail address",
    );
}

#[test]
fn token_create_needs_an_existing_user() {
    let dir = tempfile::tempdir().unwrap();
    let output = berth(dir.path())
        .args(["token", "create", "nobody@example.com", "--name", "ci"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = stderr_of(&output);
    assert!(
        stderr.contains("berth: error: no user with e-mail address nobody@example.com"),
        "{stderr}"
    );
}

#[test]
fn token_create_refuses_a_bad_lifetime_or_scope() {
    for (args, expected) in [
        (
            ["--expires-days", "0"],
            "--expires-days: must be between 1 and 3650",
        ),
        (
            ["--expires-days", "3651"],
            "--expires-days: must be between 1 and 3650",
        ),
        (
            ["--expires-days", "soon"],
            "--expires-days: must be between 1 and 3650",
        ),
        (["--scope", "admin"], "--scope: use one of: read, write"),
    ] {
        let mut all = vec!["token", "create", "ana@example.com", "--name", "ci"];
        all.extend(args);
        let (dir, output) = run_in_empty_dir(&all, &[], None);
        assert_fails_cleanly(dir.path(), &output, expected);
    }
}

#[tokio::test]
async fn node_add_can_accept_the_nodes_new_gpus() {
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| berth(dir.path()).args(args).output().unwrap();
    let trusted = run(&["node", "add", "gpu-trusted", "--accept-new-gpus"]);
    assert!(trusted.status.success(), "{}", stderr_of(&trusted));
    assert!(
        stderr_of(&trusted).contains("--token-file"),
        "{}",
        stderr_of(&trusted)
    );
    let plain = run(&["node", "add", "gpu-plain"]);
    assert!(plain.status.success(), "{}", stderr_of(&plain));
    let url = format!(
        "sqlite://{}?mode=ro",
        dir.path().join("data/berth.db").display()
    );
    let db = sea_orm::Database::connect(&url).await.unwrap();
    let accepts = |name: &'static str| {
        let db = db.clone();
        async move {
            berth_app::backend::entity::node::Entity::find()
                .filter(berth_app::backend::entity::node::Column::Name.eq(name))
                .one(&db)
                .await
                .unwrap()
                .unwrap()
                .accept_new_gpus
        }
    };
    assert!(accepts("gpu-trusted").await);
    assert!(!accepts("gpu-plain").await);
    db.close().await.unwrap();
}

#[tokio::test]
async fn users_and_tokens_made_on_the_command_line_work_against_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| berth(dir.path()).args(args).output().unwrap();

    let added = run(&[
        "user",
        "add",
        "Admin@Example.com",
        "--name",
        "Ana Admin",
        "--admin",
    ]);
    assert!(added.status.success(), "{}", stderr_of(&added));
    let listed = String::from_utf8_lossy(&run(&["user", "list"]).stdout).into_owned();
    assert!(
        listed.contains("admin@example.com\tAna Admin\tplatform-admin"),
        "{listed}"
    );

    let created = run(&["token", "create", "admin@example.com", "--name", "ci"]);
    assert!(created.status.success(), "{}", stderr_of(&created));
    let token = String::from_utf8_lossy(&created.stdout).trim().to_owned();
    assert!(token.starts_with("berth_"));
    let token_id: String = stderr_of(&created)
        .lines()
        .find_map(|line| line.strip_prefix("berth: token "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_owned();
    let read_only = run(&[
        "token",
        "create",
        "admin@example.com",
        "--name",
        "dashboards",
        "--scope",
        "read",
        "--expires-days",
        "30",
    ]);
    assert!(read_only.status.success(), "{}", stderr_of(&read_only));
    let read_only = String::from_utf8_lossy(&read_only.stdout).trim().to_owned();

    // Credits: a grant prints the new balance in minor units; a deduction beyond it is refused.
    let granted = run(&[
        "credits",
        "grant",
        "admin@example.com",
        "12500",
        "--reason",
        "invoice 7",
    ]);
    assert!(granted.status.success(), "{}", stderr_of(&granted));
    assert_eq!(String::from_utf8_lossy(&granted.stdout).trim(), "12500");
    assert!(
        stderr_of(&granted).contains("125.00 USD"),
        "{}",
        stderr_of(&granted)
    );
    let refused = run(&[
        "credits",
        "deduct",
        "admin@example.com",
        "20000",
        "--reason",
        "x",
    ]);
    assert!(!refused.status.success());
    assert!(
        stderr_of(&refused).contains("not enough credits: 75.00 USD more needed"),
        "{}",
        stderr_of(&refused)
    );
    let unknown = run(&[
        "credits",
        "grant",
        "nobody@example.com",
        "1",
        "--reason",
        "x",
    ]);
    assert!(
        stderr_of(&unknown).contains("user nobody@example.com"),
        "{}",
        stderr_of(&unknown)
    );
    let negative = run(&[
        "credits",
        "grant",
        "admin@example.com",
        "-5",
        "--reason",
        "x",
    ]);
    assert!(!negative.status.success(), "clap refuses a negative count");

    let mut served = Served::start(dir.path());
    let url = served.base_url();
    let client = crate::helpers::client();
    let wallet: serde_json::Value = client
        .get(format!("{url}/api/v1/wallet"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(wallet["balance_minor"], 12500, "{wallet}");
    assert_eq!(wallet["entries"][0]["reason"], "invoice 7", "{wallet}");
    let me = client
        .get(format!("{url}/api/v1/me"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status().as_u16(), 200);
    let body: serde_json::Value = me.json().await.unwrap();
    assert_eq!(body["email"], "admin@example.com");
    assert_eq!(body["role"], "platform_admin");
    // The read token reads, and changes nothing even for a platform admin.
    let me = client
        .get(format!("{url}/api/v1/me"))
        .bearer_auth(&read_only)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status().as_u16(), 200);
    let grant = client
        .post(format!("{url}/api/v1/admin/credits"))
        .bearer_auth(&read_only)
        .json(
            &serde_json::json!({ "email": "admin@example.com", "amount_minor": 1, "reason": "x" }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(grant.status().as_u16(), 403);

    let revoked = run(&["token", "revoke", &token_id]);
    assert!(revoked.status.success(), "{}", stderr_of(&revoked));
    let me = client
        .get(format!("{url}/api/v1/me"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status().as_u16(), 401);
    served.terminate();
}

#[test]
fn unusable_identity_provider_settings_are_refused_by_name() {
    let plain_http = "[oidc.corp]\nissuer = \"http://sso.example.com\"\nclient_id = \"berth\"\n\
                      redirect_url = \"https://b.example/auth/oidc/corp/callback\"\n";
    let (dir, output) = run_in_empty_dir(&["migrate"], &[], Some(plain_http));
    assert_fails_cleanly(dir.path(), &output, "oidc.corp");
    assert!(stderr_of(&output).contains("must be an https:// URL"));

    let no_redirect = "[oidc.corp]\nissuer = \"https://sso.example.com\"\nclient_id = \"berth\"\n";
    let (dir, output) = run_in_empty_dir(&["migrate"], &[], Some(no_redirect));
    assert_fails_cleanly(dir.path(), &output, "set public_url (BERTH_PUBLIC_URL)");

    let (dir, output) = run_in_empty_dir(
        &["migrate"],
        &[("BERTH_ADMIN_EMAILS", "ops@example.com, not-an-address")],
        None,
    );
    assert_fails_cleanly(dir.path(), &output, "BERTH_ADMIN_EMAILS");
}

#[test]
fn identity_providers_can_be_configured_from_the_environment() {
    // `__` nests: BERTH_OIDC__CORP__CLIENT_SECRET is oidc.corp.client_secret, so the secret can
    // stay out of the file.
    let toml = "public_url = \"https://berth.example.com\"\n[oidc.corp]\n\
                issuer = \"https://sso.example.com/realms/main\"\nclient_id = \"berth\"\n";
    let (dir, output) = run_in_empty_dir(
        &["migrate"],
        &[
            ("BERTH_OIDC__CORP__CLIENT_SECRET", "from-the-environment"),
            ("BERTH_OIDC__CORP__LABEL", "Company SSO"),
            ("BERTH_DATA_DIR", "data"),
        ],
        Some(toml),
    );
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert!(dir.path().join("data/berth.db").exists());

    let (dir, output) = run_in_empty_dir(
        &["migrate"],
        &[("BERTH_OIDC__CORP__COLOUR", "blue")],
        Some(toml),
    );
    assert_fails_cleanly(dir.path(), &output, "colour");
}

/// Runs `berth ARGS` in `dir`, asserts it succeeded, and answers what it printed.
fn succeeds(dir: &Path, args: &[&str]) -> String {
    let output = berth(dir).args(args).output().unwrap();
    assert!(output.status.success(), "{args:?}: {}", stderr_of(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn backup_copies_a_serving_portals_database_and_the_copy_restores_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut serving = Served::start(dir.path());
    let _ = serving.base_url();
    // Written while the portal serves.
    succeeds(dir.path(), &["user", "add", "restored@example.com"]);
    let copied = succeeds(dir.path(), &["backup", "copy.db"]);
    assert!(copied.contains("copied to copy.db"), "{copied}");
    // Never over an existing file.
    let again = berth(dir.path())
        .args(["backup", "copy.db"])
        .output()
        .unwrap();
    assert!(!again.status.success());
    let refused = stderr_of(&again);
    assert!(refused.contains("copy.db exists already"), "{refused}");
    serving.terminate();

    // Restored on another machine: the copy in place of the database file.
    let restored = tempfile::tempdir().unwrap();
    std::fs::create_dir(restored.path().join("data")).unwrap();
    std::fs::copy(
        dir.path().join("copy.db"),
        restored.path().join("data/berth.db"),
    )
    .unwrap();
    let users = succeeds(restored.path(), &["user", "list"]);
    assert!(users.contains("restored@example.com"), "{users}");
    let mut second = Served::start(restored.path());
    let url = second.base_url();
    let client = crate::helpers::client_builder()
        .cookie_store(true)
        .build()
        .unwrap();
    let html = signed_in_inventory(&client, &url).await;
    assert_eq!(
        crate::helpers::gpu_rows(&html),
        16,
        "the demo fleet came along"
    );
    let logs = second.terminate();
    assert!(
        !logs
            .iter()
            .any(|line| line.contains("added the demo fleet")),
        "the restored store is not empty"
    );

    // Nothing to copy, and PostgreSQL has its own tools.
    let (empty, output) = run_in_empty_dir(&["backup", "copy.db"], &[], None);
    assert!(!output.status.success());
    assert!(
        stderr_of(&output).contains("there is no database at"),
        "{}",
        stderr_of(&output)
    );
    assert!(!empty.path().join("copy.db").exists());
    let env = [(
        "BERTH_DATABASE_URL",
        "postgres://berth:secret@127.0.0.1:1/berth",
    )];
    let (dir, output) = run_in_empty_dir(&["backup", "copy.db"], &env, None);
    assert_fails_cleanly(dir.path(), &output, "pg_dump --format=custom");
}
