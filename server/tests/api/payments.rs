//! Paying before the start: the payment job charges each reservation exactly once (two runs at
//! once, a run killed half-way and the server restarted), marks a short wallet's reservation as
//! payment due, pays it when credits arrive, and releases it if they do not; maintenance
//! releases reservations with a full refund; 200 concurrent bookings and cancellations of both
//! modes keep the books exact.

use crate::helpers::{Backend, TestApp, spawn_app, spawn_with, test_settings};
use crate::reservations::{
    TEST_CREDITS_MINOR, get, gpus_of, post, post_json, unfunded_user_token, user_token,
};
use berth_app::domain::ledger::RefundPolicy;
use berth_app::domain::money::Money;
use berth_app::domain::payment::ChargePolicy;
use berth_app::domain::user::PlatformRole;
use berth_app::server::db;
use berth_app::server::db::payments::{Checkpoint, Outcome};
use berth_app::server::entity::{gpu, ledger_transaction, reservation};
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

const H100: &str = "NVIDIA H100 80GB HBM3";

/// `hours` after the next quarter hour.
fn on_grid_in(hours: i64) -> DateTime<Utc> {
    berth_app::domain::schedule::slot_ceil(Utc::now()) + TimeDelta::hours(hours)
}

fn booking(gpu: i64, start: DateTime<Utc>, hours: i64, charge: &str) -> Value {
    json!({
        "gpu_ids": [gpu],
        "start": start.to_rfc3339(),
        "end": (start + TimeDelta::hours(hours)).to_rfc3339(),
        "charge": charge,
    })
}

fn time(value: &Value) -> DateTime<Utc> {
    value.as_str().unwrap().parse().unwrap()
}

async fn balance(app: &TestApp, token: &str) -> i64 {
    get(app, token, "/api/v1/wallet").await.1["balance_minor"]
        .as_i64()
        .unwrap()
}

async fn charges_of(app: &TestApp, reservation_id: i64) -> u64 {
    ledger_transaction::Entity::find()
        .filter(ledger_transaction::Column::Kind.eq("charge"))
        .filter(ledger_transaction::Column::ReservationId.eq(reservation_id))
        .count(&app.db)
        .await
        .unwrap()
}

async fn row(app: &TestApp, id: i64) -> reservation::Model {
    reservation::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .unwrap()
        .unwrap()
}

async fn run_job(app: &TestApp, at: DateTime<Utc>) -> Outcome {
    db::payments::run(&app.db, &ChargePolicy::default(), at, None)
        .await
        .unwrap()
}

async fn assert_books_balance(app: &TestApp) {
    let audit = db::ledger::audit(&app.db).await.unwrap();
    assert!(audit.is_clean(), "{audit:?}");
}

async fn before_start_bookings_are_charged_once_by_the_job(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let h100 = gpus_of(&app, H100).await;
    let start = on_grid_in(30);

    // Confirmed now, not charged: the price is held for the coming charge.
    let (status, booked) = post(&app, &ana, booking(h100[0], start, 2, "before_start")).await;
    assert_eq!(status, 201, "{booked}");
    assert_eq!(
        (
            &booked["price_minor"],
            &booked["payment_status"],
            &booked["charge_mode"]
        ),
        (&json!(698), &json!("pending"), &json!("before_start"))
    );
    let charge_at = time(&booked["charge_at"]);
    assert_eq!(charge_at, start - TimeDelta::hours(2));
    let (_, wallet) = get(&app, &ana, "/api/v1/wallet").await;
    assert_eq!(
        (&wallet["balance_minor"], &wallet["on_hold_minor"]),
        (&json!(TEST_CREDITS_MINOR), &json!(698))
    );
    let id = booked["id"].as_i64().unwrap();

    // The price was locked when booking: raising the GPU's price changes nothing.
    gpu::Entity::update_many()
        .col_expr(gpu::Column::HourlyPriceMinor, Expr::value(10_000_i64))
        .filter(gpu::Column::Id.eq(h100[0]))
        .exec(&app.db)
        .await
        .unwrap();

    // Not before its time.
    assert_eq!(
        run_job(&app, charge_at - TimeDelta::minutes(1)).await,
        Outcome::default()
    );
    assert_eq!(charges_of(&app, id).await, 0);

    // Two runs at once (two replicas): one charge.
    let (first, second) = tokio::join!(run_job(&app, charge_at), run_job(&app, charge_at));
    assert_eq!(first.charged + second.charged, 1, "{first:?} {second:?}");
    assert_eq!(charges_of(&app, id).await, 1);
    assert_eq!(row(&app, id).await.payment_status, "paid");
    assert_eq!(balance(&app, &ana).await, TEST_CREDITS_MINOR - 698);
    // Later runs find nothing to do.
    assert_eq!(
        run_job(&app, charge_at + TimeDelta::minutes(5)).await,
        Outcome::default()
    );
    assert_eq!(charges_of(&app, id).await, 1);
    let (_, wallet) = get(&app, &ana, "/api/v1/wallet").await;
    assert_eq!(wallet["on_hold_minor"], 0);
    assert_eq!(wallet["entries"][0]["reservation_id"], id);

    // A booking within the lead time is charged at once, whatever it asked.
    let (status, soon) = post(
        &app,
        &ana,
        booking(h100[1], on_grid_in(1), 1, "before_start"),
    )
    .await;
    assert_eq!(status, 201, "{soon}");
    assert_eq!(
        (&soon["payment_status"], &soon["charge_mode"]),
        (&json!("paid"), &json!("at_booking"))
    );
    assert_books_balance(&app).await;
    app.stop().await;
}

