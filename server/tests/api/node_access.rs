//! A reservation takes effect on its node, with real components: the built `berth agent` (fake
//! NVML), Debian's OpenSSH server asking it for keys, Unix users made by the test, real
//! processes, and POSIX ACLs on stand-in device files. These need root (CI runs as root); run
//! as another user they say so and stop.
//!
//! The agent and `sshd` read the system clock, so the portal's clock is set to put the bookings
//! where the test needs them in real time (a booking that is running now was booked "before").

use crate::helpers::*;
use berth_app::backend::entity::gpu;
use berth_app::backend::telemetry;
use berth_app::domain::schedule::slot_floor;
use berth_app::domain::user::PlatformRole;
use chrono::{Duration, Utc};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};
use std::path::Path;

crate::on_both_backends!(
    a_lease_opens_ssh_and_the_gpus_to_its_holder_only_and_closes_at_its_end,
    a_lease_starting_while_the_portal_is_down_opens_from_the_cached_schedule,
    people_manage_their_ssh_keys_and_admins_the_logins,
    platform_admins_set_node_policies_on_the_fleet_page_and_in_the_api,
);

const GPU0: &str = "GPU-a0000000-0000-4000-8000-000000000000";
const GPU1: &str = "GPU-a1111111-1111-4111-8111-111111111111";

fn host_config(processes: &[(u32, u64)]) -> Value {
    let processes: Vec<Value> = processes
        .iter()
        .map(|(pid, mib)| json!({"pid": pid, "used_memory_mib": mib}))
        .collect();
    json!({
        "devices": [
            {"uuid": GPU0, "name": "NVIDIA H100 80GB HBM3", "minor_number": 0,
             "memory_total_mib": 81559, "memory_used_mib": 0, "gpu_util": 0, "mem_util": 0,
             "processes": []},
            {"uuid": GPU1, "name": "NVIDIA H100 80GB HBM3", "minor_number": 1,
             "memory_total_mib": 81559, "memory_used_mib": 1000, "gpu_util": 93, "mem_util": 20,
             "processes": processes}
        ]
    })
}

/// A test GPU host: the fake NVML's configuration, stand-in device files, the agent's state and
/// environment directories.
struct Host {
    dir: tempfile::TempDir,
}

