//! Queries of card payments: Stripe customers, saved cards, payments asked of Stripe, and the
//! webhook events already processed.

use crate::backend::entity::{
    card_payment, card_refund, payment_card, reservation, stripe_customer, stripe_event,
};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect,
};

/// Payment states.
pub const PENDING: &str = "pending";
/// The bank asks the holder to authenticate.
pub const REQUIRES_ACTION: &str = "requires_action";
/// Confirmed by Stripe and booked in the ledger.
pub const SUCCEEDED: &str = "succeeded";
/// Declined, or authentication failed.
pub const FAILED: &str = "failed";
/// A payment's purpose: credits for the wallet.
pub const TOP_UP: &str = "top_up";
/// A payment's purpose: a booking (the credits it adds pay it at once).
pub const BOOKING: &str = "booking";

/// User `user_id`'s Stripe customer, if made.
pub async fn customer_of(db: &impl ConnectionTrait, user_id: i64) -> Result<Option<String>, DbErr> {
    Ok(stripe_customer::Entity::find_by_id(user_id)
        .one(db)
        .await?
        .map(|row| row.customer_id))
}

/// Records user `user_id`'s customer; the first one recorded wins (two tabs at once).
pub async fn insert_customer(
    db: &impl ConnectionTrait,
    user_id: i64,
    customer_id: &str,
    at: DateTime<Utc>,
) -> Result<String, DbErr> {
    stripe_customer::Entity::insert(stripe_customer::ActiveModel {
        user_id: Set(user_id),
        customer_id: Set(customer_id.to_owned()),
        created_at: Set(at),
    })
    .on_conflict(
        OnConflict::column(stripe_customer::Column::UserId)
            .do_nothing()
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    customer_of(db, user_id)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("stripe_customers.user_id={user_id}")))
}

/// A card as saved.
#[derive(Debug, Clone)]
pub struct NewCard<'a> {
    /// Whose.
    pub user_id: i64,
    /// `pm_…`.
    pub payment_method_id: &'a str,
    /// Brand.
    pub brand: &'a str,
    /// Last four.
    pub last4: &'a str,
    /// Expiry month.
    pub exp_month: i32,
    /// Expiry year.
    pub exp_year: i32,
    /// Saved.
    pub at: DateTime<Utc>,
}

/// Saves a card once (the same PaymentMethod again leaves the row as it is) and answers its row.
pub async fn insert_card(
    db: &impl ConnectionTrait,
    card: &NewCard<'_>,
) -> Result<payment_card::Model, DbErr> {
    payment_card::Entity::insert(payment_card::ActiveModel {
        user_id: Set(card.user_id),
        payment_method_id: Set(card.payment_method_id.to_owned()),
        brand: Set(card.brand.to_owned()),
        last4: Set(card.last4.to_owned()),
        exp_month: Set(card.exp_month),
        exp_year: Set(card.exp_year),
        created_at: Set(card.at),
        removed_at: Set(None),
        ..Default::default()
    })
    .on_conflict(
        OnConflict::column(payment_card::Column::PaymentMethodId)
            .do_nothing()
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    payment_card::Entity::find()
        .filter(payment_card::Column::PaymentMethodId.eq(card.payment_method_id))
        .one(db)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(card.payment_method_id.to_owned()))
}

/// User `user_id`'s saved cards, newest first.
pub async fn cards_of(
    db: &impl ConnectionTrait,
    user_id: i64,
) -> Result<Vec<payment_card::Model>, DbErr> {
    payment_card::Entity::find()
        .filter(payment_card::Column::UserId.eq(user_id))
        .filter(payment_card::Column::RemovedAt.is_null())
        .order_by_desc(payment_card::Column::Id)
        .all(db)
        .await
}

/// All of user `user_id`'s cards, removed ones too (to name the card of old payments).
pub async fn all_cards_of(
    db: &impl ConnectionTrait,
    user_id: i64,
) -> Result<Vec<payment_card::Model>, DbErr> {
    payment_card::Entity::find()
        .filter(payment_card::Column::UserId.eq(user_id))
        .all(db)
        .await
}

