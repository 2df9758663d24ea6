//! GPU telemetry end to end: a fake `libnvidia-ml.so` (the `berth-fake-nvml` crate) read by the
//! real `berth agent` through nvml-wrapper, reported to the portal, and seen in the JSON API,
//! `/metrics` and the GPU page; node tokens and bad payloads; an agent that outlives a portal
//! outage; rollups and pruning on an injected clock; inventory sync.

use crate::helpers::*;
use berth_app::backend::clock::{Clock, ManualClock};
use berth_app::backend::db::telemetry as store;
use berth_app::backend::entity::{gpu, gpu_event, gpu_rollup, gpu_sample};
use berth_app::backend::state::TelemetrySettings;
use berth_app::backend::telemetry;
use berth_app::domain::telemetry::{GpuInfo, Registration, Report, SourceKind};
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, Duration, DurationRound, Utc};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};
use std::path::Path;

crate::on_both_backends!(
    fake_nvml_values_reach_the_api_metrics_and_page,
    node_tokens_and_payloads_are_checked,
    the_agent_outlives_a_portal_outage,
    rollups_and_pruning_follow_an_injected_clock,
    inventory_sync_flags_vanished_gpus,
    demo_nodes_get_simulated_values,
    platform_admins_issue_and_revoke_node_tokens_on_the_page,
    gpus_an_agent_reports_first_wait_for_a_platform_admin,
    invented_http_methods_share_one_metrics_series,
);

const GPU0: &str = "GPU-11111111-2222-3333-4444-555555555555";
const GPU1: &str = "GPU-66666666-7777-8888-9999-000000000000";

fn fake_config(xids: &[u64]) -> Value {
    json!({
        "driver_version": "550.54.15",
        "devices": [
            {
                "uuid": GPU0, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": "00000000:17:00.0",
                "memory_total_mib": 81559, "memory_used_mib": 40000, "gpu_util": 87, "mem_util": 40,
                "temperature_c": 61, "power_mw": 312000, "power_limit_mw": 700000,
                "sm_clock_mhz": 1980, "throttle_reasons": 4, "ecc_corrected": 3,
                "ecc_uncorrected": 0, "processes": [{"pid": 4242, "used_memory_mib": 39000}],
                "xid_events": xids
            },
            {
                "uuid": GPU1, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": "00000000:2A:00.0",
                "memory_total_mib": 81559, "memory_used_mib": 3, "gpu_util": 0, "mem_util": 0,
                "temperature_c": 34, "power_mw": 71000, "power_limit_mw": 700000,
                "sm_clock_mhz": 345, "throttle_reasons": 1, "ecc_corrected": 0,
                "ecc_uncorrected": 0, "processes": []
            }
        ]
    })
}

/// `berth agent` reporting only (no lease enforcement on the test host).
fn start_agent(portal: &str, token: &str, config: &Path) -> AgentProcess {
    start_agent_with(portal, token, config, &["--no-access"])
}

async fn gpu_id(app: &TestApp, uuid: &str) -> i64 {
    gpu::Entity::find()
        .filter(gpu::Column::Uuid.eq(uuid))
        .one(&app.db)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("GPU {uuid} registered"))
        .id
}

async fn latest_point(app: &TestApp, token: &str, id: i64) -> Option<Value> {
    let (status, body) = get(app, token, &format!("/api/v1/gpus/{id}/telemetry")).await;
    assert_eq!(status, 200, "{body}");
    body["points"].as_array()?.last().cloned()
}

