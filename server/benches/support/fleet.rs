//! The generated fleet the benches share: 1,000 GPUs on 125 nodes in five models, 200 users and
//! 50,000 reservations over 8 weeks (one past, seven ahead) with their GPU holds, slot load,
//! charges, refunds and usage rows, written straight into the store. Each bench uses part of it.
//! At [`Scale::Large`]: 10,000 GPUs on 1,250 nodes, 2,000 users, 500,000 reservations and 30
//! days of one-minute telemetry rollups of the 64 GPUs the week view shows.
#![allow(dead_code)]

use super::database::Backend;
use berth_app::backend::auth::tokens;
use berth_app::backend::db;
use berth_app::backend::entity::{
    fleet_usage_hour, reservation, reservation_gpu, reservation_usage,
};
use berth_app::domain::gpu::{GpuMemory, GpuStatus};
use berth_app::domain::inventory::{NewGpu, NewNode};
use berth_app::domain::money::Money;
use berth_app::domain::payment::ChargeMode;
use berth_app::domain::quota::Priority;
use berth_app::domain::reservation::PaymentStatus;
use berth_app::domain::schedule::{SLOT_MINUTES, WHOLE_GPU, Window, price_minor};
use berth_app::domain::user::{Email, NewUser, PlatformRole, TokenName, UserName};
use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sea_orm::sea_query::{Alias, Query};
use sea_orm::{
    ActiveValue::Set, ConnectionTrait, DatabaseConnection, EntityTrait, TransactionTrait,
};

/// The model that has exactly 64 GPUs: the week view shows all of them.
pub const WEEK_VIEW_MODEL: &str = "NVIDIA H200";
/// The model find-a-slot searches.
pub const SLOT_MODEL: &str = "NVIDIA H100 80GB HBM3";
pub const NODES: usize = 125;
pub const GPUS_PER_NODE: usize = 8;
pub const RESERVATIONS: usize = 50_000;
pub const USERS: usize = 200;
pub const WEEKS: i64 = 8;

/// (model, memory in MiB, price per hour in minor units, shareable, nodes)
pub const MODELS: &[(&str, u64, i64, bool, usize)] = &[
    (WEEK_VIEW_MODEL, 143_771, 449, false, 8),
    (SLOT_MODEL, 81_559, 349, false, 32),
    ("NVIDIA A100-SXM4-80GB", 81_920, 229, true, 30),
    ("NVIDIA L40S", 49_140, 129, true, 30),
    ("NVIDIA RTX A5000", 24_564, 49, true, 25),
];

/// How big a store to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scale {
    /// 1,000 GPUs, 200 users, 50,000 reservations.
    Default,
    /// 10,000 GPUs on 1,250 nodes, 2,000 users, 500,000 reservations, 30 days of rollups.
    Large,
}

impl Scale {
    /// Nodes of each model of [`MODELS`]: the week view's model keeps its 64 GPUs.
    pub fn nodes_of(self, model_index: usize) -> usize {
        match (self, model_index) {
            (_, 0) => MODELS[0].4,
            (Scale::Default, i) => MODELS[i].4,
            (Scale::Large, 1) => 320,
            (Scale::Large, 2) => 310,
            (Scale::Large, 3) => 312,
            (Scale::Large, _) => 300,
        }
    }

    pub fn nodes(self) -> usize {
        (0..MODELS.len()).map(|i| self.nodes_of(i)).sum()
    }

    pub fn reservations(self) -> usize {
        match self {
            Scale::Default => RESERVATIONS,
            Scale::Large => 10 * RESERVATIONS,
        }
    }

    pub fn users(self) -> usize {
        match self {
            Scale::Default => USERS,
            Scale::Large => 10 * USERS,
        }
    }
}

/// Users who book in the contention bench, each with a token and credits of their own.
pub const BOOKERS: usize = 200;

pub fn slot_ceil(at: DateTime<Utc>) -> DateTime<Utc> {
    let floor = at
        .duration_trunc(TimeDelta::minutes(SLOT_MINUTES))
        .expect("on the grid");
    if floor == at {
        at
    } else {
        floor + TimeDelta::minutes(SLOT_MINUTES)
    }
}

