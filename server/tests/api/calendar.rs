//! The calendar page rendered on the server, the demo bookings, and booking with the plain form
//! (no JavaScript).

use crate::helpers::*;
use berth_app::backend::entity::reservation;
use berth_server::configuration::RawSettings;
use chrono::{Duration, Utc};
use sea_orm::{EntityTrait, PaginatorTrait};

async fn the_calendar_shows_every_gpu_with_demo_bookings_and_no_strangers_details(
    backend: Backend,
) {
    let db = TestDatabase::create(backend).await;
    let app = spawn_with(RawSettings {
        demo_bookings: Some(true),
        ..test_settings(&db)
    })
    .await;
    let booked = reservation::Entity::find().count(&app.db).await.unwrap();
    assert!(
        booked >= 20,
        "a plausible fortnight of demo bookings, got {booked}"
    );
    crate::helpers::assert_capacity_kept(&app).await;

    app.sign_in("platform_admin").await;
    let (status, html) = app.get_text("/calendar").await;
    assert_eq!(status, 200);
    assert_eq!(
        html.matches("class=\"cal-row").count(),
        16,
        "one row per GPU"
    );
    assert!(
        html.contains("data-kind=\"booked\""),
        "others' bookings are shown"
    );
    assert!(html.contains("data-kind=\"maintenance\"") || html.contains("unbookable"));
    for stranger in ["Ana Souza", "Bruno Lima", "Chen Wei", "Demo User"] {
        assert!(
            !html.contains(stranger),
            "{stranger} is not named on the calendar"
        );
    }
    assert!(html.contains("class=\"cal-now\""), "the now-line");
    assert!(
        html.contains("Times in UTC"),
        "{}",
        &html[..200.min(html.len())]
    );

    let (_, filtered) = app.get_text("/calendar?model=NVIDIA%20L40S&span=day").await;
    assert_eq!(filtered.matches("class=\"cal-row").count(), 2);
    assert!(filtered.contains("data-span=\"day\""));
    let (_, memory) = app.get_text("/calendar?min_memory_gib=40").await;
    assert_eq!(
        memory.matches("class=\"cal-row").count(),
        14,
        "8 H100, 4 A100, 2 L40S"
    );
    app.stop().await;
}

async fn the_plain_form_books_and_reports_conflicts(backend: Backend) {
    let db = TestDatabase::create(backend).await;
    let app = spawn_with(test_settings(&db)).await;
    app.sign_in("user").await;
    let gpu = crate::helpers::first_gpu(&app, "NVIDIA H100 80GB HBM3").await;
    let day = (Utc::now() + Duration::days(2))
        .format("%Y-%m-%d")
        .to_string();
    let form = [
        ("gpu_id", gpu.to_string()),
        ("share", "1".to_owned()),
        ("start", format!("{day}T09:00")),
        ("end", format!("{day}T12:00")),
        ("return_to", "/calendar?span=week".to_owned()),
    ];
    let response = app
        .client
        .post(app.url("/api/forms/book"))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        location.starts_with("/calendar?span=week&booked="),
        "{location}"
    );

    let again = app
        .client
        .post(app.url("/api/forms/book"))
        .form(&form)
        .send()
        .await
        .unwrap();
    let location = again.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.contains("&error="), "{location}");
    assert!(
        location.contains("Clash"),
        "the error travels as data: {location}"
    );
    let (_, page) = app.get_text(&location).await;
    assert!(
        page.contains("Already taken"),
        "the page shows the conflict"
    );
    assert!(
        page.contains("The nearest window that fits"),
        "with the suggestion"
    );
    let page = app.get_in_language(&location, "pt-BR").await;
    assert!(page.contains("Já está ocupada"), "in Portuguese too");
    assert_eq!(reservation::Entity::find().count(&app.db).await.unwrap(), 1);
    app.stop().await;
}

