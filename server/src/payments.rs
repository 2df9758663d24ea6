//! Runs the payment job (`berth_app::backend::payment_job`) in the background of `berth serve`.
//! Every replica runs it: the job claims each reservation with a row lock, so replicas share the
//! work instead of doing it twice.

use berth_app::backend::clock::Clock;
use berth_app::backend::payment_job as payments;
use berth_app::domain::payment::ChargePolicy;
use sea_orm::DatabaseConnection;
use std::sync::Arc;

/// Runs the payment job every `every` on `clock` until the task is aborted.
pub fn spawn_job(
    db: DatabaseConnection,
    policy: ChargePolicy,
    every: std::time::Duration,
    clock: Arc<dyn Clock>,
    metrics: Arc<berth_app::backend::metrics::PortalMetrics>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // The first run at once: charges that fell due while the portal was down are made now.
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let started = std::time::Instant::now();
            let result = payments::run(&db, &policy, clock.now(), None).await;
            metrics.job_run("payments", result.is_ok(), started.elapsed().as_secs_f64());
            match result {
                Ok(outcome) if outcome == payments::Outcome::default() => {}
                Ok(outcome) => tracing::info!(?outcome, "payment job"),
                Err(err) => tracing::warn!(error = %err, "payment job failed"),
            }
        }
    })
}
