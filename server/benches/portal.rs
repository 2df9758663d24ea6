//! Berth's benchmark: a generated store of 1,000 GPUs on 125 nodes with 50,000 reservations over
//! 8 weeks, served by the real application on a loopback port, on SQLite and on PostgreSQL.
//!
//! ```text
//! cargo bench -p berth-server --bench portal                      # both backends
//! cargo bench -p berth-server --bench portal -- --backend sqlite  # one
//! cargo bench -p berth-server --bench portal -- --quick           # fewer rounds
//! cargo bench -p berth-server --bench portal -- --backend sqlite --serve  # just serve the store
//! ```
//!
//! `--serve` generates the store and serves it (with the built front end in `target/site`) on
//! port 3000 until Ctrl-C, to look at the calendar at fleet scale; it measures nothing.
//!
//! It measures, one after another on the same server:
//! - the week view of the calendar for 64 GPUs (`GET /calendar`, signed in, whole page);
//! - find a slot for 4 × one model, 8 hours, from now (`GET /api/v1/slots`);
//! - booking latency and throughput with 64 concurrent clients (`POST /api/v1/reservations`);
//! - calendar pages per second under load, next to the same server sending a static page of the
//!   same size.
//!
//! Times are seen by a client on the same machine, so they include loopback HTTP; the server's
//! own share is smaller. PostgreSQL is reached at `BERTH_TEST_PG_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); the bench creates and drops its own database.

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
use berth_server::configuration::{Config, RawSettings};
use berth_server::startup::Application;
use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sea_orm::sea_query::{Alias, Query};
use sea_orm::{
    ActiveValue::Set, ConnectionTrait, DatabaseConnection, EntityTrait, TransactionTrait,
};
use std::sync::Arc;

#[path = "support/database.rs"]
mod database;
use database::{Backend, BenchDatabase};
use std::time::{Duration, Instant};

const NODES: usize = 125;
const GPUS_PER_NODE: usize = 8;
const RESERVATIONS: usize = 50_000;
const USERS: usize = 200;
const WEEKS: i64 = 8;
/// The model that has exactly 64 GPUs: the week view shows all of them.
const WEEK_VIEW_MODEL: &str = "NVIDIA H200";
/// The model find-a-slot searches.
const SLOT_MODEL: &str = "NVIDIA H100 80GB HBM3";

/// (model, memory in MiB, price per hour in minor units, shareable, nodes)
const MODELS: &[(&str, u64, i64, bool, usize)] = &[
    (WEEK_VIEW_MODEL, 143_771, 449, false, 8),
    (SLOT_MODEL, 81_559, 349, false, 32),
    ("NVIDIA A100-SXM4-80GB", 81_920, 229, true, 30),
    ("NVIDIA L40S", 49_140, 129, true, 30),
    ("NVIDIA RTX A5000", 24_564, 49, true, 25),
];

/// Which stores to measure (`--backend`).
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Stores {
    Sqlite,
    Postgres,
    Both,
}

