//! Watches: a watcher is told when a cancellation frees the window they watch for, the window is
//! held for watchers (anyone else is refused) and booked in one click; two watchers racing for
//! one window: one wins, the other keeps watching; holds lapse, watches expire, bad watches and
//! other people's watches are refused. The job runs as `berth serve` runs it, on the test clock.

use crate::helpers::*;
use berth_app::backend::{db, watches};
use berth_app::domain::notify::{EventKind, InboxItem};
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Value, json};

crate::on_both_backends!(
    a_watcher_is_told_when_a_cancellation_frees_the_window_and_books_it,
    two_watchers_race_for_one_window_and_one_wins,
    holds_lapse_watches_expire_and_bad_or_foreign_watches_are_refused,
    what_stands_in_a_bookings_way_is_read_alike_on_both_stores,
);

/// A model no demo GPU has, so only the test's node offers it.
const MODEL: &str = "NVIDIA A2 Watch";

/// A node whose agent reported `count` GPUs of [`MODEL`]; answers their ids.
async fn node(app: &TestApp, prefix: &str, count: usize) -> Vec<i64> {
    agent_node(app, prefix, MODEL, count).await.1
}

fn booking(gpus: &[i64], start: DateTime<Utc>, hours: i64) -> Value {
    json!({
        "gpu_ids": gpus,
        "start": start.to_rfc3339(),
        "end": (start + TimeDelta::hours(hours)).to_rfc3339(),
    })
}

fn watch(from: DateTime<Utc>, to: DateTime<Utc>, hours: f64) -> Value {
    json!({ "model": MODEL, "count": 1, "hours": hours, "from": from.to_rfc3339(), "to": to.to_rfc3339() })
}

async fn make_watch(app: &TestApp, token: &str, body: &Value) -> Value {
    let (status, made) = post_json(app, token, "/api/v1/watches", body).await;
    assert_eq!(status, 201, "{made}");
    made
}

async fn run_job(app: &TestApp) -> watches::Outcome {
    let now = app.state.now();
    watches::run(
        &app.db,
        app.state.clock.as_ref(),
        berth_app::backend::reservations::latest_start(&app.state, now),
    )
    .await
    .unwrap()
}

async fn inbox(app: &TestApp, email: &str) -> Vec<InboxItem> {
    crate::notify::settle(app, app.state.now()).await;
    db::notify::latest_notices(&app.db, user_id(app, email).await, 100)
        .await
        .unwrap()
}

/// Waits (up to ten seconds) until `email` has been told of `count` held windows: the portal's
/// watch job runs by itself as soon as a change frees capacity.
async fn told_of(app: &TestApp, email: &str, count: usize) -> Vec<InboxItem> {
    for _ in 0..100 {
        let items = inbox(app, email).await;
        if offers(&items).len() >= count {
            return items;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{email} was not told of {count} windows");
}

fn offers(items: &[InboxItem]) -> Vec<&InboxItem> {
    items
        .iter()
        .filter(|item| item.kind == EventKind::WatchOffer)
        .collect()
}

async fn a_watcher_is_told_when_a_cancellation_frees_the_window_and_books_it(backend: Backend) {
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, now).await;
    let gpus = node(&app, "watch-a", 1).await;
    let start = now + TimeDelta::hours(2);
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let (status, taken) = book(&app, &ana, booking(&gpus, start, 4)).await;
    assert_eq!(status, 201, "{taken}");

    let bea = user_token(&app, "bea@example.org", PlatformRole::User).await;
    let made = make_watch(&app, &bea, &watch(start, start + TimeDelta::hours(4), 4.0)).await;
    let id = made["id"].as_i64().unwrap();
    assert_eq!(made["state"], "watching", "{made}");
    assert!(made["offer"].is_null(), "nothing free yet: {made}");
    assert_eq!(run_job(&app).await.offered, 0);

    clock.set(now + TimeDelta::minutes(7));
    let (status, body) = cancel(&app, &ana, &taken["id"]).await;
    assert_eq!(status, 200, "{body}");
    let told = told_of(&app, "bea@example.org", 1).await;
    assert_eq!(run_job(&app).await.offered, 0, "held once");
    let told = offers(&told);
    assert_eq!(told.len(), 1, "{told:?}");
    let hold_until = now + TimeDelta::minutes(17);
    assert_eq!(told[0].notice.until, Some(hold_until));
    assert_eq!(told[0].notice.watch, Some(id));
    let offered = told[0].notice.offer.clone().expect("the window");
    assert_eq!(offered.window.start(), start);
    assert_eq!(offered.gpu_ids, gpus);

    // Held for watchers: anyone else is refused until the hold ends.
    let carl = user_token(&app, "carl@example.org", PlatformRole::User).await;
    let (status, refused) = book(&app, &carl, booking(&gpus, start, 1)).await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["code"], "held_for_watchers", "{refused}");

    let (status, booked) = post_json(
        &app,
        &bea,
        &format!("/api/v1/watches/{id}/book"),
        &json!({}),
    )
    .await;
    assert_eq!(status, 201, "{booked}");
    assert_eq!(booked["window"]["start"], json!(start), "{booked}");
    assert_eq!(booked["window"]["end"], json!(start + TimeDelta::hours(4)));
    let (status, served) = get(&app, &bea, &format!("/api/v1/watches/{id}")).await;
    assert_eq!(status, 200, "{served}");
    assert_eq!(served["state"], "served", "{served}");
    assert_eq!(served["reservation_id"], booked["id"]);
    assert_eq!(served["offer"]["outcome"], "booked");
    // Booking it again is refused; recorded in the audit log.
    let (status, again) = post_json(
        &app,
        &bea,
        &format!("/api/v1/watches/{id}/book"),
        &json!({}),
    )
    .await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["code"], "watch_closed");
    let filter = berth_app::domain::audit::AuditFilter {
        action: Some(berth_app::domain::audit::AuditAction::WatchBooked),
        team_id: None,
        before_id: None,
        limit: None,
    };
    let entries = db::audit::list(&app.db, &filter).await.unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].target_id, id.to_string());
    // The reports count it.
    let admin = user_token(&app, "root@example.org", PlatformRole::PlatformAdmin).await;
    let day = |at: DateTime<Utc>| at.date_naive().to_string();
    let query = format!(
        "from={}&to={}&tz=UTC&group_by=user&scope=all",
        day(start),
        day(start + TimeDelta::days(1))
    );
    let (status, usage) = get(&app, &admin, &format!("/api/v1/reports/usage?{query}")).await;
    assert_eq!(status, 200, "{usage}");
    assert_eq!(usage["totals"]["watches_served"], 1, "{usage}");
    assert_capacity_kept(&app).await;
    assert_books_balance(&app).await;
    app.stop().await;
}

