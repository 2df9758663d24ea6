//! Card payments through Stripe: saving a card (a SetupIntent confirmed by Stripe.js on the
//! page, then read back from Stripe: never on the browser's word), removing it, topping up
//! credits with it, and Stripe's webhooks, which alone (with the reconciliation job that asks
//! Stripe for what a lost webhook would have said) book a payment in the ledger.
//!
//! Exactly once: a payment is booked in the write transaction that also marks it `succeeded`
//! and records the webhook event's id, after locking its row; a replayed event, a second
//! webhook for the same payment, or the reconciliation job finding it paid already changes
//! nothing.

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::db::begin_write;
use crate::backend::db::card_payments::{
    BOOKING, FAILED, NewCard, NewPayment, NewRefund, PENDING, PaymentUpdate, REQUIRES_ACTION,
    SUCCEEDED, TOP_UP,
};
use crate::backend::entity::{card_payment, card_refund, payment_card, reservation};
use crate::backend::state::AppState;
use crate::backend::stripe::{self, CardCharge, PaymentIntent, StripeClient, StripeError};
use crate::domain::ledger::{Account, BerthReason, TransactionKind};
use crate::domain::money::Money;
use crate::domain::notify::{NewEvent, ReceiptBrief};
use crate::domain::payment::{CardPayment, CardRefund, CardSetup, RefundTo, SavedCard};
use crate::domain::problem::Problem;
use crate::domain::reservation::PaymentStatus;
use crate::error::AppError;
use chrono::{DateTime, TimeDelta, Utc};
use serde::Deserialize;

/// The provider id recorded with the ledger's card top-ups.
pub const STRIPE_PROVIDER: &str = "stripe";
/// Payments listed on the wallet page.
const PAYMENTS_LISTED: u64 = 50;
/// Why a booking's card payment failed when Stripe did not answer.
const UNREACHABLE: &str = "Stripe could not be reached";
/// Open payments the reconciliation job looks at per run.
const RECONCILE_BATCH: u64 = 100;

fn client(state: &AppState) -> Result<&StripeClient, AppError> {
    state
        .stripe
        .as_ref()
        .ok_or(AppError::Conflict(Problem::CardsOff))
}

/// What a refusal from Stripe means to the caller.
fn stripe_error(err: StripeError) -> AppError {
    match err {
        StripeError::Unreachable(why) => {
            tracing::warn!(error = %why, "Stripe unreachable");
            AppError::Unavailable
        }
        StripeError::Refused {
            status: 402,
            message,
            ..
        } => AppError::Conflict(Problem::CardRefused { reason: message }),
        StripeError::Refused {
            status: 404,
            message,
            ..
        } => AppError::NotFound(message),
        StripeError::Refused {
            status,
            code,
            message,
        } => {
            tracing::error!(status, ?code, %message, "Stripe refused a request");
            AppError::Internal
        }
    }
}

fn saved(row: &payment_card::Model) -> SavedCard {
    SavedCard {
        id: row.id,
        brand: row.brand.clone(),
        last4: row.last4.clone(),
        exp_month: row.exp_month,
        exp_year: row.exp_year,
        created_at: row.created_at,
    }
}

/// The caller's Stripe customer, made at Stripe on first use.
async fn customer(state: &AppState, actor: &Actor) -> Result<String, AppError> {
    if let Some(id) = db::card_payments::customer_of(&state.db, actor.user.id).await? {
        return Ok(id);
    }
    let made = client(state)?
        .create_customer(actor.user.id, actor.user.email.as_str(), &actor.user.name)
        .await
        .map_err(stripe_error)?;
    Ok(db::card_payments::insert_customer(&state.db, actor.user.id, &made.id, state.now()).await?)
}

/// Starts saving a card: a SetupIntent for the caller's customer, for Stripe.js to confirm.
pub async fn start_card_setup(state: &AppState, actor: &Actor) -> Result<CardSetup, AppError> {
    let stripe = client(state)?;
    let customer = customer(state, actor).await?;
    let intent = stripe
        .create_setup_intent(&customer)
        .await
        .map_err(stripe_error)?;
    let settings = stripe.settings();
    Ok(CardSetup {
        client_secret: intent.client_secret.ok_or(AppError::Internal)?,
        setup_intent_id: intent.id,
        publishable_key: settings.publishable_key.clone(),
        js_url: settings.js_url.clone(),
    })
}

/// Saves the card of SetupIntent `setup_intent_id` once Stripe reports it succeeded for the
/// caller's customer; answers the card. Saving it again answers the same card.
pub async fn finish_card_setup(
    state: &AppState,
    actor: &Actor,
    setup_intent_id: &str,
) -> Result<SavedCard, AppError> {
    let stripe = client(state)?;
    let customer = db::card_payments::customer_of(&state.db, actor.user.id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("setup {setup_intent_id}")))?;
    let intent = stripe
        .setup_intent(setup_intent_id)
        .await
        .map_err(|err| match err {
            StripeError::Refused { status: 400, .. } => {
                AppError::NotFound(format!("setup {setup_intent_id}"))
            }
            other => stripe_error(other),
        })?;
    // Another customer's SetupIntent is none of the caller's business.
    if intent.customer.as_deref() != Some(customer.as_str()) {
        return Err(AppError::NotFound(format!("setup {setup_intent_id}")));
    }
    let method = match (intent.status.as_str(), intent.payment_method.as_deref()) {
        ("succeeded", Some(method)) => method.to_owned(),
        (status, _) => {
            return Err(AppError::Conflict(Problem::CardSetupUnfinished {
                status: status.to_owned(),
            }));
        }
    };
    let mut details = stripe.payment_method(&method).await.map_err(stripe_error)?;
    if details.customer.is_none() {
        details = stripe
            .attach(&method, &customer)
            .await
            .map_err(stripe_error)?;
    }
    if details.customer.as_deref() != Some(customer.as_str()) {
        return Err(AppError::NotFound(format!("setup {setup_intent_id}")));
    }
    let card = details
        .card
        .ok_or(AppError::Conflict(Problem::CardSetupUnfinished {
            status: "not_a_card".to_owned(),
        }))?;
    let row = db::card_payments::insert_card(
        &state.db,
        &NewCard {
            user_id: actor.user.id,
            payment_method_id: &method,
            brand: &card.brand,
            last4: &card.last4,
            exp_month: card.exp_month,
            exp_year: card.exp_year,
            at: state.now(),
        },
    )
    .await?;
    if row.user_id != actor.user.id {
        return Err(AppError::NotFound(format!("setup {setup_intent_id}")));
    }
    tracing::info!(user.id = actor.user.id, card.id = row.id, "card saved");
    Ok(saved(&row))
}

