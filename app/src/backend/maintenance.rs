//! The maintenance service shared by the admin page's server functions and the JSON API: checks
//! the role, parses raw input into domain types with field-level errors, takes GPUs out of
//! booking (releasing what is in the way when asked) and ends windows early.

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::reservations::parse_time;
use crate::backend::state::AppState;
use crate::domain::audit::AuditAction;
use crate::domain::maintenance::{EndEarly, MaintenanceWindow, NewMaintenance, end_early};
use crate::domain::problem::Problem;
use crate::error::AppError;
use chrono::{DateTime, Utc};
use sea_orm::DatabaseConnection;
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
    let created = take_out(
        &state.db,
        &ids,
        &request,
        actor.user.id,
        (now, crate::backend::reservations::latest_start(state, now)),
        form.release_reservations,
    )
    .await?;
    state.wake.poke();
    tracing::info!(windows = created.len(), "maintenance set");
    Ok(created)
}

/// Takes `gpu_ids` out of booking during `request.window`, one window per GPU, all or none.
/// Fails with `Validation` for unknown GPUs and `Conflict` naming the reservations in the way,
/// unless `release` is set: then those reservations move to equivalent free GPUs, or are
/// released with their rest refunded where none is free (`reservations::failover`). One transaction that takes the same locks as a booking (the GPUs' rows on PostgreSQL,
/// the write lock on SQLite) and checks for confirmed reservations, so a booking and a
/// maintenance window can never both win a slot.
async fn take_out(
    db: &DatabaseConnection,
    gpu_ids: &[i64],
    request: &NewMaintenance,
    created_by: i64,
    (now, latest_start): (DateTime<Utc>, DateTime<Utc>),
    release: bool,
) -> Result<Vec<MaintenanceWindow>, AppError> {
    let txn = db::begin_write(db).await?;
    let found = db::maintenance::existing_gpus(&txn, gpu_ids).await?;
    if let Some(missing) = gpu_ids.iter().find(|id| !found.contains(id)) {
        return Err(invalid("gpu_ids", Problem::NoSuchGpu { id: *missing }));
    }
    db::reservations::lock_gpus(&txn, gpu_ids).await?;
    let mut in_the_way: Vec<i64> = db::reservations::holds_on(&txn, gpu_ids, &request.window)
        .await?
        .into_iter()
        .map(|hold| hold.reservation_id)
        .collect();
    in_the_way.sort_unstable();
    in_the_way.dedup();
    if !in_the_way.is_empty() && !release {
        return Err(AppError::Conflict(Problem::ReservationsInTheWay {
            ids: in_the_way,
        }));
    }
    let mut ids = Vec::with_capacity(gpu_ids.len());
    for gpu_id in gpu_ids {
        ids.push(db::maintenance::insert(&txn, *gpu_id, request, created_by, now).await?);
    }
    let mut moved = Vec::new();
    let mut released = Vec::new();
    if !in_the_way.is_empty() {
        use crate::backend::reservations::failover::{self, Failure, Outcome};
        let failure = Failure {
            gpus: gpu_ids.to_vec(),
            at: request.window.start(),
            until: Some(request.window.end()),
            cause: crate::domain::failover::FailureCause::Maintenance,
        };
        for outcome in
            failover::move_off(&txn, &failure, Some(created_by), now, latest_start).await?
        {
            match outcome {
                Outcome::Released { id } => released.push(id),
                other => moved.push(other.id()),
            }
        }
    }
    let created = db::maintenance::by_ids(&txn, ids).await?;
    for window in &created {
        db::audit::append(
            &txn,
            db::audit::NewEntry {
                at: now,
                actor_id: Some(created_by),
                action: AuditAction::MaintenanceCreate,
                target_kind: "maintenance",
                target_id: window.id.to_string(),
                team_id: None,
            },
            None::<&()>,
            Some(&serde_json::json!({
                "gpu_id": window.gpu_id,
                "start": request.window.start(),
                "end": request.window.end(),
                "reason": request.reason,
                "moved_reservations": moved,
                "released_reservations": released,
            })),
        )
        .await?;
    }
    txn.commit().await?;
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
    let txn = db::begin_write(&state.db).await?;
    let view = db::maintenance::find(&txn, id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("maintenance window {id}")))?;
    let window = view.window;
    let before = serde_json::json!({
        "gpu_id": view.gpu_id,
        "start": window.start(),
        "end": window.end(),
    });
    // An upcoming window goes, an ongoing one ends at the next slot boundary.
    let after = match end_early(&window, now) {
        EndEarly::Remove => {
            db::maintenance::delete(&txn, id).await?;
            None
        }
        EndEarly::EndAt(end) => {
            db::maintenance::set_end(&txn, id, end).await?;
            Some(serde_json::json!({
                "gpu_id": view.gpu_id,
                "start": window.start(),
                "end": end,
            }))
        }
        EndEarly::AlreadyOver => {
            return Err(AppError::Conflict(Problem::MaintenanceOver { id }));
        }
    };
    db::audit::append(
        &txn,
        db::audit::NewEntry {
            at: now,
            actor_id: Some(actor.user.id),
            action: AuditAction::MaintenanceCancel,
            target_kind: "maintenance",
            target_id: id.to_string(),
            team_id: None,
        },
        Some(&before),
        after.as_ref(),
    )
    .await?;
    txn.commit().await?;
    tracing::info!("maintenance ended early");
    Ok(view)
}
