//! Idle reclaim: a running booking whose GPUs report utilisation below the policy's threshold is
//! warned at 60 and 105 minutes and released at 120 with half the unused rest refunded; a holder
//! who says "I'm still using it" restarts the count (once); small short bookings are exempt;
//! GPUs without telemetry are never called idle; only platform admins set policies. Telemetry
//! goes in through the agent's HTTP API, time moves on the portal's test clock, and the job runs
//! as `berth serve` runs it.

use crate::helpers::*;
use berth_app::backend::{db, reclaim};
use berth_app::domain::notify::{EventKind, InboxItem};
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Value, json};

crate::on_both_backends!(
    an_idle_booking_is_warned_twice_then_released_with_half_the_rest_refunded,
    still_using_exempt_and_unmeasured_bookings_are_not_released,
    only_platform_admins_set_idle_policies_and_bad_values_are_refused,
);

/// A model no demo GPU has, so only the test's node offers it.
const MODEL: &str = "NVIDIA A2 Idle";
/// The portal's price for a GPU an agent reports first: 2.00 an hour, 0.50 a slot.
const SLOT_MINOR: i64 = 50;

/// A node whose agent reported `count` GPUs `GPU-<prefix><i>`; answers its token and GPU ids.
async fn node(app: &TestApp, prefix: &str, count: usize) -> (String, Vec<i64>) {
    agent_node(app, prefix, MODEL, count).await
}

