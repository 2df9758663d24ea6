//! Migrations that change existing data, run on a database that holds some.

use crate::helpers::*;
use berth_app::backend::db;
use berth_app::backend::demo::demo_fleet;
use berth_app::backend::entity::{reservation, reservation_gpu};
use berth_app::domain::user::{Email, PlatformRole};
use berth_migrations::{Migrator, MigratorTrait};
use chrono::{TimeZone, Utc};
use sea_orm::{ConnectionTrait, EntityTrait, QueryFilter};

async fn holds_get_their_reservations_window_when_migrating(backend: Backend) {
    let database = TestDatabase::create(backend).await;
    let conn = db::connect(&database.url).await.unwrap();
    // The schema before holds carried their window.
    Migrator::up(&conn, Some(6)).await.unwrap();
    let now = Utc::now();
    // Rows written with plain SQL: today's entities have columns this old schema lacks.
    let (node, gpus) = demo_fleet().remove(0);
    conn.execute_unprepared(&format!(
        "INSERT INTO nodes (name, hostname, is_demo, created_at) VALUES ('{}', '{}', true, '{}')",
        node.name,
        node.hostname,
        now.to_rfc3339()
    ))
    .await
    .unwrap();
    let node_id: i64 = conn
        .query_one_raw(sea_orm::Statement::from_string(
            conn.get_database_backend(),
            "SELECT id FROM nodes".to_owned(),
        ))
        .await
        .unwrap()
        .unwrap()
        .try_get("", "id")
        .unwrap();
    for gpu in &gpus {
        conn.execute_unprepared(&format!(
            "INSERT INTO gpus (node_id, device_index, uuid, model, memory_mib, status, shareable, \
             hourly_price_minor, created_at, updated_at) \
             VALUES ({node_id}, {}, '{}', '{}', {}, 'active', false, 100, '{now}', '{now}')",
            gpu.device_index,
            gpu.uuid,
            gpu.model,
            gpu.memory.mib(),
            now = now.to_rfc3339()
        ))
        .await
        .unwrap();
    }
    let owner = user_of_old_schema(&conn, now).await;
    let start = Utc.with_ymd_and_hms(2026, 12, 3, 9, 0, 0).unwrap();
    let end = Utc.with_ymd_and_hms(2026, 12, 3, 17, 30, 0).unwrap();
    conn.execute_unprepared(&format!(
        "INSERT INTO reservations (owner_id, node_id, model, quarters, start_at, end_at, status, \
         price_minor, created_at) \
         VALUES ({}, {node_id}, '{}', 4, '{}', '{}', 'confirmed', 1000, '{}')",
        owner.id,
        gpus[0].model,
        start.to_rfc3339(),
        end.to_rfc3339(),
        now.to_rfc3339()
    ))
    .await
    .unwrap();
    let booked_id: i64 = conn
        .query_one_raw(sea_orm::Statement::from_string(
            conn.get_database_backend(),
            "SELECT id FROM reservations".to_owned(),
        ))
        .await
        .unwrap()
        .unwrap()
        .try_get("", "id")
        .unwrap();
    let gpu_ids: Vec<i64> = conn
        .query_all_raw(sea_orm::Statement::from_string(
            conn.get_database_backend(),
            "SELECT id FROM gpus ORDER BY id LIMIT 2".to_owned(),
        ))
        .await
        .unwrap()
        .iter()
        .map(|row| row.try_get::<i64>("", "id").unwrap())
        .collect();
    for gpu_id in &gpu_ids {
        conn.execute_unprepared(&format!(
            "INSERT INTO reservation_gpus (reservation_id, gpu_id) VALUES ({booked_id}, {gpu_id})"
        ))
        .await
        .unwrap();
    }

    Migrator::up(&conn, None).await.unwrap();
    let holds = reservation_gpu::Entity::find().all(&conn).await.unwrap();
    assert_eq!(holds.len(), 2);
    for hold in holds {
        assert_eq!(
            (hold.start_at, hold.end_at),
            (start, end),
            "copied from the reservation"
        );
    }
    let booked = reservation::Entity::find_by_id(booked_id)
        .one(&conn)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        booked.payment_status,
        berth_app::domain::reservation::PaymentStatus::Unpaid,
        "booked before payments"
    );
    let _ = conn.close().await;
}

