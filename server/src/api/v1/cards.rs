//! Cards through Stripe: save one (start a SetupIntent, then hand back its id once Stripe.js
//! confirmed it), list and remove them, top up credits with one, read a payment; and Stripe's
//! webhook, verified by its signature.

use crate::api::v1::body_error;
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::card_payments::{self, WebhookOutcome};
use berth_app::backend::state::AppState;
use berth_app::domain::payment::{CardPayment, CardRefund, CardSetup, SavedCard};
use berth_app::error::AppError;
use serde::Deserialize;

/// `POST /api/v1/cards/setup`: a SetupIntent for Stripe.js to confirm (its client secret and
/// the publishable key). 409 `cards_off` when card payments are not enabled.
pub async fn setup(
    State(state): State<AppState>,
    actor: Actor,
) -> Result<(StatusCode, Json<CardSetup>), AppError> {
    Ok((
        StatusCode::CREATED,
        Json(card_payments::start_card_setup(&state, &actor).await?),
    ))
}

/// What saving a card takes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaveBody {
    setup_intent_id: String,
}

/// `POST /api/v1/cards`: saves the card of a SetupIntent Stripe reports succeeded for the
/// caller (201); 409 while Stripe has not completed it; 404 for another customer's.
pub async fn save(
    State(state): State<AppState>,
    actor: Actor,
    body: Result<Json<SaveBody>, JsonRejection>,
) -> Result<(StatusCode, Json<SavedCard>), AppError> {
    let Json(body) = body.map_err(body_error)?;
    Ok((
        StatusCode::CREATED,
        Json(card_payments::finish_card_setup(&state, &actor, &body.setup_intent_id).await?),
    ))
}

/// `GET /api/v1/cards`: the caller's cards.
pub async fn list(
    State(state): State<AppState>,
    actor: Actor,
) -> Result<Json<Vec<SavedCard>>, AppError> {
    Ok(Json(card_payments::cards(&state, &actor).await?))
}

/// `DELETE /api/v1/cards/{id}`: removes one of the caller's cards (204).
pub async fn remove(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<StatusCode, AppError> {
    card_payments::remove_card(&state, &actor, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// What a top-up takes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopUpBody {
    card_id: i64,
    amount_minor: i64,
}

/// `POST /api/v1/top-ups`: tops up the caller's credits on one of their cards (201 with the
/// payment: `pending` until Stripe's webhook books it, `requires_action` with the secret
/// Stripe.js authenticates it with, or `failed`); 422 outside the limits.
pub async fn top_up(
    State(state): State<AppState>,
    actor: Actor,
    body: Result<Json<TopUpBody>, JsonRejection>,
) -> Result<(StatusCode, Json<CardPayment>), AppError> {
    let Json(body) = body.map_err(body_error)?;
    Ok((
        StatusCode::CREATED,
        Json(card_payments::top_up(&state, &actor, body.card_id, body.amount_minor).await?),
    ))
}

/// `GET /api/v1/payments`: the caller's card payments, newest first.
pub async fn payments(
    State(state): State<AppState>,
    actor: Actor,
) -> Result<Json<Vec<CardPayment>>, AppError> {
    Ok(Json(card_payments::payments(&state, &actor).await?))
}

/// `GET /api/v1/payments/{id}`: one of the caller's payments.
pub async fn payment(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<Json<CardPayment>, AppError> {
    Ok(Json(card_payments::payment(&state, &actor, id).await?))
}

/// What paying a booking by card takes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PayBookingBody {
    card_id: i64,
}

/// `POST /api/v1/reservations/{id}/card-payment`: pays the caller's booking whose payment is
/// due (or pending) with one of their cards now (201 with the payment, `requires_action` with
/// the secret when the bank asks for authentication). The payment under way is answered when
/// there is one; 409 `nothing_due` when the booking has nothing to pay.
pub async fn pay_booking(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
    body: Result<Json<PayBookingBody>, JsonRejection>,
) -> Result<(StatusCode, Json<CardPayment>), AppError> {
    let Json(body) = body.map_err(body_error)?;
    Ok((
        StatusCode::CREATED,
        Json(card_payments::pay_due_booking(&state, &actor, id, body.card_id).await?),
    ))
}

/// `GET /api/v1/reservations/{id}/card-payment`: the latest card payment of the caller's
/// booking (404 when a card never paid it).
pub async fn booking_payment(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<Json<CardPayment>, AppError> {
    card_payments::booking_payment(&state, &actor, id)
        .await?
        .map(Json)
        .ok_or_else(|| AppError::NotFound(format!("card payment of reservation {id}")))
}

/// `GET /api/v1/refunds`: the caller's refunds to cards, newest first.
pub async fn refunds(
    State(state): State<AppState>,
    actor: Actor,
) -> Result<Json<Vec<CardRefund>>, AppError> {
    Ok(Json(card_payments::refunds(&state, &actor).await?))
}

/// `POST /api/v1/stripe/webhook`: Stripe's events, verified by `Stripe-Signature`. 200 once
/// processed (or seen before); 422 for a forged, stale or unreadable one, with nothing changed.
pub async fn webhook(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<serde_json::Value>, AppError> {
    let signature = headers
        .get("stripe-signature")
        .and_then(|value| value.to_str().ok());
    let outcome = card_payments::webhook(&state, &body, signature).await?;
    Ok(Json(serde_json::json!({
        "received": true,
        "applied": outcome == WebhookOutcome::Applied,
    })))
}