async fn two_watchers_race_for_one_window_and_one_wins(backend: Backend) {
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, now).await;
    let gpus = node(&app, "watch-b", 1).await;
    let start = now + TimeDelta::hours(3);
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let (status, taken) = book(&app, &ana, booking(&gpus, start, 2)).await;
    assert_eq!(status, 201, "{taken}");
    let bea = user_token(&app, "bea@example.org", PlatformRole::User).await;
    let carl = user_token(&app, "carl@example.org", PlatformRole::User).await;
    // Both want exactly the 2 hours from `start`.
    let span = watch(start, start + TimeDelta::hours(2), 2.0);
    let bea_watch = make_watch(&app, &bea, &span).await["id"].as_i64().unwrap();
    let carl_watch = make_watch(&app, &carl, &span).await["id"].as_i64().unwrap();

    clock.set(now + TimeDelta::minutes(2));
    let (status, body) = cancel(&app, &ana, &taken["id"]).await;
    assert_eq!(status, 200, "{body}");
    // Both watchers are told, without anyone running the job.
    for email in ["bea@example.org", "carl@example.org"] {
        assert_eq!(offers(&told_of(&app, email, 1).await).len(), 1, "{email}");
    }
    assert_eq!(run_job(&app).await.offered, 0, "each held once");

    let answers = post_all_at_once(
        &app,
        vec![
            (
                bea.clone(),
                format!("/api/v1/watches/{bea_watch}/book"),
                json!({}),
            ),
            (
                carl.clone(),
                format!("/api/v1/watches/{carl_watch}/book"),
                json!({}),
            ),
        ],
    )
    .await;
    let mut statuses: Vec<u16> = answers.iter().map(|(status, _)| *status).collect();
    statuses.sort_unstable();
    assert_eq!(statuses, vec![201, 409], "{answers:?}");
    let (_, lost) = answers.iter().find(|(status, _)| *status == 409).unwrap();
    assert_eq!(lost["code"], "window_taken", "{lost}");

    let (_, b) = get(&app, &bea, &format!("/api/v1/watches/{bea_watch}")).await;
    let (_, c) = get(&app, &carl, &format!("/api/v1/watches/{carl_watch}")).await;
    let mut states = vec![b["state"].clone(), c["state"].clone()];
    states.sort_by_key(ToString::to_string);
    assert_eq!(states, vec![json!("served"), json!("watching")], "{b} {c}");
    let loser = if b["state"] == "watching" { &b } else { &c };
    assert_eq!(loser["offer"]["outcome"], "lost", "{loser}");
    // Nothing else fits the loser's span: no new window.
    assert_eq!(
        loser["offer"]["window"]["start"],
        json!(start),
        "the same window for both: {loser}"
    );
    assert_eq!(run_job(&app).await.offered, 0);
    assert_capacity_kept(&app).await;
    assert_books_balance(&app).await;
    app.stop().await;
}

