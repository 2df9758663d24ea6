//! Team quotas, priorities, preemption and approvals over HTTP, on both stores: refusals with
//! the numbers, burst bookings going through as preemptible, a higher-priority booking taking
//! the place of preemptible ones (full refund, a free window offered), approvals holding the slot
//! until decided or expired, and two teams racing for their last quota at once.

use crate::helpers::*;
use berth_app::backend::db;
use berth_app::backend::entity::{audit_entry, reservation};
use berth_app::domain::gpu::GpuStatus;
use berth_app::domain::reservation::ReleaseReason;
use berth_app::domain::user::PlatformRole;
use chrono::TimeDelta;
use reqwest::Method;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};

/// A model name as a path segment.
fn segment(model: &str) -> String {
    model.replace(' ', "%20")
}

async fn set_quota(
    app: &TestApp,
    token: &str,
    team: i64,
    model: &str,
    body: Value,
) -> (u16, Value) {
    send(
        app,
        Method::PUT,
        Some(token),
        &format!("/api/v1/teams/{team}/quotas/{}", segment(model)),
        Some(body),
    )
    .await
}

async fn set_rules(app: &TestApp, token: &str, team: i64, body: Value) -> (u16, Value) {
    send(
        app,
        Method::PUT,
        Some(token),
        &format!("/api/v1/teams/{team}/rules"),
        Some(body),
    )
    .await
}

/// A booking of `gpus` (ids) or, with none, one GPU of `model`, `hours` long from
/// `next_month_at(offset)`.
fn booking(team: Option<i64>, gpus: &[i64], offset: i64, hours: i64) -> Value {
    let start = next_month_at(offset);
    let mut body = json!({
        "start": start.to_rfc3339(),
        "end": (start + TimeDelta::hours(hours)).to_rfc3339(),
    });
    if gpus.is_empty() {
        body["model"] = json!(H100);
        body["count"] = json!(1);
    } else {
        body["gpu_ids"] = json!(gpus);
    }
    if let Some(team) = team {
        body["team_id"] = json!(team);
    }
    body
}

