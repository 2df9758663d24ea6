//! The money part of the JSON API: a user's wallet, and credits granted or deducted by platform
//! admins. Amounts are integer minor units of the portal's currency.

use crate::routes::reservations::{body_error, idempotency_key};
use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use berth_app::domain::ledger::{Wallet, WalletEntry};
use berth_app::error::AppError;
use berth_app::server::auth::actor::Actor;
use berth_app::server::ledger::{self, CreditForm};
use berth_app::server::state::AppState;
use serde::Serialize;

/// `GET /api/v1/wallet`.
#[derive(Debug, Serialize)]
pub struct ApiWallet {
    balance_minor: i64,
    /// Money set aside for reservations not yet charged (none yet: every booking is charged or
    /// free when made).
    on_hold_minor: i64,
    /// The balance as a decimal string in the currency (`125.00`).
    balance: String,
    currency: String,
    entries: Vec<ApiEntry>,
}

/// One movement of the wallet, newest first.
#[derive(Debug, Serialize)]
pub struct ApiEntry {
    transaction_id: i64,
    at: String,
    kind: String,
    amount_minor: i64,
    balance_after_minor: i64,
    reason: String,
    reservation_id: Option<i64>,
}

impl ApiEntry {
    fn new(entry: WalletEntry) -> Self {
        Self {
            transaction_id: entry.transaction_id,
            at: entry.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            kind: entry.kind.as_str().to_owned(),
            amount_minor: entry.amount.minor(),
            balance_after_minor: entry.balance_after.minor(),
            reason: entry.reason,
            reservation_id: entry.reservation_id,
        }
    }
}

/// `GET /api/v1/wallet`: the caller's balance and movements.
pub async fn wallet(
    State(state): State<AppState>,
    actor: Actor,
) -> Result<Json<ApiWallet>, AppError> {
    let Wallet {
        balance,
        currency,
        entries,
        ..
    } = ledger::wallet(&state.db, &state.portal.currency, actor.user.id).await?;
    Ok(Json(ApiWallet {
        balance_minor: balance.minor(),
        on_hold_minor: 0,
        balance: balance.to_decimal_string(&currency),
        currency: currency.code().to_owned(),
        entries: entries.into_iter().map(ApiEntry::new).collect(),
    }))
}

/// The answer to a grant or deduction.
#[derive(Debug, Serialize)]
pub struct ApiCredit {
    transaction_id: i64,
    email: String,
    amount_minor: i64,
    balance_minor: i64,
}

/// `POST /api/v1/admin/credits` (platform admins): `{"email", "amount_minor", "reason"}`;
/// a negative amount deducts. 201 with the new balance; 409 when a deduction exceeds it. With an
/// `Idempotency-Key` header, a retry of the same request answers the first result.
pub async fn change_credits(
    State(state): State<AppState>,
    actor: Actor,
    headers: axum::http::HeaderMap,
    body: Result<Json<CreditForm>, JsonRejection>,
) -> Result<(StatusCode, Json<ApiCredit>), AppError> {
    actor.require_platform_admin()?;
    let Json(form) = body.map_err(body_error)?;
    let key = idempotency_key(&headers)?;
    let amount_minor = ledger::parse_minor_units(&form.amount_minor)?;
    let done = ledger::change_credits(
        &state.db,
        &state.portal.currency,
        berth_app::server::ledger::CreditRequest {
            actor_id: Some(actor.user.id),
            email: &form.email,
            amount_minor,
            reason: &form.reason,
            idempotency_key: key,
        },
        chrono::Utc::now(),
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(ApiCredit {
            transaction_id: done.transaction_id,
            email: done.user.email.as_str().to_owned(),
            amount_minor: done.amount.minor(),
            balance_minor: done.balance.minor(),
        }),
    ))
}
