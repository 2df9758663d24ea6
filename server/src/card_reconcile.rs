//! Runs the card reconciliation job (`berth_app::backend::card_payments::reconcile`) in the
//! background of `berth serve` when card payments are on, as often as the payment job. Every
//! replica runs it: each payment is settled under its row's lock, once.

use berth_app::backend::card_payments;
use berth_app::backend::state::AppState;

/// Runs the job every `every` until the task is aborted; nothing when Stripe is off.
pub fn spawn_job(
    state: AppState,
    every: std::time::Duration,
) -> Option<tokio::task::JoinHandle<()>> {
    state.stripe.as_ref()?;
    Some(tokio::spawn(async move {
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let started = std::time::Instant::now();
            let result = card_payments::reconcile(&state, state.now()).await;
            state.metrics.job_run(
                "card_reconcile",
                result.is_ok(),
                started.elapsed().as_secs_f64(),
            );
            match result {
                Ok(0) => {}
                Ok(changed) => tracing::info!(payments = changed, "card payments reconciled"),
                Err(err) => tracing::warn!(error = %err, "card reconciliation failed"),
            }
        }
    }))
}
