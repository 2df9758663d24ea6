//! OpenID Connect sign-in against the test provider over real HTTP: the happy path, binding to
//! (provider, subject), the admin bootstrap, and every way a callback must be refused without
//! creating a session.

use crate::helpers::{Backend, TestApp, TestDatabase, spawn_with_listener, test_settings};
use crate::oidc_provider::{CLIENT_ID, CLIENT_SECRET, Person, Tamper, TestProvider};
use berth_app::backend::db;
use berth_app::backend::entity::{identity, session, user};
use berth_app::domain::user::{Email, NewUser, PlatformRole, UserName};
use berth_server::configuration::{RawOidcProvider, RawSettings, TextList};
use sea_orm::{EntityTrait, PaginatorTrait};
use std::collections::BTreeMap;

/// Starts Berth with the test provider configured as `test`, after `configure` adjusts the
/// settings.
async fn spawn_with_provider(
    backend: Backend,
    provider: &TestProvider,
    configure: impl FnOnce(&mut RawSettings),
) -> (TestApp, TestDatabase) {
    let db = TestDatabase::create(backend).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut settings = test_settings(&db);
    settings.oidc = BTreeMap::from([(
        "test".to_owned(),
        RawOidcProvider {
            label: Some("Test IdP".into()),
            issuer: provider.issuer.clone(),
            client_id: CLIENT_ID.into(),
            client_secret: Some(CLIENT_SECRET.into()),
            redirect_url: Some(format!("http://{addr}/auth/oidc/test/callback")),
            scopes: None,
            trust_email: false,
        },
    )]);
    // Beside a provider, tests sign in through it, not the development sign-in.
    settings.dev_sign_in = None;
    configure(&mut settings);
    (spawn_with_listener(settings, listener).await, db)
}

