//! The payment job's queries (the job itself, which decides, is `backend::payment_job`) and
//! what is unpaid: reservations due, held or waiting for credits.

use crate::backend::entity::reservation;
use crate::domain::reservation::PaymentStatus;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::sea_query::{LockBehavior, LockType};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect,
};

/// What is still to be paid: charged later, or short when it was charged.
const UNPAID: [PaymentStatus; 2] = [PaymentStatus::Pending, PaymentStatus::Due];

/// Most reservations one run of the job settles, and most listed as due.
pub const BATCH: u64 = 500;

/// Confirmed, unpaid (pending or due) reservations whose charge is due at `now`, the earliest
/// charge first (at most [`BATCH`]).
pub async fn charge_due_ids(
    db: &impl ConnectionTrait,
    now: DateTime<Utc>,
) -> Result<Vec<i64>, DbErr> {
    reservation::Entity::find()
        .select_only()
        .column(reservation::Column::Id)
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::PaymentStatus.is_in(UNPAID))
        .filter(reservation::Column::ChargeAt.lte(now))
        // A booking paid by card is charged to its card first (card_payments.rs).
        .filter(
            sea_orm::Condition::any()
                .add(reservation::Column::CardId.is_null())
                .add(reservation::Column::PaymentStatus.ne(PaymentStatus::Pending)),
        )
        .order_by_asc(reservation::Column::ChargeAt)
        .order_by_asc(reservation::Column::Id)
        .limit(BATCH)
        .into_tuple()
        .all(db)
        .await
}

/// Confirmed bookings still waiting for approval whose approval expired by `now` (at most
/// [`BATCH`]).
pub async fn approval_expired_ids(
    db: &impl ConnectionTrait,
    now: DateTime<Utc>,
) -> Result<Vec<i64>, DbErr> {
    reservation::Entity::find()
        .select_only()
        .column(reservation::Column::Id)
        .filter(reservation::Column::ApprovalExpiresAt.lte(now))
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::PaymentStatus.eq(PaymentStatus::AwaitingApproval))
        .order_by_asc(reservation::Column::ApprovalExpiresAt)
        .limit(BATCH)
        .into_tuple()
        .all(db)
        .await
}

/// Confirmed reservations that `wallet` (a user's or a team's) pays and whose payment is due,
/// the earliest charge first.
pub async fn due_ids_paid_by(
    db: &impl ConnectionTrait,
    wallet: crate::domain::ledger::Account,
    now: DateTime<Utc>,
) -> Result<Vec<i64>, DbErr> {
    let Some(payer) = paid_by(wallet) else {
        return Ok(Vec::new());
    };
    reservation::Entity::find()
        .select_only()
        .column(reservation::Column::Id)
        .filter(payer)
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::PaymentStatus.eq(PaymentStatus::Due))
        // Not while a card payment for it is under way (card_payments.rs).
        .filter(
            sea_orm::Condition::any()
                .add(reservation::Column::CardId.is_null())
                .add(reservation::Column::ChargeAt.lte(now)),
        )
        .order_by_asc(reservation::Column::ChargeAt)
        .order_by_asc(reservation::Column::Id)
        .into_tuple()
        .all(db)
        .await
}

/// Claims reservation `id` if it is still confirmed and unpaid: on PostgreSQL its row stays
/// locked until `txn` ends, and a row another run holds is skipped rather than waited for (on
/// SQLite the write transaction already excludes every other writer).
pub async fn claim(
    txn: &DatabaseTransaction,
    id: i64,
) -> Result<Option<reservation::Model>, DbErr> {
    unpaid_locked(txn, id, Some(LockBehavior::SkipLocked)).await
}

/// Reservation `id` if it is still confirmed and unpaid, locked until `txn` ends like
/// [`claim`], but waiting for a transaction that holds it (a job's run that looked at it and
/// let go) instead of skipping it. For a caller that holds no other lock yet.
pub async fn claim_waiting(
    txn: &DatabaseTransaction,
    id: i64,
) -> Result<Option<reservation::Model>, DbErr> {
    unpaid_locked(txn, id, None).await
}

/// [`claim`] and [`claim_waiting`]: the lock taken with `behavior` (none: it waits).
async fn unpaid_locked(
    txn: &DatabaseTransaction,
    id: i64,
    behavior: Option<LockBehavior>,
) -> Result<Option<reservation::Model>, DbErr> {
    let mut query = reservation::Entity::find_by_id(id)
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::PaymentStatus.is_in(UNPAID));
    if txn.get_database_backend() == DbBackend::Postgres {
        query = match behavior {
            Some(behavior) => query.lock_with_behavior(LockType::Update, behavior),
            None => query.lock(LockType::Update),
        };
    }
    query.one(txn).await
}

/// Sets reservation `id`'s payment status.
pub async fn set_payment_status(
    txn: &DatabaseTransaction,
    id: i64,
    status: PaymentStatus,
) -> Result<(), DbErr> {
    reservation::Entity::update_many()
        .col_expr(reservation::Column::PaymentStatus, Expr::value(status))
        .filter(reservation::Column::Id.eq(id))
        .exec(txn)
        .await?;
    Ok(())
}

/// Confirmed reservations whose payment is due, soonest release first (at most 500).
pub async fn due(db: &impl ConnectionTrait) -> Result<Vec<reservation::Model>, DbErr> {
    reservation::Entity::find()
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::PaymentStatus.eq(PaymentStatus::Due))
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
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::PaymentStatus.is_in(UNPAID))
        // A card pays these, not the wallet.
        .filter(reservation::Column::CardId.is_null())
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
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::PaymentStatus.is_in(UNPAID))
        .filter(reservation::Column::CardId.is_null())
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
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::PaymentStatus.is_in(UNPAID))
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
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::PaymentStatus.eq(PaymentStatus::Due))
        .count(db)
        .await?;
    Ok(u32::try_from(count).unwrap_or(u32::MAX))
}
