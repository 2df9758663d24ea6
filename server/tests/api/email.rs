//! E-mail through a real SMTP server (aiosmtpd on loopback): a booking is mailed in its holder's
//! language and time zone with its calendar entry (parsed by Python's `icalendar`), a server that
//! answers "try again later" gets the message again later and only once, a refused address is
//! given up at once, and the language a user picks in the portal is the language of their mail.

use crate::helpers::*;
use berth_app::backend::clock::Clock;
use berth_app::backend::entity::notification_delivery;
use berth_app::backend::notify;
use berth_app::domain::notify::{DeliveryStatus, EventKind, MAX_ATTEMPTS};
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};

const H100: &str = "NVIDIA H100 80GB HBM3";
const PUBLIC: &str = "http://berth.test";

fn booking(gpu: i64, start: DateTime<Utc>, hours: i64) -> Value {
    json!({
        "gpu_ids": [gpu],
        "start": start.to_rfc3339(),
        "end": (start + TimeDelta::hours(hours)).to_rfc3339(),
    })
}

/// A test app that mails through `sink`.
async fn spawn_mailing(
    backend: Backend,
    sink: &SmtpSink,
    now: DateTime<Utc>,
) -> (TestApp, TestDatabase, ManualClock) {
    let url = sink.url();
    spawn_app_with(backend, now, move |settings| {
        settings.smtp_url = Some(url);
        settings.public_url = Some(PUBLIC.to_owned());
        settings.mail_from = Some("Berth <berth@berth.test>".to_owned());
    })
    .await
}

async fn deliveries(app: &TestApp) -> Vec<notification_delivery::Model> {
    notification_delivery::Entity::find()
        .order_by_asc(notification_delivery::Column::Id)
        .all(&app.db)
        .await
        .unwrap()
}

/// Runs the worker and the sender at the clock's time (the app's own worker may run alongside).
async fn work(app: &TestApp, clock: &ManualClock) {
    crate::notify::settle(app, clock.now()).await;
    notify::deliver(&app.state).await.unwrap();
}

