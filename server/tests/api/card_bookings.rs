//! Issue 28: bookings paid by card, against `localstripe` on loopback. A booking paid by card at
//! booking is paid from the credits its card payment brings once Stripe confirms it (the wallet
//! never holds more than for that instant); a booking to be paid before its start is charged
//! off-session by the job at T − 2 h; a card that needs the bank's authentication leaves the
//! booking due, told at once, and paid once the holder authenticates; a declined card leaves it
//! due, told, and released like any unpaid booking; a cancellation's refund goes back to the
//! card (a Stripe Refund, booked out of the wallet); receipts for each; Stripe's balance
//! compared with the ledger, a difference told to the platform admins. The ledger audit runs at
//! the end of each.

use crate::helpers::*;
use berth_app::backend::card_payments;
use berth_app::backend::entity::{card_payment, notification_event};
use berth_app::backend::payment_job;
use berth_app::domain::notify::EventKind;
use berth_app::domain::payment::ChargePolicy;
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, TransactionTrait};
use serde_json::{Value, json};

crate::on_both_backends!(
    issue_28_a_booking_paid_by_card_at_booking_and_refunded_to_the_card,
    issue_28_before_start_bookings_are_charged_off_session_with_authentication_and_declines,
    issue_28_stripe_unreachable_when_the_job_charges_leaves_the_booking_due_and_told,
    issue_28_a_payment_due_is_told_though_another_job_holds_the_booking_then,
);

/// Saves card `number` the way the wallet page does; answers the card.
async fn saved_card(app: &TestApp, stripe: &LocalStripe, token: &str, number: &str) -> Value {
    let (status, card) = save_card(app, stripe, token, number).await;
    assert_eq!(status, 201, "{card}");
    card
}

fn booking(gpu: i64, start: DateTime<Utc>, charge: &str, card: &Value) -> Value {
    json!({
        "gpu_ids": [gpu],
        "start": start.to_rfc3339(),
        "end": (start + TimeDelta::hours(1)).to_rfc3339(),
        "charge": charge,
        "card": card["id"],
    })
}