/// What [`generate`] made.
pub struct Store {
    pub nodes: usize,
    pub gpus: usize,
    pub reservations: usize,
    pub holds: usize,
    pub slot_rows: usize,
    /// GPUs that may be booked whole (all of them, here).
    pub gpu_ids: Vec<i64>,
    /// An API token of a user who books.
    pub token: String,
    /// API tokens of [`BOOKERS`] other users with credits, one per concurrent client.
    pub booker_tokens: Vec<String>,
    /// One-minute telemetry rollups written.
    pub rollups: u64,
    /// An API token of a platform admin (the fleet report).
    pub admin_token: String,
    /// The first day of the dataset (reports cover a month from it).
    pub first_day: chrono::NaiveDate,
    /// Where the generated bookings end: only the benches' own bookings come after.
    pub fleet_end: DateTime<Utc>,
    /// Ledger transactions written (charges and refunds).
    pub ledger_transactions: usize,
    /// Reservation usage rows written.
    pub usage_rows: usize,
}

/// Fills the store: the fleet, users, and reservations over 8 weeks (one in the past, seven
/// ahead), capacity kept by construction: each GPU's bookings follow one another with gaps, a
/// multi-GPU booking starts when all of its GPUs are free, and fractional bookings on shareable
/// models keep a GPU to themselves. About 4 % are cancelled. Deterministic (fixed seed).
pub async fn generate(conn: &DatabaseConnection, backend: Backend) -> Store {
    generate_at(conn, backend, Scale::Default).await
}

