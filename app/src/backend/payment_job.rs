//! The payment job: charges reservations booked to be paid before their start, marks the ones
//! whose payer's wallet is short as payment due (retried on every run and as soon as credits
//! arrive), releases those still unpaid shortly before their start, and releases bookings whose
//! approval did not come in time. `berth serve` runs it in the background on every replica.
//!
//! Exactly once: each reservation is settled in its own write transaction that claims the row
//! (PostgreSQL: `FOR UPDATE SKIP LOCKED`, so replicas running the job at once take different
//! rows and never wait on each other; SQLite: the `IMMEDIATE` transaction's write lock), checks
//! that it is still confirmed and unpaid, and writes the charge and the new payment status
//! together. A job that dies half-way leaves the transaction uncommitted: nothing of it stays,
//! and the next run starts that reservation afresh.

use crate::backend::db;
use crate::backend::db::ledger::PostError;
use crate::backend::entity::reservation;
use crate::backend::notify;
use crate::domain::notify::NewEvent;
use crate::domain::payment::ChargePolicy;
use crate::domain::reservation::{PaymentStatus, ReleaseReason};
use chrono::{DateTime, Utc};
use sea_orm::{DatabaseConnection, DbErr};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// What happened to one reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Charged.
    Charged,
    /// The wallet was short: payment due.
    Due,
    /// Still short at the release time: released, its slots freed.
    Released,
    /// Nothing to do: paid, cancelled or claimed by another run meanwhile.
    Skipped,
}

/// What one run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Reservations charged.
    pub charged: u32,
    /// Reservations found short (newly or still).
    pub due: u32,
    /// Reservations released unpaid.
    pub released: u32,
    /// Bookings released because nobody approved them in time.
    pub expired: u32,
}

impl Outcome {
    fn add(&mut self, settled: Settled) {
        match settled {
            Settled::Charged => self.charged += 1,
            Settled::Due => self.due += 1,
            Settled::Released => self.released += 1,
            Settled::Skipped => {}
        }
    }
}

/// Called with the reservation id after its charge is written and before its transaction
/// commits: tests stop the job there to show that a crash leaves nothing behind.
pub type Checkpoint = Arc<dyn Fn(i64) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Settles every reservation whose charge is due at `now` (at most [`db::payments::BATCH`] per run).
#[tracing::instrument(skip_all)]
pub async fn run(
    db: &DatabaseConnection,
    policy: &ChargePolicy,
    now: DateTime<Utc>,
    checkpoint: Option<&Checkpoint>,
) -> Result<Outcome, DbErr> {
    let ids = db::payments::charge_due_ids(db, now).await?;
    let expired = expire_approvals(db, now).await?;
    let mut outcome = settle_all(db, &ids, Some(policy), now, checkpoint).await?;
    outcome.expired = expired;
    Ok(outcome)
}

/// Releases the bookings whose approval did not come in time (at most [`db::payments::BATCH`] per run), each
/// in its own transaction that re-reads it under lock: an approval that won the race stays.
async fn expire_approvals(db: &DatabaseConnection, now: DateTime<Utc>) -> Result<u32, DbErr> {
    let ids = db::payments::approval_expired_ids(db, now).await?;
    let mut expired = 0;
    for id in ids {
        let txn = db::begin_write(db).await?;
        let row = db::reservations::lock_reservation(&txn, id)
            .await?
            .filter(|row| {
                row.status == reservation::Status::Confirmed
                    && row.payment_status == PaymentStatus::AwaitingApproval
                    && row.approval_expires_at.is_some_and(|until| until <= now)
            });
        match row {
            Some(row)
                if db::reservations::withdraw(
                    &txn,
                    &row,
                    now,
                    None,
                    Some(ReleaseReason::ApprovalExpired),
                )
                .await? =>
            {
                let events: Vec<NewEvent> = db::reservations::view_of(&txn, id, now)
                    .await?
                    .map(|view| NewEvent::released(&view, ReleaseReason::ApprovalExpired, 0, now))
                    .into_iter()
                    .collect();
                notify::withdrawn(&txn, id, &events).await?;
                txn.commit().await?;
                expired += 1;
                tracing::info!(reservation.id = id, "booking released: approval expired");
            }
            _ => txn.rollback().await?,
        }
    }
    Ok(expired)
}