async fn quotas_refuse_with_the_numbers_or_let_burst_bookings_through(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = unfunded_user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let ana = unfunded_user_token(&app, "ana@example.com", PlatformRole::User).await;
    let bia = unfunded_user_token(&app, "bia@example.com", PlatformRole::User).await;
    let team = funded_team(
        &app,
        &platform,
        "Vision",
        ("ana@example.com", &ana),
        &["bia@example.com"],
    )
    .await;
    let fleet = i64::try_from(gpus_of(&app, H100).await.len()).unwrap();

    // Validation: numbers in range, a model of the fleet, not more than the fleet guaranteed.
    for (model, body, field) in [
        (H100, json!({ "guaranteed_gpus": -1 }), "guaranteed_gpus"),
        (H100, json!({ "guaranteed_gpus": "two" }), "guaranteed_gpus"),
        (
            H100,
            json!({ "guaranteed_gpus": 1, "weekly_gpu_hours": -3 }),
            "weekly_gpu_hours",
        ),
        (
            H100,
            json!({ "guaranteed_gpus": fleet + 1 }),
            "guaranteed_gpus",
        ),
        ("Voodoo 5", json!({ "guaranteed_gpus": 1 }), "model"),
    ] {
        let (status, answer) = set_quota(&app, &platform, team, model, body.clone()).await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert_eq!(answer["field"], field, "{answer}");
    }
    // Quotas are the platform admins': the team's own admin may not set or remove one.
    let (status, refused) = set_quota(
        &app,
        &ana,
        team,
        H100,
        json!({ "guaranteed_gpus": 1, "weekly_gpu_hours": 3 }),
    )
    .await;
    assert_eq!(status, 403, "{refused}");
    let (status, _) = send(
        &app,
        Method::DELETE,
        Some(&ana),
        &format!("/api/v1/teams/{team}/quotas/{}", segment(H100)),
        None,
    )
    .await;
    assert_eq!(status, 403);
    let (status, quota) = set_quota(
        &app,
        &platform,
        team,
        H100,
        json!({ "guaranteed_gpus": 1, "weekly_gpu_hours": 3 }),
    )
    .await;
    assert_eq!(status, 200, "{quota}");
    assert_eq!(quota["guaranteed_gpus"], 1);

    // Within the quota.
    let (status, first) = book(&app, &bia, &booking(Some(team), &[], 0, 2)).await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["preemptible"], false);
    assert_eq!(first["priority"], "development");
    // A second GPU at the same time: over the GPUs guaranteed, with the numbers.
    let (status, over) = book(&app, &bia, &booking(Some(team), &[], 1, 2)).await;
    assert_eq!(status, 409, "{over}");
    assert_eq!(over["code"], "over_quota_gpus");
    assert_eq!(
        (
            &over["details"]["used"],
            &over["details"]["asked"],
            &over["details"]["limit"]
        ),
        (&json!("1"), &json!("1"), &json!(1)),
        "{over}"
    );
    assert!(over["message"].as_str().unwrap().contains("1 GPUs at once"));
    // Later the same day, one GPU at a time, but over the weekly GPU-hours.
    let (status, over) = book(&app, &bia, &booking(Some(team), &[], 4, 2)).await;
    assert_eq!(status, 409, "{over}");
    assert_eq!(over["code"], "over_quota_hours");
    assert_eq!(
        (
            &over["details"]["used"],
            &over["details"]["asked"],
            &over["details"]["limit"]
        ),
        (&json!("2.0"), &json!("2.0"), &json!(3)),
        "{over}"
    );
    // A personal booking is not the team's: no quota.
    let personal = user_token(&app, "carl@example.com", PlatformRole::User).await;
    let (status, _) = book(&app, &personal, &booking(None, &[], 1, 2)).await;
    assert_eq!(status, 201);

    // Burst allowed: the same booking goes through, preemptible.
    let (status, rules) = set_rules(
        &app,
        &ana,
        team,
        json!({ "allow_burst": true, "default_priority": "training" }),
    )
    .await;
    assert_eq!(status, 200, "{rules}");
    let (status, burst) = book(&app, &bia, &booking(Some(team), &[], 1, 2)).await;
    assert_eq!(status, 201, "{burst}");
    assert_eq!(burst["preemptible"], true);
    assert_eq!(burst["priority"], "training");
    // Batch bookings are preemptible and take nothing of the quota, burst or not.
    set_rules(&app, &ana, team, json!({ "default_priority": "training" })).await;
    let mut batch = booking(Some(team), &[], 1, 2);
    batch["priority"] = json!("batch");
    let (status, batch) = book(&app, &bia, &batch).await;
    assert_eq!(status, 201, "{batch}");
    assert_eq!(
        (&batch["preemptible"], &batch["priority"]),
        (&json!(true), &json!("batch"))
    );
    // Nobody books above the team's default priority (platform admins may).
    let mut high = booking(Some(team), &[], 10, 1);
    high["priority"] = json!("production");
    let (status, refused) = book(&app, &bia, &high).await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["code"], "priority_not_allowed");
    let mut unknown = booking(None, &[], 10, 1);
    unknown["priority"] = json!("urgent");
    let (status, refused) = book(&app, &bia, &unknown).await;
    assert_eq!((status, &refused["field"]), (422, &json!("priority")));

    let (status, rules) = get(&app, &ana, &format!("/api/v1/teams/{team}/rules")).await;
    assert_eq!(status, 200);
    assert_eq!(rules["policy"]["default_priority"], "training");
    assert_eq!(rules["policy"]["allow_burst"], false);

    // Removing the quota lifts the limit.
    let (status, _) = send(
        &app,
        Method::DELETE,
        Some(&platform),
        &format!("/api/v1/teams/{team}/quotas/{}", segment(H100)),
        None,
    )
    .await;
    assert_eq!(status, 204);
    set_rules(&app, &ana, team, json!({ "default_priority": "training" })).await;
    let (status, free) = book(&app, &bia, &booking(Some(team), &[], 1, 2)).await;
    assert_eq!(status, 201, "{free}");
    assert_eq!(free["preemptible"], false);
    let actions: Vec<String> = audit_entry::Entity::find()
        .filter(audit_entry::Column::TeamId.eq(team))
        .all(&app.db)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.action)
        .collect();
    assert!(actions.iter().any(|a| a == "team.quota"), "{actions:?}");
    assert!(actions.iter().any(|a| a == "team.rules"), "{actions:?}");

    // The dashboard's use this week against the quota, in another team: one GPU held and one
    // preemptible, both from the current slot for an hour.
    let dash = funded_team(&app, &platform, "Dash", ("ana@example.com", &ana), &[]).await;
    set_quota(
        &app,
        &platform,
        dash,
        H100,
        json!({ "guaranteed_gpus": 2, "weekly_gpu_hours": 10 }),
    )
    .await;
    let now = chrono::Utc::now();
    let start = berth_app::domain::schedule::slot_floor(now);
    let end = start + TimeDelta::hours(1);
    let mut held = json!({
        "model": H100, "count": 1, "team_id": dash,
        "start": start.to_rfc3339(), "end": end.to_rfc3339(),
    });
    let (status, body) = book(&app, &ana, &held).await;
    assert_eq!(status, 201, "{body}");
    held["priority"] = json!("batch");
    let (status, body) = book(&app, &ana, &held).await;
    assert_eq!(status, 201, "{body}");
    let (week_start, week_end) = berth_app::domain::team::utc_week_of(now);
    let minutes = (Ord::min(end, week_end) - Ord::max(start, week_start)).num_minutes();
    let (_, rules) = get(&app, &ana, &format!("/api/v1/teams/{dash}/rules")).await;
    let h100_row = rules["quotas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["model"] == H100)
        .cloned()
        .unwrap_or_else(|| panic!("{rules}"));
    assert_eq!(h100_row["quota"]["guaranteed_gpus"], 2, "{h100_row}");
    assert_eq!(h100_row["quota"]["weekly_gpu_hours"], 10, "{h100_row}");
    assert_eq!(h100_row["peak_quarters"], 4, "{h100_row}");
    assert_eq!(h100_row["week_quarter_minutes"], minutes * 4, "{h100_row}");
    assert_eq!(h100_row["burst_quarter_minutes"], minutes * 4, "{h100_row}");
    app.stop().await;
}