impl Host {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        // Readable by sshd's unprivileged key-command user.
        set_mode(dir.path(), 0o755);
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        for minor in 0..2 {
            let device = dir.path().join(format!("dev/nvidia{minor}"));
            std::fs::write(&device, b"").unwrap();
            set_mode(&device, 0o660);
        }
        write_json(&dir.path().join("nvml.json"), &host_config(&[]));
        Self { dir }
    }

    fn path(&self, rel: &str) -> std::path::PathBuf {
        self.dir.path().join(rel)
    }

    fn agent(&self, portal: &str, token: &str, extra: &[&str]) -> AgentProcess {
        let mut args = vec![
            "--state-dir",
            self.path("state").to_str().unwrap().to_owned().leak(),
            "--env-dir",
            self.path("leases").to_str().unwrap().to_owned().leak(),
            "--device-dir",
            self.path("dev").to_str().unwrap().to_owned().leak(),
            "--device-acl",
            "--grace-seconds",
            "2",
        ];
        args.extend_from_slice(extra);
        start_agent_with(portal, token, &self.path("nvml.json"), &args)
    }

    fn processes(&self, processes: &[(u32, u64)]) {
        write_json(&self.path("nvml.json"), &host_config(processes));
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

async fn gpu_id(app: &TestApp, uuid: &str) -> Option<i64> {
    gpu::Entity::find()
        .filter(gpu::Column::Uuid.eq(uuid))
        .one(&app.db)
        .await
        .unwrap()
        .map(|g| g.id)
}

async fn access_events(app: &TestApp, admin: &str, gpu: i64) -> Vec<Value> {
    let (status, body) = get(app, admin, &format!("/api/v1/gpus/{gpu}/access-events")).await;
    assert_eq!(status, 200, "{body}");
    body.as_array().unwrap().clone()
}

fn has_event(events: &[Value], kind: &str, pid: Option<u32>) -> bool {
    events
        .iter()
        .any(|e| e["kind"] == kind && pid.is_none_or(|pid| e["pid"] == pid))
}

async fn a_lease_opens_ssh_and_the_gpus_to_its_holder_only_and_closes_at_its_end(backend: Backend) {
    if !is_root() {
        eprintln!("skipped: needs root (users, ACLs, sshd)");
        return;
    }
    let floor = slot_floor(Utc::now());
    let (app, _db, clock) = spawn_app_at(backend, floor - Duration::minutes(1)).await;
    let admin = user_token(&app, "root-admin@example.org", PlatformRole::PlatformAdmin).await;
    let (node, token) =
        telemetry::issue_node_token(&app.db, "gpu-access-01", Some(true), None, Utc::now())
            .await
            .unwrap();
    let (alice, bob) = (UnixUser::create("bta"), UnixUser::create("btb"));
    let host = Host::new();
    let (alice_token, alice_key) = holder(&app, &admin, &alice, &host.path("")).await;
    let (_, bob_key) = holder(&app, &admin, &bob, &host.path("")).await;
    let _agent = host.agent(&app.url(""), &token, &[]);
    let sshd = Sshd::start(&host.path("state"));
    let gpu1 = eventually("the agent's GPUs", || gpu_id(&app, GPU1)).await;
    // Before any lease: nobody gets in.
    assert_eq!(sshd.run_as(&alice.name, &alice_key, "true"), None);

    // Alice books GPU 1 from the current slot; the agent hears of it within seconds.
    let (status, booked) = book(
        &app,
        &alice_token,
        json!({"gpu_ids": [gpu1], "start": floor.to_rfc3339(),
               "end": (floor + Duration::minutes(45)).to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 201, "{booked}");
    clock.set(Utc::now());
    let booked_at = std::time::Instant::now();
    let mut visible = None;
    for _ in 0..150 {
        visible = sshd.run_as(&alice.name, &alice_key, "echo $CUDA_VISIBLE_DEVICES");
        if visible.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let keys = std::process::Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["agent", "authorized-keys", "--state-dir"])
        .arg(host.path("state"))
        .arg(&alice.name)
        .output()
        .unwrap();
    let visible = visible.unwrap_or_else(|| {
        panic!(
            "alice's login refused; the key command answers {:?}\nsshd: {}\nssh: {}",
            String::from_utf8_lossy(&keys.stdout),
            sshd.log(),
            sshd.client_log(&alice.name, &alice_key)
        )
    });
    assert_eq!(visible, GPU1, "exactly her GPU\n{}", sshd.log());
    eprintln!(
        "lease open on the node {:?} after booking",
        booked_at.elapsed()
    );
    assert_eq!(
        sshd.run_as(&bob.name, &bob_key, "true"),
        None,
        "bob holds nothing on this node"
    );
    // A login shell reads the same from the lease file.
    let env = std::fs::read_to_string(host.path(&format!("leases/{}.env", alice.name))).unwrap();
    assert!(
        env.contains(&format!("CUDA_VISIBLE_DEVICES={GPU1}\n")),
        "{env}"
    );
    // … through deploy/profile.d/berth.sh (copied where the user can read it).
    let snippet = host.path("berth.sh");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/profile.d/berth.sh"),
        &snippet,
    )
    .unwrap();
    set_mode(&snippet, 0o644);
    let from_profile = sshd.run_as(
        &alice.name,
        &alice_key,
        &format!(
            "unset CUDA_VISIBLE_DEVICES; BERTH_LEASE_DIR={} . {}; echo $CUDA_VISIBLE_DEVICES",
            host.path("leases").display(),
            snippet.display()
        ),
    );
    assert_eq!(
        from_profile.as_deref(),
        Some(GPU1),
        "deploy/profile.d/berth.sh"
    );
    // Her UID, and only hers, may open GPU 1's device file.
    let entry = format!("user:{}:rw-", alice.uid);
    assert!(acl_entries(&host.path("dev/nvidia1")).contains(&entry));
    assert!(
        !acl_entries(&host.path("dev/nvidia0"))
            .iter()
            .any(|e| e.starts_with("user:") && e != "user::rw-")
    );
    // The reservation page's data: ready, how to connect, the GPU's values.
    let id = booked["id"].as_i64().unwrap();
    let (_, access) = get(
        &app,
        &alice_token,
        &format!("/api/v1/reservations/{id}/access"),
    )
    .await;
    assert_eq!(
        (&access["state"], &access["enforced"]),
        (&json!("ready"), &json!(true)),
        "{access}"
    );
    assert!(
        access["connect"]
            .as_str()
            .unwrap()
            .starts_with(&format!("ssh {}@", alice.name))
    );
    assert_eq!(access["gpus"][0]["uuid"], GPU1);

    // Bob runs on her GPU, and so does root: bob's process is reported, root's never.
    let mut alice_job = alice.spawn("trap '' TERM; exec sleep 300");
    let mut bob_job = bob.spawn("exec sleep 300");
    let mut root_job = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();
    host.processes(&[
        (alice_job.id(), 1000),
        (bob_job.id(), 500),
        (root_job.id(), 10),
    ]);
    let events = eventually("bob reported", || async {
        let events = access_events(&app, &admin, gpu1).await;
        has_event(&events, "unauthorized", Some(bob_job.id())).then_some(events)
    })
    .await;
    let intruder = events.iter().find(|e| e["kind"] == "unauthorized").unwrap();
    assert_eq!(intruder["user"], json!(bob.name));
    assert_eq!(
        intruder["reservation_id"],
        json!(id),
        "attributed to her lease"
    );
    assert!(!has_event(&events, "unauthorized", Some(alice_job.id())));
    // Platform admins see it on the GPU's page.
    app.sign_in("platform_admin").await;
    let (_, page) = app.get_text(&format!("/gpus/{gpu1}")).await;
    let access = &page[page.find("gpu-access").expect("the access section")..];
    assert!(
        access.contains(&format!("process {} of {}", bob_job.id(), bob.name)),
        "{access}"
    );
    assert!(!has_event(&events, "unauthorized", Some(root_job.id())));
    // Under `report` bob's process runs on; under `terminate` it goes.
    assert!(!has_ended(&mut bob_job));
    let (status, _) = send(
        &app,
        reqwest::Method::PUT,
        Some(&admin),
        &format!("/api/v1/admin/nodes/{node}/policy"),
        Some(json!({"intruders": "terminate"})),
    )
    .await;
    assert_eq!(status, 204);
    ended("bob's process terminated", &mut bob_job).await;
    assert!(!has_ended(&mut root_job), "root is never touched");
    assert!(
        !has_ended(&mut alice_job),
        "the holder's own process runs on"
    );

    // GPU 1 is retired under her: her booking moves to GPU 0 of the same node (it is free).
    // She still gets in, now on GPU 0; GPU 1's ACL goes and her process there, which ignores
    // SIGTERM, is killed after the 2 s grace.
    let (status, body) = post_json(
        &app,
        &admin,
        &format!("/api/v1/admin/gpus/{gpu1}/retire"),
        &json!({}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["moved"].as_array().map(Vec::len), Some(1), "{body}");
    eventually("alice on GPU 0", || async {
        (sshd
            .run_as(&alice.name, &alice_key, "echo $CUDA_VISIBLE_DEVICES")
            .as_deref()
            == Some(GPU0))
        .then_some(())
    })
    .await;
    eventually("the ACL moved", || async {
        (!acl_entries(&host.path("dev/nvidia1")).contains(&entry)
            && acl_entries(&host.path("dev/nvidia0")).contains(&entry))
        .then_some(())
    })
    .await;
    let env = std::fs::read_to_string(host.path(&format!("leases/{}.env", alice.name))).unwrap();
    assert!(
        env.contains(&format!("CUDA_VISIBLE_DEVICES={GPU0}\n")),
        "{env}"
    );
    ended("her process killed", &mut alice_job).await;
    let events = eventually("the end recorded", || async {
        let events = access_events(&app, &admin, gpu1).await;
        has_event(&events, "killed", Some(alice_job.id())).then_some(events)
    })
    .await;
    for kind in ["granted", "revoked", "terminated", "killed"] {
        assert!(has_event(&events, kind, None), "{kind} in {events:?}");
    }
    let _ = root_job.kill();
    let _ = root_job.wait();
    app.stop().await;
}

async fn a_lease_starting_while_the_portal_is_down_opens_from_the_cached_schedule(
    backend: Backend,
) {
    if !is_root() {
        eprintln!("skipped: needs root (users, ACLs)");
        return;
    }
    let real = Utc::now();
    // The next slot at least 20 s away; the agent opens it 6 s from now (early access).
    let mut start = slot_floor(real) + Duration::minutes(15);
    if (start - real).num_seconds() < 20 {
        start += Duration::minutes(15);
    }
    let early = (start - real).num_seconds() - 6;
    let (app, _db, _clock) = spawn_app_at(backend, real).await;
    let admin = user_token(&app, "root-admin@example.org", PlatformRole::PlatformAdmin).await;
    let (_, token) =
        telemetry::issue_node_token(&app.db, "gpu-access-02", Some(true), None, Utc::now())
            .await
            .unwrap();
    let alice = UnixUser::create("btc");
    let host = Host::new();
    let (alice_token, _) = holder(&app, &admin, &alice, &host.path("")).await;
    let early_arg = early.to_string();
    let _agent = host.agent(
        &app.url(""),
        &token,
        &["--early-access-seconds", &early_arg],
    );
    let gpu0 = eventually("the agent's GPUs", || gpu_id(&app, GPU0)).await;
    let (status, booked) = book(
        &app,
        &alice_token,
        json!({"gpu_ids": [gpu0], "start": start.to_rfc3339(),
               "end": (start + Duration::minutes(15)).to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 201, "{booked}");
    let schedule = host.path("state/leases.json");
    eventually("the schedule on disk", || async {
        let text = std::fs::read_to_string(&schedule).ok()?;
        text.contains(&alice.name).then_some(())
    })
    .await;
    assert!(
        !host.path(&format!("leases/{}.env", alice.name)).exists(),
        "not open yet"
    );
    app.stop().await;

    // The portal is down; the lease opens on the agent's clock from the cached schedule.
    eventually("the lease opened", || async {
        std::fs::read_to_string(host.path(&format!("leases/{}.env", alice.name)))
            .ok()
            .filter(|env| env.contains(GPU0))
    })
    .await;
    assert!(acl_entries(&host.path("dev/nvidia0")).contains(&format!("user:{}:rw-", alice.uid)));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["agent", "authorized-keys", "--state-dir"])
        .arg(host.path("state"))
        .arg(&alice.name)
        .output()
        .unwrap();
    let lines = String::from_utf8(out.stdout).unwrap();
    assert!(
        lines.starts_with(&format!("environment=\"CUDA_VISIBLE_DEVICES={GPU0}\"")),
        "{lines}"
    );
    assert!(
        lines
            .trim_end()
            .ends_with(|c: char| c.is_ascii_alphanumeric() || "+/=".contains(c)),
        "the key line ends with the key: {lines:?} (stderr: {})",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn people_manage_their_ssh_keys_and_admins_the_logins(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana.souza+gpu@example.org", PlatformRole::User).await;
    let admin = user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let (status, access) = get(&app, &ana, "/api/v1/me/access").await;
    assert_eq!(status, 200);
    assert_eq!(access["login"], "ana_souza", "from the address");
    assert_eq!(access["keys"], json!([]));

    let dir = tempfile::tempdir().unwrap();
    let (_, public) = ssh_key_pair(dir.path(), "ana");
    let (status, key) = post_json(&app, &ana, "/api/v1/me/ssh-keys", &json!({"key": public})).await;
    assert_eq!(status, 201, "{key}");
    assert_eq!(key["name"], "ana@test", "named by its comment");
    assert_eq!(key["algorithm"], "ssh-ed25519");
    let fingerprint = std::process::Command::new("ssh-keygen")
        .args(["-l", "-E", "sha256", "-f"])
        .arg(dir.path().join("ana.pub"))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&fingerprint.stdout).contains(key["fingerprint"].as_str().unwrap())
    );

    // Bad keys get a clear 422, and nothing is stored.
    let forged = format!("command=\"sh\" {public}");
    let weak_path = dir.path().join("weak");
    std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "rsa", "-b", "1024", "-N", "", "-f"])
        .arg(&weak_path)
        .status()
        .unwrap();
    let weak = std::fs::read_to_string(weak_path.with_extension("pub")).unwrap();
    for (body, code) in [
        (json!({"key": public}), "ssh_key_twice"),
        (json!({"key": "not a key"}), "bad_ssh_key"),
        (json!({"key": forged}), "bad_ssh_key"),
        (
            json!({"key": format!("{public}\nssh-ed25519 AAAA")}),
            "bad_ssh_key",
        ),
        (json!({"key": weak}), "weak_ssh_key"),
        (
            json!({"key": "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDJ"}),
            "bad_ssh_key",
        ),
        (json!({"key": "x".repeat(100_000)}), "bad_ssh_key"),
        (
            json!({"name": "n".repeat(65), "key": ssh_key_pair(dir.path(), "other").1}),
            "name",
        ),
    ] {
        let (status, err) = post_json(&app, &ana, "/api/v1/me/ssh-keys", &body).await;
        assert_eq!(status, 422, "{err}");
        assert!(err.to_string().contains(code), "{code}: {err}");
    }
    let (_, access) = get(&app, &ana, "/api/v1/me/access").await;
    assert_eq!(access["keys"].as_array().unwrap().len(), 1);

    // Another user's key is not found; the owner removes theirs.
    let other = user_token(&app, "other@example.org", PlatformRole::User).await;
    let path = format!("/api/v1/me/ssh-keys/{}", key["id"]);
    let (status, _) = send(&app, reqwest::Method::DELETE, Some(&other), &path, None).await;
    assert_eq!(status, 404);
    let (status, _) = send(&app, reqwest::Method::DELETE, Some(&ana), &path, None).await;
    assert_eq!(status, 204);

    // Logins: platform admins only, checked, unique.
    let ana_id = user_id(&app, "ana.souza+gpu@example.org").await;
    let other_id = user_id(&app, "other@example.org").await;
    let set = |token: &str, id: i64, login: &str| {
        let (token, login) = (token.to_owned(), login.to_owned());
        let app = &app;
        async move {
            send(
                app,
                reqwest::Method::PUT,
                Some(&token),
                &format!("/api/v1/admin/users/{id}/login"),
                Some(json!({"login": login})),
            )
            .await
        }
    };
    assert_eq!(set(&ana, ana_id, "ana").await.0, 403);
    assert_eq!(set(&admin, ana_id, "asouza").await.0, 200);
    for (login, code) in [
        ("Ana", "bad_login"),
        ("root", "reserved_login"),
        ("asouza", "login_taken"),
        ("a b", "bad_login"),
    ] {
        let (status, err) = set(&admin, other_id, login).await;
        assert_eq!(status, 422, "{login}: {err}");
        assert!(err.to_string().contains(code), "{code}: {err}");
    }
    assert_eq!(set(&admin, 99_999_999, "ghost").await.0, 404);
    let (_, access) = get(&app, &ana, "/api/v1/me/access").await;
    assert_eq!(access["login"], "asouza");

    // The agent's schedule asks are checked too.
    let (_, node_token) =
        telemetry::issue_node_token(&app.db, "gpu-access-03", Some(true), None, Utc::now())
            .await
            .unwrap();
    let (status, _) = get(&app, &node_token, "/api/v1/agent/leases?wait=31").await;
    assert_eq!(status, 422);
    let (status, schedule) = get(&app, &node_token, "/api/v1/agent/leases").await;
    assert_eq!(status, 200);
    assert_eq!(schedule["leases"], json!([]));
    assert_eq!(schedule["intruders"], "report");
    let (status, _) = get(&app, &ana, "/api/v1/agent/leases").await;
    assert_eq!(status, 401, "a user token is not a node token");
    let started = std::time::Instant::now();
    let path = format!(
        "/api/v1/agent/leases?wait=2&after={}",
        schedule["version"].as_str().unwrap()
    );
    let (_, again) = get(&app, &node_token, &path).await;
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(2),
        "a long poll waits"
    );
    assert_eq!(again["version"], schedule["version"]);
}

async fn platform_admins_set_node_policies_on_the_fleet_page_and_in_the_api(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let admin = user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let user = user_token(&app, "user@example.org", PlatformRole::User).await;
    let (node, node_token) =
        telemetry::issue_node_token(&app.db, "gpu-access-04", Some(true), None, Utc::now())
            .await
            .unwrap();
    let schedule = || async { get(&app, &node_token, "/api/v1/agent/leases").await.1 };
    let form = |token: &str, fields: Vec<(&'static str, String)>| {
        crate::helpers::client()
            .post(app.url("/api/forms/fleet/node_policy"))
            .bearer_auth(token.to_owned())
            .form(&fields)
            .send()
    };

    // The page's form: saved, and the node's agent gets it with its schedule.
    let response = form(
        &admin,
        vec![
            ("node_id", node.to_string()),
            ("intruders", "terminate".into()),
            ("protect_idle", "on".into()),
        ],
    )
    .await
    .unwrap();
    assert!(
        response.url().as_str().contains("done=node_policy"),
        "{}",
        response.url()
    );
    let now = schedule().await;
    assert_eq!(
        (&now["intruders"], &now["protect_idle"]),
        (&json!("terminate"), &json!(true))
    );
    app.sign_in("platform_admin").await;
    let (_, page) = app.get_text("/admin/fleet").await;
    let section = &page[page.find("fleet-node-policy").expect("the policy table")..];
    let row = &section[section.find("gpu-access-04").expect("the node's row")..];
    assert!(
        row.contains(r#"value="terminate" selected"#),
        "the saved policy is chosen"
    );

    // Refused: an unknown policy (back on the page with the reason), someone who is not a
    // platform admin, a node that does not exist. Nothing changes.
    let response = form(
        &admin,
        vec![("node_id", node.to_string()), ("intruders", "kill".into())],
    )
    .await
    .unwrap();
    assert!(
        response.url().as_str().contains("error="),
        "{}",
        response.url()
    );
    let response = form(
        &user,
        vec![("node_id", node.to_string()), ("intruders", "off".into())],
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 403);
    let put = |token: &str, id: i64, body: Value| {
        let (token, app) = (token.to_owned(), &app);
        async move {
            send(
                app,
                reqwest::Method::PUT,
                Some(&token),
                &format!("/api/v1/admin/nodes/{id}/policy"),
                Some(body),
            )
            .await
            .0
        }
    };
    assert_eq!(put(&admin, node, json!({"intruders": "kill"})).await, 422);
    assert_eq!(
        put(&admin, 99_999_999, json!({"intruders": "off"})).await,
        404
    );
    assert_eq!(put(&user, node, json!({"intruders": "off"})).await, 403);
    assert_eq!(schedule().await["intruders"], "terminate");
    assert_eq!(put(&admin, node, json!({"intruders": "off"})).await, 204);
    assert_eq!(schedule().await["intruders"], "off");
}

/// `deploy/berth-agent.service` is a unit systemd accepts, and every variable it sets is one
/// `berth agent` reads.
#[test]
fn the_agent_unit_is_valid_and_sets_only_what_the_agent_reads() {
    let unit = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/berth-agent.service"),
    )
    .unwrap();
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["agent", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    let variables: Vec<&str> = unit
        .lines()
        .filter_map(|line| line.trim_start_matches('#').strip_prefix("Environment="))
        .filter_map(|assignment| assignment.split('=').next())
        .collect();
    assert!(variables.len() >= 5, "{variables:?}");
    for variable in variables {
        assert!(
            help.contains(&format!("env: {variable}")),
            "{variable} is not read by `berth agent`"
        );
    }
    if std::path::Path::new("/usr/bin/systemd-analyze").exists() {
        let dir = tempfile::tempdir().unwrap();
        let berth = std::fs::canonicalize(env!("CARGO_BIN_EXE_berth")).unwrap();
        let path = dir.path().join("berth-agent.service");
        std::fs::write(
            &path,
            unit.replace("/usr/bin/berth", berth.to_str().unwrap()),
        )
        .unwrap();
        let out = std::process::Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The agent's writer reaches a real terminal: a holder logged in with `ssh -tt` (Debian's
/// OpenSSH server allocating the pseudo-terminal, keys answered from a cached schedule) sees a
/// notice written to the terminals she owns, and nobody else's terminal is written to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_reaches_the_holders_ssh_terminal() {
    use berth_app::domain::lease::{Lease, NodeSchedule};
    use berth_server::agent::access::{CachedSchedule, tell_terminals};
    use std::io::Read;
    if !is_root() {
        eprintln!("skipped: needs root (users, sshd)");
        return;
    }
    let user = UnixUser::create("btt");
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = ssh_key_pair(dir.path(), "holder");
    let key_line = public
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    let now = Utc::now();
    let state = dir.path().join("state");
    CachedSchedule {
        schedule: NodeSchedule {
            version: "1".into(),
            leases: vec![Lease {
                reservation_id: 1,
                login: user.name.clone(),
                keys: vec![key_line],
                gpus: vec![],
                quarters: 4,
                start: now - Duration::hours(1),
                end: now + Duration::hours(1),
                keep_running: false,
                environment: None,
                workspace: None,
                notice: None,
            }],
            ..NodeSchedule::default()
        },
        early_access_seconds: 0,
        received_at: Some(now),
    }
    .save(&state)
    .unwrap();
    let sshd = Sshd::start(&state);
    let mut session = sshd.terminal(&user.name, &key, "sleep 20");
    let terminals = Path::new("/dev/pts");
    let owned = || {
        std::fs::read_dir(terminals)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|entry| {
                        use std::os::unix::fs::MetadataExt;
                        entry.metadata().is_ok_and(|m| m.uid() == user.uid)
                    })
                    .count()
            })
            .unwrap_or(0)
    };
    for _ in 0..100 {
        if owned() > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        owned(),
        1,
        "no terminal for the holder; sshd: {}",
        sshd.log()
    );
    assert_eq!(tell_terminals(terminals, user.uid + 1, "not hers"), 0);
    let text = "Berth — your GPUs sit idle\nDetails: /reservations/1";
    assert_eq!(tell_terminals(terminals, user.uid, text), 1);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let _ = session.kill();
    let mut shown = String::new();
    session
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut shown)
        .unwrap();
    let _ = session.wait();
    // Line by line (a terminal in its usual mode turns "\n" into "\r\n" itself).
    assert!(
        shown
            .replace('\r', "")
            .contains("Berth — your GPUs sit idle\nDetails: /reservations/1"),
        "{shown:?}"
    );
}
