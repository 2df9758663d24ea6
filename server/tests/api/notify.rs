//! Telling people in time: every booking writes its confirmation and its reminders in the same
//! transaction (200 concurrent bookings, 200 confirmations), the worker hands each out once when
//! it is due, a withdrawn reservation's reminders never go out, and a user reads and marks their
//! inbox (the page, the bell, nobody else's notices).

use crate::helpers::*;
use berth_app::backend::clock::Clock;
use berth_app::backend::db;
use berth_app::backend::entity::{notification_delivery, notification_event};
use berth_app::backend::notify;
use berth_app::domain::notify::{EventKind, InboxItem};
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

const H100: &str = "NVIDIA H100 80GB HBM3";

fn booking(gpu: i64, start: DateTime<Utc>, hours: i64) -> Value {
    json!({
        "gpu_ids": [gpu],
        "start": start.to_rfc3339(),
        "end": (start + TimeDelta::hours(hours)).to_rfc3339(),
    })
}

/// What a user was told, newest first, leaving out the credits every test user starts with.
async fn inbox_of(app: &TestApp, email: &str) -> Vec<InboxItem> {
    let mut items = db::notify::latest_notices(&app.db, user_id(app, email).await, 100)
        .await
        .unwrap();
    items.retain(|item| item.kind != EventKind::CreditsAdded);
    items
}

fn kinds(items: &[InboxItem]) -> Vec<EventKind> {
    items.iter().map(|item| item.kind).collect()
}

/// Waits until no sender holds a delivery's lease: every try under way (by the app's own
/// worker too) has ended. A test moves its clock only then, or a try still under way would lose
/// its lease to the test's sender (two tries of one message).
pub(crate) async fn no_try_under_way(app: &TestApp) {
    for _ in 0..200 {
        let deliveries = notification_delivery::Entity::find()
            .all(&app.db)
            .await
            .unwrap();
        if deliveries.iter().all(|d| d.lease_until.is_none()) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!(
        "a try still under way: {:#?}",
        notification_delivery::Entity::find()
            .all(&app.db)
            .await
            .unwrap()
    );
}

/// Runs the worker at `now` until every event due is handed out: the app's own worker may hold
/// one (a row lock ours skips on PostgreSQL) for a moment.
pub(crate) async fn settle(app: &TestApp, now: DateTime<Utc>) {
    for _ in 0..200 {
        notify::run(&app.state, now).await.unwrap();
        if db::notify::due_ids(&app.db, now, 1)
            .await
            .unwrap()
            .is_empty()
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("events still due at {now}");
}

async fn events_of(app: &TestApp, kind: EventKind) -> u64 {
    notification_event::Entity::find()
        .filter(notification_event::Column::Kind.eq(kind))
        .count(&app.db)
        .await
        .unwrap()
}

async fn a_booking_is_confirmed_at_once_and_reminded_before_its_start_and_end(backend: Backend) {
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, now).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let h100 = gpus_of(&app, H100).await;
    let start = now + TimeDelta::hours(3);
    let (status, booked) = book(&app, &ana, booking(h100[0], start, 2)).await;
    assert_eq!(status, 201, "{booked}");

    // The confirmation is due now; the reminders wait for their time.
    settle(&app, clock.now()).await;
    let inbox = inbox_of(&app, "ana@example.org").await;
    assert_eq!(kinds(&inbox), vec![EventKind::BookingConfirmed]);
    let brief = inbox[0].notice.reservation.as_ref().unwrap();
    assert_eq!((brief.id, brief.gpus), (booked["id"].as_i64().unwrap(), 1));
    assert_eq!(brief.window.start(), start);
    assert!(!inbox[0].read);

    clock.set(start - TimeDelta::minutes(16));
    settle(&app, clock.now()).await;
    assert_eq!(
        kinds(&inbox_of(&app, "ana@example.org").await).len(),
        1,
        "not due yet"
    );
    clock.set(start - TimeDelta::minutes(15));
    settle(&app, clock.now()).await;
    clock.set(start + TimeDelta::hours(2) - TimeDelta::minutes(15));
    settle(&app, clock.now()).await;
    // Again: nothing is handed out twice.
    settle(&app, clock.now()).await;
    assert_eq!(
        kinds(&inbox_of(&app, "ana@example.org").await),
        vec![
            EventKind::EndingSoon,
            EventKind::StartingSoon,
            EventKind::BookingConfirmed
        ]
    );
    // Nobody else hears of it.
    let bia = user_token(&app, "bia@example.org", PlatformRole::User).await;
    drop(bia);
    assert!(kinds(&inbox_of(&app, "bia@example.org").await).is_empty());
    app.stop().await;
}

async fn a_cancelled_booking_tells_its_refund_and_is_never_reminded(backend: Backend) {
    let now = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, now).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let h100 = gpus_of(&app, H100).await;
    let start = now + TimeDelta::days(3);
    let (_, booked) = book(&app, &ana, booking(h100[0], start, 2)).await;
    let (status, cancelled) = cancel(&app, &ana, &booked["id"]).await;
    assert_eq!(status, 200, "{cancelled}");

    clock.set(start + TimeDelta::hours(3));
    settle(&app, clock.now()).await;
    let inbox = inbox_of(&app, "ana@example.org").await;
    assert_eq!(
        kinds(&inbox),
        vec![EventKind::BookingCancelled, EventKind::BookingConfirmed]
    );
    let refunded = cancelled["refunded_minor"].as_i64().unwrap();
    assert!(refunded > 0, "{cancelled}");
    assert_eq!(inbox[0].notice.amount_minor, Some(refunded));
    assert_eq!(events_of(&app, EventKind::StartingSoon).await, 0);
    assert_eq!(events_of(&app, EventKind::EndingSoon).await, 0);
    app.stop().await;
}

