//! The evidence bench (issue 27): building the evidence of a 24-hour incident on an 8-GPU
//! booking, from a store that holds 30 days of telemetry for 1,000 GPUs, on SQLite and on
//! PostgreSQL, through the real application on a loopback port.
//!
//! ```text
//! cargo bench -p berth-server --bench evidence                       # both stores
//! cargo bench -p berth-server --bench evidence -- --backend sqlite   # one
//! cargo bench -p berth-server --bench evidence -- --days 3 --rounds 10   # a smaller store
//! ```
//!
//! The store: the portal bench's fleet (1,000 GPUs on 125 nodes, 50,000 reservations over 8
//! weeks), then what 30 days of agents' reports leave behind: one-minute rollups of every GPU
//! for 30 days (43 million rows), raw samples every 5 s for the last 24 hours (17 million
//! rows), throttle events every 6 hours and an XID 13 every 5 days per GPU, lease events
//! (granted at the start and revoked at the end of every past hold), the nodes' driver
//! versions with a change on every tenth node, and 100 admin changes a day in the audit log.
//! The incident's booking gets an XID 13 and 20 minutes at 93 °C on two of its GPUs.
//!
//! It measures, as a platform admin over the API (the JSON the page and the export are built
//! from; times include loopback HTTP and JSON encoding):
//! - the evidence of a 24-hour incident on an 8-GPU booking of the past week (rollups; the
//!   target: p50 < 500 ms);
//! - the evidence of an incident of up to 6 hours on an 8-GPU booking of the last 12 hours
//!   (raw samples);
//! - the incident's HTML export (the same evidence rendered with its charts).

#[path = "support/database.rs"]
mod database;
#[path = "support/fleet.rs"]
mod fleet;
#[path = "support/timing.rs"]
mod timing;

use berth_app::backend::db;
use berth_app::backend::entity::{audit_entry, gpu_access_event, gpu_event, node_driver_version};
use berth_server::configuration::{Config, LocalAgentMode, RawSettings};
use berth_server::startup::Application;
use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use database::{Backend, BenchDatabase, Stores};
use sea_orm::{
    ActiveValue::Set, ConnectionTrait, DatabaseConnection, DbBackend, EntityTrait, Statement,
};
use std::time::{Duration, Instant};
use timing::{report, sample};

