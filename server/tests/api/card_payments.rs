//! Issue 28, first part: cards through Stripe, against `localstripe` (a stateful fake Stripe)
//! on loopback. A user saves a card (the SetupIntent confirmed the way Stripe.js does it, then
//! read back from Stripe by Berth), tops up credits with it, and the ledger books the top-up
//! only when Stripe's signed webhook (or the reconciliation job asking Stripe) says it
//! succeeded, exactly once; a card that needs authentication is paid once the holder passes
//! it; a declined card books nothing; a forged, stale or replayed webhook changes nothing; a
//! portal killed between Stripe's confirmation and the webhook is reconciled exactly once.
//! The ledger audit runs at the end of each.

use crate::helpers::*;
use berth_app::domain::user::PlatformRole;
use chrono::{TimeDelta, Utc};
use serde_json::{Value, json};

crate::on_both_backends!(
    issue_28_a_saved_card_tops_up_credits_when_stripe_confirms_it,
    issue_28_authentication_and_declines_and_forged_or_replayed_webhooks,
    issue_28_a_portal_killed_before_the_webhook_is_reconciled_exactly_once,
);

/// Waits (up to 15 s: localstripe sends its webhooks a second after the event) until payment
/// `id` is no longer `status`; answers it.
async fn settled(app: &TestApp, token: &str, id: &Value, status: &str) -> Value {
    for _ in 0..150 {
        let (code, payment) = get(app, token, &format!("/api/v1/payments/{id}")).await;
        assert_eq!(code, 200, "{payment}");
        if payment["status"] != status {
            return payment;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("payment {id} stayed {status}");
}

async fn issue_28_a_saved_card_tops_up_credits_when_stripe_confirms_it(backend: Backend) {
    let stripe = LocalStripe::start().await;
    let (app, _db) = stripe_portal(backend, &stripe).await;
    let token = unfunded_user_token(&app, "card@berth.test", PlatformRole::User).await;
    let other = unfunded_user_token(&app, "other@berth.test", PlatformRole::User).await;

    let (status, setup) = post_json(&app, &token, "/api/v1/cards/setup", &json!({})).await;
    assert_eq!(status, 201, "{setup}");
    let save = |token: String, id: Value| {
        let app = &app;
        async move {
            post_json(
                app,
                &token,
                "/api/v1/cards",
                &json!({ "setup_intent_id": id }),
            )
            .await
        }
    };
    // Handed back before Stripe.js confirmed it: 409, nothing saved.
    let (status, body) = save(token.clone(), setup["setup_intent_id"].clone()).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "card_setup_unfinished", "{body}");
    assert_eq!(
        stripe.confirm_setup(&setup, "4242424242424242").await,
        "succeeded"
    );
    // Someone else's SetupIntent, or something that is not one: 404.
    for id in [
        setup["setup_intent_id"].clone(),
        json!("../v1/charges"),
        json!("seti_unknown"),
    ] {
        let (status, body) = save(other.clone(), id.clone()).await;
        assert_eq!(status, 404, "{id}: {body}");
    }
    let (status, card) = save(token.clone(), setup["setup_intent_id"].clone()).await;
    assert_eq!(status, 201, "{card}");
    assert_eq!(
        (card["brand"].as_str(), card["last4"].as_str()),
        (Some("visa"), Some("4242"))
    );
    // Handed back twice (two tabs): the same card, once.
    let (status, again) = save(token.clone(), setup["setup_intent_id"].clone()).await;
    assert_eq!((status, &again["id"]), (201, &card["id"]), "{again}");
    let (_, cards) = get(&app, &token, "/api/v1/cards").await;
    assert_eq!(cards.as_array().unwrap().len(), 1);
    // The card is the holder's alone.
    let (_, theirs) = get(&app, &other, "/api/v1/cards").await;
    assert_eq!(theirs, json!([]));
    let (status, _) = post_json(
        &app,
        &other,
        "/api/v1/top-ups",
        &json!({ "card_id": card["id"], "amount_minor": 2_500 }),
    )
    .await;
    assert_eq!(status, 404, "another user's card");

    // Amounts outside the limits (5.00 to 10,000.00) and unreadable bodies: 422, nothing asked.
    for amount in [
        json!(0),
        json!(-2_500),
        json!(499),
        json!(1_000_001),
        json!(i64::MAX),
    ] {
        let (status, body) = post_json(
            &app,
            &token,
            "/api/v1/top-ups",
            &json!({ "card_id": card["id"], "amount_minor": amount }),
        )
        .await;
        assert_eq!(status, 422, "{amount}: {body}");
        assert_eq!(body["field"], "amount_minor", "{body}");
    }
    for body in [
        json!({ "card_id": card["id"], "amount_minor": "25.00" }),
        json!({ "card_id": card["id"], "amount_minor": 2_500, "paid": true }),
    ] {
        let (status, _) = post_json(&app, &token, "/api/v1/top-ups", &body).await;
        assert_eq!(status, 422, "{body}");
    }
    let (_, payments) = get(&app, &token, "/api/v1/payments").await;
    assert_eq!(payments, json!([]), "nothing was asked of Stripe");

    // The top-up: credits only once Stripe's webhook confirms it.
    let (status, payment) = post_json(
        &app,
        &token,
        "/api/v1/top-ups",
        &json!({ "card_id": card["id"], "amount_minor": 2_500 }),
    )
    .await;
    assert_eq!(status, 201, "{payment}");
    assert_eq!(payment["card"], "Visa ···· 4242");
    assert_eq!(payment["status"], "pending", "{payment}");
    assert_eq!(
        balance(&app, &token).await,
        0,
        "not on the API's answer alone"
    );
    let payment = settled(&app, &token, &payment["id"], "pending").await;
    assert_eq!(payment["status"], "succeeded", "{payment}");
    assert!(payment["transaction_id"].is_i64());
    assert_eq!(balance(&app, &token).await, 2_500);
    let (_, wallet) = get(&app, &token, "/api/v1/wallet").await;
    assert!(
        wallet.to_string().contains("Card top-up (pi_"),
        "the wallet shows the top-up: {wallet}"
    );

    // Removing the card detaches it at Stripe; it can no longer be used.
    let (status, _) = send(
        &app,
        reqwest::Method::DELETE,
        Some(&other),
        &format!("/api/v1/cards/{}", card["id"]),
        None,
    )
    .await;
    assert_eq!(status, 404, "another user's card");
    let (status, _) = send(
        &app,
        reqwest::Method::DELETE,
        Some(&token),
        &format!("/api/v1/cards/{}", card["id"]),
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (_, cards) = get(&app, &token, "/api/v1/cards").await;
    assert_eq!(cards, json!([]));
    let (status, _) = post_json(
        &app,
        &token,
        "/api/v1/top-ups",
        &json!({ "card_id": card["id"], "amount_minor": 2_500 }),
    )
    .await;
    assert_eq!(status, 404, "a removed card");
    assert_eq!(balance(&app, &token).await, 2_500);
    assert_books_balance(&app).await;
}

async fn issue_28_authentication_and_declines_and_forged_or_replayed_webhooks(backend: Backend) {
    let stripe = LocalStripe::start().await;
    let (app, _db) = stripe_portal(backend, &stripe).await;
    let token = unfunded_user_token(&app, "sca@berth.test", PlatformRole::User).await;

    // A card whose bank asks for authentication: saved once the holder passed 3-D Secure, and
    // each payment waits for the holder.
    let (status, card) = save_card(&app, &stripe, &token, "4000002760003184").await;
    assert_eq!(status, 201, "{card}");
    let (_, payment) = post_json(
        &app,
        &token,
        "/api/v1/top-ups",
        &json!({ "card_id": card["id"], "amount_minor": 1_000 }),
    )
    .await;
    assert_eq!(payment["status"], "requires_action", "{payment}");
    let secret = payment["client_secret"]
        .as_str()
        .expect("a secret for Stripe.js");
    // Nothing is booked while it waits, however long.
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    assert_eq!(balance(&app, &token).await, 0);
    let (_, again) = get(&app, &token, &format!("/api/v1/payments/{}", payment["id"])).await;
    assert_eq!(
        again["client_secret"], secret,
        "the page can authenticate it later"
    );
    stripe.authenticate(secret, true).await;
    let paid = settled(&app, &token, &payment["id"], "requires_action").await;
    assert_eq!(paid["status"], "succeeded", "{paid}");
    assert_eq!(balance(&app, &token).await, 1_000);

    // A declined card: the payment fails with Stripe's reason, nothing is booked.
    let (status, declined) = save_card(&app, &stripe, &token, "4000000000000341").await;
    assert_eq!(status, 201, "{declined}");
    let (status, payment) = post_json(
        &app,
        &token,
        "/api/v1/top-ups",
        &json!({ "card_id": declined["id"], "amount_minor": 1_000 }),
    )
    .await;
    assert_eq!(status, 201, "{payment}");
    assert_eq!(payment["status"], "failed", "{payment}");
    assert!(
        payment["failure"].as_str().is_some_and(|f| !f.is_empty()),
        "{payment}"
    );
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    assert_eq!(
        balance(&app, &token).await,
        1_000,
        "the failure webhook books nothing"
    );

    // A payment Stripe confirmed: a forged webhook, a stale one and a replayed one.
    let (_, good) = save_card(&app, &stripe, &token, "4242424242424242").await;
    let pending = db_pending_payment(&app, &token, &good["id"]).await;
    let event = |id: &str| {
        json!({
            "id": id,
            "type": "payment_intent.succeeded",
            "created": Utc::now().timestamp(),
            "data": { "object": {
                "id": pending.1, "object": "payment_intent", "amount": 4_000, "currency": "usd",
                "status": "succeeded", "customer": null, "client_secret": null,
                "metadata": { "berth_payment": format!("cp_{}", pending.0) },
                "last_payment_error": null
            } }
        })
    };
    let post_event = |body: String, signature: Option<String>| {
        let mut request = client()
            .post(app.url("/api/v1/stripe/webhook"))
            .header("content-type", "application/json")
            .body(body);
        if let Some(signature) = signature {
            request = request.header("stripe-signature", signature);
        }
        answer(request)
    };
    let now = Utc::now().timestamp();
    let (body, forged) = signed_event(&event("evt_forged"), "whsec_not_the_secret", now);
    let (status, answer_body) = post_event(body.clone(), Some(forged)).await;
    assert_eq!(status, 422, "{answer_body}");
    assert_eq!(answer_body["code"], "webhook_signature", "{answer_body}");
    let (status, _) = post_event(body, None).await;
    assert_eq!(status, 422, "no signature");
    let (body, stale) = signed_event(&event("evt_stale"), STRIPE_WEBHOOK_SECRET, now - 3_600);
    let (status, _) = post_event(body, Some(stale)).await;
    assert_eq!(status, 422, "an hour-old signature is a replay");
    // The genuine event, twice (Stripe's own webhook for it comes a second later, a third
    // time): the top-up is booked once.
    let (body, genuine) = signed_event(&event("evt_genuine"), STRIPE_WEBHOOK_SECRET, now);
    let (status, first) = post_event(body.clone(), Some(genuine.clone())).await;
    assert_eq!(status, 200, "{first}");
    let (status, second) = post_event(body, Some(genuine)).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["applied"], false, "a replay changes nothing");
    tokio::time::sleep(std::time::Duration::from_millis(2_000)).await;
    assert_eq!(balance(&app, &token).await, 5_000);
    let (_, payments) = get(&app, &token, "/api/v1/payments").await;
    let statuses: Vec<&str> = payments
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["succeeded", "failed", "succeeded"]);
    assert_books_balance(&app).await;
}

