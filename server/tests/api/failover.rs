//! A failed GPU does not cost the booking: a GPU that falls off the bus (XID 79), vanishes, is
//! retired or taken for maintenance moves its bookings to an equivalent free GPU (same node
//! first, then another), refunds the minutes lost exactly, and tells the holder how to connect;
//! with no equivalent GPU free, the rest is refunded in full with the nearest window offered.
//! Driven through the agent's HTTP API, and once by a real agent reading the fake NVML library.

use crate::helpers::*;
use berth_app::backend::db;
use berth_app::backend::entity::{gpu, maintenance_window, reservation};
use berth_app::backend::telemetry;
use berth_app::domain::failover::FailureCause;
use berth_app::domain::notify::{EventKind, InboxItem};
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

crate::on_both_backends!(
    a_gpu_that_falls_off_the_bus_moves_the_running_booking_on_its_node,
    a_vanished_gpu_moves_bookings_to_another_node,
    with_no_equivalent_gpu_the_rest_is_refunded_with_the_nearest_window,
    maintenance_moves_the_bookings_in_its_way,
    a_real_agent_reporting_xid_79_moves_the_booking,
);

/// A model no demo GPU has, so only the test's nodes offer it.
const MODEL: &str = "NVIDIA A2 Failover";
/// The portal's price for a GPU an agent reports first: 2.00 an hour, 0.50 a slot.
const SLOT_MINOR: i64 = 50;

fn registration(host: &str, uuids: &[&str]) -> Value {
    json!({
        "hostname": host, "driver_version": "550.54.15", "source": "nvml",
        "interval_seconds": 5,
        "gpus": uuids.iter().enumerate().map(|(i, uuid)| json!({
            "uuid": uuid, "name": MODEL, "pci_bus_id": null,
            "memory_total_mib": 16384, "device_index": i
        })).collect::<Vec<_>>()
    })
}

