//! The wallet for the pages (the JSON API's `GET /api/v1/wallet` uses the same service,
//! `backend::ledger`).

use crate::domain::ledger::Wallet;
use crate::domain::zone::ZoneOffsets;
use crate::error::AppError;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// What the wallet page shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WalletPage {
    /// Balance and movements.
    pub wallet: Wallet,
    /// The viewer's time zone over the movements shown.
    pub zone: ZoneOffsets,
    /// With card payments on: the caller's cards and card payments.
    pub cards: Option<CardsPanel>,
}

/// The wallet page's cards: saved cards, payments by card, and what the page's script needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CardsPanel {
    /// Saved cards, newest first.
    pub cards: Vec<crate::domain::payment::SavedCard>,
    /// Payments by card, newest first.
    pub payments: Vec<crate::domain::payment::CardPayment>,
    /// Refunds to cards, newest first.
    #[serde(default)]
    pub refunds: Vec<crate::domain::payment::CardRefund>,
    /// Where Stripe.js is loaded from.
    pub js_url: String,
    /// Stripe's publishable key, for Stripe.js.
    pub publishable_key: String,
    /// The smallest top-up, minor units.
    pub min_minor: i64,
    /// The largest top-up, minor units.
    pub max_minor: i64,
}

/// The caller's wallet with a page of its movements (100, after `cursor`), in their time zone.
#[server(endpoint = "get_wallet")]
pub async fn get_wallet(cursor: Option<String>) -> Result<WalletPage, AppError> {
    use crate::api::context::signed_in;
    use crate::domain::paging::ListKind;
    signed_in(|call| async move {
        let state = &call.state;
        let page = crate::backend::input::page(ListKind::WalletEntries, None, cursor.as_deref())?;
        let wallet = crate::backend::ledger::wallet(state, call.actor.user.id, &page).await?;
        let now = call.now;
        let from = wallet.entries.iter().map(|e| e.at).min().unwrap_or(now);
        let to = wallet
            .payments_due
            .iter()
            .map(|due| due.start)
            .max()
            .unwrap_or(now)
            .max(now);
        let cards = match &state.stripe {
            Some(stripe) => Some(CardsPanel {
                cards: crate::backend::card_payments::cards(state, &call.actor).await?,
                payments: crate::backend::card_payments::payments(state, &call.actor).await?,
                refunds: crate::backend::card_payments::refunds(state, &call.actor).await?,
                js_url: stripe.settings().js_url.clone(),
                publishable_key: stripe.settings().publishable_key.clone(),
                min_minor: state.portal.top_up.min_minor,
                max_minor: state.portal.top_up.max_minor,
            }),
            None => None,
        };
        Ok(WalletPage {
            zone: call.zone_over(from, to),
            wallet,
            cards,
        })
    })
    .await
}

/// What the credits page shows platform admins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreditsPage {
    /// A page of users with their balances, oldest account first.
    pub users: Vec<(
        crate::domain::user::UserSummary,
        crate::domain::money::Money,
    )>,
    /// The cursor of the next page, when there is one.
    #[serde(default)]
    pub next: Option<String>,
    /// The currency.
    pub currency: crate::domain::money::Currency,
    /// A fresh idempotency key for the form, so a form sent twice grants once.
    pub form_key: String,
}

/// A page of users and balances, for platform admins.
#[server(endpoint = "get_credits_page")]
pub async fn get_credits_page(cursor: Option<String>) -> Result<CreditsPage, AppError> {
    use crate::api::context::platform_admin;
    use crate::domain::paging::ListKind;
    platform_admin(|call| async move {
        let page = crate::backend::input::page(ListKind::Users, None, cursor.as_deref())?;
        let users = crate::backend::ledger::user_balances(&call.state, &call.actor, &page).await?;
        Ok(CreditsPage {
            users: users.items,
            next: users.next,
            currency: call.state.portal.currency.clone(),
            form_key: uuid::Uuid::new_v4().to_string(),
        })
    })
    .await
}

/// What the payments page shows platform admins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaymentsPage {
    /// Soonest start first.
    pub due: Vec<crate::domain::ledger::DuePayment>,
    /// The currency.
    pub currency: crate::domain::money::Currency,
    /// The viewer's time zone over the reservations' times.
    pub zone: ZoneOffsets,
}

/// Reservations whose payment is due, for platform admins.
#[server(endpoint = "get_payments_page")]
pub async fn get_payments_page() -> Result<PaymentsPage, AppError> {
    use crate::api::context::platform_admin;
    platform_admin(|call| async move {
        let now = call.now;
        let due = crate::backend::ledger::payments_due(&call.state, &call.actor, now).await?;
        let from = due
            .iter()
            .map(|d| d.release_at)
            .min()
            .unwrap_or(now)
            .min(now);
        let to = due
            .iter()
            .map(|d| d.reservation.window.start())
            .max()
            .unwrap_or(now)
            .max(now);
        Ok(PaymentsPage {
            due,
            currency: call.state.portal.currency.clone(),
            zone: call.zone_over(from, to),
        })
    })
    .await
}