/// Command-line options (after `cargo bench -p berth-server --bench portal --`).
#[derive(clap::Parser)]
struct Options {
    /// The stores to measure.
    #[arg(long, value_enum, default_value = "both")]
    backend: Stores,
    /// 30 rounds instead of 200, shorter load phases.
    #[arg(long)]
    quick: bool,
    /// Generate the store and serve it on port 3000 until Ctrl-C; measure nothing.
    #[arg(long)]
    serve: bool,
    /// Measure the cost reports only (not the calendar, slots, bookings and load).
    #[arg(long)]
    reports_only: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

impl Options {
    fn backends(&self) -> Vec<Backend> {
        match self.backend {
            Stores::Sqlite => vec![Backend::Sqlite],
            Stores::Postgres => vec![Backend::Postgres],
            Stores::Both => vec![Backend::Sqlite, Backend::Postgres],
        }
    }
}

fn main() {
    let options = <Options as clap::Parser>::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(8 * 1024 * 1024)
        .build()
        .expect("runtime");
    println!(
        "Berth benchmark: {NODES} nodes, {} GPUs, {RESERVATIONS} reservations over {WEEKS} weeks; {} CPU cores",
        NODES * GPUS_PER_NODE,
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    for backend in options.backends() {
        runtime.block_on(bench_backend(backend, &options));
    }
}

async fn bench_backend(backend: Backend, options: &Options) {
    let (quick, serve) = (options.quick, options.serve);
    println!("\n## {}\n", backend.name());
    let database = BenchDatabase::create(backend).await;
    let site = tempfile::tempdir().expect("temporary site root");
    let site_root = if serve {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/site")
    } else {
        site.path().to_path_buf()
    };
    let settings = RawSettings {
        bind: "127.0.0.1:0".to_owned(),
        database_url: Some(database.url.clone()),
        // The demo flag turns the development sign-in on; the store is not empty, so no demo
        // fleet is added.
        demo: Some(true),
        demo_bookings: Some(false),
        dev_sign_in: Some(true),
        log: "error".to_owned(),
        site_root,
        sign_in_rate_per_minute: 10_000,
        ..RawSettings::default()
    };
    let config = Config::from_raw(settings).expect("settings");
    berth_server::startup::migrate_only(&config)
        .await
        .expect("migrations");

    let conn = db::connect(&database.url).await.expect("connect");
    let started = Instant::now();
    let store = generate(&conn, backend).await;
    println!(
        "Generated {} GPUs on {} nodes, {} reservations ({} GPU holds, {} slot rows, {} ledger transactions, {} usage rows) in {:.1} s",
        store.gpus,
        store.nodes,
        store.reservations,
        store.holds,
        store.slot_rows,
        store.ledger_transactions,
        store.usage_rows,
        started.elapsed().as_secs_f64()
    );

    let listener = tokio::net::TcpListener::bind(if serve {
        "127.0.0.1:3000"
    } else {
        "127.0.0.1:0"
    })
    .await
    .expect("bind");
    if serve {
        let app = Application::build_with_listener(config, listener)
            .await
            .expect("application");
        println!(
            "Serving the generated store at http://{}/calendar (sign in as the demo user); Ctrl-C stops",
            app.addr()
        );
        app.run_until_stopped(berth_server::startup::shutdown_signal())
            .await
            .expect("server");
        let _ = conn.close().await;
        database.drop_database().await;
        return;
    }
    let app = Application::build_with_listener(config, listener)
        .await
        .expect("application");
    let base = format!("http://{}", app.addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        app.run_until_stopped(async {
            let _ = stopped.await;
        })
        .await
        .expect("server");
    });

    let browser = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(120))
        .build()
        .expect("client");
    let signed_in = browser
        .post(format!("{base}/auth/dev"))
        .form(&[("role", "user"), ("return_to", "/")])
        .send()
        .await
        .expect("sign in");
    assert_eq!(signed_in.status().as_u16(), 303, "dev sign-in");
    let api = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .pool_max_idle_per_host(128)
        .build()
        .expect("client");
    let token = format!("Bearer {}", store.token);

    let rounds = if quick { 30 } else { 200 };

