//! Berth's benchmark: a generated store of 1,000 GPUs on 125 nodes with 50,000 reservations over
//! 8 weeks, served by the real application on a loopback port, on SQLite and on PostgreSQL.
//!
//! ```text
//! cargo bench -p berth-server --bench portal                      # both backends
//! cargo bench -p berth-server --bench portal -- --backend sqlite  # one
//! cargo bench -p berth-server --bench portal -- --quick           # fewer rounds
//! cargo bench -p berth-server --bench portal -- --backend sqlite --serve  # just serve the store
//! cargo bench -p berth-server --bench portal -- --scale large      # 10,000 GPUs, 500,000 reservations
//! ```
//!
//! `--serve` generates the store and serves it (with the built front end in `target/site`) on
//! port 3000 until Ctrl-C, to look at the calendar at fleet scale; it measures nothing.
//!
//! It measures, one after another on the same server:
//! - the week view of the calendar for 64 GPUs (`GET /calendar`, signed in, whole page);
//! - find a slot for 4 × one model, 8 hours, from now (`GET /api/v1/slots`);
//! - booking latency, one request at a time (`POST /api/v1/reservations`);
//! - the inventory: `GET /api/v1/gpus` and the inventory page, every GPU of the fleet;
//! - pages of 100 of `GET /api/v1/reservations` (everyone's first page, one from the middle by
//!   cursor, one GPU's, one user's own);
//! - booking under contention: 200 clients, each its own user, at once (on PostgreSQL through two
//!   replicas of the portal on one database): first requests that never clash (each client its own
//!   GPUs), then requests that clash on 64 GPUs; then no GPU overbooked and the ledger audit clean;
//! - calendar pages per second under load, next to the same server sending a static page of the
//!   same size;
//! - with `--memory`, the resident memory of a `berth serve` process (the release binary) on the
//!   generated store: idle, then after a round of the requests above.
//!
//! Times are seen by a client on the same machine, so they include loopback HTTP; the server's
//! own share is smaller. PostgreSQL is reached at `BERTH_TEST_PG_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); the bench creates and drops its own database.

use berth_app::backend::db;
use berth_server::configuration::{Config, RawSettings};
use berth_server::startup::Application;
use chrono::{TimeDelta, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[path = "support/database.rs"]
mod database;
#[path = "support/fleet.rs"]
mod fleet;
#[path = "support/memory.rs"]
mod memory;
#[path = "support/timing.rs"]
mod timing;
use database::{Backend, BenchDatabase, Stores};
use fleet::{SLOT_MODEL, Scale, Store, WEEK_VIEW_MODEL, WEEKS, generate_at, slots_of};
use std::time::{Duration, Instant};
use timing::{report, sample};

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
    /// The size of the generated store.
    #[arg(long, value_enum, default_value = "default")]
    scale: Scale,
    /// Also measure a `berth serve` process's memory (needs `target/release/berth`).
    #[arg(long)]
    memory: bool,
    /// Database connections per portal replica (the `database_max_connections` setting).
    #[arg(long, default_value_t = berth_app::backend::db::DEFAULT_MAX_CONNECTIONS)]
    pool: u32,
    /// Only these measures (comma-separated); all when not given.
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Measure>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// The measures, for `--only`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Measure {
    /// The cost reports.
    Reports,
    /// The week view.
    Calendar,
    /// Find a slot.
    Slots,
    /// Booking one at a time.
    Bookings,
    /// `GET /api/v1/gpus` and the inventory page.
    Inventory,
    /// Pages of the reservations list.
    Pages,
    /// Booking under contention.
    Contention,
    /// The calendar page under load, next to a static page.
    Load,
}

impl Options {
    fn backends(&self) -> Vec<Backend> {
        self.backend.backends()
    }

    /// Whether `measure` is taken.
    fn takes(&self, measure: Measure) -> bool {
        if self.reports_only {
            return measure == Measure::Reports;
        }
        self.only.is_empty() || self.only.contains(&measure)
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
        "Berth benchmark: {} nodes, {} GPUs, {} reservations over {WEEKS} weeks, {} users; {} CPU cores; {} database connections per replica",
        options.scale.nodes(),
        options.scale.nodes() * fleet::GPUS_PER_NODE,
        options.scale.reservations(),
        options.scale.users(),
        std::thread::available_parallelism().map_or(0, usize::from),
        options.pool
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
        database_max_connections: options.pool,
        ..RawSettings::default()
    };
    let config = Config::from_raw(settings).expect("settings");
    berth_server::startup::migrate_only(&config)
        .await
        .expect("migrations");