/// The credits page's form (platform admins): grants (`direction` `grant`) or deducts
/// (`deduct`) `amount`, typed in the currency, for the user with `email`; back to the page with
/// `done=` the ledger transaction, or the refusal. The same `idempotency_key` again (a double
/// click, a reload) records once.
#[server(endpoint = "forms/credits")]
pub async fn change_credits(
    email: String,
    direction: String,
    amount: String,
    reason: String,
    #[server(default)] idempotency_key: Option<String>,
) -> Result<(), AppError> {
    use crate::api::forms::back_to;
    use crate::backend::ledger;
    use crate::domain::problem::Problem;
    let call = crate::api::context::platform_admin(|call| async move { Ok(call) }).await?;
    let currency = &call.state.portal.currency;
    let result = async {
        let amount = crate::backend::input::amount("amount", &amount, currency, |minor| minor > 0)?;
        let amount_minor = match direction.as_str() {
            "grant" => amount,
            "deduct" => -amount,
            other => {
                return Err(AppError::invalid(
                    "direction",
                    Problem::Unreadable {
                        detail: format!("`{other}`: use grant or deduct"),
                    },
                ));
            }
        };
        ledger::admin_credits(
            &call.state,
            &call.actor,
            ledger::CreditWallet::User(&email),
            amount_minor,
            &reason,
            idempotency_key.as_deref(),
            call.now,
        )
        .await
    }
    .await;
    back_to(
        "/admin/credits",
        result.map(|done| ("done", done.transaction_id.to_string())),
    )
}

/// A booking's payment by card, on its page: how it is paid, the latest card payment, and the
/// holder's cards to pay it with while its payment is due.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BookingCardPanel {
    /// The booking.
    pub reservation_id: i64,
    /// Its payment status (`due`, `pending`, `paid`, …).
    pub payment_status: crate::domain::reservation::PaymentStatus,
    /// Its price, minor units.
    pub price_minor: i64,
    /// The currency.
    pub currency: crate::domain::money::Currency,
    /// Its latest card payment.
    pub payment: Option<crate::domain::payment::CardPayment>,
    /// The holder's saved cards (id, label), to pay it with while it is due.
    pub cards: Vec<(i64, String)>,
    /// When the payment job releases it if still unpaid, in the holder's zone.
    pub release_at: Option<String>,
    /// Where Stripe.js is loaded from.
    pub js_url: String,
    /// Stripe's publishable key.
    pub publishable_key: String,
}

/// The card panel of the caller's booking `id` (None when card payments are off, the booking
/// is not theirs, or a card has nothing to do with it).
#[server(endpoint = "get_booking_card")]
pub async fn get_booking_card(id: i64) -> Result<Option<BookingCardPanel>, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        let state = &call.state;
        let Some(stripe) = &state.stripe else {
            return Ok(None);
        };
        let Some(reservation) = crate::backend::reservations::one(state, &call.actor, id, call.now)
            .await
            .ok()
            .filter(|r| r.owner_id == call.actor.user.id && r.team.is_none())
        else {
            return Ok(None);
        };
        use crate::domain::reservation::PaymentStatus;
        let payment =
            crate::backend::card_payments::booking_payment(state, &call.actor, id).await?;
        let due = matches!(
            reservation.payment_status,
            PaymentStatus::Due | PaymentStatus::Pending
        ) && reservation.status
            == crate::domain::reservation::ReservationStatus::Confirmed;
        if payment.is_none() && !due {
            return Ok(None);
        }
        let cards: Vec<(i64, String)> = crate::backend::card_payments::cards(state, &call.actor)
            .await?
            .iter()
            .map(|c| (c.id, c.label()))
            .collect();
        // The payment job's release time, or the end of the card's grace when later.
        let release = state.portal.charge.release_at(reservation.window.start());
        let release = reservation
            .charge_at
            .map_or(release, |grace| grace.max(release));
        let release_at = (reservation.payment_status == PaymentStatus::Due).then(|| {
            let zone = call.zone_over(release, release);
            crate::domain::time_text::date_minute(zone.local(release))
        });
        Ok(Some(BookingCardPanel {
            reservation_id: id,
            payment_status: reservation.payment_status,
            price_minor: reservation.price_minor,
            currency: state.portal.currency.clone(),
            payment,
            cards,
            release_at,
            js_url: stripe.settings().js_url.clone(),
            publishable_key: stripe.settings().publishable_key.clone(),
        }))
    })
    .await
}
