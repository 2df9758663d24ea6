//! Paging of the long lists (`limit`, an opaque `cursor`, the next page in the `Link` header):
//! reservations with their filters, a wallet's movements, GPU events, the audit log and teams, on
//! both backends. Pages are walked by following `Link` as a client would.

use crate::helpers::{
    Backend, H100, TestApp, first_gpu, gpus_of, past_booking, post_json, spawn_app, user_id,
    user_token,
};
use berth_app::backend::entity::{gpu, gpu_access_event, gpu_event};
use berth_app::domain::user::PlatformRole;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{ActiveValue::NotSet, ActiveValue::Set, EntityTrait};
use serde_json::{Value, json};

/// `GET path`: the status, the JSON answer and the `Link` header's next page (a path), if any.
async fn page(app: &TestApp, token: &str, path: &str) -> (u16, Value, Option<String>) {
    let response = crate::helpers::client()
        .get(app.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let link = response
        .headers()
        .get("link")
        .map(|value| value.to_str().unwrap().to_owned());
    let cursor = response
        .headers()
        .get("x-next-cursor")
        .map(|value| value.to_str().unwrap().to_owned());
    let next = link.map(|link| {
        let next = link
            .strip_prefix('<')
            .and_then(|rest| rest.strip_suffix(">; rel=\"next\""))
            .unwrap_or_else(|| panic!("a Link to the next page: {link}"))
            .to_owned();
        assert!(
            next.ends_with(&format!(
                "cursor={}",
                cursor.clone().expect("X-Next-Cursor")
            )),
            "{next}"
        );
        next
    });
    (status, response.json().await.unwrap_or(Value::Null), next)
}

/// Every page from `first`, following `Link`: the rows of each page.
async fn walk(
    app: &TestApp,
    token: &str,
    first: &str,
    rows: fn(&Value) -> Vec<Value>,
) -> Vec<Vec<Value>> {
    let mut pages = Vec::new();
    let mut next = Some(first.to_owned());
    while let Some(path) = next {
        let (status, body, link) = page(app, token, &path).await;
        assert_eq!(status, 200, "{path}: {body}");
        pages.push(rows(&body));
        next = link;
        assert!(pages.len() < 50, "paging ends");
    }
    pages
}

fn array(body: &Value) -> Vec<Value> {
    body.as_array().expect("a JSON array").clone()
}

fn ids(rows: &[Value]) -> Vec<i64> {
    rows.iter().map(|row| row["id"].as_i64().unwrap()).collect()
}

fn at(row: &Value) -> DateTime<Utc> {
    row["window"]["start"].as_str().unwrap().parse().unwrap()
}

async fn gpu_model(app: &TestApp, id: i64) -> gpu::Model {
    gpu::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .unwrap()
        .unwrap()
}

async fn reservations_page_by_cursor_with_filters(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.com", PlatformRole::User).await;
    let bia = user_token(&app, "bia@example.com", PlatformRole::User).await;
    let admin = user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    let (ana_id, bia_id) = (
        user_id(&app, "ana@example.com").await,
        user_id(&app, "bia@example.com").await,
    );
    let gpus = gpus_of(&app, H100).await;
    let (one, other) = (
        gpu_model(&app, gpus[0]).await,
        gpu_model(&app, gpus[1]).await,
    );
    // 230 past bookings of Ana's, two at a time starting together (one per GPU), so the
    // cursor's tie on the start is exercised; and 5 of Bia's.
    let base = Utc::now() - TimeDelta::days(200);
    let mut mine = Vec::new();
    for n in 0..115 {
        let start = crate::helpers::grid(base + TimeDelta::hours(24 * n));
        mine.push(past_booking(&app.db, ana_id, &one, start, 2).await);
        mine.push(past_booking(&app.db, ana_id, &other, start, 2).await);
    }
    for n in 0..5 {
        let start = crate::helpers::grid(base + TimeDelta::hours(24 * n + 6));
        past_booking(&app.db, bia_id, &one, start, 2).await;
    }

    let pages = walk(&app, &ana, "/api/v1/reservations", array).await;
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![100, 100, 30],
        "pages of the default 100"
    );
    let rows: Vec<Value> = pages.concat();
    let mut expected = mine.clone();
    // Latest start first, then the higher id.
    expected.sort_by_key(|id| std::cmp::Reverse(*id));
    assert_eq!(ids(&rows), expected, "every booking once, latest first");
    assert!(rows.windows(2).all(|w| at(&w[0]) >= at(&w[1])));
    assert!(rows.iter().all(|row| row["owner_id"] == ana_id));

    // A page read later does not shift when a newer booking arrives in between.
    let (_, first, next) = page(&app, &ana, "/api/v1/reservations?limit=50").await;
    past_booking(
        &app.db,
        ana_id,
        &one,
        crate::helpers::grid(Utc::now() - TimeDelta::days(1)),
        1,
    )
    .await;
    let (_, second, _) = page(&app, &ana, &next.unwrap()).await;
    assert_eq!(ids(&array(&first)), expected[..50]);
    assert_eq!(ids(&array(&second)), expected[50..100]);

    // Filters: one GPU, a time range, a status; the limit.
    let on_other = walk(
        &app,
        &ana,
        &format!("/api/v1/reservations?gpu={}&limit=40", other.id),
        array,
    )
    .await;
    assert_eq!(on_other.len(), 3);
    let on_other = on_other.concat();
    assert_eq!(on_other.len(), 115);
    assert!(
        on_other
            .iter()
            .all(|row| row["gpu_ids"] == json!([other.id]))
    );
    let from = crate::helpers::grid(base + TimeDelta::hours(24 * 10));
    let to = from + TimeDelta::days(5);
    let (status, ranged, next) = page(
        &app,
        &ana,
        &format!(
            "/api/v1/reservations?from={}&to={}",
            crate::helpers::urlencode(&from.to_rfc3339()),
            crate::helpers::urlencode(&to.to_rfc3339())
        ),
    )
    .await;
    assert_eq!(status, 200, "{ranged}");
    assert_eq!(array(&ranged).len(), 10, "five days, two a day: {ranged}");
    assert!(next.is_none());
    let (_, cancelled, _) = page(&app, &ana, "/api/v1/reservations?status=cancelled").await;
    assert_eq!(cancelled, json!([]));
    let (_, completed, _) = page(
        &app,
        &ana,
        "/api/v1/reservations?status=completed&limit=1000",
    )
    .await;
    assert_eq!(array(&completed).len(), 231);

    // Everyone's (platform admins), and Bia sees only hers.
    let everyone = walk(
        &app,
        &admin,
        "/api/v1/reservations?mine=false&limit=1000",
        array,
    )
    .await;
    assert_eq!(everyone.concat().len(), 236);
    let (_, hers, _) = page(&app, &bia, "/api/v1/reservations").await;
    assert!(array(&hers).iter().all(|row| row["owner_id"] == bia_id));
    assert_eq!(array(&hers).len(), 5);
    let (status, refused, _) = page(&app, &bia, "/api/v1/reservations?mine=false").await;
    assert_eq!(status, 403, "{refused}");

    // Bad paging: a clear 422 naming the parameter, nothing else read.
    let (_, _, next) = page(&app, &ana, "/api/v1/reservations?limit=3").await;
    let audit_cursor =
        berth_app::domain::paging::Cursor::id(5).encode(berth_app::domain::paging::ListKind::Audit);
    for (query, field, code) in [
        ("limit=0", "limit", "out_of_range"),
        ("limit=1001", "limit", "out_of_range"),
        ("limit=99999999999999999999", "query", "unreadable"),
        ("cursor=not-a-cursor", "cursor", "bad_cursor"),
        (&format!("cursor={audit_cursor}"), "cursor", "bad_cursor"),
        ("status=sleeping", "status", "unreadable"),
        ("from=yesterday", "from", "not_a_date_time"),
        ("gpu=abc", "query", "unreadable"),
    ] {
        let (status, body, _) = page(&app, &ana, &format!("/api/v1/reservations?{query}")).await;
        assert_eq!(status, 422, "{query}: {body}");
        assert_eq!(body["field"], field, "{query}: {body}");
        assert_eq!(body["code"], code, "{query}: {body}");
    }
    // Another user's cursor reads that user's own list from that point, never Ana's.
    let (status, theirs, _) = page(&app, &bia, &next.unwrap()).await;
    assert_eq!(status, 200);
    assert!(array(&theirs).iter().all(|row| row["owner_id"] == bia_id));
    app.stop().await;
}