/// Team wallets change the ledger's CHECK constraints (SQLite rebuilds `ledger_accounts`): the
/// accounts, their ids and balances and every entry survive, the books still balance, and the
/// new rules hold afterwards.
/// The column `n` of the one row `sql` answers.
async fn query_i64(conn: &sea_orm::DatabaseConnection, sql: &str) -> i64 {
    conn.query_one_raw(sea_orm::Statement::from_string(
        conn.get_database_backend(),
        sql.to_owned(),
    ))
    .await
    .unwrap()
    .unwrap()
    .try_get::<i64>("", "n")
    .unwrap()
}

async fn the_ledger_survives_the_team_wallets_migration(backend: Backend) {
    let database = TestDatabase::create(backend).await;
    let conn = db::connect(&database.url).await.unwrap();
    Migrator::up(&conn, Some(13)).await.unwrap();
    let now = Utc::now();
    let owner = user_of_old_schema(&conn, now).await;
    // A grant of 500 as the ledger of migration 9 wrote it, in plain SQL.
    conn.execute_unprepared(&format!(
        "INSERT INTO ledger_accounts (kind, user_id, balance_minor, created_at) \
         VALUES ('wallet', {}, 500, '{}')",
        owner.id,
        now.to_rfc3339()
    ))
    .await
    .unwrap();
    let wallet = query_i64(
        &conn,
        "SELECT id AS n FROM ledger_accounts WHERE kind = 'wallet'",
    )
    .await;
    let funding = query_i64(
        &conn,
        "SELECT id AS n FROM ledger_accounts WHERE kind = 'funding'",
    )
    .await;
    conn.execute_unprepared(&format!(
        "INSERT INTO ledger_transactions (kind, user_id, reason, created_at) \
         VALUES ('grant', {}, 'before teams', '{}')",
        owner.id,
        now.to_rfc3339()
    ))
    .await
    .unwrap();
    let transaction = query_i64(&conn, "SELECT id AS n FROM ledger_transactions").await;
    conn.execute_unprepared(&format!(
        "INSERT INTO ledger_entries (transaction_id, account_id, amount_minor) \
         VALUES ({transaction}, {funding}, -500), ({transaction}, {wallet}, 500)"
    ))
    .await
    .unwrap();

    Migrator::up(&conn, None).await.unwrap();
    assert_eq!(
        query_i64(
            &conn,
            "SELECT id AS n FROM ledger_accounts WHERE kind = 'wallet'"
        )
        .await,
        wallet,
        "ids kept"
    );
    assert_eq!(
        db::ledger::wallet_balance(&conn, owner.id)
            .await
            .unwrap()
            .minor(),
        500
    );
    assert_eq!(
        query_i64(&conn, "SELECT COUNT(*) AS n FROM ledger_entries").await,
        2
    );
    assert!(db::ledger::audit(&conn).await.unwrap().is_clean());
    // The new rules: team wallets, one per team; still one revenue account; never negative.
    let team = db::teams::create_team(
        &conn,
        &berth_app::domain::team::TeamName::parse("Lab").unwrap(),
        now,
    )
    .await
    .unwrap()
    .unwrap();
    use berth_app::domain::ledger::Account;
    assert!(
        db::ledger::create_account(&conn, Account::TeamWallet(team))
            .await
            .unwrap()
    );
    assert!(
        !db::ledger::create_account(&conn, Account::TeamWallet(team))
            .await
            .unwrap()
    );
    for refused in [
        "INSERT INTO ledger_accounts (kind, balance_minor, created_at) VALUES ('revenue', 0, '2026-12-01T00:00:00+00:00')".to_owned(),
        format!("INSERT INTO ledger_accounts (kind, user_id, team_id, balance_minor, created_at) VALUES ('wallet', {}, {team}, 0, '2026-12-01T00:00:00+00:00')", owner.id),
        format!("UPDATE ledger_accounts SET balance_minor = -1 WHERE team_id = {team}"),
        "INSERT INTO ledger_accounts (kind, balance_minor, created_at) VALUES ('team_wallet', 0, '2026-12-01T00:00:00+00:00')".to_owned(),
    ] {
        assert!(conn.execute_unprepared(&refused).await.is_err(), "{refused}");
    }
    // Foreign keys still hold after the rebuild.
    assert!(
        conn.execute_unprepared("INSERT INTO ledger_entries (transaction_id, account_id, amount_minor) VALUES (1, 999999, 0)")
            .await
            .is_err()
    );
    let _ = conn.close().await;
}

