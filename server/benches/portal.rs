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

use berth_app::backend::db;
use berth_app::domain::schedule::SLOT_MINUTES;
use berth_server::configuration::{Config, RawSettings};
use berth_server::startup::Application;
use chrono::{TimeDelta, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

#[path = "support/database.rs"]
mod database;
#[path = "support/fleet.rs"]
mod fleet;
#[path = "support/timing.rs"]
mod timing;
use database::{Backend, BenchDatabase, Stores};
use fleet::{
    GPUS_PER_NODE, NODES, RESERVATIONS, SLOT_MODEL, Store, WEEK_VIEW_MODEL, WEEKS, generate,
    slot_ceil,
};
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
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

impl Options {
    fn backends(&self) -> Vec<Backend> {
        self.backend.backends()
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