/// The caller's saved cards, newest first.
pub async fn cards(state: &AppState, actor: &Actor) -> Result<Vec<SavedCard>, AppError> {
    Ok(db::card_payments::cards_of(&state.db, actor.user.id)
        .await?
        .iter()
        .map(saved)
        .collect())
}

/// Removes the caller's card `id`: detached at Stripe (it can no longer be charged), then gone
/// from the list.
pub async fn remove_card(state: &AppState, actor: &Actor, id: i64) -> Result<(), AppError> {
    let stripe = client(state)?;
    let row = db::card_payments::card(&state.db, actor.user.id, id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("card {id}")))?;
    match stripe.detach(&row.payment_method_id).await {
        // Detached already (another tab, or at Stripe's dashboard): removing it is what was
        // asked.
        Ok(_) | Err(StripeError::Refused { status: 400, .. }) => {}
        Err(err) => return Err(stripe_error(err)),
    }
    db::card_payments::remove_card(&state.db, id, state.now()).await?;
    Ok(())
}

fn card_label(card: Option<&payment_card::Model>) -> String {
    card.map(|c| crate::domain::payment::card_label(&c.brand, &c.last4))
        .unwrap_or_default()
}

fn view(
    row: &card_payment::Model,
    card: Option<&payment_card::Model>,
    secret: Option<String>,
) -> CardPayment {
    CardPayment {
        id: row.id,
        purpose: row.purpose.clone(),
        reservation_id: row.reservation_id,
        amount_minor: row.amount_minor,
        currency: row.currency.clone(),
        card: card_label(card),
        status: row.status.clone(),
        failure: row.failure.clone(),
        client_secret: secret.filter(|_| row.status == REQUIRES_ACTION),
        reference: row.intent_id.clone(),
        transaction_id: row.ledger_transaction_id,
        created_at: row.created_at,
        settled_at: row.settled_at,
    }
}

/// Tops up the caller's credits by `amount_minor` on their card `card_id`. Stripe is asked at
/// once; the credits arrive when Stripe confirms the payment (its webhook), so the answer is
/// `pending`, `requires_action` (the page authenticates it with Stripe.js and the secret it
/// carries), `failed` (declined, nothing booked) or, when the webhook was quicker than the
/// answer, `succeeded`.
pub async fn top_up(
    state: &AppState,
    actor: &Actor,
    card_id: i64,
    amount_minor: i64,
) -> Result<CardPayment, AppError> {
    let stripe = client(state)?;
    let limits = state.portal.top_up;
    if !limits.allows(amount_minor) {
        let currency = &state.portal.currency;
        return Err(AppError::invalid(
            "amount_minor",
            Problem::TopUpAmount {
                min: format!(
                    "{} {}",
                    currency.symbol(),
                    Money::from_minor(limits.min_minor).to_decimal_string(currency)
                ),
                max: format!(
                    "{} {}",
                    currency.symbol(),
                    Money::from_minor(limits.max_minor).to_decimal_string(currency)
                ),
            },
        ));
    }
    let card = db::card_payments::card(&state.db, actor.user.id, card_id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("card {card_id}")))?;
    let customer = db::card_payments::customer_of(&state.db, actor.user.id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("card {card_id}")))?;
    let currency = state.portal.currency.code().to_owned();
    // Recorded before Stripe is asked: a crash in between leaves a pending payment that the
    // reconciliation job settles from what Stripe holds.
    let row = db::card_payments::insert_payment(
        &state.db,
        &NewPayment {
            user_id: actor.user.id,
            purpose: TOP_UP,
            reservation_id: None,
            refund_to: RefundTo::Credits.as_str(),
            card_id: card.id,
            amount_minor,
            currency: &currency,
            at: state.now(),
        },
    )
    .await?;
    let record = record_of(row.id);
    let answer = stripe
        .charge_card(&CardCharge {
            amount_minor,
            currency: &currency,
            customer: &customer,
            payment_method: &card.payment_method_id,
            off_session: false,
            record: &record,
        })
        .await;
    let (intent, secret) = match answer {
        Ok(intent) => {
            let secret = intent.client_secret.clone();
            (Some(intent), secret)
        }
        Err(StripeError::Refused {
            status: 402,
            message,
            ..
        }) => {
            settle_failed(state, row.id, None, &message).await?;
            (None, None)
        }
        Err(err) => return Err(stripe_error(err)),
    };
    if let Some(intent) = &intent {
        // Stripe's answer is recorded; the credits come with its webhook.
        apply(state, row.id, intent, None, false).await?;
    }
    let row = db::card_payments::payment(&state.db, row.id)
        .await?
        .ok_or(AppError::Internal)?;
    Ok(view(&row, Some(&card), secret))
}

/// The caller's payment `id`.
pub async fn payment(state: &AppState, actor: &Actor, id: i64) -> Result<CardPayment, AppError> {
    let row = db::card_payments::payment(&state.db, id)
        .await?
        .filter(|row| row.user_id == actor.user.id)
        .ok_or_else(|| AppError::NotFound(format!("payment {id}")))?;
    payment_of_user(state, actor.user.id, row).await
}

