//! Cost reports over HTTP, on both stores: totals equal to what the ledger and the telemetry
//! rollups say when asked independently, who may see which bookings, period boundaries in a
//! time zone with a clock change, CSV that reads back exactly (commas, quotes, non-ASCII), and
//! the report pages.

use crate::helpers::*;
use berth_app::backend::auth::tokens;
use berth_app::backend::db;
use berth_app::backend::entity::{gpu, gpu_sample, reservation, reservation_usage};
use berth_app::backend::state::TelemetrySettings;
use berth_app::domain::user::{Email, NewUser, PlatformRole, TokenName, UserName};
use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use reqwest::Method;
use sea_orm::{ActiveValue::Set, ConnectionTrait, EntityTrait, Statement};
use serde_json::{Value, json};

/// A user named `name` with a token, and their id; funded with the test credits when asked.
async fn person(app: &TestApp, email: &str, name: &str, funded: bool) -> (String, i64) {
    let token = if funded {
        crate::helpers::user_token(app, email, PlatformRole::User).await
    } else {
        unfunded_user_token(app, email, PlatformRole::User).await
    };
    let user = db::users::upsert_user(
        &app.db,
        &NewUser {
            email: Email::parse(email).unwrap(),
            name: UserName::parse(name).unwrap(),
            role: PlatformRole::User,
        },
        Utc::now(),
    )
    .await
    .unwrap();
    (token, user.id)
}

/// A platform admin's token.
async fn platform_admin(app: &TestApp) -> String {
    let (token, hash) = tokens::generate();
    let user = db::users::upsert_user(
        &app.db,
        &NewUser {
            email: Email::parse("root@example.com").unwrap(),
            name: UserName::parse("root").unwrap(),
            role: PlatformRole::PlatformAdmin,
        },
        Utc::now(),
    )
    .await
    .unwrap();
    db::api_tokens::insert_token(
        &app.db,
        user.id,
        &TokenName::parse("test").unwrap(),
        &hash,
        Utc::now(),
    )
    .await
    .unwrap();
    token
}

/// One query's single number (an independent reading of the tables).
async fn scalar_f64(app: &TestApp, sql: &str) -> f64 {
    let backend = app.db.get_database_backend();
    let row = app
        .db
        .query_one_raw(Statement::from_string(backend, sql.to_owned()))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index::<Option<f64>>(0)
        .unwrap()
        .unwrap_or(0.0)
}

/// One sample a minute for `gpu`, at `util` percent, from `from` for `minutes`.
async fn samples(app: &TestApp, gpu: i64, from: DateTime<Utc>, minutes: i64, util: i16) {
    let rows = (0..minutes).map(|m| gpu_sample::ActiveModel {
        gpu_id: Set(gpu),
        at_ms: Set((from + TimeDelta::minutes(m) + TimeDelta::seconds(10)).timestamp_millis()),
        gpu_util: Set(Some(util)),
        mem_util: Set(None),
        memory_used_mib: Set(None),
        temperature_c: Set(None),
        power_mw: Set(None),
        power_limit_mw: Set(None),
        sm_clock_mhz: Set(None),
        throttle_reasons: Set(None),
        ecc_corrected: Set(None),
        ecc_uncorrected: Set(None),
    });
    gpu_sample::Entity::insert_many(rows)
        .exec_without_returning(&app.db)
        .await
        .unwrap();
}

