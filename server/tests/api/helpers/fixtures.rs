//! What tests start from: GPUs of the demo fleet, teams with admins, members and credits, a
//! reservation's row, and bookings in the past written straight to the store.

use crate::helpers::{TestApp, get, post_json, user_id};
use berth_app::backend::entity::{gpu, reservation, reservation_gpu};
use berth_app::domain::gpu::GpuStatus;
use berth_app::domain::inventory::{NewGpu, NewNode};
use berth_app::domain::payment::ChargeMode;
use berth_app::domain::quota::Priority;
use berth_app::domain::reservation::PaymentStatus;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{
    ActiveValue::NotSet, ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter,
};
use serde_json::json;

/// GPU ids by (model, device order).
pub(crate) async fn gpus_of(app: &TestApp, model: &str) -> Vec<i64> {
    let mut rows = gpu::Entity::find()
        .filter(gpu::Column::Model.eq(model))
        .filter(gpu::Column::Status.eq(GpuStatus::Active))
        .all(&app.db)
        .await
        .unwrap();
    rows.sort_by_key(|g| (g.node_id, g.device_index));
    rows.into_iter().map(|g| g.id).collect()
}

/// Adds node `name` (not demo data) with `gpus`.
pub(crate) async fn add_node(app: &TestApp, name: &str, gpus: &[NewGpu]) {
    let node = NewNode {
        name: name.to_owned(),
        hostname: format!("{name}.example.org"),
        is_demo: false,
    };
    berth_app::backend::db::inventory::insert_node_with_gpus(&app.db, &node, gpus, Utc::now())
        .await
        .unwrap();
}

/// The first active GPU of `model`.
pub(crate) async fn first_gpu(app: &TestApp, model: &str) -> i64 {
    gpus_of(app, model).await[0]
}
pub(crate) const H100: &str = "NVIDIA H100 80GB HBM3";

