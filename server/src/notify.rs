//! Runs the notification worker in the background of `berth serve`: every `every`, and soon
//! (50 ms) after a change in this replica recorded events. Each run hands due events out
//! (`berth_app::backend::notify::run`) and then sends the e-mails and webhook calls due
//! (`berth_app::backend::notify::deliver`). Every replica runs it; events are claimed under a
//! lock and deliveries under a lease, so replicas share the work and never do it twice.

use berth_app::backend::notify;
use berth_app::backend::state::AppState;

/// How long a poke waits for more changes before the run (short beside how soon anyone reads
/// a notice).
const COALESCE: std::time::Duration = std::time::Duration::from_millis(50);

/// Runs the worker until the task is aborted.
pub fn spawn_job(state: AppState, every: std::time::Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // The first run at once: what fell due while the portal was down goes out now.
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                () = state.wake.poked() => {
                    // Changes come in bursts (a wave of bookings, a node's leases ending): a
                    // short pause lets one run hand out the burst's events together instead of
                    // one run, with its own transaction, per change.
                    tokio::time::sleep(COALESCE).await;
                }
            }
            let started = std::time::Instant::now();
            let result = notify::run(&state, state.now()).await;
            state
                .metrics
                .job_run("notify", result.is_ok(), started.elapsed().as_secs_f64());
            match result {
                Ok(outcome) if outcome == notify::Outcome::default() => {}
                Ok(outcome) => tracing::debug!(?outcome, "notification worker"),
                Err(err) => tracing::warn!(error = %err, "notification worker failed"),
            }
            // E-mails when the portal has an e-mail channel, and webhook calls either way.
            let started = std::time::Instant::now();
            let result = notify::deliver(&state).await;
            state
                .metrics
                .job_run("mail", result.is_ok(), started.elapsed().as_secs_f64());
            match result {
                Ok(sent) if sent == notify::Sent::default() => {}
                Ok(sent) => tracing::debug!(?sent, "notice sender (e-mail, webhooks)"),
                Err(err) => tracing::warn!(error = %err, "notice sender failed"),
            }
        }
    })
}
