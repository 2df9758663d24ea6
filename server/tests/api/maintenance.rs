//! Maintenance windows through the JSON API and the admin page: only platform admins set and end
//! them; bookings cannot take maintenance time and maintenance cannot take booked time, also when
//! both race; bad input gets 422 with the field and writes nothing.

use crate::helpers::*;
use berth_app::backend::entity::{maintenance_window, reservation, reservation_gpu};
use berth_app::domain::schedule::slot_floor;
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

async fn set(app: &TestApp, token: &str, body: Value) -> (u16, Value) {
    post_json(app, token, "/api/v1/maintenance", &body).await
}

/// `POST url` on a task of its own: its status.
fn spawn_post(url: String, token: String, body: Value) -> tokio::task::JoinHandle<u16> {
    tokio::spawn(async move {
        answer(client().post(url).bearer_auth(token).json(&body))
            .await
            .0
    })
}

async fn end(app: &TestApp, token: &str, id: i64) -> (u16, Value) {
    let path = format!("/api/v1/maintenance/{id}");
    send(app, reqwest::Method::DELETE, Some(token), &path, None).await
}

async fn window_count(app: &TestApp) -> u64 {
    maintenance_window::Entity::find()
        .count(&app.db)
        .await
        .unwrap()
}

fn body(gpus: &[i64], start: DateTime<Utc>, end: DateTime<Utc>, reason: &str) -> Value {
    json!({"gpu_ids": gpus, "start": start.to_rfc3339(), "end": end.to_rfc3339(), "reason": reason})
}