fn row_by_key<'a>(report: &'a Value, key: &str) -> &'a Value {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == key)
        .unwrap_or_else(|| panic!("no row {key} in {report}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 0.006
}

const TEAM_NAME: &str = "Équipe \"Núcleo\", São Paulo";
/// A name a spreadsheet would run as a formula.
const CAROL: &str = "=HYPERLINK(\"http://x.invalid\", \"Carol Ñandú\")";

async fn totals_equal_the_ledger_and_the_telemetry(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = platform_admin(&app).await;
    let (ana, _) = person(&app, "ana@example.com", "Ana", false).await;
    let (bia, _) = person(&app, "bia@example.com", "Bia \"B\", Souza", false).await;
    let (carol, _) = person(&app, "carol@example.com", CAROL, true).await;
    let team = funded_team(
        &app,
        &platform,
        TEAM_NAME,
        ("ana@example.com", &ana),
        &["bia@example.com"],
    )
    .await;
    let team_funds = team_balance(&app, &platform, team).await;
    let h100 = gpus_of(&app, H100).await;
    let l40s = gpus_of(&app, "NVIDIA L40S").await;
    let start = berth_app::domain::schedule::slot_floor(Utc::now());
    let at = |hours: i64| (start + TimeDelta::hours(hours)).to_rfc3339();
    // Bia runs 3 hours on a team H100 from the current slot.
    let (status, running) = post_json(
        &app,
        &bia,
        "/api/v1/reservations",
        &json!({ "gpu_ids": [h100[0]], "team_id": team, "start": at(0), "end": at(3) }),
    )
    .await;
    assert_eq!(status, 201, "{running}");
    // Ana books two days ahead and cancels: a full refund, nothing reserved.
    let (status, cancelled) = post_json(
        &app,
        &ana,
        "/api/v1/reservations",
        &json!({ "gpu_ids": [h100[1]], "team_id": team, "start": at(48), "end": at(50) }),
    )
    .await;
    assert_eq!(status, 201, "{cancelled}");
    let (status, body) = send(
        &app,
        Method::DELETE,
        Some(&ana),
        &format!("/api/v1/reservations/{}", cancelled["id"]),
        None,
    )
    .await;
    assert!(status == 200 || status == 204, "{status} {body}");
    // Carol books half an L40S for 4 hours tomorrow, personally.
    let (status, personal) = post_json(
        &app,
        &carol,
        "/api/v1/reservations",
        &json!({ "gpu_ids": [l40s[0]], "share": "0.5", "start": at(24), "end": at(28) }),
    )
    .await;
    assert_eq!(status, 201, "{personal}");

    // Telemetry: Bia's GPU idles (5 %) for 30 minutes, then works (60 %) for an hour; another
    // H100 nobody booked works too (the fleet sees it, no booking does).
    samples(&app, h100[0], start, 30, 5).await;
    samples(&app, h100[0], start + TimeDelta::minutes(30), 60, 60).await;
    samples(&app, h100[5], start, 90, 90).await;
    berth_app::backend::telemetry::run_maintenance(
        &app.db,
        &TelemetrySettings::default(),
        start + TimeDelta::hours(2),
    )
    .await
    .unwrap();

    let from = (start - TimeDelta::days(1)).date_naive();
    let to = (start + TimeDelta::days(5)).date_naive();
    let query = format!("from={from}&to={to}&tz=UTC");
    let (status, report) = get(
        &app,
        &platform,
        &format!("/api/v1/reports/usage?{query}&group_by=team&scope=all"),
    )
    .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["period"]["from"], from.to_string());
    assert_eq!(report["period"]["to"], to.to_string());

    // Money, read independently: what left each wallet.
    let team_row = row_by_key(&report, &format!("team:{team}"));
    assert_eq!(team_row["name"], TEAM_NAME);
    let team_spent = team_funds - team_balance(&app, &platform, team).await;
    assert_eq!(team_row["net_spend_minor"], team_spent);
    assert_eq!(team_row["bookings"], 2);
    assert_eq!(
        team_row["charged_minor"].as_i64().unwrap() - team_row["refunds_minor"].as_i64().unwrap(),
        team_spent
    );
    assert!(
        team_row["refunds_minor"].as_i64().unwrap() > 0,
        "the cancellation was refunded"
    );
    let (_, wallet) = get(&app, &carol, "/api/v1/wallet").await;
    let carol_spent = TEST_CREDITS_MINOR - wallet["balance_minor"].as_i64().unwrap();
    let personal_row = row_by_key(&report, "personal");
    assert_eq!(personal_row["net_spend_minor"], carol_spent);
    assert!(close(
        personal_row["reserved_gpu_hours"].as_f64().unwrap(),
        2.0
    ));
    assert_eq!(
        report["totals"]["net_spend_minor"].as_i64().unwrap(),
        team_spent + carol_spent
    );

    // Telemetry, read independently from the one-minute rollups of Bia's GPU in her booking.
    let (start_ms, end_ms) = (
        start.timestamp_millis(),
        (start + TimeDelta::hours(3)).timestamp_millis(),
    );
    let window = format!(
        "FROM gpu_rollups WHERE gpu_id = {} AND minute_ms >= {start_ms} AND minute_ms < {end_ms}",
        h100[0]
    );
    let average = scalar_f64(&app, &format!("SELECT AVG(util_avg) {window}")).await;
    let idle = scalar_f64(
        &app,
        &format!("SELECT CAST(SUM(CASE WHEN util_avg < 10 THEN 1 ELSE 0 END) AS DOUBLE PRECISION) {window}"),
    )
    .await;
    let measured = scalar_f64(
        &app,
        &format!("SELECT CAST(COUNT(*) AS DOUBLE PRECISION) {window}"),
    )
    .await;
    assert!(close(measured, 90.0), "{measured} minutes rolled up");
    assert!(close(team_row["reserved_gpu_hours"].as_f64().unwrap(), 3.0));
    let reported = team_row["avg_utilization_percent"].as_f64().unwrap();
    assert!((reported - average).abs() < 0.05, "{reported} vs {average}");
    assert!(close(
        team_row["idle_gpu_hours"].as_f64().unwrap(),
        idle / 60.0
    ));
    assert!(close(
        team_row["used_gpu_hours"].as_f64().unwrap(),
        (measured - idle) / 60.0
    ));
    assert!(close(
        team_row["unmeasured_gpu_hours"].as_f64().unwrap(),
        3.0 - 1.5
    ));
    // What an hour of use cost: the running booking's price for its measured half, over the
    // used hour (the cancelled booking has no reserved time to measure).
    let price = reservation::Entity::find_by_id(running["id"].as_i64().unwrap())
        .one(&app.db)
        .await
        .unwrap()
        .unwrap()
        .price_minor;
    let per_hour: f64 = team_row["cost_per_used_gpu_hour"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    #[expect(clippy::cast_precision_loss, reason = "test amounts")]
    let expected = price as f64 / 100.0 * (measured / 180.0) / ((measured - idle) / 60.0);
    assert!(
        (per_hour - expected).abs() < 0.006,
        "{per_hour} vs {expected}"
    );

    // The fleet saw both busy GPUs; the idle half hour is the top idle booking.
    let (status, fleet) = get(&app, &platform, &format!("/api/v1/reports/fleet?{query}")).await;
    assert_eq!(status, 200, "{fleet}");
    let used: f64 = fleet["days"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["used_gpu_hours"].as_f64().unwrap())
        .sum();
    let fleet_busy = scalar_f64(
        &app,
        "SELECT CAST(SUM(CASE WHEN util_avg >= 10 THEN 1 ELSE 0 END) AS DOUBLE PRECISION) FROM gpu_rollups",
    )
    .await;
    assert!(close(used, fleet_busy / 60.0), "{used} vs {fleet_busy}");
    assert_eq!(fleet["top_idle"][0]["reservation_id"], running["id"]);
    assert!(close(
        fleet["top_idle"][0]["idle_gpu_hours"].as_f64().unwrap(),
        0.5
    ));

    // The CSV reads back to the same rows: names with commas, quotes and accents intact.
    let response = app
        .client
        .get(app.url(&format!(
            "/api/v1/reports/usage?{query}&group_by=team&scope=all&format=csv"
        )))
        .bearer_auth(&platform)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/csv; charset=utf-8"
    );
    let body = response.text().await.unwrap();
    assert!(
        body.contains("\"Équipe \"\"Núcleo\"\", São Paulo\""),
        "{body}"
    );
    assert!(body.contains("\r\n"), "RFC 4180 line ends");
    let mut reader = csv::Reader::from_reader(body.as_bytes());
    let header = reader.headers().unwrap().clone();
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), 3, "two groups and the total");
    let team_line = records
        .iter()
        .find(|r| r[column("key")] == format!("team:{team}"))
        .unwrap();
    assert_eq!(&team_line[column("name")], TEAM_NAME);
    assert_eq!(
        &team_line[column("net_spend")],
        team_row["net_spend"].as_str().unwrap()
    );
    assert_eq!(&team_line[column("period_from")], from.to_string());
    assert_eq!(&records[2][column("key")], "total");

    // By user: the names come back as they were written, except that one a spreadsheet would
    // run as a formula is prefixed with `'` (OWASP's advice against CSV injection).
    let body = app
        .client
        .get(app.url(&format!(
            "/api/v1/reports/usage?{query}&group_by=user&scope=all&format=csv"
        )))
        .bearer_auth(&platform)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut reader = csv::Reader::from_reader(body.as_bytes());
    let names: Vec<String> = reader.records().map(|r| r.unwrap()[2].to_owned()).collect();
    let carol = format!("'{CAROL}");
    for name in ["Bia \"B\", Souza", carol.as_str(), "Ana"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    app.stop().await;
}