async fn a_higher_priority_booking_takes_the_place_of_preemptible_ones(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = unfunded_user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let ana = unfunded_user_token(&app, "ana@example.com", PlatformRole::User).await;
    let bob = unfunded_user_token(&app, "bob@example.com", PlatformRole::User).await;
    let carl = user_token(&app, "carl@example.com", PlatformRole::User).await;
    let prod = funded_team(&app, &platform, "Serving", ("ana@example.com", &ana), &[]).await;
    let batch = funded_team(&app, &platform, "Sweeps", ("bob@example.com", &bob), &[]).await;
    // Production is the platform's call.
    let (status, refused) = set_rules(
        &app,
        &ana,
        prod,
        json!({ "default_priority": "production" }),
    )
    .await;
    assert_eq!(
        (status, &refused["code"]),
        (422, &json!("priority_not_allowed")),
        "{refused}"
    );
    let (status, _) = set_rules(
        &app,
        &platform,
        prod,
        json!({ "default_priority": "production" }),
    )
    .await;
    assert_eq!(status, 200);
    set_rules(&app, &bob, batch, json!({ "default_priority": "batch" })).await;
    let h100 = gpus_of(&app, H100).await;
    let (target, rest) = h100.split_first().unwrap();

    // Sweeps holds the first GPU with a batch booking; Carl holds all the others.
    let (status, victim) = book(&app, &bob, &booking(Some(batch), &[*target], 0, 3)).await;
    assert_eq!(status, 201, "{victim}");
    assert_eq!(victim["preemptible"], true);
    let victim_id = victim["id"].as_i64().unwrap();
    let sweeps_before = team_balance(&app, &bob, batch).await;
    let (status, _) = book(&app, &carl, &booking(None, rest, 0, 3)).await;
    assert_eq!(status, 201);

    // Another batch booking does not displace a batch one (not lower).
    let (status, clash) = book(&app, &bob, &booking(Some(batch), &[*target], 1, 1)).await;
    assert_eq!(status, 409, "{clash}");
    assert!(clash["clash"].is_object(), "{clash}");
    // Carl's booking is not preemptible: never displaced, whatever the priority.
    let (status, clash) = book(&app, &ana, &booking(Some(prod), &[rest[0]], 1, 1)).await;
    assert_eq!(status, 409, "{clash}");
    assert!(clash["clash"].is_object(), "{clash}");

    // Production books the first GPU: the batch booking makes way.
    let (status, taken) = book(&app, &ana, &booking(Some(prod), &[*target], 1, 1)).await;
    assert_eq!(status, 201, "{taken}");
    assert_eq!(taken["priority"], "production");
    let displaced = reservation_row(&app, victim_id).await;
    assert_eq!(displaced.status, reservation::Status::Cancelled);
    assert_eq!(displaced.released_reason, Some(ReleaseReason::Preempted));
    // Refunded in full.
    let price = victim["price_minor"].as_i64().unwrap();
    assert_eq!(
        team_balance(&app, &bob, batch).await,
        sweeps_before + price,
        "the displaced booking is refunded in full"
    );
    // Offered the nearest free window: after the production booking and Carl's, on some H100.
    let (status, list) = get(&app, &bob, "/api/v1/reservations").await;
    assert_eq!(status, 200, "{list}");
    let mine = list
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == victim_id)
        .cloned()
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(mine["released"], "preempted");
    let offer = &mine["displaced_offer"];
    assert!(offer.is_object(), "{mine}");
    let offer_start: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(offer["window"]["start"].clone()).unwrap();
    assert!(offer_start >= next_month_at(0), "{offer}");
    // The owner is told on every page.
    let response = crate::helpers::client()
        .post(app.url("/api/current_user"))
        .header("content-type", "application/x-www-form-urlencoded")
        .bearer_auth(&bob)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let me: Value = response.json().await.unwrap();
    assert_eq!(me["displaced"], 1, "{me}");
    assert!(db::ledger::audit(&app.db).await.unwrap().is_clean());

    // A model booking displaces too, when nothing else fits: the fleet is full again with a
    // preemptible batch booking on the first GPU at a later hour.
    let (status, second) = book(&app, &bob, &booking(Some(batch), &[*target], 6, 2)).await;
    assert_eq!(status, 201, "{second}");
    book(&app, &carl, &booking(None, rest, 6, 2)).await;
    let (status, by_model) = book(&app, &ana, &booking(Some(prod), &[], 6, 1)).await;
    assert_eq!(status, 201, "{by_model}");
    assert_eq!(by_model["gpu_ids"], json!([target]));
    assert_eq!(
        reservation_row(&app, second["id"].as_i64().unwrap())
            .await
            .released_reason,
        Some(ReleaseReason::Preempted)
    );

    // A booking that waits for approval takes nobody's place.
    let eve = unfunded_user_token(&app, "eve@example.com", PlatformRole::User).await;
    invitation_by_admin(&app, prod, &ana, "eve@example.com").await;
    accept(&app, "eve@example.com").await;
    set_rules(
        &app,
        &platform,
        prod,
        json!({ "default_priority": "production", "approval_over_gpu_hours": 1 }),
    )
    .await;
    let (_, third) = book(&app, &bob, &booking(Some(batch), &[*target], 12, 2)).await;
    book(&app, &carl, &booking(None, rest, 12, 2)).await;
    let (status, refused) = book(&app, &eve, &booking(Some(prod), &[*target], 12, 2)).await;
    assert_eq!(status, 409, "{refused}");
    assert!(refused["clash"].is_object(), "{refused}");
    assert_eq!(
        reservation_row(&app, third["id"].as_i64().unwrap())
            .await
            .status,
        reservation::Status::Confirmed
    );
    assert!(db::ledger::audit(&app.db).await.unwrap().is_clean());
    app.stop().await;
}

