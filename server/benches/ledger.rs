//! Ledger benchmark: postings per second with 32 concurrent clients, on SQLite and PostgreSQL,
//! through the ledger service the API uses (`server::ledger::change_credits`: validate, find the
//! user, post a balanced transaction with the wallet's guarded update, commit).
//!
//! ```sh
//! cargo bench -p berth-server --bench ledger                      # both stores
//! cargo bench -p berth-server --bench ledger -- --backend sqlite --postings 200
//! ```
//!
//! Two loads per store: each client posting to its own wallet (no two postings wait on one
//! row), and all clients posting to four shared wallets (grants and deductions queue on the
//! wallets' rows). Every run ends with an audit of the books (entries sum to zero per
//! transaction and in all, cached balances equal their entries, no wallet below zero).

#[path = "support/database.rs"]
mod database;

use berth_app::backend::db;
use berth_app::backend::ledger::{self, CreditRequest};
use berth_app::domain::money::Currency;
use berth_app::domain::user::{Email, NewUser, PlatformRole, UserName};
use chrono::Utc;
use database::{Backend, BenchDatabase, Stores};
use sea_orm::DatabaseConnection;
use std::time::Instant;

const CLIENTS: usize = 32;

/// Options (after `cargo bench -p berth-server --bench ledger --`).
#[derive(clap::Parser)]
struct Options {
    /// The stores to measure.
    #[arg(long, value_enum, default_value = "both")]
    backend: Stores,
    /// Postings per client and load.
    #[arg(long, default_value_t = 500)]
    postings: usize,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0 * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// `CLIENTS` tasks, each making `postings` grants and deductions on the wallets `wallet_of`
/// picks; prints postings per second and latency.
async fn load(
    conn: &DatabaseConnection,
    what: &str,
    postings: usize,
    wallet_of: fn(usize, usize) -> usize,
    emails: &[String],
) {
    let currency = Currency::new("USD", "$", 2).expect("USD");
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..CLIENTS {
        let conn = conn.clone();
        let currency = currency.clone();
        let emails = emails.to_vec();
        tasks.spawn(async move {
            let mut latencies = Vec::with_capacity(postings);
            let mut refused = 0usize;
            for n in 0..postings {
                let email = &emails[wallet_of(client, n)];
                // Grants of 300 and deductions of 200: wallets grow, deductions succeed.
                let amount = if n % 2 == 0 { 300 } else { -200 };
                let begun = Instant::now();
                let result = ledger::change_credits(
                    &conn,
                    &currency,
                    CreditRequest {
                        actor_id: None,
                        wallet: berth_app::backend::ledger::CreditWallet::User(email),
                        amount_minor: amount,
                        reason: "bench",
                        idempotency_key: None,
                        provider: &berth_app::backend::ledger::ManualProvider,
                    },
                    Utc::now(),
                )
                .await;
                latencies.push(begun.elapsed().as_secs_f64() * 1000.0);
                if result.is_err() {
                    refused += 1;
                }
            }
            (latencies, refused)
        });
    }
    let mut latencies = Vec::new();
    let mut refused = 0;
    for (mut client, client_refused) in tasks.join_all().await {
        latencies.append(&mut client);
        refused += client_refused;
    }
    let seconds = started.elapsed().as_secs_f64();
    latencies.sort_by(f64::total_cmp);
    println!(
        "| {what} | {:.0} postings/s | p50 {:.2} ms | p99 {:.2} ms | n={} | refused {refused} |",
        latencies.len() as f64 / seconds,
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        latencies.len(),
    );
}

async fn run(backend: Backend, postings: usize) {
    let database = BenchDatabase::create(backend).await;
    let conn = db::connect(&database.url).await.expect("connect");
    db::migrate(&conn).await.expect("migrate");
    let mut emails = Vec::new();
    for n in 0..CLIENTS {
        let email = format!("ledger-bench-{n}@berth.invalid");
        db::users::upsert_user(
            &conn,
            &NewUser {
                email: Email::parse(&email).expect("email"),
                name: UserName::parse(&format!("Bench {n}")).expect("name"),
                role: PlatformRole::User,
            },
            Utc::now(),
        )
        .await
        .expect("user");
        emails.push(email);
    }
    println!("\n#### {}\n", backend.name());
    println!("| Load ({CLIENTS} clients) | Throughput | Latency p50 | p99 | Postings | Refused |");
    println!("|---|---|---|---|---|---|");
    load(
        &conn,
        "own wallet each",
        postings,
        |client, _| client,
        &emails,
    )
    .await;
    load(
        &conn,
        "four shared wallets",
        postings,
        |client, n| (client + n) % 4,
        &emails,
    )
    .await;
    let audit = db::ledger::audit(&conn).await.expect("audit");
    println!(
        "\nAudit: {} transactions, entries sum to {}, clean: {}",
        audit.transactions,
        audit.total_minor,
        audit.is_clean()
    );
    assert!(audit.is_clean(), "{audit:?}");
    let _ = conn.close().await;
    database.drop_database().await;
}

#[tokio::main]
async fn main() {
    let options = <Options as clap::Parser>::parse();
    for backend in options.backend.backends() {
        run(backend, options.postings).await;
    }
}