/// The caller's payments, newest first.
pub async fn payments(state: &AppState, actor: &Actor) -> Result<Vec<CardPayment>, AppError> {
    let rows = db::card_payments::payments_of(&state.db, actor.user.id, PAYMENTS_LISTED).await?;
    let cards = db::card_payments::all_cards_of(&state.db, actor.user.id).await?;
    Ok(rows
        .iter()
        .map(|row| view(row, cards.iter().find(|c| c.id == row.card_id), None))
        .collect())
}

/// Books `amount_minor` from the funding account into user `user`'s wallet, a grant with
/// provider `stripe`: `(reason, reservation, reverses)` describe it. Answers the transaction.
async fn credit_wallet(
    txn: &sea_orm::DatabaseTransaction,
    user: i64,
    amount_minor: i64,
    (reason, reservation_id, reverses_id): (&BerthReason, Option<i64>, Option<i64>),
    now: DateTime<Utc>,
) -> Result<i64, AppError> {
    let record = db::ledger::TransactionRecord {
        kind: TransactionKind::Grant,
        user_id: Some(user),
        reservation_id,
        reverses_id,
        reason: db::ledger::RecordReason::Berth(reason),
        actor_id: None,
        provider: Some(STRIPE_PROVIDER),
        at: now,
    };
    db::ledger::transfer(
        txn,
        &record,
        Account::Funding,
        Account::Wallet(user),
        Money::from_minor(amount_minor),
    )
    .await
    .map_err(|err| match err {
        db::ledger::PostError::Db(err) => AppError::from(err),
        other => AppError::internal(other),
    })
}

/// `cp_{id}`: Berth's record of a payment at Stripe.
fn record_of(id: i64) -> String {
    format!("cp_{id}")
}

/// Marks payment `id` failed (nothing is booked).
async fn settle_failed(
    state: &AppState,
    id: i64,
    intent: Option<&str>,
    why: &str,
) -> Result<(), AppError> {
    let txn = begin_write(&state.db).await?;
    let Some(row) = db::card_payments::lock_payment(&txn, id).await? else {
        return Ok(());
    };
    if row.status == SUCCEEDED || row.status == FAILED {
        return Ok(());
    }
    db::card_payments::update_payment(
        &txn,
        id,
        &PaymentUpdate {
            intent_id: intent,
            status: FAILED,
            failure: Some(why),
            ledger_transaction_id: None,
            settled_at: Some(state.now()),
            charge_id: None,
        },
    )
    .await?;
    txn.commit().await?;
    tracing::info!(payment.id = id, reason = why, "card payment failed");
    Ok(())
}

/// Applies what Stripe holds of payment `id`'s PaymentIntent: books it when it succeeded (once;
/// only when `book`: a webhook or the reconciliation job, not the answer to the request that
/// made it), marks it failed or waiting for authentication otherwise. `event` is the webhook
/// event that told it, claimed in the same transaction. Answers whether anything changed.
async fn apply(
    state: &AppState,
    id: i64,
    intent: &PaymentIntent,
    event: Option<(&str, &str)>,
    book: bool,
) -> Result<bool, AppError> {
    let now = state.now();
    let txn = begin_write(&state.db).await?;
    if let Some((event_id, kind)) = event
        && !db::card_payments::claim_event(&txn, event_id, kind, now).await?
    {
        return Ok(false);
    }
    let Some(row) = db::card_payments::lock_payment(&txn, id).await? else {
        txn.commit().await?;
        return Ok(false);
    };
    if row.status == SUCCEEDED || (row.status == FAILED && intent.status != "succeeded") {
        // Settled already; the event is recorded as seen.
        txn.commit().await?;
        return Ok(false);
    }
    if intent.amount != row.amount_minor || !intent.currency.eq_ignore_ascii_case(&row.currency) {
        tracing::error!(
            payment.id = id,
            intent = %intent.id,
            "a PaymentIntent's amount or currency differs from Berth's record; not booked"
        );
        return Err(AppError::Internal);
    }
    let update = match intent.status.as_str() {
        "succeeded" if book => {
            let reason = match row.reservation_id {
                Some(reservation) => BerthReason::CardPayment {
                    reservation,
                    intent: intent.id.clone(),
                },
                None => BerthReason::CardTopUp {
                    intent: intent.id.clone(),
                },
            };
            let transaction = credit_wallet(
                &txn,
                row.user_id,
                row.amount_minor,
                (&reason, None, None),
                now,
            )
            .await?;
            let card = db::card_payments::card_by_id(&txn, row.card_id).await?;
            let receipt = ReceiptBrief {
                what: row.purpose.clone(),
                card: card_label(card.as_ref()),
                reference: intent.id.clone(),
                id: row.id,
            };
            let booking = match row.reservation_id {
                // The credits it brought pay the booking at once, in this transaction.
                Some(booking) => pay_booking(&txn, booking, now).await?,
                None => {
                    let added = NewEvent::credits_added(
                        crate::domain::notify::Audience::User(row.user_id),
                        transaction,
                        row.amount_minor,
                        now,
                    );
                    crate::backend::notify::record(&txn, &[added]).await?;
                    None
                }
            };
            let receipt = NewEvent::receipt(
                row.user_id,
                receipt,
                row.amount_minor,
                booking.as_ref(),
                now,
            );
            crate::backend::notify::record(&txn, &[receipt]).await?;
            PaymentUpdate {
                intent_id: Some(&intent.id),
                status: SUCCEEDED,
                failure: None,
                ledger_transaction_id: Some(transaction),
                settled_at: Some(now),
                charge_id: intent.latest_charge.as_deref(),
            }
        }
        "requires_action" => PaymentUpdate {
            intent_id: Some(&intent.id),
            status: REQUIRES_ACTION,
            failure: None,
            ledger_transaction_id: None,
            settled_at: None,
            charge_id: None,
        },
        // Declined or authentication failed: Stripe leaves it waiting for another card.
        "requires_payment_method" | "canceled" => PaymentUpdate {
            intent_id: Some(&intent.id),
            status: FAILED,
            failure: Some(
                intent
                    .last_payment_error
                    .as_ref()
                    .and_then(|e| e.message.as_deref())
                    .unwrap_or("declined"),
            ),
            ledger_transaction_id: None,
            settled_at: Some(now),
            charge_id: None,
        },
        _ => PaymentUpdate {
            intent_id: Some(&intent.id),
            status: PENDING,
            failure: None,
            ledger_transaction_id: None,
            settled_at: None,
            charge_id: None,
        },
    };
    let changed = update.status != row.status || row.intent_id.is_none();
    db::card_payments::update_payment(&txn, id, &update).await?;
    txn.commit().await?;
    if update.status == SUCCEEDED {
        state.wake.poke();
        tracing::info!(
            payment.id = id,
            amount.minor = row.amount_minor,
            purpose = %row.purpose,
            "card payment booked"
        );
    }
    // A booking's card payment that now waits for the bank, or failed: the booking is due,
    // and its holder is told at once how to complete it.
    if changed
        && (update.status == REQUIRES_ACTION || update.status == FAILED)
        && let Some(booking) = row.reservation_id
    {
        booking_due(state, booking).await?;
    }
    Ok(changed)
}

