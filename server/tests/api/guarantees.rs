//! Guarantees that are guarantees, on both stores: with the fleet full of bookings that borrow
//! guaranteed capacity (another team's burst bookings, personal bookings beyond the GPUs nobody
//! is guaranteed), two teams book their guarantees at the same moment and both get them; exactly
//! the borrowers needed give way, refunded in full with a window offered; the calendar marks the
//! borrowers before anyone books.

use crate::helpers::*;
use berth_app::domain::user::PlatformRole;
use chrono::TimeDelta;
use reqwest::Method;
use serde_json::{Value, json};

crate::on_both_backends!(teams_book_their_guarantees_at_once_and_exactly_the_borrowers_give_way,);

/// A model no demo GPU has: the test's node holds the whole fleet of it.
const MODEL: &str = "NVIDIA A2 Guarantee";

async fn put(app: &TestApp, token: &str, path: &str, body: Value) -> (u16, Value) {
    send(app, Method::PUT, Some(token), path, Some(body)).await
}

fn booking(team: Option<i64>, count: u32, start: chrono::DateTime<chrono::Utc>) -> Value {
    let mut body = json!({
        "model": MODEL,
        "count": count,
        "start": start.to_rfc3339(),
        "end": (start + TimeDelta::hours(2)).to_rfc3339(),
    });
    if let Some(team) = team {
        body["team_id"] = json!(team);
    }
    body
}

async fn status_of(app: &TestApp, token: &str, id: &Value) -> Value {
    let (status, body) = get(app, token, &format!("/api/v1/reservations/{id}")).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn teams_book_their_guarantees_at_once_and_exactly_the_borrowers_give_way(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    agent_node(&app, "guarantee", MODEL, 8).await;
    let model = MODEL.replace(' ', "%20");
    let platform = unfunded_user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let mut teams = Vec::new();
    for (name, admin, guaranteed) in [
        ("Vision", "ana@example.com", 3),
        ("Speech", "bob@example.com", 3),
        ("Sweep", "cid@example.com", 0),
    ] {
        let token = unfunded_user_token(&app, admin, PlatformRole::User).await;
        let team = funded_team(&app, &platform, name, (admin, &token), &[]).await;
        let (status, body) = put(
            &app,
            &platform,
            &format!("/api/v1/teams/{team}/quotas/{model}"),
            json!({ "guaranteed_gpus": guaranteed }),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        teams.push((team, token));
    }
    let [(vision, ana), (speech, bob), (sweep, cid)] =
        <[(i64, String); 3]>::try_from(teams).unwrap_or_else(|_| unreachable!("three teams"));
    let (status, body) = put(
        &app,
        &cid,
        &format!("/api/v1/teams/{sweep}/rules"),
        json!({ "allow_burst": true, "default_priority": "development" }),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // 8 GPUs, 6 guaranteed: 2 are nobody's. Four people book one each, one after another; the
    // sweep team bursts into the other four.
    let start = tomorrow(10, 0);
    let mut personal = Vec::new();
    for who in ["p1", "p2", "p3", "p4"] {
        let email = format!("{who}@example.com");
        let token = user_token(&app, &email, PlatformRole::User).await;
        let before = balance(&app, &token).await;
        let (status, booked) = book(&app, &token, booking(None, 1, start)).await;
        assert_eq!(status, 201, "{booked}");
        assert_eq!(booked["preemptible"], false);
        personal.push((token, booked, before));
    }
    let sweep_before = team_balance(&app, &cid, sweep).await;
    let (status, burst) = book(&app, &cid, booking(Some(sweep), 4, start)).await;
    assert_eq!(status, 201, "{burst}");
    assert_eq!(
        burst["preemptible"], true,
        "beyond its guarantee of 0: {burst}"
    );
    // Full: someone else is refused.
    let eve = user_token(&app, "eve@example.com", PlatformRole::User).await;
    let (status, refused) = book(&app, &eve, booking(None, 1, start)).await;
    assert_eq!(status, 409, "{refused}");

    // Before anyone books, the calendar marks what borrows: the two latest personal bookings
    // and the burst booking's four GPUs.
    app.sign_in("platform_admin").await;
    let day = start.date_naive();
    let (status, html) = app
        .get_text(&format!("/calendar?start={day}&span=day&model={model}"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        html.matches(r#"data-borrowing="true""#).count(),
        6,
        "{html}"
    );

    // Both teams book their guarantee at the same moment; both get it.
    let answers = post_all_at_once(
        &app,
        vec![
            (
                ana.clone(),
                "/api/v1/reservations".into(),
                booking(Some(vision), 3, start),
            ),
            (
                bob.clone(),
                "/api/v1/reservations".into(),
                booking(Some(speech), 3, start),
            ),
        ],
    )
    .await;
    for (status, body) in &answers {
        assert_eq!(*status, 201, "{body}");
        assert_eq!(body["preemptible"], false, "{body}");
        assert_eq!(body["gpu_ids"].as_array().unwrap().len(), 3, "{body}");
    }

    // Exactly the borrowers gave way: the burst booking and the two latest personal ones,
    // refunded in full and offered the nearest free window; the first two stay.
    let swept = status_of(&app, &cid, &burst["id"]).await;
    assert_eq!(swept["status"], "cancelled", "{swept}");
    assert_eq!(swept["released"], "preempted", "{swept}");
    assert!(!swept["displaced_offer"].is_null(), "{swept}");
    assert_eq!(team_balance(&app, &cid, sweep).await, sweep_before);
    for (i, (token, booked, before)) in personal.iter().enumerate() {
        let now = status_of(&app, token, &booked["id"]).await;
        if i < 2 {
            assert_eq!(now["status"], "confirmed", "p{}: {now}", i + 1);
        } else {
            assert_eq!(now["status"], "cancelled", "p{}: {now}", i + 1);
            assert_eq!(now["released"], "preempted", "{now}");
            assert_eq!(now["refunded_minor"], booked["price_minor"], "{now}");
            assert_eq!(balance(&app, token).await, *before, "refunded in full");
        }
    }
    // The fleet is full again with what is guaranteed and what fits in the shared part.
    let (status, refused) = book(&app, &eve, booking(None, 1, start)).await;
    assert_eq!(status, 409, "{refused}");
    // A team beyond its guarantee displaces nobody.
    let (status, refused) = book(&app, &ana, booking(Some(vision), 1, start)).await;
    assert_eq!(status, 409, "{refused}");
    assert_capacity_kept(&app).await;
    assert_books_balance(&app).await;
}
