//! The workspace that follows its holder: the store (a directory, and moto's real S3 server)
//! saves only changed chunks, restores byte for byte, detects a corrupted chunk, enforces the
//! quota and refuses other users and forged tokens; and on two real nodes (two `berth agent`s
//! with separate roots, Unix users made by the test) a workspace written during a lease on node
//! A is restored on node B, with the profile's package, variable and dotfile there too; and
//! when node A's GPU falls off the bus mid-lease, the booking moves to node B, which waits for
//! node A's save before it opens.

use crate::env_profiles::{build_wheel, environment_of, set_mode};
use crate::helpers::*;
use berth_app::backend::entity::{gpu, notification_event, workspace_chunk, workspace_snapshot};
use berth_app::backend::telemetry;
use berth_app::backend::workspaces;
use berth_app::domain::notify::EventKind;
use berth_app::domain::schedule::slot_floor;
use berth_app::domain::user::PlatformRole;
use berth_server::agent::workspace::{self, Client, WorkspaceError};
use chrono::{Duration, Utc};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

crate::on_both_backends!(
    the_directory_store_saves_changes_only_and_restores_byte_for_byte,
    the_s3_store_passes_the_same_checks,
    a_workspace_follows_its_holder_to_another_node,
    a_failed_gpu_moves_the_lease_and_its_workspace_to_another_node,
);