async fn fake_nvml_values_reach_the_api_metrics_and_page(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let (_, token) =
        telemetry::issue_node_token(&app.db, "gpu-test-01", Some(true), None, Utc::now())
            .await
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("fake-nvml.json");
    write_json(&config, &fake_config(&[]));
    let _agent = start_agent(&app.url(""), &token, &config);
    let viewer = user_token(&app, "viewer@example.org", PlatformRole::User).await;

    let point = eventually("the first samples", || async {
        let id = gpu::Entity::find()
            .filter(gpu::Column::Uuid.eq(GPU1))
            .one(&app.db)
            .await
            .unwrap()?
            .id;
        latest_point(&app, &viewer, id).await?;
        latest_point(&app, &viewer, gpu_id(&app, GPU0).await).await
    })
    .await;
    for (key, expected) in [
        ("gpu_util", 87),
        ("mem_util", 40),
        ("memory_used_mib", 40000),
        ("temperature_c", 61),
        ("power_mw", 312_000),
        ("power_limit_mw", 700_000),
        ("sm_clock_mhz", 1980),
        ("throttle_reasons", 4),
        ("ecc_corrected", 3),
        ("ecc_uncorrected", 0),
    ] {
        assert_eq!(point[key], expected, "{key} in {point}");
    }
    let idle = latest_point(&app, &viewer, gpu_id(&app, GPU1).await)
        .await
        .unwrap();
    assert_eq!(idle["gpu_util"], 0);
    assert_eq!(idle["temperature_c"], 34);

    // The inventory: both GPUs on the node, with model, memory and PCI bus id as NVML said.
    let gpu0 = gpu::Entity::find_by_id(gpu_id(&app, GPU0).await)
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(gpu0.model, "NVIDIA H100 80GB HBM3");
    assert_eq!(gpu0.memory_mib, 81559);
    assert_eq!(gpu0.pci_bus_id.as_deref(), Some("00000000:17:00.0"));
    let (_, history) = get(
        &app,
        &viewer,
        &format!("/api/v1/gpus/{}/telemetry", gpu0.id),
    )
    .await;
    assert_eq!(history["source"], "nvml");
    assert_eq!(history["simulated"], false);
    assert_eq!(history["resolution"], "raw");

    // Processes and the latest reading.
    let live = store::live_gpus(&app.db, Some(gpu0.id)).await.unwrap();
    assert_eq!(live[0].processes.len(), 1);
    assert_eq!(live[0].processes[0].pid, 4242);
    assert_eq!(live[0].processes[0].used_memory_mib, Some(39000));

    // An XID set in the fake arrives as an event; the throttle mask (SW power cap) as another.
    write_json(&config, &fake_config(&[79]));
    let events = eventually("the XID event", || async {
        let (_, events) = get(&app, &viewer, &format!("/api/v1/gpus/{}/events", gpu0.id)).await;
        let list = events.as_array()?.clone();
        list.iter()
            .any(|e| e["kind"] == "xid" && e["code"] == 79)
            .then_some(list)
    })
    .await;
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "throttle" && e["code"] == 4),
        "{events:?}"
    );
    assert!(events.iter().any(|e| e["kind"] == "added"), "{events:?}");

    // /metrics: dcgm-exporter names, labelled by gpu, UUID and node.
    let metrics = client()
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = |name: &str| {
        metrics
            .lines()
            .find(|l| l.starts_with(&format!("{name}{{")) && l.contains(GPU0))
            .unwrap_or_else(|| panic!("{name} for {GPU0} in:\n{metrics}"))
            .to_owned()
    };
    let util = line("DCGM_FI_DEV_GPU_UTIL");
    assert!(
        util.contains("gpu=\"0\"") && util.contains("node=\"gpu-test-01\""),
        "{util}"
    );
    assert!(util.ends_with(" 87.0"), "{util}");
    assert!(line("DCGM_FI_DEV_FB_USED").ends_with(" 40000.0"));
    assert!(line("DCGM_FI_DEV_GPU_TEMP").ends_with(" 61.0"));
    assert!(line("DCGM_FI_DEV_POWER_USAGE").ends_with(" 312.0"));
    assert!(line("DCGM_FI_DEV_XID_ERRORS").ends_with(" 79.0"));
    assert!(
        metrics.contains("berth_http_requests_total{"),
        "portal metrics"
    );
    assert!(metrics.contains("berth_node_up{node=\"gpu-test-01\",source=\"nvml\"} 1"));

    // The GPU page shows the same values.
    app.sign_in("user").await;
    let (status, page) = app.get_text(&format!("/gpus/{}", gpu0.id)).await;
    assert_eq!(status, 200);
    assert!(page.contains(GPU0), "UUID on the page");
    assert!(page.contains("4242"), "process on the page");
    assert!(page.contains("<svg"), "charts on the page");

    // The page's refresh asks for the same board as HTML, in the viewer's language.
    let id = gpu0.id.to_string();
    let board = board_html(&app, &id).await;
    assert!(board.contains(GPU0) && board.contains("4242"), "{board}");
    assert!(board.contains("<svg") && board.contains("Current values"));
    assert!(!board.contains("<html"), "a fragment, not a page");
    app.client
        .post(app.url("/locale"))
        .form(&[("locale", "pt-BR"), ("return_to", "/")])
        .send()
        .await
        .unwrap();
    assert!(board_html(&app, &id).await.contains("Valores atuais"));
    let (status, _) = server_fn(&app, "/api/get_gpu_board", &[("id", "987654321")]).await;
    assert_eq!(status, 404, "an unknown GPU");
    app.stop().await;
}