async fn a_short_wallet_is_due_until_credits_arrive_else_the_slot_is_released(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let admin = user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let ana = unfunded_user_token(&app, "ana@example.org", PlatformRole::User).await;
    let bia = unfunded_user_token(&app, "bia@example.org", PlatformRole::User).await;
    let h100 = gpus_of(&app, H100).await;
    let grant = |email: &'static str, amount: i64| {
        let app = &app;
        let admin = admin.clone();
        async move {
            let (status, done) = post_json(
                app,
                &admin,
                "/api/v1/admin/credits",
                &json!({"email": email, "amount_minor": amount, "reason": "invoice"}),
            )
            .await;
            assert_eq!(status, 201, "{done}");
        }
    };
    grant("ana@example.org", 800).await;
    let start = on_grid_in(30);

    // Ana books two before-start reservations with credits for one.
    let (_, first) = post(&app, &ana, booking(h100[0], start, 2, "before_start")).await;
    let (_, second) = post(&app, &ana, booking(h100[1], start, 2, "before_start")).await;
    let (first, second) = (
        first["id"].as_i64().unwrap(),
        second["id"].as_i64().unwrap(),
    );
    let charge_at = start - TimeDelta::hours(2);
    let outcome = run_job(&app, charge_at).await;
    assert_eq!((outcome.charged, outcome.due), (1, 1), "{outcome:?}");
    assert_eq!(row(&app, first).await.payment_status, "paid");
    assert_eq!(row(&app, second).await.payment_status, "due");
    let (_, wallet) = get(&app, &ana, "/api/v1/wallet").await;
    assert_eq!(wallet["balance_minor"], 102);
    assert_eq!(
        wallet["payments_due"][0]["reservation_id"], second,
        "{wallet}"
    );
    assert_eq!(
        time(&wallet["payments_due"][0]["release_at"]),
        start - TimeDelta::minutes(15)
    );
    let (status, due) = get(&app, &admin, "/api/v1/admin/payments-due").await;
    assert_eq!(status, 200, "{due}");
    assert_eq!(due.as_array().unwrap().len(), 1, "{due}");
    assert_eq!(due[0]["reservation"]["id"], second);
    assert_eq!(due[0]["owner_balance_minor"], 102);
    assert_eq!(get(&app, &ana, "/api/v1/admin/payments-due").await.0, 403);

    // Still short on the next run: still due, nothing charged.
    let outcome = run_job(&app, charge_at + TimeDelta::minutes(30)).await;
    assert_eq!((outcome.charged, outcome.due), (0, 1));
    // Credits arrive: paid at once, without waiting for the job.
    grant("ana@example.org", 1000).await;
    assert_eq!(row(&app, second).await.payment_status, "paid");
    assert_eq!(charges_of(&app, second).await, 1);
    assert_eq!(balance(&app, &ana).await, 800 + 1000 - 2 * 698);

    // Bia never gets credits: due, then released at start − 15 min, and the slot is free again.
    let (_, third) = post(&app, &bia, booking(h100[2], start, 2, "before_start")).await;
    let third = third["id"].as_i64().unwrap();
    assert_eq!(run_job(&app, charge_at).await.due, 1);
    assert_eq!(
        run_job(&app, start - TimeDelta::minutes(16)).await.released,
        0
    );
    let outcome = run_job(&app, start - TimeDelta::minutes(15)).await;
    assert_eq!(outcome.released, 1, "{outcome:?}");
    let released = row(&app, third).await;
    assert_eq!(
        (
            released.status.as_str(),
            released.released_reason.as_deref()
        ),
        ("cancelled", Some("unpaid"))
    );
    assert_eq!(charges_of(&app, third).await, 0);
    let (_, mine) = get(&app, &bia, "/api/v1/reservations?mine=true").await;
    let listed = mine
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == third)
        .unwrap();
    assert_eq!(
        (&listed["status"], &listed["released"]),
        (&json!("cancelled"), &json!("unpaid"))
    );
    let (status, taken) = post(&app, &admin, booking(h100[2], start, 2, "at_booking")).await;
    assert_eq!(status, 201, "the released slot is free: {taken}");
    assert_books_balance(&app).await;
    app.stop().await;
}

