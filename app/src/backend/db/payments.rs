//! The payment job: charges reservations booked to be paid before their start, marks the ones
//! whose owner's wallet is short as payment due (retried on every run and as soon as credits
//! arrive), and releases those still unpaid shortly before their start.
//!
//! Exactly once: each reservation is settled in its own write transaction that claims the row
//! (PostgreSQL: `FOR UPDATE SKIP LOCKED`, so replicas running the job at once take different
//! rows and never wait on each other; SQLite: the `IMMEDIATE` transaction's write lock), checks
//! that it is still confirmed and unpaid, and writes the charge and the new payment status
//! together. A job that dies half-way leaves the transaction uncommitted: nothing of it stays,
//! and the next run starts that reservation afresh.

use crate::backend::db::begin_write;
use crate::backend::db::ledger::PostError;
use crate::backend::db::reservations::withdraw;
use crate::backend::entity::reservation;
use crate::domain::payment::ChargePolicy;
use crate::domain::reservation::{PaymentStatus, ReleaseReason};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr,
    EntityTrait, FromQueryResult, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Statement,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Most reservations one run settles (the rest wait for the next run).
const BATCH: u64 = 500;

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

/// Settles every reservation whose charge is due at `now` (at most [`BATCH`] per run).
#[tracing::instrument(skip_all)]
pub async fn run(
    db: &DatabaseConnection,
    policy: &ChargePolicy,
    now: DateTime<Utc>,
    checkpoint: Option<&Checkpoint>,
) -> Result<Outcome, DbErr> {
    let ids: Vec<i64> = reservation::Entity::find()
        .select_only()
        .column(reservation::Column::Id)
        .filter(reservation::Column::Status.eq("confirmed"))
        .filter(reservation::Column::PaymentStatus.is_in(["pending", "due"]))
        .filter(reservation::Column::ChargeAt.lte(now))
        .order_by_asc(reservation::Column::ChargeAt)
        .order_by_asc(reservation::Column::Id)
        .limit(BATCH)
        .into_tuple()
        .all(db)
        .await?;
    let expired = expire_approvals(db, now).await?;
    let mut outcome = settle_all(db, &ids, Some(policy), now, checkpoint).await?;
    outcome.expired = expired;
    Ok(outcome)
}

