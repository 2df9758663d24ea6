//! Paying before the start: the payment job charges each reservation exactly once (two runs at
//! once, a run killed half-way and the server restarted), marks a short wallet's reservation as
//! payment due, pays it when credits arrive, and releases it if they do not; maintenance
//! releases reservations with a full refund; 200 concurrent bookings and cancellations of both
//! modes keep the books exact.

use crate::helpers::*;
use berth_app::backend::db;
use berth_app::backend::entity::{gpu, ledger_transaction, reservation};
use berth_app::backend::payment_job::{self, Checkpoint, Outcome};
use berth_app::domain::ledger::RefundPolicy;
use berth_app::domain::money::Money;
use berth_app::domain::payment::ChargePolicy;
use berth_app::domain::reservation::{PaymentStatus, ReleaseReason};
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

const H100: &str = "NVIDIA H100 80GB HBM3";

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

async fn charges_of(app: &TestApp, reservation_id: i64) -> u64 {
    ledger_transaction::Entity::find()
        .filter(ledger_transaction::Column::Kind.eq("charge"))
        .filter(ledger_transaction::Column::ReservationId.eq(reservation_id))
        .count(&app.db)
        .await
        .unwrap()
}

async fn run_job(app: &TestApp, at: DateTime<Utc>) -> Outcome {
    payment_job::run(&app.db, &ChargePolicy::default(), at, None)
        .await
        .unwrap()
}