/// A node named `name` (its host `host`) whose agent reported `uuids`; answers its token.
async fn node(app: &TestApp, name: &str, host: &str, uuids: &[&str]) -> String {
    let (_, token) = telemetry::issue_node_token(&app.db, name, Some(true), None, app.state.now())
        .await
        .unwrap();
    let (status, body) = post_json(
        app,
        &token,
        "/api/v1/agent/register",
        &registration(host, uuids),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    token
}

async fn gpu_of(app: &TestApp, uuid: &str) -> i64 {
    gpu::Entity::find()
        .filter(gpu::Column::Uuid.eq(uuid))
        .one(&app.db)
        .await
        .unwrap()
        .unwrap()
        .id
}

fn booking(gpu: i64, start: DateTime<Utc>, minutes: i64) -> Value {
    json!({
        "gpu_ids": [gpu],
        "start": start.to_rfc3339(),
        "end": (start + TimeDelta::minutes(minutes)).to_rfc3339(),
    })
}

async fn reservation_json(app: &TestApp, token: &str, id: i64) -> Value {
    let (status, body) = get(app, token, &format!("/api/v1/reservations/{id}")).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn inbox(app: &TestApp, email: &str) -> Vec<InboxItem> {
    crate::notify::settle(app, Utc::now().max(app.state.now())).await;
    db::notify::latest_notices(&app.db, user_id(app, email).await, 100)
        .await
        .unwrap()
}

fn of_kind(items: &[InboxItem], kind: EventKind) -> Vec<&InboxItem> {
    items.iter().filter(|item| item.kind == kind).collect()
}

fn xid(uuid: &str, at: DateTime<Utc>, code: i64) -> Value {
    json!({ "events": [{ "uuid": uuid, "at": at.to_rfc3339(), "kind": "xid", "code": code }] })
}

async fn a_gpu_that_falls_off_the_bus_moves_the_running_booking_on_its_node(backend: Backend) {
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, now).await;
    let token = node(&app, "fo-a", "fo-a.example", &["GPU-fa0", "GPU-fa1"]).await;
    let (a0, a1) = (gpu_of(&app, "GPU-fa0").await, gpu_of(&app, "GPU-fa1").await);
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let before = balance(&app, &ana).await;
    // Two hours from now: charged at booking (within the charge lead), 8 slots.
    let (status, booked) = book(&app, &ana, booking(a0, now, 120)).await;
    assert_eq!(status, 201, "{booked}");
    let first = booked["id"].as_i64().unwrap();
    assert_eq!(booked["price_minor"], 8 * SLOT_MINOR);
    assert_eq!(balance(&app, &ana).await, before - 8 * SLOT_MINOR);

    // 40 minutes in, the GPU falls off the bus (seen a minute later).
    let failed_at = now + TimeDelta::minutes(40);
    clock.set(failed_at + TimeDelta::minutes(1));
    let (status, body) = post_json(
        &app,
        &token,
        "/api/v1/agent/report",
        &xid("GPU-fa0", failed_at, 79),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // The booking splits at the slot of the failure (00:30): the first part stays on GPU 0 and
    // ends there, the rest continues on GPU 1 of the same node.
    let split = now + TimeDelta::minutes(30);
    let was = reservation_json(&app, &ana, first).await;
    assert_eq!(was["window"]["end"], json!(split), "{was}");
    assert_eq!(was["gpu_ids"], json!([a0]));
    let rest = was["moved_to"].as_i64().expect("moved_to");
    let moved = reservation_json(&app, &ana, rest).await;
    assert_eq!(moved["gpu_ids"], json!([a1]), "{moved}");
    assert_eq!(moved["window"]["start"], json!(split));
    assert_eq!(moved["window"]["end"], json!(now + TimeDelta::minutes(120)));
    assert_eq!(moved["moved_from"], json!([first, "fell_off_bus"]));
    assert_eq!(moved["payment_status"], "paid");
    // Exact money: the rest (6 slots) moves with the booking, less the slot of the move (the
    // minutes lost); Ana pays for 7 of the 8 slots.
    assert_eq!(moved["price_minor"], 5 * SLOT_MINOR);
    assert_eq!(was["price_minor"], 2 * SLOT_MINOR);
    assert_eq!(balance(&app, &ana).await, before - 7 * SLOT_MINOR);
    assert_books_balance(&app).await;
    assert_capacity_kept(&app).await;

    // The GPU is out of booking (maintenance set by Berth) and the node's schedule has the rest.
    let windows = maintenance_window::Entity::find()
        .filter(maintenance_window::Column::GpuId.eq(a0))
        .all(&app.db)
        .await
        .unwrap();
    assert_eq!(windows.len(), 1);
    assert!(windows[0].reason.contains("XID 79"), "{:?}", windows[0]);
    assert_eq!(windows[0].created_by, None);
    assert_eq!(
        windows[0].reason_code.as_deref(),
        Some(r#"{"what":"fell_off_bus","xid":79}"#)
    );
    // Admins read Berth's reason in their language.
    app.sign_in("platform_admin").await;
    let page = app.get_in_language("/admin/maintenance", "pt-BR").await;
    assert!(
        page.contains("XID 79: a GPU caiu do barramento") && page.contains("Berth (automático)"),
        "{page}"
    );
    let (status, leases) = get(&app, &token, "/api/v1/agent/leases").await;
    assert_eq!(status, 200, "{leases}");
    let ids: Vec<i64> = leases["leases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["reservation_id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![rest], "{leases}");
    assert_eq!(leases["leases"][0]["gpus"][0]["uuid"], "GPU-fa1");

    // Ana hears: where it went, how to connect, what came back.
    let items = inbox(&app, "ana@example.org").await;
    let told = of_kind(&items, EventKind::BookingMoved);
    assert_eq!(told.len(), 1, "{items:#?}");
    let notice = &told[0].notice;
    assert_eq!(notice.reservation.as_ref().unwrap().id, rest);
    assert_eq!(notice.target.as_deref(), Some("ssh ana@fo-a.example"));
    assert_eq!(notice.amount_minor, Some(SLOT_MINOR));
    let brief = notice.moved.as_ref().unwrap();
    assert_eq!(
        (brief.from_reservation, brief.cause),
        (first, FailureCause::FellOffBus)
    );
    // Told again (the agent resends): nothing moves twice.
    let (status, _) = post_json(
        &app,
        &token,
        "/api/v1/agent/report",
        &xid("GPU-fa0", failed_at, 79),
    )
    .await;
    assert_eq!(status, 200);
    let again = reservation_json(&app, &ana, rest).await;
    assert_eq!(again["gpu_ids"], json!([a1]));
    assert_eq!(
        of_kind(
            &inbox(&app, "ana@example.org").await,
            EventKind::BookingMoved
        )
        .len(),
        1
    );
    // The reservation list says what happened, in Portuguese too.
    let (_, list) = get(&app, &ana, "/api/v1/reservations").await;
    assert_eq!(list.as_array().unwrap().len(), 2, "{list}");
    app.stop().await;
}

async fn a_vanished_gpu_moves_bookings_to_another_node(backend: Backend) {
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, now).await;
    let token_a = node(&app, "fo-a", "fo-a.example", &["GPU-va0", "GPU-va1"]).await;
    node(&app, "fo-b", "fo-b.example", &["GPU-vb0", "GPU-vb1"]).await;
    let (a0, a1) = (gpu_of(&app, "GPU-va0").await, gpu_of(&app, "GPU-va1").await);
    let b0 = gpu_of(&app, "GPU-vb0").await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let bob = user_token(&app, "bob@example.org", PlatformRole::User).await;
    let carl = user_token(&app, "carl@example.org", PlatformRole::User).await;
    let ana_before = balance(&app, &ana).await;
    // Ana on GPU 0 for an hour; Bob has the other GPU of node A; Carl books GPU 0 for tomorrow.
    let (status, ana_booking) = book(&app, &ana, booking(a0, now, 60)).await;
    assert_eq!(status, 201, "{ana_booking}");
    let (status, _) = book(&app, &bob, booking(a1, now, 240)).await;
    assert_eq!(status, 201);
    let tomorrow = now + TimeDelta::days(1);
    let (status, carl_booking) = book(&app, &carl, booking(a0, tomorrow, 60)).await;
    assert_eq!(status, 201, "{carl_booking}");
    let carl_before = balance(&app, &carl).await;

    // 20 minutes in, node A's agent no longer finds GPU 0.
    clock.set(now + TimeDelta::minutes(20));
    let (status, body) = post_json(
        &app,
        &token_a,
        "/api/v1/agent/register",
        &registration("fo-a.example", &["GPU-va1"]),
    )
    .await;
    assert_eq!(
        (status, body["vanished"].as_i64()),
        (200, Some(1)),
        "{body}"
    );

    // Node A is full: Ana's rest continues on node B from 00:15.
    let id = ana_booking["id"].as_i64().unwrap();
    let was = reservation_json(&app, &ana, id).await;
    let rest = reservation_json(&app, &ana, was["moved_to"].as_i64().unwrap()).await;
    assert_eq!(rest["node_name"], "fo-b", "{rest}");
    assert_eq!(rest["gpu_ids"], json!([b0]));
    assert_eq!(rest["moved_from"], json!([id, "missing"]));
    // 4 slots: the first kept (1), the slot of the move lost; 2 paid on node B.
    assert_eq!(
        (was["price_minor"].as_i64(), rest["price_minor"].as_i64()),
        (Some(SLOT_MINOR), Some(2 * SLOT_MINOR))
    );
    assert_eq!(balance(&app, &ana).await, ana_before - 3 * SLOT_MINOR);
    let items = inbox(&app, "ana@example.org").await;
    let told = of_kind(&items, EventKind::BookingMoved);
    assert_eq!(told.len(), 1, "{items:#?}");
    assert_eq!(
        told[0].notice.target.as_deref(),
        Some("ssh ana@fo-b.example")
    );

    // Carl's booking had not begun: it moves whole (same id, same price, nothing lost), to the
    // other GPU of its node, free tomorrow.
    let carl_id = carl_booking["id"].as_i64().unwrap();
    let carl_now = reservation_json(&app, &carl, carl_id).await;
    assert_eq!(carl_now["node_name"], "fo-a", "{carl_now}");
    assert_eq!(carl_now["gpu_ids"], json!([a1]));
    assert_eq!(carl_now["price_minor"], carl_booking["price_minor"]);
    assert_eq!(carl_now["window"], carl_booking["window"]);
    assert!(carl_now.get("moved_to").is_none(), "{carl_now}");
    assert_eq!(balance(&app, &carl).await, carl_before);
    let carl_told = inbox(&app, "carl@example.org").await;
    let moved = of_kind(&carl_told, EventKind::BookingMoved);
    assert_eq!(moved.len(), 1, "{carl_told:#?}");
    assert_eq!(moved[0].notice.amount_minor, None);
    // Bob, on the GPU that works, is untouched.
    assert!(
        of_kind(
            &inbox(&app, "bob@example.org").await,
            EventKind::BookingMoved
        )
        .is_empty()
    );
    assert_books_balance(&app).await;
    assert_capacity_kept(&app).await;
    app.stop().await;
}

async fn with_no_equivalent_gpu_the_rest_is_refunded_with_the_nearest_window(backend: Backend) {
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, now).await;
    node(&app, "fo-a", "fo-a.example", &["GPU-na0", "GPU-na1"]).await;
    let (a0, a1) = (gpu_of(&app, "GPU-na0").await, gpu_of(&app, "GPU-na1").await);
    let root = user_token(&app, "root@example.org", PlatformRole::PlatformAdmin).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let bob = user_token(&app, "bob@example.org", PlatformRole::User).await;
    let before = balance(&app, &ana).await;
    let (status, ana_booking) = book(&app, &ana, booking(a0, now, 120)).await;
    assert_eq!(status, 201, "{ana_booking}");
    // Bob holds the only other GPU of the model for three hours.
    let (status, _) = book(&app, &bob, booking(a1, now, 180)).await;
    assert_eq!(status, 201);

    // 20 minutes in, a platform admin retires Ana's GPU.
    clock.set(now + TimeDelta::minutes(20));
    let (status, retired) = post_json(
        &app,
        &root,
        &format!("/api/v1/admin/gpus/{a0}/retire"),
        &json!({}),
    )
    .await;
    assert_eq!(status, 200, "{retired}");
    let id = ana_booking["id"].as_i64().unwrap();
    assert_eq!(retired["released"], json!([id]), "{retired}");
    assert_eq!(retired["moved"], json!([]));

    // Her booking ends at 00:15 (used: one slot); the rest (7 slots) comes back in full.
    let was = reservation_json(&app, &ana, id).await;
    assert_eq!(was["window"]["end"], json!(now + TimeDelta::minutes(15)));
    assert_eq!(was["released"], "gpu_failed", "{was}");
    assert_eq!(balance(&app, &ana).await, before - SLOT_MINOR);
    // The nearest window for the rest (1 h 45 min of the model): when Bob's booking ends.
    let offer = &was["displaced_offer"];
    assert_eq!(
        offer["window"]["start"],
        json!(now + TimeDelta::hours(3)),
        "{was}"
    );
    assert_eq!(
        offer["window"]["end"],
        json!(now + TimeDelta::hours(3) + TimeDelta::minutes(105))
    );
    let items = inbox(&app, "ana@example.org").await;
    let released = of_kind(&items, EventKind::BookingReleased);
    assert_eq!(released.len(), 1, "{items:#?}");
    assert_eq!(released[0].notice.amount_minor, Some(7 * SLOT_MINOR));
    assert!(released[0].notice.offer.is_some());
    // The notice in Portuguese says why.
    let text = berth_app::text::email::in_locale(berth_app::i18n::Locale::pt_BR, |i18n| {
        berth_app::text::notify::lines(
            i18n,
            released[0].kind,
            &released[0].notice,
            &berth_app::domain::zone::ZoneOffsets::utc(),
            &app.state.portal.currency,
        )
        .join("\n")
    });
    assert!(text.contains("nenhuma GPU equivalente"), "{text}");
    assert_books_balance(&app).await;
    assert_capacity_kept(&app).await;
    app.stop().await;
}

async fn maintenance_moves_the_bookings_in_its_way(backend: Backend) {
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, _clock) = spawn_app_at(backend, now).await;
    node(&app, "fo-a", "fo-a.example", &["GPU-ma0", "GPU-ma1"]).await;
    let (a0, a1) = (gpu_of(&app, "GPU-ma0").await, gpu_of(&app, "GPU-ma1").await);
    let root = user_token(&app, "root@example.org", PlatformRole::PlatformAdmin).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let before = balance(&app, &ana).await;
    // Ana runs on GPU 0 for four hours; maintenance from the second hour, for an hour.
    let (status, ana_booking) = book(&app, &ana, booking(a0, now, 240)).await;
    assert_eq!(status, 201, "{ana_booking}");
    let request = json!({
        "gpu_ids": [a0],
        "start": (now + TimeDelta::hours(1)).to_rfc3339(),
        "end": (now + TimeDelta::hours(2)).to_rfc3339(),
        "reason": "fan swap",
    });
    let (status, refused) = post_json(&app, &root, "/api/v1/maintenance", &request).await;
    assert_eq!(status, 409, "{refused}");
    let mut confirmed = request.clone();
    confirmed["release_reservations"] = json!(true);
    let (status, body) = post_json(&app, &root, "/api/v1/maintenance", &confirmed).await;
    assert!(status == 200 || status == 201, "{status} {body}");

    // From the maintenance on, Ana's booking continues on GPU 1; the slot of the move is hers.
    let id = ana_booking["id"].as_i64().unwrap();
    let was = reservation_json(&app, &ana, id).await;
    assert_eq!(
        was["window"]["end"],
        json!(now + TimeDelta::hours(1)),
        "{was}"
    );
    let rest = reservation_json(&app, &ana, was["moved_to"].as_i64().unwrap()).await;
    assert_eq!(rest["gpu_ids"], json!([a1]), "{rest}");
    assert_eq!(rest["moved_from"], json!([id, "maintenance"]));
    assert_eq!(balance(&app, &ana).await, before - 15 * SLOT_MINOR);
    let row = reservation_row(&app, id).await;
    assert_eq!(row.status, reservation::Status::Confirmed);
    assert_books_balance(&app).await;
    assert_capacity_kept(&app).await;
    app.stop().await;
}