/// A webhook event as Stripe posts it.
#[derive(Debug, Deserialize)]
struct Event {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    data: EventData,
}

#[derive(Debug, Deserialize)]
struct EventData {
    object: serde_json::Value,
}

/// What a webhook did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookOutcome {
    /// Its effect was booked.
    Applied,
    /// Seen before, or about nothing Berth asked for: nothing changed.
    Ignored,
}

/// Processes a webhook: `payload` exactly as received, `signature` its `Stripe-Signature`.
/// A forged, stale or unreadable one is refused (422) with nothing changed; a replayed one
/// changes nothing.
pub async fn webhook(
    state: &AppState,
    payload: &[u8],
    signature: Option<&str>,
) -> Result<WebhookOutcome, AppError> {
    let stripe = client(state)?;
    let refused = |why: &str| {
        AppError::invalid(
            "Stripe-Signature",
            Problem::WebhookSignature {
                why: why.to_owned(),
            },
        )
    };
    stripe::verify_webhook(
        payload,
        signature.ok_or_else(|| refused("malformed"))?,
        &stripe.settings().webhook_secret,
        state.now().timestamp(),
    )
    .map_err(|why| {
        refused(match why {
            stripe::WebhookRefusal::Malformed => "malformed",
            stripe::WebhookRefusal::Stale => "stale",
            stripe::WebhookRefusal::BadSignature => "bad_signature",
        })
    })?;
    let event: Event = serde_json::from_slice(payload).map_err(|e| {
        AppError::invalid(
            "body",
            Problem::Unreadable {
                detail: e.to_string(),
            },
        )
    })?;
    if !event.kind.starts_with("payment_intent.") {
        return Ok(WebhookOutcome::Ignored);
    }
    let intent: PaymentIntent = serde_json::from_value(event.data.object).map_err(|e| {
        AppError::invalid(
            "body",
            Problem::Unreadable {
                detail: e.to_string(),
            },
        )
    })?;
    let Some(row) = find_payment(state, &intent).await? else {
        return Ok(WebhookOutcome::Ignored);
    };
    Ok(
        if apply(state, row.id, &intent, Some((&event.id, &event.kind)), true).await? {
            WebhookOutcome::Applied
        } else {
            WebhookOutcome::Ignored
        },
    )
}

/// The payment a PaymentIntent belongs to: by its id, or by Berth's record in its metadata
/// (a webhook that came before Berth stored the id).
async fn find_payment(
    state: &AppState,
    intent: &PaymentIntent,
) -> Result<Option<card_payment::Model>, AppError> {
    if let Some(row) = db::card_payments::payment_of_intent(&state.db, &intent.id).await? {
        return Ok(Some(row));
    }
    let Some(id) = intent
        .metadata
        .get("berth_payment")
        .and_then(|r| r.strip_prefix("cp_"))
        .and_then(|n| n.parse::<i64>().ok())
    else {
        return Ok(None);
    };
    Ok(db::card_payments::payment(&state.db, id)
        .await?
        .filter(|row| row.intent_id.as_deref().is_none_or(|i| i == intent.id)))
}

/// The reconciliation job: every payment still open a minute after it was asked is looked up
/// at Stripe and settled from what Stripe holds (a webhook lost while the portal was down
/// changes nothing then: the payment is booked once, here or by the webhook, whichever comes
/// first). A payment Stripe never received (the portal died before asking) fails after an
/// hour. Answers how many changed.
pub async fn reconcile(state: &AppState, now: DateTime<Utc>) -> Result<u32, AppError> {
    let Some(stripe) = state.stripe.as_ref() else {
        return Ok(0);
    };
    let mut changed = 0;
    for row in
        db::card_payments::open_payments(&state.db, now - TimeDelta::minutes(1), RECONCILE_BATCH)
            .await?
    {
        match &row.intent_id {
            Some(intent_id) => match stripe.payment_intent(intent_id).await {
                Ok(intent) => {
                    if apply(state, row.id, &intent, None, true).await? {
                        changed += 1;
                    }
                }
                Err(err) => tracing::warn!(payment.id = row.id, error = %err, "reconcile"),
            },
            None if row.created_at < now - TimeDelta::hours(1) => {
                settle_failed(state, row.id, None, "never reached Stripe").await?;
                changed += 1;
            }
            None => {}
        }
    }
    Ok(changed)
}

/// Pays booking `id` from the credits its card payment just brought (inside that payment's
/// transaction): answers the booking when it was still unpaid and is paid now. A booking
/// released or cancelled meanwhile keeps nothing: the credits stay in the wallet.
async fn pay_booking(
    txn: &sea_orm::DatabaseTransaction,
    id: i64,
    now: DateTime<Utc>,
) -> Result<Option<crate::domain::reservation::Reservation>, AppError> {
    let Some(row) = db::payments::claim(txn, id).await? else {
        return Ok(None);
    };
    match db::ledger::charge(txn, &row, None, now).await {
        Ok(_) => {}
        Err(db::ledger::PostError::InsufficientFunds { .. }) => return Ok(None),
        Err(db::ledger::PostError::Db(err)) => return Err(err.into()),
    }
    db::payments::set_payment_status(txn, id, PaymentStatus::Paid).await?;
    let view = db::reservations::view_of(txn, id, now).await?;
    if let Some(view) = &view {
        let charged = NewEvent::charged(view, row.price_minor, now);
        crate::backend::notify::record(txn, &[charged]).await?;
    }
    tracing::info!(reservation.id = id, "booking paid by card");
    Ok(view)
}