async fn approvals_hold_the_slot_until_decided_or_expired(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = unfunded_user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let ana = unfunded_user_token(&app, "ana@example.com", PlatformRole::User).await;
    let bia = unfunded_user_token(&app, "bia@example.com", PlatformRole::User).await;
    let carl = user_token(&app, "carl@example.com", PlatformRole::User).await;
    let team = funded_team(
        &app,
        &platform,
        "Research",
        ("ana@example.com", &ana),
        &["bia@example.com"],
    )
    .await;
    let (status, rules) = set_rules(
        &app,
        &ana,
        team,
        json!({ "default_priority": "development", "approval_over_gpu_hours": 2, "approval_expiry_hours": 12 }),
    )
    .await;
    assert_eq!(status, 200, "{rules}");
    let gpu = gpus_of(&app, H100).await[0];
    let balance = team_balance(&app, &ana, team).await;

    // Up to the threshold: booked as usual.
    let (status, small) = book(&app, &bia, &booking(Some(team), &[gpu], 0, 2)).await;
    assert_eq!(status, 201, "{small}");
    assert_eq!(small["payment_status"], "paid");
    // Above it: waits, unpaid, holding its slot.
    let (status, pending) = book(&app, &bia, &booking(Some(team), &[gpu], 3, 3)).await;
    assert_eq!(status, 201, "{pending}");
    assert_eq!(pending["payment_status"], "awaiting_approval");
    assert!(pending["approval_expires_at"].is_string(), "{pending}");
    let pending_id = pending["id"].as_i64().unwrap();
    let price = pending["price_minor"].as_i64().unwrap();
    let small_price = small["price_minor"].as_i64().unwrap();
    assert_eq!(team_balance(&app, &ana, team).await, balance - small_price);
    let (status, _) = book(&app, &carl, &booking(None, &[gpu], 4, 1)).await;
    assert_eq!(status, 409, "the pending booking holds its slot");
    // The admin's own large booking needs no approval.
    let (status, own) = book(&app, &ana, &booking(Some(team), &[], 20, 3)).await;
    assert_eq!(
        (status, &own["payment_status"]),
        (201, &json!("paid")),
        "{own}"
    );

    // Admins see it waiting; members do not see the list, nor may they decide.
    let (_, rules) = get(&app, &ana, &format!("/api/v1/teams/{team}/rules")).await;
    assert_eq!(rules["pending"][0]["id"], pending_id, "{rules}");
    let (_, rules) = get(&app, &bia, &format!("/api/v1/teams/{team}/rules")).await;
    assert_eq!(rules["pending"], json!([]));
    let decide = |id: i64| format!("/api/v1/teams/{team}/approvals/{id}");
    let (status, _) = post_json(
        &app,
        &bia,
        &decide(pending_id),
        &json!({ "decision": "approve" }),
    )
    .await;
    assert_eq!(status, 403);
    let (status, bad) = post_json(
        &app,
        &ana,
        &decide(pending_id),
        &json!({ "decision": "maybe" }),
    )
    .await;
    assert_eq!((status, &bad["field"]), (422, &json!("decision")));

    // Approved: charged now (the portal charges at booking).
    let (status, approved) = post_json(
        &app,
        &ana,
        &decide(pending_id),
        &json!({ "decision": "approve" }),
    )
    .await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["payment_status"], "paid");
    let own_price = own["price_minor"].as_i64().unwrap();
    assert_eq!(
        team_balance(&app, &ana, team).await,
        balance - small_price - own_price - price
    );
    let (status, again) = post_json(
        &app,
        &ana,
        &decide(pending_id),
        &json!({ "decision": "reject" }),
    )
    .await;
    assert_eq!(
        (status, &again["code"]),
        (409, &json!("not_awaiting_approval"))
    );

    // Rejected: the slot is free again, nothing charged.
    let (_, second) = book(&app, &bia, &booking(Some(team), &[gpu], 8, 3)).await;
    let second_id = second["id"].as_i64().unwrap();
    let (status, rejected) = post_json(
        &app,
        &ana,
        &decide(second_id),
        &json!({ "decision": "reject" }),
    )
    .await;
    assert_eq!(status, 200, "{rejected}");
    assert_eq!(rejected["status"], "cancelled");
    assert_eq!(rejected["released"], "rejected");
    let (status, _) = book(&app, &carl, &booking(None, &[gpu], 8, 3)).await;
    assert_eq!(status, 201, "the rejected booking's slot is free");

    // Nobody decides: the payment job releases it once the approval expired.
    let (_, third) = book(&app, &bia, &booking(Some(team), &[gpu], 12, 3)).await;
    let third_id = third["id"].as_i64().unwrap();
    let expires: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(third["approval_expires_at"].clone()).unwrap();
    let charge = berth_app::domain::payment::ChargePolicy::default();
    let early = berth_app::backend::payment_job::run(
        &app.db,
        &charge,
        expires - TimeDelta::minutes(1),
        None,
    )
    .await
    .unwrap();
    assert_eq!(early.expired, 0);
    let late = berth_app::backend::payment_job::run(&app.db, &charge, expires, None)
        .await
        .unwrap();
    assert_eq!(late.expired, 1);
    let released = reservation_row(&app, third_id).await;
    assert_eq!(released.status, reservation::Status::Cancelled);
    assert_eq!(
        released.released_reason,
        Some(ReleaseReason::ApprovalExpired)
    );
    let (status, late_approval) = post_json(
        &app,
        &ana,
        &decide(third_id),
        &json!({ "decision": "approve" }),
    )
    .await;
    assert_eq!(
        (status, &late_approval["code"]),
        (409, &json!("not_awaiting_approval"))
    );

    let actions: Vec<String> = audit_entry::Entity::find()
        .filter(audit_entry::Column::TeamId.eq(team))
        .all(&app.db)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.action)
        .collect();
    assert!(
        actions.iter().any(|a| a == "booking.approve"),
        "{actions:?}"
    );
    assert!(actions.iter().any(|a| a == "booking.reject"), "{actions:?}");

    // A team whose credits are taken back after it booked: its booking charged before the
    // start finds the wallet short, and the dashboard's money says so. (Without credits it
    // could not book at all: the booking holds its price.)
    let dan = unfunded_user_token(&app, "dan@example.com", PlatformRole::User).await;
    let poor = team_with_admin(&app, &platform, "Poor", "dan@example.com").await;
    let mut later = booking(Some(poor), &[], 30, 2);
    later["charge"] = json!("before_start");
    let (status, refused) = book(&app, &dan, &later).await;
    assert_eq!(status, 409, "{refused}");
    let price = refused["details"]["missing_minor"].as_i64().unwrap();
    let team_credits =
        |amount: i64| json!({ "team_id": poor, "amount_minor": amount, "reason": "test" });
    let credits = "/api/v1/admin/credits";
    assert_eq!(
        post_json(&app, &platform, credits, &team_credits(price))
            .await
            .0,
        201
    );
    let (status, pending) = book(&app, &dan, &later).await;
    assert_eq!(status, 201, "{pending}");
    assert_eq!(
        post_json(&app, &platform, credits, &team_credits(-price))
            .await
            .0,
        201
    );
    assert_eq!(pending["payment_status"], "pending");
    let charge_at: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(pending["charge_at"].clone()).unwrap();
    berth_app::backend::payment_job::run(&app.db, &charge, charge_at, None)
        .await
        .unwrap();
    let (status, shown) = get(&app, &dan, &format!("/api/v1/teams/{poor}")).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["money"]["payments_due"], 1, "{shown}");
    assert!(db::ledger::audit(&app.db).await.unwrap().is_clean());
    app.stop().await;
}