async fn a_job_killed_half_way_leaves_no_lost_or_doubled_charge(backend: Backend) {
    let (app, database) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let h100 = gpus_of(&app, H100).await;
    let start = on_grid_in(30);
    let (_, booked) = post(&app, &ana, booking(h100[0], start, 2, "before_start")).await;
    let id = booked["id"].as_i64().unwrap();
    let charge_at = start - TimeDelta::hours(2);

    // The job writes the charge, then dies before committing (the task is aborted while it
    // waits at the checkpoint).
    let (reached, at_checkpoint) = tokio::sync::mpsc::unbounded_channel::<i64>();
    let checkpoint: Checkpoint = Arc::new(move |id| {
        let reached = reached.clone();
        Box::pin(async move {
            let _ = reached.send(id);
            std::future::pending::<()>().await;
        })
    });
    let pool = app.db.clone();
    let job = tokio::spawn(async move {
        db::payments::run(
            &pool,
            &ChargePolicy::default(),
            charge_at,
            Some(&checkpoint),
        )
        .await
    });
    let mut at_checkpoint = at_checkpoint;
    assert_eq!(at_checkpoint.recv().await, Some(id));
    job.abort();
    assert!(job.await.unwrap_err().is_cancelled());

    // Nothing of it stayed; the server restarts on the same database.
    app.stop().await;
    let app = spawn_with(test_settings(&database)).await;
    assert_eq!(charges_of(&app, id).await, 0);
    assert_eq!(row(&app, id).await.payment_status, "pending");
    assert_eq!(balance(&app, &ana).await, TEST_CREDITS_MINOR);
    assert_books_balance(&app).await;

    // The next run charges it, once; one after that (another restart) finds nothing.
    assert_eq!(run_job(&app, charge_at).await.charged, 1);
    app.stop().await;
    let app = spawn_with(test_settings(&database)).await;
    assert_eq!(
        run_job(&app, charge_at + TimeDelta::minutes(1)).await,
        Outcome::default()
    );
    assert_eq!(charges_of(&app, id).await, 1);
    assert_eq!(balance(&app, &ana).await, TEST_CREDITS_MINOR - 698);
    assert_books_balance(&app).await;
    app.stop().await;
}