/// When the payment job gives up on booking `row` paid by card: the release time, or the end
/// of the card's grace when that is later.
fn release_of(state: &AppState, row: &reservation::Model) -> DateTime<Utc> {
    let release = state.portal.charge.release_at(row.start_at);
    row.charge_at.map_or(release, |grace| grace.max(release))
}

/// Booking `id`'s card payment waits for the bank or failed: the booking is due (the payment
/// job leaves it to the card until the grace ends) and its holder is told, once, with a link to
/// complete it.
async fn booking_due(state: &AppState, id: i64) -> Result<(), AppError> {
    let now = state.now();
    let txn = begin_write(&state.db).await?;
    // Waits for a job's run that holds the booking for a moment (two replicas' jobs look at
    // the same bookings): skipping it would leave the holder untold. Paid or released
    // meanwhile, there is nothing to tell.
    let Some(row) = db::payments::claim_waiting(&txn, id).await? else {
        txn.rollback().await?;
        return Ok(());
    };
    db::payments::set_payment_status(&txn, id, PaymentStatus::Due).await?;
    if let Some(view) = db::reservations::view_of(&txn, id, now).await? {
        let due = NewEvent::payment_due(&view, release_of(state, &row), now);
        crate::backend::notify::record(&txn, &[due]).await?;
    }
    txn.commit().await?;
    Ok(())
}

/// Checks that `actor` may pay a booking with card `card_id`: cards are on, the card is theirs
/// and saved, and the booking is personal (`team_id` None).
pub async fn check_booking_card(
    state: &AppState,
    actor: &Actor,
    card_id: i64,
    team_id: Option<i64>,
) -> Result<(), AppError> {
    client(state)?;
    if team_id.is_some() {
        return Err(AppError::invalid("card", Problem::CardPersonalOnly));
    }
    db::card_payments::card(&state.db, actor.user.id, card_id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("card {card_id}")))?;
    Ok(())
}

/// Charges booking `id` to its card: at booking or when the holder completes a due payment
/// (`on_session`, the holder is on the page and can authenticate), or off-session by the
/// payment job before the start. The credits arrive, and pay the booking, when Stripe
/// confirms the payment. A payment already under way (or done) for it is answered instead of
/// charging again; so is a failed one unless `again` (the holder asked to pay it again): a
/// replayed booking request never charges a second time.
pub async fn charge_booking(
    state: &AppState,
    id: i64,
    on_session: bool,
    again: bool,
) -> Result<CardPayment, AppError> {
    let stripe = client(state)?;
    let now = state.now();
    let row = db::reservations::row(&state.db, id)
        .await?
        .filter(|row| {
            row.status == reservation::Status::Confirmed
                && matches!(
                    row.payment_status,
                    PaymentStatus::Pending | PaymentStatus::Due
                )
        })
        .ok_or(AppError::Conflict(Problem::NothingDue { id }))?;
    let card_id = row
        .card_id
        .ok_or(AppError::Conflict(Problem::NothingDue { id }))?;
    if let Some(latest) = db::card_payments::latest_for_booking(&state.db, id).await?
        && (!again || [PENDING, REQUIRES_ACTION, SUCCEEDED].contains(&latest.status.as_str()))
    {
        if !on_session {
            // Another run of the job charged it meanwhile.
            return Err(AppError::Conflict(Problem::NothingDue { id }));
        }
        let owner = row.owner_id;
        return payment_of_user(state, owner, latest).await;
    }
    let card = db::card_payments::card(&state.db, row.owner_id, card_id).await?;
    let customer = db::card_payments::customer_of(&state.db, row.owner_id).await?;
    let (Some(card), Some(customer)) = (card, customer) else {
        // The card was removed since: the booking is due like any unpaid one.
        booking_due(state, id).await?;
        return Err(AppError::NotFound(format!("card {card_id}")));
    };
    let currency = state.portal.currency.code().to_owned();
    // Recorded, and the booking left to its card for the grace, before Stripe is asked; under
    // the booking's lock, so two replicas' jobs (or two tabs) make one payment.
    let txn = begin_write(&state.db).await?;
    // The job charges a booking still waiting for its charge before the start, once.
    let locked = db::payments::claim(&txn, id)
        .await?
        .filter(|row| on_session || row.payment_status == PaymentStatus::Pending);
    let latest = db::card_payments::latest_for_booking(&txn, id).await?;
    let taken = latest.as_ref().is_some_and(|p| {
        !again || [PENDING, REQUIRES_ACTION, SUCCEEDED].contains(&p.status.as_str())
    });
    if locked.is_none() || taken {
        txn.rollback().await?;
        return match latest {
            Some(latest) if on_session => payment_of_user(state, row.owner_id, latest).await,
            _ => Err(AppError::Conflict(Problem::NothingDue { id })),
        };
    }
    let payment = db::card_payments::insert_payment(
        &txn,
        &NewPayment {
            user_id: row.owner_id,
            purpose: BOOKING,
            reservation_id: Some(id),
            refund_to: state.portal.refund_to.as_str(),
            card_id: card.id,
            amount_minor: row.price_minor,
            currency: &currency,
            at: now,
        },
    )
    .await?;
    // Due until Stripe confirms it (the job charges a card once); the wallet's job leaves it
    // to the card until the grace ends.
    db::card_payments::set_booking_card(
        &txn,
        id,
        card.id,
        PaymentStatus::Due,
        now + crate::domain::payment::CARD_GRACE,
    )
    .await?;
    txn.commit().await?;
    let record = record_of(payment.id);
    let answer = stripe
        .charge_card(&CardCharge {
            amount_minor: row.price_minor,
            currency: &currency,
            customer: &customer,
            payment_method: &card.payment_method_id,
            off_session: !on_session,
            record: &record,
        })
        .await;
    let secret = match answer {
        Ok(intent) => {
            let secret = intent.client_secret.clone();
            apply(state, payment.id, &intent, None, false).await?;
            secret
        }
        Err(StripeError::Refused {
            status: 402,
            message,
            ..
        }) => {
            settle_failed(state, payment.id, None, &message).await?;
            booking_due(state, id).await?;
            None
        }
        // Stripe did not answer: the booking is due and its holder told, as for a decline
        // (its page pays it again). Had Stripe charged the card after all, its webhook still
        // books the payment (a failed payment that Stripe says succeeded is booked), and the
        // balance check would report it otherwise.
        Err(StripeError::Unreachable(why)) => {
            tracing::warn!(reservation.id = id, error = %why, "Stripe unreachable for a booking's card");
            settle_failed(state, payment.id, None, UNREACHABLE).await?;
            booking_due(state, id).await?;
            None
        }
        Err(err) => return Err(stripe_error(err)),
    };
    tracing::info!(
        reservation.id = id,
        payment.id = payment.id,
        on_session,
        "booking charged to its card"
    );
    let payment = db::card_payments::payment(&state.db, payment.id)
        .await?
        .ok_or(AppError::Internal)?;
    Ok(view(&payment, Some(&card), secret))
}