/// [`generate`] at `scale`.
pub async fn generate_at(conn: &DatabaseConnection, backend: Backend, scale: Scale) -> Store {
    let mut rng = StdRng::seed_from_u64(2026);
    let now = Utc::now();
    let fleet_start = slot_ceil(now) - TimeDelta::weeks(1);
    let fleet_end = fleet_start + TimeDelta::weeks(WEEKS);
    if backend == Backend::Postgres {
        conn.execute_unprepared("SET synchronous_commit = off")
            .await
            .expect("synchronous_commit");
    }

    let mut users = Vec::with_capacity(scale.users());
    for n in 0..scale.users() {
        let user = db::users::upsert_user(
            conn,
            &NewUser {
                email: Email::parse(&format!("bench-user-{n}@berth.invalid")).expect("email"),
                name: UserName::parse(&format!("Bench user {n}")).expect("name"),
                role: PlatformRole::User,
            },
            now,
        )
        .await
        .expect("user");
        users.push(user.id);
    }
    // The booking users pay for what they book (the benchmark books with a charge).
    let token = funded_token(conn, 0, users[0], now).await;
    let mut booker_tokens = Vec::with_capacity(BOOKERS);
    for (n, user) in users.iter().enumerate().skip(1).take(BOOKERS) {
        booker_tokens.push(funded_token(conn, n, *user, now).await);
    }

    let admin = db::users::upsert_user(
        conn,
        &NewUser {
            email: Email::parse("bench-admin@berth.invalid").expect("email"),
            name: UserName::parse("Bench admin").expect("name"),
            role: PlatformRole::PlatformAdmin,
        },
        now,
    )
    .await
    .expect("admin");
    let (admin_token, hash) = tokens::generate();
    db::api_tokens::insert_token(
        conn,
        admin.id,
        &TokenName::parse("bench").expect("name"),
        &hash,
        now,
    )
    .await
    .expect("token");

    // Nodes and GPUs: (node id, gpu ids, model index).
    let mut nodes: Vec<(i64, Vec<i64>, usize)> = Vec::new();
    let mut node_number = 0usize;
    for (model_index, &(model, memory_mib, price, shareable, _)) in MODELS.iter().enumerate() {
        for _ in 0..scale.nodes_of(model_index) {
            let gpus: Vec<NewGpu> = (0..GPUS_PER_NODE)
                .map(|index| NewGpu {
                    device_index: index as u32,
                    uuid: format!("GPU-be000000-0000-4000-8000-{node_number:04x}{index:08x}"),
                    model: model.to_owned(),
                    memory: GpuMemory::from_mib(memory_mib),
                    status: GpuStatus::Active,
                    shareable,
                    hourly_price: Money::from_minor(price),
                })
                .collect();
            let node = NewNode {
                name: format!("bench-{node_number:04}"),
                hostname: format!("bench-{node_number:04}.berth.invalid"),
                is_demo: false,
            };
            let node_id = db::inventory::insert_node_with_gpus(conn, &node, &gpus, now)
                .await
                .expect("node");
            nodes.push((node_id, Vec::new(), model_index));
            node_number += 1;
        }
    }
    // The GPU ids of each node, in device order.
    let mut gpu_ids = Vec::new();
    let node_index: std::collections::HashMap<i64, usize> = nodes
        .iter()
        .enumerate()
        .map(|(index, (id, _, _))| (*id, index))
        .collect();
    for gpu in berth_app::backend::entity::gpu::Entity::find()
        .all(conn)
        .await
        .expect("gpus")
    {
        if let Some(index) = node_index.get(&gpu.node_id) {
            nodes[*index].1.push(gpu.id);
            gpu_ids.push(gpu.id);
        }
    }
    for node in &mut nodes {
        node.1.sort_unstable();
    }

    let per_node = scale.reservations() / nodes.len();
    let mut rows: Vec<reservation::ActiveModel> = Vec::with_capacity(scale.reservations());
    // PostgreSQL expands the slot rows itself from the GPU holds (below); SQLite gets them.
    let client_slots = backend == Backend::Sqlite;
    let mut slot_count = 0usize;
    let mut holds: Vec<(i64, i64, DateTime<Utc>, DateTime<Utc>)> = Vec::new();
    let mut slots: Vec<(i64, DateTime<Utc>, i16)> = Vec::new();
    // Per reservation: id, owner, price, cancelled, created.
    let mut money: Vec<(i64, i64, i64, bool, DateTime<Utc>)> = Vec::new();
    let mut next_id: i64 = 1;
    for (node_id, node_gpus, model_index) in &nodes {
        let (model, _, price, shareable, _) = MODELS[*model_index];
        let mut free_at: Vec<DateTime<Utc>> = (0..node_gpus.len())
            .map(|_| fleet_start + slots_of(rng.random_range(0..48)))
            .collect();
        for _ in 0..per_node {
            let count = match rng.random_range(0..100) {
                0..60 => 1,
                60..80 => 2,
                80..95 => 4,
                _ => 8,
            };
            // The `count` GPUs that free up first.
            let mut order: Vec<usize> = (0..node_gpus.len()).collect();
            order.sort_by_key(|i| free_at[*i]);
            let chosen = &order[..count];
            let start = chosen.iter().map(|i| free_at[*i]).max().expect("a GPU");
            let end = start + slots_of(rng.random_range(4..=48));
            if end > fleet_end {
                break;
            }
            let quarters: u8 = if shareable && count == 1 && rng.random_bool(0.25) {
                if rng.random_bool(0.5) { 2 } else { 1 }
            } else {
                WHOLE_GPU
            };
            let cancelled = rng.random_bool(0.04);
            let window = Window::new(start, end).expect("a window on the grid");
            let id = next_id;
            next_id += 1;
            let owner = users[rng.random_range(0..users.len())];
            let price = price_minor(price, quarters, &window) * count as i64;
            money.push((
                id,
                owner,
                price,
                cancelled,
                (start - TimeDelta::days(2)).min(now),
            ));
            rows.push(reservation::ActiveModel {
                id: Set(id),
                owner_id: Set(owner),
                node_id: Set(*node_id),
                model: Set(model.to_owned()),
                quarters: Set(i16::from(quarters)),
                start_at: Set(start),
                end_at: Set(end),
                status: Set(if cancelled {
                    reservation::Status::Cancelled
                } else {
                    reservation::Status::Confirmed
                }),
                price_minor: Set(price),
                created_at: Set((start - TimeDelta::days(2)).min(now)),
                cancelled_at: Set(cancelled.then_some((start - TimeDelta::days(1)).min(now))),
                cancelled_by: Set(None),
                // Charged when made (the ledger rows are written below), refunded if cancelled.
                payment_status: Set(PaymentStatus::Paid),
                charge_mode: Set(ChargeMode::AtBooking),
                charge_at: Set(None),
                released_reason: Set(None),
                team_id: Set(None),
                priority: Set(Priority::Development),
                preemptible: Set(false),
                approval_expires_at: Set(None),
                displaced_offer: Set(None),
                // What the ledger rows below hold: a charge of the price, refunded in full if
                // cancelled.
                gpu_count: Set(i32::try_from(count).expect("a few GPUs")),
                charged_minor: Set(price),
                refunded_minor: Set(if cancelled { price } else { 0 }),
                calendar_sequence: Set(i32::from(cancelled)),
                keep_running: Set(false),
                profile_version_id: Set(None),
                moved_from_id: Set(None),
                move_cause: Set(None),
                moved_at: Set(None),
                idle_since: Set(None),
                idle_warnings: Set(0),
                idle_snoozed_at: Set(None),
                reclaimed_until: Set(None),
                reclaim_refund_minor: Set(0),
                sla_credit_minor: Set(0),
                start_early: Set(false),
                card_id: Set(None),
                early_from: Set(None),
            });
            for i in chosen {
                holds.push((id, node_gpus[*i], start, end));
                if !cancelled {
                    let mut slot = start;
                    while slot < end {
                        if client_slots {
                            slots.push((node_gpus[*i], slot, i16::from(quarters)));
                        }
                        slot_count += 1;
                        slot += slots_of(1);
                    }
                }
                free_at[*i] = end + slots_of(rng.random_range(0..=24));
            }
        }
    }
    let cancelled_ids: std::collections::HashSet<i64> =
        money.iter().filter(|m| m.3).map(|m| m.0).collect();
    let mut usage: Vec<(i64, i64, i64, i64, f64)> = Vec::new();
    for (reservation_id, gpu_id, start, end) in &holds {
        if cancelled_ids.contains(reservation_id) || *start >= now {
            continue;
        }
        let measured = ((*end).min(now) - *start).num_minutes();
        let average: f64 = rng.random_range(0.0..100.0);
        let idle = if average < 20.0 {
            measured
        } else {
            measured * rng.random_range(0..30) / 100
        };
        usage.push((
            *reservation_id,
            *gpu_id,
            measured,
            idle,
            average * measured as f64,
        ));
    }
    let store = Store {
        nodes: nodes.len(),
        gpus: gpu_ids.len(),
        reservations: rows.len(),
        holds: holds.len(),
        slot_rows: slot_count,
        gpu_ids,
        token,
        booker_tokens,
        rollups: 0,
        admin_token,
        first_day: fleet_start.date_naive(),
        fleet_end,
        ledger_transactions: money.len() + cancelled_ids.len(),
        usage_rows: usage.len(),
    };

    let txn = conn.begin().await.expect("transaction");
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        // 500 rows of 40 columns stay under SQLite's 32,766 bound variables.
        let batch: Vec<reservation::ActiveModel> = rows.by_ref().take(500).collect();
        reservation::Entity::insert_many(batch)
            .exec_without_returning(&txn)
            .await
            .expect("reservations");
    }
    for batch in holds.chunks(5_000) {
        reservation_gpu::Entity::insert_many(batch.iter().map(
            |(reservation_id, gpu_id, start, end)| reservation_gpu::ActiveModel {
                reservation_id: Set(*reservation_id),
                gpu_id: Set(*gpu_id),
                start_at: Set(*start),
                end_at: Set(*end),
            },
        ))
        .exec_without_returning(&txn)
        .await
        .expect("reservation GPUs");
    }
    if !client_slots {
        txn.execute_unprepared(
            "INSERT INTO gpu_slot_load (gpu_id, slot_start, quarters) \
             SELECT rg.gpu_id, s.slot, r.quarters FROM reservation_gpus rg \
             JOIN reservations r ON r.id = rg.reservation_id \
             CROSS JOIN LATERAL generate_series(rg.start_at, rg.end_at - interval '15 minutes', \
             interval '15 minutes') AS s(slot) WHERE r.status = 'confirmed'",
        )
        .await
        .expect("slot load");
    }
    for batch in slots.chunks(5_000) {
        let mut insert = Query::insert();
        insert.into_table(Alias::new("gpu_slot_load")).columns([
            Alias::new("gpu_id"),
            Alias::new("slot_start"),
            Alias::new("quarters"),
        ]);
        for (gpu_id, slot, quarters) in batch {
            insert.values_panic([(*gpu_id).into(), (*slot).into(), (*quarters).into()]);
        }
        txn.execute(&insert).await.expect("slot load");
    }
    write_ledger(&txn, &money, now).await;
    for batch in usage.chunks(5_000) {
        reservation_usage::Entity::insert_many(batch.iter().map(
            |(reservation_id, gpu_id, measured, idle, util_sum)| reservation_usage::ActiveModel {
                reservation_id: Set(*reservation_id),
                gpu_id: Set(*gpu_id),
                measured_minutes: Set(*measured),
                idle_minutes: Set(*idle),
                util_sum: Set(*util_sum),
            },
        ))
        .exec_without_returning(&txn)
        .await
        .expect("reservation usage");
    }
    // The fleet's hours from the first day until now: every GPU measured every minute.
    let mut hours = Vec::new();
    let mut hour = fleet_start
        .duration_trunc(TimeDelta::hours(1))
        .expect("hour");
    while hour < now {
        let measured = (store.gpus * 60) as i64;
        let idle = measured * rng.random_range(20..60) / 100;
        hours.push(fleet_usage_hour::ActiveModel {
            hour_ms: Set(hour.timestamp_millis()),
            measured_minutes: Set(measured),
            idle_minutes: Set(idle),
            util_sum: Set(measured as f64 * rng.random_range(20.0..70.0)),
        });
        hour += TimeDelta::hours(1);
    }
    for batch in hours.chunks(1_000) {
        fleet_usage_hour::Entity::insert_many(batch.to_vec())
            .exec_without_returning(&txn)
            .await
            .expect("fleet hours");
    }
    if backend == Backend::Postgres {
        for (table, column) in [
            ("reservations", "id"),
            ("ledger_transactions", "id"),
            ("ledger_entries", "id"),
        ] {
            txn.execute_unprepared(&format!(
                "SELECT setval(pg_get_serial_sequence('{table}', '{column}'), (SELECT MAX({column}) FROM {table}))"
            ))
            .await
            .expect("sequence");
        }
    }
    txn.commit().await.expect("commit");
    let mut store = store;
    if scale == Scale::Large {
        store.rollups = write_rollups(conn, backend, now).await;
    }
    // Fresh statistics (and on PostgreSQL a visibility map), as autovacuum keeps them in a
    // long-running store.
    let maintenance = if conn.get_database_backend() == sea_orm::DbBackend::Postgres {
        "VACUUM ANALYZE"
    } else {
        "ANALYZE"
    };
    conn.execute_unprepared(maintenance).await.expect("analyze");
    // And the generated rows written out now, not by a checkpoint in the middle of a measure
    // (a large store is gigabytes of dirty pages): PostgreSQL's `CHECKPOINT` (a superuser's or
    // `pg_checkpoint`'s; skipped with a warning otherwise), SQLite's write-ahead log folded in.
    let checkpoint = if conn.get_database_backend() == sea_orm::DbBackend::Postgres {
        "CHECKPOINT"
    } else {
        "PRAGMA wal_checkpoint(TRUNCATE)"
    };
    if let Err(err) = conn.execute_unprepared(checkpoint).await {
        eprintln!("warning: {checkpoint} after generating the store failed: {err}");
    }
    store
}

