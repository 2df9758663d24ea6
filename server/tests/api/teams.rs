//! Teams and the audit log over HTTP, on both stores: invitations accepted at sign-in, the
//! last-admin rule under concurrent requests, validation, the team page's forms, the audit log
//! being append-only, and an authorization matrix over the team and admin endpoints and server
//! functions (denials are 401/403/404, never 500, and change nothing).

use crate::helpers::*;
use berth_app::backend::db;
use berth_app::backend::entity::{
    audit_entry, ledger_transaction, maintenance_window, reservation, team, team_invitation,
    team_member,
};
use berth_app::domain::team::TeamRole;
use berth_app::domain::user::PlatformRole;
use chrono::TimeDelta;
use sea_orm::{ConnectionTrait, EntityTrait, PaginatorTrait};
use serde_json::{Value, json};

async fn role_in(app: &TestApp, team_id: i64, email: &str) -> Option<TeamRole> {
    db::teams::members(&app.db, team_id)
        .await
        .unwrap()
        .into_iter()
        .find(|m| m.email == email)
        .map(|m| m.role)
}

async fn invited_member_joins_at_sign_in_and_sees_the_team(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = unfunded_user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let ana = unfunded_user_token(&app, "ana@example.com", PlatformRole::User).await;
    let team = team_with_admin(&app, &platform, "Vision Lab", "ana@example.com").await;
    assert_eq!(
        role_in(&app, team, "ana@example.com").await,
        Some(TeamRole::Admin)
    );

    // Ana invites the demo user (mixed case is the same address), who signs in.
    let (status, invitation) = post_json(
        &app,
        &ana,
        &format!("/api/v1/teams/{team}/invitations"),
        &json!({ "email": "Demo-User@berth.invalid", "role": "member" }),
    )
    .await;
    assert_eq!(status, 201, "{invitation}");
    assert_eq!(invitation["email"], "demo-user@berth.invalid");
    let (_, shown) = get(&app, &ana, &format!("/api/v1/teams/{team}")).await;
    assert_eq!(shown["invitations"].as_array().unwrap().len(), 1);
    assert_eq!(shown["access"], "manage");

    app.sign_in("user").await;
    let teams: Value = app
        .client
        .get(app.url("/api/v1/teams"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = teams
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"Vision Lab"), "{teams}");
    assert_eq!(
        role_in(&app, team, "demo-user@berth.invalid").await,
        Some(TeamRole::Member)
    );
    // Accepted once: nothing open any more, and the member sees the team but not its invitations.
    let (_, shown) = get(&app, &ana, &format!("/api/v1/teams/{team}")).await;
    assert!(shown["invitations"].as_array().unwrap().is_empty());
    let member_view: Value = app
        .client
        .get(app.url(&format!("/api/v1/teams/{team}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(member_view["access"], "view");
    assert_eq!(member_view["members"].as_array().unwrap().len(), 2);

    // The team page lists the members; the member gets no admin forms.
    let (status, html) = app.get_text(&format!("/teams/{team}")).await;
    assert_eq!(status, 200);
    assert!(html.contains("Vision Lab") && html.contains("ana@example.com"));
    assert!(
        !html.contains("name=\"action\" value=\"invite\""),
        "no invite form for members"
    );

    // The audit log recorded the creation, the invitation and both acceptances.
    let (_, log) = get(
        &app,
        &platform,
        &format!("/api/v1/admin/audit?team_id={team}"),
    )
    .await;
    let actions: Vec<&str> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "TeamInvitationAccept",
            "TeamInvite",
            "TeamInvitationAccept",
            "TeamCreate"
        ]
    );
    app.stop().await;
}

async fn invitations_are_validated_and_one_per_address(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = unfunded_user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let _ana = unfunded_user_token(&app, "ana@example.com", PlatformRole::User).await;
    let team = team_with_admin(&app, &platform, "Speech", "ana@example.com").await;
    let path = format!("/api/v1/teams/{team}/invitations");
    let ana = unfunded_user_token(&app, "ana@example.com", PlatformRole::User).await;

    let (status, body) = post_json(&app, &ana, &path, &json!({ "email": "not an address" })).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("not_an_email")),
        "{body}"
    );
    let (status, body) = post_json(
        &app,
        &ana,
        &path,
        &json!({ "email": "x@example.com", "role": "owner" }),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("unknown_team_role")),
        "{body}"
    );
    let (status, body) = post_json(&app, &ana, &path, &json!({ "email": 7 })).await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = post_json(&app, &ana, &path, &json!({ "email": "ana@example.com" })).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("already_member")),
        "{body}"
    );
    let (status, body) = post_json(
        &app,
        &platform,
        "/api/v1/admin/teams",
        &json!({ "name": "Speech", "admin_email": "z@example.com" }),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("team_name_taken")),
        "{body}"
    );
    let (status, body) = post_json(
        &app,
        &platform,
        "/api/v1/admin/teams",
        &json!({ "name": "   ", "admin_email": "z@example.com" }),
    )
    .await;
    assert_eq!(status, 422, "{body}");

    // Twelve admins' clicks at once for one address: one invitation.
    let results = post_all_at_once(
        &app,
        (0..12)
            .map(|_| {
                (
                    ana.clone(),
                    path.clone(),
                    json!({ "email": "bea@example.com" }),
                )
            })
            .collect(),
    )
    .await;
    let created = results.iter().filter(|(s, _)| *s == 201).count();
    let refused = results
        .iter()
        .filter(|(s, b)| *s == 409 && b["code"] == "already_invited")
        .count();
    assert_eq!((created, refused), (1, 11), "{results:?}");
    let open = db::teams::open_invitations(&app.db, team).await.unwrap();
    assert_eq!(open.len(), 1);

    // Withdrawn, it can be sent again; withdrawing twice is 404.
    let id = open[0].id;
    let revoke = format!("/api/v1/teams/{team}/invitations/{id}");
    let (status, _) = send(&app, reqwest::Method::DELETE, Some(&ana), &revoke, None).await;
    assert_eq!(status, 204);
    let (status, _) = send(&app, reqwest::Method::DELETE, Some(&ana), &revoke, None).await;
    assert_eq!(status, 404);
    invitation_by_admin(&app, team, &ana, "bea@example.com").await;
    app.stop().await;
}

