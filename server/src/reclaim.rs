//! Runs the idle reclaim job (`berth_app::backend::reclaim`) in the background of `berth serve`,
//! and after it the SLA credit job (`berth_app::backend::incidents::run_credits`). Every replica
//! runs them: each warning, release and credit re-reads its row under lock and skips one another
//! run already handled, so replicas never warn, release or credit twice.

use berth_app::backend::reclaim;
use berth_app::backend::state::AppState;

/// Runs the job every `every` until the task is aborted.
pub fn spawn_job(state: AppState, every: std::time::Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // The first run after one interval: telemetry of a portal that just started is thin.
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let started = std::time::Instant::now();
            let result = reclaim::run(&state.db, state.now()).await;
            state.metrics.job_run(
                "idle_reclaim",
                result.is_ok(),
                started.elapsed().as_secs_f64(),
            );
            match result {
                Ok(outcome) if outcome.warned == 0 && outcome.released == 0 => {}
                Ok(outcome) => {
                    state.wake.poke();
                    if outcome.released > 0 {
                        state.freed.poke();
                    }
                    tracing::info!(?outcome, "idle reclaim job");
                }
                Err(err) => tracing::warn!(error = %err, "idle reclaim job failed"),
            }
            let started = std::time::Instant::now();
            let credits = berth_app::backend::incidents::run_credits(&state, state.now()).await;
            state.metrics.job_run(
                "sla_credits",
                credits.is_ok(),
                started.elapsed().as_secs_f64(),
            );
            match credits {
                Ok(0) => {}
                Ok(credited) => tracing::info!(incidents = credited, "SLA credits paid"),
                Err(err) => tracing::warn!(error = %err, "SLA credit job failed"),
            }
        }
    })
}
