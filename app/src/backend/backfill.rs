//! Backfill: a batch or burst booking that asked to start early (`start_early`) is brought
//! forward, on the same GPUs and at the same length and price, to the next quarter hour once
//! those GPUs are free from then until its length is over: a cancellation, a release or an idle
//! reclaim freed them.
//!
//! The watch job runs it after it has held windows for watchers, so people who watch for a
//! window are served first: a window held for a watch stays theirs. Bookings are taken in the
//! order they were made (first asked, first moved). Each move is one transaction that re-reads
//! the booking and locks its GPUs (the booking engine's lock order), checks them again, charges
//! a booking that was to be charged before its start (a wallet that cannot pay leaves it where it
//! was), moves it, and tells its holder, with its reminders moved along.

use crate::backend::clock::Clock;
use crate::backend::db::ledger::PostError;
use crate::backend::db::{self, begin_write};
use crate::backend::entity::reservation;
use crate::backend::notify;
use crate::domain::notify::NewEvent;
use crate::domain::reservation::PaymentStatus;
use crate::domain::schedule::{Occupancy, Window, fits};
use chrono::{DateTime, Utc};
use sea_orm::{DatabaseConnection, DatabaseTransaction, DbErr};
use std::collections::HashMap;

/// Most bookings one run considers.
pub const BATCH: u64 = 200;

/// What one run did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Bookings brought forward.
    pub moved: u32,
    /// Bookings whose GPUs were free but whose wallet could not pay them now.
    pub unpaid: u32,
}

/// Brings forward every booking that asked to start early and whose GPUs are free from the next
/// quarter hour for its whole length. "Now" is read from `clock` for each booking once its locks
/// are held: a move made after a cancellation that waited for it starts from the time it is
/// made, not from the run's start.
#[tracing::instrument(skip_all)]
pub async fn run(db: &DatabaseConnection, clock: &dyn Clock) -> Result<Outcome, DbErr> {
    let mut outcome = Outcome::default();
    let after = crate::domain::schedule::slot_ceil(clock.now());
    for id in db::reservations::start_early_ids(db, after, BATCH).await? {
        let mut tries = 0;
        let moved = loop {
            tries += 1;
            match try_forward(db, id, clock).await {
                Err(err) if crate::backend::retry::again(tries, &err) => {
                    crate::backend::retry::pause(tries).await;
                }
                other => break other?,
            }
        };
        match moved {
            Moved::Yes => outcome.moved += 1,
            Moved::Unpaid => outcome.unpaid += 1,
            Moved::No => {}
        }
    }
    Ok(outcome)
}

/// How one booking fared.
enum Moved {
    Yes,
    Unpaid,
    No,
}

/// Brings booking `id` forward if it still asks to and its GPUs are free, in one transaction.
async fn try_forward(db: &DatabaseConnection, id: i64, clock: &dyn Clock) -> Result<Moved, DbErr> {
    let txn = begin_write(db).await?;
    // Its GPUs, then its row, under lock (as a cancellation takes them).
    let row = db::reservations::lock_reservation(&txn, id).await?;
    let now = clock.now();
    let row = row.filter(|row| {
        row.status == reservation::Status::Confirmed
            && row.start_early
            && !matches!(
                row.payment_status,
                PaymentStatus::AwaitingApproval | PaymentStatus::Due
            )
    });
    let Some(row) = row else {
        txn.rollback().await?;
        return Ok(Moved::No);
    };
    let stored = db::reservations::stored_window(&row)?;
    let Some(window) = stored.brought_forward(now) else {
        txn.rollback().await?;
        return Ok(Moved::No);
    };
    let gpus = db::reservations::gpus_held_by(&txn, &[id]).await?;
    let quarters = u8::try_from(row.quarters).unwrap_or(u8::MAX);
    if gpus.is_empty() || !free_for(&txn, id, &gpus, &window, quarters, now).await? {
        txn.rollback().await?;
        return Ok(Moved::No);
    }
    if matches!(row.payment_status, PaymentStatus::Pending) {
        // It starts now: it is paid now, or it stays where it was.
        match db::ledger::charge(&txn, &row, None, now).await {
            Ok(_) => {
                db::payments::set_payment_status(&txn, id, PaymentStatus::Paid).await?;
            }
            Err(PostError::InsufficientFunds { .. }) => {
                txn.rollback().await?;
                tracing::info!(
                    reservation.id = id,
                    "not brought forward: the wallet is short"
                );
                return Ok(Moved::Unpaid);
            }
            Err(PostError::Db(err)) => return Err(err),
        }
    }
    db::reservations::bring_forward(&txn, &row, &gpus, &window).await?;
    if let Some(view) = db::reservations::view_of(&txn, id, now).await? {
        let mut events = Vec::new();
        if matches!(row.payment_status, PaymentStatus::Pending) {
            events.push(NewEvent::charged(&view, row.price_minor, now));
        }
        events.extend(NewEvent::started_early(&view, row.start_at, now));
        // The reminders of the old window go; those of the new one come with the notice.
        db::notify::drop_reminders(&txn, id).await?;
        notify::record(&txn, &events).await?;
    }
    txn.commit().await?;
    tracing::info!(
        reservation.id = id,
        from = %row.start_at,
        to = %window.start(),
        "booking brought forward into freed GPUs"
    );
    Ok(Moved::Yes)
}

/// Whether `gpu_ids` have room for `quarters` more during `window`, counting every booking but
/// `id` itself and maintenance, and no window on them is held for a watcher.
async fn free_for(
    txn: &DatabaseTransaction,
    id: i64,
    gpu_ids: &[i64],
    window: &Window,
    quarters: u8,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    if !db::watches::holds_on(txn, gpu_ids, window, now)
        .await?
        .is_empty()
    {
        return Ok(false);
    }
    let (holds, maintenance) = tokio::try_join!(
        db::reservations::holds_on(txn, gpu_ids, window),
        db::reservations::maintenance_on(txn, gpu_ids, window)
    )?;
    let mut busy: HashMap<i64, Vec<Occupancy>> = HashMap::new();
    for hold in holds.into_iter().filter(|hold| hold.reservation_id != id) {
        busy.entry(hold.gpu_id).or_default().push(Occupancy {
            window: hold.window,
            quarters: hold.quarters,
        });
    }
    for (gpu_id, occupancy) in maintenance {
        busy.entry(gpu_id).or_default().push(occupancy);
    }
    Ok(gpu_ids.iter().all(|gpu| {
        fits(
            busy.get(gpu).map(Vec::as_slice).unwrap_or_default(),
            window,
            quarters,
        )
    }))
}
