//! Runs the notification worker (`berth_app::backend::notify::run`) in the background of
//! `berth serve`: every `every`, and at once when a change in this replica recorded events.
//! Every replica runs it; each event is claimed under a lock, so replicas share the work and
//! never hand an event out twice.

use berth_app::backend::clock::Clock;
use berth_app::backend::notify::{self, Wake};
use sea_orm::DatabaseConnection;
use std::sync::Arc;

/// Runs the worker until the task is aborted.
pub fn spawn_job(
    db: DatabaseConnection,
    every: std::time::Duration,
    clock: Arc<dyn Clock>,
    wake: Arc<Wake>,
    metrics: Arc<berth_app::backend::metrics::PortalMetrics>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // The first run at once: what fell due while the portal was down goes out now.
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                () = wake.poked() => {}
            }
            let started = std::time::Instant::now();
            let result = notify::run(&db, clock.now()).await;
            metrics.job_run("notify", result.is_ok(), started.elapsed().as_secs_f64());
            match result {
                Ok(outcome) if outcome == notify::Outcome::default() => {}
                Ok(outcome) => tracing::debug!(?outcome, "notification worker"),
                Err(err) => tracing::warn!(error = %err, "notification worker failed"),
            }
        }
    })
}