/// Waits (up to 15 s: localstripe sends its webhooks a second after the event) until
/// reservation `id`'s payment status is `status`; answers it.
async fn payment_status_becomes(app: &TestApp, token: &str, id: &Value, status: &str) -> Value {
    for _ in 0..150 {
        let (code, reservation) = get(app, token, &format!("/api/v1/reservations/{id}")).await;
        assert_eq!(code, 200, "{reservation}");
        if reservation["payment_status"] == status {
            return reservation;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("reservation {id} never became {status}");
}

/// The notices of `kind` recorded for user `email`.
async fn notices(app: &TestApp, email: &str, kind: EventKind) -> Vec<notification_event::Model> {
    notification_event::Entity::find()
        .filter(notification_event::Column::Kind.eq(kind))
        .filter(notification_event::Column::UserId.eq(user_id(app, email).await))
        .all(&app.db)
        .await
        .unwrap()
}

async fn issue_28_a_booking_paid_by_card_at_booking_and_refunded_to_the_card(backend: Backend) {
    let stripe = LocalStripe::start().await;
    let (app, _db) = stripe_portal(backend, &stripe).await;
    let platform = user_token(&app, "root@berth.test", PlatformRole::PlatformAdmin).await;
    let email = "card@berth.test";
    let token = unfunded_user_token(&app, email, PlatformRole::User).await;
    let other = unfunded_user_token(&app, "other@berth.test", PlatformRole::User).await;
    let card = saved_card(&app, &stripe, &token, "4242424242424242").await;
    let h100 = gpus_of(&app, H100).await;
    let start = on_grid_in(TimeDelta::hours(30));

    // Another user's card, a team's booking, or no card payments: refused, nothing booked.
    let (status, body) = book(&app, &other, booking(h100[0], start, "at_booking", &card)).await;
    assert_eq!(status, 404, "another user's card: {body}");
    let team = team_with_admin(&app, &platform, "Lab", email).await;
    let mut for_team = booking(h100[0], start, "at_booking", &card);
    for_team["team_id"] = json!(team);
    let (status, body) = book(&app, &token, &for_team).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["code"], "card_personal_only", "{body}");
    let (_, mine) = get(&app, &token, "/api/v1/reservations").await;
    assert_eq!(mine.as_array().map(Vec::len), Some(0), "{mine}");

    // Booked with the card: due until Stripe confirms the charge, then paid from the credits
    // it brought; the wallet ends where it was.
    let (status, booked) = book(&app, &token, booking(h100[0], start, "at_booking", &card)).await;
    assert_eq!(status, 201, "{booked}");
    assert_eq!(booked["payment_status"], "due", "{booked}");
    let price = booked["price_minor"].as_i64().unwrap();
    assert!(price > 0);
    let payment = &booked["card_payment"];
    assert_eq!(payment["purpose"], "booking", "{payment}");
    assert_eq!(payment["reservation_id"], booked["id"]);
    assert_eq!(payment["amount_minor"], price);
    assert_eq!(payment["card"], "Visa ···· 4242");
    let paid = payment_status_becomes(&app, &token, &booked["id"], "paid").await;
    assert_eq!(paid["price_minor"], price);
    assert_eq!(balance(&app, &token).await, 0);
    let (_, wallet) = get(&app, &token, "/api/v1/wallet").await;
    let text = wallet.to_string();
    assert!(
        text.contains(&format!("Card payment for reservation #{}", booked["id"])),
        "{wallet}"
    );
    let (status, latest) = get(
        &app,
        &token,
        &format!("/api/v1/reservations/{}/card-payment", booked["id"]),
    )
    .await;
    assert_eq!(
        (status, &latest["status"]),
        (200, &json!("succeeded")),
        "{latest}"
    );
    let (status, _) = get(
        &app,
        &other,
        &format!("/api/v1/reservations/{}/card-payment", booked["id"]),
    )
    .await;
    assert_eq!(status, 404, "another user's booking");
    // Paying it again: nothing is due.
    let (status, body) = post_json(
        &app,
        &token,
        &format!("/api/v1/reservations/{}/card-payment", booked["id"]),
        &json!({ "card_id": card["id"] }),
    )
    .await;
    assert_eq!(
        (status, &body["code"]),
        (409, &json!("nothing_due")),
        "{body}"
    );
    // A receipt for the charge, and the booking's own charge notice.
    let receipts = notices(&app, email, EventKind::Receipt).await;
    assert_eq!(receipts.len(), 1);
    assert!(
        receipts[0].notice.contains("\"what\":\"booking\""),
        "{}",
        receipts[0].notice
    );
    assert!(receipts[0].notice.contains("pi_"));

    // Cancelled 30 h ahead: the full refund goes back to the card (refund_to = card), out of
    // the wallet; Stripe holds the refund.
    let (status, cancelled) = send(
        &app,
        reqwest::Method::DELETE,
        Some(&token),
        &format!("/api/v1/reservations/{}", booked["id"]),
        None,
    )
    .await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["refunded_minor"], price, "{cancelled}");
    let (_, refunds) = get(&app, &token, "/api/v1/refunds").await;
    let refund = &refunds[0];
    assert_eq!(refund["status"], "succeeded", "{refunds}");
    assert_eq!(refund["amount_minor"], price);
    assert_eq!(refund["reservation_id"], booked["id"]);
    assert_eq!(refund["card"], "Visa ···· 4242");
    let reference = refund["reference"].as_str().unwrap().to_owned();
    assert!(reference.starts_with("re_"), "{refund}");
    assert_eq!(
        balance(&app, &token).await,
        0,
        "the refund went to the card"
    );
    let (_, theirs) = get(&app, &other, "/api/v1/refunds").await;
    assert_eq!(theirs, json!([]));
    let receipts = notices(&app, email, EventKind::Receipt).await;
    assert_eq!(receipts.len(), 2);
    assert!(receipts.iter().any(|r| r.notice.contains(&reference)));

    // Stripe's balance matches the ledger: a charge and a refund, each known.
    let check = card_payments::check_balance(&app.state, Utc::now(), 3)
        .await
        .unwrap();
    assert_eq!(check.stripe_transactions, 2, "{check:?}");
    assert_eq!(check.differences, vec![], "{check:?}");
    // A charge made at Stripe's dashboard, not through Berth: told to the platform admins,
    // once.
    stripe.charge_outside_berth(1_234).await;
    for _ in 0..2 {
        let check = card_payments::check_balance(&app.state, Utc::now(), 3)
            .await
            .unwrap();
        assert_eq!(check.differences.len(), 1, "{check:?}");
        assert!(check.differences[0].1.contains("1234"), "{check:?}");
    }
    let told = notices(&app, "root@berth.test", EventKind::PaymentMismatch).await;
    assert_eq!(told.len(), 1, "told once");
    assert!(
        notices(&app, email, EventKind::PaymentMismatch)
            .await
            .is_empty()
    );

    // While Berth has a payment of its own in flight (a top-up waiting for the bank), a charge
    // of the last 10 minutes that the ledger does not know may be that one, not written down
    // yet: left to the next check (the one already told as well). Ten minutes on, each is a
    // difference like any other, and the new one is told once.
    let asks = saved_card(&app, &stripe, &token, "4000002760003184").await;
    let (_, waiting) = post_json(
        &app,
        &token,
        "/api/v1/top-ups",
        &json!({ "card_id": asks["id"], "amount_minor": 1_000 }),
    )
    .await;
    assert_eq!(waiting["status"], "requires_action", "{waiting}");
    stripe.charge_outside_berth(777).await;
    let check = card_payments::check_balance(&app.state, Utc::now(), 3)
        .await
        .unwrap();
    assert_eq!(check.stripe_transactions, 4, "{check:?}");
    assert_eq!(check.differences, vec![], "{check:?}");
    let later = Utc::now() + TimeDelta::minutes(11);
    let check = card_payments::check_balance(&app.state, later, 3)
        .await
        .unwrap();
    assert_eq!(check.differences.len(), 2, "{check:?}");
    assert!(
        check.differences.iter().any(|(_, d)| d.contains("777")),
        "{check:?}"
    );
    let told = notices(&app, "root@berth.test", EventKind::PaymentMismatch).await;
    assert_eq!(told.len(), 2, "each told once");
    assert_books_balance(&app).await;
}