/// A new database migrated up to `version` holding the first demo node's GPUs and a user, Ana.
async fn with_a_fleet_at(
    backend: Backend,
    version: u32,
) -> (
    TestDatabase,
    sea_orm::DatabaseConnection,
    Vec<berth_app::backend::entity::gpu::Model>,
    berth_app::domain::user::UserSummary,
) {
    let database = TestDatabase::create(backend).await;
    let conn = db::connect(&database.url).await.unwrap();
    Migrator::up(&conn, Some(version)).await.unwrap();
    let now = Utc::now();
    // Written column by column: the app's own insert and read name the columns of the newest
    // schema (the pending GPUs' flags, say), which an old version does not have yet.
    use berth_app::backend::entity::{gpu, node};
    use sea_orm::ActiveValue::Set;
    use sea_orm::QuerySelect;
    let (new_node, new_gpus) = demo_fleet().remove(0);
    let node_id = node::Entity::insert(node::ActiveModel {
        name: Set(new_node.name.clone()),
        hostname: Set(new_node.hostname.clone()),
        is_demo: Set(new_node.is_demo),
        created_at: Set(now),
        ..Default::default()
    })
    .exec(&conn)
    .await
    .unwrap()
    .last_insert_id;
    for new_gpu in &new_gpus {
        gpu::Entity::insert(gpu::ActiveModel {
            node_id: Set(node_id),
            device_index: Set(i32::try_from(new_gpu.device_index).unwrap()),
            uuid: Set(new_gpu.uuid.clone()),
            model: Set(new_gpu.model.clone()),
            memory_mib: Set(i64::try_from(new_gpu.memory.mib()).unwrap()),
            status: Set(new_gpu.status),
            shareable: Set(new_gpu.shareable),
            hourly_price_minor: Set(new_gpu.hourly_price.minor()),
            created_at: Set(now),
            updated_at: Set(now),
            ..Default::default()
        })
        .exec(&conn)
        .await
        .unwrap();
    }
    let gpus = gpu::Entity::find()
        .select_only()
        .columns([
            gpu::Column::Id,
            gpu::Column::NodeId,
            gpu::Column::DeviceIndex,
            gpu::Column::Uuid,
            gpu::Column::Model,
            gpu::Column::MemoryMib,
            gpu::Column::Status,
            gpu::Column::Shareable,
            gpu::Column::HourlyPriceMinor,
            gpu::Column::CreatedAt,
            gpu::Column::UpdatedAt,
            gpu::Column::PciBusId,
            gpu::Column::VanishedAt,
        ])
        .column_as(sea_orm::sea_query::Expr::value(false), "pending")
        .into_model::<gpu::Model>()
        .all(&conn)
        .await
        .unwrap();
    let owner = user_of_old_schema(&conn, now).await;
    (database, conn, gpus, owner)
}

