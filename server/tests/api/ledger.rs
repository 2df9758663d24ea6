//! Prepaid credits: platform admins grant and deduct, users read their wallet, bad requests
//! write nothing, and concurrent postings keep the books balanced.

use crate::helpers::{Backend, TestApp, spawn_app};
use crate::reservations::{get, post_json, user_token};
use berth_app::domain::user::PlatformRole;
use berth_app::server::db;
use berth_app::server::entity::{ledger_entry, ledger_transaction};
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

async fn assert_books_balance(app: &TestApp) -> db::ledger::Audit {
    let audit = db::ledger::audit(&app.db).await.unwrap();
    assert!(audit.is_clean(), "{audit:?}");
    audit
}

async fn admins_grant_and_deduct_credits_and_users_see_their_wallet(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let admin = user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let user = user_token(&app, "ana@example.org", PlatformRole::User).await;

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
    app.stop().await;
}

async fn bad_credit_requests_are_refused_and_write_nothing(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let admin = user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let user = user_token(&app, "ana@example.org", PlatformRole::User).await;
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
    let admin = user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let users = ["a@example.org", "b@example.org", "c@example.org"];
    for email in users {
        user_token(&app, email, PlatformRole::User).await;
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

crate::on_both_backends!(
    admins_grant_and_deduct_credits_and_users_see_their_wallet,
    bad_credit_requests_are_refused_and_write_nothing,
    concurrent_grants_and_deductions_keep_the_books_balanced,
);