async fn issue_28_before_start_bookings_are_charged_off_session_with_authentication_and_declines(
    backend: Backend,
) {
    let stripe = LocalStripe::start().await;
    let (app, _db) = stripe_portal(backend, &stripe).await;
    let email = "later@berth.test";
    let token = unfunded_user_token(&app, email, PlatformRole::User).await;
    let good = saved_card(&app, &stripe, &token, "4242424242424242").await;
    let asks = saved_card(&app, &stripe, &token, "4000002760003184").await;
    let declines = saved_card(&app, &stripe, &token, "4000000000000341").await;
    let h100 = gpus_of(&app, H100).await;
    let start = on_grid_in(TimeDelta::hours(3));

    // Three bookings to be paid before the start, each with its own card: nothing is charged
    // at booking, and no credits are needed.
    let mut ids = Vec::new();
    for (gpu, card) in h100.iter().zip([&good, &asks, &declines]) {
        let (status, booked) = book(&app, &token, booking(*gpu, start, "before_start", card)).await;
        assert_eq!(status, 201, "{booked}");
        assert_eq!(booked["payment_status"], "pending", "{booked}");
        assert!(booked.get("card_payment").is_none(), "{booked}");
        ids.push(booked["id"].clone());
    }
    let (_, payments) = get(&app, &token, "/api/v1/payments").await;
    assert_eq!(payments, json!([]), "nothing asked of Stripe yet");
    // Before T − 2 h the job charges nothing; the wallet's job leaves them to their cards.
    let early = start - TimeDelta::hours(2) - TimeDelta::minutes(5);
    assert_eq!(
        card_payments::charge_due_bookings(&app.state, early)
            .await
            .unwrap(),
        0
    );
    let outcome = payment_job::run(&app.db, &ChargePolicy::default(), early, None)
        .await
        .unwrap();
    assert_eq!(outcome.charged + outcome.due, 0, "{outcome:?}");

    // At T − 2 h: each card is charged off-session, once, though two replicas' jobs run at the
    // same moment (and a later run asks nothing).
    let due = start - TimeDelta::hours(2);
    let (first, second) = tokio::join!(
        card_payments::charge_due_bookings(&app.state, due),
        card_payments::charge_due_bookings(&app.state, due),
    );
    assert_eq!(first.unwrap() + second.unwrap(), 3);
    assert_eq!(
        card_payments::charge_due_bookings(&app.state, due)
            .await
            .unwrap(),
        0
    );
    // The good card: paid once Stripe confirms it.
    payment_status_becomes(&app, &token, &ids[0], "paid").await;
    // The card whose bank asks for authentication: due, told at once with a link to the
    // booking's page; the payment waits with its secret.
    let asked = payment_status_becomes(&app, &token, &ids[1], "due").await;
    assert_eq!(asked["payment_status"], "due");
    let (_, waiting) = get(
        &app,
        &token,
        &format!("/api/v1/reservations/{}/card-payment", ids[1]),
    )
    .await;
    assert_eq!(waiting["status"], "requires_action", "{waiting}");
    // The declined card: due, told.
    payment_status_becomes(&app, &token, &ids[2], "due").await;
    let (_, declined) = get(
        &app,
        &token,
        &format!("/api/v1/reservations/{}/card-payment", ids[2]),
    )
    .await;
    assert_eq!(declined["status"], "failed", "{declined}");
    let told = notices(&app, email, EventKind::PaymentDue).await;
    let told_ids: Vec<Option<i64>> = told.iter().map(|n| n.reservation_id).collect();
    assert_eq!(told.len(), 2, "{told_ids:?}");
    for id in [&ids[1], &ids[2]] {
        assert!(told_ids.contains(&id.as_i64()), "{id} told");
    }

    // The holder completes the payment on the booking's page: the payment under way is
    // answered with its secret (not charged again); they pass 3-D Secure; it is paid.
    let (status, completing) = post_json(
        &app,
        &token,
        &format!("/api/v1/reservations/{}/card-payment", ids[1]),
        &json!({ "card_id": asks["id"] }),
    )
    .await;
    assert_eq!(status, 201, "{completing}");
    assert_eq!(completing["id"], waiting["id"], "the same payment");
    let secret = completing["client_secret"].as_str().unwrap();
    stripe.authenticate(secret, true).await;
    payment_status_becomes(&app, &token, &ids[1], "paid").await;

    // Nobody pays the declined one: the wallet's job releases it before the start, as any
    // unpaid booking; nothing was charged.
    let release = start - TimeDelta::minutes(10);
    let outcome = payment_job::run(&app.db, &ChargePolicy::default(), release, None)
        .await
        .unwrap();
    assert_eq!(outcome.released, 1, "{outcome:?}");
    let (_, released) = get(&app, &token, &format!("/api/v1/reservations/{}", ids[2])).await;
    assert_eq!(released["status"], "cancelled", "{released}");
    assert_eq!(balance(&app, &token).await, 0);
    let (_, payments) = get(&app, &token, "/api/v1/payments").await;
    let statuses: Vec<&str> = payments
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses.len(), 3, "one payment per booking: {payments}");
    assert_eq!(
        statuses.iter().filter(|s| **s == "succeeded").count(),
        2,
        "{payments}"
    );
    assert_eq!(notices(&app, email, EventKind::Receipt).await.len(), 2);
    assert_books_balance(&app).await;
}

