//! Booking through the JSON API: whole and fractional shares, conflicts with a suggestion, bad
//! input with field-level errors and nothing written, cancelling, find a slot, and capacity
//! under 200 concurrent requests (on PostgreSQL through two servers sharing one database).

use crate::helpers::*;
use berth_app::backend::db;
use berth_app::backend::entity::reservation;
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

async fn reservation_count(app: &TestApp) -> u64 {
    reservation::Entity::find().count(&app.db).await.unwrap()
}

async fn whole_and_shared_bookings_and_conflicts_with_a_suggestion(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.com", PlatformRole::User).await;
    let bia = user_token(&app, "bia@example.com", PlatformRole::User).await;
    let h100 = gpus_of(&app, "NVIDIA H100 80GB HBM3").await;
    let (start, end) = (tomorrow(9, 0), tomorrow(11, 0));

    let (status, booked) = book(
        &app,
        &ana,
        json!({"gpu_ids": [h100[0]], "share": 1, "start": start.to_rfc3339(), "end": end.to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 201, "{booked}");
    assert_eq!(booked["gpu_ids"], json!([h100[0]]));
    assert_eq!(booked["share"], "whole");
    assert_eq!(booked["status"], "confirmed");
    assert_eq!(booked["price_minor"], 698, "$3.49/h × 2 h");
    assert_eq!(booked["node_name"], "demo-hopper-01");

    // Bia wants the same GPU at an overlapping time: 409 naming the clash, with the nearest
    // window that fits (right after Ana's).
    let (status, clash) = book(
        &app,
        &bia,
        json!({"gpu_ids": [h100[0]], "start": tomorrow(10, 0).to_rfc3339(), "end": tomorrow(12, 0).to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 409, "{clash}");
    assert_eq!(clash["error"], "conflict");
    assert_eq!(clash["clash"]["gpu_id"], h100[0]);
    assert!(
        clash["message"]
            .as_str()
            .unwrap()
            .contains("demo-hopper-01 #0"),
        "{clash}"
    );
    let suggestion = &clash["clash"]["suggestion"];
    let suggested: DateTime<Utc> = suggestion["window"]["start"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        suggested, end,
        "the nearest free window starts when Ana's ends"
    );

    // Half and quarter shares on a shareable GPU: ½ + ¼ + ¼ fit, a fourth share does not.
    let a100 = gpus_of(&app, "NVIDIA A100-PCIE-40GB").await;
    let window = json!({"start": start.to_rfc3339(), "end": end.to_rfc3339()});
    for (token, share, expected) in [
        (&ana, json!(0.5), 201),
        (&bia, json!(0.25), 201),
        (&bia, json!("quarter"), 201),
        (&ana, json!(0.25), 409),
    ] {
        let mut body = window.clone();
        body["gpu_ids"] = json!([a100[0]]);
        body["share"] = share;
        let (status, answer) = book(&app, token, body).await;
        assert_eq!(status, expected, "{answer}");
    }
    // Not shareable: the H100s.
    let (status, refused) = book(
        &app,
        &ana,
        json!({"gpu_ids": [h100[1]], "share": 0.5, "start": start.to_rfc3339(), "end": end.to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(refused["field"], "share");

    // N GPUs of one model: Berth picks them on one node, all or nothing.
    let (status, four) = book(
        &app,
        &bia,
        json!({"model": "NVIDIA H100 80GB HBM3", "count": 4, "start": start.to_rfc3339(), "end": end.to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 201, "{four}");
    let picked: Vec<i64> = serde_json::from_value(four["gpu_ids"].clone()).unwrap();
    assert_eq!(picked.len(), 4);
    assert!(!picked.contains(&h100[0]), "Ana's GPU is not picked");
    let (status, _) = book(
        &app,
        &bia,
        json!({"model": "NVIDIA H100 80GB HBM3", "count": 4, "start": start.to_rfc3339(), "end": end.to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 409, "only 3 H100s are left in that window");

    let (status, mine) = get(&app, &ana, "/api/v1/reservations?mine=true").await;
    assert_eq!(status, 200);
    assert_eq!(mine.as_array().unwrap().len(), 2);
    app.stop().await;
}

async fn bad_input_gets_422_with_the_field_and_writes_nothing(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.com", PlatformRole::User).await;
    let h100 = gpus_of(&app, "NVIDIA H100 80GB HBM3").await;
    let gpu = h100[0];
    let past = Utc::now() - TimeDelta::days(1);
    let far = Utc::now() + TimeDelta::weeks(20);
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"gpu_ids": [gpu], "start": tomorrow(11, 0).to_rfc3339(), "end": tomorrow(10, 0).to_rfc3339()}),
            "end",
        ),
        (
            json!({"gpu_ids": [gpu], "start": tomorrow(10, 7).to_rfc3339(), "end": tomorrow(11, 0).to_rfc3339()}),
            "start",
        ),
        (
            json!({"gpu_ids": [gpu], "start": "2020-01-01T10:00:00Z", "end": "2020-01-01T11:00:00Z"}),
            "start",
        ),
        (
            json!({"gpu_ids": [gpu], "start": crate::helpers::grid(past).to_rfc3339(), "end": crate::helpers::grid(past + TimeDelta::hours(1)).to_rfc3339()}),
            "start",
        ),
        (
            json!({"gpu_ids": [gpu], "start": crate::helpers::grid(far).to_rfc3339(), "end": crate::helpers::grid(far + TimeDelta::hours(1)).to_rfc3339()}),
            "start",
        ),
        (
            json!({"gpu_ids": [gpu], "start": tomorrow(10, 0).to_rfc3339(), "end": (tomorrow(10, 0) + TimeDelta::days(30)).to_rfc3339()}),
            "end",
        ),
        (
            json!({"gpu_ids": [999_999], "start": tomorrow(10, 0).to_rfc3339(), "end": tomorrow(11, 0).to_rfc3339()}),
            "gpu_ids",
        ),
        (
            json!({"gpu_ids": [gpu], "start": "tomorrow at ten", "end": tomorrow(11, 0).to_rfc3339()}),
            "start",
        ),
        // A far year is refused on the first field that names one.
        (
            json!({"gpu_ids": [gpu], "start": "9999-12-31T23:45:00Z", "end": "10000-01-01T00:00:00Z"}),
            "start",
        ),
        (
            json!({"gpu_ids": [gpu], "start": tomorrow(10, 0).to_rfc3339(), "end": "10000-01-01T00:00:00Z"}),
            "end",
        ),
        (
            json!({"gpu_ids": [gpu], "share": 0.3, "start": tomorrow(10, 0).to_rfc3339(), "end": tomorrow(11, 0).to_rfc3339()}),
            "share",
        ),
        (
            json!({"gpu_ids": [], "start": tomorrow(10, 0).to_rfc3339(), "end": tomorrow(11, 0).to_rfc3339()}),
            "gpu_ids",
        ),
        (
            json!({"start": tomorrow(10, 0).to_rfc3339(), "end": tomorrow(11, 0).to_rfc3339()}),
            "gpu_ids",
        ),
        (json!({"gpu_ids": "one", "start": 1, "end": 2}), "body"),
    ];
    for (body, field) in cases {
        let (status, answer) = book(&app, &ana, body.clone()).await;
        assert_eq!(status, 422, "{body} → {answer}");
        assert_eq!(answer["error"], "validation", "{body} → {answer}");
        assert_eq!(answer["field"], field, "{body} → {answer}");
        assert!(!answer["message"].as_str().unwrap_or("").is_empty());
    }
    let raw = crate::helpers::client()
        .post(app.url("/api/v1/reservations"))
        .bearer_auth(&ana)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status().as_u16(), 422);
    assert_eq!(reservation_count(&app).await, 0, "nothing was written");

    let anonymous = crate::helpers::client()
        .post(app.url("/api/v1/reservations"))
        .json(&json!({"gpu_ids": [gpu], "start": tomorrow(10, 0).to_rfc3339(), "end": tomorrow(11, 0).to_rfc3339()}))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
    app.stop().await;
}

async fn only_the_owner_or_an_admin_cancels_and_the_slot_frees_up(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.com", PlatformRole::User).await;
    let bia = user_token(&app, "bia@example.com", PlatformRole::User).await;
    let admin = user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let gpu = gpus_of(&app, "NVIDIA L40S").await[0];
    let body = json!({"gpu_ids": [gpu], "start": tomorrow(14, 0).to_rfc3339(), "end": tomorrow(16, 0).to_rfc3339()});
    let (_, booked) = book(&app, &ana, body.clone()).await;
    let id = booked["id"].as_i64().unwrap();
    let client = crate::helpers::client();
    let delete = |token: &str| {
        client
            .delete(app.url(&format!("/api/v1/reservations/{id}")))
            .bearer_auth(token.to_owned())
            .send()
    };
    assert_eq!(
        delete(&bia).await.unwrap().status().as_u16(),
        404,
        "not Bia's"
    );
    assert_eq!(book(&app, &bia, body.clone()).await.0, 409);
    let cancelled = delete(&ana).await.unwrap();
    assert_eq!(cancelled.status().as_u16(), 200);
    let cancelled: Value = cancelled.json().await.unwrap();
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(
        delete(&ana).await.unwrap().status().as_u16(),
        409,
        "already cancelled"
    );
    let (status, again) = book(&app, &bia, body.clone()).await;
    assert_eq!(status, 201, "the slot is free again: {again}");
    let second = again["id"].as_i64().unwrap();
    let by_admin = client
        .delete(app.url(&format!("/api/v1/reservations/{second}")))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert_eq!(
        by_admin.status().as_u16(),
        200,
        "a platform admin may cancel"
    );
    app.stop().await;
}

async fn find_a_slot_offers_the_earliest_windows_that_fit(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.com", PlatformRole::User).await;
    // Take both L40S for tomorrow 08:00–20:00.
    let (start, end) = (tomorrow(8, 0), tomorrow(20, 0));
    let (status, booked) = book(
        &app,
        &ana,
        json!({"model": "NVIDIA L40S", "count": 2, "start": start.to_rfc3339(), "end": end.to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 201);
    // The answer to a booking is the reservation as it reads back (its GPUs by id).
    let (status, read) = get(
        &app,
        &ana,
        &format!("/api/v1/reservations/{}", booked["id"]),
    )
    .await;
    assert_eq!(status, 200, "{read}");
    assert_eq!(read, booked);
    let held = booked["gpu_ids"].as_array().unwrap();
    assert!(
        held.len() == 2 && held[0].as_i64() < held[1].as_i64(),
        "{booked}"
    );
    let after = start.to_rfc3339().replace('+', "%2B");
    let (status, offers) = get(
        &app,
        &ana,
        &format!("/api/v1/slots?model=NVIDIA%20L40S&count=2&hours=4&after={after}"),
    )
    .await;
    assert_eq!(status, 200, "{offers}");
    let offers = offers.as_array().unwrap();
    assert_eq!(offers.len(), 1, "one node has two L40S");
    let offered: DateTime<Utc> = offers[0]["window"]["start"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(offered, end, "right after the booking");
    assert_eq!(offers[0]["gpu_ids"].as_array().unwrap().len(), 2);

    // Take them for ten more days: the first fit is past the search's first one-week stretch.
    let later = end + chrono::Duration::days(10);
    let (status, _) = book(
        &app,
        &ana,
        json!({"model": "NVIDIA L40S", "count": 2, "start": end.to_rfc3339(), "end": later.to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 201);
    let (status, offers) = get(
        &app,
        &ana,
        &format!("/api/v1/slots?model=NVIDIA%20L40S&count=2&hours=4&after={after}"),
    )
    .await;
    assert_eq!(status, 200, "{offers}");
    let offered: DateTime<Utc> = offers[0]["window"]["start"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(offered, later, "found in a later stretch of the horizon");

    // By memory: any model with at least 40 GiB, half a GPU, 2 hours: up to 5 offers, earliest first.
    let (status, offers) = get(
        &app,
        &ana,
        "/api/v1/slots?min_memory_gib=40&share=0.5&hours=2",
    )
    .await;
    assert_eq!(status, 200, "{offers}");
    let offers = offers.as_array().unwrap();
    assert!(!offers.is_empty() && offers.len() <= 5);
    let starts: Vec<String> = offers
        .iter()
        .map(|o| o["window"]["start"].as_str().unwrap().to_owned())
        .collect();
    let mut sorted = starts.clone();
    sorted.sort();
    assert_eq!(starts, sorted);

    let (status, bad) = get(&app, &ana, "/api/v1/slots?model=NVIDIA%20L40S&hours=0.1").await;
    assert_eq!(status, 422);
    assert_eq!(bad["field"], "hours");
    app.stop().await;
}

async fn two_hundred_concurrent_bookings_never_exceed_capacity(backend: Backend) {
    let db = TestDatabase::create(backend).await;
    let first = spawn_with(test_settings(&db)).await;
    // PostgreSQL: two portal instances on one database, requests spread over both.
    let second = match backend {
        Backend::Postgres => Some(spawn_with(test_settings(&db)).await),
        Backend::Sqlite => None,
    };
    let tokens = [
        user_token(&first, "u1@example.com", PlatformRole::User).await,
        user_token(&first, "u2@example.com", PlatformRole::User).await,
        user_token(&first, "u3@example.com", PlatformRole::User).await,
    ];
    let a100 = gpus_of(&first, "NVIDIA A100-PCIE-40GB").await; // 3 active, shareable
    let shares = [json!(1), json!(0.5), json!(0.25)];
    let mut requests = Vec::new();
    for i in 0..200usize {
        let app = match (&second, i % 2) {
            (Some(second), 1) => second,
            _ => &first,
        };
        let start = tomorrow(8, 0) + TimeDelta::minutes(15 * i64::try_from(i % 8).unwrap());
        let end = start + TimeDelta::minutes(15 * (1 + i64::try_from(i % 5).unwrap()));
        let body = json!({
            "gpu_ids": [a100[i % a100.len()]],
            "share": shares[i % 3],
            "start": start.to_rfc3339(),
            "end": end.to_rfc3339(),
        });
        let token = tokens[i % 3].clone();
        let url = app.url("/api/v1/reservations");
        requests.push(tokio::spawn(async move {
            // As a client should: a 503 is sent again, with the same key.
            post_as_a_client(&url, &token, &body).await.0
        }));
    }
    let mut created = 0;
    let mut conflicts = 0;
    for request in requests {
        match request.await.unwrap() {
            201 => created += 1,
            409 => conflicts += 1,
            other => panic!("unexpected status {other}"),
        }
    }
    assert!(
        created > 0 && conflicts > 0,
        "{created} created, {conflicts} refused"
    );
    // No slot over a whole GPU, and the capacity rows count what the holds hold.
    assert_capacity_kept(&first).await;
    assert_eq!(
        reservation_count(&first).await,
        created,
        "every 201 is one row, every 409 wrote nothing"
    );
    // Every booking was paid exactly once, and the books balance.
    let audit = db::ledger::audit(&first.db).await.unwrap();
    assert!(audit.is_clean(), "{audit:?}");
    let charges = berth_app::backend::entity::ledger_transaction::Entity::find()
        .filter(berth_app::backend::entity::ledger_transaction::Column::Kind.eq("charge"))
        .count(&first.db)
        .await
        .unwrap();
    assert_eq!(charges, created, "one charge per booking");
    first.stop().await;
    if let Some(second) = second {
        second.stop().await;
    }
}

crate::on_both_backends!(
    whole_and_shared_bookings_and_conflicts_with_a_suggestion,
    bad_input_gets_422_with_the_field_and_writes_nothing,
    only_the_owner_or_an_admin_cancels_and_the_slot_frees_up,
    find_a_slot_offers_the_earliest_windows_that_fit,
    two_hundred_concurrent_bookings_never_exceed_capacity,
);
