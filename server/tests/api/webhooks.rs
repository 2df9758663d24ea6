//! Webhooks against a real receiver on loopback: a booking posts signed JSON (the signature checks
//! out with the secret shown once; Slack's `text` field carries the words), an address inside the
//! network is refused unless the portal allows it, a receiver that keeps failing is retried,
//! then turned off, and its owner told, and a delivery given up while its call is under way
//! stays given up unless the call got through.

use crate::helpers::*;
use axum::http::StatusCode;
use berth_app::backend::clock::Clock;
use berth_app::backend::entity::{notification_delivery, webhook};
use berth_app::backend::notify;
use berth_app::domain::notify::{
    Channel, DELIVERY_LEASE, DeliveryStatus, EventKind, WEBHOOK_FAILURES_TO_DISABLE,
};
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use hmac::{Hmac, Mac};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

fn booking(gpu: i64, start: DateTime<Utc>, hours: i64) -> Value {
    json!({
        "gpu_ids": [gpu],
        "start": start.to_rfc3339(),
        "end": (start + TimeDelta::hours(hours)).to_rfc3339(),
    })
}

async fn spawn(backend: Backend, allow_private: bool) -> (TestApp, TestDatabase, ManualClock) {
    let now = on_grid_in(TimeDelta::hours(1));
    spawn_app_with(backend, now, move |settings| {
        settings.webhook_allow_private = allow_private;
    })
    .await
}