async fn issue_28_stripe_unreachable_when_the_job_charges_leaves_the_booking_due_and_told(
    backend: Backend,
) {
    let stripe = LocalStripe::start().await;
    let (app, _db) = stripe_portal(backend, &stripe).await;
    let email = "offline@berth.test";
    let token = unfunded_user_token(&app, email, PlatformRole::User).await;
    let card = saved_card(&app, &stripe, &token, "4242424242424242").await;
    let h100 = gpus_of(&app, H100).await;
    let start = on_grid_in(TimeDelta::hours(3));
    let (status, booked) = book(&app, &token, booking(h100[0], start, "before_start", &card)).await;
    assert_eq!(status, 201, "{booked}");

    // Stripe is down when the job charges: the booking is due, its holder told at once, and
    // the payment failed with the reason; nothing is booked.
    drop(stripe);
    let due = start - TimeDelta::hours(2);
    assert_eq!(
        card_payments::charge_due_bookings(&app.state, due)
            .await
            .unwrap(),
        1
    );
    let (_, reservation) = get(
        &app,
        &token,
        &format!("/api/v1/reservations/{}", booked["id"]),
    )
    .await;
    assert_eq!(reservation["payment_status"], "due", "{reservation}");
    let (_, payment) = get(
        &app,
        &token,
        &format!("/api/v1/reservations/{}/card-payment", booked["id"]),
    )
    .await;
    assert_eq!(payment["status"], "failed", "{payment}");
    assert_eq!(
        payment["failure"], "Stripe could not be reached",
        "{payment}"
    );
    assert_eq!(notices(&app, email, EventKind::PaymentDue).await.len(), 1);
    // The job does not try again by itself; the holder pays from the booking's page.
    assert_eq!(
        card_payments::charge_due_bookings(&app.state, due)
            .await
            .unwrap(),
        0
    );
    assert_eq!(balance(&app, &token).await, 0);
    assert_books_balance(&app).await;
}

