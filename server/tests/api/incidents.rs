//! Issue 27: when something breaks, Berth has the evidence. An XID 79 during a lease opens an
//! incident by itself with the diagnosis "GPU fell off the bus — reboot the host" citing the
//! event, and its SLA credit is the lost minutes' price, paid once into the wallet with the
//! ledger clean; a user's incident over thermal throttling gets the throttling hypothesis with
//! its numbers; clean evidence says so; an admin's maintenance change in the window is in the
//! evidence; the workflow (states, replies, a stated cause to close, one reopening) and who may
//! do what. Telemetry and access events go in through the agent's HTTP API; time moves on the
//! portal's test clock; the credit job runs as `berth serve` runs it.

use crate::helpers::*;
use berth_app::backend::{db, incidents};
use berth_app::domain::notify::{EventKind, InboxItem};
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Value, json};

crate::on_both_backends!(
    issue_27_an_xid_79_during_a_lease_opens_an_incident_with_the_diagnosis_and_the_credit,
    issue_27_thermal_throttling_gets_the_throttling_hypothesis_with_its_numbers,
    issue_27_clean_evidence_says_no_fault_and_an_admin_maintenance_change_is_in_the_evidence,
    issue_27_the_workflow_needs_a_stated_cause_and_reopens_once,
);

/// A model no demo GPU has.
const MODEL: &str = "NVIDIA A2 Incident";
/// The portal's price for a GPU an agent reports first: 2.00 an hour.
const HOUR_MINOR: i64 = 200;

/// A node `name` reporting every minute, with `count` GPUs `GPU-<name><i>`: its token and GPU ids.
async fn node(app: &TestApp, name: &str, count: usize) -> (String, Vec<i64>) {
    agent_node_every(app, name, MODEL, count, 60).await
}