    bench_reports(&api, &base, &store, quick).await;
    if options.reports_only {
        let _ = stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(20), server).await;
        let _ = conn.close().await;
        database.drop_database().await;
        return;
    }

    // Week view, 64 GPUs.
    let week = format!(
        "{base}/calendar?span=week&model={}",
        WEEK_VIEW_MODEL.replace(' ', "%20")
    );
    let first = browser.get(&week).send().await.expect("calendar");
    assert_eq!(first.status().as_u16(), 200);
    let page = first.text().await.expect("page");
    let rows = page.matches("class=\"cal-row").count();
    assert_eq!(
        rows, 64,
        "the week view shows the 64 GPUs of {WEEK_VIEW_MODEL}"
    );
    let blocks = page.matches("class=\"cal-block").count();
    let times = sample(rounds, || async {
        let response = browser.get(&week).send().await.expect("calendar");
        assert_eq!(response.status().as_u16(), 200);
        response.bytes().await.expect("page");
    })
    .await;
    report(
        &format!(
            "Week view, 64 GPUs ({} KB of HTML, {blocks} booking blocks)",
            page.len() / 1024
        ),
        &times,
        Some(15.0),
    );

    // Find a slot: 4 × one model, 8 hours, from now.
    let slots = format!(
        "{base}/api/v1/slots?model={}&count=4&share=1&hours=8",
        SLOT_MODEL.replace(' ', "%20")
    );
    let offers: serde_json::Value = api
        .get(&slots)
        .header("authorization", &token)
        .send()
        .await
        .expect("slots")
        .json()
        .await
        .expect("offers");
    let offered = offers.as_array().map_or(0, Vec::len);
    assert!(offered > 0, "find a slot offers something: {offers}");
    let times = sample(rounds, || async {
        let response = api
            .get(&slots)
            .header("authorization", &token)
            .send()
            .await
            .expect("slots");
        assert_eq!(response.status().as_u16(), 200);
        response.bytes().await.expect("offers");
    })
    .await;
    report(
        &format!("Find a slot, 4 × H100 for 8 h ({offered} offers)"),
        &times,
        Some(10.0),
    );

    // Booking under 64 concurrent clients.
    bench_bookings(&api, &base, &token, &store, if quick { 5 } else { 20 }).await;

    // Calendar pages per second under load, next to a static page of the same size.
    std::fs::write(site.path().join("static.html"), &page).expect("static page");
    let seconds = if quick { 3 } else { 10 };
    let dynamic = throughput(&browser, &week, 16, seconds).await;
    let fixed = throughput(&browser, &format!("{base}/static.html"), 16, seconds).await;
    println!(
        "| Calendar page under load (16 clients, {seconds} s) | {dynamic:.0} req/s | static page of the same size: {fixed:.0} req/s | ratio {:.2} |",
        dynamic / fixed
    );

    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(20), server).await;
    let _ = conn.close().await;
    database.drop_database().await;
}

/// The cost reports over a month of the dataset: the fleet view, and everyone's usage by user.
async fn bench_reports(api: &reqwest::Client, base: &str, store: &Store, quick: bool) {
    let month = format!(
        "from={}&to={}&tz=UTC",
        store.first_day,
        store.first_day + chrono::Days::new(29)
    );
    let admin = format!("Bearer {}", store.admin_token);
    for (what, url) in [
        (
            "Fleet report, one month (JSON)",
            format!("{base}/api/v1/reports/fleet?{month}"),
        ),
        (
            "Usage report, one month, everyone by user (JSON)",
            format!("{base}/api/v1/reports/usage?{month}&scope=all&group_by=user"),
        ),
    ] {
        let first: serde_json::Value = api
            .get(&url)
            .header("authorization", &admin)
            .send()
            .await
            .expect("report")
            .json()
            .await
            .expect("report JSON");
        let bookings = first["totals"]["bookings"]
            .as_i64()
            .or_else(|| first["days"].as_array().map(|d| d.len() as i64))
            .unwrap_or_default();
        assert!(bookings > 0, "the report has data: {first}");
        let times = sample(if quick { 10 } else { 40 }, || async {
            let response = api
                .get(&url)
                .header("authorization", &admin)
                .send()
                .await
                .expect("report");
            assert_eq!(response.status().as_u16(), 200);
            response.bytes().await.expect("report");
        })
        .await;
        report(what, &times, Some(500.0));
    }
}