/// `row` as user `owner` sees it, with the secret to authenticate it when the bank asks.
async fn payment_of_user(
    state: &AppState,
    owner: i64,
    row: card_payment::Model,
) -> Result<CardPayment, AppError> {
    let card = db::card_payments::card_by_id(&state.db, row.card_id)
        .await?
        .filter(|card| card.user_id == owner);
    let secret = match (&row.intent_id, row.status.as_str(), state.stripe.as_ref()) {
        (Some(intent), REQUIRES_ACTION, Some(stripe)) => stripe
            .payment_intent(intent)
            .await
            .ok()
            .and_then(|i| i.client_secret),
        _ => None,
    };
    Ok(view(&row, card.as_ref(), secret))
}

/// The holder pays their due booking `id` by card `card_id` now (on the booking's page): the
/// payment under way is answered when there is one (to authenticate), else the card is charged.
pub async fn pay_due_booking(
    state: &AppState,
    actor: &Actor,
    id: i64,
    card_id: i64,
) -> Result<CardPayment, AppError> {
    client(state)?;
    let row = db::reservations::row(&state.db, id)
        .await?
        .filter(|row| row.owner_id == actor.user.id)
        .ok_or_else(|| AppError::NotFound(format!("reservation {id}")))?;
    if row.status != reservation::Status::Confirmed
        || !matches!(
            row.payment_status,
            PaymentStatus::Pending | PaymentStatus::Due
        )
        || state.now() >= row.end_at
    {
        return Err(AppError::Conflict(Problem::NothingDue { id }));
    }
    check_booking_card(state, actor, card_id, row.team_id).await?;
    if let Some(latest) = db::card_payments::latest_for_booking(&state.db, id).await?
        && latest.card_id == card_id
        && [PENDING, REQUIRES_ACTION, SUCCEEDED].contains(&latest.status.as_str())
    {
        return payment_of_user(state, actor.user.id, latest).await;
    }
    // Another card, or the last attempt failed: this card pays it now.
    let txn = begin_write(&state.db).await?;
    db::card_payments::set_booking_card(
        &txn,
        id,
        card_id,
        PaymentStatus::Due,
        state.now() + crate::domain::payment::CARD_GRACE,
    )
    .await?;
    txn.commit().await?;
    charge_booking(state, id, true, true).await
}

/// The latest card payment of the caller's booking `id`, if it was paid (or is being paid) by
/// card.
pub async fn booking_payment(
    state: &AppState,
    actor: &Actor,
    id: i64,
) -> Result<Option<CardPayment>, AppError> {
    let Some(row) = db::card_payments::latest_for_booking(&state.db, id).await? else {
        return Ok(None);
    };
    if row.user_id != actor.user.id {
        return Ok(None);
    }
    payment_of_user(state, actor.user.id, row).await.map(Some)
}

/// Charges the bookings paid by card whose charge before the start is due at `now`, each
/// off-session (the payment job). Answers how many were asked of Stripe.
pub async fn charge_due_bookings(state: &AppState, now: DateTime<Utc>) -> Result<u32, AppError> {
    if state.stripe.is_none() {
        return Ok(0);
    }
    let mut charged = 0;
    for id in db::card_payments::card_charge_due(&state.db, now, RECONCILE_BATCH).await? {
        match charge_booking(state, id, false, false).await {
            Ok(_) => charged += 1,
            Err(AppError::NotFound(_) | AppError::Conflict(_)) => {}
            Err(err) => tracing::warn!(reservation.id = id, error = %err, "card charge"),
        }
    }
    Ok(charged)
}

