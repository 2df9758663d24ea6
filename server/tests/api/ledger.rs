//! Prepaid credits: platform admins grant and deduct, users read their wallet, bad requests
//! write nothing, and concurrent postings keep the books balanced.

use crate::helpers::*;
use berth_app::backend::db;
use berth_app::backend::entity::{ledger_entry, ledger_transaction, reservation};
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::{Value, json};

const CREDITS: &str = "/api/v1/admin/credits";

async fn counts(app: &TestApp) -> (u64, u64) {
    (
        ledger_transaction::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        ledger_entry::Entity::find().count(&app.db).await.unwrap(),
    )
}

async fn admins_grant_and_deduct_credits_and_users_see_their_wallet(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let admin = unfunded_user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let user = unfunded_user_token(&app, "ana@example.org", PlatformRole::User).await;

    let (status, empty) = get(&app, &user, "/api/v1/wallet").await;
    assert_eq!(status, 200, "{empty}");
    assert_eq!(
        (
            &empty["balance_minor"],
            &empty["on_hold_minor"],
            &empty["currency"]
        ),
        (&json!(0), &json!(0), &json!("USD"))
    );
    assert_eq!(empty["entries"], json!([]));

    let (status, granted) = post_json(
        &app,
        &admin,
        CREDITS,
        &json!({"email": "Ana@Example.org", "amount_minor": 10_000, "reason": "invoice 2026-114"}),
    )
    .await;
    assert_eq!(status, 201, "{granted}");
    assert_eq!(granted["balance_minor"], 10_000);
    assert_eq!(granted["email"], "ana@example.org");
    let (status, deducted) = post_json(
        &app,
        &admin,
        CREDITS,
        &json!({"email": "ana@example.org", "amount_minor": -2_550, "reason": "correction"}),
    )
    .await;
    assert_eq!(status, 201, "{deducted}");
    assert_eq!(deducted["balance_minor"], 7_450);

    let (_, wallet) = get(&app, &user, "/api/v1/wallet").await;
    assert_eq!(wallet["balance_minor"], 7_450, "{wallet}");
    assert_eq!(wallet["balance"], "74.50");
    let entries = wallet["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(
        (
            &entries[0]["kind"],
            &entries[0]["amount_minor"],
            &entries[0]["balance_after_minor"],
            &entries[0]["reason"]
        ),
        (
            &json!("deduct"),
            &json!(-2_550),
            &json!(7_450),
            &json!("correction")
        ),
        "newest first"
    );
    assert_eq!(
        (&entries[1]["kind"], &entries[1]["balance_after_minor"]),
        (&json!("grant"), &json!(10_000))
    );

    // A deduction beyond the balance: 409 naming what is missing, nothing written.
    let before = counts(&app).await;
    let (status, refused) = post_json(
        &app,
        &admin,
        CREDITS,
        &json!({"email": "ana@example.org", "amount_minor": -10_000, "reason": "too much"}),
    )
    .await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["code"], "insufficient_funds");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("25.50 USD more needed"),
        "{refused}"
    );
    assert_eq!(counts(&app).await, before);
    let audit = assert_books_balance(&app).await;
    assert_eq!(audit.transactions, 2);

    // The wallet page shows the signed-in user's balance and movements.
    app.sign_in("user").await;
    let (status, _) = post_json(
        &app,
        &admin,
        CREDITS,
        &json!({"email": "demo-user@berth.invalid", "amount_minor": 12_345, "reason": "welcome credits"}),
    )
    .await;
    assert_eq!(status, 201);
    let (status, page) = app.get_text("/wallet").await;
    assert_eq!(status, 200);
    assert!(page.contains("<h1>Wallet</h1>"), "{page}");
    assert!(page.contains("welcome credits") && page.contains("Credits added"));
    assert!(
        page.contains("$123.45"),
        "balance and amount in the currency"
    );
    assert!(
        !page.contains("correction"),
        "only the viewer's own movements"
    );
    assert!(
        page.contains("href=\"/api/v1/wallet?format=csv&amp;limit=1000\""),
        "a CSV download"
    );

    // The CSV export round-trips through a CSV parser, commas, quotes and accents included.
    let reason = "Fatura \"março\", 2026 — ação";
    let (status, _) = post_json(
        &app,
        &admin,
        CREDITS,
        &json!({"email": "ana@example.org", "amount_minor": 1_234, "reason": reason}),
    )
    .await;
    assert_eq!(status, 201);
    let response = crate::helpers::client()
        .get(app.url("/api/v1/wallet?format=csv"))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/csv; charset=utf-8"
    );
    let text = response.text().await.unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    assert_eq!(
        reader.headers().unwrap(),
        vec![
            "transaction_id",
            "at",
            "kind",
            "amount",
            "balance_after",
            "currency",
            "reason",
            "reservation_id"
        ]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert_eq!(
        rows[0].iter().skip(2).collect::<Vec<_>>(),
        vec!["grant", "12.34", "86.84", "USD", reason, ""]
    );
    assert_eq!(&rows[1][3], "-25.50");
    let (status, _) = get(&app, &user, "/api/v1/wallet?format=xml").await;
    assert_eq!(status, 422);
    app.stop().await;
}

