//! The files in `deploy/`, each used as an operator would: the systemd units pass
//! `systemd-analyze verify` and the portal's sandbox `systemd-analyze security`; the portal
//! starts with the environment file and with the compose file's settings; the Caddyfile is
//! what the fault tests put in front of the replicas (`tests/faults/`); the alert rules pass
//! `promtool`'s checks and unit tests; and the rules and the Grafana dashboard name only series a
//! running portal exports.

use crate::helpers::*;
use berth_app::backend::entity::gpu;
use berth_app::domain::user::PlatformRole;
use berth_server::configuration::LocalAgentMode;
use chrono::TimeDelta;
use sea_orm::EntityTrait;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

crate::on_both_backends!(the_dashboard_and_the_alerts_name_only_series_the_portal_exports);

/// Runs `program` with `args`; panics with its output unless it succeeds. Answers its stdout.
fn succeeds(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|err| panic!("run {program}: {err} (scripts/test.sh installs it)"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{program} {args:?}:\n{text}");
    text
}

/// A unit file from `deploy/` copied into `dir`, with its `/usr/bin/berth` replaced by the binary
/// under test (systemd-analyze checks that the program exists).
fn unit_under_test(dir: &Path, name: &str) -> String {
    let text = std::fs::read_to_string(deploy_file(name))
        .expect("the unit")
        .replace("/usr/bin/berth", env!("CARGO_BIN_EXE_berth"));
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the unit");
    path.display().to_string()
}

#[test]
fn the_systemd_units_verify_and_the_portal_runs_sandboxed() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["berth.service", "berth-agent.service"] {
        succeeds(
            "systemd-analyze",
            &["verify", &unit_under_test(dir.path(), name)],
        );
    }
    // The portal: an exposure of at most 2.0 of 10 ("OK"); the agent is root by design.
    let report = succeeds(
        "systemd-analyze",
        &[
            "security",
            "--offline=true",
            "--threshold=20",
            &unit_under_test(dir.path(), "berth.service"),
        ],
    );
    for hardened in [
        "✓ NoNewPrivileges=",
        "✓ ProtectSystem=",
        "✓ User=/DynamicUser=",
        "✓ PrivateDevices=",
        "✓ CapabilityBoundingSet=~CAP_SYS_ADMIN",
    ] {
        assert!(report.contains(hardened), "{hardened} in:\n{report}");
    }
    let unit = std::fs::read_to_string(deploy_file("berth.service")).unwrap();
    assert!(
        unit.contains("EnvironmentFile=/etc/berth/berth.env"),
        "{unit}"
    );
    assert!(unit.contains("ExecStart=/usr/bin/berth serve"), "{unit}");
}