/// Gives bench user `n` (id `user`) the most credits a grant may give, and an API token.
async fn funded_token(
    conn: &DatabaseConnection,
    n: usize,
    user: i64,
    now: DateTime<Utc>,
) -> String {
    berth_app::backend::ledger::change_credits(
        conn,
        &berth_app::domain::money::Currency::new("USD", "$", 2).expect("USD"),
        berth_app::backend::ledger::CreditRequest {
            actor_id: None,
            wallet: berth_app::backend::ledger::CreditWallet::User(&format!(
                "bench-user-{n}@berth.invalid"
            )),
            amount_minor: berth_app::domain::ledger::MAX_CREDIT_MINOR,
            reason: "bench credits",
            idempotency_key: None,
            provider: &berth_app::backend::ledger::ManualProvider,
        },
        now,
    )
    .await
    .expect("credits");
    let (token, hash) = tokens::generate();
    db::api_tokens::insert_token(
        conn,
        user,
        &TokenName::parse("bench").expect("name"),
        &hash,
        now,
    )
    .await
    .expect("token");
    token
}

/// 30 days of one-minute telemetry rollups of the week view's 64 GPUs, up to `now`, a day per
/// statement, written by the store from a series of minutes.
async fn write_rollups(conn: &DatabaseConnection, backend: Backend, now: DateTime<Utc>) -> u64 {
    let minutes: i64 = 30 * 1_440 - 180;
    let first_ms = now.timestamp_millis() - minutes * 60_000;
    let mut written = 0;
    let mut from = 0;
    while from < minutes {
        let to = (from + 1_440).min(minutes) - 1;
        let series = match backend {
            Backend::Sqlite => format!(
                "(WITH RECURSIVE s(k) AS (SELECT {from} UNION ALL SELECT k + 1 FROM s WHERE k < {to}) \
                 SELECT k FROM s) AS m"
            ),
            Backend::Postgres => format!("generate_series({from}::bigint, {to}::bigint) AS m(k)"),
        };
        let sql = format!(
            "INSERT INTO gpu_rollups (gpu_id, minute_ms, samples, util_min, util_avg, util_max, \
             temp_min, temp_avg, temp_max) \
             SELECT g.id, {first_ms} + m.k * 60000, 12, ((g.id + m.k) % 97) * 0.5, \
             ((g.id + m.k) % 97) * 1.0, ((g.id + m.k) % 97) + 3.0, 40.0, 55.0, 61.0 \
             FROM {series} CROSS JOIN gpus g WHERE g.model = '{WEEK_VIEW_MODEL}'"
        );
        written += conn
            .execute_unprepared(&sql)
            .await
            .expect("rollups")
            .rows_affected();
        from = to + 1;
    }
    written
}

