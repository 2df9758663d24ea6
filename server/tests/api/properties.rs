//! A property over HTTP: whatever query string a client sends to any GET route of the JSON API or
//! any page — huge numbers, far dates, unicode, nothing, keys repeated — the answer comes quickly
//! and is never a 5xx.

use crate::helpers::{Backend, TestApp, spawn_app};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::time::Duration;

/// Every GET route of the JSON API and every page (ids that exist in the demo fleet).
const ROUTES: &[&str] = &[
    "/api/v1/me",
    "/api/v1/users",
    "/api/v1/gpus",
    "/api/v1/availability",
    "/api/v1/slots",
    "/api/v1/reservations",
    "/api/v1/maintenance",
    "/api/v1/wallet",
    "/api/v1/reports/usage",
    "/api/v1/reports/fleet",
    "/api/v1/admin/payments-due",
    "/api/v1/teams",
    "/api/v1/teams/1",
    "/api/v1/teams/1/audit",
    "/api/v1/teams/1/rules",
    "/api/v1/admin/audit",
    "/api/v1/gpus/1/telemetry",
    "/api/v1/gpus/1/events",
    "/healthz",
    "/readyz",
    "/",
    "/gpus/1",
    "/signin",
    "/calendar",
    "/reservations",
    "/wallet",
    "/profile",
    "/admin/maintenance",
    "/admin/credits",
    "/admin/payments",
    "/admin/nodes",
    "/admin/fleet",
    "/admin/audit",
    "/reports",
    "/reports/fleet",
    "/teams",
    "/teams/1",
];

/// Query keys the routes read, and one they do not.
const KEYS: &[&str] = &[
    "from",
    "to",
    "start",
    "span",
    "period",
    "tz",
    "model",
    "count",
    "hours",
    "after",
    "limit",
    "mine",
    "format",
    "group_by",
    "scope",
    "table",
    "min_memory_gib",
    "share",
    "action",
    "team_id",
    "before_id",
    "done",
    "error",
    "booked",
    "return_to",
    "zzz",
];

/// Values chosen to hurt: extremes, far dates, unicode, nothing.
fn nasty_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("99999999999999999999999".to_owned()),
        Just("-9223372036854775808".to_owned()),
        Just("9223372036854775807".to_owned()),
        Just("4294967296".to_owned()),
        Just("1e308".to_owned()),
        Just("NaN".to_owned()),
        Just("-0.25".to_owned()),
        Just("+262142-12-31".to_owned()),
        Just("-262143-01-01".to_owned()),
        Just("9999-12-31".to_owned()),
        Just("0000-01-01".to_owned()),
        Just("9999-12-31T23:59:59Z".to_owned()),
        Just("+262142-12-31T23:59:59Z".to_owned()),
        Just("1970-01-01T00:00:00-23:59".to_owned()),
        Just("2026-02-30".to_owned()),
        Just("team:99999999999999999999".to_owned()),
        Just("team:-1".to_owned()),
        Just("Mars/Olympus".to_owned()),
        Just("日本語\u{202e}🙂".to_owned()),
        Just("%ZZ%".to_owned()),
        (-1_000_000_000_000_i64..1_000_000_000_000).prop_map(|n| n.to_string()),
        (1_i32..=300_000).prop_map(|year| format!("{year:04}-12-31")),
        "\\PC{0,12}",
    ]
}

/// A query string of up to 6 pairs (keys may repeat), encoded as a browser would.
fn query() -> impl Strategy<Value = String> {
    proptest::collection::vec((proptest::sample::select(KEYS), nasty_value()), 0..6).prop_map(
        |pairs| {
            let mut query = url::form_urlencoded::Serializer::new(String::new());
            for (key, value) in pairs {
                query.append_pair(key, &value);
            }
            query.finish()
        },
    )
}

/// Each answer must come within this.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

async fn check(app: &TestApp, path: &str, query: &str) -> Result<(), TestCaseError> {
    let url = if query.is_empty() {
        app.url(path)
    } else {
        app.url(&format!("{path}?{query}"))
    };
    let sent = app.client.get(&url).send();
    let response = tokio::time::timeout(ANSWER_WITHIN, sent)
        .await
        .map_err(|_| TestCaseError::fail(format!("{url}: no answer within {ANSWER_WITHIN:?}")))?
        .map_err(|err| TestCaseError::fail(format!("{url}: {err}")))?;
    let status = response.status();
    let body = tokio::time::timeout(ANSWER_WITHIN, response.text())
        .await
        .map_err(|_| TestCaseError::fail(format!("{url}: body not done in {ANSWER_WITHIN:?}")))?
        .map_err(|err| TestCaseError::fail(format!("{url}: body cut: {err}")))?;
    prop_assert!(
        !status.is_server_error(),
        "{url}: {status}: {}",
        body.chars().take(400).collect::<String>()
    );
    Ok(())
}

async fn no_query_string_makes_a_get_route_fail_or_hang(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("platform_admin").await;
    let handle = tokio::runtime::Handle::current();
    for path in ROUTES {
        let mut runner = TestRunner::new(Config {
            cases: 8,
            // Shrinking re-runs requests; a few steps are enough to name the culprit.
            max_shrink_iters: 32,
            failure_persistence: None,
            ..Config::default()
        });
        let outcome = tokio::task::block_in_place(|| {
            runner.run(&query(), |query| handle.block_on(check(&app, path, &query)))
        });
        if let Err(failure) = outcome {
            panic!("{path}: {failure}");
        }
    }
    app.stop().await;
}

crate::on_both_backends!(no_query_string_makes_a_get_route_fail_or_hang);