async fn a_team_always_keeps_an_admin_even_under_concurrent_changes(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = unfunded_user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let ana = unfunded_user_token(&app, "ana@example.com", PlatformRole::User).await;
    let bia = unfunded_user_token(&app, "bia@example.com", PlatformRole::User).await;
    let team = team_with_admin(&app, &platform, "Robotics", "ana@example.com").await;
    let (ana_id, bia_id) = (
        user_id(&app, "ana@example.com").await,
        user_id(&app, "bia@example.com").await,
    );
    let member = |id: i64| format!("/api/v1/teams/{team}/members/{id}");

    // Alone, Ana can neither step down nor leave.
    let (status, body) = send(
        &app,
        reqwest::Method::PATCH,
        Some(&ana),
        &member(ana_id),
        Some(json!({ "role": "member" })),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("last_admin")),
        "{body}"
    );
    let (status, _) = send(
        &app,
        reqwest::Method::DELETE,
        Some(&ana),
        &member(ana_id),
        None,
    )
    .await;
    assert_eq!(status, 409);

    for round in 0..5 {
        // Bia joins as a second admin; then each removes the other at the same instant.
        invitation_by_admin(&app, team, &ana, "bia@example.com").await;
        accept(&app, "bia@example.com").await;
        let (status, _) = send(
            &app,
            reqwest::Method::PATCH,
            Some(&ana),
            &member(bia_id),
            Some(json!({ "role": "admin" })),
        )
        .await;
        assert_eq!(status, 204);
        let (ana_path, bia_path) = (member(ana_id), member(bia_id));
        let a = send(&app, reqwest::Method::DELETE, Some(&ana), &bia_path, None);
        let b = send(&app, reqwest::Method::DELETE, Some(&bia), &ana_path, None);
        let ((sa, _), (sb, _)) = tokio::join!(a, b);
        let mut statuses = [sa, sb];
        statuses.sort_unstable();
        // The loser is refused: as the last admin's remover (409), or, removed already, as an
        // outsider (404, or 403 once no longer an admin).
        assert_eq!(statuses[0], 204, "round {round}: {statuses:?}");
        assert!(
            [403, 404, 409].contains(&statuses[1]),
            "round {round}: {statuses:?}"
        );
        let admins = db::teams::members(&app.db, team)
            .await
            .unwrap()
            .into_iter()
            .filter(|m| m.role == TeamRole::Admin)
            .count();
        assert_eq!(admins, 1, "round {round}");
        // Whoever was removed, make Ana the one admin left for the next round.
        if role_in(&app, team, "ana@example.com").await.is_none() {
            invitation_by_admin(&app, team, &bia, "ana@example.com").await;
            accept(&app, "ana@example.com").await;
            send(
                &app,
                reqwest::Method::PATCH,
                Some(&bia),
                &member(ana_id),
                Some(json!({ "role": "admin" })),
            )
            .await;
            let (status, _) = send(
                &app,
                reqwest::Method::DELETE,
                Some(&bia),
                &member(bia_id),
                None,
            )
            .await;
            assert_eq!(status, 204, "Bia leaves");
        }
    }
    app.stop().await;
}

