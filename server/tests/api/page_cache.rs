//! The calendar page's copies (`middleware::page_cache`): sent again to the same viewer with a
//! fresh nonce and form key, never to another viewer, dropped by a change made through the
//! replica, and after `FRESH_FOR` on the portal's clock for a change made elsewhere.

use crate::helpers::*;
use berth_app::domain::user::PlatformRole;
use chrono::{TimeDelta, Utc};
use serde_json::json;

/// A page as sent: its policy's nonce, its form's idempotency key, and the page with both
/// blanked out.
struct Sent {
    nonce: String,
    key: String,
    html: String,
}

async fn calendar(client: &reqwest::Client, app: &TestApp) -> Sent {
    let response = client
        .get(app.url("/calendar?span=week"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let policy = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    let nonce = policy
        .split("'nonce-")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .unwrap()
        .to_owned();
    let html = response.text().await.unwrap();
    let key = html
        .split("name=\"idempotency_key\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the plain form's key")
        .to_owned();
    assert!(
        html.contains(&format!("nonce=\"{nonce}\"")),
        "the page's scripts carry the nonce of its own policy"
    );
    let blank = html.replace(&nonce, "NONCE").replace(&key, "KEY");
    Sent {
        nonce,
        key,
        html: blank,
    }
}

fn blocks(sent: &Sent) -> usize {
    sent.html.matches("class=\"cal-block ").count()
}

async fn signed_in(app: &TestApp, role: &str) -> reqwest::Client {
    let client = client_builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = client
        .post(app.url("/auth/dev"))
        .form(&[("role", role), ("return_to", "/")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    client
}

async fn a_viewer_gets_their_page_again_with_fresh_secrets_until_something_changes(
    backend: Backend,
) {
    let at = Utc::now();
    let (app, db, clock) = spawn_app_at(backend, at).await;
    let (elsewhere, _other_clock) = spawn_at_with(test_settings(&db), at).await;
    let gpu = first_gpu(&app, "NVIDIA H100 80GB HBM3").await;
    let other = user_token(&app, "other@berth.test", PlatformRole::User).await;
    let day = (at + TimeDelta::days(1)).date_naive();
    let window = |from: u32, to: u32| {
        json!({
            "gpu_ids": [gpu],
            "start": day.and_hms_opt(from, 0, 0).unwrap().and_utc().to_rfc3339(),
            "end": day.and_hms_opt(to, 0, 0).unwrap().and_utc().to_rfc3339(),
        })
    };

    let user = signed_in(&app, "user").await;
    let first = calendar(&user, &app).await;
    let again = calendar(&user, &app).await;
    assert_ne!(first.nonce, again.nonce, "a new nonce for every response");
    assert_ne!(first.key, again.key, "a new form key for every response");
    assert_eq!(first.html, again.html, "otherwise the same page");
    let before = blocks(&first);

    // Booked through another replica: this one's copy is sent until it is two seconds old on
    // the portal's clock, then the page is rendered again.
    let (status, booked) = book(&elsewhere, &other, window(9, 11)).await;
    assert_eq!(status, 201, "{booked}");
    assert_eq!(blocks(&calendar(&user, &app).await), before, "the copy");
    clock.advance(TimeDelta::seconds(2));
    let later = calendar(&user, &app).await;
    assert_eq!(blocks(&later), before + 1, "rendered again two seconds on");

    // Booked through this replica: the next page shows it at once.
    let (status, booked) = book(&app, &other, window(13, 15)).await;
    assert_eq!(status, 201, "{booked}");
    assert_eq!(blocks(&calendar(&user, &app).await), before + 2);

    // The viewer's own booking with the plain form: theirs on their page, and another viewer,
    // asking while the first viewer's copy is fresh, gets a page of their own.
    let form = [
        ("gpu_id", gpu.to_string()),
        ("share", "1".to_owned()),
        ("start", format!("{day}T17:00")),
        ("end", format!("{day}T19:00")),
        ("return_to", "/calendar?span=week".to_owned()),
    ];
    let response = user
        .post(app.url("/api/forms/book"))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    let mine = calendar(&user, &app).await;
    assert_eq!(blocks(&mine), before + 3);
    assert!(mine.html.contains("data-kind=\"mine\""), "the viewer's own");
    let admin = signed_in(&app, "platform_admin").await;
    let theirs = calendar(&admin, &app).await;
    assert_eq!(blocks(&theirs), before + 3);
    assert!(
        !theirs.html.contains("data-kind=\"mine\""),
        "not the first viewer's page"
    );

    // A signed-out request never gets a copy.
    let stranger = client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = stranger
        .get(app.url("/calendar?span=week"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    elsewhere.stop().await;
    app.stop().await;
}

crate::on_both_backends!(a_viewer_gets_their_page_again_with_fresh_secrets_until_something_changes);