async fn maintenance_and_retiring_release_reservations_with_a_full_refund(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let root = user_token(&app, "root@example.org", PlatformRole::PlatformAdmin).await;
    let h100 = gpus_of(&app, H100).await;
    // Five hours ahead: a cancellation by Ana would get half back, the release gets all of it.
    let start = on_grid_in(5);
    let (_, paid) = post(&app, &ana, booking(h100[0], start, 2, "at_booking")).await;
    let (_, pending) = post(&app, &ana, booking(h100[1], start, 2, "before_start")).await;
    assert_eq!(balance(&app, &ana).await, TEST_CREDITS_MINOR - 698);
    let window = json!({
        "gpu_ids": [h100[0], h100[1]],
        "start": (start + TimeDelta::hours(1)).to_rfc3339(),
        "end": (start + TimeDelta::hours(3)).to_rfc3339(),
        "reason": "PSU swap",
    });
    let (status, refused) = post_json(&app, &root, "/api/v1/maintenance", &window).await;
    assert_eq!(
        (status, &refused["code"]),
        (409, &json!("reservations_in_the_way"))
    );

    let mut releasing = window.clone();
    releasing["release_reservations"] = json!(true);
    let (status, created) = post_json(&app, &root, "/api/v1/maintenance", &releasing).await;
    assert_eq!(status, 201, "{created}");
    for (id, refunded) in [(&paid["id"], 698), (&pending["id"], 0)] {
        let (_, mine) = get(&app, &ana, "/api/v1/reservations?mine=true").await;
        let listed = mine
            .as_array()
            .unwrap()
            .iter()
            .find(|r| &r["id"] == id)
            .unwrap()
            .clone();
        assert_eq!(
            (
                &listed["status"],
                &listed["released"],
                &listed["refunded_minor"]
            ),
            (&json!("cancelled"), &json!("maintenance"), &json!(refunded)),
            "{listed}"
        );
    }
    assert_eq!(balance(&app, &ana).await, TEST_CREDITS_MINOR);
    // The released reservation is never charged later.
    assert_eq!(
        run_job(&app, start - TimeDelta::hours(2)).await,
        Outcome::default()
    );

    // Retiring a GPU releases what holds it from now on, refunded in full; it cannot be booked.
    let (_, later) = post(&app, &ana, booking(h100[2], on_grid_in(3), 2, "at_booking")).await;
    assert_eq!(balance(&app, &ana).await, TEST_CREDITS_MINOR - 698);
    let retire = format!("/api/v1/admin/gpus/{}/retire", h100[2]);
    assert_eq!(post_json(&app, &ana, &retire, &json!({})).await.0, 403);
    assert_eq!(
        post_json(&app, &root, "/api/v1/admin/gpus/999999/retire", &json!({}))
            .await
            .0,
        404
    );
    let (status, retired) = post_json(&app, &root, &retire, &json!({})).await;
    assert_eq!(status, 200, "{retired}");
    assert_eq!(retired["released"], json!([later["id"]]));
    assert_eq!(
        row(&app, later["id"].as_i64().unwrap())
            .await
            .released_reason
            .as_deref(),
        Some("retired")
    );
    assert_eq!(balance(&app, &ana).await, TEST_CREDITS_MINOR);
    let (status, refused) = post(
        &app,
        &ana,
        booking(h100[2], on_grid_in(30), 1, "at_booking"),
    )
    .await;
    assert_eq!(
        (status, &refused["code"]),
        (409, &json!("gpu_unavailable")),
        "{refused}"
    );
    assert_books_balance(&app).await;
    app.stop().await;
}

async fn charge_modes_are_checked(backend: Backend) {
    let (app, database) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let h100 = gpus_of(&app, H100).await;
    let count = || reservation::Entity::find().count(&app.db);
    let before = count().await.unwrap();
    let (status, refused) = post(&app, &ana, booking(h100[0], on_grid_in(30), 1, "later")).await;
    assert_eq!(
        (status, &refused["field"], &refused["code"]),
        (422, &json!("charge"), &json!("unknown_charge_mode"))
    );
    assert_eq!(count().await.unwrap(), before);
    app.stop().await;

    // A portal that only charges at booking refuses the other mode, and defaults to its own.
    let mut settings = test_settings(&database);
    settings.charge_modes = berth_server::configuration::TextList::Joined("at_booking".to_owned());
    let app = spawn_with(settings).await;
    let (status, refused) = post(
        &app,
        &ana,
        booking(h100[0], on_grid_in(30), 1, "before_start"),
    )
    .await;
    assert_eq!(
        (status, &refused["code"]),
        (422, &json!("charge_mode_not_allowed"))
    );
    let mut plain = booking(h100[0], on_grid_in(30), 1, "");
    plain.as_object_mut().unwrap().remove("charge");
    let (status, booked) = post(&app, &ana, plain).await;
    assert_eq!(status, 201, "{booked}");
    assert_eq!(booked["payment_status"], "paid");
    app.stop().await;
}