/// The `Environment=` settings of a unit file.
fn unit_environment(name: &str) -> Vec<(String, String)> {
    std::fs::read_to_string(deploy_file(name))
        .unwrap()
        .lines()
        .filter_map(|line| line.strip_prefix("Environment="))
        .map(|pair| {
            let (k, v) = pair.split_once('=').expect("VAR=value");
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

/// What a portal started with the example environment (as the unit starts it) answers: its
/// settings are all accepted, it migrates a fresh PostgreSQL database and it is ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_portal_starts_with_the_example_environment_and_the_compose_settings() {
    // The unit's environment, then the file (systemd reads EnvironmentFile= first; the
    // unit's Environment= lines are defaults the file overrides).
    let mut env = unit_environment("berth.service");
    let file = environment_file(&deploy_file("berth.env.example"));
    env = with_overrides(
        &env,
        &file
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect::<Vec<_>>(),
        &[],
    );
    let database = TestDatabase::create(Backend::Postgres).await;
    let dir = tempfile::tempdir().unwrap();
    let site = repo_root().join("target/site").display().to_string();
    let mut portal = Served::start(
        dir.path(),
        with_overrides(
            &env,
            &[
                ("BERTH_DATABASE_URL", database.url.clone()),
                ("BERTH_DATA_DIR", dir.path().display().to_string()),
                ("BERTH_SITE_ROOT", site.clone()),
            ],
            &[],
        ),
    )
    .await;
    // The metrics token of the example is required.
    let metrics = client().get(portal.url("/metrics")).send().await.unwrap();
    assert_eq!(metrics.status(), 401);
    let metrics = client()
        .get(portal.url("/metrics"))
        .bearer_auth("change-me-metrics-token")
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status(), 200);
    portal.terminate();
    let log = portal.log();
    assert!(log.contains("\"level\":\"INFO\""), "JSON logs: {log}");

    // The compose file's replicas: their settings, with the database and address of this test.
    let compose = compose_file();
    let replica = compose_environment(&compose["services"]["portal-1"]);
    let dir = tempfile::tempdir().unwrap();
    let mut portal = Served::start(
        dir.path(),
        with_overrides(
            &replica,
            &[
                ("BERTH_DATABASE_URL", database.url.clone()),
                ("BERTH_DATA_DIR", dir.path().display().to_string()),
                ("BERTH_SITE_ROOT", site),
            ],
            &[],
        ),
    )
    .await;
    portal.terminate();
}

/// The compose file and the container image agree with each other and with the portal: two
/// replicas with the same settings behind the proxy, whose address is the one trusted; the image
/// is multi-stage, non-root, and holds the binary and the site only.
#[test]
fn the_compose_file_and_the_container_image_fit_together() {
    let compose = compose_file();
    let services = &compose["services"];
    let first = compose_environment(&services["portal-1"]);
    assert_eq!(first, compose_environment(&services["portal-2"]));
    let get = |name: &str| {
        first
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("{name} in the replicas' environment"))
    };
    assert!(get("BERTH_DATABASE_URL").starts_with("postgres://"));
    let proxy = &services["proxy"];
    let proxy_address = proxy["networks"]["berth"]["ipv4_address"]
        .as_str()
        .expect("the proxy's fixed address");
    assert_eq!(get("BERTH_TRUSTED_PROXIES"), proxy_address);
    let port = get("BERTH_BIND").rsplit(':').next().unwrap().to_owned();
    let proxy_env = compose_environment(proxy);
    let upstreams = &proxy_env
        .iter()
        .find(|(k, _)| k == "BERTH_UPSTREAMS")
        .expect("the proxy's upstreams")
        .1;
    assert_eq!(
        upstreams,
        &format!("portal-1:{port} portal-2:{port}"),
        "Caddy sends to both replicas"
    );
    assert!(
        proxy["volumes"]
            .as_sequence()
            .unwrap()
            .iter()
            .any(|v| v.as_str() == Some("./Caddyfile:/etc/caddy/Caddyfile:ro")),
        "the proxy runs deploy/Caddyfile"
    );
    for replica in ["portal-1", "portal-2"] {
        assert_eq!(
            services[replica]["depends_on"]["db"]["condition"].as_str(),
            Some("service_healthy")
        );
        assert_eq!(
            services[replica]["build"]["dockerfile"].as_str(),
            Some("deploy/Containerfile")
        );
    }

    let containerfile = std::fs::read_to_string(deploy_file("Containerfile")).unwrap();
    let stages: Vec<&str> = containerfile.split("\nFROM ").skip(1).collect();
    assert_eq!(stages.len(), 2, "a build stage and a run stage");
    assert!(stages[0].contains("source scripts/common.sh && build_release"));
    let run = stages[1];
    let user = run
        .lines()
        .find_map(|line| line.strip_prefix("USER "))
        .expect("the run stage names its user");
    assert!(
        !user.starts_with("root") && !user.starts_with("0"),
        "runs as {user}"
    );
    let copied: Vec<&str> = run
        .lines()
        .filter_map(|line| line.strip_prefix("COPY --from=build "))
        .collect();
    assert_eq!(
        copied,
        [
            "/src/target/release/berth /usr/bin/berth",
            "/src/target/site /usr/share/berth/site"
        ]
    );
    assert!(!run.contains("cargo") && !run.contains("npm"), "{run}");
    // What the run stage sets is what the portal reads.
    assert!(run.contains("BERTH_SITE_ROOT=/usr/share/berth/site"));
    // build_release leaves exactly those two paths.
    let common = std::fs::read_to_string(repo_root().join("scripts/common.sh")).unwrap();
    assert!(common.contains("cargo leptos build --release --split"));
    let workspace = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
    assert!(workspace.contains("site-root = \"target/site\""));
    assert!(workspace.contains("bin-package = \"berth-server\""));

    // Where a container engine runs, the image is built; this machine has only the client.
    let engine = Command::new("docker").arg("info").output();
    if engine.is_ok_and(|out| out.status.success()) {
        let root = repo_root();
        succeeds(
            "docker",
            &[
                "build",
                "-f",
                &deploy_file("Containerfile").display().to_string(),
                "-t",
                "berth:test",
                &root.display().to_string(),
            ],
        );
    } else {
        eprintln!("note: no container engine answers `docker info`; the image was not built");
    }
}