async fn bad_credit_requests_are_refused_and_write_nothing(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let admin = unfunded_user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let user = unfunded_user_token(&app, "ana@example.org", PlatformRole::User).await;
    let ok = json!({"email": "ana@example.org", "amount_minor": 500, "reason": "r"});

    let cases: Vec<(Value, u16, &str)> = vec![
        (
            json!({"email": "ana@example.org", "amount_minor": 0, "reason": "r"}),
            422,
            "zero_amount",
        ),
        (
            json!({"email": "ana@example.org", "amount_minor": 10.5, "reason": "r"}),
            422,
            "not_minor_units",
        ),
        (
            json!({"email": "ana@example.org", "amount_minor": "100", "reason": "r"}),
            422,
            "not_minor_units",
        ),
        (
            json!({"email": "ana@example.org", "amount_minor": 10_000_000_000_i64, "reason": "r"}),
            422,
            "out_of_range",
        ),
        (
            json!({"email": "ana@example.org", "amount_minor": 500, "reason": "  "}),
            422,
            "reason",
        ),
        (
            json!({"email": "not an address", "amount_minor": 500, "reason": "r"}),
            422,
            "not_an_email",
        ),
        (
            json!({"email": "ana@example.org", "reason": "r"}),
            422,
            "unreadable",
        ),
        (
            json!({"email": "nobody@example.org", "amount_minor": 500, "reason": "r"}),
            404,
            "",
        ),
    ];
    for (body, expected, code) in cases {
        let (status, answer) = post_json(&app, &admin, CREDITS, &body).await;
        assert_eq!(status, expected, "{body} -> {answer}");
        if !code.is_empty() {
            assert_eq!(answer["code"], code, "{body} -> {answer}");
        }
    }
    // Only platform admins move credits; anonymous callers are not signed in.
    let (status, _) = post_json(&app, &user, CREDITS, &ok).await;
    assert_eq!(status, 403);
    let (status, _) = post_json(&app, "berth_not-a-token", CREDITS, &ok).await;
    assert_eq!(status, 401);
    let anonymous = crate::helpers::client()
        .get(app.url("/api/v1/wallet"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);

    assert_eq!(counts(&app).await, (0, 0), "nothing written");
    app.stop().await;
}

async fn concurrent_grants_and_deductions_keep_the_books_balanced(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let admin = unfunded_user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let users = ["a@example.org", "b@example.org", "c@example.org"];
    for email in users {
        unfunded_user_token(&app, email, PlatformRole::User).await;
    }
    // 150 requests at once over three wallets that start empty: grants of 300 and deductions
    // of 500. Deductions succeed only while a wallet holds enough.
    let mut requests = tokio::task::JoinSet::new();
    for i in 0..150 {
        let email = users[i % users.len()];
        let amount: i64 = if i % 2 == 0 { 300 } else { -500 };
        let url = app.url(CREDITS);
        let admin = admin.clone();
        requests.spawn(async move {
            let body = json!({"email": email, "amount_minor": amount, "reason": format!("r{i}")});
            let response = crate::helpers::client()
                .post(url)
                .bearer_auth(admin)
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let answer: Value = response.json().await.unwrap_or(Value::Null);
            (email, amount, status, answer)
        });
    }
    let results = requests.join_all().await;
    let mut expected = std::collections::HashMap::new();
    let mut accepted = 0;
    for (email, amount, status, answer) in &results {
        match status {
            201 => {
                *expected.entry(*email).or_insert(0_i64) += amount;
                accepted += 1;
            }
            409 => assert_eq!(answer["code"], "insufficient_funds", "{answer}"),
            other => panic!("unexpected {other}: {answer}"),
        }
    }
    assert!(
        results.iter().any(|(_, a, s, _)| *a < 0 && *s == 201),
        "some deductions went through"
    );
    let audit = assert_books_balance(&app).await;
    assert_eq!(audit.transactions, accepted);
    for email in users {
        let user = db::users::find_user_by_email(
            &app.db,
            &berth_app::domain::user::Email::parse(email).unwrap(),
        )
        .await
        .unwrap()
        .unwrap();
        let balance = db::ledger::wallet_balance(&app.db, user.id).await.unwrap();
        assert_eq!(
            balance.minor(),
            expected.get(email).copied().unwrap_or(0),
            "{email}"
        );
        assert!(balance.minor() >= 0);
    }
    app.stop().await;
}

async fn book_hours(
    app: &TestApp,
    token: &str,
    gpu: i64,
    start: DateTime<Utc>,
    hours: i64,
) -> (u16, Value) {
    post_json(
        app,
        token,
        "/api/v1/reservations",
        &json!({"gpu_ids": [gpu], "start": start.to_rfc3339(), "end": (start + TimeDelta::hours(hours)).to_rfc3339()}),
    )
    .await
}

async fn bookings_are_paid_from_the_wallet_and_refunded_by_the_policy(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let h100 = gpus_of(&app, "NVIDIA H100 80GB HBM3").await;

    // Two days ahead: charged when booked, refunded in full when cancelled.
    let (status, booked) = book_hours(
        &app,
        &ana,
        h100[0],
        on_grid_in(TimeDelta::minutes(48 * 60)),
        2,
    )
    .await;
    assert_eq!(status, 201, "{booked}");
    assert_eq!(
        (
            &booked["price_minor"],
            &booked["payment_status"],
            &booked["refunded_minor"]
        ),
        (&json!(698), &json!("paid"), &json!(0))
    );
    assert_eq!(balance(&app, &ana).await, TEST_CREDITS_MINOR - 698);
    let (_, wallet) = get(&app, &ana, "/api/v1/wallet").await;
    assert_eq!(wallet["entries"][0]["kind"], "charge");
    assert_eq!(wallet["entries"][0]["amount_minor"], -698);
    assert_eq!(wallet["entries"][0]["reservation_id"], booked["id"]);
    let (status, cancelled) = cancel(&app, &ana, &booked["id"]).await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["refunded_minor"], 698, "{cancelled}");
    assert_eq!(balance(&app, &ana).await, TEST_CREDITS_MINOR);

    // Three hours ahead: half back (3 h × $3.49 = $10.47, half rounded down).
    let (_, soon) = book_hours(
        &app,
        &ana,
        h100[1],
        on_grid_in(TimeDelta::minutes(3 * 60)),
        3,
    )
    .await;
    assert_eq!(soon["price_minor"], 1047);
    let (status, cancelled) = cancel(&app, &ana, &soon["id"]).await;
    assert_eq!((status, &cancelled["refunded_minor"]), (200, &json!(523)));
    // Within two hours of the start: nothing back.
    let (_, late) = book_hours(&app, &ana, h100[2], on_grid_in(TimeDelta::minutes(15)), 1).await;
    let (status, cancelled) = cancel(&app, &ana, &late["id"]).await;
    assert_eq!((status, &cancelled["refunded_minor"]), (200, &json!(0)));
    assert_eq!(
        balance(&app, &ana).await,
        TEST_CREDITS_MINOR - (1047 - 523) - 349
    );

    // A user without credits is refused with what is missing, and nothing is written.
    let bia = unfunded_user_token(&app, "bia@example.org", PlatformRole::User).await;
    let before = (
        counts(&app).await,
        reservation::Entity::find().count(&app.db).await.unwrap(),
    );
    let (status, refused) = book_hours(
        &app,
        &bia,
        h100[3],
        on_grid_in(TimeDelta::minutes(48 * 60)),
        1,
    )
    .await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["code"], "insufficient_funds");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("3.49 USD more needed"),
        "{refused}"
    );
    assert_eq!(
        (
            counts(&app).await,
            reservation::Entity::find().count(&app.db).await.unwrap()
        ),
        before
    );
    assert_books_balance(&app).await;
    app.stop().await;
}