async fn two_teams_racing_for_their_last_quota_get_exactly_it(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = unfunded_user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let mut tokens = Vec::new();
    let mut teams = Vec::new();
    for (name, admin) in [("Alpha", "a0@example.com"), ("Beta", "b0@example.com")] {
        let admin_token = unfunded_user_token(&app, admin, PlatformRole::User).await;
        let members: Vec<String> = (1..4)
            .map(|i| format!("{}{i}@example.com", &admin[..1]))
            .collect();
        for email in &members {
            unfunded_user_token(&app, email, PlatformRole::User).await;
        }
        let member_refs: Vec<&str> = members.iter().map(String::as_str).collect();
        let team = funded_team(&app, &platform, name, (admin, &admin_token), &member_refs).await;
        let (status, quota) =
            set_quota(&app, &platform, team, H100, json!({ "guaranteed_gpus": 2 })).await;
        assert_eq!(status, 200, "{quota}");
        // One GPU of the two is taken already.
        let (status, _) = book(&app, &admin_token, &booking(Some(team), &[], 0, 4)).await;
        assert_eq!(status, 201);
        teams.push(team);
        let mut team_tokens = vec![admin_token];
        for email in &members {
            team_tokens
                .push(crate::helpers::unfunded_user_token(&app, email, PlatformRole::User).await);
        }
        tokens.push(team_tokens);
    }
    // Four members of each team at once, all for the last GPU of their quota.
    let mut requests = Vec::new();
    for (team, team_tokens) in teams.iter().zip(&tokens) {
        for token in team_tokens {
            requests.push((
                token.clone(),
                "/api/v1/reservations".to_owned(),
                booking(Some(*team), &[], 1, 2),
            ));
        }
    }
    let results = post_all_at_once(&app, requests).await;
    let booked = results.iter().filter(|(s, _)| *s == 201).count();
    let over = results
        .iter()
        .filter(|(s, b)| *s == 409 && b["code"] == "over_quota_gpus")
        .count();
    assert_eq!((booked, over), (2, 6), "{results:?}");
    let start = next_month_at(0);
    let quota = berth_app::domain::quota::Quota {
        guaranteed_gpus: 2,
        weekly_gpu_hours: None,
    };
    for team in &teams {
        // Each team got exactly its last GPU: two held at once, not a quarter more fits.
        let spans: Vec<_> = db::quotas::team_spans(
            &app.db,
            *team,
            Some(H100),
            start,
            start + TimeDelta::hours(4),
            true,
        )
        .await
        .unwrap()
        .into_iter()
        .map(|(_, span, _)| span)
        .collect();
        assert_eq!(spans.len(), 2, "team {team}");
        let probe = berth_app::domain::quota::TeamSpan {
            window: spans[1].window,
            quarters: 1,
        };
        assert!(matches!(
            berth_app::domain::quota::check_quota(&quota, &spans, &probe),
            berth_app::domain::quota::QuotaCheck::Concurrent {
                used_quarters: 8,
                ..
            }
        ));
    }
    assert!(db::ledger::audit(&app.db).await.unwrap().is_clean());
    app.stop().await;
}

