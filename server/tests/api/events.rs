//! The events that tell people about things beyond their own bookings: a team's budget (its
//! admins hear at the warning share and at the limit, once a month each), a problem on a GPU of a
//! running booking (an XID error, the GPU gone missing: its holder hears), and a node agent gone
//! silent (platform admins hear, once per silence).

use crate::helpers::*;
use berth_app::backend::clock::Clock;
use berth_app::backend::db;
use berth_app::backend::entity::gpu;
use berth_app::backend::telemetry;
use berth_app::domain::notify::{EventKind, GpuProblem, InboxItem, NODE_SILENT_AFTER};
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

async fn inbox(app: &TestApp, email: &str) -> Vec<InboxItem> {
    crate::notify::settle(app, Utc::now().max(app.state.now())).await;
    db::notify::latest_notices(&app.db, user_id(app, email).await, 100)
        .await
        .unwrap()
}

fn kinds_of(items: &[InboxItem], kind: EventKind) -> Vec<&InboxItem> {
    items.iter().filter(|item| item.kind == kind).collect()
}

fn booking(gpu: i64, start: DateTime<Utc>, hours: i64) -> Value {
    json!({
        "gpu_ids": [gpu],
        "start": start.to_rfc3339(),
        "end": (start + TimeDelta::hours(hours)).to_rfc3339(),
    })
}

