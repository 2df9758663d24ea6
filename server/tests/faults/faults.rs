//! Faults with real processes, as production meets them: a replica killed with SIGKILL under
//! load behind the proxy (`deploy/Caddyfile`), PostgreSQL stopped and started under load, the
//! embedded SQLite database through `kill -9` mid-booking, and a PostgreSQL backup restored with
//! `pg_dump`/`pg_restore`. Replicas run `berth serve` with `deploy/berth.env.example`'s settings.
//!
//! Clients behave as the README asks API clients to: every booking carries an `Idempotency-Key`,
//! and a request that got no answer (a cut connection, the proxy's 502/503/504, a 5xx) is sent
//! again with the same key until it gets one.

use crate::helpers::*;
use crate::services::{Caddy, PrivatePostgres, restart};
use berth_app::backend::entity::{gpu, idempotency_key, reservation};
use berth_app::domain::gpu::GpuStatus;
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{ColumnTrait, Database, DatabaseConnection, EntityTrait, QueryFilter};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The settings of a replica: the example environment file, with this test's database, data
/// directory, site and address, the demo fleet to book, the development sign-in for the
/// session check, no mail relay, and a small sign-in allowance to see whose address counts.
fn replica_env(database_url: &str, dir: &Path, public_url: &str) -> Vec<(String, String)> {
    with_overrides(
        &environment_file(&deploy_file("berth.env.example")),
        &[
            ("BERTH_DATABASE_URL", database_url.to_owned()),
            ("BERTH_DATA_DIR", dir.display().to_string()),
            (
                "BERTH_SITE_ROOT",
                repo_root().join("target/site").display().to_string(),
            ),
            ("BERTH_PUBLIC_URL", public_url.to_owned()),
            ("BERTH_DEMO", "true".to_owned()),
            ("BERTH_DEMO_BOOKINGS", "false".to_owned()),
            ("BERTH_DEV_SIGN_IN", "true".to_owned()),
            ("BERTH_LOCAL_AGENT", "simulated".to_owned()),
            ("BERTH_SIGN_IN_RATE_PER_MINUTE", "5".to_owned()),
            ("BERTH_LOG", "warn".to_owned()),
        ],
        &["BERTH_SMTP_URL", "BERTH_MAIL_FROM"],
    )
}

/// One fault test at a time: each one loads both cores by itself.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What one request finally got, and how many times it was sent.
#[derive(Debug, Clone)]
struct Answered {
    status: u16,
    body: Value,
    tries: u32,
}

/// Sends the request `build` makes until it gets an answer: not a cut connection or a timeout,
/// not a 5xx (the proxy's 502/503/504 for a replica that died, the portal's 500/503 while its
/// database is away). Gives up after 90 s.
async fn until_answered(build: impl Fn() -> reqwest::RequestBuilder) -> Answered {
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut tries = 0;
    loop {
        tries += 1;
        if let Ok(response) = build().send().await {
            let status = response.status().as_u16();
            if status < 500
                && let Ok(bytes) = response.bytes().await
            {
                let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                return Answered {
                    status,
                    body,
                    tries,
                };
            }
        }
        assert!(
            Instant::now() < deadline,
            "no answer in 90 s ({tries} tries)"
        );
        tokio::time::sleep(Duration::from_millis(50 * u64::from(tries.min(10)))).await;
    }
}

/// What the clients saw.
#[derive(Debug, Default)]
struct Seen {
    /// Bookings answered 201: (user's token index, key) → reservation id.
    booked: BTreeMap<(usize, String), i64>,
    /// Of those, the ones that took more than one try (the first answer was lost).
    retried: usize,
    /// Bookings refused with 409 (another client holds the slot).
    refused: usize,
    /// Reservations whose cancellation was answered.
    cancelled: BTreeSet<i64>,
}

/// One client's plan: `ops` bookings of one hour, on its own GPU and hours, except that every
/// tenth client's first booking is the same hour of the same GPU (one of them gets it).
struct Plan {
    gpus: Vec<i64>,
    base: DateTime<Utc>,
    clients: usize,
    ops: usize,
}

impl Plan {
    fn window(&self, client: usize, op: usize) -> (i64, DateTime<Utc>) {
        if client.is_multiple_of(10) && op == 0 {
            return (self.gpus[0], self.base - TimeDelta::hours(3));
        }
        let gpu = self.gpus[client % self.gpus.len()];
        let row = client / self.gpus.len();
        let hour = i64::try_from(row * self.ops + op).unwrap();
        (gpu, self.base + TimeDelta::hours(hour))
    }
}