async fn board_html(app: &TestApp, id: &str) -> String {
    let (status, board) = server_fn(app, "/api/get_gpu_board", &[("id", id)]).await;
    assert_eq!(status, 200, "{board}");
    board.as_str().unwrap().to_owned()
}

fn registration(uuids: &[&str]) -> Value {
    json!({
        "hostname": "host", "driver_version": "550.54.15", "source": "nvml",
        "interval_seconds": 5,
        "gpus": uuids.iter().enumerate().map(|(i, uuid)| json!({
            "uuid": uuid, "name": "NVIDIA L4", "pci_bus_id": null,
            "memory_total_mib": 23034, "device_index": i
        })).collect::<Vec<_>>()
    })
}

fn sample(uuid: &str, at: DateTime<Utc>, util: i64) -> Value {
    json!({"uuid": uuid, "at": at.to_rfc3339(), "gpu_util": util, "temperature_c": 50})
}

async fn sample_count(app: &TestApp) -> u64 {
    gpu_sample::Entity::find().count(&app.db).await.unwrap()
}

async fn node_tokens_and_payloads_are_checked(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let now = Utc::now();
    let (_, a) = telemetry::issue_node_token(&app.db, "node-a", Some(true), None, now)
        .await
        .unwrap();
    let (_, b) = telemetry::issue_node_token(&app.db, "node-b", Some(true), None, now)
        .await
        .unwrap();
    let register = "/api/v1/agent/register";
    let report = "/api/v1/agent/report";
    assert_eq!(
        post_json(&app, &a, register, &registration(&["GPU-a1"]))
            .await
            .0,
        200
    );
    assert_eq!(
        post_json(&app, &b, register, &registration(&["GPU-b1"]))
            .await
            .0,
        200
    );

    // Tokens: none, unknown, or a user's token → 401.
    let ok = json!({"samples": [sample("GPU-a1", now, 5)]});
    for token in ["", "berth_not-a-token"] {
        assert_eq!(
            post_json(&app, token, report, &ok).await.0,
            401,
            "token {token:?}"
        );
    }
    let user = user_token(&app, "someone@example.org", PlatformRole::PlatformAdmin).await;
    assert_eq!(post_json(&app, &user, report, &ok).await.0, 401);
    assert_eq!(sample_count(&app).await, 0);

    // Another node's GPU → 409 naming it, and nothing of the report is stored.
    let mixed = json!({"samples": [sample("GPU-a1", now, 5), sample("GPU-b1", now, 5)]});
    let (status, body) = post_json(&app, &a, report, &mixed).await;
    assert_eq!(status, 409);
    assert_eq!(body["code"], "gpu_of_another_node", "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("GPU-b1"),
        "{body}"
    );
    assert_eq!(
        post_json(&app, &a, register, &registration(&["GPU-a1", "GPU-b1"]))
            .await
            .0,
        409
    );
    assert_eq!(sample_count(&app).await, 0);

    // Bad content → 4xx naming the field, nothing stored.
    let bad: [(Value, &str); 5] = [
        (
            json!({"samples": [sample("GPU-a1", now, 5), sample("GPU-a1", now, 101)]}),
            "samples[1].gpu_util",
        ),
        (
            json!({"samples": [sample("GPU-a1", now + Duration::hours(1), 5)]}),
            "samples[0].at",
        ),
        (
            json!({"samples": [sample("GPU-a1", now - Duration::days(2), 5)]}),
            "samples[0].at",
        ),
        (json!({"samples": [sample("GPU-zz", now, 5)]}), "uuid"),
        (
            json!({"samples": [{"uuid": "GPU-a1", "at": "yesterday"}]}),
            "body",
        ),
    ];
    for (body, field) in bad {
        let (status, answer) = post_json(&app, &a, report, &body).await;
        assert_eq!(status, 422, "{body} → {answer}");
        assert_eq!(answer["field"], field, "{answer}");
    }
    let garbage = client()
        .post(app.url(report))
        .bearer_auth(&a)
        .header("content-type", "application/json")
        .body("{\"samples\": [")
        .send()
        .await
        .unwrap();
    assert_eq!(garbage.status().as_u16(), 422);
    let oversized = client()
        .post(app.url(report))
        .bearer_auth(&a)
        .header("content-type", "application/json")
        .body(vec![b' '; 5 * 1024 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(oversized.status().as_u16(), 413);
    assert_eq!(sample_count(&app).await, 0);

    // A good report is stored once, even when resent.
    assert_eq!(post_json(&app, &a, report, &ok).await.0, 200);
    let (status, again) = post_json(&app, &a, report, &ok).await;
    assert_eq!((status, &again["samples"]), (200, &json!(0)));
    assert_eq!(sample_count(&app).await, 1);

    // A revoked token stops working.
    let node_a = store::node_states(&app.db)
        .await
        .unwrap()
        .into_iter()
        .find(|n| n.name == "node-a")
        .unwrap();
    store::revoke_node_tokens(&app.db, node_a.node_id, Utc::now())
        .await
        .unwrap();
    assert_eq!(post_json(&app, &a, report, &ok).await.0, 401);
    app.stop().await;
}

async fn the_agent_outlives_a_portal_outage(backend: Backend) {
    let db = TestDatabase::create(backend).await;
    let first = spawn_with(test_settings(&db)).await;
    let (_, token) =
        telemetry::issue_node_token(&first.db, "gpu-test-02", Some(true), None, Utc::now())
            .await
            .unwrap();
    let addr = first.addr;
    first.stop().await;

    // The portal is down: the agent reads, buffers and retries.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("fake-nvml.json");
    write_json(&config, &fake_config(&[]));
    let _agent = start_agent(&format!("http://{addr}"), &token, &config);
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    let back_at = Utc::now();

    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .expect("the same port again");
    let app = spawn_with_listener(test_settings(&db), listener).await;
    let back_ms = back_at.timestamp_millis();
    let early = eventually("samples read while the portal was down", || async {
        let n = gpu_sample::Entity::find()
            .filter(gpu_sample::Column::AtMs.lt(back_ms))
            .count(&app.db)
            .await
            .unwrap();
        (n >= 4).then_some(n)
    })
    .await;
    assert!(early >= 4, "{early} samples from the outage");
    app.stop().await;
}

fn settings() -> TelemetrySettings {
    TelemetrySettings::default()
}

async fn rollups_and_pruning_follow_an_injected_clock(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let t0 = (Utc::now() - Duration::hours(2))
        .duration_trunc(Duration::minutes(1))
        .unwrap();
    let clock = ManualClock::new(t0);
    let (node, _) = telemetry::issue_node_token(&app.db, "gpu-test-03", Some(true), None, t0)
        .await
        .unwrap();
    let uuid = "GPU-clock-0";
    telemetry::register(
        &app.db,
        &settings(),
        node,
        &Registration {
            hostname: "h".into(),
            driver_version: None,
            source: SourceKind::Nvml,
            interval_seconds: 20,
            gpus: vec![GpuInfo {
                uuid: uuid.into(),
                name: "NVIDIA L4".into(),
                pci_bus_id: None,
                memory_total_mib: 23034,
                device_index: 0,
                minor_number: None,
            }],
        },
        clock.now(),
    )
    .await
    .unwrap();
    let report = |points: &[(i64, i64)]| -> Report {
        serde_json::from_value(json!({
            "samples": points.iter().map(|(secs, util)| sample(uuid, t0 + Duration::seconds(*secs), *util)).collect::<Vec<_>>()
        }))
        .unwrap()
    };
    let send = |r: Report, now: DateTime<Utc>| {
        let db = app.db.clone();
        async move {
            telemetry::report(&db, &settings(), node, &r, now)
                .await
                .unwrap()
        }
    };
    clock.set(t0 + Duration::seconds(75));
    send(
        report(&[(0, 10), (20, 20), (40, 60), (70, 90)]),
        clock.now(),
    )
    .await;

    let rollups = || async {
        gpu_rollup::Entity::find()
            .all(&app.db)
            .await
            .unwrap()
            .into_iter()
            .map(|r| (r.minute_ms, r.samples, r.util_min, r.util_avg, r.util_max))
            .collect::<Vec<_>>()
    };
    let m0 = t0.timestamp_millis();
    let m1 = m0 + 60_000;

    // At t0 + 2 min the first minute is complete (the second is within the grace period).
    clock.set(t0 + Duration::seconds(120));
    let done = telemetry::run_maintenance(&app.db, &settings(), clock.now())
        .await
        .unwrap();
    assert_eq!(done.rollups, 1);
    assert_eq!(
        rollups().await,
        vec![(m0, 3, Some(10.0), Some(30.0), Some(60.0))]
    );

    // A late sample for the rolled-up minute is folded in at the next run.
    send(report(&[(50, 100)]), clock.now()).await;
    clock.set(t0 + Duration::seconds(180));
    telemetry::run_maintenance(&app.db, &settings(), clock.now())
        .await
        .unwrap();
    assert_eq!(
        rollups().await,
        vec![
            (m0, 4, Some(10.0), Some(47.5), Some(100.0)),
            (m1, 1, Some(90.0), Some(90.0), Some(90.0)),
        ]
    );

    // After the raw window the samples go; the rollups stay until theirs ends.
    clock.set(t0 + Duration::hours(25));
    let pruned = telemetry::run_maintenance(&app.db, &settings(), clock.now())
        .await
        .unwrap();
    assert_eq!(pruned.samples_pruned, 5);
    assert_eq!(sample_count(&app).await, 0);
    assert_eq!(rollups().await.len(), 2);
    clock.set(t0 + Duration::days(31));
    let pruned = telemetry::run_maintenance(&app.db, &settings(), clock.now())
        .await
        .unwrap();
    assert_eq!(pruned.rollups_pruned, 2);
    assert!(
        pruned.events_pruned >= 1,
        "the `added` event is older than 30 days"
    );
    assert!(rollups().await.is_empty());
    app.stop().await;
}

async fn inventory_sync_flags_vanished_gpus(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let (_, token) =
        telemetry::issue_node_token(&app.db, "gpu-test-04", Some(true), None, Utc::now())
            .await
            .unwrap();
    let path = "/api/v1/agent/register";
    let (status, body) = post_json(&app, &token, path, &registration(&["GPU-v0", "GPU-v1"])).await;
    assert_eq!((status, body["added"].as_i64()), (200, Some(2)), "{body}");

    // GPU-v1 vanishes: flagged, not deleted, and GPU-v0 may take another index.
    let (_, body) = post_json(&app, &token, path, &registration(&["GPU-v0"])).await;
    assert_eq!(body["vanished"], 1, "{body}");
    let v1 = gpu_id(&app, "GPU-v1").await;
    let row = gpu::Entity::find_by_id(v1)
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    assert!(row.vanished_at.is_some());
    // A missing GPU cannot be booked.
    let booker = user_token(&app, "booker@example.org", PlatformRole::User).await;
    let (status, refused) = crate::helpers::book(
        &app,
        &booker,
        json!({
            "gpu_ids": [v1], "share": 1,
            "start": crate::helpers::tomorrow(10, 0).to_rfc3339(),
            "end": crate::helpers::tomorrow(11, 0).to_rfc3339(),
        }),
    )
    .await;
    assert_eq!(
        (status, &refused["code"]),
        (409, &json!("gpu_unavailable")),
        "{refused}"
    );
    let (_, body) = post_json(&app, &token, path, &registration(&["GPU-new", "GPU-v0"])).await;
    assert_eq!(body["added"], 1, "{body}");

    // It comes back.
    let (_, body) = post_json(
        &app,
        &token,
        path,
        &registration(&["GPU-v1", "GPU-v0", "GPU-new"]),
    )
    .await;
    assert_eq!(body["returned"], 1, "{body}");
    let kinds: Vec<String> = gpu_event::Entity::find()
        .filter(gpu_event::Column::GpuId.eq(v1))
        .all(&app.db)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds, ["added", "vanished", "returned"]);
    app.stop().await;
}

async fn gpus_an_agent_reports_first_wait_for_a_platform_admin(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let (_, token) = telemetry::issue_node_token(&app.db, "gpu-new-01", None, None, Utc::now())
        .await
        .unwrap();
    let path = "/api/v1/agent/register";
    let (status, body) = post_json(&app, &token, path, &registration(&["GPU-p0"])).await;
    assert_eq!(
        (status, body["added"].as_i64(), body["pending"].as_i64()),
        (200, Some(1), Some(1)),
        "{body}"
    );
    let id = gpu_id(&app, "GPU-p0").await;
    let user = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let admin = user_token(&app, "root@example.org", PlatformRole::PlatformAdmin).await;
    let listed = |gpus: &Value| gpus.as_array().unwrap().iter().any(|g| g["id"] == id);

    // Not in the inventory, not bookable by id or by model.
    let (status, gpus) = get(&app, &user, "/api/v1/gpus").await;
    assert_eq!(status, 200);
    assert!(!listed(&gpus), "{gpus}");
    let start = crate::helpers::tomorrow(10, 0).to_rfc3339();
    let end = crate::helpers::tomorrow(11, 0).to_rfc3339();
    let by_id = json!({ "gpu_ids": [id], "share": 1, "start": start, "end": end });
    let (status, refused) = crate::helpers::book(&app, &user, by_id.clone()).await;
    assert_eq!(
        (status, &refused["code"]),
        (409, &json!("gpu_unavailable")),
        "{refused}"
    );
    assert!(
        refused["message"].as_str().unwrap().contains("pending"),
        "{refused}"
    );
    let by_model = json!({ "model": "NVIDIA L4", "count": 1, "start": start, "end": end });
    let (status, refused) = crate::helpers::book(&app, &user, by_model).await;
    assert!(status == 409 || status == 422, "{status}: {refused}");

    // Platform admins see it waiting; nobody else may list or accept it.
    let (status, pending) = get(&app, &admin, "/api/v1/admin/gpus/pending").await;
    assert_eq!(status, 200);
    assert_eq!(pending[0]["id"], id, "{pending}");
    assert_eq!(pending[0]["node"], "gpu-new-01", "{pending}");
    assert_eq!(get(&app, &user, "/api/v1/admin/gpus/pending").await.0, 403);
    let accept = format!("/api/v1/admin/gpus/{id}/accept");
    let (status, _) = crate::helpers::post_json(&app, &user, &accept, &json!({})).await;
    assert_eq!(status, 403);

    // Accepted: listed and bookable, with an audit entry.
    let (status, _) = crate::helpers::post_json(&app, &admin, &accept, &json!({})).await;
    assert_eq!(status, 204);
    let (_, pending) = get(&app, &admin, "/api/v1/admin/gpus/pending").await;
    assert_eq!(pending, json!([]));
    let (_, gpus) = get(&app, &user, "/api/v1/gpus").await;
    assert!(listed(&gpus), "{gpus}");
    let (status, booked) = crate::helpers::book(&app, &user, by_id).await;
    assert_eq!(status, 201, "{booked}");
    let (_, audit) = get(&app, &admin, "/api/v1/admin/audit?action=gpu.accept").await;
    let entries = audit.as_array().unwrap();
    assert!(
        !entries.is_empty() && entries.iter().all(|e| e["action"] == "GpuAccept"),
        "an audit entry: {audit}"
    );

    // A node added with `--accept-new-gpus`: its new GPUs are accepted at once.
    let (_, token) =
        telemetry::issue_node_token(&app.db, "gpu-new-02", Some(true), None, Utc::now())
            .await
            .unwrap();
    let (status, body) = post_json(&app, &token, path, &registration(&["GPU-p1"])).await;
    assert_eq!(
        (status, body["added"].as_i64(), body["pending"].as_i64()),
        (200, Some(1), Some(0)),
        "{body}"
    );
    let accepted = gpu_id(&app, "GPU-p1").await;
    let (_, gpus) = get(&app, &user, "/api/v1/gpus").await;
    assert!(
        gpus.as_array().unwrap().iter().any(|g| g["id"] == accepted),
        "{gpus}"
    );
    app.stop().await;
}

async fn invented_http_methods_share_one_metrics_series(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let invented = reqwest::Method::from_bytes(b"BERTHPROBE").unwrap();
    let response = client()
        .request(invented, app.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_client_error(), "{}", response.status());
    let metrics = client()
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !metrics.contains("BERTHPROBE"),
        "no series per invented method"
    );
    assert!(
        metrics.contains("method=\"other\""),
        "counted as other: {metrics}"
    );
    app.stop().await;
}