async fn the_team_page_forms_work_without_javascript(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("team_admin").await;
    let team = db::teams::memberships_of(
        &app.db,
        user_id(&app, "demo-team-admin@berth.invalid").await,
    )
    .await
    .unwrap()[0]
        .team_id;
    let page = format!("/teams/{team}");
    let team_id = team.to_string();
    let form = |fields: &[(&str, &str)]| {
        let mut fields = fields.to_vec();
        fields.push(("team_id", &team_id));
        app.client
            .post(app.url("/api/forms/team/invite"))
            .header("accept-language", "pt-BR")
            .form(&fields)
            .send()
    };
    let response = form(&[("email", "leo@example.com"), ("role", "admin")])
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(location, format!("{page}?done=invited"));
    let html = app.get_in_language(&location, "pt-BR").await;
    assert!(html.contains("Convite enviado"), "{html}");
    assert!(html.contains("leo@example.com"));

    // The same address again: back with the reason, in Portuguese.
    let response = form(&[("email", "leo@example.com")]).await.unwrap();
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.contains("error="), "{location}");
    let html = app.get_in_language(&location, "pt-BR").await;
    assert!(
        html.contains("leo@example.com já foi convidado para esta equipe"),
        "{html}"
    );

    // The audit entries show on the page, named in the reader's language.
    assert!(html.contains("Membro convidado"));
    app.stop().await;
}

async fn the_audit_log_is_append_only_and_records_money_and_admin_actions(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = unfunded_user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let _bia = unfunded_user_token(&app, "bia@example.com", PlatformRole::User).await;
    let (status, body) = post_json(
        &app,
        &platform,
        "/api/v1/admin/credits",
        &json!({ "email": "bia@example.com", "amount_minor": 2500, "reason": "invoice 7" }),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let gpu = gpus_of(&app, "NVIDIA A100-PCIE-40GB").await[0];
    let start = tomorrow(9, 0) + TimeDelta::days(2);
    let (status, body) = post_json(
        &app,
        &platform,
        "/api/v1/maintenance",
        &json!({
            "gpu_ids": [gpu],
            "start": start.to_rfc3339(),
            "end": (start + TimeDelta::hours(2)).to_rfc3339(),
            "reason": "firmware",
        }),
    )
    .await;
    assert_eq!(status, 201, "{body}");

    let (_, log) = get(&app, &platform, "/api/v1/admin/audit").await;
    let log = log.as_array().unwrap();
    let grant = log
        .iter()
        .find(|e| e["action"] == "CreditsGrant")
        .expect("grant logged");
    assert_eq!(grant["actor"][1], "root");
    let before: Value = serde_json::from_str(grant["before"].as_str().unwrap()).unwrap();
    let after: Value = serde_json::from_str(grant["after"].as_str().unwrap()).unwrap();
    assert_eq!(before["balance_minor"], 0);
    assert_eq!(after["balance_minor"], 2500);
    assert_eq!(after["reason"], "invoice 7");
    assert!(log.iter().any(|e| e["action"] == "MaintenanceCreate"));
    let (_, filtered) = get(&app, &platform, "/api/v1/admin/audit?action=credits.grant").await;
    assert!(
        filtered
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["action"] == "CreditsGrant")
    );
    let (status, _) = get(&app, &platform, "/api/v1/admin/audit?action=nope").await;
    assert_eq!(status, 422);

    // The database itself refuses to change or delete entries.
    let count = audit_entry::Entity::find().count(&app.db).await.unwrap();
    for statement in [
        "UPDATE audit_log SET action = 'credits.deduct'",
        "DELETE FROM audit_log",
    ] {
        let result = app.db.execute_unprepared(statement).await;
        assert!(result.is_err(), "{statement} must fail");
        assert!(
            result.unwrap_err().to_string().contains("append-only"),
            "{statement}"
        );
    }
    assert_eq!(
        audit_entry::Entity::find().count(&app.db).await.unwrap(),
        count
    );

    // The page, in Portuguese.
    app.sign_in("platform_admin").await;
    let html = app.get_in_language("/admin/audit", "pt-BR").await;
    assert!(
        html.contains("Registro de auditoria") && html.contains("Créditos concedidos"),
        "{html}"
    );
    assert!(html.contains("invoice 7"));
    app.stop().await;
}