/// Releases the bookings whose approval did not come in time (at most [`BATCH`] per run), each
/// in its own transaction that re-reads it under lock: an approval that won the race stays.
async fn expire_approvals(db: &DatabaseConnection, now: DateTime<Utc>) -> Result<u32, DbErr> {
    let ids: Vec<i64> = reservation::Entity::find()
        .select_only()
        .column(reservation::Column::Id)
        .filter(reservation::Column::ApprovalExpiresAt.lte(now))
        .filter(reservation::Column::Status.eq("confirmed"))
        .filter(reservation::Column::PaymentStatus.eq(PaymentStatus::AwaitingApproval.as_str()))
        .order_by_asc(reservation::Column::ApprovalExpiresAt)
        .limit(BATCH)
        .into_tuple()
        .all(db)
        .await?;
    let mut expired = 0;
    for id in ids {
        let txn = begin_write(db).await?;
        let row = crate::backend::db::reservations::lock_reservation(&txn, id)
            .await?
            .filter(|row| {
                row.status == "confirmed"
                    && row.payment_status == PaymentStatus::AwaitingApproval.as_str()
                    && row.approval_expires_at.is_some_and(|until| until <= now)
            });
        match row {
            Some(row)
                if withdraw(&txn, &row, now, None, Some(ReleaseReason::ApprovalExpired))
                    .await? =>
            {
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
    let Some(payer) = paid_by(wallet) else {
        return Ok(Outcome::default());
    };
    let ids: Vec<i64> = reservation::Entity::find()
        .select_only()
        .column(reservation::Column::Id)
        .filter(payer)
        .filter(reservation::Column::Status.eq("confirmed"))
        .filter(reservation::Column::PaymentStatus.eq("due"))
        .order_by_asc(reservation::Column::ChargeAt)
        .order_by_asc(reservation::Column::Id)
        .into_tuple()
        .all(db)
        .await?;
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

#[derive(Debug, FromQueryResult)]
struct Claimed {
    #[expect(dead_code, reason = "only its presence matters")]
    id: i64,
}

/// Claims reservation `id` if it is still confirmed and unpaid: on PostgreSQL its row stays
/// locked until `txn` ends, and a row another run holds is skipped rather than waited for.
async fn claim(txn: &DatabaseTransaction, id: i64) -> Result<Option<reservation::Model>, DbErr> {
    if txn.get_database_backend() == DbBackend::Postgres {
        let claimed = Claimed::find_by_statement(Statement::from_sql_and_values(
            DbBackend::Postgres,
            "SELECT id FROM reservations WHERE id = $1 AND status = 'confirmed' \
             AND payment_status IN ('pending', 'due') FOR UPDATE SKIP LOCKED",
            [id.into()],
        ))
        .one(txn)
        .await?;
        if claimed.is_none() {
            return Ok(None);
        }
    }
    reservation::Entity::find_by_id(id)
        .filter(reservation::Column::Status.eq("confirmed"))
        .filter(reservation::Column::PaymentStatus.is_in(["pending", "due"]))
        .one(txn)
        .await
}

async fn set_payment_status(
    txn: &DatabaseTransaction,
    id: i64,
    status: PaymentStatus,
) -> Result<(), DbErr> {
    reservation::Entity::update_many()
        .col_expr(
            reservation::Column::PaymentStatus,
            Expr::value(status.as_str()),
        )
        .filter(reservation::Column::Id.eq(id))
        .exec(txn)
        .await?;
    Ok(())
}

/// Settles reservation `id`: charge it, or mark it due, or release it (only with a `policy`).
async fn settle(
    db: &DatabaseConnection,
    id: i64,
    policy: Option<&ChargePolicy>,
    now: DateTime<Utc>,
    checkpoint: Option<&Checkpoint>,
) -> Result<Settled, DbErr> {
    let txn = begin_write(db).await?;
    let Some(row) = claim(&txn, id).await? else {
        txn.rollback().await?;
        return Ok(Settled::Skipped);
    };
    match crate::backend::db::ledger::charge(&txn, &row, None, now).await {
        Ok(_) => {
            set_payment_status(&txn, id, PaymentStatus::Paid).await?;
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
                if withdraw(&txn, &row, now, None, Some(ReleaseReason::Unpaid)).await? {
                    txn.commit().await?;
                    tracing::info!(reservation.id = id, "unpaid reservation released");
                    return Ok(Settled::Released);
                }
                txn.rollback().await?;
                return Ok(Settled::Skipped);
            }
            set_payment_status(&txn, id, PaymentStatus::Due).await?;
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

/// Confirmed reservations whose payment is due, soonest release first (at most 500).
pub async fn due(db: &impl ConnectionTrait) -> Result<Vec<reservation::Model>, DbErr> {
    reservation::Entity::find()
        .filter(reservation::Column::Status.eq("confirmed"))
        .filter(reservation::Column::PaymentStatus.eq("due"))
        .order_by_asc(reservation::Column::StartAt)
        .order_by_asc(reservation::Column::Id)
        .limit(BATCH)
        .all(db)
        .await
}

/// The confirmed reservations that `user_id`'s own wallet pays (not team bookings) and that are
/// not charged yet (pending or due), soonest start first.
pub async fn unpaid_of(
    db: &impl ConnectionTrait,
    user_id: i64,
) -> Result<Vec<reservation::Model>, DbErr> {
    reservation::Entity::find()
        .filter(reservation::Column::OwnerId.eq(user_id))
        .filter(reservation::Column::TeamId.is_null())
        .filter(reservation::Column::Status.eq("confirmed"))
        .filter(reservation::Column::PaymentStatus.is_in(["pending", "due"]))
        .order_by_asc(reservation::Column::StartAt)
        .order_by_asc(reservation::Column::Id)
        .all(db)
        .await
}

/// The reservations that `wallet` pays: a user's own bookings (not team bookings), or a team's
/// bookings; `None` for the platform's accounts.
fn paid_by(wallet: crate::domain::ledger::Account) -> Option<sea_orm::Condition> {
    match (wallet.user_id(), wallet.team_id()) {
        (Some(user), _) => Some(
            sea_orm::Condition::all()
                .add(reservation::Column::OwnerId.eq(user))
                .add(reservation::Column::TeamId.is_null()),
        ),
        (None, Some(team)) => {
            Some(sea_orm::Condition::all().add(reservation::Column::TeamId.eq(team)))
        }
        (None, None) => None,
    }
}

/// What `wallet`'s unpaid reservations hold of it: the prices of the confirmed ones it pays
/// that are not charged yet (pending or due; the same ones [`unpaid_of`] and
/// [`unpaid_of_team`] list), read in one query. Read it under the wallet's lock
/// ([`crate::backend::db::ledger::lock_funds`]) to rely on it for a booking.
pub async fn held_by(
    db: &impl ConnectionTrait,
    wallet: crate::domain::ledger::Account,
) -> Result<crate::domain::money::Money, DbErr> {
    let Some(payer) = paid_by(wallet) else {
        return Ok(crate::domain::money::Money::ZERO);
    };
    let prices: Vec<i64> = reservation::Entity::find()
        .select_only()
        .column(reservation::Column::PriceMinor)
        .filter(payer)
        .filter(reservation::Column::Status.eq("confirmed"))
        .filter(reservation::Column::PaymentStatus.is_in(["pending", "due"]))
        .into_tuple()
        .all(db)
        .await?;
    Ok(crate::domain::money::Money::from_minor(
        prices.into_iter().sum(),
    ))
}

/// What unpaid reservations (from [`unpaid_of`]) hold of their owner's wallet: their prices.
pub fn held(unpaid: &[reservation::Model]) -> crate::domain::money::Money {
    crate::domain::money::Money::from_minor(unpaid.iter().map(|row| row.price_minor).sum())
}

/// The confirmed team bookings of `team_id` not charged yet, soonest start first.
pub async fn unpaid_of_team(
    db: &impl ConnectionTrait,
    team_id: i64,
) -> Result<Vec<reservation::Model>, DbErr> {
    reservation::Entity::find()
        .filter(reservation::Column::TeamId.eq(team_id))
        .filter(reservation::Column::Status.eq("confirmed"))
        .filter(reservation::Column::PaymentStatus.is_in(["pending", "due"]))
        .order_by_asc(reservation::Column::StartAt)
        .order_by_asc(reservation::Column::Id)
        .all(db)
        .await
}

/// How many of the reservations `user_id`'s own wallet pays have their payment due.
pub async fn count_due(db: &impl ConnectionTrait, user_id: i64) -> Result<u32, DbErr> {
    let count = reservation::Entity::find()
        .filter(reservation::Column::OwnerId.eq(user_id))
        .filter(reservation::Column::TeamId.is_null())
        .filter(reservation::Column::Status.eq("confirmed"))
        .filter(reservation::Column::PaymentStatus.eq("due"))
        .count(db)
        .await?;
    Ok(u32::try_from(count).unwrap_or(u32::MAX))
}