/// Every metric name in a PromQL expression (Berth's and dcgm-exporter's), without the
/// `_bucket`/`_total` suffixes Prometheus adds.
fn series_named(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let bytes = expr.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let word_start = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if word_start && (expr[i..].starts_with("berth_") || expr[i..].starts_with("DCGM_")) {
            let end = expr[i..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(expr.len(), |n| i + n);
            names.insert(expr[i..end].to_owned());
            i = end;
        } else {
            i += 1;
        }
    }
    names
}

/// The series names in an OpenMetrics scrape, with the names Prometheus stores for counters and
/// histograms.
fn exported(scrape: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in scrape.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            let (name, kind) = (parts.next().unwrap(), parts.next().unwrap_or(""));
            match kind {
                "counter" => {
                    names.insert(format!("{name}_total"));
                }
                "histogram" => {
                    for suffix in ["_bucket", "_sum", "_count"] {
                        names.insert(format!("{name}{suffix}"));
                    }
                }
                _ => {
                    names.insert(name.to_owned());
                }
            }
        }
    }
    names
}

/// The PromQL of every panel of the Grafana dashboard.
fn dashboard_queries() -> Vec<(String, String)> {
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(deploy_file("grafana/berth-dashboard.json")).unwrap(),
    )
    .expect("the dashboard is JSON");
    dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|panel| {
            panel["targets"].as_array().into_iter().flatten().map(|t| {
                (
                    panel["title"].as_str().unwrap().to_owned(),
                    t["expr"].as_str().unwrap().to_owned(),
                )
            })
        })
        .collect()
}