async fn two_hundred_mixed_bookings_and_cancellations_keep_the_books_exact(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let h100 = gpus_of(&app, H100).await;
    let mut tokens = Vec::new();
    for n in 0..8 {
        let email = format!("user{n}@example.org");
        let token = if n % 4 == 3 {
            // Some wallets are short: their at-booking requests are refused, their
            // before-start ones become due and are released.
            unfunded_user_token(&app, &email, PlatformRole::User).await
        } else {
            user_token(&app, &email, PlatformRole::User).await
        };
        tokens.push(token);
    }
    // 200 requests for 2-hour windows on 8 GPUs across three days: many clash.
    let base = on_grid_in(27);
    let mut tasks = Vec::new();
    for i in 0..200usize {
        let token = tokens[i % tokens.len()].clone();
        let gpu = h100[i % h100.len()];
        let start = base + TimeDelta::hours(i64::try_from((i * 7) % 48).unwrap());
        let charge = if i % 2 == 0 {
            "at_booking"
        } else {
            "before_start"
        };
        let url = app.url("/api/v1/reservations");
        let cancel_url = app.url("/api/v1/reservations");
        tasks.push(tokio::spawn(async move {
            let client = crate::helpers::client();
            let response = client
                .post(url)
                .bearer_auth(&token)
                .json(&booking(gpu, start, 2, charge))
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let body: Value = response.json().await.unwrap_or(Value::Null);
            // Every third success is cancelled straight away, concurrently with other bookings.
            if status == 201 && i % 3 == 0 {
                let cancelled = client
                    .delete(format!("{cancel_url}/{}", body["id"]))
                    .bearer_auth(&token)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(cancelled.status().as_u16(), 200);
            }
            (status, body)
        }));
    }
    let mut statuses: HashMap<u16, usize> = HashMap::new();
    for task in tasks {
        let (status, body) = task.await.unwrap();
        assert!(
            [201, 409].contains(&status),
            "unexpected answer {status}: {body}"
        );
        *statuses.entry(status).or_default() += 1;
    }
    assert!(
        statuses.get(&201).copied().unwrap_or(0) > 20,
        "{statuses:?}"
    );

    // Every charge time passes (the job runs at each), then every release time.
    let policy = ChargePolicy::default();
    let mut total = Outcome::default();
    for hour in 0..=48 {
        let at = base - TimeDelta::hours(2) + TimeDelta::hours(hour);
        let outcome = db::payments::run(&app.db, &policy, at, None).await.unwrap();
        total.charged += outcome.charged;
        total.due += outcome.due;
        total.released += outcome.released;
    }
    assert!(total.charged > 0 && total.released > 0, "{total:?}");

    assert_books_balance(&app).await;
    let rows = reservation::Entity::find().all(&app.db).await.unwrap();
    let refund_policy = RefundPolicy::default();
    for row in rows {
        let charges = charges_of(&app, row.id).await;
        let refunds: Vec<i64> = db::ledger::refunds_of(&app.db, &[row.id])
            .await
            .unwrap()
            .values()
            .map(|m| m.minor())
            .collect();
        match (row.status.as_str(), row.payment_status.as_str()) {
            ("confirmed", "paid") => assert_eq!(charges, 1, "reservation {}", row.id),
            ("confirmed", other) => panic!("reservation {} left {other}", row.id),
            ("cancelled", "paid") => {
                assert_eq!(charges, 1, "reservation {}", row.id);
                let expected = refund_policy.refund(
                    Money::from_minor(row.price_minor),
                    row.start_at,
                    row.cancelled_at.unwrap(),
                );
                assert_eq!(
                    refunds.iter().sum::<i64>(),
                    expected.minor(),
                    "reservation {}",
                    row.id
                );
            }
            ("cancelled", _) => {
                assert_eq!((charges, refunds.len()), (0, 0), "reservation {}", row.id);
            }
            (other, _) => panic!("reservation {} is {other}", row.id),
        }
    }
    app.stop().await;
}

crate::on_both_backends!(
    before_start_bookings_are_charged_once_by_the_job,
    a_short_wallet_is_due_until_credits_arrive_else_the_slot_is_released,
    a_job_killed_half_way_leaves_no_lost_or_doubled_charge,
    maintenance_and_retiring_release_reservations_with_a_full_refund,
    charge_modes_are_checked,
    two_hundred_mixed_bookings_and_cancellations_keep_the_books_exact,
);