async fn two_hundred_concurrent_bookings_write_exactly_their_confirmations(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let h100 = gpus_of(&app, H100).await;
    let mut tokens = Vec::new();
    for n in 0..8 {
        tokens.push(user_token(&app, &format!("user{n}@example.org"), PlatformRole::User).await);
    }
    // 200 requests for 2-hour windows on the H100s across two days: many clash and are refused.
    let base = on_grid_in(TimeDelta::hours(27));
    let requests = (0..200usize)
        .map(|i| {
            let start = base + TimeDelta::hours(i64::try_from((i * 5) % 48).unwrap());
            (
                tokens[i % tokens.len()].clone(),
                "/api/v1/reservations".to_owned(),
                booking(h100[i % h100.len()], start, 2),
            )
        })
        .collect();
    let answers = post_all_at_once(&app, requests).await;
    let booked = answers.iter().filter(|(status, _)| *status == 201).count();
    assert!(booked > 0 && booked < 200, "{booked} booked");
    assert_eq!(
        events_of(&app, EventKind::BookingConfirmed).await,
        u64::try_from(booked).unwrap()
    );
    assert_eq!(
        events_of(&app, EventKind::EndingSoon).await,
        u64::try_from(booked).unwrap()
    );
    // Handed out once each, whoever runs the worker (here two runs at once).
    let now = Utc::now();
    let (a, b) = tokio::join!(notify::run(&app.state, now), notify::run(&app.state, now));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a.handed_out + b.handed_out <= u32::try_from(booked).unwrap());
    // The app's own worker may still hold the last few.
    settle(&app, now).await;
    let mut received = 0;
    for n in 0..8 {
        received += kinds(&inbox_of(&app, &format!("user{n}@example.org")).await).len();
    }
    assert_eq!(received, booked);
    assert_capacity_kept(&app).await;
    app.stop().await;
}