/// A browser: keeps cookies, does not follow redirects (each hop is checked).
fn browser() -> reqwest::Client {
    crate::helpers::client_builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

fn location(response: &reqwest::Response) -> String {
    response.headers()["location"].to_str().unwrap().to_owned()
}

fn query_param(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

fn with_param(url: &str, name: &str, value: Option<&str>) -> String {
    let mut parsed = url::Url::parse(url).unwrap();
    let pairs: Vec<(String, String)> = parsed
        .query_pairs()
        .filter(|(key, _)| key != name)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    {
        let mut query = parsed.query_pairs_mut();
        query.clear();
        for (key, val) in &pairs {
            query.append_pair(key, val);
        }
        if let Some(value) = value {
            query.append_pair(name, value);
        }
    }
    parsed.to_string()
}

/// Starts a sign-in in `browser` and lets the provider approve it; returns the callback URL
/// (not yet visited).
async fn authorize(app: &TestApp, browser: &reqwest::Client, return_to: &str) -> String {
    let start = browser
        .get(app.url(&format!("/auth/oidc/test/start?return_to={return_to}")))
        .send()
        .await
        .unwrap();
    assert_eq!(
        start.status().as_u16(),
        303,
        "start redirects to the provider"
    );
    let authorize_url = location(&start);
    let to_provider = browser.get(&authorize_url).send().await.unwrap();
    assert_eq!(
        to_provider.status().as_u16(),
        303,
        "the provider approves: {}",
        to_provider.text().await.unwrap_or_default()
    );
    location(&to_provider)
}

/// Visits the callback URL; returns the response.
async fn callback(browser: &reqwest::Client, url: &str) -> reqwest::Response {
    browser.get(url).send().await.unwrap()
}

async fn me(app: &TestApp, browser: &reqwest::Client) -> (u16, serde_json::Value) {
    let response = browser.get(app.url("/api/v1/me")).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

/// Sessions that hold a signed-in user.
async fn signed_in_sessions(app: &TestApp) -> usize {
    session::Entity::find()
        .all(&app.db)
        .await
        .unwrap()
        .into_iter()
        .filter(|row| row.data.contains("user_id"))
        .count()
}

async fn oidc_sign_in_creates_a_user_bound_to_the_subject(backend: Backend) {
    let provider = TestProvider::start().await;
    let (app, _db) = spawn_with_provider(backend, &provider, |_| {}).await;
    let ana = browser();

    let start = ana
        .get(app.url("/auth/oidc/test/start?return_to=%2Fprofile%3Ftab%3Dtokens"))
        .send()
        .await
        .unwrap();
    assert_eq!(start.status().as_u16(), 303);
    let before = start.headers()["set-cookie"].to_str().unwrap().to_owned();
    let authorize_url = location(&start);
    assert!(authorize_url.starts_with(&format!("{}/authorize?", provider.issuer)));
    assert_eq!(
        query_param(&authorize_url, "code_challenge_method").as_deref(),
        Some("S256")
    );
    assert_eq!(
        query_param(&authorize_url, "client_id").as_deref(),
        Some(CLIENT_ID)
    );
    for required in ["state", "nonce", "code_challenge"] {
        assert!(
            query_param(&authorize_url, required).is_some(),
            "{required} is sent"
        );
    }
    let scope = query_param(&authorize_url, "scope").unwrap();
    assert!(
        scope.contains("openid") && scope.contains("email"),
        "{scope}"
    );

    let approved = ana.get(&authorize_url).send().await.unwrap();
    let done = callback(&ana, &location(&approved)).await;
    assert_eq!(done.status().as_u16(), 303);
    assert_eq!(
        location(&done),
        "/profile?tab=tokens",
        "back to the page asked for"
    );
    let after = done.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        after.contains("HttpOnly") && after.contains("SameSite=Lax"),
        "{after}"
    );
    assert!(
        before.contains("Max-Age=900"),
        "a visitor's session lasts minutes: {before}"
    );
    assert!(
        after.contains("Max-Age=604800"),
        "a signed-in one 7 days idle: {after}"
    );
    let id = |cookie: &str| cookie.split(';').next().unwrap().to_owned();
    assert_ne!(id(&before), id(&after), "the session id changes at sign-in");

    let (status, user) = me(&app, &ana).await;
    assert_eq!(status, 200);
    assert_eq!(user["email"], "ana.souza@example.com");
    assert_eq!(user["name"], "Ana Souza");
    assert_eq!(user["role"], "user");
    let identities = identity::Entity::find().all(&app.db).await.unwrap();
    assert_eq!(identities.len(), 1);
    assert_eq!(identities[0].provider, "test");
    assert_eq!(identities[0].subject, "subject-ana-1");

    // The old session id is worthless.
    let stale = crate::helpers::client()
        .get(app.url("/api/v1/me"))
        .header("cookie", id(&before))
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status().as_u16(), 401);

    // Same subject, new address and name at the provider: the same Berth user.
    provider.set_person(Person::new(
        "subject-ana-1",
        "ana@new.example.com",
        "Ana S. Souza",
    ));
    let second = browser();
    let done = callback(&second, &authorize(&app, &second, "/").await).await;
    assert_eq!(location(&done), "/");
    let (_, again) = me(&app, &second).await;
    assert_eq!(again["id"], user["id"]);
    assert_eq!(again["name"], "Ana S. Souza");
    assert_eq!(user::Entity::find().count(&app.db).await.unwrap(), 1);
    app.stop().await;
}

async fn an_address_already_bound_elsewhere_is_refused(backend: Backend) {
    let provider = TestProvider::start().await;
    let (app, _db) = spawn_with_provider(backend, &provider, |_| {}).await;
    let first = browser();
    callback(&first, &authorize(&app, &first, "/").await).await;
    assert_eq!(me(&app, &first).await.0, 200);

    // Another subject claiming the same address must not take over Ana's account.
    provider.set_person(Person::new(
        "subject-mallory",
        "ana.souza@example.com",
        "Mallory",
    ));
    let intruder = browser();
    let done = callback(&intruder, &authorize(&app, &intruder, "/").await).await;
    assert_eq!(location(&done), "/signin?error=account_conflict");
    assert_eq!(me(&app, &intruder).await.0, 401);
    assert_eq!(user::Entity::find().count(&app.db).await.unwrap(), 1);
    app.stop().await;
}

async fn a_user_added_by_the_cli_is_bound_at_first_sign_in_and_admin_emails_promote(
    backend: Backend,
) {
    let provider = TestProvider::start().await;
    let (app, _db) = spawn_with_provider(backend, &provider, |settings| {
        settings.admin_emails = TextList::Joined("Ops@Example.com, boss@example.com".into());
    })
    .await;

    // Ana was added with `berth user add` before she ever signed in.
    let added = db::users::upsert_user(
        &app.db,
        &NewUser {
            email: Email::parse("ana.souza@example.com").unwrap(),
            name: UserName::parse("Ana (added by CLI)").unwrap(),
            role: PlatformRole::User,
        },
        chrono::Utc::now(),
    )
    .await
    .unwrap();
    let ana = browser();
    callback(&ana, &authorize(&app, &ana, "/").await).await;
    let (_, me_ana) = me(&app, &ana).await;
    assert_eq!(
        me_ana["id"], added.id,
        "bound to the account added by the CLI"
    );
    assert_eq!(me_ana["name"], "Ana Souza", "the provider's name");

    // Not an admin: the admin-only endpoint answers 403.
    let users = ana.get(app.url("/api/v1/users")).send().await.unwrap();
    assert_eq!(users.status().as_u16(), 403);
    let body: serde_json::Value = users.json().await.unwrap();
    assert_eq!(body["error"], "forbidden");

    // An address from BERTH_ADMIN_EMAILS becomes a platform admin at sign-in.
    provider.set_person(Person::new("subject-ops", "ops@example.com", "Ops Team"));
    let ops = browser();
    callback(&ops, &authorize(&app, &ops, "/").await).await;
    let (_, me_ops) = me(&app, &ops).await;
    assert_eq!(me_ops["role"], "platform_admin");
    let users = ops.get(app.url("/api/v1/users")).send().await.unwrap();
    assert_eq!(users.status().as_u16(), 200);
    let list: Vec<serde_json::Value> = users.json().await.unwrap();
    assert_eq!(list.len(), 2);
    app.stop().await;
}

/// Whether `email` still has an open invitation to `team_id`.
async fn invited(app: &TestApp, team_id: i64, email: &str) -> bool {
    db::teams::is_invited(&app.db, team_id, &Email::parse(email).unwrap())
        .await
        .unwrap()
}

/// `admin_emails` and team invitations act only on an address the provider verifies at this
/// sign-in, and only on the address stored on the account.
async fn admin_emails_and_invitations_need_the_stored_address_verified_now(backend: Backend) {
    let provider = TestProvider::start().await;
    let (app, _db) = spawn_with_provider(backend, &provider, |settings| {
        settings.admin_emails = TextList::Joined("ops@example.com, boss@example.com".into());
    })
    .await;
    let now = chrono::Utc::now();
    let name = berth_app::domain::team::TeamName::parse("Lab").unwrap();
    let team = db::teams::create_team(&app.db, &name, now)
        .await
        .unwrap()
        .unwrap();
    for email in ["ops@example.com", "bia@example.com", "new@example.com"] {
        db::teams::insert_invitation(
            &app.db,
            team,
            &Email::parse(email).unwrap(),
            berth_app::domain::team::TeamRole::Member,
            None,
            now,
        )
        .await
        .unwrap();
    }

    // No `email_verified` claim: not verified. Signed in, but neither promoted nor joined.
    provider.set_person(Person {
        email_verified: None,
        ..Person::new("subject-ops", "ops@example.com", "Ops Team")
    });
    let ops = browser();
    callback(&ops, &authorize(&app, &ops, "/").await).await;
    let (status, me_ops) = me(&app, &ops).await;
    assert_eq!(status, 200);
    assert_eq!(
        me_ops["role"], "user",
        "a missing email_verified is not a yes"
    );
    assert!(invited(&app, team, "ops@example.com").await);
    // Nor does the teams page, which accepts invitations sent since a vouched sign-in.
    let teams_page = |browser: reqwest::Client| {
        let app = &app;
        async move {
            let response = browser
                .post(app.url("/api/get_teams_page"))
                .header("sec-fetch-site", "same-origin")
                .header("content-type", "application/x-www-form-urlencoded")
                .body("")
                .send()
                .await
                .unwrap();
            assert_eq!(response.status().as_u16(), 200);
            response.json::<serde_json::Value>().await.unwrap()
        }
    };
    let page = teams_page(ops.clone()).await;
    assert_eq!(page["teams"], serde_json::json!([]), "{page}");
    assert!(
        invited(&app, team, "ops@example.com").await,
        "an unverified address joins no team from a page either"
    );

    // The same account, verified this time: promoted, and the invitation accepted.
    provider.set_person(Person::new("subject-ops", "ops@example.com", "Ops Team"));
    let ops = browser();
    callback(&ops, &authorize(&app, &ops, "/").await).await;
    assert_eq!(me(&app, &ops).await.1["role"], "platform_admin");
    assert!(!invited(&app, team, "ops@example.com").await);
    // An invitation sent after that sign-in is accepted on the teams page.
    let later = db::teams::create_team(
        &app.db,
        &berth_app::domain::team::TeamName::parse("Later").unwrap(),
        now,
    )
    .await
    .unwrap()
    .unwrap();
    db::teams::insert_invitation(
        &app.db,
        later,
        &Email::parse("ops@example.com").unwrap(),
        berth_app::domain::team::TeamRole::Member,
        None,
        now,
    )
    .await
    .unwrap();
    let page = teams_page(ops.clone()).await;
    assert_eq!(page["teams"].as_array().map(Vec::len), Some(2), "{page}");
    assert!(!invited(&app, later, "ops@example.com").await);

    // Bia signs in, then her provider address changes to a listed one: her account keeps its
    // address, so she is not promoted, and an invitation to her new address stays open.
    provider.set_person(Person::new("subject-bia", "bia@example.com", "Bia"));
    let bia = browser();
    callback(&bia, &authorize(&app, &bia, "/").await).await;
    assert!(!invited(&app, team, "bia@example.com").await);
    for changed in ["boss@example.com", "new@example.com"] {
        provider.set_person(Person::new("subject-bia", changed, "Bia"));
        let bia = browser();
        callback(&bia, &authorize(&app, &bia, "/").await).await;
        let (status, me_bia) = me(&app, &bia).await;
        assert_eq!(status, 200);
        assert_eq!(me_bia["email"], "bia@example.com");
        assert_eq!(
            me_bia["role"], "user",
            "{changed} is not the stored address"
        );
    }
    assert!(invited(&app, team, "new@example.com").await);

    // An account added with `berth user add` is bound only to a verified address.
    db::users::upsert_user(
        &app.db,
        &NewUser {
            email: Email::parse("carla@example.com").unwrap(),
            name: UserName::parse("Carla").unwrap(),
            role: PlatformRole::User,
        },
        now,
    )
    .await
    .unwrap();
    provider.set_person(Person {
        email_verified: None,
        ..Person::new("subject-carla", "carla@example.com", "Carla")
    });
    let carla = browser();
    let done = callback(&carla, &authorize(&app, &carla, "/").await).await;
    assert_eq!(location(&done), "/signin?error=account_conflict");
    assert_eq!(me(&app, &carla).await.0, 401);
    app.stop().await;
}

/// A provider marked `trust_email` vouches for its addresses without the claim.
async fn a_trusted_provider_verifies_addresses_without_the_claim(backend: Backend) {
    let provider = TestProvider::start().await;
    let (app, _db) = spawn_with_provider(backend, &provider, |settings| {
        settings.admin_emails = TextList::Joined("ops@example.com".into());
        if let Some(test) = settings.oidc.get_mut("test") {
            test.trust_email = true;
        }
    })
    .await;
    provider.set_person(Person {
        email_verified: None,
        ..Person::new("subject-ops", "ops@example.com", "Ops Team")
    });
    let ops = browser();
    callback(&ops, &authorize(&app, &ops, "/").await).await;
    assert_eq!(me(&app, &ops).await.1["role"], "platform_admin");
    app.stop().await;
}

async fn an_email_only_in_user_info_is_used(backend: Backend) {
    let provider = TestProvider::start().await;
    let (app, _db) = spawn_with_provider(backend, &provider, |_| {}).await;
    provider.set_person(Person {
        email_in_id_token: None,
        ..Person::new("subject-bia", "bia@example.com", "Bia")
    });
    let bia = browser();
    callback(&bia, &authorize(&app, &bia, "/").await).await;
    let (status, me_bia) = me(&app, &bia).await;
    assert_eq!(status, 200);
    assert_eq!(me_bia["email"], "bia@example.com");

    provider.set_person(Person {
        email_in_id_token: None,
        email_in_user_info: None,
        ..Person::new("subject-nobody", "x@example.com", "Nobody")
    });
    let nobody = browser();
    let done = callback(&nobody, &authorize(&app, &nobody, "/").await).await;
    assert_eq!(location(&done), "/signin?error=email_missing");
    app.stop().await;
}

/// Asserts that visiting `url` in `browser` sends it back to the sign-in page with `code`, signs
/// nobody in, and that the page explains it.
async fn assert_refused(app: &TestApp, browser: &reqwest::Client, url: &str, code: &str) {
    let sessions_before = signed_in_sessions(app).await;
    let response = callback(browser, url).await;
    assert_eq!(response.status().as_u16(), 303, "{code}");
    assert_eq!(location(&response), format!("/signin?error={code}"));
    assert_eq!(me(app, browser).await.0, 401, "{code}: not signed in");
    assert_eq!(
        signed_in_sessions(app).await,
        sessions_before,
        "{code}: no session created"
    );
    let page = browser
        .get(app.url(&format!("/signin?error={code}")))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(&format!("data-error=\"{code}\"")),
        "{code}: the page says why"
    );
    assert!(page.contains("Sign-in failed"), "{code}");
}

