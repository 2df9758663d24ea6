//! Runs the watch job (`berth_app::backend::watches`), then the backfill
//! (`berth_app::backend::backfill`), in the background of `berth serve`: every
//! `watch_job_seconds`, and at once when a change may have freed capacity. Watchers come first:
//! a window held for a watch is not backfilled. Every replica runs both: a window is held for a
//! watch in a transaction that re-reads the watch and its holds under lock, so two runs never
//! hold two windows for one watch at once; a booking is brought forward under its GPUs' locks,
//! once.

use berth_app::backend::state::AppState;
use berth_app::backend::{backfill, watches};

/// Runs the job every `every`, and when `state.freed` is poked, until the task is aborted.
pub fn spawn_job(state: AppState, every: std::time::Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                () = state.freed.poked() => {}
            }
            let started = std::time::Instant::now();
            let now = state.now();
            let latest = berth_app::backend::reservations::latest_start(&state, now);
            let result = watches::run(&state.db, state.clock.as_ref(), latest).await;
            state
                .metrics
                .job_run("watches", result.is_ok(), started.elapsed().as_secs_f64());
            match result {
                Ok(outcome) if outcome.offered == 0 => {}
                Ok(outcome) => {
                    state.wake.poke();
                    tracing::info!(?outcome, "watch job");
                }
                Err(err) => tracing::warn!(error = %err, "watch job failed"),
            }
            let started = std::time::Instant::now();
            let result = backfill::run(&state.db, state.clock.as_ref()).await;
            state
                .metrics
                .job_run("backfill", result.is_ok(), started.elapsed().as_secs_f64());
            match result {
                Ok(outcome) if outcome.moved == 0 => {}
                Ok(outcome) => {
                    state.wake.poke();
                    tracing::info!(?outcome, "backfill");
                }
                Err(err) => tracing::warn!(error = %err, "backfill failed"),
            }
        }
    })
}
