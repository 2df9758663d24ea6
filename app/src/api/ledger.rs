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