async fn before_start_bookings_are_charged_once_by_the_job(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let h100 = gpus_of(&app, H100).await;
    let start = on_grid_in(TimeDelta::hours(30));

    // Confirmed now, not charged: the price is held for the coming charge.
    let (status, booked) = book(&app, &ana, booking(h100[0], start, 2, "before_start")).await;
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
    assert_eq!(
        reservation_row(&app, id).await.payment_status,
        PaymentStatus::Paid
    );
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
    let (status, soon) = book(
        &app,
        &ana,
        booking(h100[1], on_grid_in(TimeDelta::hours(1)), 1, "before_start"),
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
    // Ana's bookings hold their prices, so her wallet can only fall short of them when credits
    // are taken back after she booked: she books two before-start reservations, then a
    // correction leaves credits for one.
    grant("ana@example.org", 800 + 698).await;
    let start = on_grid_in(TimeDelta::hours(30));
    let (status, first) = book(&app, &ana, booking(h100[0], start, 2, "before_start")).await;
    assert_eq!(status, 201, "{first}");
    let (status, second) = book(&app, &ana, booking(h100[1], start, 2, "before_start")).await;
    assert_eq!(status, 201, "{second}");
    grant("ana@example.org", -698).await;
    let (first, second) = (
        first["id"].as_i64().unwrap(),
        second["id"].as_i64().unwrap(),
    );
    let charge_at = start - TimeDelta::hours(2);
    let outcome = run_job(&app, charge_at).await;
    assert_eq!((outcome.charged, outcome.due), (1, 1), "{outcome:?}");
    assert_eq!(
        reservation_row(&app, first).await.payment_status,
        PaymentStatus::Paid
    );
    assert_eq!(
        reservation_row(&app, second).await.payment_status,
        PaymentStatus::Due
    );
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
    assert_eq!(
        reservation_row(&app, second).await.payment_status,
        PaymentStatus::Paid
    );
    assert_eq!(charges_of(&app, second).await, 1);
    assert_eq!(balance(&app, &ana).await, 800 + 698 - 698 + 1000 - 2 * 698);

    // Bia's credits are taken back after she booked, and none arrive: due, then released at
    // start − 15 min, and the slot is free again.
    grant("bia@example.org", 698).await;
    let (status, third) = book(&app, &bia, booking(h100[2], start, 2, "before_start")).await;
    assert_eq!(status, 201, "{third}");
    grant("bia@example.org", -698).await;
    let third = third["id"].as_i64().unwrap();
    assert_eq!(run_job(&app, charge_at).await.due, 1);
    assert_eq!(
        run_job(&app, start - TimeDelta::minutes(16)).await.released,
        0
    );
    let outcome = run_job(&app, start - TimeDelta::minutes(15)).await;
    assert_eq!(outcome.released, 1, "{outcome:?}");
    let released = reservation_row(&app, third).await;
    assert_eq!(
        (released.status, released.released_reason),
        (reservation::Status::Cancelled, Some(ReleaseReason::Unpaid))
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
    let (status, taken) = book(&app, &admin, booking(h100[2], start, 2, "at_booking")).await;
    assert_eq!(status, 201, "the released slot is free: {taken}");
    assert_books_balance(&app).await;
    app.stop().await;
}

async fn a_job_killed_half_way_leaves_no_lost_or_doubled_charge(backend: Backend) {
    let (app, database) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let h100 = gpus_of(&app, H100).await;
    let start = on_grid_in(TimeDelta::hours(30));
    let (_, booked) = book(&app, &ana, booking(h100[0], start, 2, "before_start")).await;
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
        payment_job::run(
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
    assert_eq!(
        reservation_row(&app, id).await.payment_status,
        PaymentStatus::Pending
    );
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

async fn maintenance_and_retiring_move_reservations_to_equivalent_gpus(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let root = user_token(&app, "root@example.org", PlatformRole::PlatformAdmin).await;
    let h100 = gpus_of(&app, H100).await;
    // Five hours ahead: a cancellation by Ana would get half back, the release gets all of it.
    let start = on_grid_in(TimeDelta::hours(5));
    let (_, paid) = book(&app, &ana, booking(h100[0], start, 2, "at_booking")).await;
    let (_, pending) = book(&app, &ana, booking(h100[1], start, 2, "before_start")).await;
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

    // Confirmed, the bookings in the way move whole to free H100s (they had not begun): same
    // ids, same price, nothing refunded or charged differently (failover.rs covers the release
    // with a full refund when no equivalent GPU is free).
    let mut releasing = window.clone();
    releasing["release_reservations"] = json!(true);
    let (status, created) = post_json(&app, &root, "/api/v1/maintenance", &releasing).await;
    assert_eq!(status, 201, "{created}");
    for (id, before) in [(&paid["id"], h100[0]), (&pending["id"], h100[1])] {
        let (_, listed) = get(&app, &ana, &format!("/api/v1/reservations/{id}")).await;
        assert_eq!(
            (
                &listed["status"],
                &listed["released"],
                &listed["refunded_minor"]
            ),
            (&json!("confirmed"), &Value::Null, &json!(0)),
            "{listed}"
        );
        let now_on = listed["gpu_ids"][0].as_i64().unwrap();
        assert!(
            now_on != h100[0] && now_on != h100[1],
            "{listed} was on {before}"
        );
    }
    assert_eq!(balance(&app, &ana).await, TEST_CREDITS_MINOR - 698);
    // The moved pending booking is charged before its start as booked.
    assert_eq!(run_job(&app, start - TimeDelta::hours(2)).await.charged, 1);
    assert_eq!(balance(&app, &ana).await, TEST_CREDITS_MINOR - 2 * 698);

    // Retiring a GPU moves what holds it from now on; it cannot be booked (one the moves above
    // did not use).
    let spare = *h100.last().unwrap();
    let (_, later) = book(
        &app,
        &ana,
        booking(spare, on_grid_in(TimeDelta::hours(3)), 2, "at_booking"),
    )
    .await;
    assert_eq!(balance(&app, &ana).await, TEST_CREDITS_MINOR - 3 * 698);
    let retire = format!("/api/v1/admin/gpus/{}/retire", spare);
    assert_eq!(post_json(&app, &ana, &retire, &json!({})).await.0, 403);
    assert_eq!(
        post_json(&app, &root, "/api/v1/admin/gpus/999999/retire", &json!({}))
            .await
            .0,
        404
    );
    let (status, retired) = post_json(&app, &root, &retire, &json!({})).await;
    assert_eq!(status, 200, "{retired}");
    assert_eq!(
        retired["moved"],
        json!([{ "id": later["id"], "to": later["id"] }]),
        "{retired}"
    );
    assert_eq!(retired["released"], json!([]));
    let row = reservation_row(&app, later["id"].as_i64().unwrap()).await;
    assert_eq!(row.released_reason, None);
    assert_eq!(row.status, reservation::Status::Confirmed);
    assert_eq!(balance(&app, &ana).await, TEST_CREDITS_MINOR - 3 * 698);
    let (status, refused) = book(
        &app,
        &ana,
        booking(spare, on_grid_in(TimeDelta::hours(30)), 1, "at_booking"),
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
    let (status, refused) = book(
        &app,
        &ana,
        booking(h100[0], on_grid_in(TimeDelta::hours(30)), 1, "later"),
    )
    .await;
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
    let (status, refused) = book(
        &app,
        &ana,
        booking(h100[0], on_grid_in(TimeDelta::hours(30)), 1, "before_start"),
    )
    .await;
    assert_eq!(
        (status, &refused["code"]),
        (422, &json!("charge_mode_not_allowed"))
    );
    let mut plain = booking(h100[0], on_grid_in(TimeDelta::hours(30)), 1, "");
    plain.as_object_mut().unwrap().remove("charge");
    let (status, booked) = book(&app, &ana, plain).await;
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
            // Some wallets are empty: all their requests are refused.
            unfunded_user_token(&app, &email, PlatformRole::User).await
        } else {
            user_token(&app, &email, PlatformRole::User).await
        };
        tokens.push(token);
    }
    // 200 requests for 2-hour windows on 8 GPUs across three days: many clash.
    let base = on_grid_in(TimeDelta::hours(27));
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
            let (status, body) =
                post_as_a_client(&url, &token, &booking(gpu, start, 2, charge)).await;
            // Every third success is cancelled straight away, concurrently with other bookings.
            if status == 201 && i % 3 == 0 {
                let cancel = format!("{cancel_url}/{}", body["id"]);
                let (cancelled, answer) =
                    send_as_a_client(|| client.delete(&cancel).bearer_auth(&token)).await;
                assert_eq!(cancelled, 200, "{answer}");
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

    // Credits are taken back after the bookings: all of user5's (who books only before the
    // start, never later than 43 h after the first window), whose bookings then find the wallet
    // short, become due and are released.
    let admin = user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let left = balance(&app, &tokens[5]).await;
    grant(&app, &admin, json!({"email": "user5@example.org"}), -left).await;

    // Every charge time passes (the job runs at each), then every release time.
    let policy = ChargePolicy::default();
    let mut total = Outcome::default();
    for hour in 0..=48 {
        let at = base - TimeDelta::hours(2) + TimeDelta::hours(hour);
        let outcome = payment_job::run(&app.db, &policy, at, None).await.unwrap();
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
        use reservation::Status::{Cancelled, Confirmed};
        match (row.status, row.payment_status) {
            (Confirmed, PaymentStatus::Paid) => {
                assert_eq!(charges, 1, "reservation {}", row.id);
            }
            (Confirmed, other) => panic!("reservation {} left {other:?}", row.id),
            (Cancelled, PaymentStatus::Paid) => {
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
            (Cancelled, _) => {
                assert_eq!((charges, refunds.len()), (0, 0), "reservation {}", row.id);
            }
        }
    }
    app.stop().await;
}

/// The wallet API's balance, held and available amounts.
async fn funds(app: &TestApp, token: &str) -> (i64, i64, i64) {
    let (status, wallet) = get(app, token, "/api/v1/wallet").await;
    assert_eq!(status, 200, "{wallet}");
    assert_eq!(wallet["held_minor"], wallet["on_hold_minor"], "{wallet}");
    (
        wallet["balance_minor"].as_i64().unwrap(),
        wallet["held_minor"].as_i64().unwrap(),
        wallet["available_minor"].as_i64().unwrap(),
    )
}

async fn grant(app: &TestApp, admin: &str, wallet: Value, amount: i64) {
    let mut body = json!({"amount_minor": amount, "reason": "invoice"});
    body.as_object_mut()
        .unwrap()
        .extend(wallet.as_object().unwrap().clone());
    let (status, done) = post_json(app, admin, "/api/v1/admin/credits", &body).await;
    assert_eq!(status, 201, "{done}");
}

async fn before_start_bookings_hold_what_they_will_cost(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let admin = user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let ana = unfunded_user_token(&app, "ana@example.org", PlatformRole::User).await;
    let h100 = gpus_of(&app, H100).await;
    let start = on_grid_in(TimeDelta::hours(30));
    let count = || reservation::Entity::find().count(&app.db);

    // No credits: a booking paid before its start is refused as one paid at once would be,
    // and nothing is written.
    let before = (count().await.unwrap(), charges_and_postings(&app).await);
    let (status, refused) = book(&app, &ana, booking(h100[0], start, 2, "before_start")).await;
    assert_eq!(
        (
            status,
            &refused["code"],
            &refused["details"]["missing_minor"]
        ),
        (409, &json!("insufficient_funds"), &json!(698)),
        "{refused}"
    );
    assert_eq!(
        (count().await.unwrap(), charges_and_postings(&app).await),
        before
    );
    assert_eq!(funds(&app, &ana).await, (0, 0, 0));

    // Credits for one: the first booking holds 6.98 of 10.00, the second finds 3.02 available.
    grant(&app, &admin, json!({"email": "ana@example.org"}), 1_000).await;
    let (status, first) = book(&app, &ana, booking(h100[0], start, 2, "before_start")).await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["payment_status"], "pending");
    assert_eq!(funds(&app, &ana).await, (1_000, 698, 302));
    for charge in ["before_start", "at_booking"] {
        let (status, refused) = book(&app, &ana, booking(h100[1], start, 2, charge)).await;
        assert_eq!(
            (
                status,
                &refused["code"],
                &refused["details"]["missing_minor"]
            ),
            (409, &json!("insufficient_funds"), &json!(396)),
            "{charge}: {refused}"
        );
        assert!(
            refused["message"]
                .as_str()
                .unwrap()
                .contains("3.96 USD more needed"),
            "{refused}"
        );
    }
    assert_eq!(funds(&app, &ana).await, (1_000, 698, 302));

    // Cancelling the unpaid booking frees its hold: the other booking fits now.
    assert_eq!(cancel(&app, &ana, &first["id"]).await.0, 200);
    assert_eq!(funds(&app, &ana).await, (1_000, 0, 1_000));
    let (status, second) = book(&app, &ana, booking(h100[1], start, 2, "before_start")).await;
    assert_eq!(status, 201, "{second}");
    assert_eq!(funds(&app, &ana).await, (1_000, 698, 302));

    // The job's charge turns the hold into a debit: available stays, held drops.
    let charge_at = time(&second["charge_at"]);
    assert_eq!(run_job(&app, charge_at).await.charged, 1);
    assert_eq!(
        reservation_row(&app, second["id"].as_i64().unwrap())
            .await
            .payment_status,
        PaymentStatus::Paid
    );
    assert_eq!(funds(&app, &ana).await, (302, 0, 302));
    assert_books_balance(&app).await;
    app.stop().await;
}

/// Ledger transactions and entries.
async fn charges_and_postings(app: &TestApp) -> (u64, u64) {
    (
        ledger_transaction::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        berth_app::backend::entity::ledger_entry::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
    )
}

async fn concurrent_bookings_from_one_wallet_take_only_what_it_has(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let admin = user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let ana = unfunded_user_token(&app, "ana@example.org", PlatformRole::User).await;
    let h100 = gpus_of(&app, H100).await;
    // Credits for three bookings of 6.98 (and a little more), and sixteen requests at once on
    // GPUs and hours that never clash, most paid before their start, some at once.
    grant(
        &app,
        &admin,
        json!({"email": "ana@example.org"}),
        3 * 698 + 100,
    )
    .await;
    let base = on_grid_in(TimeDelta::hours(30));
    let mut requests = tokio::task::JoinSet::new();
    for i in 0..16_usize {
        let gpu = h100[i % h100.len()];
        let start = base + TimeDelta::hours(2 * i64::try_from(i / h100.len()).unwrap());
        let charge = if i % 4 == 0 {
            "at_booking"
        } else {
            "before_start"
        };
        let url = app.url("/api/v1/reservations");
        let token = ana.clone();
        requests.spawn(answer(
            crate::helpers::client()
                .post(url)
                .bearer_auth(token)
                .json(&booking(gpu, start, 2, charge)),
        ));
    }
    let mut booked = Vec::new();
    for (status, answer) in requests.join_all().await {
        match status {
            201 => booked.push(answer),
            409 => assert_eq!(answer["code"], "insufficient_funds", "{answer}"),
            other => panic!("unexpected {other}: {answer}"),
        }
    }
    assert_eq!(booked.len(), 3, "{booked:?}");
    let paid: i64 = booked
        .iter()
        .filter(|b| b["payment_status"] == "paid")
        .map(|b| b["price_minor"].as_i64().unwrap())
        .sum();
    let (balance, held, available) = funds(&app, &ana).await;
    assert_eq!(
        (balance, held, available),
        (3 * 698 + 100 - paid, 3 * 698 - paid, 100)
    );
    let confirmed = reservation::Entity::find()
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .count(&app.db)
        .await
        .unwrap();
    assert_eq!(confirmed, 3);

    // Every hold is charged in its time, and none of them finds the wallet short.
    let mut total = Outcome::default();
    for hour in 0..8 {
        let outcome = run_job(&app, base - TimeDelta::hours(2) + TimeDelta::hours(hour)).await;
        total.charged += outcome.charged;
        total.due += outcome.due;
    }
    assert_eq!(total.due, 0, "{total:?}");
    assert_eq!(funds(&app, &ana).await, (100, 0, 100));
    assert_books_balance(&app).await;
    app.stop().await;
}

async fn team_bookings_hold_the_team_wallet(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let ana = unfunded_user_token(&app, "ana@example.com", PlatformRole::User).await;
    let team =
        crate::helpers::team_with_admin(&app, &platform, "Research", "ana@example.com").await;
    let h100 = gpus_of(&app, H100).await;
    let start = on_grid_in(TimeDelta::hours(30));
    let team_booking = |gpu: i64| {
        let mut body = booking(gpu, start, 2, "before_start");
        body["team_id"] = json!(team);
        body
    };
    let team_funds = || async {
        let (status, shown) = get(&app, &ana, &format!("/api/v1/teams/{team}")).await;
        assert_eq!(status, 200, "{shown}");
        let money = &shown["money"];
        (
            money["balance_minor"].as_i64().unwrap(),
            money["held_minor"].as_i64().unwrap(),
            money["available_minor"].as_i64().unwrap(),
        )
    };

    // An empty team wallet holds nothing for its members.
    let (status, refused) = book(&app, &ana, team_booking(h100[0])).await;
    assert_eq!(
        (status, &refused["code"]),
        (409, &json!("insufficient_funds")),
        "{refused}"
    );
    // Credits for one team booking (Ana's own wallet plays no part).
    grant(&app, &platform, json!({"team_id": team}), 1_000).await;
    let (status, first) = book(&app, &ana, team_booking(h100[0])).await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(team_funds().await, (1_000, 698, 302));
    let (status, refused) = book(&app, &ana, team_booking(h100[1])).await;
    assert_eq!(
        (
            status,
            &refused["code"],
            &refused["details"]["missing_minor"]
        ),
        (409, &json!("insufficient_funds"), &json!(396)),
        "{refused}"
    );
    assert_eq!(funds(&app, &ana).await, (0, 0, 0));

    // A member's booking that waits for approval holds nothing yet; approved, it would hold its
    // price, so the approval needs the team wallet to have it available.
    let bia = unfunded_user_token(&app, "bia@example.com", PlatformRole::User).await;
    crate::helpers::invitation_by_admin(&app, team, &ana, "bia@example.com").await;
    crate::helpers::accept(&app, "bia@example.com").await;
    let (status, rules) = crate::helpers::send(
        &app,
        reqwest::Method::PUT,
        Some(&ana),
        &format!("/api/v1/teams/{team}/rules"),
        Some(json!({ "default_priority": "development", "approval_over_gpu_hours": 1 })),
    )
    .await;
    assert_eq!(status, 200, "{rules}");
    let (status, waiting) = book(&app, &bia, team_booking(h100[2])).await;
    assert_eq!(status, 201, "{waiting}");
    assert_eq!(waiting["payment_status"], "awaiting_approval");
    assert_eq!(team_funds().await, (1_000, 698, 302));
    let approve = format!("/api/v1/teams/{team}/approvals/{}", waiting["id"]);
    let (status, refused) = post_json(&app, &ana, &approve, &json!({"decision": "approve"})).await;
    assert_eq!(
        (
            status,
            &refused["code"],
            &refused["details"]["missing_minor"]
        ),
        (409, &json!("insufficient_funds"), &json!(396)),
        "{refused}"
    );
    assert_eq!(
        reservation_row(&app, waiting["id"].as_i64().unwrap())
            .await
            .payment_status,
        PaymentStatus::AwaitingApproval
    );
    grant(&app, &platform, json!({"team_id": team}), 396).await;
    let (status, approved) = post_json(&app, &ana, &approve, &json!({"decision": "approve"})).await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(
        reservation_row(&app, waiting["id"].as_i64().unwrap())
            .await
            .payment_status,
        PaymentStatus::Pending
    );
    assert_eq!(team_funds().await, (1_396, 1_396, 0));
    assert_books_balance(&app).await;
    app.stop().await;
}

async fn the_wallet_and_team_pages_show_balance_held_and_available(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    // The demo user (signed in on the app's client, and with an API token) has demo credits
    // and belongs to the demo team, whose wallet has its own.
    app.sign_in("user").await;
    let demo = unfunded_user_token(&app, "demo-user@berth.invalid", PlatformRole::User).await;
    let (balance, held, available) = funds(&app, &demo).await;
    assert!(balance > 698 && held == 0 && available == balance);
    let (_, page) = app.get_text("/wallet").await;
    assert!(
        page.contains("data-on-hold-minor=\"0\"")
            && page.contains(&format!("data-available-minor=\"{balance}\"")),
        "nothing held yet, all available: {page}"
    );
    // The demo credits are Berth's own reason: in the reader's language on the page, as data
    // and in English words in the API.
    assert!(page.contains("Demo credits"), "{page}");
    let page = app.get_in_language("/wallet", "pt-BR").await;
    assert!(
        page.contains("Créditos de demonstração") && !page.contains("Demo credits"),
        "{page}"
    );
    let (_, wallet) = get(&app, &demo, "/api/v1/wallet").await;
    let granted = wallet["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "grant")
        .cloned()
        .unwrap_or_else(|| panic!("no grant in {wallet}"));
    assert_eq!(
        (&granted["reason"], &granted["berth_reason"]),
        (&json!("Demo credits"), &json!({"what": "demo_credits"})),
        "{granted}"
    );

    let h100 = gpus_of(&app, H100).await;
    let start = on_grid_in(TimeDelta::hours(30));
    let (status, mine) = book(&app, &demo, booking(h100[0], start, 2, "before_start")).await;
    assert_eq!(status, 201, "{mine}");
    let (_, page) = app.get_text("/wallet").await;
    for (attribute, minor) in [
        ("data-balance-minor", balance),
        ("data-on-hold-minor", 698),
        ("data-available-minor", balance - 698),
    ] {
        assert!(
            page.contains(&format!("{attribute}=\"{minor}\"")),
            "{attribute} {minor}: {page}"
        );
    }
    assert!(page.contains("Available to book"), "{page}");

    // A team booking holds the team wallet's money, shown on the team page.
    let (_, teams) = get(&app, &demo, "/api/v1/teams").await;
    let team = teams[0]["id"].as_i64().unwrap();
    let (_, shown) = get(&app, &demo, &format!("/api/v1/teams/{team}")).await;
    let team_balance = shown["money"]["balance_minor"].as_i64().unwrap();
    let mut for_team = booking(h100[1], start, 2, "before_start");
    for_team["team_id"] = json!(team);
    let (status, booked) = book(&app, &demo, for_team).await;
    assert_eq!(status, 201, "{booked}");
    let (_, shown) = get(&app, &demo, &format!("/api/v1/teams/{team}")).await;
    assert_eq!(
        (
            &shown["money"]["held_minor"],
            &shown["money"]["available_minor"]
        ),
        (&json!(698), &json!(team_balance - 698)),
        "{shown}"
    );
    let (status, page) = app.get_text(&format!("/teams/{team}")).await;
    assert_eq!(status, 200);
    for (attribute, minor) in [
        ("data-team-balance-minor", team_balance),
        ("data-team-on-hold-minor", 698),
        ("data-team-available-minor", team_balance - 698),
    ] {
        assert!(
            page.contains(&format!("{attribute}=\"{minor}\"")),
            "{attribute} {minor}: {page}"
        );
    }
    // The personal wallet is unchanged by the team's booking.
    assert_eq!(funds(&app, &demo).await, (balance, 698, balance - 698));
    assert_books_balance(&app).await;
    app.stop().await;
}

crate::on_both_backends!(
    before_start_bookings_are_charged_once_by_the_job,
    a_short_wallet_is_due_until_credits_arrive_else_the_slot_is_released,
    a_job_killed_half_way_leaves_no_lost_or_doubled_charge,
    maintenance_and_retiring_move_reservations_to_equivalent_gpus,
    charge_modes_are_checked,
    two_hundred_mixed_bookings_and_cancellations_keep_the_books_exact,
    before_start_bookings_hold_what_they_will_cost,
    concurrent_bookings_from_one_wallet_take_only_what_it_has,
    team_bookings_hold_the_team_wallet,
    the_wallet_and_team_pages_show_balance_held_and_available,
);
