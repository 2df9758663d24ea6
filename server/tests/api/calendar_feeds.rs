//! Calendar feeds and files: a user's secret feed lists their bookings (cancelled ones struck out
//! with a higher SEQUENCE) as a real iCalendar parser reads them, with the right content type and
//! caching; a new address turns the old one off, a revoked or made-up one is 404; a team feed is
//! for the team's admins only; "Add to calendar" downloads one booking, for its owner only.

use crate::helpers::*;
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Value, json};

fn booking(gpu: i64, start: DateTime<Utc>, hours: i64) -> Value {
    json!({
        "gpu_ids": [gpu],
        "start": start.to_rfc3339(),
        "end": (start + TimeDelta::hours(hours)).to_rfc3339(),
    })
}

/// Calls a profile server function as `token` with the urlencoded `body`.
async fn call(app: &TestApp, token: &str, function: &str, body: &str) -> (u16, Value) {
    let response = client()
        .post(app.url(&format!("/api/{function}")))
        .bearer_auth(token)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// GETs `url` with no credentials: status, content type, cache control and body.
async fn fetch(url: &str) -> (u16, String, String, String) {
    let response = client().get(url).send().await.unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|value| value.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let (content_type, cache) = (header("content-type"), header("cache-control"));
    (
        response.status().as_u16(),
        content_type,
        cache,
        response.text().await.unwrap(),
    )
}

fn utc(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S+00:00").to_string()
}

async fn a_users_feed_lists_their_bookings_for_any_calendar(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let eve = user_token(&app, "eve@example.org", PlatformRole::User).await;
    let h100 = gpus_of(&app, H100).await;
    let start = on_grid_in(TimeDelta::days(2));
    let (_, kept) = book(&app, &ana, booking(h100[0], start, 2)).await;
    let (_, dropped) = book(&app, &ana, booking(h100[0], start + TimeDelta::days(1), 3)).await;
    let (status, _) = cancel(&app, &ana, &dropped["id"]).await;
    assert_eq!(status, 200);
    // Someone else's booking is not in Ana's feed.
    let (status, _) = book(&app, &eve, booking(h100[1], start, 1)).await;
    assert_eq!(status, 201);

    let (status, address) = call(&app, &ana, "create_calendar_feed", "team=").await;
    assert_eq!(status, 200, "{address}");
    let address = address.as_str().unwrap().to_owned();
    assert!(address.starts_with(&app.url("/ical/berth_")), "{address}");
    assert!(address.ends_with(".ics"));

    let (status, content_type, cache, body) = fetch(&address).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(content_type, "text/calendar; charset=utf-8");
    assert_eq!(cache, "private, max-age=300");
    let events = parse_calendar(&body);
    assert_eq!(events.len(), 2, "{events:#?}");
    let kept_event = &events[0];
    assert_eq!(
        kept_event["uid"],
        format!("reservation-{}@berth.local", kept["id"])
    );
    assert_eq!(kept_event["dtstart"], utc(start));
    assert_eq!(kept_event["dtend"], utc(start + TimeDelta::hours(2)));
    assert_eq!(kept_event["status"], "CONFIRMED");
    assert_eq!(kept_event["sequence"], 0);
    assert!(
        kept_event["summary"].as_str().unwrap().contains("H100"),
        "{kept_event}"
    );
    // A link back to Berth (the address the calendar used: no public_url is set here).
    assert_eq!(kept_event["url"], app.url("/reservations"));
    let dropped_event = &events[1];
    assert_eq!(
        dropped_event["uid"],
        format!("reservation-{}@berth.local", dropped["id"])
    );
    assert_eq!(dropped_event["status"], "CANCELLED");
    assert_eq!(dropped_event["sequence"], 1);

    // The profile lists it (not the address).
    let (status, page) = call(&app, &ana, "get_calendar_feeds", "").await;
    assert_eq!(status, 200);
    assert_eq!(page["feeds"].as_array().unwrap().len(), 1);
    assert_eq!(page["feeds"][0]["team"], Value::Null);
    assert!(!page.to_string().contains("berth_"), "{page}");

    // A new address turns the old one off.
    let (_, renewed) = call(&app, &ana, "create_calendar_feed", "team=").await;
    let renewed = renewed.as_str().unwrap().to_owned();
    assert_ne!(renewed, address);
    assert_eq!(fetch(&address).await.0, 404);
    assert_eq!(fetch(&renewed).await.0, 200);
    // Made-up and malformed addresses.
    for path in ["/ical/berth_nothing.ics", "/ical/berth_x", "/ical/.ics"] {
        assert_eq!(fetch(&app.url(path)).await.0, 404, "{path}");
    }
    let long = format!("/ical/{}.ics", "a".repeat(5000));
    assert_eq!(fetch(&app.url(&long)).await.0, 404);
    // Revoked: gone.
    let (status, _) = call(&app, &ana, "revoke_calendar_feed", "team=").await;
    assert_eq!(status, 200);
    assert_eq!(fetch(&renewed).await.0, 404);
    let (status, _) = call(&app, &ana, "revoke_calendar_feed", "team=").await;
    assert_eq!(status, 404);
    let (status, _) = call(&app, &ana, "create_calendar_feed", "team=abc").await;
    assert_eq!(status, 422);
    app.stop().await;
}

async fn a_team_feed_is_for_the_teams_admins(backend: Backend) {
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
    let start = on_grid_in(TimeDelta::days(2));
    let mut body = booking(h100[0], start, 2);
    body["team_id"] = json!(team);
    let (status, booked) = book(&app, &dev, body).await;
    assert_eq!(status, 201, "{booked}");

    // A member who does not manage the team may not make its feed.
    let (status, _) = call(&app, &dev, "create_calendar_feed", &format!("team={team}")).await;
    assert_eq!(status, 403);
    let (status, page) = call(&app, &dev, "get_calendar_feeds", "").await;
    assert_eq!(status, 200);
    assert_eq!(page["teams"], json!([]));

    let (status, page) = call(&app, &lead, "get_calendar_feeds", "").await;
    assert_eq!(status, 200);
    assert_eq!(page["teams"], json!([[team, "vision"]]));
    let (status, address) =
        call(&app, &lead, "create_calendar_feed", &format!("team={team}")).await;
    assert_eq!(status, 200, "{address}");
    let address = address.as_str().unwrap().to_owned();
    let (status, _, _, text) = fetch(&address).await;
    assert_eq!(status, 200);
    let events = parse_calendar(&text);
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0]["uid"],
        format!("reservation-{}@berth.local", booked["id"])
    );

    // "Add to calendar": the owner gets the file, anyone else 404, nobody signed in 401.
    let path = format!("/api/v1/reservations/{}/calendar.ics", booked["id"]);
    let response = client()
        .get(app.url(&path))
        .bearer_auth(&dev)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        response.headers()["content-disposition"],
        format!(
            "attachment; filename=\"berth-reservation-{}.ics\"",
            booked["id"]
        )
        .as_str()
    );
    let events = parse_calendar(&response.text().await.unwrap());
    assert_eq!(events[0]["dtstart"], utc(start));
    let response = client()
        .get(app.url(&path))
        .bearer_auth(&lead)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let response = client().get(app.url(&path)).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 401);
    app.stop().await;
}

crate::on_both_backends!(
    a_users_feed_lists_their_bookings_for_any_calendar,
    a_team_feed_is_for_the_teams_admins,
);