async fn a_retried_request_with_one_key_is_done_once(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let admin = unfunded_user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let h100 = gpus_of(&app, "NVIDIA H100 80GB HBM3").await;
    let start = on_grid_in(TimeDelta::minutes(48 * 60));
    let body = json!({"gpu_ids": [h100[0]], "start": start.to_rfc3339(), "end": (start + TimeDelta::hours(2)).to_rfc3339()});
    let path = "/api/v1/reservations";

    // Sent again (a lost answer), the same request answers the first booking: one charge.
    let (status, first) = post_with_key(&app, &ana, path, "book-7f3a", &body).await;
    assert_eq!(status, 201, "{first}");
    let (status, again) = post_with_key(&app, &ana, path, "book-7f3a", &body).await;
    assert_eq!((status, &again), (201, &first));
    assert_eq!(balance(&app, &ana).await, TEST_CREDITS_MINOR - 698);

    // The same key with other parameters is refused, and writes nothing.
    let before = counts(&app).await;
    let other = json!({"gpu_ids": [h100[1]], "start": start.to_rfc3339(), "end": (start + TimeDelta::hours(2)).to_rfc3339()});
    let (status, refused) = post_with_key(&app, &ana, path, "book-7f3a", &other).await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(
        (&refused["field"], &refused["code"]),
        (&json!("Idempotency-Key"), &json!("idempotency_key_reused"))
    );
    let (status, bad) = post_with_key(&app, &ana, path, &"k".repeat(300), &other).await;
    assert_eq!((status, &bad["code"]), (422, &json!("bad_idempotency_key")));
    assert_eq!(counts(&app).await, before);

    // Twenty copies at once: one booking, one charge, every answer the same.
    let body = json!({"gpu_ids": [h100[2]], "start": start.to_rfc3339(), "end": (start + TimeDelta::hours(1)).to_rfc3339()});
    let mut copies = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let (url, token, body) = (app.url(path), ana.clone(), body.clone());
        copies.spawn(async move {
            let response = crate::helpers::client()
                .post(url)
                .bearer_auth(token)
                .header("Idempotency-Key", "book-burst")
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap())
        });
    }
    let answers = copies.join_all().await;
    assert!(
        answers.iter().all(|(status, _)| *status == 201),
        "{answers:?}"
    );
    assert!(
        answers
            .iter()
            .all(|(_, answer)| answer["id"] == answers[0].1["id"])
    );
    assert_eq!(balance(&app, &ana).await, TEST_CREDITS_MINOR - 698 - 349);

    // Credits too: a retried grant adds once; keys belong to their user.
    let grant = json!({"email": "ana@example.org", "amount_minor": 5_000, "reason": "invoice 9"});
    let (status, granted) = post_with_key(&app, &admin, CREDITS, "grant-9", &grant).await;
    assert_eq!(status, 201, "{granted}");
    let (status, again) = post_with_key(&app, &admin, CREDITS, "grant-9", &grant).await;
    assert_eq!((status, &again), (201, &granted));
    assert_eq!(
        balance(&app, &ana).await,
        TEST_CREDITS_MINOR - 698 - 349 + 5_000
    );
    assert_books_balance(&app).await;
    app.stop().await;
}