async fn wallet_movements_page_with_the_balance_carried_over(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.com", PlatformRole::User).await;
    let admin = user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    for n in 1..=130 {
        let amount = if n % 3 == 0 { -(n * 10) } else { n * 100 };
        let (status, body) = post_json(
            &app,
            &admin,
            "/api/v1/admin/credits",
            &json!({ "email": "ana@example.com", "amount_minor": amount, "reason": format!("grant {n}") }),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let (_, wallet, _) = page(&app, &ana, "/api/v1/wallet").await;
    let balance = wallet["balance_minor"].as_i64().unwrap();
    let pages = walk(&app, &ana, "/api/v1/wallet?limit=40", |body| {
        body["entries"].as_array().unwrap().clone()
    })
    .await;
    let (_, last_page, _) = page(&app, &ana, "/api/v1/wallet?limit=200").await;
    assert_eq!(last_page["next_cursor"], Value::Null);
    let (_, first_page, _) = page(&app, &ana, "/api/v1/wallet?limit=40").await;
    assert!(first_page["next_cursor"].is_string(), "{first_page}");
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![40, 40, 40, 11],
        "130 grants and the test credits"
    );
    let entries = pages.concat();
    assert_eq!(entries[0]["balance_after_minor"], balance);
    for pair in entries.windows(2) {
        let (newer, older) = (&pair[0], &pair[1]);
        assert_eq!(
            newer["balance_after_minor"].as_i64().unwrap()
                - newer["amount_minor"].as_i64().unwrap(),
            older["balance_after_minor"].as_i64().unwrap(),
            "each movement's balance follows from the one before it, across pages"
        );
    }
    let last = entries.last().unwrap();
    assert_eq!(
        last["balance_after_minor"].as_i64().unwrap() - last["amount_minor"].as_i64().unwrap(),
        0,
        "the oldest movement starts from an empty wallet"
    );
    // The CSV follows the same paging.
    let response = crate::helpers::client()
        .get(app.url("/api/v1/wallet?format=csv&limit=5"))
        .bearer_auth(&ana)
        .send()
        .await
        .unwrap();
    assert!(response.headers().get("link").is_some());
    assert_eq!(
        response.text().await.unwrap().lines().count(),
        6,
        "a header and 5 rows"
    );
    app.stop().await;
}

async fn events_audit_and_teams_page(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.com", PlatformRole::User).await;
    let admin = user_token(&app, "root@example.com", PlatformRole::PlatformAdmin).await;
    // GPU events: 25 XIDs over the last hours.
    let gpu = first_gpu(&app, H100).await;
    let now = Utc::now();
    for n in 0..25 {
        gpu_event::Entity::insert(gpu_event::ActiveModel {
            id: NotSet,
            gpu_id: Set(gpu),
            at: Set(now - TimeDelta::minutes(10 * n)),
            kind: Set("xid".to_owned()),
            code: Set(Some(13 + n)),
        })
        .exec_without_returning(&app.db)
        .await
        .unwrap();
    }
    let events = walk(
        &app,
        &ana,
        &format!("/api/v1/gpus/{gpu}/events?limit=10"),
        array,
    )
    .await;
    assert_eq!(
        events.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![10, 10, 5]
    );
    let codes: Vec<i64> = events
        .concat()
        .iter()
        .map(|e| e["code"].as_i64().unwrap())
        .collect();
    assert_eq!(
        codes,
        (13..38).collect::<Vec<_>>(),
        "newest first, each once"
    );

    // What agents did on the GPU: 5 events, some at one instant, two a page, each once.
    for n in 0..5i64 {
        gpu_access_event::Entity::insert(gpu_access_event::ActiveModel {
            id: NotSet,
            gpu_id: Set(gpu),
            reservation_id: Set(None),
            at: Set(now - TimeDelta::minutes(n / 2)),
            kind: Set("unauthorized".to_owned()),
            pid: Set(Some(100 + n)),
            uid: Set(Some(1500)),
            user_name: Set(Some("mallory".to_owned())),
            memory_mib: Set(Some(10)),
        })
        .exec_without_returning(&app.db)
        .await
        .unwrap();
    }
    let access = walk(
        &app,
        &admin,
        &format!("/api/v1/gpus/{gpu}/access-events?limit=2"),
        array,
    )
    .await;
    assert_eq!(
        access.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![2, 2, 1]
    );
    let mut pids: Vec<i64> = access
        .concat()
        .iter()
        .map(|e| e["pid"].as_i64().unwrap())
        .collect();
    pids.sort_unstable();
    assert_eq!(pids, (100..105).collect::<Vec<_>>(), "each once");
    let path = format!("/api/v1/gpus/{gpu}/access-events?limit=0");
    let (status, body, _) = page(&app, &admin, &path).await;
    assert_eq!((status, &body["field"]), (422, &json!("limit")), "{body}");
    let path = format!("/api/v1/gpus/{gpu}/access-events?cursor=forged");
    let (status, _, _) = page(&app, &ana, &path).await;
    assert_eq!(status, 403, "who may not read them learns nothing else");

    // Incidents: five opened by an admin on the GPU, newest first, two a page, each once;
    // Ana, who has none, sees none.
    let mut opened = Vec::new();
    for n in 0..5 {
        let (status, body) = post_json(
            &app,
            &admin,
            "/api/v1/incidents",
            &json!({ "gpu_id": gpu, "report": format!("check {n}") }),
        )
        .await;
        assert_eq!(status, 201, "{body}");
        opened.push(body["incident"]["id"].as_i64().unwrap());
    }
    opened.reverse();
    for first in [
        "/api/v1/incidents?limit=2".to_owned(),
        format!("/api/v1/incidents?gpu={gpu}&limit=2"),
    ] {
        let incidents = walk(&app, &admin, &first, array).await;
        assert_eq!(
            incidents.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![2, 2, 1],
            "{first}"
        );
        assert_eq!(ids(&incidents.concat()), opened, "{first}");
    }
    let (status, none, _) = page(&app, &ana, &format!("/api/v1/incidents?gpu={gpu}")).await;
    assert_eq!((status, none), (200, json!([])));
    let (status, body, _) = page(&app, &ana, "/api/v1/incidents?cursor=forged").await;
    assert_eq!(
        (status, &body["code"]),
        (422, &json!("bad_cursor")),
        "{body}"
    );
    let (status, body, _) = page(&app, &admin, "/api/v1/incidents?limit=1001").await;
    assert_eq!((status, &body["field"]), (422, &json!("limit")), "{body}");

    // Teams: three, two a page; a user in none sees none.
    for name in ["Vision", "Audio", "Robotics"] {
        let (status, body) = post_json(
            &app,
            &admin,
            "/api/v1/admin/teams",
            &json!({ "name": name, "admin_email": format!("{}@example.com", name.to_lowercase()) }),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let teams = walk(&app, &admin, "/api/v1/teams?limit=2", array).await;
    assert_eq!(teams.iter().map(Vec::len).collect::<Vec<_>>(), vec![2, 1]);
    let names: Vec<&str> = teams
        .iter()
        .flatten()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Vision", "Audio", "Robotics"], "oldest first");
    let (_, none, _) = page(&app, &ana, "/api/v1/teams").await;
    assert_eq!(none, json!([]));

    // Users: oldest account first, two a page, each once; platform admins only.
    let users = walk(&app, &admin, "/api/v1/users?limit=2", array).await;
    let user_ids = ids(&users.concat());
    assert!(user_ids.len() >= 2, "{users:?}");
    assert!(user_ids.windows(2).all(|w| w[0] < w[1]), "{user_ids:?}");
    assert!(users[..users.len() - 1].iter().all(|p| p.len() == 2));
    let (_, all, _) = page(&app, &admin, "/api/v1/users?limit=1000").await;
    assert_eq!(ids(&array(&all)), user_ids);
    let (status, _, _) = page(&app, &ana, "/api/v1/users").await;
    assert_eq!(status, 403);
    let (status, body, _) = page(&app, &admin, "/api/v1/users?cursor=forged").await;
    assert_eq!(
        (status, &body["code"]),
        (422, &json!("bad_cursor")),
        "{body}"
    );

    // The audit log: the three creations (and their invitations), newest first, in pages of 2.
    let audit = walk(&app, &admin, "/api/v1/admin/audit?limit=2", array).await;
    let audit_ids: Vec<i64> = ids(&audit.concat());
    assert!(audit_ids.len() >= 3, "{audit:?}");
    assert!(
        audit_ids.windows(2).all(|w| w[0] > w[1]),
        "newest first, each once"
    );
    assert!(audit[..audit.len() - 1].iter().all(|p| p.len() == 2));
    let (status, body, _) = page(&app, &ana, "/api/v1/admin/audit?limit=5000").await;
    assert_eq!(
        status, 403,
        "who may not read the log learns nothing else: {body}"
    );
    let (status, body, _) = page(&app, &admin, "/api/v1/admin/audit?limit=5000").await;
    assert_eq!(
        (status, body["field"].as_str()),
        (422, Some("limit")),
        "{body}"
    );
    app.stop().await;
}

async fn the_pages_link_their_older_pages(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    let demo = user_id(&app, "demo-user@berth.invalid").await;
    let gpu = gpu_model(&app, first_gpu(&app, H100).await).await;
    let base = Utc::now() - TimeDelta::days(300);
    for n in 0..105 {
        past_booking(
            &app.db,
            demo,
            &gpu,
            crate::helpers::grid(base + TimeDelta::days(n)),
            1,
        )
        .await;
    }
    let (status, first) = app.get_text("/reservations").await;
    assert_eq!(status, 200);
    assert_eq!(
        first.matches("data-status=\"completed\"").count(),
        100,
        "a page of 100"
    );
    let href = first
        .split("href=\"/reservations?cursor=")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map(|cursor| format!("/reservations?cursor={cursor}"))
        .unwrap_or_else(|| panic!("a link to older reservations: {first}"));
    assert!(first.contains("Older →") && !first.contains("← Newest"));
    let (status, second) = app.get_text(&href.replace("&amp;", "&")).await;
    assert_eq!(status, 200, "{second}");
    assert!(
        second.contains("← Newest") && !second.contains("Older →"),
        "{second}"
    );
    assert_eq!(
        second.matches("data-status=\"completed\"").count(),
        5,
        "the rest"
    );
    let (status, bad) = app.get_text("/reservations?cursor=forged").await;
    assert_eq!(
        status, 422,
        "a forged cursor is refused, with the reason on the page"
    );
    assert!(bad.contains("Not a cursor of this list"), "{bad}");

    // The credits page shows 100 users a page, oldest account first.
    for n in 0..100 {
        berth_app::backend::db::users::upsert_user(
            &app.db,
            &berth_app::domain::user::NewUser {
                email: berth_app::domain::user::Email::parse(&format!("u{n:03}@example.com"))
                    .unwrap(),
                name: berth_app::domain::user::UserName::parse(&format!("User {n:03}")).unwrap(),
                role: PlatformRole::User,
            },
            Utc::now(),
        )
        .await
        .unwrap();
    }
    app.sign_in("platform_admin").await;
    let (status, first) = app.get_text("/admin/credits").await;
    assert_eq!(status, 200);
    assert_eq!(
        first.matches("<tr data-email=").count(),
        100,
        "a page of 100"
    );
    assert!(first.contains("Next →") && !first.contains("← First"));
    let href = first
        .split("href=\"/admin/credits?cursor=")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map(|cursor| format!("/admin/credits?cursor={cursor}"))
        .unwrap_or_else(|| panic!("a link to the next users: {first}"));
    let (status, second) = app.get_text(&href).await;
    assert_eq!(status, 200, "{second}");
    assert!(second.contains("← First") && !second.contains("Next →"));
    let rest = second.matches("<tr data-email=").count();
    assert!((1..100).contains(&rest), "the rest: {rest}");
    assert!(second.contains("u099@example.com") && !first.contains("u099@example.com"));
    app.stop().await;
}

crate::on_both_backends!(
    the_pages_link_their_older_pages,
    reservations_page_by_cursor_with_filters,
    wallet_movements_page_with_the_balance_carried_over,
    events_audit_and_teams_page,
);