/// Runs `request` `rounds` times one after another (after a few unmeasured ones) and returns
/// the times in milliseconds, sorted.
async fn sample<F, Fut>(rounds: usize, request: F) -> Vec<f64>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..5 {
        request().await;
    }
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        request().await;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    times
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0 * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn report(what: &str, sorted: &[f64], target_p50_ms: Option<f64>) {
    let p50 = percentile(sorted, 50.0);
    let verdict = match target_p50_ms {
        Some(target) if p50 <= target => format!("target p50 ≤ {target} ms: met"),
        Some(target) => format!("target p50 ≤ {target} ms: MISSED"),
        None => String::new(),
    };
    println!(
        "| {what} | p50 {p50:.2} ms | p95 {:.2} ms | max {:.2} ms | n={} | {verdict} |",
        percentile(sorted, 95.0),
        sorted.last().copied().unwrap_or(f64::NAN),
        sorted.len()
    );
}

/// `clients` clients each make `per_client` bookings of 1–4 hours on a random GPU somewhere in
/// the next six weeks; reports latency of every answer and the rate of answers and of bookings.
async fn bench_bookings(
    api: &reqwest::Client,
    base: &str,
    token: &str,
    store: &Store,
    per_client: usize,
) {
    const CLIENTS: usize = 64;
    let whole_gpus = Arc::new(store.gpu_ids.clone());
    let url = Arc::new(format!("{base}/api/v1/reservations"));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in 0..CLIENTS {
        let api = api.clone();
        let token = token.to_owned();
        let gpus = Arc::clone(&whole_gpus);
        let url = Arc::clone(&url);
        tasks.push(tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(7_000 + client as u64);
            let now = Utc::now();
            let mut outcomes = Vec::with_capacity(per_client);
            for _ in 0..per_client {
                let gpu = gpus[rng.random_range(0..gpus.len())];
                let start = slot_ceil(now)
                    + TimeDelta::days(1)
                    + TimeDelta::minutes(SLOT_MINUTES * rng.random_range(0..(6 * 7 * 96)));
                let end = start + TimeDelta::minutes(SLOT_MINUTES * rng.random_range(4..=16));
                let body = serde_json::json!({
                    "gpu_ids": [gpu],
                    "share": 1,
                    "start": start.to_rfc3339(),
                    "end": end.to_rfc3339(),
                });
                let sent = Instant::now();
                let response = api
                    .post(url.as_str())
                    .header("authorization", &token)
                    .json(&body)
                    .send()
                    .await
                    .expect("book");
                let status = response.status().as_u16();
                let _ = response.bytes().await;
                outcomes.push((status, sent.elapsed().as_secs_f64() * 1000.0));
            }
            outcomes
        }));
    }
    let mut times = Vec::new();
    let (mut booked, mut clashed, mut other) = (0usize, 0usize, 0usize);
    for task in tasks {
        for (status, ms) in task.await.expect("client") {
            match status {
                201 => booked += 1,
                409 => clashed += 1,
                _ => other += 1,
            }
            times.push(ms);
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    times.sort_by(f64::total_cmp);
    assert_eq!(other, 0, "every booking answer is 201 or 409");
    report(
        &format!(
            "Booking, {CLIENTS} concurrent clients ({booked} booked, {clashed} refused as clashes)"
        ),
        &times,
        None,
    );
    println!(
        "| Booking throughput | {:.0} answers/s | {:.0} bookings/s | {:.1} s for {} requests |",
        times.len() as f64 / elapsed,
        booked as f64 / elapsed,
        elapsed,
        times.len()
    );
}

/// Requests per second that `clients` clients get from `url` in `seconds`.
async fn throughput(client: &reqwest::Client, url: &str, clients: usize, seconds: u64) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let client = client.clone();
        let url = url.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut done = 0u64;
            while Instant::now() < deadline {
                let response = client.get(&url).send().await.expect("GET");
                assert_eq!(response.status().as_u16(), 200, "{url}");
                response.bytes().await.expect("body");
                done += 1;
            }
            done
        }));
    }
    let mut total = 0;
    for task in tasks {
        total += task.await.expect("client");
    }
    total as f64 / started.elapsed().as_secs_f64()
}