async fn tampered_callbacks_are_refused_without_a_session(backend: Backend) {
    let provider = TestProvider::start().await;
    let (app, _db) = spawn_with_provider(backend, &provider, |_| {}).await;

    // Tampered state.
    let b = browser();
    let url = authorize(&app, &b, "/").await;
    assert_refused(
        &app,
        &b,
        &with_param(&url, "state", Some("forged-state")),
        "state_mismatch",
    )
    .await;
    // Missing state.
    let b = browser();
    let url = authorize(&app, &b, "/").await;
    assert_refused(&app, &b, &with_param(&url, "state", None), "state_missing").await;
    // A callback in a browser that started no sign-in.
    let b = browser();
    let url = authorize(&app, &browser(), "/").await;
    assert_refused(&app, &b, &url, "no_sign_in_in_progress").await;
    // The provider refused.
    provider.set_tamper(Tamper::Deny);
    let b = browser();
    let url = authorize(&app, &b, "/").await;
    assert_refused(&app, &b, &url, "provider_denied").await;
    provider.set_tamper(Tamper::None);
    assert_eq!(user::Entity::find().count(&app.db).await.unwrap(), 0);
    app.stop().await;
}

async fn reused_codes_and_wrong_pkce_verifiers_are_refused(backend: Backend) {
    let provider = TestProvider::start().await;
    let (app, _db) = spawn_with_provider(backend, &provider, |_| {}).await;

    // A code used once already: replayed in another browser's sign-in (with that browser's
    // state, so only the code is stale).
    let first = browser();
    let used = authorize(&app, &first, "/").await;
    assert_eq!(callback(&first, &used).await.status().as_u16(), 303);
    assert_eq!(me(&app, &first).await.0, 200);
    let second = browser();
    let own = authorize(&app, &second, "/").await;
    let replay = with_param(&used, "state", query_param(&own, "state").as_deref());
    assert_refused(&app, &second, &replay, "code_rejected").await;
    assert!(
        provider.refusals().iter().any(|r| r == "code already used"),
        "{:?}",
        provider.refusals()
    );

    // A fresh code issued for another browser's PKCE challenge: this browser's verifier does not
    // match it.
    let victim = browser();
    let victims_code = authorize(&app, &victim, "/").await;
    let attacker = browser();
    let attackers = authorize(&app, &attacker, "/").await;
    let swapped = with_param(
        &victims_code,
        "state",
        query_param(&attackers, "state").as_deref(),
    );
    assert_refused(&app, &attacker, &swapped, "code_rejected").await;
    assert!(
        provider
            .refusals()
            .iter()
            .any(|r| r == "PKCE verification failed"),
        "{:?}",
        provider.refusals()
    );
    app.stop().await;
}

