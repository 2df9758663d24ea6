//! Runs the card jobs in the background of `berth serve` when card payments are on, as often as
//! the payment job: bookings paid by card are charged off-session when their charge before the
//! start is due (`charge_due_bookings`), payments still open are settled from what Stripe holds
//! (`reconcile`), refunds booked for cards are sent (`send_refunds`); and every hour Stripe's
//! balance transactions of the last three days are compared with the ledger (`check_balance`),
//! each difference told to the platform admins. Every replica runs them: each payment, booking
//! and refund is settled under its row's lock, once.

use berth_app::backend::card_payments;
use berth_app::backend::state::AppState;

/// How often Stripe's balance is compared with the ledger.
const BALANCE_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);
/// How far back it is compared.
const BALANCE_DAYS: i64 = 3;

/// Runs the jobs every `every` until the task is aborted; nothing when Stripe is off.
pub fn spawn_job(
    state: AppState,
    every: std::time::Duration,
) -> Option<tokio::task::JoinHandle<()>> {
    state.stripe.as_ref()?;
    Some(tokio::spawn(async move {
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut balance_checked: Option<std::time::Instant> = None;
        loop {
            ticker.tick().await;
            let started = std::time::Instant::now();
            let result = run_once(&state).await;
            state.metrics.job_run(
                "card_reconcile",
                result.is_ok(),
                started.elapsed().as_secs_f64(),
            );
            if let Err(err) = result {
                tracing::warn!(error = %err, "card jobs failed");
            }
            if balance_checked.is_none_or(|at| at.elapsed() >= BALANCE_EVERY) {
                balance_checked = Some(std::time::Instant::now());
                match card_payments::check_balance(&state, state.now(), BALANCE_DAYS).await {
                    Ok(check) if check.differences.is_empty() => {
                        tracing::debug!(
                            transactions = check.stripe_transactions,
                            "Stripe's balance matches the ledger"
                        );
                    }
                    Ok(check) => tracing::error!(
                        differences = check.differences.len(),
                        "Stripe's balance and the ledger disagree; platform admins told"
                    ),
                    Err(err) => tracing::warn!(error = %err, "balance check failed"),
                }
            }
        }
    }))
}

/// One run of the per-tick jobs.
async fn run_once(state: &AppState) -> Result<(), berth_app::error::AppError> {
    let now = state.now();
    let charged = card_payments::charge_due_bookings(state, now).await?;
    let changed = card_payments::reconcile(state, now).await?;
    let refunded = card_payments::send_refunds(state).await?;
    if charged + changed + refunded > 0 {
        tracing::info!(charged, changed, refunded, "card jobs");
    }
    Ok(())
}