/// Runs `plan` with `clients` tasks against `base_url` with `http`, user `tokens[client %
/// tokens.len()]`; odd bookings are cancelled again. `done` counts answered requests.
async fn run_load(
    http: reqwest::Client,
    base_url: String,
    tokens: Arc<Vec<String>>,
    plan: Arc<Plan>,
    done: Arc<AtomicUsize>,
) -> Seen {
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..plan.clients {
        let (http, base_url, tokens, plan, done) = (
            http.clone(),
            base_url.clone(),
            tokens.clone(),
            plan.clone(),
            done.clone(),
        );
        tasks.spawn(async move {
            let mut seen = Seen::default();
            let who = client % tokens.len();
            let token = &tokens[who];
            for op in 0..plan.ops {
                let (gpu, start) = plan.window(client, op);
                let key = format!("client-{client}-op-{op}");
                let body = json!({
                    "gpu_ids": [gpu],
                    "start": start.to_rfc3339(),
                    "end": (start + TimeDelta::hours(1)).to_rfc3339(),
                });
                let url = format!("{base_url}/api/v1/reservations");
                let answer = until_answered(|| {
                    http.post(&url)
                        .bearer_auth(token)
                        .header("Idempotency-Key", &key)
                        .json(&body)
                })
                .await;
                done.fetch_add(1, Ordering::Relaxed);
                match answer.status {
                    201 => {
                        let id = answer.body["id"].as_i64().expect("the booking's id");
                        seen.booked.insert((who, key), id);
                        seen.retried += usize::from(answer.tries > 1);
                        if op % 2 == 1 {
                            let url = format!("{base_url}/api/v1/reservations/{id}");
                            let cancel =
                                until_answered(|| http.delete(&url).bearer_auth(token)).await;
                            done.fetch_add(1, Ordering::Relaxed);
                            // A retried cancellation may find its first try done.
                            assert!(
                                cancel.status == 200 || (cancel.status == 409 && cancel.tries > 1),
                                "cancel {id}: {cancel:?}"
                            );
                            seen.cancelled.insert(id);
                        }
                    }
                    409 => seen.refused += 1,
                    _ => panic!("booking {key}: {answer:?}"),
                }
            }
            seen
        });
    }
    let mut all = Seen::default();
    for seen in tasks.join_all().await {
        all.booked.extend(seen.booked);
        all.retried += seen.retried;
        all.refused += seen.refused;
        all.cancelled.extend(seen.cancelled);
    }
    all
}

/// Users with credits and API tokens, written to the store directly.
async fn users(db: &DatabaseConnection, count: usize) -> Arc<Vec<String>> {
    let mut tokens = Vec::with_capacity(count);
    for n in 0..count {
        tokens.push(user_token_on(db, &format!("load-{n}@example.org"), PlatformRole::User).await);
    }
    Arc::new(tokens)
}

/// The demo fleet's active GPUs.
async fn fleet(db: &DatabaseConnection) -> Vec<i64> {
    let mut ids: Vec<i64> = gpu::Entity::find()
        .filter(gpu::Column::Status.eq(GpuStatus::Active))
        .all(db)
        .await
        .unwrap()
        .into_iter()
        .map(|g| g.id)
        .collect();
    ids.sort_unstable();
    assert!(ids.len() >= 8, "the demo fleet: {ids:?}");
    ids
}