/// A team named `name` with `admin` as its admin (created by `platform`, accepted as at sign-in).
pub(crate) async fn team_with_admin(app: &TestApp, platform: &str, name: &str, admin: &str) -> i64 {
    let (status, created) = post_json(
        app,
        platform,
        "/api/v1/admin/teams",
        &json!({ "name": name, "admin_email": admin }),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    accept(app, admin).await;
    created["id"].as_i64().unwrap()
}

/// What signing in does with open invitations.
pub(crate) async fn accept(app: &TestApp, email: &str) {
    berth_app::backend::teams::accept_invitations(
        &app.state,
        user_id(app, email).await,
        &berth_app::domain::user::Email::parse(email).unwrap(),
        true,
        chrono::Utc::now(),
    )
    .await
    .unwrap();
}

pub(crate) async fn invitation_by_admin(
    app: &TestApp,
    team_id: i64,
    token: &str,
    email: &str,
) -> i64 {
    let (status, body) = post_json(
        app,
        token,
        &format!("/api/v1/teams/{team_id}/invitations"),
        &json!({ "email": email }),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_i64().unwrap()
}

pub(crate) async fn team_balance(app: &TestApp, token: &str, team: i64) -> i64 {
    let (status, body) = get(app, token, &format!("/api/v1/teams/{team}")).await;
    assert_eq!(status, 200, "{body}");
    body["money"]["balance_minor"].as_i64().unwrap()
}
/// A team with `admin` as its admin and `members`, and plenty of team credits.
pub(crate) async fn funded_team(
    app: &TestApp,
    platform: &str,
    name: &str,
    admin: (&str, &str),
    members: &[&str],
) -> i64 {
    let team = team_with_admin(app, platform, name, admin.0).await;
    for email in members {
        invitation_by_admin(app, team, admin.1, email).await;
        accept(app, email).await;
    }
    let (status, body) = post_json(
        app,
        platform,
        "/api/v1/admin/credits",
        &json!({ "team_id": team, "amount_minor": 10_000_000, "reason": "test" }),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    team
}
/// Inserts a booking of `gpu` from `start` for `hours`, owned by `owner`, as if made long ago.
pub(crate) async fn past_booking(
    db: &impl ConnectionTrait,
    owner: i64,
    gpu: &gpu::Model,
    start: DateTime<Utc>,
    hours: i64,
) -> i64 {
    insert_past_booking(db, owner, gpu, start, hours, true).await
}

/// [`past_booking`] in a schema before migration 18, which has no GPU count or money totals on
/// bookings (`totals: false` leaves them out).
pub(crate) async fn insert_past_booking(
    db: &impl ConnectionTrait,
    owner: i64,
    gpu: &gpu::Model,
    start: DateTime<Utc>,
    hours: i64,
    totals: bool,
) -> i64 {
    let end = start + TimeDelta::hours(hours);
    let total = |value: i64| if totals { Set(value) } else { NotSet };
    let row = reservation::ActiveModel {
        id: NotSet,
        owner_id: Set(owner),
        node_id: Set(gpu.node_id),
        model: Set(gpu.model.clone()),
        quarters: Set(4),
        start_at: Set(start),
        end_at: Set(end),
        status: Set(reservation::Status::Confirmed),
        price_minor: Set(0),
        created_at: Set(start - TimeDelta::days(7)),
        cancelled_at: Set(None),
        cancelled_by: Set(None),
        payment_status: Set(PaymentStatus::Paid),
        charge_mode: Set(ChargeMode::AtBooking),
        charge_at: Set(None),
        released_reason: Set(None),
        team_id: Set(None),
        priority: Set(Priority::Development),
        preemptible: Set(false),
        approval_expires_at: Set(None),
        displaced_offer: Set(None),
        gpu_count: if totals { Set(1) } else { NotSet },
        charged_minor: total(0),
        refunded_minor: total(0),
        calendar_sequence: NotSet,
        keep_running: NotSet,
        profile_version_id: NotSet,
        moved_from_id: NotSet,
        move_cause: NotSet,
        moved_at: NotSet,
        idle_since: NotSet,
        idle_warnings: NotSet,
        idle_snoozed_at: NotSet,
        reclaimed_until: NotSet,
        reclaim_refund_minor: NotSet,
        sla_credit_minor: NotSet,
        start_early: NotSet,
        card_id: NotSet,
        early_from: NotSet,
    };
    let id = reservation::Entity::insert(row)
        .exec(db)
        .await
        .unwrap()
        .last_insert_id;
    reservation_gpu::Entity::insert(reservation_gpu::ActiveModel {
        reservation_id: Set(id),
        gpu_id: Set(gpu.id),
        start_at: Set(start),
        end_at: Set(end),
    })
    .exec_without_returning(db)
    .await
    .unwrap();
    id
}

/// The stored row of reservation `id`.
pub(crate) async fn reservation_row(app: &TestApp, id: i64) -> reservation::Model {
    reservation::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .unwrap()
        .unwrap()
}

/// A node whose agent (token issued now) reported `count` GPUs `GPU-<prefix><i>` of `model`;
/// answers the agent's token and the ids of every GPU of `model`.
pub(crate) async fn agent_node(
    app: &TestApp,
    prefix: &str,
    model: &str,
    count: usize,
) -> (String, Vec<i64>) {
    agent_node_every(app, prefix, model, count, 5).await
}

/// [`agent_node`] with an agent that reports every `interval_seconds`.
pub(crate) async fn agent_node_every(
    app: &TestApp,
    prefix: &str,
    model: &str,
    count: usize,
    interval_seconds: u32,
) -> (String, Vec<i64>) {
    let (_, token) = berth_app::backend::telemetry::issue_node_token(
        &app.db,
        prefix,
        Some(true),
        None,
        app.state.now(),
    )
    .await
    .unwrap();
    let registration = json!({
        "hostname": format!("{prefix}.example"), "driver_version": "550.54.15", "source": "nvml",
        "interval_seconds": interval_seconds,
        "gpus": (0..count).map(|i| json!({
            "uuid": format!("GPU-{prefix}{i}"), "name": model, "pci_bus_id": null,
            "memory_total_mib": 16384, "device_index": i
        })).collect::<Vec<_>>()
    });
    let (status, body) = post_json(app, &token, "/api/v1/agent/register", &registration).await;
    assert_eq!(status, 200, "{body}");
    (token, gpus_of(app, model).await)
}