/// Refunds `amount` of booking `row` (inside the caller's transaction, which withdrew it or
/// lowered its price): to the wallet that paid it, and from there back to the card for what a
/// card paid of it, when that payment's refunds go to the card. The refund to the card is
/// booked out of the wallet here and sent to Stripe after the commit ([`send_refunds`]).
pub(crate) async fn refund_booking(
    txn: &sea_orm::DatabaseTransaction,
    row: &reservation::Model,
    charge_id: i64,
    amount: Money,
    actor: Option<i64>,
    now: DateTime<Utc>,
) -> Result<(), sea_orm::DbErr> {
    db::ledger::refund(txn, row, charge_id, amount, actor, now).await?;
    if row.card_id.is_none() || row.team_id.is_some() {
        return Ok(());
    }
    let mut left = amount.minor();
    for payment in db::card_payments::paid_for_booking(txn, row.id).await? {
        if left <= 0 || payment.refund_to != RefundTo::Card.as_str() {
            continue;
        }
        let open = payment.amount_minor - db::card_payments::refunded_of(txn, payment.id).await?;
        let part = left.min(open);
        if part <= 0 {
            continue;
        }
        let card = db::card_payments::card_by_id(txn, payment.card_id).await?;
        let reason = BerthReason::CardRefund {
            card: card_label(card.as_ref()),
            reservation: row.id,
        };
        let record = db::ledger::TransactionRecord {
            kind: TransactionKind::Deduct,
            user_id: Some(payment.user_id),
            reservation_id: Some(row.id),
            reverses_id: None,
            reason: db::ledger::RecordReason::Berth(&reason),
            actor_id: actor,
            provider: Some(STRIPE_PROVIDER),
            at: now,
        };
        let transaction = match db::ledger::transfer(
            txn,
            &record,
            Account::Wallet(payment.user_id),
            Account::Funding,
            Money::from_minor(part),
        )
        .await
        {
            Ok(transaction) => transaction,
            // Spent already (cannot be, the refund just arrived): it stays as credits.
            Err(db::ledger::PostError::InsufficientFunds { .. }) => continue,
            Err(db::ledger::PostError::Db(err)) => return Err(err),
        };
        db::card_payments::insert_refund(
            txn,
            &NewRefund {
                payment_id: payment.id,
                user_id: payment.user_id,
                reservation_id: Some(row.id),
                amount_minor: part,
                ledger_transaction_id: transaction,
                at: now,
            },
        )
        .await?;
        left -= part;
    }
    Ok(())
}

/// `cr_{id}`: Berth's record of a refund at Stripe.
fn refund_record(id: i64) -> String {
    format!("cr_{id}")
}

/// Sends the refunds booked for cards to Stripe (after the cancellation's commit, and from the
/// reconciliation job for any left behind). Stripe refusing one for good puts its amount back
/// in the wallet as credits. Answers how many were settled.
pub async fn send_refunds(state: &AppState) -> Result<u32, AppError> {
    let Some(stripe) = state.stripe.as_ref() else {
        return Ok(0);
    };
    let mut settled = 0;
    for refund in db::card_payments::pending_refunds(&state.db, RECONCILE_BATCH).await? {
        let Some(payment) = db::card_payments::payment(&state.db, refund.payment_id).await? else {
            continue;
        };
        let Some(intent) = payment.intent_id.as_deref() else {
            continue;
        };
        let answer = stripe
            .refund(intent, refund.amount_minor, &refund_record(refund.id))
            .await;
        let outcome = match answer {
            Ok(done) => Ok(done.id),
            Err(StripeError::Refused { message, .. }) => Err(message),
            Err(err) => {
                tracing::warn!(refund.id = refund.id, error = %err, "card refund not sent yet");
                continue;
            }
        };
        if settle_refund(state, &refund, &payment, outcome).await? {
            settled += 1;
        }
    }
    Ok(settled)
}

/// Records what Stripe said of `refund`: sent (a receipt), or refused (the amount back to
/// credits).
async fn settle_refund(
    state: &AppState,
    refund: &card_refund::Model,
    payment: &card_payment::Model,
    outcome: Result<String, String>,
) -> Result<bool, AppError> {
    let now = state.now();
    let txn = begin_write(&state.db).await?;
    let Some(row) = db::card_payments::lock_refund(&txn, refund.id).await? else {
        return Ok(false);
    };
    if row.status != PENDING {
        return Ok(false);
    }
    let card = db::card_payments::card_by_id(&txn, payment.card_id).await?;
    match outcome {
        Ok(refund_id) => {
            db::card_payments::settle_refund(&txn, row.id, SUCCEEDED, Some(&refund_id), None, now)
                .await?;
            let view = match row.reservation_id {
                Some(id) => db::reservations::view_of(&txn, id, now).await?,
                None => None,
            };
            let receipt = ReceiptBrief {
                what: "refund".to_owned(),
                card: card_label(card.as_ref()),
                reference: refund_id,
                id: row.id,
            };
            let event =
                NewEvent::receipt(row.user_id, receipt, row.amount_minor, view.as_ref(), now);
            crate::backend::notify::record(&txn, &[event]).await?;
        }
        Err(why) => {
            let reason = BerthReason::CardRefundRefused {
                card: card_label(card.as_ref()),
                why: why.to_string(),
            };
            credit_wallet(
                &txn,
                row.user_id,
                row.amount_minor,
                (&reason, row.reservation_id, Some(row.ledger_transaction_id)),
                now,
            )
            .await?;
            db::card_payments::settle_refund(&txn, row.id, FAILED, None, Some(&why), now).await?;
            tracing::warn!(refund.id = row.id, reason = %why, "Stripe refused a card refund; kept as credits");
        }
    }
    txn.commit().await?;
    Ok(true)
}

fn refund_view(row: &card_refund::Model, card: Option<&payment_card::Model>) -> CardRefund {
    CardRefund {
        id: row.id,
        payment_id: row.payment_id,
        reservation_id: row.reservation_id,
        amount_minor: row.amount_minor,
        card: card_label(card),
        status: row.status.clone(),
        failure: row.failure.clone(),
        reference: row.refund_id.clone(),
        created_at: row.created_at,
        settled_at: row.settled_at,
    }
}

/// The caller's refunds to cards, newest first.
pub async fn refunds(state: &AppState, actor: &Actor) -> Result<Vec<CardRefund>, AppError> {
    let rows = db::card_payments::refunds_of(&state.db, actor.user.id, PAYMENTS_LISTED).await?;
    let cards = db::card_payments::all_cards_of(&state.db, actor.user.id).await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let payment = db::card_payments::payment(&state.db, row.payment_id).await?;
        let card = payment.and_then(|p| cards.iter().find(|c| c.id == p.card_id).cloned());
        out.push(refund_view(row, card.as_ref()));
    }
    Ok(out)
}

/// What the balance check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BalanceCheck {
    /// Balance transactions read from Stripe.
    pub stripe_transactions: usize,
    /// Differences found (each told to platform admins once).
    pub differences: Vec<(String, String)>,
}