async fn bad_id_tokens_are_refused_without_a_session(backend: Backend) {
    let provider = TestProvider::start().await;
    let (app, _db) = spawn_with_provider(backend, &provider, |_| {}).await;
    for (tamper, code) in [
        (Tamper::WrongAudience, "id_token_audience"),
        (Tamper::WrongIssuer, "id_token_issuer"),
        (Tamper::Expired, "id_token_expired"),
        (Tamper::BadSignature, "id_token_signature"),
        (Tamper::WrongNonce, "id_token_nonce"),
        (Tamper::NoIdToken, "id_token_missing"),
    ] {
        provider.set_tamper(tamper);
        let b = browser();
        let url = authorize(&app, &b, "/").await;
        assert_refused(&app, &b, &url, code).await;
    }
    assert_eq!(user::Entity::find().count(&app.db).await.unwrap(), 0);
    // And with an honest token again, sign-in works (keys were re-read after the bad signature).
    provider.set_tamper(Tamper::None);
    let b = browser();
    let done = callback(&b, &authorize(&app, &b, "/").await).await;
    assert_eq!(location(&done), "/");
    assert_eq!(me(&app, &b).await.0, 200);
    app.stop().await;
}

async fn the_sign_in_page_offers_the_provider_and_no_dev_sign_in(backend: Backend) {
    let provider = TestProvider::start().await;
    let (app, _db) = spawn_with_provider(backend, &provider, |_| {}).await;
    let (status, html) = app.get_text("/signin?return_to=%2Fprofile").await;
    assert_eq!(status, 200);
    assert!(html.contains("Sign in with Test IdP"), "{html}");
    assert!(
        html.contains("href=\"/auth/oidc/test/start?return_to=%2Fprofile\""),
        "{html}"
    );
    assert!(
        !html.contains("action=\"/auth/dev\""),
        "no dev sign-in with a provider"
    );
    let dev = app
        .client
        .post(app.url("/auth/dev"))
        .form(&[("role", "platform_admin")])
        .send()
        .await
        .unwrap();
    assert_eq!(dev.status().as_u16(), 404);

    let unknown = app
        .client
        .get(app.url("/auth/oidc/nope/start"))
        .send()
        .await
        .unwrap();
    assert_eq!(location(&unknown), "/signin?error=unknown_provider");
    app.stop().await;
}