/// `create_webhook` as `token`: status and answer.
async fn create_hook(app: &TestApp, token: &str, url: &str) -> (u16, Value) {
    let response = client()
        .post(app.url("/api/create_webhook"))
        .bearer_auth(token)
        .form(&[("url", url), ("team", "")])
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn work(app: &TestApp, clock: &ManualClock) {
    crate::notify::settle(app, clock.now()).await;
    notify::deliver(&app.state).await.unwrap();
}

async fn hook_deliveries(app: &TestApp) -> Vec<notification_delivery::Model> {
    notification_delivery::Entity::find()
        .filter(notification_delivery::Column::Channel.eq(Channel::Webhook))
        .all(&app.db)
        .await
        .unwrap()
}

/// Ana adds a webhook to `url` and books an H100 for two hours in three days.
async fn hook_and_booking(app: &TestApp, clock: &ManualClock, url: &str) {
    let ana = user_token(app, "ana@example.org", PlatformRole::User).await;
    let (status, created) = create_hook(app, &ana, url).await;
    assert_eq!(status, 200, "{created}");
    let h100 = gpus_of(app, H100).await;
    let start = clock.now() + TimeDelta::days(3);
    let (status, booked) = book(app, &ana, booking(h100[0], start, 2)).await;
    assert_eq!(status, 201, "{booked}");
}

/// Waits until no webhook delivery is queued and untried at `now` (the app's worker may hold one).
async fn settled(app: &TestApp, now: DateTime<Utc>) {
    for _ in 0..100 {
        let pending = hook_deliveries(app)
            .await
            .into_iter()
            .any(|d| d.status == DeliveryStatus::Queued && d.next_at <= now);
        if !pending {
            return;
        }
        notify::deliver(&app.state).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!(
        "webhook deliveries still due: {:#?}",
        hook_deliveries(app).await
    );
}

async fn a_booking_posts_signed_json_to_its_owners_webhook(backend: Backend) {
    let receiver = Receiver::start(StatusCode::NO_CONTENT).await;
    let (app, _db, clock) = spawn(backend, true).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let (status, created) = create_hook(&app, &ana, &receiver.url).await;
    assert_eq!(status, 200, "{created}");
    let secret = created["secret"].as_str().unwrap().to_owned();
    // The secret is shown once: the list does not carry it.
    let response = client()
        .post(app.url("/api/get_webhooks"))
        .bearer_auth(&ana)
        .send()
        .await
        .unwrap();
    let listed: Value = response.json().await.unwrap();
    assert_eq!(listed["hooks"][0]["url"], receiver.url.as_str());
    assert!(!listed.to_string().contains(&secret));

    let h100 = gpus_of(&app, H100).await;
    let start = clock.now() + TimeDelta::days(3);
    let (status, booked) = book(&app, &ana, booking(h100[0], start, 2)).await;
    assert_eq!(status, 201, "{booked}");
    work(&app, &clock).await;
    settled(&app, clock.now()).await;

    let calls = receiver.calls();
    let confirmed: Vec<_> = calls
        .iter()
        .filter(|call| call.headers["x-berth-event"] == "booking_confirmed")
        .collect();
    assert_eq!(confirmed.len(), 1, "{calls:#?}");
    let call = confirmed[0];
    assert_eq!(call.headers["content-type"], "application/json");
    // The signature a receiver computes from the body and the secret.
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(&call.body);
    let expected: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    assert_eq!(
        call.headers["x-berth-signature"].to_str().unwrap(),
        format!("sha256={expected}")
    );
    let body: Value = serde_json::from_slice(&call.body).unwrap();
    assert_eq!(body["event"], "booking_confirmed");
    assert_eq!(body["reservation"]["id"], booked["id"]);
    assert!(
        body["text"]
            .as_str()
            .unwrap()
            .starts_with("Booking confirmed: "),
        "{body}"
    );
    assert!(body["text"].as_str().unwrap().contains("H100"), "{body}");
    // Each call once: every webhook delivery is sent, one call each.
    let sent = hook_deliveries(&app).await;
    assert!(
        sent.iter().all(|d| d.status == DeliveryStatus::Sent),
        "{sent:#?}"
    );
    assert_eq!(receiver.calls().len(), sent.len());
    // A forged body does not match the signature.
    let mut forged = Hmac::<sha2::Sha256>::new_from_slice(b"not the secret").unwrap();
    forged.update(&call.body);
    assert_ne!(
        format!("sha256={:x}", forged.finalize().into_bytes()),
        call.headers["x-berth-signature"].to_str().unwrap()
    );
    app.stop().await;
}

/// No test sender here: the portal's own worker calls the webhook after a booking, on a portal
/// with no e-mail channel (it once sent nothing unless e-mail was set up).
async fn the_portals_own_worker_calls_webhooks_without_e_mail_set_up(backend: Backend) {
    let receiver = Receiver::start(StatusCode::NO_CONTENT).await;
    let (app, _db, clock) = spawn(backend, true).await;
    assert!(app.state.mail.is_none());
    hook_and_booking(&app, &clock, &receiver.url).await;
    let confirmed = || {
        receiver
            .calls()
            .iter()
            .filter(|call| call.headers["x-berth-event"] == "booking_confirmed")
            .count()
    };
    for _ in 0..200 {
        if confirmed() > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(confirmed(), 1, "{:#?}", receiver.calls());
    let deliveries = hook_deliveries(&app).await;
    assert!(
        deliveries.iter().any(|d| d.status == DeliveryStatus::Sent),
        "{deliveries:#?}"
    );
    app.stop().await;
}

async fn addresses_inside_the_network_are_refused_unless_allowed(backend: Backend) {
    let (app, _db, _clock) = spawn(backend, false).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "ftp://example.org/hook",
        "not a url",
    ] {
        let (status, answer) = create_hook(&app, &ana, url).await;
        assert_eq!(status, 422, "{url}: {answer}");
        assert_eq!(answer["Explained"]["field"], "url", "{answer}");
    }
    let (status, _) = create_hook(&app, &ana, "https://hooks.example.org/berth").await;
    assert_eq!(status, 200);
    assert_eq!(
        webhook::Entity::find().all(&app.db).await.unwrap().len(),
        1,
        "only the public address was added"
    );
    // Someone else's webhook cannot be removed.
    let eve = user_token(&app, "eve@example.org", PlatformRole::User).await;
    let id = webhook::Entity::find()
        .one(&app.db)
        .await
        .unwrap()
        .unwrap()
        .id;
    let response = client()
        .post(app.url("/api/delete_webhook"))
        .bearer_auth(&eve)
        .form(&[("id", id.to_string())])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    assert_eq!(webhook::Entity::find().all(&app.db).await.unwrap().len(), 1);
    app.stop().await;
}

async fn a_failing_webhook_is_retried_then_turned_off_and_its_owner_told(backend: Backend) {
    let receiver = Receiver::start(StatusCode::SERVICE_UNAVAILABLE).await;
    let (app, _db, clock) = spawn(backend, true).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let (status, _) = create_hook(&app, &ana, &receiver.url).await;
    assert_eq!(status, 200);
    let h100 = gpus_of(&app, H100).await;
    let start = clock.now() + TimeDelta::days(3);
    let (status, _) = book(&app, &ana, booking(h100[0], start, 2)).await;
    assert_eq!(status, 201);

    // Tries keep failing; the clock moves past each wait, a lease at a time: the app's own
    // worker may take a delivery at the time it read a moment before the clock moved, and a
    // lease from then must not have run out when the test's sender looks.
    for _ in 0..60 {
        work(&app, &clock).await;
        settled(&app, clock.now()).await;
        let hook = webhook::Entity::find().one(&app.db).await.unwrap().unwrap();
        if !hook.active {
            break;
        }
        // The app's own worker may be calling it right now.
        crate::notify::no_try_under_way(&app).await;
        clock.advance(DELIVERY_LEASE);
    }
    // A try of the app's own worker may still be under way: it ends given up.
    crate::notify::no_try_under_way(&app).await;
    let hook = webhook::Entity::find().one(&app.db).await.unwrap().unwrap();
    assert!(!hook.active, "{hook:#?}");
    assert!(hook.disabled_at.is_some());
    // Turned off at the fifth failure in a row (a try already under way at that moment, by the
    // app's own worker, may add one).
    let failures = u32::try_from(hook.failures).unwrap();
    assert!(
        (WEBHOOK_FAILURES_TO_DISABLE..=WEBHOOK_FAILURES_TO_DISABLE + 1).contains(&failures),
        "{hook:#?}"
    );
    assert!(
        hook.last_error
            .as_deref()
            .unwrap_or_default()
            .contains("503"),
        "{hook:#?}"
    );
    // Every call it got was a counted failure, and nothing is left queued for it.
    let calls = receiver.calls().len();
    assert_eq!(calls, usize::try_from(failures).unwrap());
    let deliveries = hook_deliveries(&app).await;
    assert!(
        deliveries
            .iter()
            .all(|d| d.status == DeliveryStatus::Failed),
        "{deliveries:#?}"
    );
    // Ana is told, in her inbox.
    work(&app, &clock).await;
    let ana_id = user_id(&app, "ana@example.org").await;
    let inbox = berth_app::backend::db::notify::latest_notices(&app.db, ana_id, 100)
        .await
        .unwrap();
    let told = inbox
        .iter()
        .find(|item| item.kind == EventKind::WebhookDisabled)
        .expect("a notice that the webhook was turned off");
    assert_eq!(told.notice.target.as_deref(), Some(receiver.url.as_str()));
    // Later events do not call it.
    let (status, _) = book(&app, &ana, booking(h100[1], start, 2)).await;
    assert_eq!(status, 201);
    work(&app, &clock).await;
    assert_eq!(receiver.calls().len(), calls);
    app.stop().await;
}

/// Books once for a webhook whose receiver holds the call with `answer`; while the call is held,
/// the hook is turned off (as another try's fifth failure in a row would, in the portal), then
/// the call is answered. The webhook's deliveries once the try is over, and the receiver.
async fn given_up_while_tried(
    backend: Backend,
    answer: StatusCode,
) -> (
    Vec<notification_delivery::Model>,
    Receiver,
    TestApp,
    TestDatabase,
    ManualClock,
) {
    let receiver = Receiver::holding(answer).await;
    let (app, db, clock) = spawn(backend, true).await;
    hook_and_booking(&app, &clock, &receiver.url).await;
    // The portal's own worker, or this sender, makes the call; the receiver holds it.
    crate::notify::settle(&app, clock.now()).await;
    let sender = {
        let state = app.state.clone();
        tokio::spawn(async move { notify::deliver(&state).await.unwrap() })
    };
    receiver.called(1).await;
    let hook = webhook::Entity::find().one(&app.db).await.unwrap().unwrap();
    assert!(
        berth_app::backend::db::webhooks::disable(&app.db, hook.id, clock.now())
            .await
            .unwrap()
    );
    receiver.let_go();
    sender.await.unwrap();
    crate::notify::no_try_under_way(&app).await;
    let deliveries = hook_deliveries(&app).await;
    (deliveries, receiver, app, db, clock)
}

/// A try under way when its webhook is turned off fails: the delivery stays given up, and no
/// later run calls again (it once came back queued for another try).
async fn a_delivery_given_up_while_its_call_fails_stays_given_up(backend: Backend) {
    let (deliveries, receiver, app, _db, clock) =
        given_up_while_tried(backend, StatusCode::SERVICE_UNAVAILABLE).await;
    assert!(!deliveries.is_empty());
    for delivery in &deliveries {
        assert_eq!(delivery.status, DeliveryStatus::Failed, "{deliveries:#?}");
        assert!(delivery.lease_until.is_none(), "{deliveries:#?}");
        assert!(
            delivery
                .last_error
                .as_deref()
                .is_some_and(|error| error.contains("turned off")),
            "{deliveries:#?}"
        );
    }
    // Each failed call still counts against the hook (the booking's notices may have been
    // called at once, by the portal's worker and this test's sender).
    let calls = receiver.calls().len();
    let hook = webhook::Entity::find().one(&app.db).await.unwrap().unwrap();
    assert_eq!(usize::try_from(hook.failures).unwrap(), calls, "{hook:#?}");
    clock.advance(TimeDelta::hours(2));
    work(&app, &clock).await;
    assert_eq!(receiver.calls().len(), calls);
    assert!(
        hook_deliveries(&app)
            .await
            .iter()
            .all(|d| d.status == DeliveryStatus::Failed)
    );
    app.stop().await;
}

/// A try under way when its webhook is turned off that gets through is recorded as sent: the
/// message did go out. Those not yet tried stay given up.
async fn a_delivery_given_up_while_its_call_gets_through_is_sent(backend: Backend) {
    let (deliveries, receiver, app, _db, _clock) =
        given_up_while_tried(backend, StatusCode::NO_CONTENT).await;
    let sent: Vec<_> = deliveries
        .iter()
        .filter(|d| d.status == DeliveryStatus::Sent)
        .collect();
    assert_eq!(sent.len(), receiver.calls().len(), "{deliveries:#?}");
    assert!(
        sent.iter()
            .all(|d| d.sent_at.is_some() && d.last_error.is_none() && d.lease_until.is_none()),
        "{deliveries:#?}"
    );
    assert!(
        deliveries
            .iter()
            .all(|d| d.status == DeliveryStatus::Sent || d.status == DeliveryStatus::Failed),
        "{deliveries:#?}"
    );
    app.stop().await;
}

/// A team's hook speaks for the team only while its maker manages it: once Ana is no longer
/// the team's admin, its notices stop reaching her hook.
async fn a_team_hook_goes_quiet_when_its_maker_no_longer_manages_the_team(backend: Backend) {
    let receiver = Receiver::start(StatusCode::NO_CONTENT).await;
    let (app, _db, clock) = spawn(backend, true).await;
    let platform = unfunded_user_token(&app, "root@example.org", PlatformRole::PlatformAdmin).await;
    let ana = unfunded_user_token(&app, "ana@example.org", PlatformRole::User).await;
    let bia = unfunded_user_token(&app, "bia@example.org", PlatformRole::User).await;
    let team = team_with_admin(&app, &platform, "Vision", "ana@example.org").await;
    invitation_by_admin(&app, team, &ana, "bia@example.org").await;
    accept(&app, "bia@example.org").await;
    let (ana_id, bia_id) = (
        user_id(&app, "ana@example.org").await,
        user_id(&app, "bia@example.org").await,
    );
    let role = |token: String, id: i64, role: &'static str| {
        let app = &app;
        async move {
            let (status, body) = send(
                app,
                reqwest::Method::PATCH,
                Some(&token),
                &format!("/api/v1/teams/{team}/members/{id}"),
                Some(json!({ "role": role })),
            )
            .await;
            assert_eq!(status, 204, "{body}");
        }
    };
    role(ana.clone(), bia_id, "admin").await;
    let response = client()
        .post(app.url("/api/create_webhook"))
        .bearer_auth(&ana)
        .form(&[("url", receiver.url.as_str()), ("team", &team.to_string())])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let credit = |reason: &'static str| {
        let (app, platform) = (&app, platform.clone());
        async move {
            let (status, body) = post_json(
                app,
                &platform,
                "/api/v1/admin/credits",
                &json!({ "team_id": team, "amount_minor": 5_000, "reason": reason }),
            )
            .await;
            assert_eq!(status, 201, "{body}");
        }
    };
    let credited_calls = || {
        receiver
            .calls()
            .iter()
            .filter(|call| call.headers["x-berth-event"] == "credits_added")
            .count()
    };
    credit("first").await;
    work(&app, &clock).await;
    settled(&app, clock.now()).await;
    assert_eq!(credited_calls(), 1, "while Ana manages the team");

    // Bia makes Ana a plain member: the hook hears nothing more of the team.
    role(bia.clone(), ana_id, "member").await;
    credit("second").await;
    work(&app, &clock).await;
    settled(&app, clock.now()).await;
    assert_eq!(credited_calls(), 1, "Ana no longer manages the team");

    // Bia, an admin of the team, sees Ana's hook on the team, with who added it, and removes
    // it; Ana, a plain member now, may not remove Bia's.
    let listed = |token: String| {
        let app = &app;
        async move {
            let response = client()
                .post(app.url("/api/get_webhooks"))
                .bearer_auth(&token)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status().as_u16(), 200);
            let page: Value = response.json().await.unwrap();
            page["hooks"].as_array().unwrap().clone()
        }
    };
    let removed = |token: String, id: i64| {
        let app = &app;
        async move {
            client()
                .post(app.url("/api/delete_webhook"))
                .bearer_auth(&token)
                .form(&[("id", id.to_string())])
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let response = client()
        .post(app.url("/api/create_webhook"))
        .bearer_auth(&bia)
        .form(&[("url", receiver.url.as_str()), ("team", &team.to_string())])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let seen = listed(bia.clone()).await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    let anas = seen[0]["id"].as_i64().unwrap();
    let bias = seen[1]["id"].as_i64().unwrap();
    assert_eq!(
        (&seen[0]["maker"], &seen[1]["maker"], &seen[0]["team"][0]),
        (&json!("ana"), &Value::Null, &json!(team)),
        "{seen:?}"
    );
    let seen = listed(ana.clone()).await;
    assert_eq!(seen.len(), 1, "only her own: {seen:?}");
    assert_eq!(removed(ana.clone(), bias).await, 404);
    assert_eq!(removed(platform.clone(), 0).await, 404);
    assert_eq!(removed(bia.clone(), anas).await, 200);
    assert!(listed(ana.clone()).await.is_empty());
    assert_eq!(listed(bia.clone()).await.len(), 1);
    app.stop().await;
}

crate::on_both_backends!(
    a_team_hook_goes_quiet_when_its_maker_no_longer_manages_the_team,
    a_booking_posts_signed_json_to_its_owners_webhook,
    addresses_inside_the_network_are_refused_unless_allowed,
    a_failing_webhook_is_retried_then_turned_off_and_its_owner_told,
    the_portals_own_worker_calls_webhooks_without_e_mail_set_up,
    a_delivery_given_up_while_its_call_fails_stays_given_up,
    a_delivery_given_up_while_its_call_gets_through_is_sent,
);