/// A charge for every reservation (the owner's wallet to revenue) and a full refund for the
/// cancelled ones, as the booking path would have posted them.
async fn write_ledger(
    txn: &sea_orm::DatabaseTransaction,
    money: &[(i64, i64, i64, bool, DateTime<Utc>)],
    now: DateTime<Utc>,
) {
    use berth_app::backend::entity::{ledger_entry, ledger_transaction};
    use berth_app::domain::ledger::Account;
    let revenue = db::ledger::account_id(txn, Account::Revenue)
        .await
        .expect("revenue");
    let mut wallets = std::collections::HashMap::new();
    for (_, owner, ..) in money {
        if !wallets.contains_key(owner) {
            let id = db::ledger::account_id(txn, Account::Wallet(*owner))
                .await
                .expect("wallet");
            wallets.insert(*owner, id);
        }
    }
    let max = |table: &'static str| async move {
        txn.query_one_raw(sea_orm::Statement::from_string(
            txn.get_database_backend(),
            format!("SELECT COALESCE(MAX(id), 0) FROM {table}"),
        ))
        .await
        .expect("max id")
        .expect("a row")
        .try_get_by_index::<i64>(0)
        .expect("id")
    };
    let mut transaction_id = max("ledger_transactions").await;
    let mut entry_id = max("ledger_entries").await;
    let mut transactions = Vec::new();
    let mut entries = Vec::new();
    // Each owner was granted what their kept bookings cost, before the first of them.
    let funding = db::ledger::account_id(txn, Account::Funding)
        .await
        .expect("funding");
    let mut granted: std::collections::BTreeMap<i64, i64> = std::collections::BTreeMap::new();
    for (_, owner, price, cancelled, _) in money {
        if !cancelled {
            *granted.entry(*owner).or_default() += price;
        }
    }
    let granted_at = money.iter().map(|m| m.4).min().unwrap_or(now) - TimeDelta::days(1);
    for (owner, amount) in granted {
        transaction_id += 1;
        transactions.push(ledger_transaction::ActiveModel {
            id: Set(transaction_id),
            kind: Set("grant".to_owned()),
            user_id: Set(Some(owner)),
            reservation_id: Set(None),
            reverses_id: Set(None),
            reason: Set("bench credits".to_owned()),
            reason_code: Set(None),
            actor_id: Set(None),
            provider: Set(None),
            created_at: Set(granted_at),
        });
        for (account, amount) in [(wallets[&owner], amount), (funding, -amount)] {
            entry_id += 1;
            entries.push(ledger_entry::ActiveModel {
                id: Set(entry_id),
                transaction_id: Set(transaction_id),
                account_id: Set(account),
                amount_minor: Set(amount),
            });
        }
    }
    for (reservation_id, owner, price, cancelled, created) in money {
        let wallet = wallets[owner];
        let mut post = |kind: &str, amount: i64, at: DateTime<Utc>, reverses: Option<i64>| {
            transaction_id += 1;
            transactions.push(ledger_transaction::ActiveModel {
                id: Set(transaction_id),
                kind: Set(kind.to_owned()),
                user_id: Set(Some(*owner)),
                reservation_id: Set(Some(*reservation_id)),
                reverses_id: Set(reverses),
                reason: Set(String::new()),
                reason_code: Set(None),
                actor_id: Set(None),
                provider: Set(None),
                created_at: Set(at),
            });
            for (account, amount) in [(wallet, -amount), (revenue, amount)] {
                entry_id += 1;
                entries.push(ledger_entry::ActiveModel {
                    id: Set(entry_id),
                    transaction_id: Set(transaction_id),
                    account_id: Set(account),
                    amount_minor: Set(amount),
                });
            }
            transaction_id
        };
        let charge = post("charge", *price, *created, None);
        if *cancelled {
            post(
                "refund",
                -*price,
                (*created + TimeDelta::hours(1)).min(now),
                Some(charge),
            );
        }
    }
    for batch in transactions.chunks(2_000) {
        ledger_transaction::Entity::insert_many(batch.to_vec())
            .exec_without_returning(txn)
            .await
            .expect("ledger transactions");
    }
    for batch in entries.chunks(5_000) {
        ledger_entry::Entity::insert_many(batch.to_vec())
            .exec_without_returning(txn)
            .await
            .expect("ledger entries");
    }
    // The accounts' cached balances, as the posting path keeps them.
    txn.execute_unprepared(
        "UPDATE ledger_accounts SET balance_minor = (SELECT COALESCE(SUM(e.amount_minor), 0) \
         FROM ledger_entries e WHERE e.account_id = ledger_accounts.id)",
    )
    .await
    .expect("balances");
}

/// The body of a booking of one whole GPU over `[start, end)`.
pub fn whole_gpu(gpu: i64, start: DateTime<Utc>, end: DateTime<Utc>) -> serde_json::Value {
    serde_json::json!({
        "gpu_ids": [gpu],
        "share": 1,
        "start": start.to_rfc3339(),
        "end": end.to_rfc3339(),
    })
}

pub fn slots_of(n: i64) -> TimeDelta {
    TimeDelta::minutes(SLOT_MINUTES * n)
}