async fn the_inbox_page_shows_notices_in_the_readers_language_and_marks_them_read(
    backend: Backend,
) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    let me = user_id(&app, "demo-user@berth.invalid").await;
    // Credits added to the demo user's wallet: a notice for them alone.
    let platform = user_token(&app, "root@example.org", PlatformRole::PlatformAdmin).await;
    let (status, granted) = post_json(
        &app,
        &platform,
        "/api/v1/admin/credits",
        &json!({ "email": "demo-user@berth.invalid", "amount_minor": 2500, "reason": "invoice 7" }),
    )
    .await;
    assert_eq!(status, 201, "{granted}");
    settle(&app, Utc::now()).await;

    let html = without_markers(app.get_in_language("/inbox", "pt-BR").await);
    assert!(html.contains("Créditos adicionados"), "{html}");
    assert!(html.contains("1 não lidas"), "{html}");
    assert!(
        html.contains("class=\"bell has-unread\"")
            && html.contains("<span class=\"bell-count\">1</span>"),
        "the header's bell: {html}"
    );
    let html = without_markers(app.get_in_language("/inbox", "en").await);
    assert!(html.contains("Credits added"), "{html}");

    // Someone else's notice cannot be marked: nothing changes.
    let other = user_token(&app, "eve@example.org", PlatformRole::User).await;
    let mine = db::notify::latest_notices(&app.db, me, 10).await.unwrap();
    assert_eq!(mine.len(), 1);
    let no_redirects = client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = no_redirects
        .post(app.url("/api/forms/notice_read"))
        .bearer_auth(&other)
        .form(&[("id", mine[0].id.to_string())])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with("/inbox?error="), "{location}");
    assert_eq!(db::notify::unread(&app.db, me).await.unwrap(), 1);

    // Its reader marks it read.
    let response = app
        .client
        .post(app.url("/api/forms/notice_read"))
        .form(&[("id", mine[0].id.to_string())])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    assert_eq!(db::notify::unread(&app.db, me).await.unwrap(), 0);
    let html = without_markers(app.get_in_language("/inbox", "en").await);
    assert!(html.contains("0 unread"), "{html}");
    assert!(!html.contains("bell-count"), "{html}");

    // A hundred more notices: the page shows the newest hundred, and the older one after them.
    for n in 0..100 {
        let (status, granted) = post_json(
            &app,
            &platform,
            "/api/v1/admin/credits",
            &json!({ "email": "demo-user@berth.invalid", "amount_minor": 1, "reason": format!("gift {n}") }),
        )
        .await;
        assert_eq!(status, 201, "{granted}");
    }
    settle(&app, Utc::now()).await;
    let notices = |html: &str| html.matches(" data-notice=\"").count();
    let html = without_markers(app.get_in_language("/inbox", "en").await);
    assert_eq!(notices(&html), 100, "{html}");
    let older = html
        .split("rel=\"next\" href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no link to older notices: {html}"))
        .replace("&amp;", "&");
    assert!(older.starts_with("/inbox?cursor="), "{older}");
    let html = without_markers(app.get_in_language(&older, "en").await);
    assert_eq!(notices(&html), 1, "{html}");
    assert!(
        html.contains(&format!("data-notice=\"{}\"", mine[0].id)),
        "the first notice, last: {html}"
    );
    assert!(
        html.contains("class=\"pager-newest\"") && !html.contains("rel=\"next\""),
        "{html}"
    );
    // Read seven at a time, each notice comes once.
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = berth_app::domain::paging::PageRequest::parse(
            berth_app::domain::paging::ListKind::Inbox,
            Some(7),
            after.as_deref(),
        )
        .unwrap();
        let read = db::notify::inbox(&app.db, me, &page).await.unwrap();
        seen.extend(read.items.iter().map(|item| item.id));
        match read.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let mut unique = seen.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!((seen.len(), unique.len()), (101, 101));
    // Nobody signed in: refused.
    let response = client()
        .post(app.url("/api/forms/notices_read"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    app.stop().await;
}

crate::on_both_backends!(
    a_booking_is_confirmed_at_once_and_reminded_before_its_start_and_end,
    a_cancelled_booking_tells_its_refund_and_is_never_reminded,
    two_hundred_concurrent_bookings_write_exactly_their_confirmations,
    the_inbox_page_shows_notices_in_the_readers_language_and_marks_them_read,
);
