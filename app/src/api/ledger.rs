//! The wallet for the pages (the JSON API's `GET /api/v1/wallet` uses the same service,
//! `server::ledger`).

use crate::domain::calendar::ZoneOffsets;
use crate::domain::ledger::Wallet;
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
}

/// The caller's wallet, in their time zone.
#[server(endpoint = "get_wallet")]
pub async fn get_wallet() -> Result<WalletPage, AppError> {
    use crate::api::reservations::request_zone;
    use crate::server::{auth::actor::require_actor, booking, ledger, state};
    state::with_status(
        async {
            let actor = require_actor().await?;
            let state = state::app_state()?;
            let wallet = ledger::wallet(&state.db, &state.portal.currency, actor.user.id).await?;
            let now = chrono::Utc::now();
            let from = wallet.entries.iter().map(|e| e.at).min().unwrap_or(now);
            Ok(WalletPage {
                zone: booking::zone_named(request_zone(&actor).as_deref(), from, now),
                wallet,
            })
        }
        .await,
    )
}

/// What the credits page shows platform admins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreditsPage {
    /// Every user with their balance, by name.
    pub users: Vec<(
        crate::domain::user::UserSummary,
        crate::domain::money::Money,
    )>,
    /// The currency.
    pub currency: crate::domain::money::Currency,
    /// A fresh idempotency key for the form, so a form sent twice grants once.
    pub form_key: String,
}

/// Users and balances, for platform admins.
#[server(endpoint = "get_credits_page")]
pub async fn get_credits_page() -> Result<CreditsPage, AppError> {
    use crate::server::{auth::actor::require_actor, db, state};
    state::with_status(
        async {
            let actor = require_actor().await?;
            actor.require_platform_admin()?;
            let state = state::app_state()?;
            let balances = db::ledger::balances(&state.db).await?;
            let mut users: Vec<_> = db::users::list_users(&state.db)
                .await?
                .into_iter()
                .map(|user| {
                    let balance = balances
                        .get(&user.id)
                        .copied()
                        .unwrap_or(crate::domain::money::Money::ZERO);
                    (user, balance)
                })
                .collect();
            users.sort_by_key(|a| a.0.name.to_lowercase());
            Ok(CreditsPage {
                users,
                currency: state.portal.currency.clone(),
                form_key: uuid::Uuid::new_v4().to_string(),
            })
        }
        .await,
    )
}