/// Command-line options (after `cargo bench -p berth-server --bench evidence --`).
#[derive(clap::Parser)]
struct Options {
    /// The stores to measure.
    #[arg(long, value_enum, default_value = "both")]
    backend: Stores,
    /// Days of one-minute rollups in the store.
    #[arg(long, default_value_t = 30)]
    days: i64,
    /// Measured requests per case (after 5 unmeasured ones).
    #[arg(long, default_value_t = 30)]
    rounds: usize,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// The p50 the issue asks of the 24-hour incident's evidence.
const TARGET_P50_MS: f64 = 500.0;

fn main() {
    let options = <Options as clap::Parser>::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(8 * 1024 * 1024)
        .build()
        .expect("runtime");
    println!(
        "Berth evidence bench: {} GPUs on {} nodes, {} days of rollups, 24 h of raw samples; {} CPU cores",
        fleet::NODES * fleet::GPUS_PER_NODE,
        fleet::NODES,
        options.days,
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    let backends = options.backend.backends();
    for backend in backends {
        runtime.block_on(bench_backend(backend, &options));
    }
}

async fn bench_backend(backend: Backend, options: &Options) {
    println!("\n## {}\n", backend.name());
    let database = BenchDatabase::create(backend).await;
    let site = tempfile::tempdir().expect("temporary site root");
    let settings = RawSettings {
        bind: "127.0.0.1:0".to_owned(),
        database_url: Some(database.url.clone()),
        demo: Some(false),
        demo_bookings: Some(false),
        local_agent: LocalAgentMode::Off,
        log: "error".to_owned(),
        site_root: site.path().to_path_buf(),
        ..RawSettings::default()
    };
    let config = Config::from_raw(settings).expect("settings");
    berth_server::startup::migrate_only(&config)
        .await
        .expect("migrations");
    let conn = db::connect(&database.url).await.expect("connect");
    let started = Instant::now();
    let store = fleet::generate(&conn, backend).await;
    println!(
        "Fleet: {} GPUs, {} reservations in {:.1} s",
        store.gpus,
        store.reservations,
        started.elapsed().as_secs_f64()
    );
    let now = Utc::now()
        .duration_trunc(TimeDelta::minutes(1))
        .expect("a minute");
    let telemetry = Telemetry::write(&conn, backend, now, options.days).await;
    let long = eight_gpu_booking(&conn, now - TimeDelta::days(6), now - TimeDelta::hours(25))
        .await
        .expect("an 8-GPU booking in the past week");
    let recent =
        eight_gpu_booking(&conn, now - TimeDelta::hours(12), now - TimeDelta::hours(3)).await;
    mark_the_booking(&conn, &long, now).await;
    analyze(&conn).await;
    println!(
        "Telemetry: {} rollups, {} raw samples, {} events, {} lease events, {} admin changes in {:.1} s; store {}",
        telemetry.rollups,
        telemetry.samples,
        telemetry.events,
        telemetry.access_events,
        telemetry.audit_rows,
        telemetry.seconds,
        size_of_store(&conn, &database.url).await
    );

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
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
    let api = reqwest::Client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .expect("client");
    let admin = format!("Bearer {}", store.admin_token);

    let day_from = long.start;
    let day_to = long.start + TimeDelta::hours(24);
    let day = open_incident(&api, &base, &admin, long.id, day_from, day_to).await;
    check_evidence(&api, &base, &admin, day, "24-hour").await;
    let times = sample(options.rounds, || get(&api, &base, &admin, day, "")).await;
    report(
        "Evidence of a 24-hour incident, 8 GPUs (rollups), `GET /api/v1/incidents/{id}`",
        &times,
        Some(TARGET_P50_MS),
    );
    let times = sample(options.rounds, || {
        get(&api, &base, &admin, day, "/export.html")
    })
    .await;
    report(
        "The same incident's HTML export (`GET /incidents/{id}/export.html`)",
        &times,
        None,
    );
    match recent {
        Some(recent) => {
            let from = recent.start.max(now - TimeDelta::hours(6));
            // To the last sample written: nothing reports while the bench runs.
            let to = recent.end.min(now);
            let id = open_incident(&api, &base, &admin, recent.id, from, to).await;
            check_evidence(&api, &base, &admin, id, "recent").await;
            let times = sample(options.rounds, || get(&api, &base, &admin, id, "")).await;
            report(
                &format!(
                    "Evidence of a {:.1}-hour incident of the last 6 hours, 8 GPUs (raw samples)",
                    (to - from).num_minutes() as f64 / 60.0
                ),
                &times,
                None,
            );
        }
        None => {
            println!("(no 8-GPU booking started 3 to 12 hours ago: the raw-sample case is skipped)")
        }
    }

    let _ = stop.send(());
    let _ = server.await;
    let _ = conn.close().await;
    database.drop_database().await;
}

/// What [`Telemetry::write`] wrote.
struct Telemetry {
    rollups: i64,
    samples: i64,
    events: usize,
    access_events: usize,
    audit_rows: usize,
    seconds: f64,
}

/// The rows of a range of integers `a..=b` as `m(k)`, in the store's own SQL.
fn series(backend: Backend, a: i64, b: i64) -> String {
    match backend {
        Backend::Sqlite => format!(
            "(WITH RECURSIVE s(k) AS (SELECT {a} UNION ALL SELECT k + 1 FROM s WHERE k < {b}) \
             SELECT k FROM s) AS m"
        ),
        Backend::Postgres => format!("generate_series({a}::bigint, {b}::bigint) AS m(k)"),
    }
}

impl Telemetry {
    /// Writes `days` of rollups (up to `now`), the last 24 hours of raw samples, and the
    /// events, lease events, driver versions and audit rows around them.
    async fn write(
        conn: &DatabaseConnection,
        backend: Backend,
        now: DateTime<Utc>,
        days: i64,
    ) -> Self {
        let started = Instant::now();
        let now_ms = now.timestamp_millis();
        if backend == Backend::Postgres {
            conn.execute_unprepared("SET synchronous_commit = off")
                .await
                .expect("synchronous_commit");
        }
        // The GPUs and nodes were there before the telemetry.
        let joined = now - TimeDelta::days(days + 1);
        use berth_app::backend::entity::{gpu, node};
        use sea_orm::sea_query::Expr;
        gpu::Entity::update_many()
            .col_expr(gpu::Column::CreatedAt, Expr::value(joined))
            .exec(conn)
            .await
            .expect("GPUs' created_at");
        node::Entity::update_many()
            .col_expr(node::Column::CreatedAt, Expr::value(joined))
            .exec(conn)
            .await
            .expect("nodes' created_at");
        // Every node reports every 5 s.
        conn.execute_unprepared("UPDATE nodes SET report_interval_s = 5, agent_source = 'nvml'")
            .await
            .expect("nodes");

        // One-minute rollups: a day per statement, minute by minute, every GPU each minute.
        // Three hours short of the keep, so the prune job leaves them all.
        let minutes = days * 1_440 - 180;
        let first_ms = now_ms - minutes * 60_000;
        let mut rollups = 0;
        let mut from = 0;
        while from < minutes {
            let to = (from + 1_440).min(minutes) - 1;
            let sql = format!(
                "INSERT INTO gpu_rollups (gpu_id, minute_ms, samples, util_min, util_avg, util_max, \
                 mem_min, mem_avg, mem_max, temp_min, temp_avg, temp_max, power_min, power_avg, power_max) \
                 SELECT g.id, {first_ms} + m.k * 60000, 12, \
                 ((g.id * 37 + m.k * 13) % 101) / 2 * 1.0, ((g.id * 37 + m.k * 13) % 101) * 1.0, \
                 ((g.id * 37 + m.k * 13) % 101) * 1.0 + 0.5, \
                 ((g.id * 7919 + m.k * 31) % 20000) * 1.0, ((g.id * 7919 + m.k * 31) % 20000) * 1.0 + 512.0, \
                 ((g.id * 7919 + m.k * 31) % 20000) * 1.0 + 1024.0, \
                 (34 + (g.id + m.k) % 45) * 1.0, (35 + (g.id + m.k) % 45) * 1.0, (37 + (g.id + m.k) % 45) * 1.0, \
                 (90 + (g.id * 11 + m.k * 7) % 500) * 1.0, (100 + (g.id * 11 + m.k * 7) % 500) * 1.0, \
                 (120 + (g.id * 11 + m.k * 7) % 500) * 1.0 \
                 FROM {} CROSS JOIN gpus g",
                series(backend, from, to)
            );
            rollups += conn
                .execute_unprepared(&sql)
                .await
                .expect("rollups")
                .rows_affected() as i64;
            from = to + 1;
            if from % (1_440 * 5) == 0 || from >= minutes {
                println!(
                    "  rollups: {rollups} rows ({:.0} s)",
                    started.elapsed().as_secs_f64()
                );
            }
        }

        // Raw samples every 5 s for the last 24 hours: an hour per statement.
        let per_hour = 720;
        let first_sample_ms = now_ms - 86_400_000;
        let mut samples = 0;
        for hour in 0..24 {
            let (a, b) = (hour * per_hour, (hour + 1) * per_hour - 1);
            let sql = format!(
                "INSERT INTO gpu_samples (gpu_id, at_ms, gpu_util, mem_util, memory_used_mib, \
                 temperature_c, power_mw, power_limit_mw, sm_clock_mhz, throttle_reasons, \
                 ecc_corrected, ecc_uncorrected) \
                 SELECT g.id, {first_sample_ms} + m.k * 5000, (g.id * 37 + m.k * 13) % 101, \
                 (g.id * 17 + m.k * 3) % 101, (g.id * 7919 + m.k * 31) % 20000, 35 + (g.id + m.k) % 45, \
                 (100 + (g.id * 11 + m.k * 7) % 500) * 1000, 700000, 1400 + (g.id + m.k) % 500, 0, 0, 0 \
                 FROM {} CROSS JOIN gpus g",
                series(backend, a, b)
            );
            samples += conn
                .execute_unprepared(&sql)
                .await
                .expect("samples")
                .rows_affected() as i64;
        }
        println!(
            "  raw samples: {samples} rows ({:.0} s)",
            started.elapsed().as_secs_f64()
        );
        // The rollup job starts after them: what is in the store is rolled up already.
        conn.execute_unprepared(&format!(
            "UPDATE telemetry_state SET rolled_up_to_ms = {now_ms}, dirty_from_ms = NULL WHERE id = 1"
        ))
        .await
        .expect("telemetry state");

        let gpus: Vec<(i64, i64)> = db::incidents::gpus_of_nodes(
            conn,
            &berth_app::backend::entity::node::Entity::find()
                .all(conn)
                .await
                .expect("nodes")
                .iter()
                .map(|n| n.id)
                .collect::<Vec<_>>(),
        )
        .await
        .expect("GPUs");
        let first = now - TimeDelta::minutes(minutes);
        // Throttle events every 6 hours (power cap on, then off 20 minutes later) and an
        // XID 13 every 5 days, each GPU at its own offset.
        let mut events = Vec::new();
        for &(gpu, _) in &gpus {
            let offset = TimeDelta::minutes(gpu * 7 % 360);
            let mut at = first + offset;
            let mut n = 0;
            while at < now {
                events.push((gpu, at, "throttle", 4));
                events.push((gpu, at + TimeDelta::minutes(20), "throttle", 0));
                if n % 20 == 19 {
                    events.push((gpu, at + TimeDelta::minutes(3), "xid", 13));
                }
                at += TimeDelta::hours(6);
                n += 1;
            }
        }
        for batch in events.chunks(5_000) {
            gpu_event::Entity::insert_many(batch.iter().map(|&(gpu, at, kind, code)| {
                gpu_event::ActiveModel {
                    gpu_id: Set(gpu),
                    at: Set(at),
                    kind: Set(kind.to_owned()),
                    code: Set(Some(code)),
                    ..Default::default()
                }
            }))
            .exec_without_returning(conn)
            .await
            .expect("events");
        }

        // Lease events: each past hold granted at its start and revoked at its end.
        let holds: Vec<(i64, i64, DateTime<Utc>, DateTime<Utc>)> =
            berth_app::backend::entity::reservation_gpu::Entity::find()
                .all(conn)
                .await
                .expect("holds")
                .into_iter()
                .filter(|h| h.start_at < now)
                .map(|h| (h.reservation_id, h.gpu_id, h.start_at, h.end_at))
                .collect();
        let mut access = Vec::new();
        for &(reservation, gpu, start, end) in &holds {
            access.push((reservation, gpu, start, "granted"));
            if end <= now {
                access.push((reservation, gpu, end, "revoked"));
            }
        }
        for batch in access.chunks(5_000) {
            gpu_access_event::Entity::insert_many(batch.iter().map(
                |&(reservation, gpu, at, kind)| gpu_access_event::ActiveModel {
                    gpu_id: Set(gpu),
                    reservation_id: Set(Some(reservation)),
                    at: Set(at),
                    kind: Set(kind.to_owned()),
                    ..Default::default()
                },
            ))
            .exec_without_returning(conn)
            .await
            .expect("lease events");
        }

        // Driver versions: every node from the start, every tenth upgraded half-way.
        let node_ids: Vec<i64> = {
            let mut ids: Vec<i64> = gpus.iter().map(|(_, node)| *node).collect();
            ids.sort_unstable();
            ids.dedup();
            ids
        };
        let mut drivers = Vec::new();
        for (n, &node) in node_ids.iter().enumerate() {
            drivers.push((node, "570.124.06", joined));
            if n % 10 == 0 {
                drivers.push((node, "580.159.04", now - TimeDelta::days(days / 2)));
            }
        }
        node_driver_version::Entity::insert_many(drivers.iter().map(|&(node, version, from)| {
            node_driver_version::ActiveModel {
                node_id: Set(node),
                driver_version: Set(Some(version.to_owned())),
                source: Set("nvml".to_owned()),
                from_at: Set(from),
                ..Default::default()
            }
        }))
        .exec_without_returning(conn)
        .await
        .expect("driver versions");

        // Admin changes: 100 a day, spread over GPUs, nodes, models and the platform.
        let mut audit = Vec::new();
        let mut at = first;
        let mut n: i64 = 0;
        while at < now {
            let gpu = gpus[(n as usize * 131) % gpus.len()].0;
            let node = node_ids[(n as usize * 17) % node_ids.len()];
            let (action, kind, target, after) = match n % 5 {
                0 => (
                    "maintenance.create",
                    "maintenance",
                    n.to_string(),
                    Some(format!("{{\"gpu_id\":{gpu}}}")),
                ),
                1 => (
                    "gpu.price",
                    "gpu",
                    gpu.to_string(),
                    Some("{\"hourly_price_minor\":349}".to_owned()),
                ),
                2 => ("gpu.retire", "gpu", gpu.to_string(), None),
                3 => ("node.token.revoke", "node", node.to_string(), None),
                _ => ("idle.policy", "idle_policy", "platform".to_owned(), None),
            };
            audit.push(audit_entry::ActiveModel {
                at: Set(at),
                actor_id: Set(None),
                action: Set(action.to_owned()),
                target_kind: Set(kind.to_owned()),
                target_id: Set(target),
                team_id: Set(None),
                before_json: Set(None),
                after_json: Set(after),
                ..Default::default()
            });
            at += TimeDelta::seconds(864);
            n += 1;
        }
        let audit_rows = audit.len();
        for batch in audit.chunks(2_000) {
            audit_entry::Entity::insert_many(batch.to_vec())
                .exec_without_returning(conn)
                .await
                .expect("audit");
        }
        Self {
            rollups,
            samples,
            events: events.len(),
            access_events: access.len(),
            audit_rows,
            seconds: started.elapsed().as_secs_f64(),
        }
    }
}

/// A booking the bench opens an incident on.
struct Booking {
    id: i64,
    gpus: Vec<i64>,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
}

/// The latest confirmed booking of 8 GPUs that starts in `[from, to)`.
async fn eight_gpu_booking(
    conn: &DatabaseConnection,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Option<Booking> {
    use berth_app::backend::entity::reservation;
    use sea_orm::{ColumnTrait, QueryFilter, QueryOrder};
    let row = reservation::Entity::find()
        .filter(reservation::Column::GpuCount.eq(8))
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::StartAt.gte(from))
        .filter(reservation::Column::StartAt.lt(to))
        .order_by_desc(reservation::Column::StartAt)
        .one(conn)
        .await
        .expect("a booking")?;
    let mut gpus: Vec<i64> = berth_app::backend::entity::reservation_gpu::Entity::find()
        .filter(berth_app::backend::entity::reservation_gpu::Column::ReservationId.eq(row.id))
        .all(conn)
        .await
        .expect("its GPUs")
        .into_iter()
        .map(|h| h.gpu_id)
        .collect();
    gpus.sort_unstable();
    Some(Booking {
        id: row.id,
        gpus,
        start: row.start_at,
        end: row.end_at,
    })
}

/// Gives the booking something to diagnose: an XID 13 on its first GPU and 20 minutes at
/// 93 °C on its first two, an hour into it.
async fn mark_the_booking(conn: &DatabaseConnection, booking: &Booking, now: DateTime<Utc>) {
    let at = booking.start + TimeDelta::hours(1);
    assert!(at < now, "the booking is in the past");
    gpu_event::Entity::insert(gpu_event::ActiveModel {
        gpu_id: Set(booking.gpus[0]),
        at: Set(at),
        kind: Set("xid".to_owned()),
        code: Set(Some(13)),
        ..Default::default()
    })
    .exec_without_returning(conn)
    .await
    .expect("XID");
    let (a, b) = (
        at.timestamp_millis(),
        (at + TimeDelta::minutes(20)).timestamp_millis(),
    );
    conn.execute_unprepared(&format!(
        "UPDATE gpu_rollups SET temp_max = 93.0, temp_avg = 92.0 WHERE gpu_id IN ({}, {}) \
         AND minute_ms >= {a} AND minute_ms < {b}",
        booking.gpus[0], booking.gpus[1]
    ))
    .await
    .expect("heat");
}

async fn analyze(conn: &DatabaseConnection) {
    let sql = if conn.get_database_backend() == DbBackend::Postgres {
        "VACUUM ANALYZE"
    } else {
        "ANALYZE"
    };
    conn.execute_unprepared(sql).await.expect("analyze");
}

/// The store's size on disk.
async fn size_of_store(conn: &DatabaseConnection, url: &str) -> String {
    let bytes: i64 = if conn.get_database_backend() == DbBackend::Postgres {
        conn.query_one_raw(Statement::from_string(
            DbBackend::Postgres,
            "SELECT pg_database_size(current_database())",
        ))
        .await
        .expect("size")
        .expect("a row")
        .try_get_by_index(0)
        .expect("bytes")
    } else {
        let path = url
            .trim_start_matches("sqlite://")
            .split('?')
            .next()
            .unwrap_or_default();
        std::fs::metadata(path).map_or(0, |m| m.len() as i64)
    };
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

/// Opens an incident on `booking` over `[from, to)` as the admin; its id.
async fn open_incident(
    api: &reqwest::Client,
    base: &str,
    admin: &str,
    booking: i64,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> i64 {
    let started = Instant::now();
    let response = api
        .post(format!("{base}/api/v1/incidents"))
        .header("authorization", admin)
        .json(&serde_json::json!({
            "reservation_id": booking,
            "report": "The job slowed down and then died.",
            "from": from,
            "to": to,
        }))
        .send()
        .await
        .expect("open");
    let status = response.status().as_u16();
    let body: serde_json::Value = response.json().await.expect("JSON");
    assert_eq!(status, 201, "open an incident: {body}");
    println!(
        "Opened incident {} on booking {booking} ({} to {}) in {:.0} ms",
        body["incident"]["id"],
        from.format("%Y-%m-%d %H:%M"),
        to.format("%Y-%m-%d %H:%M"),
        started.elapsed().as_secs_f64() * 1000.0
    );
    body["incident"]["id"].as_i64().expect("an id")
}

/// Checks the evidence holds what the store put there, and prints what it read.
async fn check_evidence(api: &reqwest::Client, base: &str, admin: &str, id: i64, what: &str) {
    let body: serde_json::Value = api
        .get(format!("{base}/api/v1/incidents/{id}"))
        .header("authorization", admin)
        .send()
        .await
        .expect("evidence")
        .json()
        .await
        .expect("JSON");
    let gpus = body["gpus"].as_array().expect("GPUs");
    assert_eq!(
        gpus.len(),
        8,
        "the {what} incident covers the booking's 8 GPUs"
    );
    let points: usize = gpus
        .iter()
        .map(|g| g["series"]["points"].as_array().map_or(0, Vec::len))
        .sum();
    let events: usize = gpus
        .iter()
        .map(|g| g["events"].as_array().map_or(0, Vec::len))
        .sum();
    assert!(
        points > 0,
        "the {what} incident has telemetry: {}",
        gpus[0]["series"]
    );
    let causes: Vec<String> = body["diagnosis"]["hypotheses"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|h| h["cause"].as_str().unwrap_or("?").to_owned())
                .collect()
        })
        .unwrap_or_default();
    println!(
        "The {what} incident's evidence: {points} telemetry points ({}), {events} GPU events, {} lease events, {} admin changes, {} bytes of JSON; hypotheses: {}",
        gpus[0]["series"]["resolution"],
        body["access"].as_array().map_or(0, Vec::len),
        body["admin_changes"].as_array().map_or(0, Vec::len),
        body.to_string().len(),
        if causes.is_empty() {
            "none".to_owned()
        } else {
            causes.join(", ")
        }
    );
}

/// One request for incident `id` (`suffix` "" for the API's JSON, or "/export.html").
async fn get(api: &reqwest::Client, base: &str, admin: &str, id: i64, suffix: &str) {
    let url = if suffix.is_empty() {
        format!("{base}/api/v1/incidents/{id}")
    } else {
        format!("{base}/incidents/{id}{suffix}")
    };
    let response = api
        .get(url)
        .header("authorization", admin)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status().as_u16(), 200, "incident {id}{suffix}");
    let body = response.bytes().await.expect("body");
    assert!(!body.is_empty());
}