async fn holds_lapse_watches_expire_and_bad_or_foreign_watches_are_refused(backend: Backend) {
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, now).await;
    let gpus = node(&app, "watch-c", 1).await;
    let bea = user_token(&app, "bea@example.org", PlatformRole::User).await;
    let start = now + TimeDelta::hours(1);
    let end = start + TimeDelta::hours(5);

    let refused = |body: Value, field: &'static str| {
        let app = &app;
        let bea = bea.clone();
        async move {
            let (status, answer) = post_json(app, &bea, "/api/v1/watches", &body).await;
            assert_eq!(status, 422, "{body} → {answer}");
            assert_eq!(answer["field"], field, "{body} → {answer}");
            answer
        }
    };
    let mut bad = watch(start, end, 4.0);
    bad["count"] = json!(0);
    refused(bad, "count").await;
    refused(watch(start, end, 0.3), "hours").await;
    refused(watch(start, end, 1e30), "hours").await;
    refused(watch(end, start, 1.0), "to").await;
    let short = refused(watch(start, start + TimeDelta::hours(2), 4.0), "to").await;
    assert_eq!(short["code"], "watch_span", "{short}");
    let far = now + TimeDelta::weeks(60);
    refused(watch(far, far + TimeDelta::hours(5), 4.0), "from").await;
    let mut unknown = watch(start, end, 4.0);
    unknown["model"] = json!("No Such GPU");
    refused(unknown, "model").await;
    let mut extra = watch(start, end, 4.0);
    extra["priority"] = json!("production");
    let (status, answer) = post_json(&app, &bea, "/api/v1/watches", &extra).await;
    assert_eq!(status, 422, "{answer}");
    let mut bad_time = watch(start, end, 4.0);
    bad_time["from"] = json!("tomorrow");
    refused(bad_time, "from").await;

    // A window free already is held at once.
    let made = make_watch(&app, &bea, &watch(start, end, 4.0)).await;
    let id = made["id"].as_i64().unwrap();
    assert_eq!(made["offer"]["window"]["start"], json!(start), "{made}");
    assert!(made["offer"]["outcome"].is_null(), "{made}");

    // Someone else's watch: not found, whatever they try.
    let carl = user_token(&app, "carl@example.org", PlatformRole::User).await;
    let path = format!("/api/v1/watches/{id}");
    assert_eq!(get(&app, &carl, &path).await.0, 404);
    assert_eq!(
        send(&app, reqwest::Method::DELETE, Some(&carl), &path, None)
            .await
            .0,
        404
    );
    assert_eq!(
        post_json(&app, &carl, &format!("{path}/book"), &json!({}))
            .await
            .0,
        404
    );
    assert_eq!(get(&app, &carl, "/api/v1/watches/99999999").await.0, 404);

    // The hold lapses unused: the watcher can no longer book through it, the same window is not
    // offered again, and anyone may book it.
    clock.set(now + TimeDelta::minutes(11));
    let outcome = run_job(&app).await;
    assert_eq!(outcome.lapsed, 1, "{outcome:?}");
    assert_eq!(outcome.offered, 0, "{outcome:?}");
    let (status, late) = post_json(&app, &bea, &format!("{path}/book"), &json!({})).await;
    assert_eq!(status, 409, "{late}");
    assert_eq!(late["code"], "no_window_held", "{late}");
    let (status, body) = book(&app, &carl, booking(&gpus, start, 1)).await;
    assert_eq!(status, 201, "{body}");

    // Stopping it: once.
    let (status, stopped) = send(&app, reqwest::Method::DELETE, Some(&bea), &path, None).await;
    assert_eq!(status, 200, "{stopped}");
    assert_eq!(stopped["state"], "cancelled");
    let (status, again) = send(&app, reqwest::Method::DELETE, Some(&bea), &path, None).await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["code"], "watch_closed");

    // A watch whose span has passed expires.
    let (status, body) = book(&app, &carl, booking(&gpus, start + TimeDelta::hours(1), 4)).await;
    assert_eq!(status, 201, "{body}");
    let later = make_watch(&app, &bea, &watch(start, end, 4.0)).await;
    assert!(later["offer"].is_null(), "the GPU is taken: {later}");
    clock.set(start + TimeDelta::hours(1) + TimeDelta::minutes(1));
    assert_eq!(run_job(&app).await.expired, 1);
    let (_, expired) = get(&app, &bea, &format!("/api/v1/watches/{}", later["id"])).await;
    assert_eq!(expired["state"], "expired", "{expired}");

    // At most 20 watching at once.
    let far_end = now + TimeDelta::days(3);
    for _ in 0..20 {
        make_watch(&app, &bea, &watch(start + TimeDelta::days(1), far_end, 4.0)).await;
    }
    let (status, many) = post_json(
        &app,
        &bea,
        "/api/v1/watches",
        &watch(start + TimeDelta::days(1), far_end, 4.0),
    )
    .await;
    assert_eq!(status, 409, "{many}");
    assert_eq!(many["code"], "too_many_watches");
    let (status, list) = get(&app, &bea, "/api/v1/watches").await;
    assert_eq!(status, 200);
    assert_eq!(list.as_array().unwrap().len(), 22);
    assert_capacity_kept(&app).await;
    app.stop().await;
}