async fn usage_starts_from_the_rollups_kept_when_migrating(backend: Backend) {
    use berth_app::backend::entity::{fleet_usage_hour, gpu_rollup, reservation_usage};
    use chrono::TimeDelta;
    use sea_orm::ActiveValue::Set;
    // The schema before the usage tables, with two bookings and their GPUs' rollups.
    let (_database, conn, gpus, owner) = with_a_fleet_at(backend, 15).await;
    let start = Utc.with_ymd_and_hms(2026, 11, 20, 10, 0, 0).unwrap();
    let whole =
        crate::helpers::insert_past_booking(&conn, owner.id, &gpus[0], start, 2, false).await;
    let cut = crate::helpers::insert_past_booking(&conn, owner.id, &gpus[1], start, 2, false).await;
    // The second was cancelled an hour in.
    reservation::Entity::update_many()
        .col_expr(
            reservation::Column::Status,
            sea_orm::sea_query::Expr::value(reservation::Status::Cancelled),
        )
        .col_expr(
            reservation::Column::CancelledAt,
            sea_orm::sea_query::Expr::value(start + TimeDelta::hours(1)),
        )
        .filter(sea_orm::ColumnTrait::eq(&reservation::Column::Id, cut))
        .exec(&conn)
        .await
        .unwrap();
    // Three hours of rollups on both GPUs from half an hour before: 5 % for 90 minutes, then 50 %.
    let mut rows = Vec::new();
    for gpu in [&gpus[0], &gpus[1]] {
        for minute in 0..180 {
            let util = if minute < 90 { 5.0 } else { 50.0 };
            rows.push(gpu_rollup::ActiveModel {
                gpu_id: Set(gpu.id),
                minute_ms: Set((start - TimeDelta::minutes(30 - minute)).timestamp_millis()),
                samples: Set(6),
                util_min: Set(Some(util)),
                util_avg: Set(Some(util)),
                util_max: Set(Some(util)),
                mem_min: Set(None),
                mem_avg: Set(None),
                mem_max: Set(None),
                temp_min: Set(None),
                temp_avg: Set(None),
                temp_max: Set(None),
                power_min: Set(None),
                power_avg: Set(None),
                power_max: Set(None),
            });
        }
    }
    gpu_rollup::Entity::insert_many(rows)
        .exec_without_returning(&conn)
        .await
        .unwrap();

    Migrator::up(&conn, None).await.unwrap();
    let (first, second) = (gpus[0].id, gpus[1].id);
    let usage = |key: (i64, i64)| {
        let conn = conn.clone();
        async move {
            reservation_usage::Entity::find_by_id(key)
                .one(&conn)
                .await
                .unwrap()
                .unwrap()
        }
    };
    // The whole booking: 60 idle minutes at 5 %, 60 at 50 %.
    let booked = usage((whole, first)).await;
    assert_eq!((booked.measured_minutes, booked.idle_minutes), (120, 60));
    assert!((booked.util_sum - 3300.0).abs() < 1e-9);
    // The cancelled one: its first hour only.
    let cancelled = usage((cut, second)).await;
    assert_eq!(
        (cancelled.measured_minutes, cancelled.idle_minutes),
        (60, 60)
    );
    assert!((cancelled.util_sum - 300.0).abs() < 1e-9);
    // The fleet: every rollup, by hour.
    let hours = fleet_usage_hour::Entity::find().all(&conn).await.unwrap();
    assert_eq!(hours.len(), 4, "09:30 to 12:30 touches four hours");
    assert_eq!(hours.iter().map(|h| h.measured_minutes).sum::<i64>(), 360);
    assert_eq!(hours.iter().map(|h| h.idle_minutes).sum::<i64>(), 180);
    let _ = conn.close().await;
}