/// `berth_session=…` of a fresh development sign-in as `role`.
async fn session_cookie(app: &crate::helpers::TestApp, role: &str) -> String {
    let response = crate::helpers::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .post(app.url("/auth/dev"))
        .form(&[("role", role), ("return_to", "/")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    let set_cookie = response.headers()["set-cookie"].to_str().unwrap();
    set_cookie.split(';').next().unwrap().to_owned()
}

async fn a_time_zone_chosen_on_the_profile_wins_over_the_browsers(backend: Backend) {
    let db = TestDatabase::create(backend).await;
    let app = spawn_with(test_settings(&db)).await;
    let session = session_cookie(&app, "user").await;
    // The browser reports Tokyo.
    let cookies = format!("{session}; berth_tz=Asia%2FTokyo");
    let client = crate::helpers::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = |path: &'static str| {
        let request = client.get(app.url(path)).header("cookie", cookies.clone());
        async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status().as_u16(), 200, "{path}");
            crate::helpers::without_markers(response.text().await.unwrap())
        }
    };
    let set_zone = |zone: &'static str| {
        let request = client
            .post(app.url("/api/set_time_zone"))
            .header("cookie", cookies.clone())
            .form(&[("time_zone", zone)]);
        async move { request.send().await.unwrap() }
    };
    let me = || {
        let request = client
            .get(app.url("/api/v1/me"))
            .header("cookie", cookies.clone());
        async move {
            request
                .send()
                .await
                .unwrap()
                .json::<serde_json::Value>()
                .await
                .unwrap()
        }
    };

    assert!(page("/calendar").await.contains("Times in Asia/Tokyo."));
    assert_eq!(me().await["time_zone"], serde_json::Value::Null);

    let saved = set_zone("America/Sao_Paulo").await;
    assert_eq!(saved.status().as_u16(), 200);
    assert_eq!(
        saved.json::<serde_json::Value>().await.unwrap(),
        "America/Sao_Paulo"
    );
    assert_eq!(me().await["time_zone"], "America/Sao_Paulo");
    assert!(
        page("/calendar")
            .await
            .contains("Times in America/Sao_Paulo."),
        "the profile setting wins over the browser's zone"
    );
    let profile = page("/profile").await;
    assert!(
        profile.contains("Show times in"),
        "the setting is on the profile page"
    );
    assert!(profile.contains("<option value=\"America/Sao_Paulo\" selected"));

    // The form without JavaScript reads local times in that zone (UTC-3, no summer time).
    let gpu = crate::helpers::first_gpu(&app, "NVIDIA H100 80GB HBM3").await;
    let day = (Utc::now() + Duration::days(2)).date_naive();
    let booked = client
        .post(app.url("/api/forms/book"))
        .header("cookie", cookies.clone())
        .form(&[
            ("gpu_id", gpu.to_string()),
            ("start", format!("{day}T09:00")),
            ("end", format!("{day}T10:00")),
        ])
        .send()
        .await
        .unwrap();
    let location = booked.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.contains("booked="), "{location}");
    let row = reservation::Entity::find()
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        row.start_at,
        day.and_hms_opt(12, 0, 0).unwrap().and_utc(),
        "09:00 in São Paulo is 12:00 UTC"
    );

    let refused = set_zone("Mars/Olympus_Mons").await;
    assert_eq!(refused.status().as_u16(), 422);
    let body = refused.text().await.unwrap();
    assert!(body.contains("time_zone"), "{body}");
    assert!(body.contains("Mars/Olympus_Mons"), "{body}");
    assert_eq!(
        me().await["time_zone"],
        "America/Sao_Paulo",
        "nothing changed"
    );

    let cleared = set_zone("").await;
    assert_eq!(cleared.status().as_u16(), 200);
    assert_eq!(me().await["time_zone"], serde_json::Value::Null);
    assert!(
        page("/calendar").await.contains("Times in Asia/Tokyo."),
        "back to the browser's zone"
    );
    app.stop().await;
}

crate::on_both_backends!(
    the_calendar_shows_every_gpu_with_demo_bookings_and_no_strangers_details,
    the_plain_form_books_and_reports_conflicts,
    a_time_zone_chosen_on_the_profile_wins_over_the_browsers,
);
