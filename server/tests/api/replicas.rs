//! Several replicas of the portal on one database, all with the same settings: the local agent's
//! work (here the demo fleet's simulation) is run by the replica holding its lease, and another
//! takes it over when that replica stops, or once the lease of one that died has run out.

use crate::helpers::*;
use berth_app::backend::db::leases;
use berth_app::backend::entity::gpu_sample;
use berth_server::configuration::{Config, LocalAgentMode, RawSettings};
use chrono::{TimeDelta, Utc};
use sea_orm::{EntityTrait, PaginatorTrait};

crate::on_both_backends!(
    one_replica_simulates_the_demo_fleet_and_another_takes_over,
    a_dead_replicas_hold_runs_out_before_another_takes_the_work,
);

/// The lease of the demo fleet's simulation.
const DEMO: &str = "local-agent:demo";

/// Each replica would simulate the demo fleet on its own (one sample a second), holding its
/// lease for 2 seconds at a time.
fn replica_settings(db: &TestDatabase) -> RawSettings {
    let mut settings = test_settings(db);
    settings.local_agent = LocalAgentMode::Simulated;
    settings.agent_interval_seconds = 1;
    settings.local_agent_lease_seconds = 2;
    settings
}

async fn holder(db: &sea_orm::DatabaseConnection) -> Option<String> {
    leases::holder(db, DEMO, Utc::now())
        .await
        .expect("read the lease")
}

async fn samples(db: &sea_orm::DatabaseConnection) -> u64 {
    gpu_sample::Entity::find()
        .count(db)
        .await
        .expect("count samples")
}

async fn one_replica_simulates_the_demo_fleet_and_another_takes_over(backend: Backend) {
    let db = TestDatabase::create(backend).await;
    let first = spawn_with(replica_settings(&db)).await;
    let second = spawn_with(replica_settings(&db)).await;
    assert_ne!(first.replica, second.replica);
    let held_by = eventually("a replica holds the demo fleet", || async {
        holder(&first.db).await
    })
    .await;
    assert!(
        held_by == first.replica || held_by == second.replica,
        "{held_by}"
    );
    eventually("simulated samples", || async {
        (samples(&first.db).await > 0).then_some(())
    })
    .await;
    // Renewed while it runs: still the same replica after more than a lease's length.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(holder(&first.db).await.as_deref(), Some(held_by.as_str()));

    let (leaving, staying) = if held_by == first.replica {
        (first, second)
    } else {
        (second, first)
    };
    leaving.stop().await;
    let staying_id = staying.replica.clone();
    eventually("the other replica takes the demo fleet over", || async {
        holder(&staying.db).await.filter(|h| *h == staying_id)
    })
    .await;
    let before = samples(&staying.db).await;
    eventually("samples from the replica that took over", || async {
        (samples(&staying.db).await > before).then_some(())
    })
    .await;
    staying.stop().await;

    // Stopping gives the lease up.
    let conn = berth_app::backend::db::connect(&db.url)
        .await
        .expect("connect");
    assert_eq!(holder(&conn).await, None);
    let _ = conn.close().await;
}

async fn a_dead_replicas_hold_runs_out_before_another_takes_the_work(backend: Backend) {
    let db = TestDatabase::create(backend).await;
    let settings = replica_settings(&db);
    berth_server::startup::migrate_only(&Config::from_raw(settings.clone()).expect("settings"))
        .await
        .expect("migrate");
    // A replica that died (no clean stop) while holding the lease for 4 more seconds.
    let conn = berth_app::backend::db::connect(&db.url)
        .await
        .expect("connect");
    let now = Utc::now();
    assert!(
        leases::hold(
            &conn,
            DEMO,
            "dead-replica",
            now,
            now + TimeDelta::seconds(4)
        )
        .await
        .expect("hold")
    );
    // Another holder cannot take a live lease.
    assert!(
        !leases::hold(
            &conn,
            DEMO,
            "someone-else",
            now,
            now + TimeDelta::seconds(4)
        )
        .await
        .expect("hold")
    );

    let app = spawn_with(settings).await;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(holder(&conn).await.as_deref(), Some("dead-replica"));
    assert_eq!(
        samples(&conn).await,
        0,
        "no replica simulates while the dead one's hold lasts"
    );
    let replica = app.replica.clone();
    eventually("the live replica takes the work over", || async {
        holder(&conn).await.filter(|h| *h == replica)
    })
    .await;
    eventually("simulated samples", || async {
        (samples(&conn).await > 0).then_some(())
    })
    .await;
    app.stop().await;
    let _ = conn.close().await;
}