/// Checks the store against what the clients saw: every acknowledged booking is there once, in
/// the state its last acknowledged request left it; no key booked twice; nothing booked that no
/// client was told about; no slot over capacity; the ledger balances.
async fn assert_store_matches(db: &DatabaseConnection, seen: &Seen) {
    let rows: BTreeMap<i64, reservation::Model> = reservation::Entity::find()
        .all(db)
        .await
        .unwrap()
        .into_iter()
        .map(|row| (row.id, row))
        .collect();
    let ids: BTreeSet<i64> = seen.booked.values().copied().collect();
    assert_eq!(ids.len(), seen.booked.len(), "two keys answered one id");
    assert_eq!(
        rows.keys().copied().collect::<BTreeSet<_>>(),
        ids,
        "the store holds exactly the acknowledged bookings"
    );
    for id in &ids {
        let expected = if seen.cancelled.contains(id) {
            reservation::Status::Cancelled
        } else {
            reservation::Status::Confirmed
        };
        assert_eq!(rows[id].status, expected, "reservation {id}");
    }
    // One stored answer per key, naming the id its client got.
    let keys = idempotency_key::Entity::find().all(db).await.unwrap();
    let answered: BTreeMap<&str, i64> = keys
        .iter()
        .filter(|k| k.response_status == 201)
        .map(|k| {
            let body: Value = serde_json::from_str(&k.response_body).unwrap();
            (k.key.as_str(), body["id"].as_i64().unwrap())
        })
        .collect();
    for ((_, key), id) in &seen.booked {
        assert_eq!(answered.get(key.as_str()), Some(id), "key {key}");
    }
    assert_eq!(answered.len(), seen.booked.len());
    assert_capacity_kept_on(db).await;
    assert_books_balance_on(db).await;
}

async fn connect(url: &str) -> DatabaseConnection {
    Database::connect(url).await.expect("connect to the store")
}

