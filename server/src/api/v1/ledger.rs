//! The money part of the JSON API: a user's wallet, and credits granted or deducted by platform
//! admins. Amounts are integer minor units of the portal's currency.

use crate::api::v1::{body_error, idempotency_key};
use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::ledger::{self, CreditForm};
use berth_app::backend::state::AppState;
use berth_app::domain::ledger::{Wallet, WalletEntry};
use berth_app::domain::problem::Problem;
use berth_app::error::AppError;
use serde::Serialize;

/// `GET /api/v1/wallet`.
#[derive(Debug, Serialize)]
pub struct ApiWallet {
    balance_minor: i64,
    /// Committed to upcoming reservations charged before their start and not charged yet.
    on_hold_minor: i64,
    /// The same as `on_hold_minor`: what the wallet's unpaid bookings hold.
    held_minor: i64,
    /// What a booking may spend: `balance_minor - held_minor` (negative when a deduction took
    /// the balance below the holds).
    available_minor: i64,
    /// Reservations whose charge failed for want of credits.
    payments_due: Vec<ApiPaymentDue>,
    /// The balance as a decimal string in the currency (`125.00`).
    balance: String,
    currency: String,
    /// A page of movements, newest first (`limit`, default 100, and `cursor`).
    entries: Vec<ApiEntry>,
    /// The cursor of the next (older) page of `entries`; also in the `Link` header.
    next_cursor: Option<String>,
}

/// A reservation waiting for credits: paid as soon as the wallet holds `price_minor`, released
/// at `release_at` if not.
#[derive(Debug, Serialize)]
pub struct ApiPaymentDue {
    reservation_id: i64,
    price_minor: i64,
    start: String,
    release_at: String,
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
    /// Berth's own reason as data (`{"what": "sla_credit", "incident": 7}`); null for a typed one.
    berth_reason: Option<berth_app::domain::ledger::BerthReason>,
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
            berth_reason: entry.berth_reason,
            reservation_id: entry.reservation_id,
        }
    }
}

/// `?format=json` (default) or `?format=csv`; `limit` and `cursor` page the movements.
#[derive(Debug, serde::Deserialize)]
pub struct WalletQuery {
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    limit: Option<i64>,
    #[serde(default)]
    cursor: Option<String>,
}