async fn platform_admins_run_prices_sharing_and_retirement_from_the_fleet_page(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = unfunded_user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let ana = user_token(&app, "ana@example.com", PlatformRole::User).await;
    let a100 = "NVIDIA A100-PCIE-40GB";
    let path = format!("/api/v1/admin/models/{}/price", segment(a100));

    // Only platform admins; bad prices are refused with the field.
    let (status, _) = send(
        &app,
        Method::PUT,
        Some(&ana),
        &path,
        Some(json!({ "hourly_price_minor": 1 })),
    )
    .await;
    assert_eq!(status, 403);
    for bad in [json!(-1), json!("cheap"), json!(2_000_000_000_i64)] {
        let (status, answer) = send(
            &app,
            Method::PUT,
            Some(&platform),
            &path,
            Some(json!({ "hourly_price_minor": bad })),
        )
        .await;
        assert_eq!(
            (status, &answer["field"]),
            (422, &json!("hourly_price_minor")),
            "{answer}"
        );
    }
    let (status, answer) = send(
        &app,
        Method::PUT,
        Some(&platform),
        &format!("/api/v1/admin/models/{}/price", segment("Voodoo 5")),
        Some(json!({ "hourly_price_minor": 100 })),
    )
    .await;
    assert_eq!(
        (status, &answer["field"]),
        (422, &json!("model")),
        "{answer}"
    );

    // A booking keeps its price; new ones get the new price.
    let gpus = gpus_of(&app, a100).await;
    let (status, before) = book(&app, &ana, &booking(None, &[gpus[0]], 0, 1)).await;
    assert_eq!(status, 201, "{before}");
    let (status, changed) = send(
        &app,
        Method::PUT,
        Some(&platform),
        &path,
        Some(json!({ "hourly_price_minor": 250 })),
    )
    .await;
    assert_eq!(status, 200, "{changed}");
    let in_service = berth_app::backend::entity::gpu::Entity::find()
        .filter(berth_app::backend::entity::gpu::Column::Model.eq(a100))
        .filter(berth_app::backend::entity::gpu::Column::Status.ne(GpuStatus::Retired))
        .all(&app.db)
        .await
        .unwrap();
    assert_eq!(changed["gpus"], json!(in_service.len()));
    assert!(in_service.iter().all(|g| g.hourly_price_minor == 250));
    let (_, after) = book(&app, &ana, &booking(None, &[gpus[0]], 2, 1)).await;
    assert_eq!(after["price_minor"], 250);
    assert_eq!(
        reservation_row(&app, before["id"].as_i64().unwrap())
            .await
            .price_minor,
        before["price_minor"].as_i64().unwrap()
    );

    // One GPU: a price and no more shares.
    let (status, _) = send(
        &app,
        Method::PATCH,
        Some(&platform),
        &format!("/api/v1/admin/gpus/{}", gpus[1]),
        Some(json!({ "hourly_price_minor": 300, "shareable": false })),
    )
    .await;
    assert_eq!(status, 204);
    let mut half = booking(None, &[gpus[1]], 0, 1);
    half["share"] = json!(0.5);
    let (status, refused) = book(&app, &ana, &half).await;
    assert_eq!(
        (status, &refused["field"]),
        (422, &json!("share")),
        "{refused}"
    );

    // The page's retire form moves the GPU's bookings to an equivalent free GPU.
    let response = crate::helpers::client()
        .post(app.url("/api/forms/fleet/retire"))
        .bearer_auth(&platform)
        .form(&[("gpu_id", &gpus[0].to_string())])
        .send()
        .await
        .unwrap();
    assert!(
        response.url().as_str().contains("done=retired"),
        "{}",
        response.url()
    );
    let moved = reservation_row(&app, before["id"].as_i64().unwrap()).await;
    assert_eq!(moved.released_reason, None);
    assert_eq!(moved.status, reservation::Status::Confirmed);
    let (_, view) = get(
        &app,
        &platform,
        &format!("/api/v1/reservations/{}", before["id"]),
    )
    .await;
    assert!(
        !view["gpu_ids"]
            .as_array()
            .unwrap()
            .contains(&json!(gpus[0])),
        "{view}"
    );
    // A typed price that is not an amount comes back as an error on the page.
    let response = crate::helpers::client()
        .post(app.url("/api/forms/fleet/model_price"))
        .bearer_auth(&platform)
        .form(&[("model", a100), ("price", "abc")])
        .send()
        .await
        .unwrap();
    assert!(
        response.url().as_str().contains("error="),
        "{}",
        response.url()
    );
    let actions: Vec<String> = audit_entry::Entity::find()
        .filter(audit_entry::Column::Action.eq("gpu.price"))
        .order_by_asc(audit_entry::Column::Id)
        .all(&app.db)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.target_kind)
        .collect();
    assert_eq!(actions, vec!["model".to_owned(), "gpu".to_owned()]);
    assert!(db::ledger::audit(&app.db).await.unwrap().is_clean());
    app.stop().await;
}