/// One sample a minute for `uuids` over `[from, to)`, each made by `values(uuid, at)`.
async fn report(
    app: &TestApp,
    token: &str,
    uuids: &[&str],
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    values: impl Fn(&str, DateTime<Utc>) -> Value,
) {
    let mut samples = Vec::new();
    let mut at = from;
    while at < to {
        for uuid in uuids {
            let mut sample = values(uuid, at);
            sample["uuid"] = json!(uuid);
            sample["at"] = json!(at.to_rfc3339());
            samples.push(sample);
        }
        at += TimeDelta::minutes(1);
    }
    for chunk in samples.chunks(500) {
        let (status, body) = post_json(
            app,
            token,
            "/api/v1/agent/report",
            &json!({ "samples": chunk }),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
}

fn healthy(_: &str, _: DateTime<Utc>) -> Value {
    json!({
        "gpu_util": 95, "memory_used_mib": 9000, "temperature_c": 62, "power_mw": 60000,
        "power_limit_mw": 70000, "sm_clock_mhz": 1980, "throttle_reasons": 0,
        "ecc_corrected": 0, "ecc_uncorrected": 0
    })
}

fn booking(gpus: &[i64], start: DateTime<Utc>, minutes: i64) -> Value {
    json!({
        "gpu_ids": gpus,
        "start": start.to_rfc3339(),
        "end": (start + TimeDelta::minutes(minutes)).to_rfc3339(),
    })
}

async fn inbox(app: &TestApp, email: &str) -> Vec<InboxItem> {
    crate::notify::settle(app, app.state.now()).await;
    db::notify::latest_notices(&app.db, user_id(app, email).await, 200)
        .await
        .unwrap()
}

fn incident_notices(items: &[InboxItem]) -> Vec<&InboxItem> {
    items
        .iter()
        .filter(|item| item.kind == EventKind::Incident)
        .collect()
}

async fn incident(app: &TestApp, token: &str, id: i64) -> Value {
    let (status, body) = get(app, token, &format!("/api/v1/incidents/{id}")).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// Checks `export` against `docs/incident-evidence.schema.json` with Python's `jsonschema`
/// (installed by scripts/test.sh).
fn assert_valid_export(export: &Value) {
    let schema = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/incident-evidence.schema.json"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("export.json");
    std::fs::write(&file, serde_json::to_vec(export).unwrap()).unwrap();
    let check = "import json, sys, jsonschema\n\
        schema = json.load(open(sys.argv[1])); doc = json.load(open(sys.argv[2]))\n\
        jsonschema.Draft202012Validator.check_schema(schema)\n\
        errors = [e.message + ' at ' + '/'.join(map(str, e.absolute_path)) for e in \
          jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).iter_errors(doc)]\n\
        print('\\n'.join(errors[:10])); sys.exit(1 if errors else 0)";
    let out = std::process::Command::new(python())
        .args(["-c", check, schema, file.to_str().unwrap()])
        .output()
        .expect("python with jsonschema");
    assert!(
        out.status.success(),
        "the export does not match the schema:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // And the schema is strict: a field it does not know is refused.
    let mut drifted = export.clone();
    drifted["incident"]["surprise"] = json!(1);
    std::fs::write(&file, serde_json::to_vec(&drifted).unwrap()).unwrap();
    let out = std::process::Command::new(python())
        .args(["-c", check, schema, file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "the schema accepted an unknown field"
    );
}

/// The HTML export loads nothing from anywhere: no script, no stylesheet or image link, no
/// remote URL.
fn assert_self_contained(html: &str) {
    assert!(
        html.starts_with("<!DOCTYPE html>"),
        "{}",
        &html[..80.min(html.len())]
    );
    for forbidden in [
        "<script",
        "<link",
        "src=\"http",
        "url(http",
        "@import",
        "<form",
    ] {
        assert!(!html.contains(forbidden), "the export holds `{forbidden}`");
    }
    assert!(html.contains("<style>"), "styles inlined");
}

fn causes(report: &Value) -> Vec<String> {
    report["diagnosis"]["hypotheses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["cause"].as_str().unwrap().to_owned())
        .collect()
}

async fn issue_27_an_xid_79_during_a_lease_opens_an_incident_with_the_diagnosis_and_the_credit(
    backend: Backend,
) {
    let start = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, start).await;
    let (token, gpus) = node(&app, "inc-a", 2).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let before = balance(&app, &ana).await;
    // One GPU for two hours: 400, 120 GPU-minutes.
    let (status, booked) = book(&app, &ana, booking(&gpus[..1], start, 120)).await;
    assert_eq!(status, 201, "{booked}");
    let first = booked["id"].as_i64().unwrap();
    let price = booked["price_minor"].as_i64().unwrap();
    assert_eq!(price, 2 * HOUR_MINOR);
    assert_eq!(balance(&app, &ana).await, before - price);

    // Both GPUs report every minute; 40 minutes in, GPU 0 falls off the bus.
    let failed_at = start + TimeDelta::minutes(40);
    clock.set(failed_at);
    report(
        &app,
        &token,
        &["GPU-inc-a0", "GPU-inc-a1"],
        (start, failed_at),
        healthy,
    )
    .await;
    clock.set(failed_at + TimeDelta::seconds(30));
    let (status, body) = post_json(
        &app,
        &token,
        "/api/v1/agent/report",
        &json!({ "events": [{ "uuid": "GPU-inc-a0", "at": failed_at.to_rfc3339(), "kind": "xid", "code": 79 }] }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // The agent repeats itself: still one incident.
    let (status, _) = post_json(
        &app,
        &token,
        "/api/v1/agent/report",
        &json!({ "events": [{ "uuid": "GPU-inc-a0", "at": failed_at.to_rfc3339(), "kind": "xid", "code": 79 }] }),
    )
    .await;
    assert_eq!(status, 200);

    // Berth opened it by itself, on Ana's booking.
    let (status, list) = get(&app, &ana, "/api/v1/incidents").await;
    assert_eq!(status, 200, "{list}");
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["source"], "agent");
    assert_eq!(list[0]["trigger"], "xid_79");
    assert_eq!(list[0]["state"], "open");
    assert_eq!(list[0]["reservation"]["id"], first);
    let id = list[0]["id"].as_i64().unwrap();

    // The diagnosis: fell off the bus, reboot the host, citing the event.
    let evidence = incident(&app, &ana, id).await;
    assert_eq!(evidence["schema"], "berth.incident-evidence/1");
    let hypotheses = evidence["diagnosis"]["hypotheses"].as_array().unwrap();
    assert_eq!(hypotheses[0]["cause"], "fell_off_bus", "{hypotheses:?}");
    assert_eq!(hypotheses[0]["action"], "reboot_host");
    assert_eq!(
        hypotheses[0]["facts"][0],
        json!({ "fact": "xid", "gpu": "inc-a #0", "at": failed_at, "code": 79 })
    );
    assert_eq!(evidence["gpus"][0]["label"], "inc-a #0");
    assert_eq!(evidence["nodes"][0]["drivers"][0]["version"], "550.54.15");
    assert!(
        evidence["gpus"][0]["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "xid" && e["code"] == 79),
        "{evidence}"
    );

    // The failover moved the rest to GPU 1; its lease opens there 7 minutes after the failure.
    let (_, was) = get(&app, &ana, &format!("/api/v1/reservations/{first}")).await;
    let rest = was["moved_to"].as_i64().expect("moved_to");
    let restored = failed_at + TimeDelta::minutes(7);
    clock.set(restored + TimeDelta::minutes(3));
    report(
        &app,
        &token,
        &["GPU-inc-a1"],
        (failed_at, restored + TimeDelta::minutes(3)),
        healthy,
    )
    .await;
    let (status, body) = post_json(
        &app,
        &token,
        "/api/v1/agent/report",
        &json!({ "access": [{ "uuid": "GPU-inc-a1", "at": restored.to_rfc3339(), "kind": "granted", "reservation_id": rest, "user": "ana" }] }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let evidence = incident(&app, &ana, id).await;
    assert!(
        evidence["access"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["kind"] == "granted" && a["this_booking"] == true),
        "{evidence}"
    );
    // 7 minutes lost on one GPU of a 120 GPU-minute booking priced 400.
    let lost = &evidence["availability"];
    assert_eq!(lost["lost_gpu_minutes"], 7, "{lost}");
    assert_eq!(lost["lost"][0]["cause"], "fell_off_bus");
    let credit = price * 7 / 120;
    assert_eq!(lost["credit_minor"], credit);

    // The credit job pays it, once, into Ana's wallet, in one ledger transaction.
    let wallet = balance(&app, &ana).await;
    let paid = incidents::run_credits(&app.state, app.state.now())
        .await
        .unwrap();
    assert_eq!(paid, 1);
    assert_eq!(balance(&app, &ana).await, wallet + credit);
    assert_eq!(
        incidents::run_credits(&app.state, app.state.now())
            .await
            .unwrap(),
        0
    );
    assert_eq!(balance(&app, &ana).await, wallet + credit);
    let shown = incident(&app, &ana, id).await;
    assert_eq!(shown["incident"]["credit"]["minor"], credit);
    assert_eq!(shown["incident"]["credit"]["gpu_minutes"], 7);
    let (_, was) = get(&app, &ana, &format!("/api/v1/reservations/{first}")).await;
    assert_eq!(was["sla_credit_minor"], credit, "{was}");
    let audit = assert_books_balance(&app).await;
    assert!(audit.is_clean(), "{audit:?}");
    // The cost report shows it, and the net spend is less by it.
    let day = |at: DateTime<Utc>| at.date_naive().to_string();
    let query = format!(
        "from={}&to={}&tz=UTC",
        day(start),
        day(start + TimeDelta::days(1))
    );
    let (status, usage) = get(
        &app,
        &ana,
        &format!("/api/v1/reports/usage?{query}&group_by=user"),
    )
    .await;
    assert_eq!(status, 200, "{usage}");
    assert_eq!(usage["totals"]["sla_credits_minor"], credit, "{usage}");
    assert_eq!(
        usage["totals"]["net_spend_minor"].as_i64().unwrap(),
        usage["totals"]["charged_minor"].as_i64().unwrap()
            - usage["totals"]["refunds_minor"].as_i64().unwrap()
            - credit
    );
    let (_, wallet_page) = get(&app, &ana, "/api/v1/wallet").await;
    let credited = wallet_page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "sla_credit")
        .cloned()
        .unwrap_or_else(|| panic!("no SLA credit in {wallet_page}"));
    assert_eq!(
        credited["berth_reason"],
        json!({"what": "sla_credit", "incident": id}),
        "{credited}"
    );

    // The export: JSON that validates against the schema in the repository, and one HTML file
    // with nothing outside it.
    let (status, export) = get(&app, &ana, &format!("/api/v1/incidents/{id}/export.json")).await;
    assert_eq!(status, 200);
    assert_valid_export(&export);
    let export_html = |language: &'static str| {
        crate::helpers::client()
            .get(app.url(&format!("/incidents/{id}/export.html")))
            .bearer_auth(&ana)
            .header("accept-language", language)
            .send()
    };
    let html = export_html("en").await.unwrap();
    assert_eq!(html.status(), 200);
    assert!(
        html.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains(&format!("berth-incident-{id}.html"))
    );
    let html = html.text().await.unwrap();
    assert_self_contained(&html);
    assert!(html.contains("XID 79"), "the diagnosis is in the file");
    assert_eq!(
        html.matches("class=\"chart-svg\"").count(),
        5,
        "five charts of the one GPU"
    );
    assert!(html.contains("<html lang=\"en\">"));
    // In the reader's language.
    let html = export_html("pt-BR,pt;q=0.9")
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("<html lang=\"pt-BR\">"), "{html}");
    assert!(
        html.contains(&format!("<title>Incidente #{id}</title>")),
        "{html}"
    );

    // Ana was told: opened by Berth, and the credit.
    let items = inbox(&app, "ana@example.org").await;
    let told = incident_notices(&items);
    assert_eq!(told.len(), 2, "{items:#?}");
    assert!(told.iter().any(|n| n.notice.amount_minor == Some(credit)));
    // Others see nothing of it.
    let bob = user_token(&app, "bob@example.org", PlatformRole::User).await;
    assert_eq!(
        get(&app, &bob, &format!("/api/v1/incidents/{id}")).await.0,
        404
    );
    let (_, theirs) = get(&app, &bob, "/api/v1/incidents").await;
    assert_eq!(theirs, json!([]));
    app.stop().await;
}

async fn issue_27_thermal_throttling_gets_the_throttling_hypothesis_with_its_numbers(
    backend: Backend,
) {
    let start = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, start).await;
    let (token, gpus) = node(&app, "inc-t", 1).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let (status, booked) = book(&app, &ana, booking(&gpus, start, 120)).await;
    assert_eq!(status, 201, "{booked}");
    let id = booked["id"].as_i64().unwrap();
    // 30 minutes in; minutes 10 to 14 ran hot: HW thermal slowdown, 92 °C, SM clock 900 MHz.
    let now = start + TimeDelta::minutes(30);
    clock.set(now);
    let hot = (
        start + TimeDelta::minutes(10),
        start + TimeDelta::minutes(15),
    );
    report(&app, &token, &["GPU-inc-t0"], (start, now), |uuid, at| {
        if at >= hot.0 && at < hot.1 {
            json!({ "gpu_util": 100, "temperature_c": 92, "sm_clock_mhz": 900, "throttle_reasons": 0x40, "memory_used_mib": 9000 })
        } else {
            healthy(uuid, at)
        }
    })
    .await;
    // Two clicks: the booking, "Report a problem" (what she saw is optional).
    let (status, opened) = post_json(
        &app,
        &ana,
        "/api/v1/incidents",
        &json!({ "reservation_id": id, "report": "Training slowed to half speed" }),
    )
    .await;
    assert_eq!(status, 201, "{opened}");
    assert_eq!(opened["incident"]["source"], "user");
    assert_eq!(
        opened["incident"]["report"],
        "Training slowed to half speed"
    );
    assert_eq!(opened["incident"]["from"], json!(now - TimeDelta::hours(1)));
    assert_eq!(opened["incident"]["to_now"], true);
    assert_eq!(causes(&opened), vec!["thermal"], "{}", opened["diagnosis"]);
    let hypothesis = &opened["diagnosis"]["hypotheses"][0];
    assert_eq!(hypothesis["action"], "check_cooling");
    assert_eq!(
        hypothesis["facts"][0],
        json!({
            "fact": "throttled", "gpu": "inc-t #0", "reasons": ["HW_THERMAL_SLOWDOWN"],
            "minutes": 5, "from": hot.0, "to": hot.1,
            "max_temperature_c": 92, "min_sm_clock_mhz": 900
        })
    );
    // The SLA reads those minutes as lost: the clock was under half the GPU's highest.
    assert_eq!(opened["availability"]["lost_gpu_minutes"], 5);
    assert_eq!(opened["availability"]["lost"][0]["cause"], "throttled");
    assert_eq!(opened["availability"]["credit_minor"], 400 * 5 / 120);
    // The admins were told.
    let items = inbox(&app, "admin@example.org").await;
    assert!(!incident_notices(&items).is_empty(), "{items:#?}");
    app.stop().await;
}

async fn issue_27_clean_evidence_says_no_fault_and_an_admin_maintenance_change_is_in_the_evidence(
    backend: Backend,
) {
    let start = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, start).await;
    let (token, gpus) = node(&app, "inc-c", 1).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let admin = user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let (status, booked) = book(&app, &ana, booking(&gpus, start, 60)).await;
    assert_eq!(status, 201, "{booked}");
    let id = booked["id"].as_i64().unwrap();
    let now = start + TimeDelta::minutes(20);
    clock.set(now);
    report(&app, &token, &["GPU-inc-c0"], (start, now), healthy).await;
    let (status, clean) = post_json(
        &app,
        &ana,
        "/api/v1/incidents",
        &json!({ "reservation_id": id, "from": start, "to": now }),
    )
    .await;
    assert_eq!(status, 201, "{clean}");
    assert_eq!(
        causes(&clean),
        Vec::<String>::new(),
        "{}",
        clean["diagnosis"]
    );
    let checked = &clean["diagnosis"]["checked"];
    assert_eq!(checked["gpus"], 1);
    assert_eq!(checked["samples"], 20);
    assert_eq!(clean["availability"]["lost_gpu_minutes"], 0);
    assert_eq!(clean["incident"]["report"], "");

    // An admin sets maintenance on the GPU after the booking's end; an incident over the window
    // shows the change.
    let (status, body) = post_json(
        &app,
        &admin,
        "/api/v1/maintenance",
        &json!({
            "gpu_ids": gpus, "start": start + TimeDelta::hours(2),
            "end": start + TimeDelta::hours(3), "reason": "Firmware update"
        }),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    clock.set(now + TimeDelta::minutes(2));
    let (status, later) = post_json(
        &app,
        &ana,
        "/api/v1/incidents",
        &json!({ "reservation_id": id, "report": "Is my GPU going away?" }),
    )
    .await;
    assert_eq!(status, 201, "{later}");
    let changes = later["admin_changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["action"], "maintenance.create");
    assert!(
        changes[0]["after"]
            .as_str()
            .unwrap()
            .contains("Firmware update")
    );
    // Bad input: a clear 422 naming the field, and nothing written.
    let long = "x".repeat(4001);
    for (body, field) in [
        (json!({ "reservation_id": id, "report": long }), "report"),
        (
            json!({ "reservation_id": id, "to": now + TimeDelta::days(1) }),
            "to",
        ),
        (
            json!({ "reservation_id": id, "from": now - TimeDelta::days(30) }),
            "from",
        ),
        (
            json!({ "reservation_id": id, "from": now, "to": now - TimeDelta::hours(1) }),
            "from",
        ),
        (json!({ "report": "which?" }), "reservation_id"),
    ] {
        let (status, answer) = post_json(&app, &ana, "/api/v1/incidents", &body).await;
        assert_eq!(status, 422, "{body} → {answer}");
        assert_eq!(answer["field"], field, "{answer}");
    }
    let (status, _) = post_json(
        &app,
        &ana,
        "/api/v1/incidents",
        &json!({ "reservation_id": id, "sneaky": 1 }),
    )
    .await;
    assert_eq!(status, 422);
    let (status, _) = post_json(
        &app,
        &ana,
        "/api/v1/incidents",
        &json!({ "reservation_id": i64::MAX }),
    )
    .await;
    assert_eq!(status, 404);
    let (_, list) = get(&app, &ana, "/api/v1/incidents").await;
    assert_eq!(list.as_array().unwrap().len(), 2);

    // Ana looks into her booking's time only, an hour either side: a window all before it is
    // refused, a wider one cut to it.
    let (status, answer) = post_json(
        &app,
        &ana,
        "/api/v1/incidents",
        &json!({ "reservation_id": id, "from": start - TimeDelta::hours(6), "to": start - TimeDelta::hours(2) }),
    )
    .await;
    assert_eq!(
        (status, &answer["code"], &answer["field"]),
        (422, &json!("outside_booking"), &json!("from")),
        "{answer}"
    );
    let (status, wide) = post_json(
        &app,
        &ana,
        "/api/v1/incidents",
        &json!({ "reservation_id": id, "from": start - TimeDelta::hours(5), "to": now }),
    )
    .await;
    assert_eq!(status, 201, "{wide}");
    assert_eq!(wide["incident"]["from"], json!(start - TimeDelta::hours(1)));
    // Someone else's process on her GPU is in her evidence, but not who or which process; the
    // admins see both.
    let (status, body) = post_json(
        &app,
        &token,
        "/api/v1/agent/report",
        &json!({ "access": [{ "uuid": "GPU-inc-c0", "at": (start + TimeDelta::minutes(5)).to_rfc3339(),
                             "kind": "unauthorized", "pid": 4242, "uid": 1500, "user": "mallory", "memory_mib": 700 }] }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let wide_id = wide["incident"]["id"].as_i64().unwrap();
    let intruder = |evidence: Value| {
        evidence["access"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["kind"] == "unauthorized")
            .cloned()
            .unwrap_or_else(|| panic!("no intruder in {evidence}"))
    };
    let seen = intruder(incident(&app, &ana, wide_id).await);
    assert_eq!(
        (&seen["user"], &seen["pid"], &seen["memory_mib"]),
        (&Value::Null, &Value::Null, &json!(700)),
        "{seen}"
    );
    let seen = intruder(incident(&app, &admin, wide_id).await);
    assert_eq!(
        (&seen["user"], &seen["pid"]),
        (&json!("mallory"), &json!(4242)),
        "{seen}"
    );
    // Reopened by Ana long after her booking, the window follows the present no further than
    // an hour past its end.
    let steps = format!("/api/v1/incidents/{wide_id}/steps");
    let (status, body) = post_json(
        &app,
        &admin,
        &steps,
        &json!({"step": "resolve", "note": "Another tenant's process, stopped"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    clock.set(start + TimeDelta::hours(6));
    let (status, view) = post_json(
        &app,
        &ana,
        &steps,
        &json!({"step": "reopen", "note": "It was there again before I left"}),
    )
    .await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(
        (&view["to"], &view["to_now"]),
        (&json!(start + TimeDelta::hours(2)), &json!(false)),
        "{view}"
    );
    app.stop().await;
}

async fn issue_27_the_workflow_needs_a_stated_cause_and_reopens_once(backend: Backend) {
    let start = on_grid_in(TimeDelta::hours(1));
    let (app, _db, clock) = spawn_app_at(backend, start).await;
    let (token, gpus) = node(&app, "inc-w", 1).await;
    let ana = user_token(&app, "ana@example.org", PlatformRole::User).await;
    let admin = user_token(&app, "admin@example.org", PlatformRole::PlatformAdmin).await;
    let bob = user_token(&app, "bob@example.org", PlatformRole::User).await;
    let (_, booked) = book(&app, &ana, booking(&gpus, start, 60)).await;
    let booking_id = booked["id"].as_i64().unwrap();
    let now = start + TimeDelta::minutes(10);
    clock.set(now);
    report(&app, &token, &["GPU-inc-w0"], (start, now), healthy).await;
    // Bob may not open one on Ana's booking, nor on her GPU.
    let (status, _) = post_json(
        &app,
        &bob,
        "/api/v1/incidents",
        &json!({ "reservation_id": booking_id }),
    )
    .await;
    assert_eq!(status, 404);
    let (status, body) = post_json(
        &app,
        &bob,
        "/api/v1/incidents",
        &json!({ "gpu_id": gpus[0] }),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["code"], "no_booking_on_gpu");
    // Ana opens one from the GPU's page: it finds her booking.
    let (status, opened) = post_json(
        &app,
        &ana,
        "/api/v1/incidents",
        &json!({ "gpu_id": gpus[0], "report": "CUDA error: unspecified launch failure" }),
    )
    .await;
    assert_eq!(status, 201, "{opened}");
    assert_eq!(opened["incident"]["reservation"]["id"], booking_id);
    let id = opened["incident"]["id"].as_i64().unwrap();
    assert_eq!(
        opened["incident"]["first_response_due"],
        json!(now + TimeDelta::hours(4))
    );
    let steps = format!("/api/v1/incidents/{id}/steps");
    let step = |who: &str, body: Value| {
        let (who, steps, app) = (who.to_owned(), steps.clone(), &app);
        async move { post_json(app, &who, &steps, &body).await }
    };
    // Only admins move it; Bob does not see it at all.
    assert_eq!(step(&bob, json!({"step": "acknowledge"})).await.0, 404);
    assert_eq!(step(&ana, json!({"step": "acknowledge"})).await.0, 403);
    let (status, body) = step(&ana, json!({"step": "fly"})).await;
    assert_eq!((status, body["field"].clone()), (422, json!("step")));
    // The node goes on reporting while the incident is worked on.
    clock.set(now + TimeDelta::minutes(5));
    report(
        &app,
        &token,
        &["GPU-inc-w0"],
        (now, now + TimeDelta::minutes(5)),
        healthy,
    )
    .await;
    let (status, view) = step(&admin, json!({"step": "acknowledge"})).await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["state"], "acknowledged");
    assert_eq!(
        view["first_response_at"],
        json!(now + TimeDelta::minutes(5))
    );
    assert_eq!(step(&admin, json!({"step": "acknowledge"})).await.0, 409);
    // Replies from both sides.
    let replies = format!("/api/v1/incidents/{id}/replies");
    let (status, _) = post_json(&app, &admin, &replies, &json!({"body": "Which job?"})).await;
    assert_eq!(status, 201);
    let (status, _) = post_json(
        &app,
        &ana,
        &replies,
        &json!({"body": "train.py, step 4200"}),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(
        post_json(&app, &ana, &replies, &json!({"body": "  "}))
            .await
            .0,
        422
    );
    assert_eq!(
        post_json(&app, &bob, &replies, &json!({"body": "me too"}))
            .await
            .0,
        404
    );
    // No closing without a stated cause; a chosen cause must be in the diagnosis.
    let (status, body) = step(&admin, json!({"step": "resolve"})).await;
    assert_eq!(
        (status, body["field"].clone()),
        (422, json!("cause")),
        "{body}"
    );
    let (status, body) = step(&admin, json!({"step": "resolve", "cause": "thermal"})).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["code"], "not_in_diagnosis");
    let (status, view) = step(
        &admin,
        json!({"step": "resolve", "note": "An out-of-bounds access in the application (XID 13 in its log); no GPU fault"}),
    )
    .await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["state"], "resolved");
    assert!(
        view["cause_text"]
            .as_str()
            .unwrap()
            .contains("out-of-bounds")
    );
    assert_eq!(view["to_now"], false);
    // Ana reopens it once, with new evidence.
    let (status, body) = step(&ana, json!({"step": "reopen"})).await;
    assert_eq!((status, body["field"].clone()), (422, json!("note")));
    let (status, view) = step(
        &ana,
        json!({"step": "reopen", "note": "It failed again with a fixed build"}),
    )
    .await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["state"], "open");
    assert_eq!(view["reopened"], true);
    assert_eq!(view["to_now"], true);
    let (status, _) = step(
        &admin,
        json!({"step": "reject", "note": "Same application fault"}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = step(&ana, json!({"step": "reopen", "note": "again"})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "already_reopened");
    // The messages tell the story, and each change reached the other side.
    let shown = incident(&app, &ana, id).await;
    let states: Vec<Value> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["state"].clone())
        .collect();
    assert_eq!(
        states,
        vec![
            json!("acknowledged"),
            Value::Null,
            Value::Null,
            json!("resolved"),
            json!("open"),
            json!("rejected")
        ]
    );
    let told = inbox(&app, "ana@example.org").await;
    // Acknowledged, the admin's reply, resolved, rejected (her own changes are not told to her).
    let kinds: Vec<_> = incident_notices(&told)
        .iter()
        .map(|n| n.notice.incident.as_ref().map(|i| (i.change, i.state)))
        .collect();
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    let (status, _) = get(
        &app,
        &admin,
        &format!("/api/v1/incidents?reservation={booking_id}"),
    )
    .await;
    assert_eq!(status, 200);
    let (status, export) = get(&app, &ana, &format!("/api/v1/incidents/{id}/export.json")).await;
    assert_eq!(status, 200);
    assert_eq!(export["incident"]["id"], id);
    app.stop().await;
}
