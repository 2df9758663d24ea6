//! Hostile input answers a clear 4xx at once: dates outside the years Berth accepts (422, in
//! the API and on the pages, before any arithmetic on them), paths that are no endpoint and
//! bodies over the limit.

use crate::helpers::{Backend, client, get, spawn_app, user_token};
use berth_app::domain::user::PlatformRole;
use std::time::{Duration, Instant};

/// Far dates answer within this (they used to cost seconds, overflow or panic).
const QUICK: Duration = Duration::from_secs(2);

async fn far_dates_in_the_api_answer_422_at_once(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("platform_admin").await;
    for (path, field) in [
        (
            "/api/v1/reports/usage?from=9999-01-01&to=9999-12-31",
            "from",
        ),
        (
            "/api/v1/reports/fleet?from=9999-01-01&to=9999-12-31",
            "from",
        ),
        ("/api/v1/reports/usage?from=2026-11-01&to=2101-01-01", "to"),
        (
            "/api/v1/reports/usage?from=1900-01-01&to=1900-01-31",
            "from",
        ),
        (
            "/api/v1/availability?from=9999-01-01T00:00:00Z&to=9999-01-02T00:00:00Z",
            "from",
        ),
        (
            "/api/v1/availability?from=2100-12-31T00:00:00Z&to=2101-01-01T00:00:00Z",
            "to",
        ),
        ("/api/v1/slots?hours=1&after=9999-12-31T00:00:00Z", "after"),
        (
            "/api/v1/gpus/1/telemetry?from=9999-01-01T00:00:00Z&to=9999-01-02T00:00:00Z",
            "to",
        ),
        ("/api/v1/gpus/1/events?from=0001-01-01T00:00:00Z", "from"),
    ] {
        let started = Instant::now();
        let response = app.client.get(app.url(path)).send().await.unwrap();
        let took = started.elapsed();
        let status = response.status().as_u16();
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(status, 422, "{path}: {body}");
        assert_eq!(body["code"], "date_out_of_range", "{path}: {body}");
        assert_eq!(body["field"], field, "{path}: {body}");
        assert!(took < QUICK, "{path} took {took:?}");
    }

    // Writes: a booking and a maintenance window in a far year.
    let response = app
        .client
        .post(app.url("/api/v1/reservations"))
        .json(&serde_json::json!({
            "gpu_ids": [1],
            "start": "9999-01-01T00:00:00Z",
            "end": "9999-01-01T01:00:00Z",
        }))
        .send()
        .await
        .unwrap();
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["code"], "date_out_of_range", "{body}");
    assert_eq!(body["field"], "start", "{body}");
    let response = app
        .client
        .post(app.url("/api/v1/maintenance"))
        .json(&serde_json::json!({
            "gpu_ids": [1],
            "start": "2026-12-01T00:00:00Z",
            "end": "9999-12-31T00:00:00Z",
            "reason": "far",
        }))
        .send()
        .await
        .unwrap();
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["code"], "date_out_of_range", "{body}");
    assert_eq!(body["field"], "end", "{body}");
    app.stop().await;
}

async fn far_dates_on_the_pages_show_a_message(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    for path in [
        "/calendar?start=%2B262142-12-31",
        "/calendar?start=9999-12-31&span=week",
        "/calendar?start=1999-12-31",
        "/reports?period=custom&from=9999-01-01&to=9999-12-31",
    ] {
        let started = Instant::now();
        let (status, html) = app.get_text(path).await;
        let took = started.elapsed();
        assert_eq!(status, 422, "{path}");
        assert!(
            html.contains("Dates must lie in the years 2000 to 2100."),
            "{path}: {html}"
        );
        assert!(took < QUICK, "{path} took {took:?}");
    }
    app.stop().await;
}

async fn a_memory_filter_out_of_range_on_the_calendar_shows_a_message(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    for path in [
        "/calendar?min_memory_gib=99999999999999",
        "/calendar?min_memory_gib=4097",
        "/calendar?min_memory_gib=-1",
        "/calendar?min_memory_gib=forty",
    ] {
        let (status, html) = app.get_text(path).await;
        assert_eq!(status, 422, "{path}");
        assert!(
            html.contains("The memory filter must be a whole number of GiB, at most 4096."),
            "{path}: {html}"
        );
        assert!(!html.contains("class=\"cal-row"), "{path}: no grid");
    }
    let (status, html) = app.get_text("/calendar?min_memory_gib=").await;
    assert_eq!(status, 200, "empty is any memory");
    assert!(html.contains("class=\"cal-row"));
    app.stop().await;
}

/// A path under `/api/v1` that is no endpoint answers the API's JSON 404, not a page; a body over
/// the limit answers 413 at once, and neither changes anything.
async fn no_endpoint_and_an_oversized_body_get_the_apis_json_errors(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let token = user_token(&app, "probe@example.com", PlatformRole::User).await;
    for (method, path) in [
        (reqwest::Method::GET, "/api/v1/no-such-thing"),
        (reqwest::Method::DELETE, "/api/v1/reservations/"),
        (reqwest::Method::GET, "/api/v1/reservations/4/nothing"),
    ] {
        let response = client()
            .request(method.clone(), app.url(path))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 404, "{method} {path}");
        let body: serde_json::Value = response.json().await.expect("a JSON answer");
        assert_eq!(body["error"], "not_found", "{method} {path}: {body}");
    }

    let (_, before) = get(&app, &token, "/api/v1/reservations?mine=true").await;
    let oversized = format!(r#"{{"gpu_ids": [1], "note": "{}"}}"#, "a".repeat(3 << 20));
    let started = Instant::now();
    let response = client()
        .post(app.url("/api/v1/reservations"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body(oversized)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 413);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"], "too_large", "{body}");
    assert!(started.elapsed() < QUICK, "{:?}", started.elapsed());
    let (_, after) = get(&app, &token, "/api/v1/reservations?mine=true").await;
    assert_eq!(before, after, "nothing booked");
    app.stop().await;
}

crate::on_both_backends!(
    no_endpoint_and_an_oversized_body_get_the_apis_json_errors,
    far_dates_in_the_api_answer_422_at_once,
    far_dates_on_the_pages_show_a_message,
    a_memory_filter_out_of_range_on_the_calendar_shows_a_message,
);