async fn admins_set_and_end_maintenance_and_bookings_respect_it(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.com", PlatformRole::User).await;
    let root = user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let gpu = gpus_of(&app, "NVIDIA L40S").await[0];
    let before = window_count(&app).await;
    let driver = body(&[gpu], tomorrow(10, 0), tomorrow(12, 0), "driver update");

    assert_eq!(
        set(&app, &ana, driver.clone()).await.0,
        403,
        "users may not"
    );
    let (status, created) = set(&app, &root, driver).await;
    assert_eq!(status, 201, "{created}");
    let id = created[0]["id"].as_i64().unwrap();
    assert_eq!(created[0]["gpu_id"], gpu);
    assert_eq!(created[0]["reason"], "driver update");
    assert_eq!(created[0]["created_by"], "root");

    // Nobody can book into it, whole or in part.
    let (status, clash) = book(
        &app,
        &ana,
        json!({"gpu_ids": [gpu], "start": tomorrow(11, 0).to_rfc3339(), "end": tomorrow(13, 0).to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 409, "{clash}");
    assert!(clash["clash"].is_object(), "{clash}");

    // Everyone sees when; only admins see who.
    let (status, seen) = get(&app, &ana, "/api/v1/maintenance").await;
    assert_eq!(status, 200);
    let mine = seen
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .unwrap();
    assert_eq!(mine["created_by"], Value::Null);

    // Maintenance cannot take booked time: the reservations in the way are named.
    let (status, booked) = book(
        &app,
        &ana,
        json!({"gpu_ids": [gpu], "start": tomorrow(14, 0).to_rfc3339(), "end": tomorrow(16, 0).to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 201, "{booked}");
    let booked_id = booked["id"].as_i64().unwrap();
    let (status, refused) = set(
        &app,
        &root,
        body(&[gpu], tomorrow(15, 0), tomorrow(17, 0), "fan"),
    )
    .await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["code"], "reservations_in_the_way", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains(&format!("#{booked_id}")),
        "{refused}"
    );
    assert_eq!(window_count(&app).await, before + 1, "nothing written");

    // Ending early: users may not; an upcoming window is removed and the time is bookable again.
    assert_eq!(end(&app, &ana, id).await.0, 403);
    let (status, ended) = end(&app, &root, id).await;
    assert_eq!(status, 200, "{ended}");
    assert_eq!(end(&app, &root, id).await.0, 404, "already removed");
    let (status, again) = book(
        &app,
        &ana,
        json!({"gpu_ids": [gpu], "start": tomorrow(11, 0).to_rfc3339(), "end": tomorrow(13, 0).to_rfc3339()}),
    )
    .await;
    assert_eq!(status, 201, "{again}");

    // An ongoing window ends at the next quarter hour instead of vanishing.
    let other = gpus_of(&app, "NVIDIA L40S").await[1];
    let (status, now_on) = set(
        &app,
        &root,
        body(
            &[other],
            slot_floor(Utc::now() - TimeDelta::hours(1)),
            tomorrow(23, 0),
            "repair",
        ),
    )
    .await;
    assert_eq!(status, 201, "{now_on}");
    let ongoing = now_on[0]["id"].as_i64().unwrap();
    let (status, _) = end(&app, &root, ongoing).await;
    assert_eq!(status, 200);
    let row = maintenance_window::Entity::find_by_id(ongoing)
        .one(&app.db)
        .await
        .unwrap()
        .expect("kept as history");
    assert!(row.end_at > Utc::now() && row.end_at <= Utc::now() + TimeDelta::minutes(15));
    assert!(
        row.start_at <= Utc::now(),
        "the start was moved to the current slot"
    );
    app.stop().await;
}

async fn bad_maintenance_input_gets_422_with_the_field_and_writes_nothing(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let root = user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let gpu = gpus_of(&app, "NVIDIA L40S").await[0];
    let before = window_count(&app).await;
    let far = Utc::now() + TimeDelta::days(400);
    let cases = [
        (body(&[gpu], tomorrow(12, 0), tomorrow(10, 0), "x"), "end"),
        (body(&[gpu], tomorrow(10, 5), tomorrow(12, 0), "x"), "start"),
        (
            body(&[gpu], tomorrow(10, 0), tomorrow(12, 0), "   "),
            "reason",
        ),
        (
            body(&[gpu], tomorrow(10, 0), tomorrow(12, 0), &"x".repeat(201)),
            "reason",
        ),
        (body(&[], tomorrow(10, 0), tomorrow(12, 0), "x"), "gpu_ids"),
        (
            body(&[i64::MAX], tomorrow(10, 0), tomorrow(12, 0), "x"),
            "gpu_ids",
        ),
        (
            body(
                &[gpu],
                tomorrow(10, 0),
                tomorrow(10, 0) + TimeDelta::days(91),
                "x",
            ),
            "end",
        ),
        (
            body(
                &[gpu],
                tomorrow(10, 0) - TimeDelta::days(3),
                tomorrow(10, 0) - TimeDelta::days(2),
                "x",
            ),
            "end",
        ),
        (
            json!({"gpu_ids": [gpu], "start": far.to_rfc3339(), "end": "2030-01-01", "reason": "x"}),
            "end",
        ),
        (
            json!({"gpu_ids": "all", "start": "x", "end": "y", "reason": "x"}),
            "body",
        ),
    ];
    for (request, field) in cases {
        let (status, answer) = set(&app, &root, request.clone()).await;
        assert_eq!(status, 422, "{request} → {answer}");
        assert_eq!(answer["field"], field, "{request} → {answer}");
        assert!(
            answer["code"].as_str().is_some_and(|code| !code.is_empty()),
            "{answer}"
        );
    }
    assert_eq!(window_count(&app).await, before, "nothing written");
    app.stop().await;
}

/// Bookings and maintenance requests for the same GPUs and times, all at once: whatever wins, no
/// confirmed reservation overlaps a maintenance window afterwards.
async fn bookings_and_maintenance_racing_never_both_win(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let root = user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let mut tokens = Vec::new();
    for i in 0..4 {
        tokens.push(user_token(&app, &format!("racer{i}@example.com"), PlatformRole::User).await);
    }
    let gpus: Vec<i64> = gpus_of(&app, "NVIDIA L40S")
        .await
        .into_iter()
        .take(4)
        .collect();
    let mut tasks = Vec::new();
    for (round, gpu) in gpus.iter().enumerate() {
        for (i, token) in tokens.iter().enumerate() {
            let start = tomorrow(8, 0) + TimeDelta::minutes(30 * i64::try_from(i).unwrap());
            let request = json!({"gpu_ids": [gpu], "start": start.to_rfc3339(), "end": (start + TimeDelta::hours(1)).to_rfc3339()});
            tasks.push(spawn_post(
                app.url("/api/v1/reservations"),
                token.clone(),
                request,
            ));
            if i == round % tokens.len() {
                let request = body(&[*gpu], tomorrow(8, 0), tomorrow(11, 0), "race");
                tasks.push(spawn_post(
                    app.url("/api/v1/maintenance"),
                    root.clone(),
                    request,
                ));
            }
        }
    }
    for task in tasks {
        let status = task.await.unwrap();
        assert!(status == 201 || status == 409, "status {status}");
    }
    let windows = maintenance_window::Entity::find()
        .filter(maintenance_window::Column::GpuId.is_in(gpus.clone()))
        .all(&app.db)
        .await
        .unwrap();
    let holds = reservation_gpu::Entity::find()
        .find_also_related(reservation::Entity)
        .filter(reservation_gpu::Column::GpuId.is_in(gpus.clone()))
        .all(&app.db)
        .await
        .unwrap();
    let mut outcomes = 0;
    for window in &windows {
        outcomes += 1;
        for (hold, reservation) in &holds {
            let confirmed = reservation
                .as_ref()
                .is_some_and(|r| r.status == reservation::Status::Confirmed);
            assert!(
                !(confirmed
                    && hold.gpu_id == window.gpu_id
                    && hold.start_at < window.end_at
                    && window.start_at < hold.end_at),
                "reservation {} overlaps maintenance {}",
                hold.reservation_id,
                window.id
            );
        }
    }
    assert!(outcomes + holds.len() > 0, "something won");
    app.stop().await;
}

async fn the_admin_page_sets_maintenance_and_users_cannot_open_it(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("platform_admin").await;
    let (status, html) = app.get_text("/admin/maintenance").await;
    assert_eq!(status, 200);
    assert!(html.contains("maintenance-form"), "the form is there");
    assert!(html.contains("name=\"target\""));
    assert!(
        html.contains("href=\"/admin/maintenance\""),
        "admins get the link"
    );
    let gpu = gpus_of(&app, "NVIDIA L40S").await[0];
    let start = tomorrow(10, 0).format("%Y-%m-%dT%H:%M").to_string();
    let end = tomorrow(12, 0).format("%Y-%m-%dT%H:%M").to_string();
    let response = app
        .client
        .post(app.url("/api/set_maintenance"))
        .header("Accept", "application/json")
        .form(&[
            ("target", format!("gpu:{gpu}")),
            ("start", start),
            ("end", end),
            ("reason", "firmware".into()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let (_, html) = app.get_text("/admin/maintenance").await;
    assert!(html.contains("firmware"), "listed on the page");
    let (_, calendar) = app.get_text("/calendar?model=NVIDIA%20L40S").await;
    assert!(
        calendar.contains("data-kind=\"maintenance\""),
        "shown on the calendar"
    );

    let (user_app, _user_db) = spawn_app(backend).await;
    user_app.sign_in("user").await;
    let (_, html) = user_app.get_text("/admin/maintenance").await;
    assert!(!html.contains("maintenance-form"), "no form for users");
    assert!(html.contains("You are not allowed to do this."));
    assert!(
        !html.contains("href=\"/admin/maintenance\""),
        "no link for users"
    );
    app.stop().await;
    user_app.stop().await;
}

crate::on_both_backends!(
    admins_set_and_end_maintenance_and_bookings_respect_it,
    bad_maintenance_input_gets_422_with_the_field_and_writes_nothing,
    bookings_and_maintenance_racing_never_both_win,
    the_admin_page_sets_maintenance_and_users_cannot_open_it,
);