async fn a_real_agent_reporting_xid_79_moves_the_booking(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let (_, token) = telemetry::issue_node_token(&app.db, "fo-real", Some(true), None, Utc::now())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("fake-nvml.json");
    let fake = |xids: &[u64]| {
        let device = |uuid: &str, bus: &str, xids: &[u64]| {
            json!({
                "uuid": uuid, "name": MODEL, "pci_bus_id": bus,
                "memory_total_mib": 16384, "memory_used_mib": 3, "gpu_util": 0, "mem_util": 0,
                "temperature_c": 34, "power_mw": 71000, "power_limit_mw": 70000,
                "sm_clock_mhz": 345, "throttle_reasons": 0, "ecc_corrected": 0,
                "ecc_uncorrected": 0, "processes": [], "xid_events": xids
            })
        };
        json!({
            "driver_version": "550.54.15",
            "devices": [
                device("GPU-real-0", "00000000:17:00.0", xids),
                device("GPU-real-1", "00000000:2A:00.0", &[]),
            ]
        })
    };
    write_json(&config, &fake(&[]));
    let _agent = start_agent_with(&app.url(""), &token, &config, &["--no-access"]);
    let g0 = eventually("the agent's GPUs", || async {
        let g = gpu::Entity::find()
            .filter(gpu::Column::Uuid.eq("GPU-real-1"))
            .one(&app.db)
            .await
            .unwrap()?;
        let _ = g;
        Some(gpu_of(&app, "GPU-real-0").await)
    })
    .await;
    let g1 = gpu_of(&app, "GPU-real-1").await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    // From the current slot for an hour: running now.
    let start = grid(Utc::now());
    let (status, booked) = book(&app, &ana, booking(g0, start, 60)).await;
    assert_eq!(status, 201, "{booked}");
    let id = booked["id"].as_i64().unwrap();

    // The fake NVML library reports XID 79 on GPU 0.
    write_json(&config, &fake(&[79]));
    let on = eventually("the booking on GPU 1", || async {
        let view = reservation_json(&app, &ana, id).await;
        // Moved whole (failed in its first slot), or its rest continues elsewhere.
        let current = match view["moved_to"].as_i64() {
            Some(rest) => reservation_json(&app, &ana, rest).await,
            None => view,
        };
        (current["gpu_ids"] == json!([g1])).then_some(current)
    })
    .await;
    assert_eq!(on["node_name"], "fo-real");
    let items = inbox(&app, "ana@example.org").await;
    assert_eq!(
        of_kind(&items, EventKind::BookingMoved).len(),
        1,
        "{items:#?}"
    );
    assert_books_balance(&app).await;
    assert_capacity_kept(&app).await;
    app.stop().await;
}