/// Card `id` if it is `user_id`'s and not removed.
pub async fn card(
    db: &impl ConnectionTrait,
    user_id: i64,
    id: i64,
) -> Result<Option<payment_card::Model>, DbErr> {
    payment_card::Entity::find_by_id(id)
        .filter(payment_card::Column::UserId.eq(user_id))
        .filter(payment_card::Column::RemovedAt.is_null())
        .one(db)
        .await
}

/// Card `id`, removed or not (what a payment was made with).
pub async fn card_by_id(
    db: &impl ConnectionTrait,
    id: i64,
) -> Result<Option<payment_card::Model>, DbErr> {
    payment_card::Entity::find_by_id(id).one(db).await
}

/// Marks card `id` removed.
pub async fn remove_card(
    db: &impl ConnectionTrait,
    id: i64,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    payment_card::Entity::update_many()
        .col_expr(
            payment_card::Column::RemovedAt,
            sea_orm::sea_query::Expr::value(at),
        )
        .filter(payment_card::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// A payment about to be asked of Stripe.
#[derive(Debug, Clone)]
pub struct NewPayment<'a> {
    /// Who pays.
    pub user_id: i64,
    /// `top_up` or `booking`.
    pub purpose: &'a str,
    /// The booking it pays.
    pub reservation_id: Option<i64>,
    /// Where its refunds go: `card` or `credits`.
    pub refund_to: &'a str,
    /// The card.
    pub card_id: i64,
    /// Minor units.
    pub amount_minor: i64,
    /// ISO code.
    pub currency: &'a str,
    /// Asked.
    pub at: DateTime<Utc>,
}

/// Records a payment as pending (before Stripe is asked, so a crash leaves a trace).
pub async fn insert_payment(
    db: &impl ConnectionTrait,
    payment: &NewPayment<'_>,
) -> Result<card_payment::Model, DbErr> {
    card_payment::ActiveModel {
        user_id: Set(payment.user_id),
        purpose: Set(payment.purpose.to_owned()),
        reservation_id: Set(payment.reservation_id),
        refund_to: Set(payment.refund_to.to_owned()),
        charge_id: Set(None),
        card_id: Set(payment.card_id),
        amount_minor: Set(payment.amount_minor),
        currency: Set(payment.currency.to_owned()),
        intent_id: Set(None),
        status: Set(PENDING.to_owned()),
        failure: Set(None),
        ledger_transaction_id: Set(None),
        created_at: Set(payment.at),
        settled_at: Set(None),
        ..Default::default()
    }
    .insert(db)
    .await
}

/// Payment `id`.
pub async fn payment(
    db: &impl ConnectionTrait,
    id: i64,
) -> Result<Option<card_payment::Model>, DbErr> {
    card_payment::Entity::find_by_id(id).one(db).await
}

/// Payment `id`, locked for the caller's transaction on PostgreSQL (SQLite's write
/// transaction holds the whole store).
pub async fn lock_payment(
    db: &impl ConnectionTrait,
    id: i64,
) -> Result<Option<card_payment::Model>, DbErr> {
    let mut query = card_payment::Entity::find_by_id(id);
    if db.get_database_backend() == sea_orm::DbBackend::Postgres {
        query = query.lock_exclusive();
    }
    query.one(db).await
}

/// The payment of PaymentIntent `intent_id`.
pub async fn payment_of_intent(
    db: &impl ConnectionTrait,
    intent_id: &str,
) -> Result<Option<card_payment::Model>, DbErr> {
    card_payment::Entity::find()
        .filter(card_payment::Column::IntentId.eq(intent_id))
        .one(db)
        .await
}

/// User `user_id`'s payments, newest first, at most `limit`.
pub async fn payments_of(
    db: &impl ConnectionTrait,
    user_id: i64,
    limit: u64,
) -> Result<Vec<card_payment::Model>, DbErr> {
    card_payment::Entity::find()
        .filter(card_payment::Column::UserId.eq(user_id))
        .order_by_desc(card_payment::Column::Id)
        .limit(limit)
        .all(db)
        .await
}

/// Payments still open (pending or waiting for authentication) asked before `before`, oldest
/// first, at most `limit`.
pub async fn open_payments(
    db: &impl ConnectionTrait,
    before: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<card_payment::Model>, DbErr> {
    card_payment::Entity::find()
        .filter(card_payment::Column::Status.is_in([PENDING, REQUIRES_ACTION]))
        .filter(card_payment::Column::CreatedAt.lt(before))
        .order_by_asc(card_payment::Column::Id)
        .limit(limit)
        .all(db)
        .await
}

/// What Stripe said of a payment.
#[derive(Debug, Clone)]
pub struct PaymentUpdate<'a> {
    /// `pi_…`.
    pub intent_id: Option<&'a str>,
    /// The new state.
    pub status: &'a str,
    /// Why it failed.
    pub failure: Option<&'a str>,
    /// The grant that booked it.
    pub ledger_transaction_id: Option<i64>,
    /// When it settled (succeeded or failed).
    pub settled_at: Option<DateTime<Utc>>,
    /// Stripe's charge (`ch_…`).
    pub charge_id: Option<&'a str>,
}

/// Writes what Stripe said of payment `id`.
pub async fn update_payment(
    db: &impl ConnectionTrait,
    id: i64,
    update: &PaymentUpdate<'_>,
) -> Result<(), DbErr> {
    let mut row = card_payment::ActiveModel {
        id: Set(id),
        status: Set(update.status.to_owned()),
        failure: Set(update.failure.map(str::to_owned)),
        settled_at: Set(update.settled_at),
        ..Default::default()
    };
    if let Some(intent) = update.intent_id {
        row.intent_id = Set(Some(intent.to_owned()));
    }
    if let Some(transaction) = update.ledger_transaction_id {
        row.ledger_transaction_id = Set(Some(transaction));
    }
    if let Some(charge) = update.charge_id {
        row.charge_id = Set(Some(charge.to_owned()));
    }
    row.update(db).await?;
    Ok(())
}

/// Claims webhook event `id` for the caller's transaction: false when it was processed
/// already (a replay).
pub async fn claim_event(
    db: &impl ConnectionTrait,
    id: &str,
    kind: &str,
    at: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let inserted = stripe_event::Entity::insert(stripe_event::ActiveModel {
        id: Set(id.to_owned()),
        kind: Set(kind.to_owned()),
        received_at: Set(at),
    })
    .on_conflict(
        OnConflict::column(stripe_event::Column::Id)
            .do_nothing()
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    Ok(inserted > 0)
}

/// The latest card payment made for booking `reservation_id`.
pub async fn latest_for_booking(
    db: &impl ConnectionTrait,
    reservation_id: i64,
) -> Result<Option<card_payment::Model>, DbErr> {
    card_payment::Entity::find()
        .filter(card_payment::Column::ReservationId.eq(reservation_id))
        .filter(card_payment::Column::Purpose.eq(BOOKING))
        .order_by_desc(card_payment::Column::Id)
        .one(db)
        .await
}

/// The card payments that paid booking `reservation_id` (succeeded), oldest first.
pub async fn paid_for_booking(
    db: &impl ConnectionTrait,
    reservation_id: i64,
) -> Result<Vec<card_payment::Model>, DbErr> {
    card_payment::Entity::find()
        .filter(card_payment::Column::ReservationId.eq(reservation_id))
        .filter(card_payment::Column::Purpose.eq(BOOKING))
        .filter(card_payment::Column::Status.eq(SUCCEEDED))
        .order_by_asc(card_payment::Column::Id)
        .all(db)
        .await
}

/// Confirmed bookings paid by card whose charge before the start is due at `now` (at most
/// `limit`), the earliest first.
pub async fn card_charge_due(
    db: &impl ConnectionTrait,
    now: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<i64>, DbErr> {
    reservation::Entity::find()
        .select_only()
        .column(reservation::Column::Id)
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(
            reservation::Column::PaymentStatus
                .eq(crate::domain::reservation::PaymentStatus::Pending),
        )
        .filter(reservation::Column::CardId.is_not_null())
        .filter(reservation::Column::ChargeAt.lte(now))
        .order_by_asc(reservation::Column::ChargeAt)
        .order_by_asc(reservation::Column::Id)
        .limit(limit)
        .into_tuple()
        .all(db)
        .await
}

/// A refund about to be booked out of the wallet and sent to the card.
#[derive(Debug, Clone, Copy)]
pub struct NewRefund {
    /// The card payment refunded.
    pub payment_id: i64,
    /// Whose card.
    pub user_id: i64,
    /// The booking refunded.
    pub reservation_id: Option<i64>,
    /// Minor units.
    pub amount_minor: i64,
    /// The deduction that took it out of the wallet.
    pub ledger_transaction_id: i64,
    /// Booked.
    pub at: DateTime<Utc>,
}

/// Records a refund to a card as pending.
pub async fn insert_refund(
    db: &impl ConnectionTrait,
    refund: &NewRefund,
) -> Result<card_refund::Model, DbErr> {
    card_refund::ActiveModel {
        payment_id: Set(refund.payment_id),
        user_id: Set(refund.user_id),
        reservation_id: Set(refund.reservation_id),
        amount_minor: Set(refund.amount_minor),
        refund_id: Set(None),
        status: Set(PENDING.to_owned()),
        failure: Set(None),
        ledger_transaction_id: Set(refund.ledger_transaction_id),
        created_at: Set(refund.at),
        settled_at: Set(None),
        ..Default::default()
    }
    .insert(db)
    .await
}

/// What the refunds to its card took of payment `payment_id` (pending or sent), minor units.
pub async fn refunded_of(db: &impl ConnectionTrait, payment_id: i64) -> Result<i64, DbErr> {
    Ok(card_refund::Entity::find()
        .filter(card_refund::Column::PaymentId.eq(payment_id))
        .filter(card_refund::Column::Status.ne(FAILED))
        .all(db)
        .await?
        .iter()
        .map(|r| r.amount_minor)
        .sum())
}

/// Refund `id`, locked for the caller's transaction on PostgreSQL.
pub async fn lock_refund(
    db: &impl ConnectionTrait,
    id: i64,
) -> Result<Option<card_refund::Model>, DbErr> {
    let mut query = card_refund::Entity::find_by_id(id);
    if db.get_database_backend() == sea_orm::DbBackend::Postgres {
        query = query.lock_exclusive();
    }
    query.one(db).await
}

/// Refunds not sent to Stripe yet, oldest first, at most `limit`.
pub async fn pending_refunds(
    db: &impl ConnectionTrait,
    limit: u64,
) -> Result<Vec<card_refund::Model>, DbErr> {
    card_refund::Entity::find()
        .filter(card_refund::Column::Status.eq(PENDING))
        .order_by_asc(card_refund::Column::Id)
        .limit(limit)
        .all(db)
        .await
}

/// Writes what Stripe said of refund `id`.
pub async fn settle_refund(
    db: &impl ConnectionTrait,
    id: i64,
    status: &str,
    refund_id: Option<&str>,
    failure: Option<&str>,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    card_refund::ActiveModel {
        id: Set(id),
        status: Set(status.to_owned()),
        refund_id: Set(refund_id.map(str::to_owned)),
        failure: Set(failure.map(str::to_owned)),
        settled_at: Set(Some(at)),
        ..Default::default()
    }
    .update(db)
    .await?;
    Ok(())
}

/// User `user_id`'s refunds to cards, newest first, at most `limit`.
pub async fn refunds_of(
    db: &impl ConnectionTrait,
    user_id: i64,
    limit: u64,
) -> Result<Vec<card_refund::Model>, DbErr> {
    card_refund::Entity::find()
        .filter(card_refund::Column::UserId.eq(user_id))
        .order_by_desc(card_refund::Column::Id)
        .limit(limit)
        .all(db)
        .await
}

/// Payments that succeeded since `since`.
pub async fn succeeded_since(
    db: &impl ConnectionTrait,
    since: DateTime<Utc>,
) -> Result<Vec<card_payment::Model>, DbErr> {
    card_payment::Entity::find()
        .filter(card_payment::Column::Status.eq(SUCCEEDED))
        .filter(card_payment::Column::SettledAt.gte(since))
        .all(db)
        .await
}

/// Refunds sent to Stripe since `since`.
pub async fn refunds_sent_since(
    db: &impl ConnectionTrait,
    since: DateTime<Utc>,
) -> Result<Vec<card_refund::Model>, DbErr> {
    card_refund::Entity::find()
        .filter(card_refund::Column::Status.eq(SUCCEEDED))
        .filter(card_refund::Column::SettledAt.gte(since))
        .all(db)
        .await
}

/// Whether a payment asked of Stripe since `since` is still open (pending or waiting for
/// authentication): its charge may be at Stripe before Berth has written it down.
pub async fn payment_in_flight_since(
    db: &impl ConnectionTrait,
    since: DateTime<Utc>,
) -> Result<bool, DbErr> {
    Ok(card_payment::Entity::find()
        .select_only()
        .column(card_payment::Column::Id)
        .filter(card_payment::Column::Status.is_in([PENDING, REQUIRES_ACTION]))
        .filter(card_payment::Column::CreatedAt.gte(since))
        .into_tuple::<i64>()
        .one(db)
        .await?
        .is_some())
}

/// Whether a refund booked since `since` is not sent yet: it may be at Stripe before Berth has
/// written it down.
pub async fn refund_in_flight_since(
    db: &impl ConnectionTrait,
    since: DateTime<Utc>,
) -> Result<bool, DbErr> {
    Ok(card_refund::Entity::find()
        .select_only()
        .column(card_refund::Column::Id)
        .filter(card_refund::Column::Status.eq(PENDING))
        .filter(card_refund::Column::CreatedAt.gte(since))
        .into_tuple::<i64>()
        .one(db)
        .await?
        .is_some())
}

/// The payment whose Stripe charge is `charge_id`.
pub async fn payment_of_charge(
    db: &impl ConnectionTrait,
    charge_id: &str,
) -> Result<Option<card_payment::Model>, DbErr> {
    card_payment::Entity::find()
        .filter(card_payment::Column::ChargeId.eq(charge_id))
        .one(db)
        .await
}

/// The refund Stripe knows as `refund_id`.
pub async fn refund_of_stripe(
    db: &impl ConnectionTrait,
    refund_id: &str,
) -> Result<Option<card_refund::Model>, DbErr> {
    card_refund::Entity::find()
        .filter(card_refund::Column::RefundId.eq(refund_id))
        .one(db)
        .await
}

/// Sets booking `reservation_id`'s card and when it is looked at next (`charge_at`), with its
/// payment status.
pub async fn set_booking_card(
    db: &impl ConnectionTrait,
    reservation_id: i64,
    card_id: i64,
    status: crate::domain::reservation::PaymentStatus,
    charge_at: DateTime<Utc>,
) -> Result<(), DbErr> {
    use sea_orm::sea_query::Expr;
    reservation::Entity::update_many()
        .col_expr(reservation::Column::CardId, Expr::value(card_id))
        .col_expr(reservation::Column::PaymentStatus, Expr::value(status))
        .col_expr(reservation::Column::ChargeAt, Expr::value(charge_at))
        .filter(reservation::Column::Id.eq(reservation_id))
        .exec(db)
        .await?;
    Ok(())
}