/// The first bookable hour a day from now (the hot hour three hours before it).
fn load_base() -> DateTime<Utc> {
    grid(Utc::now()) + TimeDelta::days(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_killed_under_load_behind_the_proxy_loses_and_doubles_nothing() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let database = TestDatabase::create(Backend::Postgres).await;
    let dirs = tempfile::tempdir().unwrap();
    // Caddy needs the replicas' ports before they start.
    let (one_port, two_port) = (free_port(), free_port());
    let proxy_env =
        compose_proxy_environment(&format!("127.0.0.1:{one_port} 127.0.0.1:{two_port}"));
    let caddy_https = free_port();
    let public_url = format!("https://127.0.0.1:{caddy_https}");
    let env = |dir: &str, port: u16| {
        with_overrides(
            &replica_env(&database.url, &dirs.path().join(dir), &public_url),
            &[("BERTH_BIND", format!("127.0.0.1:{port}"))],
            &[],
        )
    };
    let mut one = Served::start_on(&dirs.path().join("one"), env("one", one_port), one_port).await;
    let two = Served::start_on(&dirs.path().join("two"), env("two", two_port), two_port).await;
    let caddy = Caddy::start(proxy_env, caddy_https).await;

    let db = connect(&database.url).await;
    let tokens = users(&db, 40).await;
    let plan = Arc::new(Plan {
        gpus: fleet(&db).await,
        base: load_base(),
        clients: 200,
        ops: 4,
    });
    let http = caddy
        .client_builder()
        .pool_max_idle_per_host(200)
        .build()
        .unwrap();

    // A browser session through the proxy, from before the fault.
    let browser = caddy
        .client_builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let signed_in = browser
        .post(caddy.url("/auth/dev"))
        .form(&[("role", "user"), ("return_to", "/")])
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 303);
    let wallet = || async {
        browser
            .get(caddy.url("/wallet"))
            .send()
            .await
            .unwrap()
            .status()
    };
    assert_eq!(wallet().await, 200);

    let done = Arc::new(AtomicUsize::new(0));
    let load = tokio::spawn(run_load(
        http,
        caddy.url(""),
        tokens,
        plan.clone(),
        done.clone(),
    ));
    // A quarter of the way in, replica one dies mid-request; it comes back two seconds later.
    let total = plan.clients * plan.ops;
    while done.load(Ordering::Relaxed) < total / 4 {
        assert!(!load.is_finished(), "the load ended early");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    one.kill();
    let killed_at = done.load(Ordering::Relaxed);
    // The session goes on on the surviving replica.
    for _ in 0..5 {
        assert_eq!(wallet().await, 200, "signed in through the survivor");
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    restart(&mut one).await;
    let seen = load.await.expect("the load");
    eprintln!(
        "killed after {killed_at} answers; {} booked ({} after a lost answer), {} refused, {} cancelled",
        seen.booked.len(),
        seen.retried,
        seen.refused,
        seen.cancelled.len()
    );
    assert!(
        seen.refused >= 19,
        "the hot hour was contested: {}",
        seen.refused
    );
    assert!(seen.booked.len() > total / 2);
    assert_store_matches(&db, &seen).await;

    // Both replicas serve after the restart, and the proxy sends to both.
    for served in [&one, &two] {
        assert_eq!(
            client()
                .get(served.url("/readyz"))
                .send()
                .await
                .unwrap()
                .status(),
            200
        );
    }
    assert_eq!(wallet().await, 200);

    // X-Forwarded-For: Caddy replaces what a client wrote, so a forged address buys no new
    // sign-in allowance (5 a minute per replica here).
    let plain = caddy
        .client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut limited = 0;
    for n in 0..25 {
        let status = plain
            .post(caddy.url("/auth/dev"))
            .form(&[("role", "user"), ("return_to", "/")])
            .header("X-Forwarded-For", format!("198.51.100.{n}"))
            .send()
            .await
            .unwrap()
            .status();
        limited += usize::from(status == 429);
    }
    assert!(
        limited >= 15,
        "forged addresses were believed: {limited} of 25 limited"
    );
    // The address Caddy writes is believed: a client from another address has its own.
    let elsewhere = caddy
        .client_builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let status = elsewhere
        .post(caddy.url("/auth/dev"))
        .form(&[("role", "user"), ("return_to", "/")])
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 303, "127.0.0.2 has an allowance of its own");
    drop(caddy);
    drop(two);
}

/// The proxy's environment in `deploy/compose.yaml`, with `upstreams` for its replicas.
fn compose_proxy_environment(upstreams: &str) -> Vec<(String, String)> {
    with_overrides(
        &compose_environment(&compose_file()["services"]["proxy"]),
        &[("BERTH_UPSTREAMS", upstreams.to_owned())],
        &[],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restarted_under_load_makes_readyz_fail_then_recover_by_itself() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let postgres = PrivatePostgres::start();
    let admin = connect(&postgres.url("postgres")).await;
    sea_orm::ConnectionTrait::execute_unprepared(&admin, "CREATE DATABASE berth")
        .await
        .unwrap();
    let url = postgres.url("berth");
    let dir = tempfile::tempdir().unwrap();
    let mut portal = Served::start(
        dir.path(),
        replica_env(&url, dir.path(), "https://berth.example.org"),
    )
    .await;
    let db = connect(&url).await;
    let tokens = users(&db, 5).await;
    let plan = Arc::new(Plan {
        gpus: fleet(&db).await,
        base: load_base(),
        clients: 20,
        ops: 30,
    });
    let done = Arc::new(AtomicUsize::new(0));
    let load = tokio::spawn(run_load(
        client_builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap(),
        portal.url(""),
        tokens,
        plan.clone(),
        done.clone(),
    ));
    while done.load(Ordering::Relaxed) < 40 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    postgres.stop();
    let probe = client_builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let readyz = || async {
        let started = Instant::now();
        let status = probe
            .get(portal.url("/readyz"))
            .send()
            .await
            .expect("the portal answers while its database is away")
            .status();
        (status.as_u16(), started.elapsed())
    };
    let (status, took) = readyz().await;
    assert_eq!(status, 503, "not ready without its database");
    assert!(took < Duration::from_secs(6), "/readyz took {took:?}");
    let healthz = probe.get(portal.url("/healthz")).send().await.unwrap();
    assert_eq!(healthz.status(), 200, "the process itself is fine");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(readyz().await.0, 503);

    postgres.start_again();
    let deadline = Instant::now() + Duration::from_secs(30);
    while readyz().await.0 != 200 {
        assert!(
            Instant::now() < deadline,
            "not ready again within 30 s:\n{}",
            portal.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let seen = load.await.expect("the load");
    assert!(seen.booked.len() > 100, "{seen:?}");
    let db = connect(&url).await;
    assert_store_matches(&db, &seen).await;
    portal.terminate();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_default_keeps_every_acknowledged_booking_through_kill_9() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("berth.db");
    let url = format!("sqlite://{}", file.display());
    let env = replica_env(&url, dir.path(), "https://berth.example.org");
    let mut portal = Served::start(dir.path(), env).await;
    let db = connect(&url).await;
    let mode = sea_orm::ConnectionTrait::query_one_raw(
        &db,
        sea_orm::Statement::from_string(sea_orm::DbBackend::Sqlite, "PRAGMA journal_mode"),
    )
    .await
    .unwrap()
    .expect("a journal mode")
    .try_get::<String>("", "journal_mode")
    .unwrap();
    assert_eq!(
        mode, "wal",
        "acknowledged commits survive a crash in WAL mode"
    );
    let tokens = users(&db, 10).await;
    let plan = Arc::new(Plan {
        gpus: fleet(&db).await,
        base: load_base(),
        clients: 30,
        ops: 20,
    });
    let done = Arc::new(AtomicUsize::new(0));
    let http = client_builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let load = tokio::spawn(run_load(
        http,
        portal.url(""),
        tokens,
        plan.clone(),
        done.clone(),
    ));
    while done.load(Ordering::Relaxed) < 100 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // kill -9 in the middle of bookings; the clients retry with their keys until it is back.
    portal.kill();
    tokio::time::sleep(Duration::from_millis(500)).await;
    restart(&mut portal).await;
    let seen = load.await.expect("the load");
    assert!(seen.booked.len() > 100, "{seen:?}");
    assert_store_matches(&db, &seen).await;
    portal.terminate();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_dump_restores_into_a_portal_that_serves_the_same_data() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let source = TestDatabase::create(Backend::Postgres).await;
    let dir = tempfile::tempdir().unwrap();
    let mut portal = Served::start(
        &dir.path().join("source"),
        replica_env(
            &source.url,
            &dir.path().join("source"),
            "https://berth.example.org",
        ),
    )
    .await;
    let db = connect(&source.url).await;
    let tokens = users(&db, 2).await;
    let gpus = fleet(&db).await;
    let start = load_base();
    for (n, gpu) in gpus.iter().take(4).enumerate() {
        let body = json!({"gpu_ids": [gpu], "start": start.to_rfc3339(), "end": (start + TimeDelta::hours(2)).to_rfc3339()});
        let answer = until_answered(|| {
            client()
                .post(portal.url("/api/v1/reservations"))
                .bearer_auth(&tokens[n % 2])
                .json(&body)
        })
        .await;
        assert_eq!(answer.status, 201, "{answer:?}");
    }
    let listing = |url: String, token: String| async move {
        let answer = until_answered(|| client().get(&url).bearer_auth(&token)).await;
        assert_eq!(answer.status, 200);
        answer.body
    };
    let before = listing(portal.url("/api/v1/reservations"), tokens[0].clone()).await;
    let gpus_before = listing(portal.url("/api/v1/gpus"), tokens[0].clone()).await;

    // The README's commands, while the portal keeps serving.
    let dump = dir.path().join("berth.dump");
    let out = std::process::Command::new("pg_dump")
        .args(["--format=custom", "--file"])
        .arg(&dump)
        .arg(&source.url)
        .output()
        .expect("pg_dump (Debian's postgresql-client)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let target = TestDatabase::create(Backend::Postgres).await;
    let out = std::process::Command::new("pg_restore")
        .arg(format!("--dbname={}", target.url))
        .arg(&dump)
        .output()
        .expect("pg_restore");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    portal.terminate();

    let mut restored = Served::start(
        &dir.path().join("target"),
        replica_env(
            &target.url,
            &dir.path().join("target"),
            "https://berth.example.org",
        ),
    )
    .await;
    let after = listing(restored.url("/api/v1/reservations"), tokens[0].clone()).await;
    assert_eq!(after, before, "the same reservations, same token");
    let gpus_after = listing(restored.url("/api/v1/gpus"), tokens[0].clone()).await;
    assert_eq!(
        gpus_after.as_array().map(Vec::len),
        gpus_before.as_array().map(Vec::len),
        "no second demo fleet"
    );
    // And it takes new bookings next to the restored ones.
    let body = json!({"gpu_ids": [gpus[0]], "start": start.to_rfc3339(), "end": (start + TimeDelta::hours(1)).to_rfc3339()});
    let clash = until_answered(|| {
        client()
            .post(restored.url("/api/v1/reservations"))
            .bearer_auth(&tokens[1])
            .json(&body)
    })
    .await;
    assert_eq!(clash.status, 409, "the restored booking holds its GPU");
    let restored_db = connect(&target.url).await;
    assert_books_balance_on(&restored_db).await;
    restored.terminate();
}

/// The next release's first migration, as it would be written under expand/contract: a new
/// table, a new column with a default on a busy table, and its row in `seaql_migrations`.
/// Played here with SQL, since the suite builds one release of Berth.
async fn apply_next_release_expansion(db: &DatabaseConnection) {
    use sea_orm::{ConnectionTrait, TransactionTrait};
    let txn = db.begin().await.unwrap();
    for statement in [
        "CREATE TABLE next_release_notes (id BIGINT PRIMARY KEY, body TEXT NOT NULL)",
        "ALTER TABLE reservations ADD COLUMN next_release_flag BOOLEAN NOT NULL DEFAULT FALSE",
        "INSERT INTO seaql_migrations (version, applied_at) \
         VALUES ('m20270101_000001_next_release_expand', 1798761600)",
    ] {
        txn.execute_unprepared(statement).await.unwrap();
    }
    txn.commit().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_of_this_release_keep_serving_while_the_next_one_migrates() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let database = TestDatabase::create(Backend::Postgres).await;
    let dir = tempfile::tempdir().unwrap();
    let env = |name: &str| {
        replica_env(
            &database.url,
            &dir.path().join(name),
            "https://berth.example.org",
        )
    };
    let mut one = Served::start(&dir.path().join("one"), env("one")).await;
    let two = Served::start(&dir.path().join("two"), env("two")).await;
    let db = connect(&database.url).await;
    let tokens = users(&db, 4).await;
    let plan = Arc::new(Plan {
        gpus: fleet(&db).await,
        base: load_base(),
        clients: 16,
        ops: 16,
    });
    let done = Arc::new(AtomicUsize::new(0));
    // Clients book on replica one while the next release migrates.
    let load_one = tokio::spawn(run_load(
        client(),
        one.url(""),
        tokens.clone(),
        plan.clone(),
        done.clone(),
    ));
    while done.load(Ordering::Relaxed) < 20 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    apply_next_release_expansion(&db).await;
    // This release on the expanded schema: ready, and booking on.
    for served in [&one, &two] {
        let status = client()
            .get(served.url("/readyz"))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 200, "{}", served.log());
    }
    let seen = load_one.await.expect("the load");
    assert!(seen.booked.len() > 50, "{seen:?}");
    assert_store_matches(&db, &seen).await;
    // A replica of this release (re)started on the newer schema starts and serves.
    one.terminate();
    restart(&mut one).await;
    assert!(
        one.log().contains("migrated by a newer release"),
        "{}",
        one.log()
    );
    let booked = until_answered(|| {
        client()
            .post(one.url("/api/v1/reservations"))
            .bearer_auth(&tokens[0])
            .json(&json!({"gpu_ids": [plan.gpus[1]], "start": (plan.base + TimeDelta::days(20)).to_rfc3339(), "end": (plan.base + TimeDelta::days(20) + TimeDelta::hours(1)).to_rfc3339()}))
    })
    .await;
    assert_eq!(booked.status, 201, "{booked:?}");
    drop(two);
}

#[test]
fn migrate_leaves_a_newer_schema_alone_and_refuses_one_both_behind_and_ahead() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("berth.db").display()
    );
    let migrate = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_berth"))
            .arg("migrate")
            .current_dir(dir.path())
            .env("BERTH_DATABASE_URL", &url)
            .output()
            .unwrap();
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let (ok, said) = migrate();
    assert!(ok, "{said}");
    runtime.block_on(async {
        apply_next_release_expansion(&connect(&url).await).await;
    });
    let (ok, said) = migrate();
    assert!(ok, "a newer schema is left as it is: {said}");
    assert!(said.contains("0 migration(s) applied"), "{said}");
    // One of this release's migrations missing as well: refused, nothing changed.
    let last = runtime.block_on(async {
        use sea_orm::ConnectionTrait;
        let db = connect(&url).await;
        let row = db
            .query_one_raw(sea_orm::Statement::from_string(
                sea_orm::DbBackend::Sqlite,
                "SELECT version FROM seaql_migrations WHERE version LIKE 'm2026%' ORDER BY version DESC LIMIT 1",
            ))
            .await
            .unwrap()
            .unwrap();
        let last: String = row.try_get("", "version").unwrap();
        db.execute_unprepared(&format!("DELETE FROM seaql_migrations WHERE version = '{last}'"))
            .await
            .unwrap();
        last
    });
    let (ok, said) = migrate();
    assert!(!ok, "{said}");
    assert!(said.contains("berth: error:"), "{said}");
    assert!(
        said.contains(&last) && said.contains("upgrade through each release in turn"),
        "{said}"
    );
}