async fn idle_team_bookings_are_found_from_telemetry(backend: Backend) {
    use berth_app::backend::entity::gpu_rollup;
    use sea_orm::{ActiveValue::Set, EntityTrait as _};
    let (app, _db) = spawn_app(backend).await;
    let platform = unfunded_user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let ana = unfunded_user_token(&app, "ana@example.com", PlatformRole::User).await;
    let bia = unfunded_user_token(&app, "bia@example.com", PlatformRole::User).await;
    let team = funded_team(
        &app,
        &platform,
        "Idle",
        ("ana@example.com", &ana),
        &["bia@example.com"],
    )
    .await;
    let gpus = gpus_of(&app, H100).await;
    let start = berth_app::domain::schedule::slot_floor(chrono::Utc::now());
    let span = |gpu: i64| {
        json!({
            "gpu_ids": [gpu], "team_id": team,
            "start": start.to_rfc3339(), "end": (start + TimeDelta::hours(3)).to_rfc3339(),
        })
    };
    let (_, idle) = book(&app, &bia, &span(gpus[0])).await;
    let (_, busy) = book(&app, &ana, &span(gpus[1])).await;
    let (_, unmeasured) = book(&app, &ana, &span(gpus[2])).await;
    // An hour into the bookings: the last half hour's minutes, 2 % on one GPU, 85 % on another,
    // nothing measured on the third.
    let later = start + TimeDelta::hours(1);
    let mut rows = Vec::new();
    for minute in 0..30 {
        let at = later - TimeDelta::minutes(30 - minute);
        for (gpu, util) in [(gpus[0], 2.0), (gpus[1], 85.0)] {
            rows.push(gpu_rollup::ActiveModel {
                gpu_id: Set(gpu),
                minute_ms: Set(at.timestamp_millis()),
                samples: Set(6),
                util_min: Set(Some(util)),
                util_avg: Set(Some(util)),
                util_max: Set(Some(util)),
                mem_min: Set(None),
                mem_avg: Set(None),
                mem_max: Set(None),
                temp_min: Set(None),
                temp_avg: Set(None),
                temp_max: Set(None),
                power_min: Set(None),
                power_avg: Set(None),
                power_max: Set(None),
            });
        }
    }
    gpu_rollup::Entity::insert_many(rows)
        .exec_without_returning(&app.db)
        .await
        .unwrap();
    let rules = berth_app::backend::quotas::rules(&app.state, team, later)
        .await
        .unwrap();
    let found: Vec<(i64, String)> = rules
        .idle
        .iter()
        .map(|i| (i.reservation.id, i.reservation.owner_name.clone()))
        .collect();
    assert_eq!(
        found,
        vec![(idle["id"].as_i64().unwrap(), "bia".to_owned())]
    );
    assert!((rules.idle[0].average_util - 2.0).abs() < 1e-9);
    assert!(busy["id"].is_i64() && unmeasured["id"].is_i64());
    app.stop().await;
}