/// The holder of a booking whose card needs the bank's authentication is told, though at that
/// moment another transaction holds the booking's row (a second replica's job looking at it):
/// the notice waits for it instead of being skipped. (CI once lost a declined card's notice
/// this way, with two jobs running at once.)
async fn issue_28_a_payment_due_is_told_though_another_job_holds_the_booking_then(
    backend: Backend,
) {
    let stripe = LocalStripe::start().await;
    let (app, _db) = stripe_portal(backend, &stripe).await;
    let email = "asked@berth.test";
    let token = unfunded_user_token(&app, email, PlatformRole::User).await;
    let asks = saved_card(&app, &stripe, &token, "4000002760003184").await;
    let h100 = gpus_of(&app, H100).await;
    let start = on_grid_in(TimeDelta::hours(3));
    let (status, booked) = book(&app, &token, booking(h100[0], start, "before_start", &asks)).await;
    assert_eq!(status, 201, "{booked}");
    let id = booked["id"].as_i64().unwrap();

    // On PostgreSQL, once the job has recorded the payment it asks Stripe for, another
    // transaction takes the payment's row (so the answer waits) and the booking's; it lets the
    // payment go, and the booking a moment after the answer is booked. (On SQLite writers take
    // turns, and nothing is skipped.)
    let holder = (backend == Backend::Postgres).then(|| {
        let db = app.db.clone();
        tokio::spawn(async move {
            let payment = loop {
                if let Some(row) = card_payment::Entity::find()
                    .filter(card_payment::Column::ReservationId.eq(id))
                    .one(&db)
                    .await
                    .unwrap()
                {
                    break row.id;
                }
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            };
            let lock = |table: &str, row: i64| {
                format!("SELECT id FROM {table} WHERE id = {row} FOR UPDATE")
            };
            let answer = db.begin().await.unwrap();
            answer
                .execute_unprepared(&lock("card_payments", payment))
                .await
                .unwrap();
            let booking = db.begin().await.unwrap();
            booking
                .execute_unprepared(&lock("reservations", id))
                .await
                .unwrap();
            answer.commit().await.unwrap();
            while card_payment::Entity::find_by_id(payment)
                .one(&db)
                .await
                .unwrap()
                .is_none_or(|row| row.status != "requires_action")
            {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            booking.commit().await.unwrap();
        })
    });
    let due = start - TimeDelta::hours(2);
    assert_eq!(
        card_payments::charge_due_bookings(&app.state, due)
            .await
            .unwrap(),
        1
    );
    if let Some(holder) = holder {
        holder.await.unwrap();
    }
    let (_, waiting) = get(
        &app,
        &token,
        &format!("/api/v1/reservations/{id}/card-payment"),
    )
    .await;
    assert_eq!(waiting["status"], "requires_action", "{waiting}");
    let told = notices(&app, email, EventKind::PaymentDue).await;
    assert_eq!(told.len(), 1, "told at once");
    assert_eq!(told[0].reservation_id, Some(id));
    payment_status_becomes(&app, &token, &json!(id), "due").await;
    assert_books_balance(&app).await;
}