async fn post_credits_form(app: &TestApp, form: &[(&str, &str)]) -> (u16, String) {
    let response = app
        .client
        .post(app.url("/api/forms/credits"))
        .form(form)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let location = response
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, location)
}

async fn platform_admins_change_credits_on_the_credits_page(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    app.sign_in("platform_admin").await;
    let (status, page) = app.get_text("/admin/credits").await;
    assert_eq!(status, 200);
    assert!(page.contains("<h1>Credits</h1>"), "{page}");
    assert!(page.contains("demo-user@berth.invalid") && page.contains("$1,000.00"));
    let key = page
        .split("name=\"idempotency_key\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();

    let form = [
        ("email", "demo-user@berth.invalid"),
        ("direction", "grant"),
        ("amount", "12,50"),
        ("reason", "invoice 3"),
        ("idempotency_key", key.as_str()),
    ];
    let (status, done) = post_credits_form(&app, &form).await;
    assert_eq!(status, 303);
    assert!(done.starts_with("/admin/credits?done="), "{done}");
    // The same form sent twice (a double click, a reload) records once.
    assert_eq!(post_credits_form(&app, &form).await, (303, done.clone()));
    let user = db::users::find_user_by_email(
        &app.db,
        &berth_app::domain::user::Email::parse("demo-user@berth.invalid").unwrap(),
    )
    .await
    .unwrap()
    .unwrap();
    let balance = db::ledger::wallet_balance(&app.db, user.id).await.unwrap();
    assert_eq!(balance.minor(), 100_000 + 1_250);
    let (_, page) = app.get_text(&done).await;
    assert!(page.contains("Done: ledger transaction #"), "{page}");

    // Bad input comes back as an error on the page; nothing is written.
    let before = counts(&app).await;
    for (field, value) in [
        ("amount", "12.345"),
        ("amount", "-3"),
        ("direction", "steal"),
    ] {
        let mut bad = form.to_vec();
        bad.retain(|(name, _)| *name != field && *name != "idempotency_key");
        bad.push((field, value));
        let (status, location) = post_credits_form(&app, &bad).await;
        assert_eq!(status, 303);
        assert!(location.starts_with("/admin/credits?error="), "{location}");
        assert_eq!(
            location.contains("not_an_amount"),
            field == "amount",
            "{location}"
        );
    }
    let (_, page) = app
        .get_text(
            &post_credits_form(
                &app,
                &[
                    ("email", "demo-user@berth.invalid"),
                    ("direction", "deduct"),
                    ("amount", "5000"),
                    ("reason", "x"),
                ],
            )
            .await
            .1,
        )
        .await;
    assert!(page.contains("Not enough credits"), "{page}");
    assert_eq!(counts(&app).await, before);

    // Only platform admins.
    app.sign_in("user").await;
    assert_eq!(post_credits_form(&app, &form).await.0, 403);
    let (status, _) = app.get_text("/admin/credits").await;
    assert_eq!(status, 403);
    app.stop().await;
}

async fn wallet_csv_reasons_a_spreadsheet_would_run_are_prefixed(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let admin = unfunded_user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let user = unfunded_user_token(&app, "ana@example.org", PlatformRole::User).await;
    let reason = "=HYPERLINK(\"http://x.invalid\", \"refund\")";
    for (amount, why) in [(5_000, reason), (-1_250, "correction")] {
        let (status, body) = post_json(
            &app,
            &admin,
            CREDITS,
            &json!({"email": "ana@example.org", "amount_minor": amount, "reason": why}),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let text = crate::helpers::client()
        .get(app.url("/api/v1/wallet?format=csv"))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader.headers().unwrap().clone();
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let reasons: Vec<&str> = rows.iter().map(|r| &r[column("reason")]).collect();
    assert!(reasons.contains(&format!("'{reason}").as_str()), "{text}");
    assert!(reasons.contains(&"correction"), "{text}");
    // Amounts are numbers Berth writes itself: a negative one stays a number.
    let amounts: Vec<&str> = rows.iter().map(|r| &r[column("amount")]).collect();
    assert!(amounts.contains(&"-12.50"), "{text}");
    app.stop().await;
}

async fn the_refund_follows_the_portals_clock_not_the_wall_clock(backend: Backend) {
    // The portal's clock stands at the next quarter hour; two 3-hour bookings two days ahead
    // are charged in full ($10.47 each).
    let now = on_grid_in(TimeDelta::zero());
    let (app, _db, clock) = spawn_app_at(backend, now).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let h100 = gpus_of(&app, H100).await;
    let start = now + TimeDelta::days(2);
    let (_, first) = book_hours(&app, &ana, h100[0], start, 3).await;
    let (_, second) = book_hours(&app, &ana, h100[1], start, 3).await;
    assert_eq!(
        (&first["price_minor"], &second["price_minor"]),
        (&json!(1047), &json!(1047))
    );

    // The clock moves to three hours before the start: half back, without waiting two days.
    clock.set(start - TimeDelta::hours(3));
    let (status, cancelled) = cancel(&app, &ana, &first["id"]).await;
    assert_eq!(
        (status, &cancelled["refunded_minor"]),
        (200, &json!(523)),
        "{cancelled}"
    );
    // One hour before: nothing back.
    clock.advance(TimeDelta::hours(2));
    let (status, cancelled) = cancel(&app, &ana, &second["id"]).await;
    assert_eq!(
        (status, &cancelled["refunded_minor"]),
        (200, &json!(0)),
        "{cancelled}"
    );
    assert_eq!(
        balance(&app, &ana).await,
        TEST_CREDITS_MINOR - (1047 - 523) - 1047
    );
    // A booking must still start after the portal's now, not the wall clock's.
    let (status, refused) = book_hours(&app, &ana, h100[2], now + TimeDelta::hours(2), 1).await;
    assert_eq!(status, 422, "{refused}");
    assert_books_balance(&app).await;
    app.stop().await;
}

/// A posting between two wallets (none of Berth's own yet, but the ledger takes any balanced
/// posting): both move or neither does, whichever of the two comes first in id order (on
/// PostgreSQL the last wallet moves in the statement that writes the transaction, the others
/// before it).
async fn a_posting_between_two_wallets_moves_both_or_neither(backend: Backend) {
    use berth_app::domain::ledger::{Account, TransactionKind};
    use berth_app::domain::money::Money;
    let (app, _db) = spawn_app(backend).await;
    let id_of = async |email: &str| {
        user_token(&app, email, PlatformRole::User).await;
        user_id(&app, email).await
    };
    // Funded in this order, so ana's wallet has the lower id.
    let (ana, bia) = (
        id_of("ana@example.org").await,
        id_of("bia@example.org").await,
    );
    let move_credits = async |from: i64, to: i64, minor: i64| {
        let txn = db::begin_write(&app.db).await.unwrap();
        let record = db::ledger::TransactionRecord {
            kind: TransactionKind::Grant,
            user_id: Some(to),
            reservation_id: None,
            reverses_id: None,
            reason: berth_app::backend::db::ledger::RecordReason::Typed("between wallets"),
            actor_id: None,
            provider: None,
            at: Utc::now(),
        };
        let posted = db::ledger::transfer(
            &txn,
            &record,
            Account::Wallet(from),
            Account::Wallet(to),
            Money::from_minor(minor),
        )
        .await;
        match posted {
            Ok(id) => {
                txn.commit().await.unwrap();
                Ok(id)
            }
            Err(db::ledger::PostError::InsufficientFunds { account, missing }) => {
                txn.rollback().await.unwrap();
                Err((account, missing.minor()))
            }
            Err(other) => panic!("{other}"),
        }
    };
    let balances = async || {
        (
            db::ledger::wallet_balance(&app.db, ana)
                .await
                .unwrap()
                .minor(),
            db::ledger::wallet_balance(&app.db, bia)
                .await
                .unwrap()
                .minor(),
        )
    };
    let start = TEST_CREDITS_MINOR;
    assert_eq!(balances().await, (start, start));

    // Moved both ways: one transaction of two entries each, both wallets moved.
    let before = counts(&app).await;
    move_credits(ana, bia, 700).await.unwrap();
    move_credits(bia, ana, 200).await.unwrap();
    assert_eq!(balances().await, (start - 500, start + 500));
    assert_eq!(counts(&app).await, (before.0 + 2, before.1 + 4));

    // Short, paying from the later wallet and then from the earlier: refused, naming the
    // wallet and what it misses, and nothing of either posting is kept.
    let before = counts(&app).await;
    assert_eq!(
        move_credits(bia, ana, start + 501).await,
        Err((Account::Wallet(bia), 1))
    );
    assert_eq!(
        move_credits(ana, bia, start).await,
        Err((Account::Wallet(ana), 500))
    );
    assert_eq!(balances().await, (start - 500, start + 500));
    assert_eq!(counts(&app).await, before);
    assert_books_balance(&app).await;
    app.stop().await;
}

crate::on_both_backends!(
    a_posting_between_two_wallets_moves_both_or_neither,
    the_refund_follows_the_portals_clock_not_the_wall_clock,
    wallet_csv_reasons_a_spreadsheet_would_run_are_prefixed,
    platform_admins_change_credits_on_the_credits_page,
    a_retried_request_with_one_key_is_done_once,
    bookings_are_paid_from_the_wallet_and_refunded_by_the_policy,
    admins_grant_and_deduct_credits_and_users_see_their_wallet,
    bad_credit_requests_are_refused_and_write_nothing,
    concurrent_grants_and_deductions_keep_the_books_balanced,
);