/// Waits (briefly) until no delivery is queued: the app's own worker may hold one a moment
/// longer than ours. The sink writes a message before it answers, so a sent one is there.
async fn settled(app: &TestApp) -> Vec<notification_delivery::Model> {
    for _ in 0..100 {
        let all = deliveries(app).await;
        if all.iter().all(|d| d.status != DeliveryStatus::Queued) {
            return all;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("deliveries still queued: {:#?}", deliveries(app).await);
}

/// The actor `user_id` (for calling a service directly).
async fn actor(app: &TestApp, user_id: i64) -> berth_app::backend::auth::actor::Actor {
    berth_app::backend::auth::actor::Actor::new(
        berth_app::backend::db::users::find_user(&app.db, user_id)
            .await
            .unwrap()
            .unwrap(),
        None,
    )
}

/// Waits (briefly) until `sink` holds a message whose subject contains `subject`; a message the
/// app's own worker is sending may arrive a moment after ours returned.
async fn message_about(sink: &SmtpSink, subject: &str) -> Value {
    for _ in 0..100 {
        if let Some(message) = sink
            .messages()
            .into_iter()
            .find(|m| m["subject"].as_str().unwrap_or_default().contains(subject))
        {
            return message;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no message about {subject:?}: {:#?}", sink.messages());
}

async fn a_booking_is_mailed_in_the_holders_language_and_zone_with_its_calendar_entry(
    backend: Backend,
) {
    let sink = SmtpSink::start(SinkMode::Accept);
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_mailing(backend, &sink, now).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    // Ana picks Portuguese in the portal and São Paulo time on her profile.
    let response = app
        .client
        .post(app.url("/locale"))
        .bearer_auth(&ana)
        .form(&[("locale", "pt-BR"), ("return_to", "/")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    let ana_id = user_id(&app, "ana@example.org").await;
    berth_app::backend::db::users::set_time_zone(&app.db, ana_id, Some("America/Sao_Paulo"), now)
        .await
        .unwrap();

    let h100 = gpus_of(&app, H100).await;
    let start = now + TimeDelta::days(3);
    let (status, booked) = book(&app, &ana, booking(h100[0], start, 2)).await;
    assert_eq!(status, 201, "{booked}");
    work(&app, &clock).await;

    let message = message_about(&sink, "Reserva confirmada").await;
    // BERTH_TEST_MAIL_DUMP=<dir>: keep the HTML to look at it in a browser.
    if let Ok(dir) = std::env::var("BERTH_TEST_MAIL_DUMP") {
        std::fs::write(
            std::path::Path::new(&dir).join("booking-confirmed-pt-BR.html"),
            message["html"].as_str().unwrap_or_default(),
        )
        .unwrap();
    }
    assert_eq!(message["rcpt_tos"], json!(["ana@example.org"]));
    assert_eq!(message["mail_from"], "berth@berth.test");
    let text = message["text"].as_str().unwrap();
    let html = message["html"].as_str().unwrap();
    // Times in São Paulo (UTC-3), said so, in Portuguese.
    let local = (start - TimeDelta::hours(3))
        .format("%Y-%m-%d %H:%M")
        .to_string();
    for body in [text, html] {
        assert!(body.contains(&local), "{local} in {body}");
        assert!(body.contains("Horários em America/Sao_Paulo."), "{body}");
        assert!(body.contains("Abrir no Berth"), "{body}");
        assert!(body.contains(&format!("{PUBLIC}/reservations")), "{body}");
        assert!(
            body.contains(&format!("{PUBLIC}/profile#notifications")),
            "{body}"
        );
    }
    assert!(html.contains("<html lang=\"pt-BR\""), "{html}");

    // The calendar entry, as a real iCalendar parser reads it.
    let attachments = message["attachments"].as_array().unwrap();
    assert_eq!(attachments.len(), 1, "{message:#}");
    let ics = &attachments[0];
    assert_eq!(ics["content_type"], "text/calendar");
    assert_eq!(ics["params"]["method"], "PUBLISH");
    let events = ics["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{ics:#}");
    let event = &events[0];
    assert_eq!(
        event["uid"],
        format!("reservation-{}@berth.test", booked["id"])
    );
    assert_eq!(
        event["dtstart"],
        start.format("%Y-%m-%dT%H:%M:%S+00:00").to_string()
    );
    assert_eq!(
        event["dtend"],
        (start + TimeDelta::hours(2))
            .format("%Y-%m-%dT%H:%M:%S+00:00")
            .to_string()
    );
    assert_eq!(event["status"], "CONFIRMED");
    assert_eq!(event["url"], format!("{PUBLIC}/reservations"));
    let summary = event["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("1× NVIDIA H100") && summary.contains(" em "),
        "{summary}"
    );

    // The credits she started with were mailed too (money is on by default); nothing twice.
    work(&app, &clock).await;
    let sent = settled(&app).await;
    assert!(
        sent.iter().all(|d| d.status == DeliveryStatus::Sent),
        "{sent:#?}"
    );
    let messages = sink.messages();
    assert_eq!(messages.len(), sent.len(), "{messages:#?}");
    app.stop().await;
}

async fn a_failing_mail_server_is_tried_again_later_and_mails_once(backend: Backend) {
    // "Try again later" for the first three messages the server sees.
    let sink = SmtpSink::start(SinkMode::FailFirst(3));
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_mailing(backend, &sink, now).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let h100 = gpus_of(&app, H100).await;
    let start = now + TimeDelta::days(3);
    let (status, booked) = book(&app, &ana, booking(h100[0], start, 2)).await;
    assert_eq!(status, 201, "{booked}");

    // Two senders at once, again and again, the clock moving past each wait.
    for _ in 0..12 {
        notify::run(&app.state, clock.now()).await.unwrap();
        let (a, b) = tokio::join!(notify::deliver(&app.state), notify::deliver(&app.state));
        a.unwrap();
        b.unwrap();
        if deliveries(&app)
            .await
            .iter()
            .all(|d| d.status == DeliveryStatus::Sent)
        {
            break;
        }
        // The app's own sender may be trying one right now.
        crate::notify::no_try_under_way(&app).await;
        clock.advance(TimeDelta::minutes(2));
    }
    let sent = deliveries(&app).await;
    assert_eq!(
        sent.len(),
        2,
        "credits added and booking confirmed: {sent:#?}"
    );
    assert!(
        sent.iter().all(|d| d.status == DeliveryStatus::Sent),
        "{sent:#?}"
    );
    assert!(
        sent.iter()
            .all(|d| d.last_error.is_none() && d.sent_at.is_some())
    );
    // Three refusals were three more tries, and every try is counted once.
    let tries: i32 = sent.iter().map(|d| d.attempts).sum();
    assert_eq!(tries, 2 + 3, "{sent:#?}");
    // Each message arrived exactly once.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let messages = sink.messages();
    assert_eq!(messages.len(), 2, "{messages:#?}");
    let mut ids: Vec<_> = messages
        .iter()
        .map(|m| m["message_id"].to_string())
        .collect();
    ids.dedup();
    assert_eq!(ids.len(), 2);
    app.stop().await;
}

async fn a_refused_address_is_given_up_at_once_with_the_reason(backend: Backend) {
    let sink = SmtpSink::start(SinkMode::Reject);
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_mailing(backend, &sink, now).await;
    user_token(&app, "ana@example.org", PlatformRole::User).await;
    work(&app, &clock).await;
    let failed = settled(&app).await;
    assert_eq!(failed.len(), 1, "{failed:#?}");
    let failed = &failed[0];
    assert_eq!(failed.status, DeliveryStatus::Failed);
    assert_eq!(failed.attempts, 1);
    assert!(failed.attempts < i32::try_from(MAX_ATTEMPTS).unwrap());
    let reason = failed.last_error.clone().unwrap_or_default();
    assert!(reason.contains("550"), "{reason}");
    // Given up: later runs do not try again.
    clock.advance(TimeDelta::hours(2));
    work(&app, &clock).await;
    assert_eq!(deliveries(&app).await[0].attempts, 1);
    assert!(sink.messages().is_empty());

    // Platform admins see it with the reason; nobody else may look.
    let admin = unfunded_user_token(&app, "root@example.org", PlatformRole::PlatformAdmin).await;
    let page = |token: String, body: &'static str| {
        app.client
            .post(app.url("/api/get_deliveries_page"))
            .bearer_auth(token)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
    };
    let response = page(admin.clone(), "status=failed").await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let seen: Value = response.json().await.unwrap();
    assert_eq!(
        seen["counts"],
        json!({ "queued": 0, "sent": 0, "failed": 1 })
    );
    assert_eq!(seen["rows"][0]["recipient"], "ana@example.org");
    assert_eq!(seen["rows"][0]["kind"], "credits_added");
    assert!(
        seen["rows"][0]["last_error"]
            .as_str()
            .unwrap()
            .contains("550"),
        "{seen}"
    );
    let sent_only: Value = page(admin.clone(), "status=sent")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sent_only["rows"], json!([]));
    assert_eq!(
        page(admin.clone(), "status=bogus")
            .await
            .unwrap()
            .status()
            .as_u16(),
        422
    );
    assert_eq!(
        page(admin.clone(), "cursor=forged")
            .await
            .unwrap()
            .status()
            .as_u16(),
        422
    );
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    assert_eq!(page(ana.clone(), "").await.unwrap().status().as_u16(), 403);
    assert_eq!(
        page(ana, "cursor=forged").await.unwrap().status().as_u16(),
        403,
        "who may not look learns nothing else"
    );
    // Page by page, one a page, every delivery comes once, newest first.
    use berth_app::domain::paging::{ListKind, PageRequest};
    let all = berth_app::backend::db::notify::delivery_rows(&app.db, None, &PageRequest::first())
        .await
        .unwrap();
    assert!(all.next.is_none());
    let mut walked = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let one = PageRequest::parse(ListKind::Deliveries, Some(1), after.as_deref()).unwrap();
        let read = berth_app::backend::db::notify::delivery_rows(&app.db, None, &one)
            .await
            .unwrap();
        walked.extend(read.items.iter().map(|row| row.id));
        match read.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let ids: Vec<i64> = all.items.iter().map(|row| row.id).collect();
    assert!(!ids.is_empty());
    assert_eq!(walked, ids);
    app.sign_in("platform_admin").await;
    let (status, html) = app.get_text("/admin/deliveries?status=failed").await;
    assert_eq!(status, 200);
    assert!(
        html.contains("ana@example.org") && html.contains("550"),
        "{html}"
    );
    assert!(html.contains("Failed (1)"), "{html}");
    app.stop().await;
}

async fn a_new_users_mail_speaks_the_language_they_signed_in_with(backend: Backend) {
    let sink = SmtpSink::start(SinkMode::Accept);
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, _clock) = spawn_mailing(backend, &sink, now).await;
    let response = app
        .client
        .post(app.url("/auth/dev"))
        .header("accept-language", "pt-BR,pt;q=0.9,en;q=0.5")
        .form(&[("role", "user"), ("return_to", "/")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    let user = berth_app::backend::entity::user::Entity::find()
        .filter(berth_app::backend::entity::user::Column::IsPlatformAdmin.eq(false))
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(user.locale.as_deref(), Some("pt-BR"));
    // The switch in the portal changes it; signing in again does not change it back.
    let response = app
        .client
        .post(app.url("/locale"))
        .form(&[("locale", "en"), ("return_to", "/")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    app.sign_in("user").await;
    let user = berth_app::backend::entity::user::Entity::find_by_id(user.id)
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(user.locale.as_deref(), Some("en"));
    app.stop().await;
}

/// Posts the profile page's notification form as `token` with `body` (urlencoded); the redirect.
async fn save_settings(app: &TestApp, token: &str, body: &str) -> String {
    let response = app
        .client
        .post(app.url("/api/forms/notification_settings"))
        .bearer_auth(token)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    response.headers()["location"].to_str().unwrap().to_owned()
}

async fn each_user_chooses_where_each_kind_of_notice_goes(backend: Backend) {
    let sink = SmtpSink::start(SinkMode::Accept);
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_mailing(backend, &sink, now).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let bob = user_token(&app, "bob@example.org", PlatformRole::User).await;
    let ana_id = user_id(&app, "ana@example.org").await;

    // Ana: confirmations by e-mail only, cancellations in the inbox only, nothing else anywhere.
    let location = save_settings(
        &app,
        &ana,
        "email%5B%5D=booking_confirmed&inbox%5B%5D=booking_cancelled",
    )
    .await;
    assert_eq!(location, "/profile?done=notifications");
    let saved = notify::settings(&app.state, &actor(&app, ana_id).await)
        .await
        .unwrap();
    assert!(saved.email_available);
    for (kind, choice) in &saved.kinds {
        assert_eq!(
            choice.email,
            *kind == EventKind::BookingConfirmed,
            "{kind:?}"
        );
        assert_eq!(
            choice.inbox,
            *kind == EventKind::BookingCancelled,
            "{kind:?}"
        );
    }
    // A kind that does not exist refuses the whole form: nothing changes.
    let location =
        save_settings(&app, &ana, "inbox%5B%5D=credits_added&email%5B%5D=nonsense").await;
    assert!(location.starts_with("/profile?error="), "{location}");
    assert!(location.contains("nonsense"), "{location}");
    let unchanged = notify::settings(&app.state, &actor(&app, ana_id).await)
        .await
        .unwrap();
    assert_eq!(unchanged, saved);

    // Both book; Bob keeps the defaults (inbox and e-mail for a confirmation).
    let h100 = gpus_of(&app, H100).await;
    let start = now + TimeDelta::days(3);
    for (token, gpu) in [(&ana, h100[0]), (&bob, h100[1])] {
        let (status, booked) = book(&app, token, booking(gpu, start, 2)).await;
        assert_eq!(status, 201, "{booked}");
    }
    work(&app, &clock).await;
    let ana_inbox = berth_app::backend::db::notify::latest_notices(&app.db, ana_id, 100)
        .await
        .unwrap();
    // (Her starting credits may have gone out before she chose: the app's worker runs too.)
    assert!(
        ana_inbox
            .iter()
            .all(|item| item.kind == EventKind::CreditsAdded),
        "{ana_inbox:#?}"
    );
    let bob_id = user_id(&app, "bob@example.org").await;
    let bob_inbox = berth_app::backend::db::notify::latest_notices(&app.db, bob_id, 100)
        .await
        .unwrap();
    let kinds: Vec<_> = bob_inbox.iter().map(|item| item.kind).collect();
    assert_eq!(
        kinds,
        vec![EventKind::BookingConfirmed, EventKind::CreditsAdded]
    );
    work(&app, &clock).await;
    settled(&app).await;
    let mut mailed: Vec<(String, String)> = sink
        .messages()
        .iter()
        .map(|m| {
            (
                m["rcpt_tos"][0].as_str().unwrap().to_owned(),
                m["subject"].as_str().unwrap().to_owned(),
            )
        })
        .filter(|(to, subject)| to != "ana@example.org" || !subject.contains("Credits"))
        .collect();
    mailed.sort();
    assert_eq!(
        mailed,
        vec![
            (
                "ana@example.org".to_owned(),
                "[Berth] Booking confirmed".to_owned()
            ),
            (
                "bob@example.org".to_owned(),
                "[Berth] Booking confirmed".to_owned()
            ),
            (
                "bob@example.org".to_owned(),
                "[Berth] Credits added".to_owned()
            ),
        ]
    );
    app.stop().await;
}

crate::on_both_backends!(
    a_booking_is_mailed_in_the_holders_language_and_zone_with_its_calendar_entry,
    a_failing_mail_server_is_tried_again_later_and_mails_once,
    a_refused_address_is_given_up_at_once_with_the_reason,
    a_new_users_mail_speaks_the_language_they_signed_in_with,
    each_user_chooses_where_each_kind_of_notice_goes,
);