/// Where the test's store keeps a chunk, so the test can damage it.
enum Store {
    Directory(PathBuf),
    S3(S3Server, &'static str),
}

const BUCKET: &str = "berth-workspaces";

fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Every entry under `dir`: path, kind, mode, bytes or link target.
fn tree(dir: &Path) -> Vec<(String, String, u32, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    for item in walkdir::WalkDir::new(dir).min_depth(1).sort_by_file_name() {
        let item = item.unwrap();
        let rel = item
            .path()
            .strip_prefix(dir)
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        let meta = std::fs::symlink_metadata(item.path()).unwrap();
        let mode = meta.permissions().mode() & 0o7777;
        if meta.is_symlink() {
            let target = std::fs::read_link(item.path()).unwrap();
            out.push((
                rel,
                "link".into(),
                0,
                target.to_str().unwrap().as_bytes().to_vec(),
            ));
        } else if meta.is_dir() {
            out.push((rel, "dir".into(), mode, vec![]));
        } else {
            out.push((
                rel,
                "file".into(),
                mode,
                std::fs::read(item.path()).unwrap(),
            ));
        }
    }
    out
}

fn write_workspace(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir.join("data/raw")).unwrap();
    std::fs::write(
        dir.join("data/raw/big.bin"),
        pseudo_random(6 * 1024 * 1024, 7),
    )
    .unwrap();
    std::fs::write(dir.join("train.py"), "print('epoch 1')\n").unwrap();
    std::fs::write(dir.join("config.yaml"), "lr: 0.001\n").unwrap();
    std::fs::write(dir.join("empty"), "").unwrap();
    std::fs::set_permissions(dir.join("train.py"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("data/raw/big.bin", dir.join("latest")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.join("outside")).unwrap();
}

async fn chunk_rows(app: &TestApp, user: i64) -> u64 {
    workspace_chunk::Entity::find()
        .filter(workspace_chunk::Column::UserId.eq(user))
        .count(&app.db)
        .await
        .unwrap()
}

/// Files under `dir` (the directory store's objects).
fn files_under(dir: &Path) -> usize {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter(|e| e.as_ref().is_ok_and(|e| e.file_type().is_file()))
        .count()
}

async fn store_checks(backend: Backend, store: Store) {
    let floor = slot_floor(Utc::now());
    let (app, _db, _clock) = spawn_app_with(backend, floor - Duration::minutes(1), |s| {
        s.workspace_quota_mib = 16;
        match &store {
            Store::Directory(dir) => s.workspace_store = Some(dir.display().to_string()),
            Store::S3(server, bucket) => {
                s.workspace_store = Some(format!("s3://{bucket}/site-a"));
                s.workspace_s3_endpoint = Some(server.endpoint.clone());
                s.workspace_s3_region = Some("us-east-1".into());
                s.workspace_s3_access_key_id = Some("test".into());
                s.workspace_s3_secret_access_key = Some("test".into());
            }
        }
    })
    .await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let bia = user_token(&app, "bia@example.org", PlatformRole::User).await;
    let ana_id = user_id(&app, "ana@example.org").await;
    let bia_id = user_id(&app, "bia@example.org").await;
    let gpu = first_gpu(&app, H100).await;
    let booking = |token: String, hours: i64| {
        let app = &app;
        async move {
            let (status, body) = book(
                app,
                &token,
                json!({"gpu_ids": [gpu], "start": (floor + Duration::hours(hours)).to_rfc3339(),
                       "end": (floor + Duration::hours(hours + 1)).to_rfc3339()}),
            )
            .await;
            assert_eq!(status, 201, "{body}");
            body["id"].as_i64().unwrap()
        }
    };
    let ana_booking = booking(ana.clone(), 1).await;
    let bia_booking = booking(bia.clone(), 2).await;
    let tokens =
        workspaces::tokens_for(&app.state, &[(ana_booking, ana_id), (bia_booking, bia_id)])
            .await
            .unwrap();
    let ana_client = Client::new(&app.url(""), &tokens[&ana_booking]);
    let bia_client = Client::new(&app.url(""), &tokens[&bia_booking]);
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("berth-workspace");
    write_workspace(&work);

    // Nothing saved yet: a restore makes an empty directory.
    let fresh = home.path().join("elsewhere");
    let restored = workspace::restore(&ana_client, &fresh, std::time::Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(restored.snapshot, None);
    assert!(fresh.is_dir());

    // The first save uploads every chunk once; links are kept as links, never followed.
    let first = workspace::save(&ana_client, &work).await.unwrap();
    assert_eq!(first.files, 4, "{first:?}");
    assert_eq!(first.bytes, 6 * 1024 * 1024 + 17 + 10);
    assert!(first.chunks >= 4, "{first:?}");
    assert_eq!(first.uploaded_chunks, first.chunks, "{first:?}");
    assert_eq!(chunk_rows(&app, ana_id).await, first.chunks as u64);
    if let Store::Directory(dir) = &store {
        assert_eq!(files_under(dir), first.chunks, "one object per chunk");
    }

    // One changed config file and one byte in the middle of the large file: only the chunks
    // around them are uploaded.
    std::fs::write(work.join("config.yaml"), "lr: 0.0003\n").unwrap();
    let mut big = std::fs::read(work.join("data/raw/big.bin")).unwrap();
    big[3 * 1024 * 1024] ^= 0xff;
    std::fs::write(work.join("data/raw/big.bin"), &big).unwrap();
    let second = workspace::save(&ana_client, &work).await.unwrap();
    assert!(
        (2..=3).contains(&second.uploaded_chunks),
        "only the changed chunks: {second:?}"
    );
    assert!(second.uploaded_bytes < 3 * 1024 * 1024, "{second:?}");
    assert_eq!(
        chunk_rows(&app, ana_id).await,
        (first.chunks + second.uploaded_chunks) as u64
    );
    let latest = workspace_snapshot::Entity::find_by_id(second.snapshot)
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.new_chunks, second.uploaded_chunks as i64);
    // Nothing changed: nothing uploaded.
    let third = workspace::save(&ana_client, &work).await.unwrap();
    assert_eq!(third.uploaded_chunks, 0, "{third:?}");

    // Restored elsewhere byte for byte (modes and links too); again: already up to date.
    let restored = workspace::restore(&ana_client, &fresh, std::time::Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(restored.snapshot, Some(third.snapshot));
    assert_eq!(tree(&fresh), tree(&work));
    assert_eq!(
        std::fs::read_link(fresh.join("outside")).unwrap(),
        Path::new("/etc/passwd")
    );
    let again = workspace::restore(&ana_client, &fresh, std::time::Duration::ZERO)
        .await
        .unwrap();
    assert!(again.unchanged, "{again:?}");
    // A directory that differs is kept beside as `.previous`, chunks it holds are reused.
    std::fs::write(fresh.join("train.py"), "print('local edit')\n").unwrap();
    let back = workspace::restore(&ana_client, &fresh, std::time::Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(back.downloaded_chunks, 1, "{back:?}");
    assert_eq!(tree(&fresh), tree(&work));
    let previous = home.path().join("elsewhere.previous");
    assert_eq!(
        std::fs::read_to_string(previous.join("train.py")).unwrap(),
        "print('local edit')\n"
    );

    // The API: the owner sees the kept snapshots and the quota.
    let (status, mine) = get(&app, &ana, "/api/v1/me/workspace").await;
    assert_eq!(status, 200, "{mine}");
    assert_eq!(mine["quota_bytes"], 16 * 1024 * 1024);
    assert_eq!(mine["dir"], "berth-workspace");
    assert_eq!(mine["snapshots"].as_array().unwrap().len(), 3, "{mine}");
    assert_eq!(mine["snapshots"][0]["id"], third.snapshot);

    // Another user's token cannot read her chunks or manifest; forged tokens are refused.
    let hash = latest_hash(&app, ana_id).await;
    let (status, _) = raw_get(
        &app,
        &tokens[&bia_booking],
        &format!("/api/v1/workspace/chunks/{hash}"),
    )
    .await;
    assert_eq!(status, 404);
    let bia_dir = home.path().join("bia");
    let nothing = workspace::restore(&bia_client, &bia_dir, std::time::Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(nothing.snapshot, None, "bia has saved nothing");
    std::fs::remove_dir(&bia_dir).unwrap();
    let forged =
        tokens[&ana_booking].replace(&format!(".{ana_booking}."), &format!(".{bia_booking}."));
    for token in [forged.as_str(), "bws1.1.00", "berth_x", ""] {
        let (status, _) = raw_get(&app, token, "/api/v1/workspace/latest").await;
        assert_eq!(status, 401, "{token}");
    }
    // A chunk whose bytes do not match its name, a manifest leaving the workspace: 422.
    let bia_token = &tokens[&bia_booking];
    let wrong = client()
        .put(app.url(&format!("/api/v1/workspace/chunks/{}", "a".repeat(64))))
        .bearer_auth(bia_token)
        .body("not those bytes");
    let (status, body) = answer(wrong).await;
    assert_eq!(
        (status, &body["code"]),
        (422, &json!("chunk_mismatch")),
        "{body}"
    );
    let file = |path: &str| json!({"entries": [{"path": path, "kind": "file", "mode": 420, "size": 1, "chunks": [hash]}]});
    let commit = |body: Value| {
        client()
            .post(app.url("/api/v1/workspace/snapshots"))
            .bearer_auth(bia_token)
            .json(&body)
    };
    let (status, body) = answer(commit(file("../../etc/cron.d/x"))).await;
    assert_eq!(
        (status, &body["code"]),
        (422, &json!("bad_manifest")),
        "{body}"
    );
    // Naming her chunk in a manifest does not give it to bia.
    let (status, body) = answer(commit(file("x"))).await;
    assert_eq!(
        (status, &body["code"]),
        (422, &json!("chunk_missing")),
        "{body}"
    );

    // Over the quota: refused with both sizes, nothing stored, the holder told.
    let rows_before = chunk_rows(&app, ana_id).await;
    std::fs::write(
        work.join("data/huge.bin"),
        pseudo_random(10 * 1024 * 1024, 9),
    )
    .unwrap();
    let err = workspace::save(&ana_client, &work).await.unwrap_err();
    match &err {
        WorkspaceError::Portal { status, message } => {
            assert_eq!(*status, 422);
            assert!(
                message.contains("17 MiB") && message.contains("16 MiB"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(chunk_rows(&app, ana_id).await, rows_before);
    let told = notification_event::Entity::find()
        .filter(notification_event::Column::Kind.eq(EventKind::WorkspaceNotSaved))
        .filter(notification_event::Column::UserId.eq(ana_id))
        .count(&app.db)
        .await
        .unwrap();
    assert_eq!(told, 1);
    std::fs::remove_file(work.join("data/huge.bin")).unwrap();

    // A chunk damaged in the store is caught on restore; the directory stays as it was.
    let key = format!("users/{ana_id}/chunks/{}/{hash}", &hash[..2]);
    match &store {
        Store::Directory(dir) => std::fs::write(dir.join(&key), b"bit rot").unwrap(),
        Store::S3(server, bucket) => {
            server
                .overwrite(bucket, &format!("site-a/{key}"), b"bit rot".to_vec())
                .await;
        }
    }
    let target = home.path().join("third-node");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(target.join("notes.txt"), "keep me\n").unwrap();
    let err = workspace::restore(&ana_client, &target, std::time::Duration::ZERO)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, WorkspaceError::Corrupted { hash: h, .. } if *h == hash),
        "{err}"
    );
    assert!(err.to_string().contains("corrupted"), "{err}");
    assert_eq!(
        std::fs::read_to_string(target.join("notes.txt")).unwrap(),
        "keep me\n"
    );
    assert_eq!(
        std::fs::read_dir(home.path()).unwrap().count(),
        4,
        "no half-built tree left"
    );
    app.stop().await;
}

/// A chunk of `user`'s latest snapshot (the first of its largest file).
async fn latest_hash(app: &TestApp, user: i64) -> String {
    let row = workspace_snapshot::Entity::find()
        .filter(workspace_snapshot::Column::UserId.eq(user))
        .all(&app.db)
        .await
        .unwrap()
        .into_iter()
        .max_by_key(|r| r.id)
        .unwrap();
    let manifest: berth_app::domain::workspace::Manifest =
        serde_json::from_str(&row.manifest).unwrap();
    manifest
        .entries
        .iter()
        .max_by_key(|e| e.size)
        .unwrap()
        .chunks[0]
        .clone()
}

async fn raw_get(app: &TestApp, token: &str, path: &str) -> (u16, Vec<u8>) {
    let response = client()
        .get(app.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (
        response.status().as_u16(),
        response.bytes().await.unwrap().to_vec(),
    )
}

async fn the_directory_store_saves_changes_only_and_restores_byte_for_byte(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    store_checks(backend, Store::Directory(dir.path().join("store"))).await;
}

async fn the_s3_store_passes_the_same_checks(backend: Backend) {
    let server = S3Server::start(BUCKET).await;
    store_checks(backend, Store::S3(server, BUCKET)).await;
}

const A0: &str = "GPU-f0000000-0000-4000-8000-00000000000a";
const B0: &str = "GPU-f0000000-0000-4000-8000-00000000000b";

fn node_config(uuid: &str, xids: &[u64]) -> Value {
    json!({"devices": [{"uuid": uuid, "name": "NVIDIA H100 80GB HBM3", "minor_number": 0,
           "memory_total_mib": 81559, "memory_used_mib": 0, "gpu_util": 0, "mem_util": 0,
           "processes": [], "xid_events": xids}]})
}

/// Two nodes (one agent each, with separate state, lease, cache and NVML roots) with one H100
/// each; node B's agent lets holders in `early_b` seconds early. Answers the agents and the
/// GPUs' ids.
async fn start_nodes(app: &TestApp, root: &Path, early_b: &str) -> (Vec<AgentProcess>, i64, i64) {
    let mut agents = Vec::new();
    for (name, uuid) in [("ws-node-a", A0), ("ws-node-b", B0)] {
        let node_root = root.join(name);
        std::fs::create_dir_all(&node_root).unwrap();
        set_mode(&node_root, 0o755);
        write_json(&node_root.join("nvml.json"), &node_config(uuid, &[]));
        let (_node, node_token) =
            telemetry::issue_node_token(&app.db, name, Some(true), None, Utc::now())
                .await
                .unwrap();
        let path = |rel: &str| node_root.join(rel).to_str().unwrap().to_owned();
        agents.push(start_agent_with(
            &app.url(""),
            &node_token,
            &node_root.join("nvml.json"),
            &[
                "--state-dir",
                &path("state"),
                "--env-dir",
                &path("leases"),
                "--env-cache-dir",
                &path("cache"),
                "--python",
                "/usr/bin/python3",
                "--grace-seconds",
                "1",
                "--early-access-seconds",
                if name == "ws-node-b" { early_b } else { "0" },
            ],
        ));
    }
    let gpu_of = |uuid: &'static str| {
        move || async move {
            gpu::Entity::find()
                .filter(gpu::Column::Uuid.eq(uuid))
                .one(&app.db)
                .await
                .unwrap()
                .map(|g| g.id)
        }
    };
    let gpu_a = eventually("node A's GPU", gpu_of(A0)).await;
    let gpu_b = eventually("node B's GPU", gpu_of(B0)).await;
    (agents, gpu_a, gpu_b)
}

/// Runs `script` in `user`'s login environment on a node whose agent writes `leases`.
fn as_holder(user: &UnixUser, leases: &Path, script: &str) -> String {
    let snippet = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/profile.d/berth.sh");
    let gid = nix::unistd::User::from_name(&user.name)
        .unwrap()
        .unwrap()
        .gid
        .as_raw();
    let out = std::process::Command::new("setpriv")
        .args([
            &format!("--reuid={}", user.uid),
            &format!("--regid={gid}"),
            "--init-groups",
            "--",
            "env",
            "-i",
            &format!("HOME=/home/{}", user.name),
            "PATH=/usr/local/bin:/usr/bin:/bin",
            &format!("BERTH_LEASE_DIR={}", leases.display()),
            "bash",
            "-c",
        ])
        .arg(format!(". {}; cd \"$HOME\"; {script}", snippet.display()))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

async fn a_workspace_follows_its_holder_to_another_node(backend: Backend) {
    if !is_root() {
        eprintln!("skipped: needs root (users, builds and saves as the holder)");
        return;
    }
    let floor = slot_floor(Utc::now());
    let (app, _db, clock) = spawn_app_with(backend, Utc::now(), |s| {
        s.prepare_ahead_minutes = 120;
    })
    .await;
    let admin = user_token(&app, "ws-admin@example.org", PlatformRole::PlatformAdmin).await;
    let root = tempfile::tempdir().unwrap();
    set_mode(root.path(), 0o755);
    let wheel = build_wheel(root.path());
    let user = UnixUser::create("bws");
    let (token, _key) = holder(&app, &admin, &user, root.path()).await;
    let user_id = user_id(&app, &format!("{}@example.org", user.name)).await;
    let (agents, gpu_a, gpu_b) = start_nodes(&app, root.path(), "7200").await;
    let (status, profile) = post_json(
        &app,
        &token,
        "/api/v1/profiles",
        &json!({
            "name": "research",
            "variables": [{"name": "MODEL_DIR", "value": "/data/models"}],
            "packages": [wheel.to_str().unwrap()],
            "dotfiles": [{"path": ".config/berth/tool.toml", "content": "answer = 42\n"}],
            "default": true,
        }),
    )
    .await;
    assert_eq!(status, 201, "{profile}");

    // A lease on node A: the environment is built, the holder writes into her workspace.
    let (status, first) = book(
        &app,
        &token,
        json!({"gpu_ids": [gpu_a], "start": floor.to_rfc3339(),
               "end": (floor + Duration::minutes(45)).to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 201, "{first}");
    eventually_within("the environment on node A", 180, || async {
        let env = environment_of(&app, &token, &first["id"]).await;
        assert_ne!(env["state"], "failed", "{env}");
        (env["state"] == "ready").then_some(())
    })
    .await;
    let leases_a = root.path().join("ws-node-a/leases");
    let leases_b = root.path().join("ws-node-b/leases");
    let env_file = |leases: &Path| {
        std::fs::read_to_string(leases.join(format!("{}.env", user.name))).unwrap_or_default()
    };
    eventually("access on node A, with the environment", || async {
        env_file(&leases_a).contains("BERTH_PROFILE").then_some(())
    })
    .await;
    let home = PathBuf::from(format!("/home/{}", user.name));
    let work = home.join("berth-workspace");
    assert!(work.is_dir(), "restored (empty) before access opened");
    let written = as_holder(
        &user,
        &leases_a,
        "mkdir -p berth-workspace/run && python -c 'import os; open(\"berth-workspace/run/weights.bin\", \"wb\").write(os.urandom(3 << 20))' && echo 'step: 1200' > berth-workspace/run/state.yaml && ln -s run/state.yaml berth-workspace/current && echo ok",
    );
    assert!(
        written.trim_end().ends_with("ok"),
        "{written}\n{}",
        env_file(&leases_a)
    );
    let on_a = tree(&work);

    // The lease ends (the portal's clock passes its end: it leaves node A's schedule): access
    // closes and the workspace is saved from node A.
    clock.set(floor + Duration::minutes(46));
    let saved = eventually_within("the save at the end on node A", 60, || async {
        workspace_snapshot::Entity::find()
            .filter(workspace_snapshot::Column::UserId.eq(user_id))
            .one(&app.db)
            .await
            .unwrap()
    })
    .await;
    assert_eq!(saved.reservation_id, first["id"].as_i64());
    assert_eq!(saved.files, 2);
    // Node A's copy goes away (a node's local disk does not follow; the saved copy does).
    std::fs::remove_dir_all(&work).unwrap();

    // A lease on node B (whose agent lets holders in two hours early): prepared there, the
    // workspace restored before access opens.
    let (status, second) = book(
        &app,
        &token,
        json!({"gpu_ids": [gpu_b], "start": (floor + Duration::minutes(60)).to_rfc3339(),
               "end": (floor + Duration::minutes(75)).to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 201, "{second}");
    eventually_within("the environment on node B", 180, || async {
        let env = environment_of(&app, &token, &second["id"]).await;
        assert_ne!(env["state"], "failed", "{env}");
        (env["state"] == "ready").then_some(())
    })
    .await;
    eventually_within("access on node B, with the environment", 60, || async {
        env_file(&leases_b).contains("BERTH_PROFILE").then_some(())
    })
    .await;
    assert_eq!(tree(&work), on_a, "byte for byte");
    let out = as_holder(
        &user,
        &leases_b,
        "python -c 'import berthpkg; print(berthpkg.VALUE)'; echo \"$MODEL_DIR\"; cat ~/.config/berth/tool.toml; cat berth-workspace/current",
    );
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        vec![
            "from-a-local-wheel",
            "/data/models",
            "answer = 42",
            "step: 1200"
        ],
        "{out}"
    );
    drop(agents);
    app.stop().await;
}

async fn a_failed_gpu_moves_the_lease_and_its_workspace_to_another_node(backend: Backend) {
    if !is_root() {
        eprintln!("skipped: needs root (users, builds and saves as the holder)");
        return;
    }
    let floor = slot_floor(Utc::now());
    let (app, _db, _clock) = spawn_app_with(backend, Utc::now(), |s| {
        s.prepare_ahead_minutes = 120;
    })
    .await;
    let admin = user_token(&app, "wf-admin@example.org", PlatformRole::PlatformAdmin).await;
    let root = tempfile::tempdir().unwrap();
    set_mode(root.path(), 0o755);
    let wheel = build_wheel(root.path());
    let user = UnixUser::create("bwf");
    let (token, _key) = holder(&app, &admin, &user, root.path()).await;
    let user_id = user_id(&app, &format!("{}@example.org", user.name)).await;
    let (agents, gpu_a, gpu_b) = start_nodes(&app, root.path(), "0").await;
    let (status, profile) = post_json(
        &app,
        &token,
        "/api/v1/profiles",
        &json!({
            "name": "failover",
            "variables": [{"name": "RUN", "value": "moved"}],
            "packages": [wheel.to_str().unwrap()],
            "default": true,
        }),
    )
    .await;
    assert_eq!(status, 201, "{profile}");
    // A later booking on node B has the environment prepared there ahead.
    let (status, later) = book(
        &app,
        &token,
        json!({"gpu_ids": [gpu_b], "start": (floor + Duration::minutes(60)).to_rfc3339(),
               "end": (floor + Duration::minutes(75)).to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 201, "{later}");
    eventually_within("the environment on node B", 180, || async {
        let env = environment_of(&app, &token, &later["id"]).await;
        assert_ne!(env["state"], "failed", "{env}");
        (env["state"] == "ready").then_some(())
    })
    .await;
    let wallet_before = balance(&app, &token).await;
    let (status, booked) = book(
        &app,
        &token,
        json!({"gpu_ids": [gpu_a], "start": floor.to_rfc3339(),
               "end": (floor + Duration::minutes(45)).to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 201, "{booked}");
    let id = booked["id"].as_i64().unwrap();
    let leases_a = root.path().join("ws-node-a/leases");
    let leases_b = root.path().join("ws-node-b/leases");
    let env_file = |leases: &Path| {
        std::fs::read_to_string(leases.join(format!("{}.env", user.name))).unwrap_or_default()
    };
    eventually_within("access on node A, with the environment", 180, || async {
        env_file(&leases_a).contains("BERTH_PROFILE").then_some(())
    })
    .await;
    let work = PathBuf::from(format!("/home/{}/berth-workspace", user.name));
    let written = as_holder(
        &user,
        &leases_a,
        "mkdir -p berth-workspace && python -c 'import os; open(\"berth-workspace/weights.bin\", \"wb\").write(os.urandom(160 << 20))' && echo 'epoch: 7' > berth-workspace/checkpoint.yaml && echo ok",
    );
    assert!(written.trim_end().ends_with("ok"), "{written}");
    let on_a = tree(&work);

    // Node A's GPU falls off the bus (the fake NVML library reports XID 79).
    write_json(
        &root.path().join("ws-node-a/nvml.json"),
        &node_config(A0, &[79]),
    );
    // The booking (or its rest) moves to node B's GPU.
    let (moved_id, moved) = eventually_within("the booking on node B", 60, || async {
        let (_, view) = get(&app, &token, &format!("/api/v1/reservations/{id}")).await;
        let current = match view["moved_to"].as_i64() {
            Some(rest) => {
                get(&app, &token, &format!("/api/v1/reservations/{rest}"))
                    .await
                    .1
            }
            None => view,
        };
        (current["gpu_ids"] == json!([gpu_b])).then(|| (current["id"].as_i64().unwrap(), current))
    })
    .await;
    assert_eq!(moved["node_name"], "ws-node-b", "{moved}");
    // Node A closes the lease and saves the workspace at the failure; node B (its environment
    // cached there) waits for that save, restores it and only then opens.
    let saved_when_b_opened =
        eventually_within("access on node B, with the environment", 180, || async {
            if !env_file(&leases_b).contains("BERTH_PROFILE") {
                return None;
            }
            Some(
                workspace_snapshot::Entity::find()
                    .filter(workspace_snapshot::Column::UserId.eq(user_id))
                    .filter(workspace_snapshot::Column::ReservationId.eq(id))
                    .one(&app.db)
                    .await
                    .unwrap(),
            )
        })
        .await;
    assert!(
        saved_when_b_opened.is_some(),
        "node B opened before node A's save"
    );
    // The agent tells the portal with its next report, a moment after it opened the lease.
    let granted_on_b = eventually_within("granted on node B", 60, || async {
        berth_app::backend::entity::gpu_access_event::Entity::find()
            .filter(berth_app::backend::entity::gpu_access_event::Column::GpuId.eq(gpu_b))
            .filter(berth_app::backend::entity::gpu_access_event::Column::Kind.eq("granted"))
            .one(&app.db)
            .await
            .unwrap()
    })
    .await;
    assert_eq!(granted_on_b.reservation_id, Some(moved_id));
    assert_eq!(tree(&work), on_a);
    let out = as_holder(
        &user,
        &leases_b,
        "python -c 'import berthpkg; print(berthpkg.VALUE)'; echo \"$RUN\"; cat berth-workspace/checkpoint.yaml",
    );
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        vec!["from-a-local-wheel", "moved", "epoch: 7"],
        "{out}"
    );
    // Told, with the new connect line; the minutes lost came back.
    crate::notify::settle(&app, Utc::now().max(app.state.now())).await;
    let inbox = berth_app::backend::db::notify::latest_notices(&app.db, user_id, 100)
        .await
        .unwrap();
    let told: Vec<_> = inbox
        .iter()
        .filter(|item| item.kind == EventKind::BookingMoved)
        .collect();
    assert_eq!(told.len(), 1, "{inbox:#?}");
    assert!(
        told[0]
            .notice
            .target
            .as_deref()
            .is_some_and(|line| line.starts_with(&format!("ssh {}@", user.name))),
        "{:?}",
        told[0].notice
    );
    let refund = told[0].notice.amount_minor.unwrap_or(0);
    assert!(refund > 0, "the slot of the move is refunded");
    let price = booked["price_minor"].as_i64().unwrap();
    assert_eq!(balance(&app, &token).await, wallet_before - price + refund);
    assert_books_balance(&app).await;
    drop(agents);
    app.stop().await;
}