/// Compares Stripe's balance transactions of the last `days` with the ledger's card payments
/// and refunds: each charge and refund at Stripe must be one Berth booked, for the same amount,
/// and each one Berth booked (settled over 10 minutes ago) must be at Stripe. A transaction of
/// the last 10 minutes that the ledger does not explain while Berth has a payment (or refund) in
/// flight is left to the next check: it is likely that one, not written down yet. Every
/// difference is told to the platform admins, once.
pub async fn check_balance(
    state: &AppState,
    now: DateTime<Utc>,
    days: i64,
) -> Result<BalanceCheck, AppError> {
    let Some(stripe) = state.stripe.as_ref() else {
        return Ok(BalanceCheck::default());
    };
    let since = now - TimeDelta::days(days);
    let transactions = stripe
        .balance_transactions(since.timestamp(), 20)
        .await
        .map_err(stripe_error)?;
    let payments = db::card_payments::succeeded_since(&state.db, since).await?;
    let refunds = db::card_payments::refunds_sent_since(&state.db, since).await?;
    let settled_before = now - TimeDelta::minutes(10);
    let mut differences = Vec::new();
    let mut seen_charges = std::collections::BTreeSet::new();
    let mut seen_refunds = std::collections::BTreeSet::new();
    // Transactions the ledger does not explain (yet): a payment or refund of Berth's own is at
    // Stripe a moment before Berth writes it down.
    let mut suspects = Vec::new();
    for txn in &transactions {
        let Some(source) = txn.source.as_deref() else {
            continue;
        };
        let is_refund = match txn.kind.as_str() {
            "charge" | "payment" => {
                seen_charges.insert(source.to_owned());
                false
            }
            "refund" => {
                seen_refunds.insert(source.to_owned());
                true
            }
            _ => continue,
        };
        if let Some(difference) = ledger_difference(state, txn, source, is_refund).await? {
            suspects.push((txn, source, is_refund, difference));
        }
    }
    if !suspects.is_empty() {
        // Asked first, looked again second: a payment or refund open when asked is in flight;
        // one written down since is found by the second look.
        let payments_in_flight =
            db::card_payments::payment_in_flight_since(&state.db, settled_before).await?;
        let refunds_in_flight =
            db::card_payments::refund_in_flight_since(&state.db, settled_before).await?;
        for (txn, source, is_refund, difference) in suspects {
            let recent = txn.created >= settled_before.timestamp();
            let in_flight = if is_refund {
                refunds_in_flight
            } else {
                payments_in_flight
            };
            if recent && in_flight {
                tracing::debug!(
                    source,
                    "left to the next balance check: Berth has work in flight"
                );
                continue;
            }
            let difference = if recent {
                match ledger_difference(state, txn, source, is_refund).await? {
                    Some(difference) => difference,
                    None => continue,
                }
            } else {
                difference
            };
            differences.push((source.to_owned(), difference));
        }
    }
    for p in &payments {
        let at_stripe = p
            .charge_id
            .as_ref()
            .is_some_and(|c| seen_charges.contains(c));
        if !at_stripe && p.settled_at.is_some_and(|at| at < settled_before) {
            differences.push((
                record_of(p.id),
                format!(
                    "the ledger booked payment cp_{} ({} {}) that Stripe's balance does not hold",
                    p.id, p.amount_minor, p.currency
                ),
            ));
        }
    }
    for r in &refunds {
        let at_stripe = r
            .refund_id
            .as_ref()
            .is_some_and(|id| seen_refunds.contains(id));
        if !at_stripe && r.settled_at.is_some_and(|at| at < settled_before) {
            differences.push((
                refund_record(r.id),
                format!(
                    "the ledger sent refund cr_{} ({}) that Stripe's balance does not hold",
                    r.id, r.amount_minor
                ),
            ));
        }
    }
    if !differences.is_empty() {
        let admins = db::users::platform_admins(&state.db).await?;
        let txn = begin_write(&state.db).await?;
        for (what, detail) in &differences {
            tracing::error!(what = %what, detail = %detail, "Stripe and the ledger disagree");
            let events: Vec<NewEvent> = admins
                .iter()
                .map(|admin| NewEvent::payment_mismatch(*admin, what, detail, now))
                .collect();
            crate::backend::notify::record(&txn, &events).await?;
        }
        txn.commit().await?;
    }
    Ok(BalanceCheck {
        stripe_transactions: transactions.len(),
        differences,
    })
}

/// What the ledger says against Stripe's transaction `txn` (a charge, or a refund when
/// `is_refund`) from `source`; `None` when it agrees.
async fn ledger_difference(
    state: &AppState,
    txn: &stripe::BalanceTransaction,
    source: &str,
    is_refund: bool,
) -> Result<Option<String>, AppError> {
    if is_refund {
        return Ok(
            match db::card_payments::refund_of_stripe(&state.db, source).await? {
                Some(r) if r.amount_minor == -txn.amount => None,
                Some(r) => Some(format!(
                    "Stripe refunded {} {}, the ledger booked {} for refund cr_{}",
                    -txn.amount, txn.currency, r.amount_minor, r.id
                )),
                None => Some(format!(
                    "Stripe holds a refund of {} {} that the ledger has no record of",
                    -txn.amount, txn.currency
                )),
            },
        );
    }
    Ok(
        match db::card_payments::payment_of_charge(&state.db, source).await? {
            Some(p) if p.status == SUCCEEDED && p.amount_minor == txn.amount => None,
            Some(p) if p.status != SUCCEEDED => Some(format!(
                "Stripe holds {} {} for payment cp_{} that the ledger has as {}",
                txn.amount, txn.currency, p.id, p.status
            )),
            Some(p) => Some(format!(
                "Stripe holds {} {}, the ledger booked {} for payment cp_{}",
                txn.amount, txn.currency, p.amount_minor, p.id
            )),
            None => Some(format!(
                "Stripe holds a charge of {} {} that the ledger has no payment for",
                txn.amount, txn.currency
            )),
        },
    )
}
