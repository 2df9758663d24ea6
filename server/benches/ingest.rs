//! Telemetry ingest benchmark: 1,000 GPUs (125 nodes × 8) reporting one sample per GPU per
//! second to a real `berth serve` process, on SQLite and PostgreSQL.
//!
//! ```sh
//! cargo bench -p berth-server --bench ingest                        # both stores, 60 s each
//! cargo bench -p berth-server --bench ingest -- --backend sqlite --seconds 20
//! ```
//!
//! Each node is a client task that, once a second, posts a report with one sample of each of its
//! 8 GPUs (`POST /api/v1/agent/report` with its node token), like `berth agent --interval 1`.
//! Reported: the portal's CPU use (from `/proc/PID/stat` of the server process, so the clients'
//! CPU is not counted), report latency (p50 / p99), samples stored, and bytes stored per
//! GPU-day (raw samples; and rollups, from the store's size before and after).

#[path = "support/database.rs"]
mod database;

use berth_app::backend::telemetry;
use berth_app::domain::telemetry::{
    GpuInfo, GpuSample, Readings, Registration, Report, SourceKind,
};
use chrono::Utc;
use database::{Backend, BenchDatabase, Stores};
use sea_orm::{ConnectionTrait, Database, DatabaseConnection, DbBackend, Statement};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NODES: usize = 125;
const GPUS_PER_NODE: usize = 8;

/// Options (after `cargo bench -p berth-server --bench ingest --`).
#[derive(clap::Parser)]
struct Options {
    /// The stores to measure.
    #[arg(long, value_enum, default_value = "both")]
    backend: Stores,
    /// Seconds of sustained load per store.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// CPU seconds (user + system) the process has used so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which is in parentheses): utime and stime are 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11..13).map_or(0.0, |f| {
        f.iter().filter_map(|v| v.parse::<f64>().ok()).sum()
    });
    // Linux reports in clock ticks of 1/100 s on every common configuration.
    ticks / 100.0
}