/// Row counts of everything the matrix's requests could change.
async fn snapshot(app: &TestApp) -> [u64; 8] {
    [
        berth_app::backend::entity::team_quota::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        team::Entity::find().count(&app.db).await.unwrap(),
        team_member::Entity::find().count(&app.db).await.unwrap(),
        team_invitation::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        audit_entry::Entity::find().count(&app.db).await.unwrap(),
        ledger_transaction::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        reservation::Entity::find().count(&app.db).await.unwrap(),
        maintenance_window::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
    ]
}

async fn authorization_matrix(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = unfunded_user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let member_a = unfunded_user_token(&app, "member-a@example.com", PlatformRole::User).await;
    let admin_a = unfunded_user_token(&app, "admin-a@example.com", PlatformRole::User).await;
    let admin_b = unfunded_user_token(&app, "admin-b@example.com", PlatformRole::User).await;
    let team_a = team_with_admin(&app, &platform, "Team A", "admin-a@example.com").await;
    let _team_b = team_with_admin(&app, &platform, "Team B", "admin-b@example.com").await;
    let _other = unfunded_user_token(&app, "other-a@example.com", PlatformRole::User).await;
    for email in ["member-a@example.com", "other-a@example.com"] {
        invitation_by_admin(&app, team_a, &admin_a, email).await;
        accept(&app, email).await;
    }
    let member_a_id = user_id(&app, "member-a@example.com").await;
    let other_id = user_id(&app, "other-a@example.com").await;
    let gpu = gpus_of(&app, "NVIDIA A100-PCIE-40GB").await[1];
    // A booking of member A waiting for approval (team A approves above 1 GPU-hour).
    send(
        &app,
        reqwest::Method::PUT,
        Some(&admin_a),
        &format!("/api/v1/teams/{team_a}/rules"),
        Some(json!({ "default_priority": "development", "approval_over_gpu_hours": 1 })),
    )
    .await;
    let start = tomorrow(9, 0) + TimeDelta::days(5);
    let (status, pending) = post_json(
        &app,
        &member_a,
        "/api/v1/reservations",
        &json!({
            "model": "NVIDIA L40S", "count": 1, "team_id": team_a,
            "start": start.to_rfc3339(), "end": (start + TimeDelta::hours(2)).to_rfc3339(),
        }),
    )
    .await;
    assert_eq!(status, 201, "{pending}");
    assert_eq!(pending["payment_status"], "awaiting_approval");
    let pending = pending["id"].as_i64().unwrap();

    // Who: anonymous, member of A, admin of A, admin of B, platform admin.
    let who: [(&str, Option<&str>); 5] = [
        ("anonymous", None),
        ("member of A", Some(&member_a)),
        ("admin of A", Some(&admin_a)),
        ("admin of B", Some(&admin_b)),
        ("platform admin", Some(&platform)),
    ];
    use reqwest::Method;
    let maintenance_at = tomorrow(9, 0) + TimeDelta::days(3);
    // (method, path, body, expected status per caller in the order above)
    type Case = (Method, String, Option<Value>, [u16; 5]);
    let cases: Vec<Case> = vec![
        (
            Method::GET,
            "/api/v1/teams".into(),
            None,
            [401, 200, 200, 200, 200],
        ),
        (
            Method::GET,
            format!("/api/v1/teams/{team_a}"),
            None,
            [401, 200, 200, 404, 200],
        ),
        (
            Method::GET,
            format!("/api/v1/teams/{team_a}/audit"),
            None,
            [401, 403, 200, 404, 200],
        ),
        (
            Method::POST,
            format!("/api/v1/teams/{team_a}/invitations"),
            Some(json!({ "email": "new@example.com" })),
            [401, 403, 201, 404, 409],
        ),
        (
            Method::PATCH,
            format!("/api/v1/teams/{team_a}/members/{member_a_id}"),
            Some(json!({ "role": "member" })),
            [401, 403, 204, 404, 204],
        ),
        (
            Method::GET,
            format!("/api/v1/teams/{team_a}/rules"),
            None,
            [401, 200, 200, 404, 200],
        ),
        (
            Method::PUT,
            format!("/api/v1/teams/{team_a}/quotas/NVIDIA%20A100-PCIE-40GB"),
            Some(json!({ "guaranteed_gpus": 1, "weekly_gpu_hours": 40 })),
            [401, 403, 403, 404, 200],
        ),
        (
            Method::DELETE,
            format!("/api/v1/teams/{team_a}/quotas/NVIDIA%20A100-PCIE-40GB"),
            None,
            [401, 403, 403, 404, 204],
        ),
        (
            Method::PUT,
            format!("/api/v1/teams/{team_a}/rules"),
            Some(json!({ "default_priority": "training", "allow_burst": true })),
            [401, 403, 200, 404, 200],
        ),
        (
            Method::POST,
            format!("/api/v1/teams/{team_a}/approvals/{pending}"),
            Some(json!({ "decision": "reject" })),
            [401, 403, 200, 404, 409],
        ),
        (
            Method::PUT,
            "/api/v1/admin/models/NVIDIA%20L40S/price".into(),
            Some(json!({ "hourly_price_minor": 129 })),
            [401, 403, 403, 403, 200],
        ),
        (
            Method::PATCH,
            format!("/api/v1/admin/gpus/{gpu}"),
            Some(json!({ "shareable": true })),
            [401, 403, 403, 403, 204],
        ),
        (
            Method::POST,
            "/api/v1/admin/teams".into(),
            Some(json!({ "name": "Team C", "admin_email": "c@example.com" })),
            [401, 403, 403, 403, 201],
        ),
        (
            Method::GET,
            "/api/v1/admin/audit".into(),
            None,
            [401, 403, 403, 403, 200],
        ),
        (
            Method::GET,
            "/api/v1/admin/payments-due".into(),
            None,
            [401, 403, 403, 403, 200],
        ),
        (
            Method::GET,
            "/api/v1/users".into(),
            None,
            [401, 403, 403, 403, 200],
        ),
        (
            Method::POST,
            "/api/v1/admin/credits".into(),
            Some(json!({ "email": "member-a@example.com", "amount_minor": 100, "reason": "r" })),
            [401, 403, 403, 403, 201],
        ),
        (
            Method::POST,
            "/api/v1/maintenance".into(),
            Some(json!({
                "gpu_ids": [gpu],
                "start": maintenance_at.to_rfc3339(),
                "end": (maintenance_at + TimeDelta::hours(1)).to_rfc3339(),
                "reason": "matrix",
            })),
            [401, 403, 403, 403, 201],
        ),
        (
            Method::POST,
            format!("/api/v1/admin/gpus/{gpu}/retire"),
            None,
            [401, 403, 403, 403, 200],
        ),
        (
            Method::DELETE,
            format!("/api/v1/teams/{team_a}/members/{other_id}"),
            None,
            [401, 403, 204, 404, 404],
        ),
    ];
    for (method, path, body, expected) in cases {
        for ((name, token), want) in who.iter().zip(expected) {
            let before = snapshot(&app).await;
            let (status, answer) = send(&app, method.clone(), *token, &path, body.clone()).await;
            assert_eq!(status, want, "{method} {path} as {name}: {answer}");
            assert_ne!(status, 500);
            if status >= 400 {
                assert_eq!(
                    snapshot(&app).await,
                    before,
                    "{method} {path} as {name} changed data"
                );
            }
        }
    }

    // Server functions of the team and admin pages, called with each caller's credentials.
    let team_b = db::teams::summaries(&app.db, None)
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.name == "Team B")
        .unwrap()
        .id;
    let functions: Vec<(String, String, [u16; 5])> = vec![
        (
            "/api/get_teams_page".into(),
            String::new(),
            [401, 200, 200, 200, 200],
        ),
        (
            "/api/get_team_page".into(),
            format!("id={team_b}"),
            [401, 404, 404, 200, 200],
        ),
        (
            "/api/get_audit_page".into(),
            String::new(),
            [401, 403, 403, 403, 200],
        ),
        (
            "/api/get_credits_page".into(),
            String::new(),
            [401, 403, 403, 403, 200],
        ),
        (
            "/api/get_payments_page".into(),
            String::new(),
            [401, 403, 403, 403, 200],
        ),
        (
            "/api/get_fleet_page".into(),
            String::new(),
            [401, 403, 403, 403, 200],
        ),
    ];
    for (path, body, expected) in functions {
        for ((name, token), want) in who.iter().zip(expected) {
            let before = snapshot(&app).await;
            let mut request = crate::helpers::client()
                .post(app.url(&path))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body.clone());
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            assert_eq!(
                status,
                want,
                "{path} as {name}: {}",
                response.text().await.unwrap()
            );
            if status >= 400 {
                assert_eq!(
                    snapshot(&app).await,
                    before,
                    "{path} as {name} changed data"
                );
            }
        }
    }

    // The team page's form: outsiders get 404, members 403 for admin actions.
    for (token, want) in [(&admin_b, 404), (&member_a, 403)] {
        let before = snapshot(&app).await;
        let response = crate::helpers::client()
            .post(app.url("/api/forms/team/invite"))
            .bearer_auth(token)
            .form(&[
                ("team_id", team_a.to_string().as_str()),
                ("email", "x@example.com"),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), want);
        assert_eq!(snapshot(&app).await, before);
    }
    app.stop().await;
}