async fn demo_nodes_get_simulated_values(backend: Backend) {
    let db = TestDatabase::create(backend).await;
    let mut settings = test_settings(&db);
    settings.local_agent = berth_server::configuration::LocalAgentMode::Simulated;
    settings.agent_interval_seconds = 1;
    let app = spawn_with(settings).await;
    let metrics = eventually("simulated values for the demo fleet", || async {
        let text = app.metrics_text().await?;
        (text.matches("DCGM_FI_DEV_GPU_UTIL{").count() >= 8).then_some(text)
    })
    .await;
    assert!(metrics.contains("simulated=\"true\""));
    assert!(!metrics.contains("simulated=\"false\""));
    app.stop().await;
}

async fn server_fn(app: &TestApp, path: &str, form: &[(&str, &str)]) -> (u16, Value) {
    let response = app
        .client
        .post(app.url(path))
        .form(form)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn platform_admins_issue_and_revoke_node_tokens_on_the_page(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    let (status, _) = server_fn(&app, "/api/add_node_token", &[("name", "gpu-ui-01")]).await;
    assert_eq!(status, 403, "plain users cannot issue node tokens");

    app.sign_in("platform_admin").await;
    let (status, refused) = server_fn(&app, "/api/add_node_token", &[("name", "  ")]).await;
    assert_eq!(status, 422, "{refused}");
    let (status, issued) = server_fn(&app, "/api/add_node_token", &[("name", "gpu-ui-01")]).await;
    assert_eq!(status, 200, "{issued}");
    let token = issued["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("berth_"));
    let register = "/api/v1/agent/register";
    assert_eq!(
        post_json(&app, &token, register, &registration(&["GPU-ui-0"]))
            .await
            .0,
        200
    );

    let (status, page) = server_fn(&app, "/api/get_nodes_page", &[]).await;
    assert_eq!(status, 200, "{page}");
    let row = page["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "gpu-ui-01")
        .cloned()
        .unwrap();
    assert_eq!(
        (row["gpus"].as_i64(), row["live_tokens"].as_i64()),
        (Some(0), Some(1)),
        "{row}"
    );
    assert_eq!(row["source"], "nvml");
    // Its GPU waits for acceptance on the page; accepting it there puts it in the inventory.
    let waiting = page["pending"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["uuid"] == "GPU-ui-0")
        .cloned()
        .unwrap_or_else(|| panic!("{page}"));
    let gpu = waiting["id"].as_i64().unwrap().to_string();
    app.sign_in("user").await;
    let (status, _) = server_fn(&app, "/api/accept_gpu", &[("id", &gpu)]).await;
    assert_eq!(status, 403, "plain users cannot accept GPUs");
    app.sign_in("platform_admin").await;
    let (status, accepted) = server_fn(&app, "/api/accept_gpu", &[("id", &gpu)]).await;
    assert_eq!(status, 200, "{accepted}");
    let (_, page) = server_fn(&app, "/api/get_nodes_page", &[]).await;
    assert!(page["pending"].as_array().unwrap().is_empty(), "{page}");
    let row = page["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "gpu-ui-01")
        .cloned()
        .unwrap();
    assert_eq!(row["gpus"].as_i64(), Some(1), "{row}");

    let id = row["id"].as_i64().unwrap().to_string();
    let (status, revoked) = server_fn(&app, "/api/revoke_node_tokens", &[("id", &id)]).await;
    assert_eq!((status, revoked), (200, json!(1)));
    assert_eq!(
        post_json(&app, &token, register, &registration(&["GPU-ui-0"]))
            .await
            .0,
        401
    );
    app.stop().await;
}