async fn store_bytes(db: &DatabaseConnection) -> (i64, i64) {
    let one = |sql: &str| Statement::from_string(db.get_database_backend(), sql.to_owned());
    match db.get_database_backend() {
        DbBackend::Sqlite => {
            db.execute_raw(one("PRAGMA wal_checkpoint(TRUNCATE)"))
                .await
                .ok();
            let row = db
                .query_one_raw(one(
                    "SELECT (SELECT page_count FROM pragma_page_count()) * \
                     (SELECT page_size FROM pragma_page_size()) AS bytes",
                ))
                .await
                .unwrap()
                .unwrap();
            (row.try_get::<i64>("", "bytes").unwrap(), 0)
        }
        _ => {
            let row = db
                .query_one_raw(one(
                    "SELECT pg_total_relation_size('gpu_samples') AS samples, \
                     pg_total_relation_size('gpu_rollups') AS rollups",
                ))
                .await
                .unwrap()
                .unwrap();
            (
                row.try_get::<i64>("", "samples").unwrap(),
                row.try_get::<i64>("", "rollups").unwrap(),
            )
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

async fn bench(backend: Backend, seconds: u64) {
    println!(
        "\n## {} — {NODES} nodes × {GPUS_PER_NODE} GPUs, 1 sample/GPU/s, {seconds} s\n",
        backend.name()
    );
    let database = BenchDatabase::create(backend).await;
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let mut command = Command::new(env!("CARGO_BIN_EXE_berth"));
    for (key, _) in std::env::vars() {
        if key.starts_with("BERTH_") {
            command.env_remove(key);
        }
    }
    let child = command
        .arg("serve")
        .env("BERTH_DATABASE_URL", &database.url)
        .env("BERTH_BIND", format!("127.0.0.1:{port}"))
        .env("BERTH_DEMO", "false")
        .env("BERTH_LOCAL_AGENT", "off")
        .env("BERTH_LOG", "warn")
        .env("BERTH_TELEMETRY_JOB_SECONDS", "10")
        .env("BERTH_SITE_ROOT", std::env::temp_dir())
        .stdout(Stdio::null())
        .spawn()
        .expect("start berth serve");
    let server = Server(child);
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(NODES)
        .build()
        .unwrap();
    for _ in 0..300 {
        if client
            .get(format!("{base}/readyz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let db = Database::connect(&database.url)
        .await
        .expect("the bench store");

    // Nodes, tokens and GPUs.
    let mut nodes = Vec::new();
    for n in 0..NODES {
        let name = format!("node-{n:03}");
        let (_, token) = telemetry::issue_node_token(&db, &name, Some(true), None, Utc::now())
            .await
            .unwrap();
        let gpus: Vec<GpuInfo> = (0..GPUS_PER_NODE)
            .map(|i| GpuInfo {
                uuid: format!("GPU-bench-{n:03}-{i}"),
                name: "NVIDIA H100 80GB HBM3".into(),
                pci_bus_id: Some(format!("00000000:{:02X}:00.0", 0x17 + i)),
                memory_total_mib: 81_559,
                device_index: u32::try_from(i).unwrap(),
                minor_number: None,
            })
            .collect();
        let registration = Registration {
            hostname: name.clone(),
            driver_version: Some("550.54.15".into()),
            source: SourceKind::Nvml,
            interval_seconds: 1,
            gpus: gpus.clone(),
        };
        let status = client
            .post(format!("{base}/api/v1/agent/register"))
            .bearer_auth(&token)
            .json(&registration)
            .send()
            .await
            .unwrap()
            .status();
        assert!(status.is_success(), "register {name}: {status}");
        nodes.push((token, gpus));
    }
    let (bytes_before, rollups_before) = store_bytes(&db).await;

    // Load: every node reports each second, spread over the second.
    let pid = server.0.id();
    let cpu_before = cpu_seconds(pid);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (n, (token, gpus)) in nodes.into_iter().enumerate() {
        let client = client.clone();
        let url = format!("{base}/api/v1/agent/report");
        tasks.push(tokio::spawn(async move {
            let offset = Duration::from_millis((n as u64 * 1000) / NODES as u64);
            tokio::time::sleep(offset).await;
            let mut ticker = tokio::time::interval(Duration::from_secs(1));
            let mut latencies = Vec::new();
            let mut failures = 0u32;
            let mut tick = 0u64;
            while started.elapsed() < Duration::from_secs(seconds) {
                ticker.tick().await;
                tick += 1;
                let at = Utc::now();
                let report = Report {
                    samples: gpus
                        .iter()
                        .map(|gpu| {
                            let util = ((tick * 7 + u64::from(gpu.device_index) * 13) % 101) as u8;
                            GpuSample {
                                uuid: gpu.uuid.clone(),
                                at,
                                readings: Readings {
                                    gpu_util: Some(util),
                                    mem_util: Some(util / 2),
                                    memory_used_mib: Some(20_000 + u64::from(util) * 500),
                                    temperature_c: Some(35 + i16::from(util / 3)),
                                    power_mw: Some(80_000 + u32::from(util) * 6_000),
                                    power_limit_mw: Some(700_000),
                                    sm_clock_mhz: Some(1_980),
                                    throttle_reasons: Some(0),
                                    ecc_corrected: Some(0),
                                    ecc_uncorrected: Some(0),
                                },
                                processes: vec![],
                            }
                        })
                        .collect(),
                    access: vec![],
                    environments: vec![],
                    events: vec![],
                };
                let sent = Instant::now();
                match client
                    .post(&url)
                    .bearer_auth(&token)
                    .json(&report)
                    .send()
                    .await
                {
                    Ok(r) if r.status().is_success() => latencies.push(sent.elapsed()),
                    _ => failures += 1,
                }
            }
            (latencies, failures)
        }));
    }
    let mut latencies = Vec::new();
    let mut failures = 0;
    for task in tasks {
        let (l, f) = task.await.unwrap();
        latencies.extend(l);
        failures += f;
    }
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds(pid) - cpu_before;
    latencies.sort();

    let stored: i64 = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT COUNT(*) AS n FROM gpu_samples".to_owned(),
        ))
        .await
        .unwrap()
        .unwrap()
        .try_get("", "n")
        .unwrap();
    let rollup_rows: i64 = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT COUNT(*) AS n FROM gpu_rollups".to_owned(),
        ))
        .await
        .unwrap()
        .unwrap()
        .try_get("", "n")
        .unwrap();
    let (bytes_after, rollups_after) = store_bytes(&db).await;
    let gpu_days = stored as f64 / 86_400.0;
    let per_gpu_day = |bytes: i64| bytes as f64 / gpu_days / 1_048_576.0;

    println!("| Measure | Value |");
    println!("|---|---|");
    println!(
        "| Reports sent / failed | {} / {failures} |",
        latencies.len()
    );
    println!(
        "| Samples stored | {stored} ({:.0} per second) |",
        stored as f64 / wall
    );
    println!(
        "| Report latency p50 / p99 / max | {} / {} / {} ms |",
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.99)),
        ms(latencies.last().copied().unwrap_or_default())
    );
    println!(
        "| Portal CPU | {cpu:.1} s over {wall:.1} s = {:.2} cores |",
        cpu / wall
    );
    match backend {
        Backend::Sqlite => println!(
            "| Stored per GPU-day (whole file: samples, indexes, rollups, latest values) | {:.1} MiB |",
            per_gpu_day(bytes_after - bytes_before)
        ),
        Backend::Postgres => {
            println!(
                "| Raw samples per GPU-day (table + indexes) | {:.1} MiB |",
                per_gpu_day(bytes_after - bytes_before)
            );
            if rollup_rows > 0 {
                println!(
                    "| Rollups per GPU-day (1,440 rows; table + index) | {:.2} MiB |",
                    (rollups_after - rollups_before) as f64 / rollup_rows as f64 * 1440.0
                        / 1_048_576.0
                );
            }
        }
    }
    println!("| Rollup rows written | {rollup_rows} |");
    drop(server);
    let _ = db.close().await;
    database.drop_database().await;
}

fn main() {
    let options = <Options as clap::Parser>::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "Berth ingest benchmark; {} CPU cores",
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    let backends = options.backend.backends();
    for backend in backends {
        runtime.block_on(bench(backend, options.seconds));
    }
}