/// Reports one sample a minute for `uuids` over `[from, to)` at `util` %.
async fn report(
    app: &TestApp,
    token: &str,
    uuids: &[String],
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    util: i64,
) {
    let mut samples = Vec::new();
    let mut at = from;
    while at < to {
        for uuid in uuids {
            samples.push(json!({"uuid": uuid, "at": at.to_rfc3339(), "gpu_util": util}));
        }
        at += TimeDelta::minutes(1);
    }
    let (status, body) = post_json(
        app,
        token,
        "/api/v1/agent/report",
        &json!({ "samples": samples }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

fn booking(gpus: &[i64], start: DateTime<Utc>, hours: i64) -> Value {
    json!({
        "gpu_ids": gpus,
        "start": start.to_rfc3339(),
        "end": (start + TimeDelta::hours(hours)).to_rfc3339(),
    })
}

async fn inbox(app: &TestApp, email: &str) -> Vec<InboxItem> {
    crate::notify::settle(app, app.state.now()).await;
    db::notify::latest_notices(&app.db, user_id(app, email).await, 100)
        .await
        .unwrap()
}

fn of_kind(items: &[InboxItem], kind: EventKind) -> Vec<&InboxItem> {
    items.iter().filter(|item| item.kind == kind).collect()
}

async fn run_job(app: &TestApp) -> reclaim::Outcome {
    reclaim::run(&app.db, app.state.now()).await.unwrap()
}

async fn an_idle_booking_is_warned_twice_then_released_with_half_the_rest_refunded(
    backend: Backend,
) {
    let start = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, start).await;
    let (token, gpus) = node(&app, "idle-a", 2).await;
    let uuids: Vec<String> = (0..2).map(|i| format!("GPU-idle-a{i}")).collect();
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let before = balance(&app, &ana).await;
    // Two GPUs for 12 hours: 96 GPU-slots.
    let (status, booked) = book(&app, &ana, booking(&gpus, start, 12)).await;
    assert_eq!(status, 201, "{booked}");
    let id = booked["id"].as_i64().unwrap();
    assert_eq!(booked["price_minor"], 96 * SLOT_MINOR);

    // Ten minutes of training, then nothing.
    let minute = |m: i64| start + TimeDelta::minutes(m);
    clock.set(minute(69));
    report(&app, &token, &uuids, (minute(0), minute(10)), 97).await;
    report(&app, &token, &uuids, (minute(10), minute(69)), 1).await;
    assert_eq!(
        run_job(&app).await,
        reclaim::Outcome::default(),
        "59 minutes idle"
    );

    clock.set(minute(70) + TimeDelta::seconds(30));
    report(&app, &token, &uuids, (minute(69), minute(71)), 0).await;
    let outcome = run_job(&app).await;
    assert_eq!(outcome.warned, 1, "{outcome:?}");
    assert_eq!(run_job(&app).await.warned, 0, "the first warning goes once");
    let items = inbox(&app, "ana@example.org").await;
    let warnings = of_kind(&items, EventKind::IdleWarning);
    assert_eq!(warnings.len(), 1, "{items:?}");
    let idle = warnings[0].notice.idle.clone().expect("idle brief");
    assert_eq!(idle.since, minute(10));
    assert_eq!(idle.threshold_percent, 5);
    assert_eq!(
        warnings[0].notice.until,
        Some(minute(130)),
        "released at 120 idle minutes"
    );
    // The node's agent gets the warning for the holder's terminals, with the page to answer it.
    let (status, schedule) = get(&app, &token, "/api/v1/agent/leases").await;
    assert_eq!(status, 200, "{schedule}");
    let lease = schedule["leases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|lease| lease["reservation_id"] == id)
        .cloned()
        .expect("the lease");
    let key = lease["notice"]["key"].as_str().unwrap();
    assert!(key.starts_with(&format!("idle_warning:{id}:")), "{lease}");
    let text = lease["notice"]["text"].as_str().unwrap();
    assert!(text.starts_with("Berth — "), "{text}");
    assert!(text.contains(&format!("/reservations/{id}")), "{text}");
    assert!(text.contains("I'm still using it"), "{text}");

    clock.set(minute(115) + TimeDelta::seconds(30));
    report(&app, &token, &uuids, (minute(71), minute(116)), 2).await;
    assert_eq!(
        run_job(&app).await.warned,
        1,
        "the second warning at 105 minutes"
    );
    let items = inbox(&app, "ana@example.org").await;
    assert_eq!(of_kind(&items, EventKind::IdleWarning).len(), 2);

    clock.set(minute(130) + TimeDelta::seconds(30));
    report(&app, &token, &uuids, (minute(116), minute(131)), 0).await;
    let outcome = run_job(&app).await;
    assert_eq!(outcome.released, 1, "{outcome:?}");
    assert_eq!(run_job(&app).await.released, 0, "released once");

    // The rest ends at the next quarter hour (2:15 in); 39 slots × 2 GPUs were not used: half
    // their worth comes back, and the price drops by as much.
    let new_end = minute(135);
    let (status, now) = get(&app, &ana, &format!("/api/v1/reservations/{id}")).await;
    assert_eq!(status, 200, "{now}");
    assert_eq!(now["window"]["end"], json!(new_end), "{now}");
    assert_eq!(now["released"], "idle", "{now}");
    let refund = 39 * 2 * SLOT_MINOR / 2;
    assert_eq!(now["price_minor"], 96 * SLOT_MINOR - refund);
    assert_eq!(balance(&app, &ana).await, before - 96 * SLOT_MINOR + refund);
    let row = reservation_row(&app, id).await;
    assert_eq!(row.reclaimed_until, Some(minute(720)));
    // The freed GPUs can be booked from the new end.
    let bea = user_token(&app, "bea@example.org", PlatformRole::User).await;
    let (status, body) = book(&app, &bea, booking(&gpus, new_end, 2)).await;
    assert_eq!(status, 201, "{body}");

    let items = inbox(&app, "ana@example.org").await;
    let released = of_kind(&items, EventKind::BookingReleased);
    assert_eq!(released.len(), 1, "{items:?}");
    assert_eq!(released[0].notice.amount_minor, Some(refund));
    assert_eq!(
        released[0].notice.reason,
        Some(berth_app::domain::reservation::ReleaseReason::Idle)
    );
    // The reports count it: 39 slots of 2 GPUs = 19.5 GPU-hours came back, 19.50 refunded.
    let admin = user_token(&app, "root@example.org", PlatformRole::PlatformAdmin).await;
    let day = |at: DateTime<Utc>| at.date_naive().to_string();
    let query = format!(
        "from={}&to={}&tz=UTC",
        day(start),
        day(start + TimeDelta::days(1))
    );
    let (status, usage) = get(
        &app,
        &admin,
        &format!("/api/v1/reports/usage?{query}&group_by=user&scope=all"),
    )
    .await;
    assert_eq!(status, 200, "{usage}");
    assert_eq!(usage["totals"]["reclaimed_bookings"], 1, "{usage}");
    assert_eq!(usage["totals"]["reclaimed_gpu_hours"], 19.5, "{usage}");
    assert_eq!(usage["totals"]["reclaim_refunds"], "19.50", "{usage}");
    let (status, fleet) = get(&app, &admin, &format!("/api/v1/reports/fleet?{query}")).await;
    assert_eq!(status, 200, "{fleet}");
    let reclaimed: f64 = fleet["days"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["reclaimed_gpu_hours"].as_f64().unwrap())
        .sum();
    assert!((reclaimed - 19.5).abs() < 1e-9, "{fleet}");
    // The job's change is in the audit log.
    let (status, audit) = get(&app, &admin, "/api/v1/admin/audit?action=booking.reclaim").await;
    assert_eq!(status, 200, "{audit}");
    assert!(audit.to_string().contains(&format!("\"{id}\"")), "{audit}");
    assert_capacity_kept(&app).await;
    assert_books_balance(&app).await;
}

async fn still_using_exempt_and_unmeasured_bookings_are_not_released(backend: Backend) {
    let start = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, start).await;
    let (token, gpus) = node(&app, "idle-b", 5).await;
    let uuid = |i: usize| format!("GPU-idle-b{i}");
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let bea = user_token(&app, "bea@example.org", PlatformRole::User).await;
    // Ana: 2 GPUs for 12 h (says she is still using them). Bea: 1 GPU for 4 h (an interactive
    // session: exempt), and 2 GPUs for 12 h whose agent reports nothing about them.
    let (_, a) = book(&app, &ana, booking(&gpus[0..2], start, 12)).await;
    let (_, b) = book(&app, &bea, booking(&gpus[2..3], start, 4)).await;
    let (_, c) = book(&app, &bea, booking(&gpus[3..5], start, 12)).await;
    let (a, b, c) = (
        a["id"].as_i64().unwrap(),
        b["id"].as_i64().unwrap(),
        c["id"].as_i64().unwrap(),
    );
    let minute = |m: i64| start + TimeDelta::minutes(m);
    let measured: Vec<String> = (0..3).map(uuid).collect();
    clock.set(minute(60) + TimeDelta::seconds(30));
    report(&app, &token, &measured, (minute(0), minute(61)), 0).await;
    let outcome = run_job(&app).await;
    assert_eq!(outcome.warned, 1, "only Ana's booking: {outcome:?}");
    assert_eq!(outcome.unmeasured, 1, "Bea's unreported GPUs: {outcome:?}");

    // Someone else cannot speak for Ana; she can, once.
    let path = format!("/api/v1/reservations/{a}/still-using");
    let (status, _) = post_json(&app, &bea, &path, &json!({})).await;
    assert_eq!(status, 404);
    let (status, body) = post_json(&app, &ana, &path, &json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["still_using_at"], json!(app.state.now()));
    let (status, body) = post_json(&app, &ana, &path, &json!({})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "already_snoozed", "{body}");
    // A booking not running yet cannot be snoozed.
    let (_, later) = book(
        &app,
        &ana,
        booking(&gpus[0..1], start + TimeDelta::days(1), 1),
    )
    .await;
    let later = later["id"].as_i64().unwrap();
    let (status, body) = post_json(
        &app,
        &ana,
        &format!("/api/v1/reservations/{later}/still-using"),
        &json!({}),
    )
    .await;
    assert_eq!((status, body["code"].clone()), (409, json!("not_running")));

    // Two hours idle in all: Ana's count began again when she spoke (an hour ago), the exempt
    // booking is never touched, the unmeasured one never called idle.
    clock.set(minute(130) + TimeDelta::seconds(30));
    report(&app, &token, &measured, (minute(61), minute(131)), 0).await;
    let outcome = run_job(&app).await;
    assert_eq!(outcome.released, 0, "{outcome:?}");
    for id in [a, b, c] {
        let row = reservation_row(&app, id).await;
        assert!(
            row.released_reason.is_none() && row.reclaimed_until.is_none(),
            "{id}"
        );
    }
    let items = inbox(&app, "bea@example.org").await;
    assert!(
        of_kind(&items, EventKind::IdleWarning).is_empty(),
        "{items:?}"
    );
    // Ana's new streak counts from her "still using it": its first warning came at 60 minutes.
    let items = inbox(&app, "ana@example.org").await;
    let warnings = of_kind(&items, EventKind::IdleWarning);
    assert_eq!(warnings.len(), 2, "{items:?}");
    assert_books_balance(&app).await;
}

async fn only_platform_admins_set_idle_policies_and_bad_values_are_refused(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let admin = user_token(&app, "root@example.org", PlatformRole::PlatformAdmin).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let path = "/api/v1/admin/idle-policy";
    let (status, body) = get(&app, &admin, path).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["policy"]["threshold_percent"], 5);
    assert_eq!(body["policy"]["window_minutes"], 120);
    assert_eq!(body["policy"]["warnings"], json!([60, 105]));
    assert_eq!(body["policy"]["action"], "release");
    assert_eq!(body["policy"]["refund_percent"], 50);
    assert_eq!(get(&app, &ana, path).await.0, 403);
    let put = |token: String, path: String, body: Value| {
        let app = &app;
        async move { answer(client().put(app.url(&path)).bearer_auth(token).json(&body)).await }
    };
    assert_eq!(
        put(ana.clone(), path.into(), json!({"action": "off"}))
            .await
            .0,
        403
    );
    for (body, field) in [
        (json!({"threshold_percent": 0}), "threshold_percent"),
        (json!({"window_minutes": 5}), "window_minutes"),
        (json!({"warnings": [105, 60]}), "warnings"),
        (json!({"warnings": [60, 200]}), "warnings"),
        (json!({"refund_percent": 150}), "refund_percent"),
    ] {
        let (status, answer) = put(admin.clone(), path.into(), body.clone()).await;
        assert_eq!(status, 422, "{body} → {answer}");
        assert_eq!(answer["field"], field, "{answer}");
    }
    // Numbers that do not fit and unknown fields are refused as unreadable.
    for body in [
        json!({"threshold_percent": 99999999999u64}),
        json!({"action": "explode"}),
        json!({"windowminutes": 60}),
    ] {
        let (status, answer) = put(admin.clone(), path.into(), body.clone()).await;
        assert_eq!(status, 422, "{body} → {answer}");
    }
    let (status, _) = get(&app, &admin, path).await;
    assert_eq!(status, 200);
    assert_eq!(
        get(&app, &admin, path).await.1["policy"]["action"],
        "release",
        "nothing changed"
    );

    // A team gets its own: warn only, 30 minutes, no warnings before.
    let team = team_with_admin(&app, &admin, "Vision", "ana@example.org").await;
    let team_path = format!("{path}?team={team}");
    let (status, body) = put(
        admin.clone(),
        team_path.clone(),
        json!({"action": "warn", "window_minutes": 30, "warnings": []}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (_, shown) = get(&app, &admin, &team_path).await;
    assert_eq!(shown["own"], true);
    assert_eq!(shown["policy"]["action"], "warn");
    let (_, platform) = get(&app, &admin, path).await;
    assert_eq!(
        platform["policy"]["action"], "release",
        "the platform's is unchanged"
    );
    assert_eq!(
        get(&app, &admin, &format!("{path}?team=999999")).await.0,
        404
    );
    let (status, _) = answer(client().delete(app.url(&team_path)).bearer_auth(&admin)).await;
    assert_eq!(status, 204);
    let (_, shown) = get(&app, &admin, &team_path).await;
    assert_eq!(
        (shown["own"].clone(), shown["policy"]["action"].clone()),
        (json!(false), json!("release"))
    );
    let (_, audit) = get(&app, &admin, "/api/v1/admin/audit?action=idle.policy").await;
    assert_eq!(audit.as_array().map_or(0, Vec::len), 2, "{audit}");
}
