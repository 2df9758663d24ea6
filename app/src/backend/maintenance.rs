//! The maintenance service shared by the admin page's server functions and the JSON API: checks
//! the role, parses raw input into domain types with field-level errors, and calls
//! `db::maintenance`.

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::reservations::parse_time;
use crate::backend::state::AppState;
use crate::domain::maintenance::{MaintenanceWindow, NewMaintenance};
use crate::domain::problem::Problem;
use crate::error::AppError;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Most GPUs one request may take out of booking (a large node, or a rack).
pub const MAX_GPUS_PER_REQUEST: usize = 256;

/// A maintenance request as the API or a form sends it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MaintenanceForm {
    /// The GPUs.
    pub gpu_ids: Vec<i64>,
    /// RFC 3339 start.
    pub start: String,
    /// RFC 3339 end.
    pub end: String,
    /// Why (shown to admins; users see "maintenance").
    pub reason: String,
    /// Release confirmed reservations in the way (refunded in full) instead of refusing.
    #[serde(default)]
    pub release_reservations: bool,
}

fn invalid(field: &str, problem: Problem) -> AppError {
    AppError::invalid(field, problem)
}

/// Sets maintenance for a platform admin.
#[tracing::instrument(skip_all, fields(user.id = actor.user.id))]
pub async fn create(
    state: &AppState,
    actor: &Actor,
    form: &MaintenanceForm,
    now: DateTime<Utc>,
) -> Result<Vec<MaintenanceWindow>, AppError> {
    actor.require_platform_admin()?;
    let start = parse_time("start", &form.start)?;
    let end = parse_time("end", &form.end)?;
    let request = NewMaintenance::parse(start, end, &form.reason, now)
        .map_err(|err| invalid(err.field(), err.problem()))?;
    let mut ids = form.gpu_ids.clone();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Err(invalid("gpu_ids", Problem::NoGpu));
    }
    if ids.len() > MAX_GPUS_PER_REQUEST {
        return Err(invalid(
            "gpu_ids",
            Problem::TooManyGpus {
                max: MAX_GPUS_PER_REQUEST,
            },
        ));
    }
    let created = db::maintenance::create(
        &state.db,
        &ids,
        &request,
        actor.user.id,
        now,
        form.release_reservations,
    )
    .await?;
    tracing::info!(windows = created.len(), "maintenance set");
    Ok(created)
}

/// Current and upcoming maintenance. Everyone signed in may see when GPUs are out; only platform
/// admins see who set it.
pub async fn list(
    state: &AppState,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<Vec<MaintenanceWindow>, AppError> {
    let mut list = db::maintenance::list_ending_after(&state.db, now).await?;
    if actor.require_platform_admin().is_err() {
        for window in &mut list {
            window.created_by = None;
        }
    }
    Ok(list)
}

/// Ends maintenance window `id` early (platform admins).
#[tracing::instrument(skip_all, fields(user.id = actor.user.id, maintenance.id = id))]
pub async fn end(
    state: &AppState,
    actor: &Actor,
    id: i64,
    now: DateTime<Utc>,
) -> Result<MaintenanceWindow, AppError> {
    actor.require_platform_admin()?;
    let ended = db::maintenance::end(&state.db, id, Some(actor.user.id), now).await?;
    tracing::info!("maintenance ended early");
    Ok(ended)
}