fn team_booking(team: i64, hour_offset: i64, hours: i64) -> Value {
    let start = next_month_at(hour_offset);
    json!({
        "model": H100,
        "count": 1,
        "start": start.to_rfc3339(),
        "end": (start + TimeDelta::hours(hours)).to_rfc3339(),
        "team_id": team,
    })
}

async fn team_bookings_are_paid_from_the_team_wallet_within_its_budget(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = unfunded_user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let ana = unfunded_user_token(&app, "ana@example.com", PlatformRole::User).await;
    let bia = unfunded_user_token(&app, "bia@example.com", PlatformRole::User).await;
    let carl = unfunded_user_token(&app, "carl@example.com", PlatformRole::User).await;
    let team = team_with_admin(&app, &platform, "Vision", "ana@example.com").await;
    invitation_by_admin(&app, team, &ana, "bia@example.com").await;
    accept(&app, "bia@example.com").await;

    // Credits into the team wallet; Bia's own wallet stays empty.
    let (status, body) = post_json(
        &app,
        &platform,
        "/api/v1/admin/credits",
        &json!({ "team_id": team, "amount_minor": 10_000, "reason": "Q1 allocation" }),
    )
    .await;
    assert_eq!(
        (status, body["team_id"].as_i64()),
        (201, Some(team)),
        "{body}"
    );
    let (status, _) = post_json(
        &app,
        &platform,
        "/api/v1/admin/credits",
        &json!({ "team_id": team, "email": "ana@example.com", "amount_minor": 1, "reason": "x" }),
    )
    .await;
    assert_eq!(status, 422, "one wallet at a time");

    // Budget: 1,500.00 minor units a month, warn from 50 %. Members may not change it.
    let budget_path = format!("/api/v1/teams/{team}/budget");
    let budget = json!({ "budget_minor": 1_500, "mode": "refuse", "warn_percent": 50 });
    let (status, _) = send(
        &app,
        reqwest::Method::PUT,
        Some(&bia),
        &budget_path,
        Some(budget.clone()),
    )
    .await;
    assert_eq!(status, 403);
    for (bad, field) in [
        (json!({ "budget_minor": -5 }), "budget_minor"),
        (json!({ "budget_minor": 10, "mode": "block" }), "mode"),
        (
            json!({ "budget_minor": 10, "warn_percent": 0 }),
            "warn_percent",
        ),
        (json!({ "budget_minor": "ten" }), "budget_minor"),
    ] {
        let (status, body) = send(
            &app,
            reqwest::Method::PUT,
            Some(&ana),
            &budget_path,
            Some(bad),
        )
        .await;
        assert_eq!(
            (status, body["field"].as_str()),
            (422, Some(field)),
            "{body}"
        );
    }
    let (status, body) = send(
        &app,
        reqwest::Method::PUT,
        Some(&ana),
        &budget_path,
        Some(budget),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // 2 h of an H100 (6.98): within the budget, paid by the team.
    let (status, first) = post_json(
        &app,
        &bia,
        "/api/v1/reservations",
        &team_booking(team, 0, 2),
    )
    .await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["team"], json!([team, "Vision"]));
    assert_eq!(first["payment_status"], "paid");
    assert!(first.get("budget").is_none(), "{first}");
    assert_eq!(team_balance(&app, &ana, team).await, 10_000 - 698);
    assert_eq!(
        db::ledger::wallet_balance(&app.db, user_id(&app, "bia@example.com").await)
            .await
            .unwrap()
            .minor(),
        0
    );

    // Teammates see who booked it on the calendar; others only that it is booked.
    let start = next_month_at(0);
    let query = format!(
        "/api/v1/availability?from={}&to={}&model={}",
        urlencode(&start.to_rfc3339()),
        urlencode(&(start + TimeDelta::hours(2)).to_rfc3339()),
        urlencode(H100)
    );
    let block_of = |gpus: &Value| -> Value {
        gpus.as_array()
            .unwrap()
            .iter()
            .flat_map(|gpu| gpu["busy"].as_array().cloned().unwrap_or_default())
            .find(|block| {
                block["start"]
                    .as_str()
                    .is_some_and(|s| s.starts_with(&start.format("%Y-%m-%dT%H").to_string()))
            })
            .expect("the team booking's block")
    };
    let (status, seen) = get(&app, &ana, &query).await;
    assert_eq!(status, 200, "{seen}");
    let block = block_of(&seen);
    assert_eq!(
        (block["kind"].as_str(), block["who"].as_str()),
        (Some("team"), Some("bia · Vision")),
        "{block}"
    );
    let (_, seen) = get(&app, &carl, &query).await;
    let block = block_of(&seen);
    assert_eq!(block["kind"], "booked");
    assert!(block.get("who").is_none(), "{block}");

    // The second reaches half the budget: booked, with a warning.
    let (status, second) = post_json(
        &app,
        &bia,
        "/api/v1/reservations",
        &team_booking(team, 2, 1),
    )
    .await;
    assert_eq!(status, 201, "{second}");
    assert_eq!(second["budget"]["budget"], "warn", "{second}");
    assert_eq!(second["budget"]["spent_minor"], 698 + 349);
    // The calendar says so after the booking's reload (the page asks the server).
    let page = crate::helpers::client()
        .get(app.url(&format!("/calendar?booked={}", second["id"])))
        .bearer_auth(&bia)
        .header("accept-language", "pt-BR")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("Reservado para a equipe"), "{page}");

    // A third 2 h would go over: refused with the numbers, nothing written.
    let (status, refused) = post_json(
        &app,
        &bia,
        "/api/v1/reservations",
        &team_booking(team, 3, 2),
    )
    .await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (409, Some("over_budget")),
        "{refused}"
    );
    assert_eq!(refused["details"]["spent_minor"], 1_047);
    assert_eq!(refused["details"]["limit_minor"], 1_500);
    assert_eq!(refused["details"]["price_minor"], 698);
    assert!(
        refused["message"].as_str().unwrap().contains("15.00 USD"),
        "{refused}"
    );
    assert_eq!(team_balance(&app, &ana, team).await, 10_000 - 1_047);

    // Outsiders cannot book for the team, and cannot tell it exists.
    let (status, _) = post_json(
        &app,
        &carl,
        "/api/v1/reservations",
        &team_booking(team, 5, 1),
    )
    .await;
    assert_eq!(status, 404);

    // Cancelled (weeks ahead: a full refund), the money goes back to the team wallet and the
    // month's bookings shrink, so the third fits now.
    let id = first["id"].as_i64().unwrap();
    let (status, cancelled) = send(
        &app,
        reqwest::Method::DELETE,
        Some(&bia),
        &format!("/api/v1/reservations/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(team_balance(&app, &ana, team).await, 10_000 - 349);
    let (status, third) = post_json(
        &app,
        &bia,
        "/api/v1/reservations",
        &team_booking(team, 3, 2),
    )
    .await;
    assert_eq!(status, 201, "{third}");

    // In warn mode, going over is booked with a warning.
    let (status, _) = send(
        &app,
        reqwest::Method::PUT,
        Some(&ana),
        &budget_path,
        Some(json!({ "budget_minor": 1_500, "mode": "warn", "warn_percent": 90 })),
    )
    .await;
    assert_eq!(status, 200);
    let (status, over) = post_json(
        &app,
        &bia,
        "/api/v1/reservations",
        &team_booking(team, 6, 3),
    )
    .await;
    assert_eq!(status, 201, "{over}");
    assert_eq!(over["budget"]["spent_minor"], 349 + 698 + 1_047);
    let (_, shown) = get(&app, &ana, &format!("/api/v1/teams/{team}")).await;
    assert_eq!(shown["money"]["budget_mode"], "warn");

    // A booking for tomorrow is on the team page's list of the next two weeks.
    let start = tomorrow(10, 0);
    let (status, soon) = post_json(
        &app,
        &bia,
        "/api/v1/reservations",
        &json!({
            "model": H100, "count": 1, "team_id": team,
            "start": start.to_rfc3339(),
            "end": (start + TimeDelta::hours(1)).to_rfc3339(),
        }),
    )
    .await;
    assert_eq!(status, 201, "{soon}");
    let html = crate::helpers::client()
        .get(app.url(&format!("/teams/{team}")))
        .bearer_auth(&ana)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let row = format!("data-reservation=\"{}\"", soon["id"]);
    assert!(html.contains(&row) && html.contains("bia"), "{html}");

    // The budget changes are in the team's audit log with before and after.
    let (_, log) = get(
        &app,
        &ana,
        &format!("/api/v1/teams/{team}/audit?action=team.budget"),
    )
    .await;
    let log = log.as_array().unwrap();
    assert_eq!(log.len(), 2);
    let after: Value = serde_json::from_str(log[0]["after"].as_str().unwrap()).unwrap();
    assert_eq!(after["mode"], "warn");
    assert!(db::ledger::audit(&app.db).await.unwrap().is_clean());
    app.stop().await;
}

async fn concurrent_team_bookings_never_exceed_the_budget(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let platform = unfunded_user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let ana = unfunded_user_token(&app, "ana@example.com", PlatformRole::User).await;
    let team = team_with_admin(&app, &platform, "Racing", "ana@example.com").await;
    let mut members = vec![ana.clone()];
    for i in 0..3 {
        let email = format!("m{i}@example.com");
        members.push(unfunded_user_token(&app, &email, PlatformRole::User).await);
        invitation_by_admin(&app, team, &ana, &email).await;
        accept(&app, &email).await;
    }
    post_json(
        &app,
        &platform,
        "/api/v1/admin/credits",
        &json!({ "team_id": team, "amount_minor": 1_000_000, "reason": "plenty" }),
    )
    .await;
    // Room for exactly three 1 h H100 bookings (3 × 3.49).
    send(
        &app,
        reqwest::Method::PUT,
        Some(&ana),
        &format!("/api/v1/teams/{team}/budget"),
        Some(json!({ "budget_minor": 3 * 349 + 100, "mode": "refuse", "warn_percent": 100 })),
    )
    .await;
    let results = post_all_at_once(
        &app,
        (0..8)
            .map(|i| {
                let token = members[i % members.len()].clone();
                (
                    token,
                    "/api/v1/reservations".to_owned(),
                    team_booking(team, 0, 1),
                )
            })
            .collect(),
    )
    .await;
    let booked = results.iter().filter(|(s, _)| *s == 201).count();
    let over = results
        .iter()
        .filter(|(s, b)| *s == 409 && b["code"] == "over_budget")
        .count();
    assert_eq!((booked, over), (3, 5), "{results:?}");
    let (month, next) = berth_app::domain::schedule::utc_month_of(next_month_at(0));
    let spent = db::teams::month_spend(&app.db, team, month, next)
        .await
        .unwrap();
    assert_eq!(spent.minor(), 3 * 349);
    assert_eq!(team_balance(&app, &ana, team).await, 1_000_000 - 3 * 349);
    assert!(db::ledger::audit(&app.db).await.unwrap().is_clean());
    app.stop().await;
}

/// A request's actor reads its teams once (a page's navigation and its body both show them, at
/// once), clones of it share what was read, and the next request's actor reads them again.
async fn a_requests_actor_reads_its_teams_once(backend: Backend) {
    use berth_app::backend::auth::actor::Actor;
    use sea_orm::{ColumnTrait, QueryFilter};
    let (app, _db) = spawn_app(backend).await;
    let platform = unfunded_user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    unfunded_user_token(&app, "ana@example.com", PlatformRole::User).await;
    let team = team_with_admin(&app, &platform, "Vision Lab", "ana@example.com").await;
    let ana = db::users::find_user_by_email(
        &app.db,
        &berth_app::domain::user::Email::parse("ana@example.com").unwrap(),
    )
    .await
    .unwrap()
    .unwrap();
    let navigation = Actor::new(ana.clone(), None);
    let body = navigation.clone();
    let (first, second) = tokio::join!(navigation.memberships(&app.db), body.memberships(&app.db));
    let names = |teams: Vec<berth_app::domain::team::TeamMembership>| -> Vec<String> {
        teams.into_iter().map(|m| m.team_name).collect()
    };
    assert_eq!(names(first.unwrap()), ["Vision Lab"]);
    assert_eq!(names(second.unwrap()), ["Vision Lab"]);
    // Removed from the team meanwhile: this request keeps what it read; the next one sees it.
    team_member::Entity::delete_many()
        .filter(team_member::Column::TeamId.eq(team))
        .filter(team_member::Column::UserId.eq(ana.id))
        .exec(&app.db)
        .await
        .unwrap();
    assert_eq!(
        names(body.memberships(&app.db).await.unwrap()),
        ["Vision Lab"]
    );
    let next_request = Actor::new(ana, None);
    assert!(next_request.memberships(&app.db).await.unwrap().is_empty());
    app.stop().await;
}

crate::on_both_backends!(
    a_requests_actor_reads_its_teams_once,
    invited_member_joins_at_sign_in_and_sees_the_team,
    invitations_are_validated_and_one_per_address,
    a_team_always_keeps_an_admin_even_under_concurrent_changes,
    the_team_page_forms_work_without_javascript,
    the_audit_log_is_append_only_and_records_money_and_admin_actions,
    authorization_matrix,
    team_bookings_are_paid_from_the_team_wallet_within_its_budget,
    concurrent_team_bookings_never_exceed_the_budget,
);