/// Tops up 40.00 on card `card` and answers Berth's payment id and Stripe's PaymentIntent id.
async fn db_pending_payment(app: &TestApp, token: &str, card: &Value) -> (i64, String) {
    let (status, payment) = post_json(
        app,
        token,
        "/api/v1/top-ups",
        &json!({ "card_id": card, "amount_minor": 4_000 }),
    )
    .await;
    assert_eq!(status, 201, "{payment}");
    let row =
        berth_app::backend::db::card_payments::payment(&app.db, payment["id"].as_i64().unwrap())
            .await
            .unwrap()
            .unwrap();
    (row.id, row.intent_id.expect("Stripe answered"))
}

async fn issue_28_a_portal_killed_before_the_webhook_is_reconciled_exactly_once(backend: Backend) {
    let stripe = LocalStripe::start().await;
    let db = TestDatabase::create(backend).await;
    let mut settings = test_settings(&db);
    stripe.configure(&mut settings);
    let first = spawn_with(settings.clone()).await;
    stripe
        .send_webhooks_to(&first.url("/api/v1/stripe/webhook"))
        .await;
    let token = unfunded_user_token(&first, "crash@berth.test", PlatformRole::User).await;
    let (_, card) = save_card(&first, &stripe, &token, "4242424242424242").await;
    let (status, payment) = post_json(
        &first,
        &token,
        "/api/v1/top-ups",
        &json!({ "card_id": card["id"], "amount_minor": 3_000 }),
    )
    .await;
    assert_eq!(status, 201, "{payment}");
    assert_eq!(payment["status"], "pending");
    // Stripe has the money; the portal dies before its webhook (a second later) arrives.
    first.stop().await;
    tokio::time::sleep(std::time::Duration::from_millis(2_000)).await;

    // Started again, on a clock a few minutes on: the reconciliation job (every second here)
    // asks Stripe and books the top-up once.
    settings.payment_job_seconds = 1;
    let (second, _clock) = spawn_at_with(settings, Utc::now() + TimeDelta::minutes(3)).await;
    let paid = settled(&second, &token, &payment["id"], "pending").await;
    assert_eq!(paid["status"], "succeeded", "{paid}");
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    assert_eq!(
        balance(&second, &token).await,
        3_000,
        "booked once, by the job"
    );
    assert_books_balance(&second).await;
}
