//! Sessions: the development sign-in, cookie flags, session-id cycling and sign-out.

use crate::helpers::{Backend, TestDatabase, spawn_app, spawn_with, test_settings};
use berth_server::configuration::RawSettings;

/// A client that keeps no cookies, so each test decides which cookie it sends.
fn bare_client() -> reqwest::Client {
    crate::helpers::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Signs in with the dev sign-in as `role`; returns the whole `Set-Cookie` header.
async fn dev_sign_in(
    client: &reqwest::Client,
    base: &str,
    role: &str,
    cookie: Option<&str>,
) -> String {
    let mut request = client
        .post(format!("{base}/auth/dev"))
        .form(&[("role", role), ("return_to", "/?model=NVIDIA%20L40S")]);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status().as_u16(), 303);
    assert_eq!(response.headers()["location"], "/?model=NVIDIA%20L40S");
    response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned()
}

/// `name=value` of a `Set-Cookie` header.
fn cookie_pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().trim().to_owned()
}

async fn me_status(client: &reqwest::Client, base: &str, cookie: &str) -> (u16, serde_json::Value) {
    let response = client
        .get(format!("{base}/api/v1/me"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

async fn dev_sign_in_starts_a_session_with_safe_cookie_flags(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let base = app.url("");
    let client = bare_client();
    let set_cookie = dev_sign_in(&client, &base, "platform_admin", None).await;
    assert!(set_cookie.starts_with("berth_session="), "{set_cookie}");
    assert!(set_cookie.contains("HttpOnly"), "{set_cookie}");
    assert!(set_cookie.contains("SameSite=Lax"), "{set_cookie}");
    assert!(set_cookie.contains("Path=/"), "{set_cookie}");
    assert!(!set_cookie.contains("Secure"), "plain http: no Secure flag");
    assert!(
        set_cookie.contains("Max-Age=604800"),
        "7 days of inactivity: {set_cookie}"
    );

    let (status, me) = me_status(&client, &base, &cookie_pair(&set_cookie)).await;
    assert_eq!(status, 200);
    assert_eq!(me["email"], "demo-admin@berth.invalid");
    assert_eq!(me["role"], "platform_admin");
    app.stop().await;
}

async fn signing_in_again_cycles_the_session_id_and_kills_the_old_one(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let base = app.url("");
    let client = bare_client();
    let first = cookie_pair(&dev_sign_in(&client, &base, "user", None).await);
    let second = cookie_pair(&dev_sign_in(&client, &base, "platform_admin", Some(&first)).await);
    assert_ne!(first, second, "a new session id after sign-in");
    assert_eq!(
        me_status(&client, &base, &first).await.0,
        401,
        "the old id is dead"
    );
    let (status, me) = me_status(&client, &base, &second).await;
    assert_eq!(status, 200);
    assert_eq!(me["email"], "demo-admin@berth.invalid");
    app.stop().await;
}

async fn sign_out_deletes_the_session_on_the_server(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let base = app.url("");
    let client = bare_client();
    let cookie = cookie_pair(&dev_sign_in(&client, &base, "user", None).await);
    let response = client
        .post(format!("{base}/auth/signout"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    // Replaying the old cookie does not bring the session back.
    assert_eq!(me_status(&client, &base, &cookie).await.0, 401);
    app.stop().await;
}

async fn dev_sign_in_is_404_when_disabled_and_refuses_unknown_roles(backend: Backend) {
    let db = TestDatabase::create(backend).await;
    let app = spawn_with(RawSettings {
        dev_sign_in: Some(false),
        ..test_settings(&db)
    })
    .await;
    let response = bare_client()
        .post(app.url("/auth/dev"))
        .form(&[("role", "user")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    assert!(
        response.headers().get("set-cookie").is_none(),
        "no session created"
    );
    app.stop().await;

    let (app, _db) = spawn_app(backend).await;
    let response = bare_client()
        .post(app.url("/auth/dev"))
        .form(&[("role", "root")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 422);
    assert!(
        response.headers().get("set-cookie").is_none(),
        "no session created"
    );
    app.stop().await;
}

async fn https_public_urls_make_the_cookie_secure(backend: Backend) {
    let db = TestDatabase::create(backend).await;
    let app = spawn_with(RawSettings {
        public_url: Some("https://berth.example".into()),
        ..test_settings(&db)
    })
    .await;
    let set_cookie = dev_sign_in(&bare_client(), &app.url(""), "user", None).await;
    assert!(set_cookie.contains("Secure"), "{set_cookie}");
    app.stop().await;
}

async fn the_header_shows_who_is_signed_in_and_the_sign_in_page_offers_demo_accounts(
    backend: Backend,
) {
    let (app, _db) = spawn_app(backend).await;
    let base = app.url("");
    let client = bare_client();
    let page = |cookie: Option<String>, path: &'static str| {
        let mut request = client.get(format!("{base}{path}"));
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        async move {
            crate::helpers::without_markers(request.send().await.unwrap().text().await.unwrap())
        }
    };
    let sign_in = page(None, "/signin?return_to=/%3Fmodel%3DX").await;
    assert!(
        sign_in.contains("href=\"/signin\""),
        "a sign-in link for visitors"
    );
    assert!(sign_in.contains("Sign in as the demo user"));
    assert!(sign_in.contains("Sign in as the demo team admin"));
    assert!(sign_in.contains("Sign in as the demo platform admin"));

    let cookie = cookie_pair(&dev_sign_in(&client, &base, "platform_admin", None).await);
    let signed_in = page(Some(cookie), "/").await;
    assert!(signed_in.contains("Demo Platform Admin"));
    assert!(signed_in.contains("platform admin"));
    assert!(signed_in.contains("action=\"/auth/signout\""));

    let cookie = cookie_pair(&dev_sign_in(&client, &base, "team_admin", None).await);
    let team_admin = page(Some(cookie), "/profile").await;
    assert!(team_admin.contains("Demo Team Admin"));
    assert!(team_admin.contains("team admin · Demo Lab"), "{team_admin}");
    assert!(
        team_admin.contains("Demo Lab (admin)"),
        "the profile lists the team"
    );
    app.stop().await;

    let db = TestDatabase::create(backend).await;
    let app = spawn_with(RawSettings {
        dev_sign_in: Some(false),
        ..test_settings(&db)
    })
    .await;
    let (_, html) = app.get_text("/signin").await;
    assert!(html.contains("No sign-in method is configured"));
    assert!(!html.contains("action=\"/auth/dev\""));
    app.stop().await;
}

/// `return_to` of the dev sign-in, the language switch and the sign-in page only ever leads to
/// a path on this site.
async fn return_to_never_leads_to_another_site(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let client = bare_client();
    for evil in [
        "/%09/evil.example",
        "/%2509/evil.example",
        "/\\evil.example",
        "//evil.example",
        "https://evil.example/",
        "/\t/evil.example",
    ] {
        let signed_in = client
            .post(app.url("/auth/dev"))
            .form(&[("role", "user"), ("return_to", evil)])
            .send()
            .await
            .unwrap();
        assert_eq!(signed_in.status().as_u16(), 303);
        assert_eq!(signed_in.headers()["location"], "/", "sign-in to {evil:?}");
        let switched = client
            .post(app.url("/locale"))
            .form(&[("locale", "en"), ("return_to", evil)])
            .send()
            .await
            .unwrap();
        assert_eq!(switched.status().as_u16(), 303);
        assert_eq!(switched.headers()["location"], "/", "locale to {evil:?}");
    }
    let (status, html) = app
        .get_text("/signin?return_to=%2F%2509%2Fevil.example")
        .await;
    assert_eq!(status, 200);
    // (The language switch carries this page's own address, query included; the sign-in form
    // must carry only `/`.)
    assert!(
        !html.contains("value=\"/%09/evil.example\""),
        "the sign-in page does not echo a foreign return_to"
    );
    assert!(html.contains("name=\"return_to\" value=\"/\""));
    let (_, html) = app.get_text("/signin?return_to=%2Fprofile").await;
    assert!(html.contains("value=\"/profile\""), "a local one is kept");
    // Encoded characters inside the nested address survive as they were sent.
    let (_, html) = app
        .get_text("/signin?return_to=%2Fcalendar%3Fmodel%3DNVIDIA%2520L40S%2526x")
        .await;
    assert!(
        html.contains("value=\"/calendar?model=NVIDIA%20L40S%26x\""),
        "the nested query is kept as it was encoded"
    );
    app.stop().await;
}

crate::on_both_backends!(
    return_to_never_leads_to_another_site,
    the_header_shows_who_is_signed_in_and_the_sign_in_page_offers_demo_accounts,
    dev_sign_in_starts_a_session_with_safe_cookie_flags,
    signing_in_again_cycles_the_session_id_and_kills_the_old_one,
    sign_out_deletes_the_session_on_the_server,
    dev_sign_in_is_404_when_disabled_and_refuses_unknown_roles,
    https_public_urls_make_the_cookie_secure,
);