async fn the_dashboard_and_the_alerts_name_only_series_the_portal_exports(backend: Backend) {
    let db = TestDatabase::create(backend).await;
    let mut settings = test_settings(&db);
    settings.local_agent = LocalAgentMode::Simulated;
    settings.agent_interval_seconds = 1;
    // A pool size other than the default, to see the setting reach the pool.
    settings.database_max_connections = 7;
    let app = spawn_with(settings).await;
    // A booking running now: its GPU shows as reserved, the others not.
    user_token(&app, "ana@example.org", PlatformRole::User).await;
    let ana = user_id(&app, "ana@example.org").await;
    let h100 = gpus_of(&app, H100).await;
    let gpu = gpu::Entity::find_by_id(h100[0])
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    let start = grid(chrono::Utc::now()) - TimeDelta::hours(1);
    past_booking(&app.db, ana, &gpu, start, 3).await;
    let scrape = eventually("GPU series and a job's success", || async {
        let text = app.metrics_text().await?;
        (text.contains("DCGM_FI_DEV_GPU_UTIL{")
            && text.contains("berth_job_last_success_timestamp_seconds{")
            && text.contains("berth_http_request_duration_seconds_bucket{"))
        .then_some(text)
    })
    .await;
    let reserved_share = |id: i64| {
        scrape
            .lines()
            .filter(|line| line.starts_with("berth_gpu_reserved_share{"))
            .find(|line| line.contains(&format!("berth_gpu_id=\"{id}\"")))
            .and_then(|line| line.rsplit(' ').next())
            .and_then(|value| value.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("GPU {id}'s reserved share in:\n{scrape}"))
    };
    assert_eq!(reserved_share(h100[0]), 1.0);
    assert_eq!(reserved_share(h100[1]), 0.0);
    assert!(
        scrape.contains("berth_outbox_deliveries{status=\"queued\"}"),
        "{scrape}"
    );
    assert!(
        scrape.contains("berth_outbox_oldest_queued_age_seconds "),
        "{scrape}"
    );
    assert!(
        scrape.contains("\nberth_db_pool_max_connections 7\n"),
        "{scrape}"
    );
    let pool = |use_: &str| {
        let prefix = format!("berth_db_pool_connections{{state=\"{use_}\"}} ");
        scrape
            .lines()
            .find_map(|line| line.strip_prefix(prefix.as_str()))
            .and_then(|value| value.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{prefix} in:\n{scrape}"))
    };
    // The scrape has just read through the pool, which opens no more than 7.
    let (in_use, idle) = (pool("in_use"), pool("idle"));
    assert!(
        (1.0..=7.0).contains(&(in_use + idle)),
        "in use {in_use}, idle {idle}"
    );
    let exported = exported(&scrape);

    let dir = tempfile::tempdir().unwrap();
    let mut recording = String::from("groups:\n  - name: dashboard\n    rules:\n");
    let queries = dashboard_queries();
    assert!(queries.len() >= 15, "{queries:?}");
    for (index, (title, expr)) in queries.iter().enumerate() {
        for name in series_named(expr) {
            assert!(
                exported.contains(&name),
                "panel `{title}` reads {name}, which the portal does not export"
            );
        }
        recording.push_str(&format!(
            "      - record: berth:dashboard_{index}\n        expr: {}\n",
            serde_json::to_string(expr).unwrap()
        ));
    }
    // promtool parses each query (as a recording rule).
    let queries_file = dir.path().join("dashboard-queries.yml");
    std::fs::write(&queries_file, recording).unwrap();
    succeeds(
        "promtool",
        &["check", "rules", &queries_file.display().to_string()],
    );
    for required in [
        "Fleet utilization",
        "Reserved vs used",
        "Node agents",
        "Request latency",
        "Job lag (since the last success)",
        "Outbox",
    ] {
        assert!(
            queries.iter().any(|(title, _)| title == required),
            "a `{required}` panel"
        );
    }

    let rules = std::fs::read_to_string(deploy_file("prometheus/berth-alerts.yml")).unwrap();
    let parsed: serde_yaml::Value = serde_yaml::from_str(&rules).unwrap();
    let alerts: Vec<&str> = parsed["groups"][0]["rules"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|rule| rule["alert"].as_str().unwrap())
        .collect();
    for required in [
        "BerthAgentSilent",
        "BerthGpuXid",
        "BerthPaymentJobFailing",
        "BerthOutboxBacklog",
    ] {
        assert!(alerts.contains(&required), "{required} in {alerts:?}");
    }
    for name in series_named(&rules) {
        assert!(
            exported.contains(&name),
            "the alert rules read {name}, which the portal does not export"
        );
    }
    let prometheus = deploy_file("prometheus");
    let rules_path = prometheus.join("berth-alerts.yml").display().to_string();
    succeeds("promtool", &["check", "rules", &rules_path]);
    succeeds(
        "promtool",
        &[
            "test",
            "rules",
            &prometheus
                .join("berth-alerts.test.yml")
                .display()
                .to_string(),
        ],
    );
    // The scrape configuration, with its token file where this test put it.
    std::fs::write(dir.path().join("token"), "change-me-metrics-token").unwrap();
    std::fs::copy(
        prometheus.join("berth-alerts.yml"),
        dir.path().join("berth-alerts.yml"),
    )
    .unwrap();
    let config = std::fs::read_to_string(prometheus.join("prometheus.yml"))
        .unwrap()
        .replace(
            "/etc/prometheus/berth-metrics-token",
            &dir.path().join("token").display().to_string(),
        );
    let config_path = dir.path().join("prometheus.yml");
    std::fs::write(&config_path, config).unwrap();
    succeeds(
        "promtool",
        &["check", "config", &config_path.display().to_string()],
    );
    app.stop().await;
}