/// `GET /api/v1/wallet`: the caller's balance and movements; `?format=csv` downloads the
/// movements as CSV (RFC 4180, UTF-8; amounts as decimal strings, times in RFC 3339 UTC).
pub async fn wallet(
    State(state): State<AppState>,
    actor: Actor,
    axum::extract::OriginalUri(uri): axum::extract::OriginalUri,
    query: Result<axum::extract::Query<WalletQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<axum::response::Response, AppError> {
    use axum::response::IntoResponse;
    let axum::extract::Query(query) = query.map_err(|rejection| {
        AppError::invalid(
            "query",
            Problem::Unreadable {
                detail: rejection.body_text(),
            },
        )
    })?;
    let page = berth_app::backend::input::page(
        berth_app::domain::paging::ListKind::WalletEntries,
        query.limit,
        query.cursor.as_deref(),
    )?;
    let wallet = ledger::wallet(&state, actor.user.id, &page).await?;
    let headers = super::next_page_headers(&uri, wallet.next.as_deref());
    match query.format.as_deref() {
        None | Some("json") => Ok((headers, Json(api_wallet(wallet))).into_response()),
        Some("csv") => {
            let csv = wallet_csv(&wallet).map_err(AppError::internal)?;
            Ok((
                headers,
                [
                    (axum::http::header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                    (
                        axum::http::header::CONTENT_DISPOSITION,
                        "attachment; filename=\"berth-wallet.csv\"",
                    ),
                ],
                csv,
            )
                .into_response())
        }
        Some(other) => Err(AppError::invalid(
            "format",
            Problem::Unreadable {
                detail: format!("unknown format `{other}`: use json or csv"),
            },
        )),
    }
}

/// The movements as CSV, newest first.
fn wallet_csv(wallet: &Wallet) -> Result<String, csv::Error> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record([
        "transaction_id",
        "at",
        "kind",
        "amount",
        "balance_after",
        "currency",
        "reason",
        "reservation_id",
    ])?;
    for entry in &wallet.entries {
        writer.write_record([
            entry.transaction_id.to_string(),
            entry.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            entry.kind.as_str().to_owned(),
            entry.amount.to_decimal_string(&wallet.currency),
            entry.balance_after.to_decimal_string(&wallet.currency),
            wallet.currency.code().to_owned(),
            crate::api::v1::csv_export::text(&entry.reason).into_owned(),
            entry
                .reservation_id
                .map(|id| id.to_string())
                .unwrap_or_default(),
        ])?;
    }
    let bytes = writer.into_inner().map_err(|err| err.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn api_wallet(wallet: Wallet) -> ApiWallet {
    let funds = wallet.funds();
    let Wallet {
        balance,
        currency,
        entries,
        on_hold,
        payments_due,
        next,
        ..
    } = wallet;
    let utc =
        |at: chrono::DateTime<chrono::Utc>| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    ApiWallet {
        balance_minor: balance.minor(),
        on_hold_minor: on_hold.minor(),
        held_minor: on_hold.minor(),
        available_minor: funds.available().minor(),
        payments_due: payments_due
            .into_iter()
            .map(|due| ApiPaymentDue {
                reservation_id: due.reservation_id,
                price_minor: due.price.minor(),
                start: utc(due.start),
                release_at: utc(due.release_at),
            })
            .collect(),
        balance: balance.to_decimal_string(&currency),
        currency: currency.code().to_owned(),
        entries: entries.into_iter().map(ApiEntry::new).collect(),
        next_cursor: next,
    }
}

/// The answer to a grant or deduction.
#[derive(Debug, Serialize)]
pub struct ApiCredit {
    transaction_id: i64,
    /// The user's wallet, for a user's grant.
    #[serde(skip_serializing_if = "Option::is_none")]
    email: Option<String>,
    /// The team's wallet, for a team's grant.
    #[serde(skip_serializing_if = "Option::is_none")]
    team_id: Option<i64>,
    amount_minor: i64,
    balance_minor: i64,
}

/// `POST /api/v1/admin/credits` (platform admins): `{"email", "amount_minor", "reason"}` for a
/// user's wallet, or `{"team_id", …}` for a team's; a negative amount deducts. 201 with the new balance; 409 when a deduction exceeds it. With an
/// `Idempotency-Key` header, a retry of the same request answers the first result.
pub async fn change_credits(
    State(state): State<AppState>,
    actor: Actor,
    headers: axum::http::HeaderMap,
    body: Result<Json<CreditForm>, JsonRejection>,
) -> Result<(StatusCode, Json<ApiCredit>), AppError> {
    // Outsiders learn nothing about the input before the role is checked.
    actor.require_platform_admin()?;
    let Json(form) = body.map_err(body_error)?;
    let key = idempotency_key(&headers)?;
    let amount_minor = ledger::parse_minor_units(&form.amount_minor)?;
    let wallet = match (form.email.as_deref(), form.team_id) {
        (Some(email), None) => ledger::CreditWallet::User(email),
        (None, Some(team)) => ledger::CreditWallet::Team(team),
        _ => {
            return Err(AppError::invalid(
                "email",
                Problem::Unreadable {
                    detail: "give either email (a user's wallet) or team_id (a team's)".into(),
                },
            ));
        }
    };
    let done = ledger::admin_credits(
        &state,
        &actor,
        wallet,
        amount_minor,
        &form.reason,
        key,
        state.now(),
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(ApiCredit {
            transaction_id: done.transaction_id,
            email: done.user.map(|user| user.email.as_str().to_owned()),
            team_id: done.team_id,
            amount_minor: done.amount.minor(),
            balance_minor: done.balance.minor(),
        }),
    ))
}

/// One reservation whose payment is due.
#[derive(Debug, Serialize)]
pub struct ApiDuePayment {
    reservation: berth_app::domain::reservation::Reservation,
    release_at: String,
    owner_balance_minor: i64,
}

/// `GET /api/v1/admin/payments-due` (platform admins): reservations whose charge failed for want
/// of credits, soonest start first.
pub async fn payments_due(
    State(state): State<AppState>,
    actor: Actor,
) -> Result<Json<Vec<ApiDuePayment>>, AppError> {
    let due = ledger::payments_due(&state, &actor, state.now()).await?;
    Ok(Json(
        due.into_iter()
            .map(|item| ApiDuePayment {
                release_at: item
                    .release_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                owner_balance_minor: item.balance.minor(),
                reservation: item.reservation,
            })
            .collect(),
    ))
}
