//! Environment profiles: versions, sharing with a team, the booking's choice (API and pages),
//! bad input; and on a real node (the built `berth agent`, Debian's `sshd`, Unix users made by
//! the test, a wheel built here) the environment prepared before the start, taken from the
//! node's cache the second time, active in the holder's login shell, and a failing build told to
//! the holder before the start. The node part needs root (CI runs as root).

use crate::helpers::*;
use berth_app::backend::entity::{gpu, notification_event};
use berth_app::backend::telemetry;
use berth_app::domain::notify::EventKind;
use berth_app::domain::schedule::slot_floor;
use berth_app::domain::user::PlatformRole;
use chrono::{Duration, Utc};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};
use std::path::Path;

crate::on_both_backends!(
    profiles_are_versioned_shared_and_chosen_at_booking,
    an_environment_is_prepared_ahead_cached_and_active_at_login,
);

fn body(name: &str, variables: Value, script: &str) -> Value {
    json!({
        "name": name,
        "variables": variables,
        "packages": [],
        "setup_script": script,
        "dotfiles": [{"path": ".config/berth/tool.toml", "content": "a = 1\n"}],
    })
}

/// Page `path` rendered for the holder of `token`.
async fn page_as(app: &TestApp, token: &str, path: &str) -> String {
    let response = client()
        .get(app.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200, "{path}");
    without_markers(response.text().await.unwrap())
}

async fn put_json(app: &TestApp, token: &str, path: &str, body: &Value) -> (u16, Value) {
    send(
        app,
        reqwest::Method::PUT,
        Some(token),
        path,
        Some(body.clone()),
    )
    .await
}

