//! Backfill: a batch booking that asked to start early is brought forward, on the same GPU, at
//! the same length and price, when a cancellation frees the GPU before its start; it is charged
//! then if it was to be charged before its start, and its holder is told. Bookings that did not
//! ask stay; only batch and burst bookings may ask; a window held for a watcher stays the
//! watcher's. The job runs as `berth serve` runs it, on the test clock.

use crate::helpers::*;
use berth_app::backend::entity::notification_event;
use berth_app::backend::{backfill, db};
use berth_app::domain::notify::{EventKind, InboxItem};
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

crate::on_both_backends!(
    a_flexible_batch_booking_starts_early_when_its_gpu_frees_up,
    a_window_held_for_a_watcher_is_not_backfilled,
);

/// A model no demo GPU has, so only the test's node offers it.
const MODEL: &str = "NVIDIA A2 Backfill";

fn booking(gpu: i64, start: DateTime<Utc>, hours: i64) -> Value {
    json!({
        "gpu_ids": [gpu],
        "start": start.to_rfc3339(),
        "end": (start + TimeDelta::hours(hours)).to_rfc3339(),
        "charge": "before_start",
    })
}

fn flexible(gpu: i64, start: DateTime<Utc>, hours: i64) -> Value {
    let mut body = booking(gpu, start, hours);
    body["priority"] = json!("batch");
    body["start_early"] = json!(true);
    body
}

async fn inbox(app: &TestApp, email: &str) -> Vec<InboxItem> {
    crate::notify::settle(app, app.state.now()).await;
    db::notify::latest_notices(&app.db, user_id(app, email).await, 100)
        .await
        .unwrap()
}

/// Reservation `id` as its holder reads it, once its start is `start` (waits up to ten seconds:
/// the portal's job runs by itself as soon as a change frees capacity).
async fn once_it_starts(app: &TestApp, token: &str, id: &Value, start: DateTime<Utc>) -> Value {
    for _ in 0..100 {
        let (status, body) = get(app, token, &format!("/api/v1/reservations/{id}")).await;
        assert_eq!(status, 200, "{body}");
        if body["window"]["start"] == json!(start) {
            return body;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("reservation {id} was not brought forward to {start}");
}

async fn a_flexible_batch_booking_starts_early_when_its_gpu_frees_up(backend: Backend) {
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, now).await;
    let gpu = agent_node(&app, "backfill-a", MODEL, 1).await.1[0];
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    // Ana's booking starts in half an hour (a started one cannot be cancelled).
    let (status, first) = book(&app, &ana, booking(gpu, now + TimeDelta::minutes(30), 3)).await;
    assert_eq!(status, 201, "{first}");

    // Bea's batch job asks to start early; paid before its start, so not charged yet.
    let bea = user_token(&app, "bea@example.org", PlatformRole::User).await;
    let before = balance(&app, &bea).await;
    let planned = now + TimeDelta::minutes(30) + TimeDelta::hours(3);
    let (status, job) = book(&app, &bea, flexible(gpu, planned, 2)).await;
    assert_eq!(status, 201, "{job}");
    assert_eq!(job["start_early"], true, "{job}");
    assert_eq!(job["payment_status"], "pending", "{job}");
    assert_eq!(job["preemptible"], true, "{job}");
    // Only batch and burst bookings may ask.
    let carl = user_token(&app, "carl@example.org", PlatformRole::User).await;
    let mut asked = booking(gpu, now + TimeDelta::hours(6), 1);
    asked["start_early"] = json!(true);
    let (status, refused) = book(&app, &carl, &asked).await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["code"], "start_early_not_preemptible", "{refused}");
    assert_eq!(refused["field"], "start_early", "{refused}");
    // A batch booking that did not ask stays where it is.
    let mut stays = booking(gpu, now + TimeDelta::hours(8), 1);
    stays["priority"] = json!("batch");
    let (status, later) = book(&app, &carl, &stays).await;
    assert_eq!(status, 201, "{later}");

    // Nothing is free before its start yet.
    assert_eq!(
        backfill::run(&app.db, app.state.clock.as_ref())
            .await
            .unwrap()
            .moved,
        0
    );

    clock.set(now + TimeDelta::minutes(7));
    let (status, body) = cancel(&app, &ana, &first["id"]).await;
    assert_eq!(status, 200, "{body}");
    let early = now + TimeDelta::minutes(15);
    let moved = once_it_starts(&app, &bea, &job["id"], early).await;
    assert_eq!(moved["window"]["end"], json!(early + TimeDelta::hours(2)));
    assert_eq!(moved["early_from"], json!(planned), "{moved}");
    assert_eq!(moved["gpu_ids"], json!([gpu]));
    assert_eq!(moved["price_minor"], job["price_minor"], "the same price");
    // It starts now, so it is paid now.
    assert_eq!(moved["payment_status"], "paid", "{moved}");
    let price = job["price_minor"].as_i64().unwrap();
    assert_eq!(balance(&app, &bea).await, before - price);
    // Once: it is no earlier to move to now.
    assert_eq!(
        backfill::run(&app.db, app.state.clock.as_ref())
            .await
            .unwrap()
            .moved,
        0
    );
    let (_, still) = get(
        &app,
        &carl,
        &format!("/api/v1/reservations/{}", later["id"]),
    )
    .await;
    assert_eq!(still["window"]["start"], json!(now + TimeDelta::hours(8)));

    // Its holder is told, and reminded before the new start, not the old one.
    let items = inbox(&app, "bea@example.org").await;
    let told: Vec<&InboxItem> = items
        .iter()
        .filter(|item| item.kind == EventKind::StartedEarly)
        .collect();
    assert_eq!(told.len(), 1, "{items:?}");
    assert_eq!(told[0].notice.was_start, Some(planned));
    assert!(
        items
            .iter()
            .any(|item| item.kind == EventKind::PaymentCharged),
        "{items:?}"
    );
    let reminders: Vec<DateTime<Utc>> = notification_event::Entity::find()
        .filter(notification_event::Column::ReservationId.eq(job["id"].as_i64().unwrap()))
        .filter(
            notification_event::Column::Kind
                .is_in([EventKind::StartingSoon, EventKind::EndingSoon]),
        )
        .filter(notification_event::Column::FannedOutAt.is_null())
        .all(&app.db)
        .await
        .unwrap()
        .into_iter()
        .map(|event| event.due_at)
        .collect();
    assert_eq!(
        reminders,
        vec![early + TimeDelta::hours(2) - TimeDelta::minutes(15)],
        "the start's reminder is past; the end's follows the new end"
    );

    // The GPU is held in the new window (for another batch booking: a higher-priority one
    // could still displace it) and free in the old one.
    let dan = user_token(&app, "dan@example.org", PlatformRole::User).await;
    let mut overlapping = booking(gpu, early + TimeDelta::hours(1), 1);
    overlapping["priority"] = json!("batch");
    let (status, clash) = book(&app, &dan, &overlapping).await;
    assert_eq!(status, 409, "{clash}");
    let (status, freed) = book(&app, &dan, booking(gpu, planned, 2)).await;
    assert_eq!(status, 201, "{freed}");
    assert_capacity_kept(&app).await;
    assert_books_balance(&app).await;
}

