//! Running the fleet (platform admins): prices per GPU model and per GPU, which GPUs can be
//! shared, and what the fleet admin page shows (GPUs, prices, teams with their quotas). Each
//! change is one write transaction with its audit entry.

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::db::audit::NewEntry;
use crate::backend::state::AppState;
use crate::domain::audit::AuditAction;
use crate::domain::money::Currency;
use crate::domain::problem::Problem;
use crate::domain::quota::TeamQuotas;
use crate::error::AppError;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The highest hourly price accepted (10,000,000.00 in a two-decimal currency).
pub const MAX_HOURLY_PRICE_MINOR: i64 = 1_000_000_000;

fn check_price(field: &str, minor: i64) -> Result<i64, AppError> {
    if (0..=MAX_HOURLY_PRICE_MINOR).contains(&minor) {
        Ok(minor)
    } else {
        Err(AppError::invalid(
            field,
            Problem::OutOfRange {
                min: 0,
                max: MAX_HOURLY_PRICE_MINOR,
            },
        ))
    }
}

/// Reads an amount typed in the currency (`3.49`) as minor units, 0 or more.
pub fn parse_price(field: &str, raw: &str, currency: &Currency) -> Result<i64, AppError> {
    let minor = crate::backend::input::amount(field, raw, currency, |_| true)?;
    check_price(field, minor)
}

/// Sets the hourly price of every GPU of `model` (not retired); answers how many changed.
pub async fn set_model_price(
    state: &AppState,
    actor: &Actor,
    model: &str,
    hourly_price_minor: i64,
    now: DateTime<Utc>,
) -> Result<u64, AppError> {
    let db = &state.db;
    actor.require_platform_admin()?;
    let price = check_price("hourly_price_minor", hourly_price_minor)?;
    let txn = db::begin_write(db).await?;
    let (changed, before) = db::inventory::set_model_price(&txn, model, price, now).await?;
    if changed == 0 {
        return Err(AppError::invalid(
            "model",
            Problem::NoGpuOfModel {
                model: model.to_owned(),
            },
        ));
    }
    db::audit::append(
        &txn,
        NewEntry {
            at: now,
            actor_id: Some(actor.user.id),
            action: AuditAction::GpuPrice,
            target_kind: "model",
            target_id: model.to_owned(),
            team_id: None,
        },
        Some(&serde_json::json!({ "hourly_price_minor": before })),
        Some(&serde_json::json!({ "hourly_price_minor": price, "gpus": changed })),
    )
    .await?;
    txn.commit().await?;
    Ok(changed)
}

/// A change to one GPU: its price, whether it can be shared (absent: unchanged).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GpuChange {
    /// Price of the whole GPU for an hour, minor units.
    #[serde(default)]
    pub hourly_price_minor: Option<i64>,
    /// Whether it can be booked in ½ and ¼ shares.
    #[serde(default)]
    pub shareable: Option<bool>,
}

/// Changes GPU `id` (platform admins), with its audit entry.
pub async fn update_gpu(
    state: &AppState,
    actor: &Actor,
    id: i64,
    change: &GpuChange,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let db = &state.db;
    actor.require_platform_admin()?;
    if let Some(price) = change.hourly_price_minor {
        check_price("hourly_price_minor", price)?;
    }
    let txn = db::begin_write(db).await?;
    let before =
        db::inventory::update_gpu(&txn, id, change.hourly_price_minor, change.shareable, now)
            .await?
            .ok_or_else(|| AppError::NotFound(format!("GPU {id}")))?;
    db::audit::append(
        &txn,
        NewEntry {
            at: now,
            actor_id: Some(actor.user.id),
            action: AuditAction::GpuPrice,
            target_kind: "gpu",
            target_id: id.to_string(),
            team_id: None,
        },
        Some(&GpuChange {
            hourly_price_minor: Some(before.hourly_price_minor),
            shareable: Some(before.shareable),
        }),
        Some(&GpuChange {
            hourly_price_minor: Some(
                change
                    .hourly_price_minor
                    .unwrap_or(before.hourly_price_minor),
            ),
            shareable: Some(change.shareable.unwrap_or(before.shareable)),
        }),
    )
    .await?;
    txn.commit().await?;
    Ok(())
}

/// Every team with its rules and quotas, by name.
pub async fn teams_with_quotas(state: &AppState) -> Result<Vec<TeamQuotas>, AppError> {
    let db = &state.db;
    let mut teams = Vec::new();
    for summary in db::teams::summaries(db, None).await? {
        let policy = db::quotas::policy(db, summary.id)
            .await?
            .unwrap_or_default();
        let quotas = db::quotas::quotas(db, summary.id).await?;
        teams.push(TeamQuotas {
            id: summary.id,
            name: summary.name,
            policy,
            quotas,
        });
    }
    Ok(teams)
}