fn slot_ceil(at: DateTime<Utc>) -> DateTime<Utc> {
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
struct Store {
    nodes: usize,
    gpus: usize,
    reservations: usize,
    holds: usize,
    slot_rows: usize,
    /// GPUs that may be booked whole (all of them, here).
    gpu_ids: Vec<i64>,
    /// An API token of a user who books.
    token: String,
    /// An API token of a platform admin (the fleet report).
    admin_token: String,
    /// The first day of the dataset (reports cover a month from it).
    first_day: chrono::NaiveDate,
    /// Ledger transactions written (charges and refunds).
    ledger_transactions: usize,
    /// Reservation usage rows written.
    usage_rows: usize,
}

/// Fills the store: the fleet, users, and reservations over 8 weeks (one in the past, seven
/// ahead), capacity kept by construction: each GPU's bookings follow one another with gaps, a
/// multi-GPU booking starts when all of its GPUs are free, and fractional bookings on shareable
/// models keep a GPU to themselves. About 4 % are cancelled. Deterministic (fixed seed).
async fn generate(conn: &DatabaseConnection, backend: Backend) -> Store {
    let mut rng = StdRng::seed_from_u64(2026);
    let now = Utc::now();
    let fleet_start = slot_ceil(now) - TimeDelta::weeks(1);
    let fleet_end = fleet_start + TimeDelta::weeks(WEEKS);

    let mut users = Vec::with_capacity(USERS);
    for n in 0..USERS {
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
    // The booking user pays for what it books (the benchmark books with a charge).
    berth_app::backend::ledger::change_credits(
        conn,
        &berth_app::domain::money::Currency::new("USD", "$", 2).expect("USD"),
        berth_app::backend::ledger::CreditRequest {
            actor_id: None,
            wallet: berth_app::backend::ledger::CreditWallet::User("bench-user-0@berth.invalid"),
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
        users[0],
        &TokenName::parse("bench").expect("name"),
        &hash,
        now,
    )
    .await
    .expect("token");

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
    for (model_index, &(model, memory_mib, price, shareable, count)) in MODELS.iter().enumerate() {
        for _ in 0..count {
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
                name: format!("bench-{node_number:03}"),
                hostname: format!("bench-{node_number:03}.berth.invalid"),
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
    for gpu in berth_app::backend::entity::gpu::Entity::find()
        .all(conn)
        .await
        .expect("gpus")
    {
        if let Some(node) = nodes.iter_mut().find(|(id, _, _)| *id == gpu.node_id) {
            node.1.push(gpu.id);
            gpu_ids.push(gpu.id);
        }
    }
    for node in &mut nodes {
        node.1.sort_unstable();
    }

    let per_node = RESERVATIONS / nodes.len();
    let mut rows: Vec<reservation::ActiveModel> = Vec::with_capacity(RESERVATIONS);
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
                early_from: Set(None),
            });
            for i in chosen {
                holds.push((id, node_gpus[*i], start, end));
                if !cancelled {
                    let mut slot = start;
                    while slot < end {
                        slots.push((node_gpus[*i], slot, i16::from(quarters)));
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
        slot_rows: slots.len(),
        gpu_ids,
        token,
        admin_token,
        first_day: fleet_start.date_naive(),
        ledger_transactions: money.len() + cancelled_ids.len(),
        usage_rows: usage.len(),
    };

    let txn = conn.begin().await.expect("transaction");
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let batch: Vec<reservation::ActiveModel> = rows.by_ref().take(1_000).collect();
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
    // Fresh statistics (and on PostgreSQL a visibility map), as autovacuum keeps them in a
    // long-running store.
    let maintenance = if conn.get_database_backend() == sea_orm::DbBackend::Postgres {
        "VACUUM ANALYZE"
    } else {
        "ANALYZE"
    };
    conn.execute_unprepared(maintenance).await.expect("analyze");
    store
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
}

fn slots_of(n: i64) -> TimeDelta {
    TimeDelta::minutes(SLOT_MINUTES * n)
}