async fn booking_totals_start_from_the_ledger_when_migrating(backend: Backend) {
    use berth_app::domain::ledger::{Account, TransactionKind};
    use berth_app::domain::money::Money;
    use sea_orm::ActiveValue::Set;
    // The schema before bookings kept their totals: a booking on two GPUs charged 300 and
    // refunded 100 (written in plain SQL, as that ledger did), one on a GPU never charged.
    let (_database, conn, gpus, owner) = with_a_fleet_at(backend, 17).await;
    let now = Utc::now();
    let start = Utc.with_ymd_and_hms(2026, 11, 20, 10, 0, 0).unwrap();
    let paid =
        crate::helpers::insert_past_booking(&conn, owner.id, &gpus[0], start, 2, false).await;
    reservation_gpu::Entity::insert(reservation_gpu::ActiveModel {
        reservation_id: Set(paid),
        gpu_id: Set(gpus[1].id),
        start_at: Set(start),
        end_at: Set(start + chrono::TimeDelta::hours(2)),
    })
    .exec_without_returning(&conn)
    .await
    .unwrap();
    let free =
        crate::helpers::insert_past_booking(&conn, owner.id, &gpus[2], start, 2, false).await;
    conn.execute_unprepared(&format!(
        "INSERT INTO ledger_accounts (kind, user_id, balance_minor, created_at) \
         VALUES ('wallet', {}, 800, '{}')",
        owner.id,
        now.to_rfc3339()
    ))
    .await
    .unwrap();
    assert!(
        db::ledger::create_account(&conn, Account::Revenue)
            .await
            .is_ok()
    );
    let wallet = query_i64(
        &conn,
        "SELECT id AS n FROM ledger_accounts WHERE kind = 'wallet'",
    )
    .await;
    let revenue = query_i64(
        &conn,
        "SELECT id AS n FROM ledger_accounts WHERE kind = 'revenue'",
    )
    .await;
    for (kind, amount) in [("charge", -300), ("refund", 100)] {
        conn.execute_unprepared(&format!(
            "INSERT INTO ledger_transactions (kind, user_id, reservation_id, reason, created_at) \
             VALUES ('{kind}', {}, {paid}, '', '{}')",
            owner.id,
            now.to_rfc3339()
        ))
        .await
        .unwrap();
        let transaction = query_i64(
            &conn,
            &format!("SELECT id AS n FROM ledger_transactions WHERE kind = '{kind}'"),
        )
        .await;
        conn.execute_unprepared(&format!(
            "INSERT INTO ledger_entries (transaction_id, account_id, amount_minor) \
             VALUES ({transaction}, {wallet}, {amount}), ({transaction}, {revenue}, {})",
            -amount
        ))
        .await
        .unwrap();
    }

    Migrator::up(&conn, None).await.unwrap();
    let totals = |id: i64| {
        let conn = conn.clone();
        async move {
            let row = reservation::Entity::find_by_id(id)
                .one(&conn)
                .await
                .unwrap()
                .unwrap();
            (row.gpu_count, row.charged_minor, row.refunded_minor)
        }
    };
    assert_eq!(totals(paid).await, (2, 300, 100));
    assert_eq!(totals(free).await, (1, 0, 0));
    // From now on each refund posted for a booking adds to its total, in its transaction.
    db::ledger::transfer(
        &conn,
        &db::ledger::TransactionRecord {
            kind: TransactionKind::Refund,
            user_id: Some(owner.id),
            reservation_id: Some(paid),
            reverses_id: None,
            reason: berth_app::backend::db::ledger::RecordReason::Typed("goodwill"),
            actor_id: None,
            provider: None,
            at: now,
        },
        Account::Revenue,
        Account::Wallet(owner.id),
        Money::from_minor(50),
    )
    .await
    .unwrap();
    assert_eq!(totals(paid).await, (2, 300, 150));
    let audit = db::ledger::audit(&conn).await.unwrap();
    assert!(audit.drifted_bookings.is_empty(), "{audit:?}");
    // A total that no longer equals the ledger is found.
    conn.execute_unprepared(&format!(
        "UPDATE reservations SET charged_minor = 299 WHERE id = {paid}"
    ))
    .await
    .unwrap();
    let audit = db::ledger::audit(&conn).await.unwrap();
    assert_eq!(audit.drifted_bookings, vec![paid], "{audit:?}");
    let _ = conn.close().await;
}