    let conn = db::connect(&database.url).await.expect("connect");
    let started = Instant::now();
    let store = generate_at(&conn, backend, options.scale).await;
    println!(
        "Generated {} GPUs on {} nodes, {} reservations ({} GPU holds, {} slot rows, {} ledger transactions, {} usage rows, {} rollups) in {:.1} s",
        store.gpus,
        store.nodes,
        store.reservations,
        store.holds,
        store.slot_rows,
        store.ledger_transactions,
        store.usage_rows,
        store.rollups,
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
    // A second replica on the same database (PostgreSQL): the contention bench spreads its
    // clients over both.
    let second = if backend == Backend::Postgres && !options.reports_only {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        Some(
            Application::build_with_listener(config.clone(), listener)
                .await
                .expect("second replica"),
        )
    } else {
        None
    };
    let app = Application::build_with_listener(config, listener)
        .await
        .expect("application");
    let base = format!("http://{}", app.addr());
    let mut replicas = vec![base.clone()];
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (stop_second, second_stopped) = tokio::sync::oneshot::channel::<()>();
    if let Some(second) = second {
        replicas.push(format!("http://{}", second.addr()));
        tokio::spawn(async move {
            second
                .run_until_stopped(async {
                    let _ = second_stopped.await;
                })
                .await
                .expect("second replica");
        });
    }
    let server = tokio::spawn(async move {
        app.run_until_stopped(async {
            let _ = stopped.await;
        })
        .await
        .expect("server");
    });

    let browser = signed_in_browser(&base).await;
    let api = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .pool_max_idle_per_host(128)
        .build()
        .expect("client");
    let token = format!("Bearer {}", store.token);

    let rounds = if quick { 30 } else { 200 };

    if options.takes(Measure::Reports) {
        bench_reports(&api, &base, &store, quick).await;
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
    if options.takes(Measure::Calendar) {
        bench_week_view(&browser, &week, &page, blocks, rounds).await;
    }
    if options.takes(Measure::Slots) {
        bench_slots(&api, &base, &token, rounds).await;
    }
    if options.takes(Measure::Bookings) {
        bench_sequential_bookings(&api, &base, &token, &store, rounds).await;
    }
    if options.takes(Measure::Inventory) {
        bench_inventory(&api, &browser, &base, &token, &store, rounds).await;
    }
    if options.takes(Measure::Pages) {
        bench_reservation_pages(&api, &base, &token, &store, rounds).await;
    }
    if options.takes(Measure::Contention) {
        // 200 clients, each its own user.
        bench_contention(&api, &replicas, &store, &conn, if quick { 5 } else { 25 }).await;
    }
    if options.takes(Measure::Load) {
        // Calendar pages per second under load, next to a static page of the same size.
        std::fs::write(site.path().join("static.html"), &page).expect("static page");
        let seconds = if quick { 3 } else { 10 };
        // One viewer in 16 tabs, then 16 viewers (each its own session) at once: the page's
        // copies are kept per viewer, so the second renders 16 pages where the first renders one.
        let one = vec![browser.clone(); 16];
        let dynamic = throughput(&one, &week, seconds).await;
        let mut viewers = Vec::with_capacity(16);
        for _ in 0..16 {
            viewers.push(signed_in_browser(&base).await);
        }
        let many = throughput(&viewers, &week, seconds).await;
        let fixed = throughput(&one, &format!("{base}/static.html"), seconds).await;
        println!(
            "| Calendar page under load (16 clients, {seconds} s), one viewer | {dynamic:.0} req/s | static page of the same size: {fixed:.0} req/s | ratio {:.2} |",
            dynamic / fixed
        );
        println!(
            "| the same, 16 viewers (a session each) | {many:.0} req/s | | ratio {:.2} |",
            many / fixed
        );
    }

    let _ = stop.send(());
    let _ = stop_second.send(());
    let _ = tokio::time::timeout(Duration::from_secs(20), server).await;
    if options.memory {
        memory::measure(&database.url, &store).await;
    }
    let _ = conn.close().await;
    database.drop_database().await;
}

/// The week view of 64 GPUs, the whole page, signed in.
async fn bench_week_view(
    browser: &reqwest::Client,
    week: &str,
    page: &str,
    blocks: usize,
    rounds: usize,
) {
    // Each round a page never asked for before (an extra parameter the page ignores), so that
    // every round is a render, not the page's copy (see `middleware::page_cache`).
    let round = std::sync::atomic::AtomicUsize::new(0);
    let times = sample(rounds, || async {
        let n = round.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let response = browser
            .get(format!("{week}&round={n}"))
            .send()
            .await
            .expect("calendar");
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
}

/// Find a slot: 4 × one model, 8 hours, from now.
async fn bench_slots(api: &reqwest::Client, base: &str, token: &str, rounds: usize) {
    let slots = format!(
        "{base}/api/v1/slots?model={}&count=4&share=1&hours=8",
        SLOT_MODEL.replace(' ', "%20")
    );
    let offers: serde_json::Value = api
        .get(&slots)
        .header("authorization", token)
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
            .header("authorization", token)
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

/// The first slot after the generated bookings: the benches book from here, where only their
/// own bookings are.
fn free_from(store: &Store) -> chrono::DateTime<Utc> {
    store.fleet_end
}

/// One booking after another by one client, each of 2 hours on the next GPU, never clashing.
async fn bench_sequential_bookings(
    api: &reqwest::Client,
    base: &str,
    token: &str,
    store: &Store,
    rounds: usize,
) {
    let from = free_from(store) + TimeDelta::days(2);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let url = format!("{base}/api/v1/reservations");
    let times = sample(rounds, || async {
        let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let gpu = store.gpu_ids[n % store.gpu_ids.len()];
        let start = from + TimeDelta::hours(2 * (n / store.gpu_ids.len()) as i64);
        let body = fleet::whole_gpu(gpu, start, start + TimeDelta::hours(2));
        let response = api
            .post(&url)
            .header("authorization", token)
            .json(&body)
            .send()
            .await
            .expect("book");
        assert_eq!(response.status().as_u16(), 201, "a free GPU is booked");
        response.bytes().await.expect("booking");
    })
    .await;
    report(
        "Booking, one at a time (2 h, a free GPU)",
        &times,
        Some(5.0),
    );
}

/// `GET /api/v1/gpus` and the inventory page: every GPU of the fleet.
async fn bench_inventory(
    api: &reqwest::Client,
    browser: &reqwest::Client,
    base: &str,
    token: &str,
    store: &Store,
    rounds: usize,
) {
    let gpus: serde_json::Value = api
        .get(format!("{base}/api/v1/gpus"))
        .header("authorization", token)
        .send()
        .await
        .expect("gpus")
        .json()
        .await
        .expect("GPU list");
    let listed = gpus.as_array().map_or(0, Vec::len);
    assert_eq!(listed, store.gpus, "every GPU is listed");
    let rounds = rounds.min(50);
    let times = sample(rounds, || async {
        let response = api
            .get(format!("{base}/api/v1/gpus"))
            .header("authorization", token)
            .send()
            .await
            .expect("gpus");
        assert_eq!(response.status().as_u16(), 200);
        response.bytes().await.expect("GPU list");
    })
    .await;
    report(
        &format!("`GET /api/v1/gpus`, all {listed} GPUs"),
        &times,
        Some(50.0),
    );
    let page = browser
        .get(format!("{base}/"))
        .send()
        .await
        .expect("inventory")
        .text()
        .await
        .expect("page");
    let times = sample(rounds, || async {
        let response = browser
            .get(format!("{base}/"))
            .send()
            .await
            .expect("inventory");
        assert_eq!(response.status().as_u16(), 200);
        response.bytes().await.expect("page");
    })
    .await;
    report(
        &format!(
            "Inventory page, all GPUs ({} KB of HTML)",
            page.len() / 1024
        ),
        &times,
        Some(50.0),
    );
}

/// Pages of 100 of the reservations list: everyone's newest, one from the middle of the list by
/// cursor, one GPU's, and one user's own.
async fn bench_reservation_pages(
    api: &reqwest::Client,
    base: &str,
    token: &str,
    store: &Store,
    rounds: usize,
) {
    use berth_app::domain::paging::{Cursor, ListKind};
    let admin = format!("Bearer {}", store.admin_token);
    let middle = Cursor::at(store.fleet_end - TimeDelta::weeks(WEEKS / 2), i64::MAX)
        .encode(ListKind::Reservations);
    for (what, url, auth) in [
        (
            "everyone's, first page",
            format!("{base}/api/v1/reservations?mine=false&limit=100"),
            &admin,
        ),
        (
            "everyone's, a page from the middle (cursor)",
            format!("{base}/api/v1/reservations?mine=false&limit=100&cursor={middle}"),
            &admin,
        ),
        (
            "one GPU's, confirmed",
            format!(
                "{base}/api/v1/reservations?mine=false&limit=100&gpu={}&status=confirmed",
                store.gpu_ids[store.gpu_ids.len() / 2]
            ),
            &admin,
        ),
        (
            "a user's own",
            format!("{base}/api/v1/reservations?limit=100"),
            &token.to_owned(),
        ),
    ] {
        let first: serde_json::Value = api
            .get(&url)
            .header("authorization", auth)
            .send()
            .await
            .expect("reservations")
            .json()
            .await
            .expect("a page");
        let rows = first.as_array().map_or(0, Vec::len);
        assert!(rows > 0, "{what}: {first}");
        let times = sample(rounds, || async {
            let response = api
                .get(&url)
                .header("authorization", auth)
                .send()
                .await
                .expect("reservations");
            assert_eq!(response.status().as_u16(), 200);
            response.bytes().await.expect("a page");
        })
        .await;
        report(
            &format!(
                "`GET /api/v1/reservations`, {what} ({rows} of {} reservations)",
                store.reservations
            ),
            &times,
            Some(5.0),
        );
    }
}

/// 200 clients at once, each its own user with credits, spread over the replicas: first
/// `per_client` bookings each that never clash (every client books its own GPUs), then
/// `per_client` each on the 64 GPUs of one model over one day, which clash. Then checks that no
/// GPU is booked twice at once and that the ledger audit is clean.
async fn bench_contention(
    api: &reqwest::Client,
    replicas: &[String],
    store: &Store,
    conn: &sea_orm::DatabaseConnection,
    per_client: usize,
) {
    let clients = store.booker_tokens.len();
    let own = store.gpu_ids.len() / clients;
    let from = free_from(store);
    let (booked, clashed, elapsed, times) =
        contend(api, replicas, store, per_client, |client, k, _| {
            let gpu = store.gpu_ids[client * own + k % own];
            let start = from + TimeDelta::hours(2 * (k / own) as i64);
            (gpu, start, start + TimeDelta::hours(2))
        })
        .await;
    assert_eq!(clashed, 0, "requests on a client's own GPUs never clash");
    report(
        &format!(
            "Booking under contention, {clients} clients over {} replica(s), no clashes ({booked} booked)",
            replicas.len()
        ),
        &times,
        None,
    );
    println!(
        "| Booking throughput, no clashes | {:.0} bookings/s | {:.1} s for {} requests |",
        booked as f64 / elapsed,
        elapsed,
        times.len()
    );
    let contested = from + TimeDelta::days(4);
    let (booked, clashed, elapsed, times) =
        contend(api, replicas, store, per_client, |_, _, rng| {
            let gpu = store.gpu_ids[rng.random_range(0..64)];
            let start = contested + slots_of(rng.random_range(0..96));
            (gpu, start, start + slots_of(rng.random_range(4..=16)))
        })
        .await;
    report(
        &format!(
            "Booking under contention, {clients} clients on 64 GPUs over one day ({booked} booked, {clashed} refused as clashes)"
        ),
        &times,
        None,
    );
    println!(
        "| Booking throughput, with clashes | {:.0} answers/s | {:.0} bookings/s | {:.1} s for {} requests |",
        times.len() as f64 / elapsed,
        booked as f64 / elapsed,
        elapsed,
        times.len()
    );
    // No GPU holds two bookings at once where the benches booked (whole GPUs only there).
    use sea_orm::ConnectionTrait;
    let overlapping = conn
        .query_one_raw(sea_orm::Statement::from_sql_and_values(
            conn.get_database_backend(),
            match conn.get_database_backend() {
                sea_orm::DbBackend::Postgres => OVERLAPS.replace('?', "$1"),
                _ => OVERLAPS.to_owned(),
            },
            [from.into()],
        ))
        .await
        .expect("overlaps")
        .expect("a row")
        .try_get_by_index::<i64>(0)
        .expect("count");
    let audit = db::ledger::audit(conn).await.expect("ledger audit");
    assert_eq!(overlapping, 0, "no GPU overbooked");
    assert!(
        audit.total_minor == 0
            && audit.unbalanced_transactions.is_empty()
            && audit.drifted_wallets.is_empty()
            && audit.negative_wallets.is_empty()
            && audit.drifted_bookings.is_empty(),
        "the ledger audit is clean: {audit:?}"
    );
    println!(
        "| After contention | 0 overbooked GPU slots | ledger audit clean over {} transactions |",
        audit.transactions
    );
}

/// Confirmed bookings from `?` on that overlap another on the same GPU.
const OVERLAPS: &str = "SELECT COUNT(*) FROM reservation_gpus a \
    JOIN reservation_gpus b ON b.gpu_id = a.gpu_id AND b.reservation_id <> a.reservation_id \
    AND b.start_at < a.end_at AND a.start_at < b.end_at \
    JOIN reservations ra ON ra.id = a.reservation_id AND ra.status = 'confirmed' \
    JOIN reservations rb ON rb.id = b.reservation_id AND rb.status = 'confirmed' \
    WHERE a.start_at >= ?";

/// Every client (one per booker token) sends `per_client` bookings one after another, all
/// clients at once, client `c` to replica `c % replicas`; `request(client, k, rng)` says which
/// GPU and when. Answers (booked, clashed, seconds, sorted latencies in ms).
async fn contend<F>(
    api: &reqwest::Client,
    replicas: &[String],
    store: &Store,
    per_client: usize,
    request: F,
) -> (usize, usize, f64, Vec<f64>)
where
    F: Fn(usize, usize, &mut StdRng) -> (i64, chrono::DateTime<Utc>, chrono::DateTime<Utc>),
{
    let mut plans = Vec::new();
    for client in 0..store.booker_tokens.len() {
        let mut rng = StdRng::seed_from_u64(9_000 + client as u64);
        let bodies: Vec<serde_json::Value> = (0..per_client)
            .map(|k| {
                let (gpu, start, end) = request(client, k, &mut rng);
                fleet::whole_gpu(gpu, start, end)
            })
            .collect();
        plans.push(bodies);
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (client, bodies) in plans.into_iter().enumerate() {
        let api = api.clone();
        let token = format!("Bearer {}", store.booker_tokens[client]);
        let url = format!("{}/api/v1/reservations", replicas[client % replicas.len()]);
        tasks.push(tokio::spawn(async move {
            let mut outcomes = Vec::with_capacity(bodies.len());
            for body in bodies {
                let sent = Instant::now();
                let response = api
                    .post(&url)
                    .header("authorization", &token)
                    .json(&body)
                    .send()
                    .await
                    .expect("book");
                let status = response.status().as_u16();
                let text = response.text().await.unwrap_or_default();
                assert!(matches!(status, 201 | 409), "{status}: {text}");
                outcomes.push((status, sent.elapsed().as_secs_f64() * 1000.0));
            }
            outcomes
        }));
    }
    let (mut booked, mut clashed) = (0, 0);
    let mut times = Vec::new();
    for task in tasks {
        for (status, ms) in task.await.expect("client") {
            if status == 201 {
                booked += 1;
            } else {
                clashed += 1;
            }
            times.push(ms);
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    times.sort_by(f64::total_cmp);
    (booked, clashed, elapsed, times)
}

/// A browser signed in as the demo user, in a session of its own.
async fn signed_in_browser(base: &str) -> reqwest::Client {
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
    browser
}

/// Requests per second that `clients` (one task each) get from `url` in `seconds`.
async fn throughput(clients: &[reqwest::Client], url: &str, seconds: u64) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in clients {
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
