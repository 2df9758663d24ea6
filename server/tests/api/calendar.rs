//! The calendar page rendered on the server, the demo bookings, and booking with the plain form
//! (no JavaScript).

use crate::helpers::{Backend, TestDatabase, spawn_with, test_settings};
use berth_app::server::entity::reservation;
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
    crate::reservations::assert_capacity_kept(&app).await;

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
    let gpu = crate::reservations::first_gpu(&app, "NVIDIA H100 80GB HBM3").await;
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
        .post(app.url("/calendar/book"))
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
        .post(app.url("/calendar/book"))
        .form(&form)
        .send()
        .await
        .unwrap();
    let location = again.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.contains("&error="), "{location}");
    assert!(location.contains("already+booked"), "{location}");
    let (_, page) = app.get_text(&location).await;
    assert!(
        page.contains("already booked"),
        "the page shows the conflict"
    );
    assert_eq!(reservation::Entity::find().count(&app.db).await.unwrap(), 1);
    app.stop().await;
}

crate::on_both_backends!(
    the_calendar_shows_every_gpu_with_demo_bookings_and_no_strangers_details,
    the_plain_form_books_and_reports_conflicts,
);