async fn team_admins_see_the_quotas_that_platform_admins_set(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("team_admin").await;
    let admin = crate::helpers::user_id(&app, "demo-team-admin@berth.invalid").await;
    let team = db::teams::memberships_of(&app.db, admin).await.unwrap()[0].team_id;
    let page = format!("/teams/{team}");
    let team_id = team.to_string();
    let post_quota = |gpus: &'static str| {
        app.client
            .post(app.url("/api/forms/team/quota"))
            .form(&[
                ("team_id", team_id.as_str()),
                ("model", H100),
                ("guaranteed_gpus", gpus),
                ("weekly_gpu_hours", ""),
            ])
            .send()
    };
    // The team admin sees the quota table and who sets quotas, but no quota form.
    let (status, html) = app.get_text(&page).await;
    assert_eq!(status, 200);
    assert!(
        !html.contains("/api/forms/team/quota"),
        "no quota form: {html}"
    );
    assert!(html.contains("Quotas are set by platform admins"), "{html}");
    // Posting the form anyway is refused and changes nothing.
    let response = post_quota("2").await.unwrap();
    assert_eq!(response.status().as_u16(), 403);
    assert!(
        db::quotas::quota(&app.db, team, H100)
            .await
            .unwrap()
            .is_none(),
        "no quota written"
    );

    // A platform admin gets the form, and the quota they set shows to the team admin.
    app.sign_in("platform_admin").await;
    let (_, html) = app.get_text(&page).await;
    assert!(html.contains("/api/forms/team/quota"), "{html}");
    let response = post_quota("2").await.unwrap();
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(location, format!("{page}?done=quota"));
    app.sign_in("team_admin").await;
    let (status, rules) = app.get_text(&format!("/api/v1/teams/{team}/rules")).await;
    assert_eq!(status, 200, "{rules}");
    let rules: Value = serde_json::from_str(&rules).unwrap();
    let h100 = rules["quotas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["model"] == H100)
        .cloned()
        .unwrap_or_else(|| panic!("{rules}"));
    assert_eq!(h100["quota"]["guaranteed_gpus"], 2, "{h100}");
    app.stop().await;
}

crate::on_both_backends!(
    team_admins_see_the_quotas_that_platform_admins_set,
    idle_team_bookings_are_found_from_telemetry,
    platform_admins_run_prices_sharing_and_retirement_from_the_fleet_page,
    quotas_refuse_with_the_numbers_or_let_burst_bookings_through,
    a_higher_priority_booking_takes_the_place_of_preemptible_ones,
    approvals_hold_the_slot_until_decided_or_expired,
    two_teams_racing_for_their_last_quota_get_exactly_it,
);