async fn a_teams_admins_hear_when_its_budget_nears_and_reaches_its_limit(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let root = user_token(&app, "root@example.org", PlatformRole::PlatformAdmin).await;
    let lead = user_token(&app, "lead@example.org", PlatformRole::User).await;
    let dev = user_token(&app, "dev@example.org", PlatformRole::User).await;
    let team = funded_team(
        &app,
        &root,
        "vision",
        ("lead@example.org", &lead),
        &["dev@example.org"],
    )
    .await;
    let h100 = gpus_of(&app, H100).await;
    let (_, gpus) = get(&app, &dev, "/api/v1/gpus").await;
    let hourly = gpus
        .as_array()
        .unwrap()
        .iter()
        .find(|gpu| gpu["id"] == h100[0])
        .unwrap()["price_per_hour_minor"]
        .as_i64()
        .unwrap();
    // A budget of three hours, warning from half of it; over it, bookings only warn.
    let (status, body) = send(
        &app,
        reqwest::Method::PUT,
        Some(&lead),
        &format!("/api/v1/teams/{team}/budget"),
        Some(json!({ "budget_minor": hourly * 3, "mode": "warn", "warn_percent": 50 })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let start = on_grid_in(TimeDelta::days(2));
    let team_booking = |gpu: i64, at: DateTime<Utc>, hours: i64| {
        let mut body = booking(gpu, at, hours);
        body["team_id"] = json!(team);
        body
    };
    // One hour: a third, no notice.
    let (status, body) = book(&app, &dev, team_booking(h100[0], start, 1)).await;
    assert_eq!(status, 201, "{body}");
    assert!(
        kinds_of(
            &inbox(&app, "lead@example.org").await,
            EventKind::BudgetWarning
        )
        .is_empty()
    );
    // Two hours in all: two thirds, past the warning share.
    let (status, _) = book(&app, &dev, team_booking(h100[1], start, 1)).await;
    assert_eq!(status, 201);
    let lead_inbox = inbox(&app, "lead@example.org").await;
    let warned = kinds_of(&lead_inbox, EventKind::BudgetWarning);
    assert_eq!(warned.len(), 1, "{lead_inbox:#?}");
    assert_eq!(warned[0].notice.amount_minor, Some(hourly * 2));
    assert_eq!(warned[0].notice.limit_minor, Some(hourly * 3));
    // Another warning-share booking the same month: no second warning.
    let (status, _) = book(
        &app,
        &dev,
        team_booking(h100[0], start + TimeDelta::hours(2), 1),
    )
    .await;
    assert_eq!(status, 201);
    let lead_inbox = inbox(&app, "lead@example.org").await;
    assert_eq!(kinds_of(&lead_inbox, EventKind::BudgetWarning).len(), 1);
    let reached = kinds_of(&lead_inbox, EventKind::BudgetReached);
    assert_eq!(
        reached.len(),
        1,
        "three hours reach the limit: {lead_inbox:#?}"
    );
    // The member who booked is not told about the team's budget.
    let dev_inbox = inbox(&app, "dev@example.org").await;
    assert!(kinds_of(&dev_inbox, EventKind::BudgetWarning).is_empty());
    assert!(kinds_of(&dev_inbox, EventKind::BudgetReached).is_empty());
    app.stop().await;
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

async fn the_holder_of_a_running_booking_hears_of_its_gpus_problems(backend: Backend) {
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, now).await;
    let (_, token) = telemetry::issue_node_token(&app.db, "gpu-evt-01", Some(true), None, now)
        .await
        .unwrap();
    let register = "/api/v1/agent/register";
    let (status, body) =
        post_json(&app, &token, register, &registration(&["GPU-e0", "GPU-e1"])).await;
    assert_eq!(status, 200, "{body}");
    let gpu = gpu::Entity::find()
        .filter(gpu::Column::Uuid.eq("GPU-e0"))
        .one(&app.db)
        .await
        .unwrap()
        .unwrap()
        .id;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let bob = user_token(&app, "bob@example.org", PlatformRole::User).await;
    let start = now + TimeDelta::hours(1);
    let (status, booked) = book(&app, &ana, booking(gpu, start, 2)).await;
    assert_eq!(status, 201, "{booked}");
    // Bob books the same GPU later: he is not told about problems during Ana's booking.
    let (status, _) = book(&app, &bob, booking(gpu, start + TimeDelta::hours(3), 1)).await;
    assert_eq!(status, 201);

    clock.set(start + TimeDelta::minutes(10));
    let xid = |code: i64| {
        json!({ "events": [{
            "uuid": "GPU-e0", "at": clock.now().to_rfc3339(), "kind": "xid", "code": code
        }]})
    };
    // Errors a GPU survives (a fatal one moves the booking: see failover.rs).
    for code in [48, 48, 13] {
        let (status, body) = post_json(&app, &token, "/api/v1/agent/report", &xid(code)).await;
        assert_eq!(status, 200, "{body}");
    }
    // The GPU goes missing.
    let (status, body) = post_json(&app, &token, register, &registration(&["GPU-e1"])).await;
    assert_eq!(
        (status, body["vanished"].as_i64()),
        (200, Some(1)),
        "{body}"
    );

    let ana_inbox = inbox(&app, "ana@example.org").await;
    let problems = kinds_of(&ana_inbox, EventKind::GpuProblem);
    // XID errors once per booking (the first code), the disappearance once.
    assert_eq!(problems.len(), 2, "{ana_inbox:#?}");
    let told: Vec<_> = problems
        .iter()
        .map(|item| item.notice.problem.clone().unwrap())
        .collect();
    assert!(
        told.contains(&GpuProblem::Xid {
            gpu: "GPU-e0".into(),
            code: 48
        }),
        "{told:#?}"
    );
    assert!(
        told.contains(&GpuProblem::Missing {
            gpu: "GPU-e0".into()
        }),
        "{told:#?}"
    );
    assert_eq!(
        problems[0].notice.reservation.as_ref().map(|r| r.id),
        booked["id"].as_i64()
    );
    let bob_inbox = inbox(&app, "bob@example.org").await;
    assert!(
        kinds_of(&bob_inbox, EventKind::GpuProblem).is_empty(),
        "{bob_inbox:#?}"
    );
    app.stop().await;
}

async fn platform_admins_hear_once_when_a_node_agent_goes_silent(backend: Backend) {
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, now).await;
    user_token(&app, "root@example.org", PlatformRole::PlatformAdmin).await;
    user_token(&app, "ana@example.org", PlatformRole::User).await;
    let (_, token) = telemetry::issue_node_token(&app.db, "gpu-quiet-01", Some(true), None, now)
        .await
        .unwrap();
    let register = "/api/v1/agent/register";
    let (status, _) = post_json(&app, &token, register, &registration(&["GPU-q0"])).await;
    assert_eq!(status, 200);
    // Still within the grace period: nothing.
    clock.advance(NODE_SILENT_AFTER - TimeDelta::seconds(30));
    assert_eq!(
        telemetry::tell_silent_nodes(&app.db, chrono::TimeDelta::hours(4), clock.now())
            .await
            .unwrap(),
        0
    );
    clock.advance(TimeDelta::minutes(1));
    assert_eq!(
        telemetry::tell_silent_nodes(&app.db, chrono::TimeDelta::hours(4), clock.now())
            .await
            .unwrap(),
        1
    );
    // Once per silence.
    clock.advance(TimeDelta::minutes(10));
    assert_eq!(
        telemetry::tell_silent_nodes(&app.db, chrono::TimeDelta::hours(4), clock.now())
            .await
            .unwrap(),
        0
    );
    let root_inbox = inbox(&app, "root@example.org").await;
    let silent = kinds_of(&root_inbox, EventKind::NodeSilent);
    assert_eq!(silent.len(), 1, "{root_inbox:#?}");
    assert_eq!(silent[0].notice.target.as_deref(), Some("gpu-quiet-01"));
    assert!(kinds_of(&inbox(&app, "ana@example.org").await, EventKind::NodeSilent).is_empty());
    // It reports again, then falls silent again: a second notice.
    let (status, _) = post_json(&app, &token, register, &registration(&["GPU-q0"])).await;
    assert_eq!(status, 200);
    clock.advance(NODE_SILENT_AFTER + TimeDelta::minutes(1));
    assert_eq!(
        telemetry::tell_silent_nodes(&app.db, chrono::TimeDelta::hours(4), clock.now())
            .await
            .unwrap(),
        1
    );
    let root_inbox = inbox(&app, "root@example.org").await;
    assert_eq!(kinds_of(&root_inbox, EventKind::NodeSilent).len(), 2);
    app.stop().await;
}

crate::on_both_backends!(
    a_teams_admins_hear_when_its_budget_nears_and_reaches_its_limit,
    the_holder_of_a_running_booking_hears_of_its_gpus_problems,
    platform_admins_hear_once_when_a_node_agent_goes_silent,
);
