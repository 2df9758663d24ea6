//! The inventory page, its server function and the demo fleet.

use crate::helpers::{
    Backend, TestDatabase, client, gpu_rows, spawn_app, spawn_with, test_settings, user_token,
};
use berth_app::domain::user::PlatformRole;
use berth_server::configuration::RawSettings;

async fn root_lists_the_demo_fleet_grouped_by_node(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    let (status, html) = app.get_text("/").await;
    assert_eq!(status, 200);
    assert_eq!(gpu_rows(&html), 16, "all 16 demo GPUs are listed");
    for node in ["demo-hopper-01", "demo-ampere-01", "demo-lovelace-01"] {
        assert!(html.contains(node), "node {node} is shown");
    }
    for model in [
        "NVIDIA H100 80GB HBM3",
        "NVIDIA A100-PCIE-40GB",
        "NVIDIA L40S",
        "NVIDIA RTX A5000",
    ] {
        assert!(html.contains(model), "model {model} is shown");
    }
    assert!(
        html.contains("Demo inventory"),
        "demo data is marked as such"
    );
    assert!(html.contains("80 GB"));
    assert!(
        html.contains("$3.49"),
        "H100 price is shown in the currency"
    );
    assert!(html.contains("data-status=\"maintenance\""));
    app.stop().await;
}

async fn the_model_filter_works_without_javascript(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    let (status, html) = app.get_text("/?model=NVIDIA%20L40S").await;
    assert_eq!(status, 200);
    assert_eq!(gpu_rows(&html), 2);
    assert!(
        !html.contains(">demo-hopper-01</h2>"),
        "nodes without L40S are hidden"
    );
    assert!(html.contains(">demo-lovelace-01</h2>"));
    assert!(html.contains("2 GPUs shown"));

    let (_, html) = app.get_text("/?model=No%20such%20GPU").await;
    assert_eq!(gpu_rows(&html), 0);
    assert!(html.contains("No GPU matches this filter."));
    app.stop().await;
}