/// Tokens made before scopes keep working as write tokens without expiry; sessions stored under
/// plain ids are dropped (they could never be found by their hash).
async fn old_tokens_stay_write_tokens_and_old_sessions_go_when_migrating(backend: Backend) {
    use berth_app::backend::db::api_tokens::TokenCheck;
    let (_database, conn, _gpus, owner) = with_a_fleet_at(backend, 18).await;
    let now = Utc::now();
    let placeholders = |count: usize| -> String {
        (1..=count)
            .map(|n| match backend {
                Backend::Sqlite => "?".to_owned(),
                Backend::Postgres => format!("${n}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let hash = berth_app::backend::auth::tokens::hash("berth_old");
    conn.execute_raw(sea_orm::Statement::from_sql_and_values(
        conn.get_database_backend(),
        format!(
            "INSERT INTO api_tokens (user_id, name, token_hash, created_at) VALUES ({})",
            placeholders(4)
        ),
        [
            owner.id.into(),
            "old".into(),
            hash.clone().into(),
            now.into(),
        ],
    ))
    .await
    .unwrap();
    conn.execute_raw(sea_orm::Statement::from_sql_and_values(
        conn.get_database_backend(),
        format!(
            "INSERT INTO sessions (id, data, expires_at) VALUES ({})",
            placeholders(3)
        ),
        [
            "plain-session-id".into(),
            "{\"user_id\":1}".into(),
            (now + chrono::TimeDelta::days(1)).into(),
        ],
    ))
    .await
    .unwrap();

    Migrator::up(&conn, None).await.unwrap();
    assert_eq!(
        query_i64(
            &conn,
            "SELECT COUNT(*) AS n FROM api_tokens WHERE scope = 'write' AND expires_at IS NULL"
        )
        .await,
        1
    );
    assert_eq!(
        query_i64(&conn, "SELECT COUNT(*) AS n FROM sessions").await,
        0
    );
    match db::api_tokens::authenticate_token(&conn, &hash, now)
        .await
        .unwrap()
    {
        TokenCheck::Valid(user, scope) => {
            assert_eq!(user.id, owner.id);
            assert_eq!(scope, berth_app::domain::api_token::TokenScope::Write);
        }
        other => panic!("the old token still works: {other:?}"),
    }
    assert!(
        conn.execute_unprepared("UPDATE api_tokens SET scope = 'admin'")
            .await
            .is_err(),
        "ck_api_tokens_scope"
    );
    let _ = conn.close().await;
}

/// Berth's own ledger reasons become data: demo credits and SLA credits are read in the
/// wallet owner's language afterwards; reasons people typed, and older card payments, keep their
/// words.
async fn berths_ledger_reasons_become_data_when_migrating(backend: Backend) {
    use berth_app::domain::ledger::BerthReason;
    use berth_app::domain::paging::PageRequest;
    let (_database, conn, gpus, owner) = with_a_fleet_at(backend, 34).await;
    let now = Utc::now();
    let admin = owner.id.to_string();
    for (reason, by) in [
        ("XID 79: the GPU fell off the bus (set by Berth)", "NULL"),
        (
            "XID 79: the GPU fell off the bus (set by Berth)",
            admin.as_str(),
        ),
        ("driver update", "NULL"),
    ] {
        conn.execute_unprepared(&format!(
            "INSERT INTO maintenance_windows (gpu_id, start_at, end_at, reason, created_by, \
             created_at) VALUES ({}, '{}', '{}', '{reason}', {by}, '{}')",
            gpus[0].id,
            now.to_rfc3339(),
            (now + chrono::TimeDelta::hours(1)).to_rfc3339(),
            now.to_rfc3339()
        ))
        .await
        .unwrap();
    }
    let rows = [
        ("grant", "Demo credits", "'manual'", "NULL"),
        ("sla_credit", "SLA credit, incident #42", "NULL", "NULL"),
        ("grant", "Demo credits", "'manual'", admin.as_str()),
        ("grant", "Card top-up (pi_1)", "'stripe'", "NULL"),
        ("grant", "Invoice 2026-11", "'manual'", admin.as_str()),
    ];
    for (at, (kind, reason, provider, actor)) in rows.iter().enumerate() {
        conn.execute_unprepared(&format!(
            "INSERT INTO ledger_transactions (kind, user_id, reason, provider, actor_id, \
             created_at) VALUES ('{kind}', {}, '{reason}', {provider}, {actor}, '{}')",
            owner.id,
            (now - chrono::TimeDelta::minutes(10 - i64::try_from(at).unwrap())).to_rfc3339()
        ))
        .await
        .unwrap();
    }
    let wallet =
        db::ledger::account_id(&conn, berth_app::domain::ledger::Account::Wallet(owner.id))
            .await
            .unwrap();
    conn.execute_unprepared(&format!(
        "INSERT INTO ledger_entries (transaction_id, account_id, amount_minor) \
         SELECT id, {wallet}, 100 FROM ledger_transactions"
    ))
    .await
    .unwrap();

    Migrator::up(&conn, None).await.unwrap();
    let page = PageRequest::first();
    let (_, entries) = db::ledger::wallet(&conn, owner.id, &page).await.unwrap();
    let read: Vec<(String, Option<BerthReason>)> = entries
        .items
        .into_iter()
        .rev()
        .map(|e| (e.reason, e.berth_reason))
        .collect();
    assert_eq!(
        read,
        vec![
            ("Demo credits".to_owned(), Some(BerthReason::DemoCredits)),
            (
                "SLA credit, incident #42".to_owned(),
                Some(BerthReason::SlaCredit { incident: 42 })
            ),
            // Typed by a person, though in the same words.
            ("Demo credits".to_owned(), None),
            ("Card top-up (pi_1)".to_owned(), None),
            ("Invoice 2026-11".to_owned(), None),
        ]
    );
    // Only the window Berth set: an admin's, even in the same words, stays as typed.
    use berth_app::backend::entity::maintenance_window;
    use sea_orm::QueryOrder;
    let windows = maintenance_window::Entity::find()
        .order_by_asc(maintenance_window::Column::Id)
        .all(&conn)
        .await
        .unwrap();
    let codes: Vec<Option<&str>> = windows.iter().map(|w| w.reason_code.as_deref()).collect();
    assert_eq!(
        codes,
        vec![Some(r#"{"what":"fell_off_bus","xid":79}"#), None, None]
    );
    let _ = conn.close().await;
}

crate::on_both_backends!(
    berths_ledger_reasons_become_data_when_migrating,
    old_tokens_stay_write_tokens_and_old_sessions_go_when_migrating,
    booking_totals_start_from_the_ledger_when_migrating,
    usage_starts_from_the_rollups_kept_when_migrating,
    holds_get_their_reservations_window_when_migrating,
    the_ledger_survives_the_team_wallets_migration,
);

/// Ana, written with only the columns every old schema has (the entity has columns added by later
/// migrations, so the usual insert would name columns these schemas lack).
async fn user_of_old_schema(
    conn: &sea_orm::DatabaseConnection,
    now: chrono::DateTime<Utc>,
) -> berth_app::domain::user::UserSummary {
    use berth_app::backend::entity::user;
    use sea_orm::{ActiveValue::Set, ColumnTrait, QuerySelect};
    user::Entity::insert(user::ActiveModel {
        email: Set("ana@example.com".to_owned()),
        name: Set("Ana".to_owned()),
        is_platform_admin: Set(false),
        created_at: Set(now),
        updated_at: Set(now),
        ..Default::default()
    })
    .exec_without_returning(conn)
    .await
    .unwrap();
    let id: i64 = user::Entity::find()
        .select_only()
        .column(user::Column::Id)
        .filter(user::Column::Email.eq("ana@example.com"))
        .into_tuple()
        .one(conn)
        .await
        .unwrap()
        .unwrap();
    berth_app::domain::user::UserSummary {
        id,
        email: Email::parse("ana@example.com").unwrap(),
        name: "Ana".to_owned(),
        role: PlatformRole::User,
        time_zone: None,
        default_profile_id: None,
    }
}