async fn a_window_held_for_a_watcher_is_not_backfilled(backend: Backend) {
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, now).await;
    let gpu = agent_node(&app, "backfill-b", MODEL, 1).await.1[0];
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    // Ana's booking starts in half an hour (a started one cannot be cancelled).
    let (status, first) = book(&app, &ana, booking(gpu, now + TimeDelta::minutes(30), 3)).await;
    assert_eq!(status, 201, "{first}");
    let bea = user_token(&app, "bea@example.org", PlatformRole::User).await;
    let planned = now + TimeDelta::minutes(30) + TimeDelta::hours(3);
    let (status, job) = book(&app, &bea, flexible(gpu, planned, 2)).await;
    assert_eq!(status, 201, "{job}");
    // Eve watches for two hours on that GPU's model before bea's job.
    let eve = user_token(&app, "eve@example.org", PlatformRole::User).await;
    let watch = json!({
        "model": MODEL, "hours": 2,
        "from": now.to_rfc3339(), "to": planned.to_rfc3339(),
    });
    let (status, made) = post_json(&app, &eve, "/api/v1/watches", &watch).await;
    assert_eq!(status, 201, "{made}");
    // The new watch pokes the watch job, which reads the clock when it starts: let that run
    // finish (nothing is free for it yet) before the clock moves and Ana cancels, or it would
    // read the old time and the freed GPU together.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;

    clock.set(now + TimeDelta::minutes(7));
    let (status, body) = cancel(&app, &ana, &first["id"]).await;
    assert_eq!(status, 200, "{body}");
    // The watcher is held the freed window first; the backfill leaves it to her.
    let watch_path = format!("/api/v1/watches/{}", made["id"]);
    let mut held = Value::Null;
    for _ in 0..100 {
        held = get(&app, &eve, &watch_path).await.1;
        if !held["offer"].is_null() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        held["offer"]["window"]["start"],
        json!(now + TimeDelta::minutes(15)),
        "{held}"
    );
    assert_eq!(
        backfill::run(&app.db, app.state.clock.as_ref())
            .await
            .unwrap()
            .moved,
        0
    );
    let (_, stays) = get(&app, &bea, &format!("/api/v1/reservations/{}", job["id"])).await;
    assert_eq!(stays["window"]["start"], json!(planned), "{stays}");
    assert!(stays["early_from"].is_null(), "{stays}");

    // Once the hold lapses unbooked, the job is brought forward.
    clock.set(now + TimeDelta::minutes(20));
    let moved = backfill::run(&app.db, app.state.clock.as_ref())
        .await
        .unwrap();
    assert_eq!(moved.moved, 1, "{moved:?}");
    let (_, early) = get(&app, &bea, &format!("/api/v1/reservations/{}", job["id"])).await;
    assert_eq!(
        early["window"]["start"],
        json!(now + TimeDelta::minutes(30)),
        "{early}"
    );
    assert_capacity_kept(&app).await;
    assert_books_balance(&app).await;
}