async fn list_gpus_server_function_returns_the_inventory_as_json(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    let response = app.call_server_fn("/api/list_gpus", &[]).await;
    assert_eq!(response.status().as_u16(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    let nodes = body["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    let gpus: usize = nodes
        .iter()
        .map(|node| node["gpus"].as_array().unwrap().len())
        .sum();
    assert_eq!(gpus, 16);
    assert_eq!(body["currency"]["code"], "USD");
    let h100 = &nodes
        .iter()
        .find(|n| n["name"] == "demo-hopper-01")
        .unwrap()["gpus"][0];
    assert_eq!(h100["hourly_price"], 349);
    assert_eq!(h100["memory"], 81_559);
    assert_eq!(h100["status"], "active");
    app.stop().await;
}

async fn a_second_start_on_the_same_database_keeps_the_data_and_adds_nothing(backend: Backend) {
    let db = TestDatabase::create(backend).await;
    let first = spawn_with(test_settings(&db)).await;
    first.sign_in("user").await;
    let (_, first_html) = first.get_text("/").await;
    first.stop().await;

    let second = spawn_with(test_settings(&db)).await;
    second.sign_in("user").await;
    let (_, second_html) = second.get_text("/").await;
    assert_eq!(gpu_rows(&first_html), 16);
    assert_eq!(gpu_rows(&second_html), 16, "no second demo fleet was added");
    let count = berth_app::backend::db::inventory::count_nodes(&second.db)
        .await
        .unwrap();
    assert_eq!(count, 3);
    second.stop().await;
}

async fn with_the_demo_off_the_inventory_starts_empty(backend: Backend) {
    let db = TestDatabase::create(backend).await;
    let app = spawn_with(RawSettings {
        demo: Some(false),
        dev_sign_in: Some(true),
        ..test_settings(&db)
    })
    .await;
    app.sign_in("user").await;
    let (status, html) = app.get_text("/").await;
    assert_eq!(status, 200);
    assert_eq!(gpu_rows(&html), 0);
    assert!(html.contains("No GPUs yet."));
    assert!(!html.contains("Demo inventory"));
    app.stop().await;
}

async fn concurrent_starts_add_the_demo_fleet_once(backend: Backend) {
    let db = TestDatabase::create(backend).await;
    let (a, b) = tokio::join!(
        spawn_with(test_settings(&db)),
        spawn_with(test_settings(&db))
    );
    let count = berth_app::backend::db::inventory::count_nodes(&a.db)
        .await
        .unwrap();
    assert_eq!(count, 3);
    b.sign_in("user").await;
    let (_, html) = b.get_text("/").await;
    assert_eq!(gpu_rows(&html), 16);
    a.stop().await;
    b.stop().await;
}

async fn unknown_pages_answer_404_with_a_way_back(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    let (status, html) = app.get_text("/no/such/page").await;
    assert_eq!(status, 404);
    assert!(html.contains("Page not found"));
    assert!(html.contains("href=\"/\""));
    app.stop().await;
}

async fn pages_and_data_need_sign_in(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let page = app
        .client
        .get(app.url("/?model=NVIDIA%20L40S"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 303);
    assert_eq!(
        page.headers()["location"],
        "/signin?return_to=%2F%3Fmodel%3DNVIDIA%2520L40S"
    );
    let response = app.call_server_fn("/api/list_gpus", &[]).await;
    assert_eq!(response.status().as_u16(), 401);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body, serde_json::json!("Unauthorized"));
    // Public: the sign-in page, health checks, static files.
    assert_eq!(app.get_text("/signin").await.0, 200);
    assert_eq!(app.get_text("/healthz").await.0, 200);
    assert_ne!(app.get_text("/favicon.svg").await.0, 303);
    app.stop().await;
}

async fn a_lost_database_gives_503_and_a_clear_message_not_500(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    let token = user_token(&app, "api@example.com", PlatformRole::User).await;
    app.db.clone().close().await.unwrap();

    let (status, html) = app.get_text("/").await;
    assert_eq!(status, 503);
    assert!(
        html.contains("The database is not reachable right now."),
        "{html}"
    );

    let response = app.call_server_fn("/api/list_gpus", &[]).await;
    assert_eq!(response.status().as_u16(), 503);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body, serde_json::json!("Unavailable"));

    // The JSON API: the same 503, and when to send the request again.
    let response = client()
        .get(app.url("/api/v1/gpus"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 503);
    assert_eq!(response.headers()["retry-after"], "1");
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"], "unavailable", "{body}");
    app.stop().await;
}

async fn a_large_fleet_is_shown_a_page_of_nodes_at_a_time(backend: Backend) {
    use berth_app::domain::gpu::{GpuMemory, GpuStatus};
    use berth_app::domain::inventory::NewGpu;
    use berth_app::domain::money::Money;
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    // 40 more nodes of 8 L4 GPUs: 43 nodes in all, two pages.
    for n in 0..40 {
        let gpus: Vec<NewGpu> = (0..8)
            .map(|index| NewGpu {
                device_index: index,
                uuid: format!("GPU-1a000000-0000-4000-8000-{n:04x}{index:08x}"),
                model: "NVIDIA L4".to_owned(),
                memory: GpuMemory::from_mib(23_034),
                status: GpuStatus::Active,
                shareable: false,
                hourly_price: Money::from_minor(79),
            })
            .collect();
        crate::helpers::add_node(&app, &format!("rack-{n:02}"), &gpus).await;
    }
    let (status, first) = app.get_text("/").await;
    assert_eq!(status, 200);
    assert_eq!(
        gpu_rows(&first),
        16 + 29 * 8,
        "32 nodes on a page: the 3 demo nodes and 29 racks"
    );
    assert!(
        first.contains("Page 1 of 2") && first.contains("href=\"/?page=2\""),
        "{first}"
    );
    assert!(
        first.contains("336 GPUs"),
        "the fleet's total stays whole: {first}"
    );
    let (_, second) = app.get_text("/?page=2").await;
    assert_eq!(gpu_rows(&second), 11 * 8, "the other 11 racks");
    assert!(second.contains("Page 2 of 2") && second.contains("href=\"/?page=1\""));
    // The filter is applied by the server, across pages.
    let (_, h100) = app.get_text("/?model=NVIDIA%20H100%2080GB%20HBM3").await;
    assert!(h100.contains("Page 1 of 1"), "{h100}");
    assert!(h100.contains("demo-hopper-01") && !h100.contains("rack-00"));
    let (_, past_the_end) = app.get_text("/?model=NVIDIA%20L4&page=9").await;
    assert!(
        past_the_end.contains("Page 2 of 2"),
        "clamped to the last page"
    );
    app.stop().await;
}

/// The inventory page reads one page of nodes and grouped counts from the store; what it answers
/// is the page of the whole inventory, for every filter and page (mixed models and statuses, a
/// node without GPUs, a GPU waiting for acceptance, demo and real nodes).
async fn a_page_read_from_the_store_equals_the_page_of_the_whole_inventory(backend: Backend) {
    use berth_app::backend::entity::gpu;
    use berth_app::domain::gpu::{GpuMemory, GpuStatus};
    use berth_app::domain::inventory::{Inventory, NewGpu};
    use berth_app::domain::money::Money;
    use sea_orm::{ActiveModelTrait, ActiveValue::Set, EntityTrait};
    let (app, _db) = spawn_app(backend).await;
    let models = [
        ("NVIDIA L4", 23_034),
        ("NVIDIA A100-SXM4-40GB", 40_960),
        ("NVIDIA A100-SXM4-80GB", 81_920),
    ];
    let statuses = [
        GpuStatus::Active,
        GpuStatus::Maintenance,
        GpuStatus::Retired,
    ];
    for n in 0..45_usize {
        let gpus: Vec<NewGpu> = (0..(n % 5) as u32)
            .map(|index| {
                let (model, mib) = models[(n + index as usize) % models.len()];
                NewGpu {
                    device_index: index,
                    uuid: format!("GPU-2b000000-0000-4000-8000-{n:04x}{index:08x}"),
                    model: model.to_owned(),
                    memory: GpuMemory::from_mib(mib),
                    status: statuses[(n * 7 + index as usize) % statuses.len()],
                    shareable: false,
                    hourly_price: Money::from_minor(100 + n as i64),
                }
            })
            .collect();
        // Added out of name order, so that the order is the store's.
        crate::helpers::add_node(&app, &format!("node-{:02}", (n * 17) % 45), &gpus).await;
    }
    // One GPU waits for a platform admin: in neither answer.
    let waiting = gpu::Entity::find()
        .one(&app.db)
        .await
        .unwrap()
        .expect("a GPU");
    let mut waiting: gpu::ActiveModel = waiting.into();
    waiting.pending = Set(true);
    waiting.update(&app.db).await.unwrap();

    let whole = || async {
        Inventory {
            nodes: berth_app::backend::inventory::nodes(&app.state)
                .await
                .unwrap(),
            currency: app.state.portal.currency.clone(),
            fleet: None,
        }
    };
    for model in [
        None,
        Some("NVIDIA L4"),
        Some("NVIDIA A100-SXM4-80GB"),
        Some("NVIDIA H100 80GB HBM3"),
        Some("no such model"),
    ] {
        for page in [0, 1, 2, 3, 99] {
            let read = berth_app::backend::inventory::page(&app.state, model, page)
                .await
                .unwrap();
            assert_eq!(
                read,
                whole().await.page(model, page),
                "{model:?} page {page}"
            );
            assert!(read.nodes.len() <= 32);
        }
    }
    // A model whose only GPU waits too: not in the calendar's list of models.
    crate::helpers::add_node(
        &app,
        "node-waiting",
        &[NewGpu {
            device_index: 0,
            uuid: "GPU-2b000000-0000-4000-8000-ffffffffffff".to_owned(),
            model: "NVIDIA B200".to_owned(),
            memory: GpuMemory::from_mib(184_320),
            status: GpuStatus::Active,
            shareable: false,
            hourly_price: Money::from_minor(900),
        }],
    )
    .await;
    for row in gpu::Entity::find().all(&app.db).await.unwrap() {
        if row.model == "NVIDIA B200" {
            let mut row: gpu::ActiveModel = row.into();
            row.pending = Set(true);
            row.update(&app.db).await.unwrap();
        }
    }
    let mut accepted: Vec<String> = gpu::Entity::find()
        .all(&app.db)
        .await
        .unwrap()
        .into_iter()
        .filter(|row| !row.pending)
        .map(|row| row.model)
        .collect();
    accepted.sort();
    accepted.dedup();
    assert_eq!(
        berth_app::backend::db::inventory::list_models(&app.db)
            .await
            .unwrap(),
        accepted,
        "each accepted model once, in order"
    );
    app.stop().await;
}

/// Arguments a server function cannot read (a page past u32, not a number) are the caller's
/// input: 422 with the reason, not 500.
async fn unreadable_server_function_arguments_answer_422(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    for page in ["99999999999999999999", "abc"] {
        let response = app
            .client
            .post(app.url("/api/list_gpus"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("page={page}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 422, "page={page}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(
            body["Validation"]["problem"]["code"], "unreadable",
            "{body}"
        );
    }
    app.stop().await;
}

crate::on_both_backends!(
    unreadable_server_function_arguments_answer_422,
    a_large_fleet_is_shown_a_page_of_nodes_at_a_time,
    a_page_read_from_the_store_equals_the_page_of_the_whole_inventory,
    a_lost_database_gives_503_and_a_clear_message_not_500,
    root_lists_the_demo_fleet_grouped_by_node,
    the_model_filter_works_without_javascript,
    list_gpus_server_function_returns_the_inventory_as_json,
    a_second_start_on_the_same_database_keeps_the_data_and_adds_nothing,
    with_the_demo_off_the_inventory_starts_empty,
    concurrent_starts_add_the_demo_fleet_once,
    unknown_pages_answer_404_with_a_way_back,
    pages_and_data_need_sign_in,
);

/// Processes opening one new SQLite file at the same moment all switch it to WAL; SQLite refuses
/// all but one at once ("database is locked") instead of waiting. Eight openers at a time, over
/// many new files, meet that race nearly every run; every open must still succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_processes_can_open_a_new_sqlite_file_at_once() {
    for _ in 0..60 {
        let db = TestDatabase::create(Backend::Sqlite).await;
        let opens: Vec<_> = (0..8)
            .map(|_| {
                let url = db.url.clone();
                tokio::spawn(async move { berth_app::backend::db::connect(&url).await })
            })
            .collect();
        for open in opens {
            let opened = open.await.expect("the open task finishes");
            let pool = opened.expect("a new SQLite file opens while others open it");
            pool.close().await.ok();
        }
    }
}