async fn each_viewer_sees_only_what_they_may(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = platform_admin(&app).await;
    let (ana, _) = person(&app, "ana@example.com", "Ana", false).await;
    let (bia, _) = person(&app, "bia@example.com", "Bia", false).await;
    let (carol, _) = person(&app, "carol@example.com", "Carol", true).await;
    let team = funded_team(
        &app,
        &platform,
        "Vision",
        ("ana@example.com", &ana),
        &["bia@example.com"],
    )
    .await;
    let other = funded_team(&app, &platform, "Other", ("carol@example.com", &carol), &[]).await;
    let h100 = gpus_of(&app, H100).await;
    let start = berth_app::domain::schedule::slot_ceil(Utc::now()) + TimeDelta::hours(1);
    let at = |hours: i64| (start + TimeDelta::hours(hours)).to_rfc3339();
    for (token, gpu, team) in [(&bia, h100[0], team), (&carol, h100[2], other)] {
        let body = json!({ "gpu_ids": [gpu], "team_id": team, "start": at(0), "end": at(1) });
        let (status, booked) = post_json(&app, token, "/api/v1/reservations", &body).await;
        assert_eq!(status, 201, "{booked}");
    }
    let range = format!(
        "from={}&to={}",
        start.date_naive(),
        (start + TimeDelta::days(1)).date_naive()
    );
    let bookings = |report: &Value| report["totals"]["bookings"].as_i64().unwrap();
    // A member sees her own bookings, not the team's report.
    let (status, mine) = get(&app, &bia, &format!("/api/v1/reports/usage?{range}")).await;
    assert_eq!(status, 200, "{mine}");
    assert_eq!(bookings(&mine), 1);
    let (status, _) = get(
        &app,
        &bia,
        &format!("/api/v1/reports/usage?{range}&scope=team:{team}"),
    )
    .await;
    assert_eq!(status, 403);
    // The team admin sees the team's; an outsider's team is not found; everyone's is refused.
    let (status, teams) = get(
        &app,
        &ana,
        &format!("/api/v1/reports/usage?{range}&scope=team:{team}"),
    )
    .await;
    assert_eq!(status, 200, "{teams}");
    assert_eq!(bookings(&teams), 1);
    let (status, _) = get(
        &app,
        &ana,
        &format!("/api/v1/reports/usage?{range}&scope=team:{other}"),
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = get(
        &app,
        &ana,
        &format!("/api/v1/reports/usage?{range}&scope=all"),
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = get(&app, &ana, &format!("/api/v1/reports/fleet?{range}")).await;
    assert_eq!(status, 403);
    // Platform admins see everything.
    let (status, all) = get(
        &app,
        &platform,
        &format!("/api/v1/reports/usage?{range}&scope=all"),
    )
    .await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(bookings(&all), 2);
    // No token: 401.
    let response = app
        .client
        .get(app.url(&format!("/api/v1/reports/usage?{range}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);

    // Bad input: 422 naming the field, in the API and on the page.
    for (query, field) in [
        ("period=fortnight", "period"),
        ("from=2026-11-01", "to"),
        ("from=1%20Nov&to=2026-11-30", "from"),
        ("from=2026-11-30&to=2026-11-01", "to"),
        ("from=2020-01-01&to=2026-11-01", "to"),
        ("group_by=gpu", "group_by"),
        ("scope=team:x", "scope"),
        ("format=xml", "format"),
        ("tz=Mars/Olympus", "tz"),
    ] {
        let (status, body) = get(&app, &ana, &format!("/api/v1/reports/usage?{query}")).await;
        assert_eq!(status, 422, "{query}: {body}");
        assert_eq!(body["field"], field, "{query}: {body}");
    }
    app.sign_in("user").await;
    let (status, html) = app
        .get_text("/reports?period=custom&from=2026-11-30&to=2026-11-01")
        .await;
    assert_eq!(status, 422);
    assert!(
        html.contains("report-form"),
        "the form stays to fix the range"
    );
    assert!(html.contains("error-panel"));
    app.stop().await;
}

async fn periods_follow_the_time_zone_across_a_clock_change(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = platform_admin(&app).await;
    let (_, owner) = person(&app, "ana@example.com", "Ana", false).await;
    let gpu = gpu::Entity::find().one(&app.db).await.unwrap().unwrap();
    let utc = |d: u32, m: u32, h: u32| Utc.with_ymd_and_hms(2026, m, d, h, 0, 0).unwrap();
    // New York leaves daylight saving time on 1 November 2026 at 06:00 UTC.
    let a = past_booking(&app.db, owner, &gpu, utc(1, 11, 2), 1).await; // 31 Oct, 22:00 EDT
    let b = past_booking(&app.db, owner, &gpu, utc(1, 11, 4), 25).await; // 1 Nov 00:00 EDT, the whole 25-hour day
    let c = past_booking(&app.db, owner, &gpu, utc(1, 12, 3), 1).await; // 30 Nov, 22:00 EST
    let d = past_booking(&app.db, owner, &gpu, utc(1, 12, 5), 1).await; // 1 Dec, 00:00 EST
    let _ = d;
    let report = |tz: &'static str| {
        let app = &app;
        let platform = platform.clone();
        async move {
            let (status, body) = get(
                app,
                &platform,
                &format!(
                    "/api/v1/reports/usage?from=2026-11-01&to=2026-11-30&scope=all&group_by=user&tz={tz}"
                ),
            )
            .await;
            assert_eq!(status, 200, "{body}");
            body
        }
    };
    let new_york = report("America/New_York").await;
    assert_eq!(new_york["period"]["from_utc"], "2026-11-01T04:00:00Z");
    assert_eq!(new_york["period"]["to_utc"], "2026-12-01T05:00:00Z");
    assert_eq!(new_york["totals"]["bookings"], 2, "b and c: {new_york}");
    assert!(close(
        new_york["totals"]["reserved_gpu_hours"].as_f64().unwrap(),
        26.0
    ));
    let days = new_york["days"].as_array().unwrap();
    assert_eq!(days.len(), 30);
    assert_eq!(days[0]["day"], "2026-11-01");
    assert!(
        close(days[0]["reserved_gpu_hours"].as_f64().unwrap(), 25.0),
        "{}",
        days[0]
    );
    assert!(close(days[1]["reserved_gpu_hours"].as_f64().unwrap(), 0.0));
    assert!(close(days[29]["reserved_gpu_hours"].as_f64().unwrap(), 1.0));

    let in_utc = report("UTC").await;
    assert_eq!(in_utc["period"]["from_utc"], "2026-11-01T00:00:00Z");
    assert_eq!(in_utc["totals"]["bookings"], 2, "a and b: {in_utc}");
    assert!(close(
        in_utc["totals"]["reserved_gpu_hours"].as_f64().unwrap(),
        26.0
    ));
    let days = in_utc["days"].as_array().unwrap();
    assert!(close(
        days[0]["reserved_gpu_hours"].as_f64().unwrap(),
        1.0 + 20.0
    ));
    assert!(close(days[1]["reserved_gpu_hours"].as_f64().unwrap(), 5.0));
    let _ = (a, b, c);
    app.stop().await;
}

/// The fleet view's idle list: the ten bookings of the period with the most idle reserved time
/// (idle minutes over all their GPUs × their share), most first, earlier start first on a tie;
/// bookings without idle time and bookings outside the period are not listed.
async fn the_fleet_lists_the_ten_most_idle_bookings(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = platform_admin(&app).await;
    let (_, owner) = person(&app, "ana@example.com", "Ana", false).await;
    let gpus = gpu::Entity::find().all(&app.db).await.unwrap();
    let (first, second) = (&gpus[0], &gpus[1]);
    let usage = |reservation: i64, gpu: i64, idle: i64| reservation_usage::ActiveModel {
        reservation_id: Set(reservation),
        gpu_id: Set(gpu),
        measured_minutes: Set(120),
        idle_minutes: Set(idle),
        util_sum: Set(50.0 * 120.0),
    };
    // (day of November, idle minutes, quarters): the same idle time on the 5th and the 7th
    // (the 5th first); a half GPU idle for 100 minutes weighs as much as a whole one idle for
    // 50 (the booking on two GPUs, below: the 8th comes first).
    let bookings: [(u32, i64, i16); 14] = [
        (2, 30, 4),
        (3, 0, 4),
        (4, 45, 4),
        (5, 60, 4),
        (6, 10, 4),
        (7, 60, 4),
        (8, 100, 2),
        (9, 5, 4),
        (10, 90, 4),
        (11, 15, 4),
        (12, 25, 4),
        (13, 40, 4),
        (14, 35, 4),
        (15, 20, 4),
    ];
    let mut expected: Vec<(i64, i64, u32)> = Vec::new();
    for (day, idle, quarters) in bookings {
        let start = Utc.with_ymd_and_hms(2026, 11, day, 8, 0, 0).unwrap();
        let id = past_booking(&app.db, owner, first, start, 2).await;
        app.db
            .execute_unprepared(&format!(
                "UPDATE reservations SET quarters = {quarters} WHERE id = {id}"
            ))
            .await
            .unwrap();
        reservation_usage::Entity::insert(usage(id, first.id, idle))
            .exec_without_returning(&app.db)
            .await
            .unwrap();
        if idle > 0 {
            expected.push((id, idle * i64::from(quarters), day));
        }
    }
    // Two GPUs: their idle minutes add up (20 + 30 = 50, the fourth largest).
    let start = Utc.with_ymd_and_hms(2026, 11, 20, 8, 0, 0).unwrap();
    let both = past_booking(&app.db, owner, first, start, 2).await;
    for (gpu, idle) in [(first.id, 20), (second.id, 30)] {
        reservation_usage::Entity::insert(usage(both, gpu, idle))
            .exec_without_returning(&app.db)
            .await
            .unwrap();
    }
    expected.push((both, 50 * 4, 20));
    // October's idlest booking is not November's.
    let october = past_booking(
        &app.db,
        owner,
        first,
        Utc.with_ymd_and_hms(2026, 10, 30, 8, 0, 0).unwrap(),
        2,
    )
    .await;
    reservation_usage::Entity::insert(usage(october, first.id, 120))
        .exec_without_returning(&app.db)
        .await
        .unwrap();

    expected.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
    let expected: Vec<i64> = expected.iter().take(10).map(|e| e.0).collect();
    let (status, fleet) = get(
        &app,
        &platform,
        "/api/v1/reports/fleet?from=2026-11-01&to=2026-11-30&tz=UTC",
    )
    .await;
    assert_eq!(status, 200, "{fleet}");
    let listed: Vec<i64> = fleet["top_idle"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["reservation_id"].as_i64().unwrap())
        .collect();
    assert_eq!(listed, expected, "{fleet}");
    app.stop().await;
}

crate::on_both_backends!(
    totals_equal_the_ledger_and_the_telemetry,
    each_viewer_sees_only_what_they_may,
    periods_follow_the_time_zone_across_a_clock_change,
    the_fleet_lists_the_ten_most_idle_bookings,
);
