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
    FAILED, NewCard, NewPayment, PENDING, PaymentUpdate, REQUIRES_ACTION, SUCCEEDED,
};
use crate::backend::entity::{card_payment, payment_card};
use crate::backend::state::AppState;
use crate::backend::stripe::{self, CardCharge, PaymentIntent, StripeClient, StripeError};
use crate::domain::ledger::{Account, TransactionKind};
use crate::domain::money::Money;
use crate::domain::payment::{CardPayment, CardSetup, SavedCard};
use crate::domain::problem::Problem;
use crate::error::AppError;
use chrono::{DateTime, TimeDelta, Utc};
use serde::Deserialize;

/// The provider id recorded with the ledger's card top-ups.
pub const STRIPE_PROVIDER: &str = "stripe";
/// Payments listed on the wallet page.
const PAYMENTS_LISTED: u64 = 50;
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
        amount_minor: row.amount_minor,
        currency: row.currency.clone(),
        card: card_label(card),
        status: row.status.clone(),
        failure: row.failure.clone(),
        client_secret: secret.filter(|_| row.status == REQUIRES_ACTION),
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
            purpose: "top_up",
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
    let card = db::card_payments::card(&state.db, actor.user.id, row.card_id).await?;
    // A payment waiting for authentication carries the secret the page needs.
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

/// The caller's payments, newest first.
pub async fn payments(state: &AppState, actor: &Actor) -> Result<Vec<CardPayment>, AppError> {
    let rows = db::card_payments::payments_of(&state.db, actor.user.id, PAYMENTS_LISTED).await?;
    let cards = db::card_payments::all_cards_of(&state.db, actor.user.id).await?;
    Ok(rows
        .iter()
        .map(|row| view(row, cards.iter().find(|c| c.id == row.card_id), None))
        .collect())
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
            let reason = format!("Card top-up ({})", intent.id);
            let record = db::ledger::TransactionRecord {
                kind: TransactionKind::Grant,
                user_id: Some(row.user_id),
                reservation_id: None,
                reverses_id: None,
                reason: &reason,
                actor_id: None,
                provider: Some(STRIPE_PROVIDER),
                at: now,
            };
            let transaction = db::ledger::transfer(
                &txn,
                &record,
                Account::Funding,
                Account::Wallet(row.user_id),
                Money::from_minor(row.amount_minor),
            )
            .await
            .map_err(|err| match err {
                db::ledger::PostError::Db(err) => AppError::from(err),
                other => AppError::internal(other),
            })?;
            let added = crate::domain::notify::NewEvent::credits_added(
                crate::domain::notify::Audience::User(row.user_id),
                transaction,
                row.amount_minor,
                now,
            );
            crate::backend::notify::record(&txn, &[added]).await?;
            PaymentUpdate {
                intent_id: Some(&intent.id),
                status: SUCCEEDED,
                failure: None,
                ledger_transaction_id: Some(transaction),
                settled_at: Some(now),
            }
        }
        "requires_action" => PaymentUpdate {
            intent_id: Some(&intent.id),
            status: REQUIRES_ACTION,
            failure: None,
            ledger_transaction_id: None,
            settled_at: None,
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
        },
        _ => PaymentUpdate {
            intent_id: Some(&intent.id),
            status: PENDING,
            failure: None,
            ledger_transaction_id: None,
            settled_at: None,
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
            "card top-up booked"
        );
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