async fn profiles_are_versioned_shared_and_chosen_at_booking(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = user_token(&app, "ops@example.org", PlatformRole::PlatformAdmin).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let bia = user_token(&app, "bia@example.org", PlatformRole::User).await;
    let caio = user_token(&app, "caio@example.org", PlatformRole::User).await;
    let team = funded_team(
        &app,
        &platform,
        "vision",
        ("ana@example.org", &ana),
        &["bia@example.org"],
    )
    .await;

    // Ana's profile: version 1, private.
    let (status, created) = post_json(
        &app,
        &ana,
        "/api/v1/profiles",
        &body(
            "torch",
            json!([{"name": "HF_HOME", "value": "/data/hf"}]),
            "echo hi\n",
        ),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_i64().unwrap();
    assert_eq!(created["version"]["number"], 1);
    let hash1 = created["version"]["hash"].as_str().unwrap().to_owned();
    assert_eq!(hash1.len(), 64);
    // Nobody else sees it.
    for token in [&bia, &caio] {
        let (status, list) = get(&app, token, "/api/v1/profiles").await;
        assert_eq!((status, list.as_array().unwrap().len()), (200, 0), "{list}");
        let (status, _) = get(&app, token, &format!("/api/v1/profiles/{id}")).await;
        assert_eq!(status, 404);
    }
    // Saving the same content again makes no version; a change makes version 2.
    let same = body(
        "torch",
        json!([{"name": "HF_HOME", "value": "/data/hf"}]),
        "echo hi\n",
    );
    let (status, saved) = put_json(&app, &ana, &format!("/api/v1/profiles/{id}"), &same).await;
    assert_eq!(
        (status, &saved["version"]["number"]),
        (200, &json!(1)),
        "{saved}"
    );
    let mut shared = body(
        "torch",
        json!([{"name": "HF_HOME", "value": "/scratch"}]),
        "echo hi\n",
    );
    shared["team_id"] = json!(team);
    let (status, saved) = put_json(&app, &ana, &format!("/api/v1/profiles/{id}"), &shared).await;
    assert_eq!(
        (status, &saved["version"]["number"]),
        (200, &json!(2)),
        "{saved}"
    );
    assert_eq!(saved["team_name"], "vision");
    let (_, detail) = get(&app, &ana, &format!("/api/v1/profiles/{id}")).await;
    let numbers: Vec<i64> = detail["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["number"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, vec![2, 1]);
    assert_eq!(detail["versions"][1]["hash"], json!(hash1));
    // Shared with the team: Bia (a member) sees and books with it, but cannot change it;
    // Caio (not a member) still sees nothing.
    let (_, list) = get(&app, &bia, "/api/v1/profiles").await;
    assert_eq!(list[0]["id"], id, "{list}");
    assert_eq!(list[0]["editable"], false);
    let (status, _) = put_json(&app, &bia, &format!("/api/v1/profiles/{id}"), &shared).await;
    assert_eq!(status, 403);
    let (status, _) = send(
        &app,
        reqwest::Method::DELETE,
        Some(&bia),
        &format!("/api/v1/profiles/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = get(&app, &caio, &format!("/api/v1/profiles/{id}")).await;
    assert_eq!(status, 404);
    // Sharing with a team one is not in: 404 (the team is not revealed).
    let mut other = shared.clone();
    other["team_id"] = json!(team + 1000);
    let (status, _) = post_json(&app, &caio, "/api/v1/profiles", &other).await;
    assert_eq!(status, 404);

    // Bad input: 422 with what is wrong, nothing written.
    let bad = [
        (json!([{"name": "1BAD", "value": "x"}]), "", "bad_variable"),
        (
            json!([{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]),
            "",
            "reserved_variable",
        ),
        (
            json!([{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]),
            "",
            "profile_twice",
        ),
        (
            json!([{"name": "A", "value": "line\nbreak"}]),
            "",
            "bad_variable",
        ),
    ];
    for (variables, script, code) in bad {
        let (status, answer) = post_json(
            &app,
            &caio,
            "/api/v1/profiles",
            &body("x", variables, script),
        )
        .await;
        assert_eq!((status, &answer["code"]), (422, &json!(code)), "{answer}");
    }
    let mut escape = body("x", json!([]), "");
    escape["dotfiles"] = json!([{"path": "../../etc/cron.d/x", "content": "* * * * * root sh"}]);
    let (status, answer) = post_json(&app, &caio, "/api/v1/profiles", &escape).await;
    assert_eq!(
        (status, &answer["code"]),
        (422, &json!("bad_dotfile_path")),
        "{answer}"
    );
    let mut old = body("x", json!([]), "");
    old["python"] = json!("2.7");
    let (status, answer) = post_json(&app, &caio, "/api/v1/profiles", &old).await;
    assert_eq!(
        (status, &answer["code"]),
        (422, &json!("bad_python_version")),
        "{answer}"
    );
    let huge = body("x", json!([]), &"x".repeat(600 * 1024));
    let (status, answer) = post_json(&app, &caio, "/api/v1/profiles", &huge).await;
    assert_eq!(
        (status, &answer["code"]),
        (422, &json!("profile_too_large")),
        "{answer}"
    );
    let (status, answer) =
        post_json(&app, &caio, "/api/v1/profiles", &body(" ", json!([]), "")).await;
    assert_eq!(
        (status, &answer["code"]),
        (422, &json!("profile_name")),
        "{answer}"
    );
    let (_, list) = get(&app, &caio, "/api/v1/profiles").await;
    assert_eq!(list.as_array().unwrap().len(), 0, "nothing written: {list}");

    // Booking: with the profile named, with the default, with none, with someone else's.
    let gpu = first_gpu(&app, H100).await;
    let start = slot_floor(Utc::now()) + Duration::days(2);
    let window = |hours: i64| {
        (
            (start + Duration::hours(hours)).to_rfc3339(),
            (start + Duration::hours(hours + 1)).to_rfc3339(),
        )
    };
    let booking = |hours: i64, profile: Option<i64>| {
        let (from, to) = window(hours);
        let mut b = json!({"gpu_ids": [gpu], "start": from, "end": to, "team_id": team});
        if let Some(p) = profile {
            b["profile"] = json!(p);
        }
        b
    };
    let (status, named) = book(&app, &bia, booking(0, Some(id))).await;
    assert_eq!(status, 201, "{named}");
    assert_eq!(
        (&named["profile"]["profile_id"], &named["profile"]["number"]),
        (&json!(id), &json!(2)),
        "{named}"
    );
    let (status, plain) = book(&app, &bia, booking(1, None)).await;
    assert_eq!(status, 201, "{plain}");
    assert!(plain.get("profile").is_none(), "no default yet: {plain}");
    let (status, _) = put_json(
        &app,
        &bia,
        "/api/v1/me/default-profile",
        &json!({"profile": id}),
    )
    .await;
    assert_eq!(status, 204);
    // The caller comes with their default (a booking naming no profile takes it from there).
    let (_, me) = get(&app, &bia, "/api/v1/me").await;
    assert_eq!(me["default_profile_id"], json!(id), "{me}");
    let (status, defaulted) = book(&app, &bia, booking(2, None)).await;
    assert_eq!(
        (status, &defaulted["profile"]["profile_id"]),
        (201, &json!(id)),
        "{defaulted}"
    );
    let (status, none) = book(&app, &bia, booking(3, Some(0))).await;
    assert_eq!(status, 201, "{none}");
    assert!(none.get("profile").is_none(), "explicitly none: {none}");
    let (_, caio_profile) = post_json(
        &app,
        &caio,
        "/api/v1/profiles",
        &body("mine", json!([]), ""),
    )
    .await;
    let (status, refused) = book(&app, &bia, booking(4, caio_profile["id"].as_i64())).await;
    assert_eq!(
        (status, &refused["code"]),
        (422, &json!("unreadable")),
        "{refused}"
    );
    let (status, _) = put_json(
        &app,
        &bia,
        "/api/v1/me/default-profile",
        &json!({"profile": caio_profile["id"]}),
    )
    .await;
    assert_eq!(status, 404, "not a default one may not use");

    // A fix applies to bookings that have not started: version 3 for both of Bia's.
    let mut fixed = shared.clone();
    fixed["setup_script"] = json!("echo fixed\n");
    let (_, saved) = put_json(&app, &ana, &format!("/api/v1/profiles/{id}"), &fixed).await;
    assert_eq!(saved["version"]["number"], 3);
    let (_, mine) = get(&app, &bia, "/api/v1/reservations?mine=true").await;
    let versions: Vec<(i64, Value)> = mine
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_i64().unwrap(), r["profile"]["number"].clone()))
        .collect();
    for booked in [&named, &defaulted] {
        let id = booked["id"].as_i64().unwrap();
        assert!(versions.contains(&(id, json!(3))), "{versions:?}");
    }
    // No longer shared with the team, a change reaches nobody else's bookings: its script would
    // run as Bia, who never chose this version.
    let mut private = fixed.clone();
    private["team_id"] = json!(null);
    private["setup_script"] = json!("echo not for bia\n");
    let (_, saved) = put_json(&app, &ana, &format!("/api/v1/profiles/{id}"), &private).await;
    assert_eq!(saved["version"]["number"], 4, "{saved}");
    let (_, mine) = get(&app, &bia, "/api/v1/reservations?mine=true").await;
    for booked in [&named, &defaulted] {
        let id = booked["id"].as_i64().unwrap();
        let kept = mine
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == json!(id))
            .map(|r| r["profile"]["number"].clone());
        assert_eq!(kept, Some(json!(3)), "{mine}");
    }
    // Shared again, as it was: the next fix reaches them.
    let (_, saved) = put_json(&app, &ana, &format!("/api/v1/profiles/{id}"), &fixed).await;
    assert_eq!(saved["version"]["number"], 5, "{saved}");
    let (_, mine) = get(&app, &bia, "/api/v1/reservations?mine=true").await;
    let fifth = mine
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["profile"]["number"] == json!(5))
        .count();
    assert_eq!(fifth, 2, "{mine}");

    // The pages: the list, the editor's refusal kept in place, the booking panel's choice.
    let page = page_as(&app, &bia, "/profiles").await;
    assert!(
        page.contains("torch") && page.contains("vision"),
        "the shared profile"
    );
    let page = page_as(&app, &bia, &format!("/profiles/{id}")).await;
    assert!(page.contains("echo fixed"), "a member reads the content");
    assert!(!page.contains("profile-editor"), "but gets no editor");
    let calendar = page_as(&app, &bia, "/calendar").await;
    assert!(
        calendar.contains("name=\"profile\""),
        "the booking panel offers profiles"
    );
    // Deleting: gone from the list, bookings keep their version.
    let (status, _) = send(
        &app,
        reqwest::Method::DELETE,
        Some(&ana),
        &format!("/api/v1/profiles/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (_, list) = get(&app, &bia, "/api/v1/profiles").await;
    assert!(list.as_array().unwrap().is_empty(), "{list}");
    let (_, mine) = get(&app, &bia, "/api/v1/reservations?mine=true").await;
    assert!(
        mine.as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == named["id"] && r["profile"]["number"] == 5),
        "{mine}"
    );
    let (status, gone) = book(&app, &bia, booking(5, None)).await;
    assert_eq!(status, 201);
    assert!(
        gone.get("profile").is_none(),
        "the default went with it: {gone}"
    );
    app.stop().await;
}

const GPU0: &str = "GPU-e0000000-0000-4000-8000-000000000000";
const GPU1: &str = "GPU-e1111111-1111-4111-8111-111111111111";

fn host_config() -> Value {
    let device = |uuid: &str, minor: u32| {
        json!({"uuid": uuid, "name": "NVIDIA H100 80GB HBM3", "minor_number": minor,
               "memory_total_mib": 81559, "memory_used_mib": 0, "gpu_util": 0, "mem_util": 0,
               "processes": []})
    };
    json!({"devices": [device(GPU0, 0), device(GPU1, 1)]})
}

pub(crate) fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A wheel of package `berthpkg` (`VALUE = "from-a-local-wheel"`), built here without network.
pub(crate) fn build_wheel(dir: &Path) -> std::path::PathBuf {
    let script = r#"
import base64, hashlib, sys, zipfile
path = sys.argv[1]
files = {
    "berthpkg/__init__.py": b'VALUE = "from-a-local-wheel"\n',
    "berthpkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: berthpkg\nVersion: 1.0\n",
    "berthpkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: berth-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
with zipfile.ZipFile(path, "w") as z:
    for name, data in files.items():
        z.writestr(name, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("berthpkg-1.0.dist-info/RECORD,,")
    z.writestr("berthpkg-1.0.dist-info/RECORD", "\n".join(record) + "\n")
"#;
    let wheel = dir.join("berthpkg-1.0-py3-none-any.whl");
    let status = std::process::Command::new("/usr/bin/python3")
        .args(["-c", script])
        .arg(&wheel)
        .status()
        .unwrap();
    assert!(status.success());
    set_mode(&wheel, 0o644);
    wheel
}

pub(crate) async fn environment_of(app: &TestApp, token: &str, id: &Value) -> Value {
    let (status, access) = get(app, token, &format!("/api/v1/reservations/{id}/access")).await;
    assert_eq!(status, 200, "{access}");
    access["environment"].clone()
}

async fn an_environment_is_prepared_ahead_cached_and_active_at_login(backend: Backend) {
    if !is_root() {
        eprintln!("skipped: needs root (users, sshd, builds as the holder)");
        return;
    }
    let floor = slot_floor(Utc::now());
    let (app, _db, clock) = spawn_app_with(backend, floor - Duration::minutes(1), |s| {
        s.prepare_ahead_minutes = 120;
    })
    .await;
    let admin = user_token(&app, "root-admin@example.org", PlatformRole::PlatformAdmin).await;
    let (_node, token) =
        telemetry::issue_node_token(&app.db, "gpu-env-01", Some(true), None, Utc::now())
            .await
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    set_mode(dir.path(), 0o755);
    write_json(&dir.path().join("nvml.json"), &host_config());
    let alice = UnixUser::create("bpa");
    let email = format!("{}@example.org", alice.name);
    let (alice_token, key) = holder(&app, &admin, &alice, dir.path()).await;
    let alice_id = user_id(&app, &email).await;
    let wheel = build_wheel(dir.path());
    let cache = dir.path().join("cache");
    let path = |rel: &str| dir.path().join(rel).to_str().unwrap().to_owned();
    let _agent = start_agent_with(
        &app.url(""),
        &token,
        &dir.path().join("nvml.json"),
        &[
            "--state-dir",
            &path("state"),
            "--env-dir",
            &path("leases"),
            "--env-cache-dir",
            cache.to_str().unwrap(),
            "--python",
            "/usr/bin/python3",
            "--grace-seconds",
            "2",
        ],
    );
    let sshd = Sshd::start(&dir.path().join("state"));
    let gpu_of = |uuid: &'static str| {
        let app = &app;
        move || async move {
            gpu::Entity::find()
                .filter(gpu::Column::Uuid.eq(uuid))
                .one(&app.db)
                .await
                .unwrap()
                .map(|g| g.id)
        }
    };
    let gpu1 = eventually("the agent's GPUs", gpu_of(GPU1)).await;
    let gpu0 = eventually("the agent's GPUs", gpu_of(GPU0)).await;

    // Alice's profile: a package from the wheel, a variable, a dotfile, a setup script that
    // counts its runs.
    let (status, profile) = post_json(
        &app,
        &alice_token,
        "/api/v1/profiles",
        &json!({
            "name": "research",
            "variables": [{"name": "MODEL_DIR", "value": "/data/models it's"}],
            "packages": [wheel.to_str().unwrap()],
            "setup_script": "echo run >> \"$HOME/setup-runs\"\npython -c 'import berthpkg' \n",
            "dotfiles": [{"path": ".config/berth/tool.toml", "content": "answer = 42\n"}],
            "default": true,
        }),
    )
    .await;
    assert_eq!(status, 201, "{profile}");
    let hash = profile["version"]["hash"].as_str().unwrap().to_owned();

    // Booked from the current slot: prepared at once, then active in her login shell.
    let (status, first) = book(
        &app,
        &alice_token,
        json!({"gpu_ids": [gpu1], "start": floor.to_rfc3339(),
               "end": (floor + Duration::minutes(45)).to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 201, "{first}");
    clock.set(Utc::now());
    let id = first["id"].clone();
    let started = std::time::Instant::now();
    let env = eventually_within("the environment ready", 180, || async {
        let env = environment_of(&app, &alice_token, &id).await;
        assert_ne!(env["state"], "failed", "{env}");
        (env["state"] == "ready").then_some(env)
    })
    .await;
    eprintln!("environment built and reported in {:?}", started.elapsed());
    assert_eq!(env["cached"], false, "{env}");
    assert_eq!(env["profile"]["name"], "research");
    let log =
        std::fs::read_to_string(cache.join(format!(".logs/{}-{hash}.log", alice.name))).unwrap();
    assert!(log.contains("Successfully installed berthpkg-1.0"), "{log}");
    let built_at = std::fs::metadata(cache.join(format!(".logs/{}-{hash}.log", alice.name)))
        .unwrap()
        .modified()
        .unwrap();
    let snippet = dir.path().join("berth.sh");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/profile.d/berth.sh"),
        &snippet,
    )
    .unwrap();
    set_mode(&snippet, 0o644);
    let login_shell = format!(
        "BERTH_LEASE_DIR={} . {}; python -c 'import berthpkg; print(berthpkg.VALUE)'; echo \"$MODEL_DIR\"; echo \"$BERTH_PROFILE\"; cat ~/.config/berth/tool.toml; echo \"$CUDA_VISIBLE_DEVICES\"",
        path("leases"),
        snippet.display()
    );
    let out = eventually("her login with the environment", || async {
        sshd.run_as(&alice.name, &key, &login_shell)
            .filter(|out| out.contains("from-a-local-wheel"))
    })
    .await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        vec![
            "from-a-local-wheel",
            "/data/models it's",
            "research v1",
            "answer = 42",
            GPU1
        ],
        "{out}"
    );

    // A second booking with the same profile on this node: ready from the cache, no rebuild.
    let (status, second) = book(
        &app,
        &alice_token,
        json!({"gpu_ids": [gpu1], "start": (floor + Duration::minutes(45)).to_rfc3339(),
               "end": (floor + Duration::minutes(60)).to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 201, "{second}");
    let env = eventually("the second booking ready", || async {
        let env = environment_of(&app, &alice_token, &second["id"]).await;
        (env["state"] == "ready").then_some(env)
    })
    .await;
    assert_eq!(env["cached"], true, "{env}");
    let runs = std::fs::read_to_string(format!("/home/{}/setup-runs", alice.name)).unwrap();
    assert_eq!(runs, "run\n", "the setup ran once");
    let modified = std::fs::metadata(cache.join(format!(".logs/{}-{hash}.log", alice.name)))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(modified, built_at, "no rebuild");

    // A profile whose script fails, booked for later: the holder is told before the start.
    let (status, broken) = post_json(
        &app,
        &alice_token,
        "/api/v1/profiles",
        &json!({"name": "broken", "setup_script": "echo 'cannot reach the dataset mirror' >&2\nexit 3\n"}),
    )
    .await;
    assert_eq!(status, 201, "{broken}");
    let later = floor + Duration::minutes(60);
    let (status, third) = book(
        &app,
        &alice_token,
        json!({"gpu_ids": [gpu0], "start": later.to_rfc3339(),
               "end": (later + Duration::minutes(30)).to_rfc3339(), "profile": broken["id"]}),
    )
    .await;
    assert_eq!(status, 201, "{third}");
    let env = eventually_within("the failure reported", 120, || async {
        let env = environment_of(&app, &alice_token, &third["id"]).await;
        (env["state"] == "failed").then_some(env)
    })
    .await;
    assert!(
        env["log"]
            .as_str()
            .unwrap()
            .contains("cannot reach the dataset mirror"),
        "{env}"
    );
    assert!(Utc::now() < later, "told before the start");
    let notices = notification_event::Entity::find()
        .filter(notification_event::Column::Kind.eq(EventKind::EnvironmentFailed))
        .filter(notification_event::Column::UserId.eq(alice_id))
        .all(&app.db)
        .await
        .unwrap();
    assert_eq!(notices.len(), 1, "told once");
    assert!(
        notices[0]
            .notice
            .contains("cannot reach the dataset mirror")
    );
    // The reservation page shows it in her language's words, with the log.
    let page = page_as(
        &app,
        &alice_token,
        &format!("/reservations/{}", third["id"]),
    )
    .await;
    assert!(
        page.contains("data-state=\"failed\""),
        "the page shows the failure"
    );
    app.stop().await;
}
