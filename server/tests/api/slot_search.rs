//! Find a slot answers the same with and without its shortcut (the grouped query over the slot
//! rows that answers when enough nodes have room at the earliest start): a fleet of 12 nodes
//! with bookings of whole GPUs and halves and a maintenance window, asked in many shapes.

use crate::helpers::*;
use berth_app::backend::db;
use berth_app::backend::reservations::offers::{SlotQuery, search, search_all};
use berth_app::domain::gpu::{GpuMemory, GpuStatus};
use berth_app::domain::inventory::{NewGpu, NewNode};
use berth_app::domain::maintenance::NewMaintenance;
use berth_app::domain::money::Money;
use berth_app::domain::schedule::{Share, Window};
use berth_app::domain::user::PlatformRole;
use chrono::{TimeDelta, Timelike, Utc};
use rand::{Rng, SeedableRng};
use serde_json::json;

crate::on_both_backends!(find_a_slot_answers_the_same_with_and_without_its_shortcut);

const MODEL: &str = "NVIDIA L4";

async fn find_a_slot_answers_the_same_with_and_without_its_shortcut(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let ana = user_token(&app, "ana@example.com", PlatformRole::User).await;
    let now = Utc::now();
    let mut gpus = Vec::new();
    for n in 0..12 {
        let node = NewNode {
            name: format!("slot-{n:02}"),
            hostname: format!("slot-{n:02}.example.org"),
            is_demo: false,
        };
        let new: Vec<NewGpu> = (0..4)
            .map(|index| NewGpu {
                device_index: index,
                uuid: format!("GPU-5107a000-0000-4000-8000-{n:04x}{index:08x}"),
                model: MODEL.to_owned(),
                memory: GpuMemory::from_mib(23_034),
                status: GpuStatus::Active,
                shareable: true,
                hourly_price: Money::from_minor(79),
            })
            .collect();
        db::inventory::insert_node_with_gpus(&app.db, &node, &new, now)
            .await
            .unwrap();
    }
    for id in gpus_of(&app, MODEL).await {
        gpus.push(id);
    }
    assert_eq!(gpus.len(), 48);
    // From tomorrow midnight (UTC), on the grid.
    let from = (now + TimeDelta::days(1))
        .with_hour(0)
        .and_then(|t| t.with_minute(0))
        .and_then(|t| t.with_second(0))
        .and_then(|t| t.with_nanosecond(0))
        .unwrap();
    // Bookings over the first two days: whole GPUs and halves, 1 to 10 hours; clashes refused.
    let mut rng = rand::rngs::StdRng::seed_from_u64(29);
    let mut booked = 0;
    for _ in 0..120 {
        let gpu = gpus[rng.random_range(0..gpus.len())];
        let start = from + TimeDelta::minutes(15 * rng.random_range(0..4 * 40));
        let end = start + TimeDelta::minutes(15 * rng.random_range(4..=40));
        let share = if rng.random_bool(0.3) { 0.5 } else { 1.0 };
        let (status, body) = book(
            &app,
            &ana,
            json!({"gpu_ids": [gpu], "share": share, "start": start.to_rfc3339(), "end": end.to_rfc3339()}),
        )
        .await;
        assert!(status == 201 || status == 409, "{status} {body}");
        booked += usize::from(status == 201);
    }
    assert!(booked > 60, "{booked} bookings");
    // Two GPUs of the first node under maintenance for the first 6 hours.
    for gpu in &gpus[0..2] {
        let request = NewMaintenance {
            window: Window::new(from, from + TimeDelta::hours(6)).unwrap(),
            reason: "fans".to_owned(),
            berth_reason: None,
        };
        db::maintenance::insert(&app.db, *gpu, &request, None, now)
            .await
            .unwrap();
    }
    let latest = from + TimeDelta::days(30);
    let mut compared = 0;
    for count in 1..=4 {
        for hours in [1, 4, 9] {
            for share in [Share::Whole, Share::Half] {
                for offset_hours in [0, 5, 30] {
                    for limit in [1, 5, 12] {
                        let query = SlotQuery {
                            model: Some(MODEL.to_owned()),
                            min_memory_mib: None,
                            count,
                            share,
                            length: TimeDelta::hours(hours),
                            earliest: from + TimeDelta::hours(offset_hours),
                        };
                        let quick = search(&app.db, &query, latest, limit).await.unwrap();
                        let everywhere = search_all(&app.db, &query, latest, limit).await.unwrap();
                        assert_eq!(
                            quick, everywhere,
                            "{count} × {share:?} for {hours} h from +{offset_hours} h, {limit} offers"
                        );
                        assert!(!quick.is_empty());
                        compared += 1;
                    }
                }
            }
        }
    }
    assert_eq!(compared, 4 * 3 * 2 * 3 * 3);
    app.stop().await;
}