async fn sign_in_is_rate_limited_per_address(backend: Backend) {
    let provider = TestProvider::start().await;
    let (app, _db) = spawn_with_provider(backend, &provider, |settings| {
        settings.sign_in_rate_per_minute = 3;
    })
    .await;
    // HEAD counts like GET (axum answers HEAD with the GET handler).
    let head = app
        .client
        .head(app.url("/auth/oidc/test/start"))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status().as_u16(), 303);
    for _ in 0..2 {
        let start = app
            .client
            .get(app.url("/auth/oidc/test/start"))
            .send()
            .await
            .unwrap();
        assert_eq!(start.status().as_u16(), 303);
    }
    let head = app
        .client
        .head(app.url("/auth/oidc/test/start"))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status().as_u16(), 429, "HEAD is limited too");
    let limited = app
        .client
        .get(app.url("/auth/oidc/test/start"))
        .send()
        .await
        .unwrap();
    assert_eq!(limited.status().as_u16(), 429);
    let retry_after: u64 = limited.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    let body: serde_json::Value = limited.json().await.unwrap();
    assert_eq!(body["error"], "too_many_requests");
    // Other requests are not limited.
    assert_eq!(app.get_text("/signin").await.0, 200);
    assert_eq!(app.get_text("/healthz").await.0, 200);
    app.stop().await;
}