/// Tries at once to pay the reservations that `wallet` (a user's or a team's) pays and that are
/// due (credits just arrived). Releasing is left to the job.
pub async fn retry_for(
    db: &DatabaseConnection,
    wallet: crate::domain::ledger::Account,
    now: DateTime<Utc>,
) -> Result<Outcome, DbErr> {
    let ids = db::payments::due_ids_paid_by(db, wallet, now).await?;
    settle_all(db, &ids, None, now, None).await
}

async fn settle_all(
    db: &DatabaseConnection,
    ids: &[i64],
    policy: Option<&ChargePolicy>,
    now: DateTime<Utc>,
    checkpoint: Option<&Checkpoint>,
) -> Result<Outcome, DbErr> {
    let mut outcome = Outcome::default();
    for id in ids {
        let settled = with_retries(|| settle(db, *id, policy, now, checkpoint)).await?;
        tracing::debug!(reservation.id = id, ?settled, "payment job");
        outcome.add(settled);
    }
    Ok(outcome)
}

async fn with_retries<F, Fut>(mut attempt: F) -> Result<Settled, DbErr>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Settled, DbErr>>,
{
    let mut tries = 0;
    loop {
        tries += 1;
        match attempt().await {
            Err(err) if crate::backend::retry::again(tries, &err) => {
                crate::backend::retry::pause(tries).await;
            }
            other => return other,
        }
    }
}

/// Settles reservation `id`: charge it, or mark it due, or release it (only with a `policy`).
async fn settle(
    db: &DatabaseConnection,
    id: i64,
    policy: Option<&ChargePolicy>,
    now: DateTime<Utc>,
    checkpoint: Option<&Checkpoint>,
) -> Result<Settled, DbErr> {
    let txn = db::begin_write(db).await?;
    let Some(row) = db::payments::claim(&txn, id).await? else {
        txn.rollback().await?;
        return Ok(Settled::Skipped);
    };
    match db::ledger::charge(&txn, &row, None, now).await {
        Ok(_) => {
            db::payments::set_payment_status(&txn, id, PaymentStatus::Paid).await?;
            if let Some(view) = db::reservations::view_of(&txn, id, now).await? {
                let charged = NewEvent::charged(&view, row.price_minor, now);
                notify::record(&txn, &[charged]).await?;
            }
            if let Some(checkpoint) = checkpoint {
                checkpoint(id).await;
            }
            txn.commit().await?;
            tracing::info!(reservation.id = id, "reservation charged before its start");
            Ok(Settled::Charged)
        }
        Err(PostError::InsufficientFunds { missing, .. }) => {
            // The failed posting wrote nothing; the transaction is still usable on both stores
            // (the guarded UPDATE matched no row, it did not fail).
            if policy.is_some_and(|policy| now >= policy.release_at(row.start_at)) {
                if db::reservations::withdraw(&txn, &row, now, None, Some(ReleaseReason::Unpaid))
                    .await?
                {
                    let events: Vec<NewEvent> = db::reservations::view_of(&txn, id, now)
                        .await?
                        .map(|view| NewEvent::released(&view, ReleaseReason::Unpaid, 0, now))
                        .into_iter()
                        .collect();
                    notify::withdrawn(&txn, id, &events).await?;
                    txn.commit().await?;
                    tracing::info!(reservation.id = id, "unpaid reservation released");
                    return Ok(Settled::Released);
                }
                txn.rollback().await?;
                return Ok(Settled::Skipped);
            }
            db::payments::set_payment_status(&txn, id, PaymentStatus::Due).await?;
            // Told once, when the charge first fails (a due reservation is tried again on every
            // run until credits arrive or it is released).
            if row.payment_status == PaymentStatus::Pending
                && let Some(policy) = policy
                && let Some(view) = db::reservations::view_of(&txn, id, now).await?
            {
                let due = NewEvent::payment_due(&view, policy.release_at(row.start_at), now);
                notify::record(&txn, &[due]).await?;
            }
            txn.commit().await?;
            tracing::info!(
                reservation.id = id,
                missing = missing.minor(),
                "payment due"
            );
            Ok(Settled::Due)
        }
        Err(PostError::Db(err)) => Err(err),
    }
}