/// `db::reservations::in_the_way` (one statement on PostgreSQL, three reads on SQLite): a
/// confirmed booking and a maintenance window occupy their GPUs, a cancelled booking does not, and
/// a window held for a watcher is answered on the GPUs asked about while it holds.
async fn what_stands_in_a_bookings_way_is_read_alike_on_both_stores(backend: Backend) {
    use berth_app::backend::entity::maintenance_window;
    use berth_app::domain::schedule::{Occupancy, Window};
    use sea_orm::{ActiveModelTrait, ActiveValue::Set};
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, _clock) = spawn_app_at(backend, now).await;
    let gpus = node(&app, "watch-d", 3).await;
    let start = now + TimeDelta::hours(2);
    let window = Window::new(start, start + TimeDelta::hours(4)).unwrap();
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let (status, kept) = book(&app, &ana, booking(&gpus[..1], start, 4)).await;
    assert_eq!(status, 201, "{kept}");
    let (status, dropped) = book(&app, &ana, booking(&gpus[1..2], start, 4)).await;
    assert_eq!(status, 201, "{dropped}");
    assert_eq!(cancel(&app, &ana, &dropped["id"]).await.0, 200);
    let serviced = Window::new(start + TimeDelta::hours(1), start + TimeDelta::hours(2)).unwrap();
    maintenance_window::ActiveModel {
        gpu_id: Set(gpus[2]),
        start_at: Set(serviced.start()),
        end_at: Set(serviced.end()),
        reason: Set("fan".to_owned()),
        created_by: Set(None),
        created_at: Set(now),
        ..Default::default()
    }
    .insert(&app.db)
    .await
    .unwrap();
    // The cancelled booking's GPU is the one free GPU: held for bea's watch at once.
    let bea = user_token(&app, "bea@example.org", PlatformRole::User).await;
    let made = make_watch(&app, &bea, &watch(start, start + TimeDelta::hours(4), 4.0)).await;
    assert_eq!(made["offer"]["gpu_ids"], json!([gpus[1]]), "{made}");
    let hold_until: DateTime<Utc> = serde_json::from_value(made["offer"]["hold_until"].clone())
        .unwrap_or_else(|err| panic!("{made}: {err}"));

    let read = async |ids: &[i64], at: DateTime<Utc>| {
        let txn = db::begin_write(&app.db).await.unwrap();
        let found = db::reservations::in_the_way(&txn, ids, &window, at)
            .await
            .unwrap();
        txn.rollback().await.unwrap();
        found
    };
    let found = read(&gpus, now).await;
    let whole = |window| {
        vec![Occupancy {
            window,
            quarters: 4,
        }]
    };
    assert_eq!(found.occupied.len(), 2, "{found:?}");
    assert_eq!(found.occupied[&gpus[0]], whole(window));
    assert_eq!(found.occupied[&gpus[2]], whole(serviced));
    assert_eq!(
        found.watch_holds,
        vec![db::reservations::WatchHoldOn {
            gpu_id: gpus[1],
            window,
            quarters: 4,
            hold_until,
        }]
    );
    // Not on the GPUs asked about, or no longer holding: no hold.
    assert!(read(&gpus[..1], now).await.watch_holds.is_empty());
    assert!(read(&gpus, hold_until).await.watch_holds.is_empty());
    // Outside the window: nothing.
    let txn = db::begin_write(&app.db).await.unwrap();
    let after = Window::new(window.end(), window.end() + TimeDelta::hours(1)).unwrap();
    let none = db::reservations::in_the_way(&txn, &gpus, &after, now)
        .await
        .unwrap();
    txn.rollback().await.unwrap();
    assert!(
        none.occupied.is_empty() && none.watch_holds.is_empty(),
        "{none:?}"
    );
    app.stop().await;
}