/// `GET /auth/oidc/test/start` with `X-Forwarded-For: forwarded`; answers the status.
async fn start_forwarded(app: &TestApp, forwarded: &str) -> u16 {
    app.client
        .get(app.url("/auth/oidc/test/start"))
        .header("x-forwarded-for", forwarded)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn clients_behind_a_trusted_proxy_get_their_own_allowance(backend: Backend) {
    let provider = TestProvider::start().await;
    let (app, _db) = spawn_with_provider(backend, &provider, |settings| {
        settings.sign_in_rate_per_minute = 2;
        settings.trusted_proxies = TextList::Joined("127.0.0.1, 10.0.0.0/8".into());
    })
    .await;
    // The test client is the proxy (127.0.0.1); 10.0.0.5 is a second proxy in the chain.
    for _ in 0..2 {
        assert_eq!(start_forwarded(&app, "203.0.113.1, 10.0.0.5").await, 303);
    }
    assert_eq!(start_forwarded(&app, "203.0.113.1").await, 429);
    // What a client writes further left does not pick its bucket.
    assert_eq!(
        start_forwarded(&app, "198.51.100.9, 203.0.113.1").await,
        429
    );
    // Another client behind the same proxy has its own allowance.
    assert_eq!(start_forwarded(&app, "203.0.113.2").await, 303);
    app.stop().await;

    // Without trusted proxies the header is ignored: every request is the peer's.
    let (app, _db) = spawn_with_provider(backend, &provider, |settings| {
        settings.sign_in_rate_per_minute = 2;
    })
    .await;
    assert_eq!(start_forwarded(&app, "203.0.113.1").await, 303);
    assert_eq!(start_forwarded(&app, "203.0.113.2").await, 303);
    assert_eq!(start_forwarded(&app, "203.0.113.3").await, 429);
    app.stop().await;
}

async fn an_unreachable_provider_is_reported_not_a_crash(backend: Backend) {
    let provider = TestProvider::start().await;
    let (app, _db) = spawn_with_provider(backend, &provider, |settings| {
        if let Some(test) = settings.oidc.get_mut("test") {
            test.issuer = "http://127.0.0.1:9/".into();
        }
    })
    .await;
    let start = app
        .client
        .get(app.url("/auth/oidc/test/start"))
        .send()
        .await
        .unwrap();
    assert_eq!(location(&start), "/signin?error=provider_unavailable");
    app.stop().await;
}

crate::on_both_backends!(
    oidc_sign_in_creates_a_user_bound_to_the_subject,
    an_address_already_bound_elsewhere_is_refused,
    a_user_added_by_the_cli_is_bound_at_first_sign_in_and_admin_emails_promote,
    admin_emails_and_invitations_need_the_stored_address_verified_now,
    a_trusted_provider_verifies_addresses_without_the_claim,
    an_email_only_in_user_info_is_used,
    tampered_callbacks_are_refused_without_a_session,
    reused_codes_and_wrong_pkce_verifiers_are_refused,
    bad_id_tokens_are_refused_without_a_session,
    the_sign_in_page_offers_the_provider_and_no_dev_sign_in,
    sign_in_is_rate_limited_per_address,
    clients_behind_a_trusted_proxy_get_their_own_allowance,
    an_unreachable_provider_is_reported_not_a_crash,
);
