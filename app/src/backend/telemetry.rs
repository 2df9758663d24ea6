//! The telemetry service: node agents register and report through it (over HTTP with a node
//! token, or in-process), and the pages, the JSON API and `/metrics` read through it.

use crate::backend::auth::tokens;
use crate::backend::db::{self, begin_write, telemetry as store};
use crate::backend::reservations::failover::{self, Failure};
use crate::backend::state::{AppState, TelemetrySettings};
use crate::domain::failover::{FELL_OFF_BUS_OUT_FOR, FailureCause, XID_FELL_OFF_BUS};
use crate::domain::notify::{GpuProblem, NODE_SILENT_AFTER, NewEvent};
use crate::domain::problem::Problem;
use crate::domain::telemetry::{
    GpuEvent, GpuHistory, LiveFleet, LiveGpu, LiveNode, MAX_HISTORY_DAYS, RawPoint, Registration,
    Report, Series, SourceKind, is_stale, validate_registration, validate_report, wants_raw,
};
use crate::error::AppError;
use chrono::{DateTime, Duration, Utc};
use sea_orm::DatabaseConnection;
use std::collections::HashMap;

/// Most raw points one history answer carries.
const MAX_RAW_POINTS: u64 = 25_000;

/// The node a token reports for. A missing, unknown or revoked token is `Unauthorized`.
pub async fn authenticate_node(state: &AppState, token: Option<&str>) -> Result<i64, AppError> {
    let db = &state.db;
    let token = token.ok_or(AppError::Unauthorized)?;
    store::node_for_token(db, &tokens::hash(token))
        .await?
        .ok_or(AppError::Unauthorized)
}

/// Creates the node `name` if it does not exist and issues a token for it; returns the node's
/// id and the token (shown once; only its hash is stored). `accept_new_gpus`, when given, sets
/// whether the GPUs its agent reports for the first time are accepted at once (otherwise they
/// wait for a platform admin); a new node's default is to wait.
pub async fn issue_node_token(
    db: &DatabaseConnection,
    name: &str,
    accept_new_gpus: Option<bool>,
    actor_id: Option<i64>,
    now: DateTime<Utc>,
) -> Result<(i64, String), AppError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 128 {
        return Err(AppError::invalid("name", Problem::Name { max: 128 }));
    }
    let (token, hash) = tokens::generate();
    let txn = begin_write(db).await?;
    let node_id = store::find_or_create_node(&txn, name, name, accept_new_gpus, now).await?;
    let token_id = store::insert_node_token(&txn, node_id, &hash, now).await?;
    crate::backend::db::audit::append(
        &txn,
        crate::backend::db::audit::NewEntry {
            at: now,
            actor_id,
            action: crate::domain::audit::AuditAction::NodeTokenIssue,
            target_kind: "node",
            target_id: node_id.to_string(),
            team_id: None,
        },
        None::<&()>,
        Some(&serde_json::json!({
            "node": name,
            "token_id": token_id,
            "accept_new_gpus": accept_new_gpus,
        })),
    )
    .await?;
    txn.commit().await?;
    Ok((node_id, token))
}

/// Accepts a GPU an agent reported into the inventory (platform admins), with its audit entry:
/// from then on it is listed and bookable. Accepting it again changes nothing.
pub async fn accept_gpu(
    state: &AppState,
    actor: &crate::backend::auth::actor::Actor,
    gpu_id: i64,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let db = &state.db;
    actor.require_platform_admin()?;
    let txn = begin_write(db).await?;
    let before = db::inventory::accept_gpu(&txn, gpu_id, now)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("GPU {gpu_id}")))?;
    if before.pending {
        crate::backend::db::audit::append(
            &txn,
            crate::backend::db::audit::NewEntry {
                at: now,
                actor_id: Some(actor.user.id),
                action: crate::domain::audit::AuditAction::GpuAccept,
                target_kind: "gpu",
                target_id: gpu_id.to_string(),
                team_id: None,
            },
            Some(
                &serde_json::json!({ "pending": true, "uuid": before.uuid, "model": before.model }),
            ),
            Some(&serde_json::json!({ "pending": false })),
        )
        .await?;
        tracing::info!(gpu.id = gpu_id, gpu.uuid = %before.uuid, "GPU accepted");
    }
    txn.commit().await?;
    Ok(())
}

/// Revokes every live token of node `node_id`, with its audit entry; answers how many were live.
pub async fn revoke_node_tokens(
    db: &DatabaseConnection,
    node_id: i64,
    actor_id: Option<i64>,
    now: DateTime<Utc>,
) -> Result<u64, AppError> {
    let txn = begin_write(db).await?;
    let revoked = store::revoke_node_tokens(&txn, node_id, now).await?;
    if revoked > 0 {
        crate::backend::db::audit::append(
            &txn,
            crate::backend::db::audit::NewEntry {
                at: now,
                actor_id,
                action: crate::domain::audit::AuditAction::NodeTokenRevoke,
                target_kind: "node",
                target_id: node_id.to_string(),
                team_id: None,
            },
            Some(&serde_json::json!({ "live_tokens": revoked })),
            Some(&serde_json::json!({ "live_tokens": 0 })),
        )
        .await?;
    }
    txn.commit().await?;
    Ok(revoked)
}

/// The UUIDs in a request mapped to their GPUs, all of which must belong to `node_id`: a GPU
/// of another node is a conflict (409, naming it); with `require_known`, an unknown UUID is a
/// validation error.
async fn own_gpus<'a>(
    db: &impl sea_orm::ConnectionTrait,
    node_id: i64,
    uuids: impl Iterator<Item = &'a str>,
    require_known: bool,
) -> Result<HashMap<String, i64>, AppError> {
    let mut wanted: Vec<&str> = uuids.collect();
    wanted.sort_unstable();
    wanted.dedup();
    let found = store::gpus_by_uuid(db, &wanted).await?;
    let mut own = HashMap::new();
    for uuid in wanted {
        match found.get(uuid) {
            Some(&(gpu_id, owner)) if owner == node_id => {
                own.insert(uuid.to_owned(), gpu_id);
            }
            Some(_) => {
                return Err(AppError::Conflict(Problem::GpuOfAnotherNode {
                    uuid: uuid.to_owned(),
                }));
            }
            None if require_known => {
                return Err(AppError::invalid(
                    "uuid",
                    Problem::UnregisteredGpu {
                        uuid: uuid.to_owned(),
                    },
                ));
            }
            None => {}
        }
    }
    Ok(own)
}

/// Syncs a node's inventory with what its agent found (one transaction).
pub async fn register(
    db: &DatabaseConnection,
    settings: &TelemetrySettings,
    node_id: i64,
    registration: &Registration,
    now: DateTime<Utc>,
) -> Result<store::SyncOutcome, AppError> {
    validate_registration(registration)
        .map_err(|(field, problem)| AppError::invalid(&field, problem))?;
    let txn = begin_write(db).await?;
    own_gpus(
        &txn,
        node_id,
        registration.gpus.iter().map(|g| g.uuid.as_str()),
        false,
    )
    .await?;
    let outcome = store::sync_inventory(
        &txn,
        node_id,
        registration,
        settings.new_gpu_price_minor,
        now,
    )
    .await?;
    // The holders of a vanished GPU are told, and their bookings move to an equivalent GPU, in
    // the same transaction.
    for (gpu_id, uuid) in &outcome.vanished_gpus {
        let problem = GpuProblem::Missing { gpu: uuid.clone() };
        tell_holders(&txn, *gpu_id, problem, now, now).await?;
        crate::backend::incidents::open_for_gpu(
            &txn,
            settings.incident_first_response,
            crate::domain::incident::Trigger::GpuGone,
            *gpu_id,
            now,
            now,
        )
        .await?;
        let failure = Failure {
            gpus: vec![*gpu_id],
            at: now,
            until: None,
            cause: FailureCause::Missing,
        };
        failover::move_off(&txn, &failure, None, now, now + settings.offer_horizon).await?;
    }
    txn.commit().await?;
    if outcome != store::SyncOutcome::default() {
        tracing::info!(
            node.id = node_id,
            gpus.added = outcome.added,
            gpus.vanished = outcome.vanished,
            gpus.returned = outcome.returned,
            gpus.pending = outcome.pending,
            "node inventory changed"
        );
    }
    Ok(outcome)
}

/// Records a demo node's simulated agent without touching its GPUs (the demo fleet is the
/// inventory).
pub async fn note_agent(
    db: &DatabaseConnection,
    node_id: i64,
    registration: &Registration,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    store::note_agent(db, node_id, registration, now).await?;
    Ok(())
}

/// What a report stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReportOutcome {
    /// New samples (a resent sample is not counted twice).
    pub samples: u64,
    /// Events.
    pub events: usize,
}

/// Stores a report: all of it, or nothing when any part is invalid (one transaction).
pub async fn report(
    db: &DatabaseConnection,
    settings: &TelemetrySettings,
    node_id: i64,
    report: &Report,
    now: DateTime<Utc>,
) -> Result<ReportOutcome, AppError> {
    validate_report(report, now, settings.raw_keep)
        .map_err(|(field, problem)| AppError::invalid(&field, problem))?;
    let txn = begin_write(db).await?;
    let gpus = own_gpus(
        &txn,
        node_id,
        report
            .samples
            .iter()
            .map(|s| s.uuid.as_str())
            .chain(report.events.iter().map(|e| e.uuid.as_str()))
            .chain(report.access.iter().map(|e| e.uuid.as_str())),
        true,
    )
    .await?;
    let samples = store::store_samples(&txn, node_id, &report.samples, &gpus, now).await?;
    let events = store::store_events(&txn, &report.events, &gpus).await?;
    // An XID error on a booked GPU is told to the booking's holder, in the same transaction.
    for event in &report.events {
        if let (crate::domain::telemetry::EventKind::Xid, Some(code), Some(gpu_id)) =
            (event.kind, event.code, gpus.get(&event.uuid))
        {
            let problem = GpuProblem::Xid {
                gpu: event.uuid.clone(),
                code,
            };
            tell_holders(&txn, *gpu_id, problem, event.at, now).await?;
            if code == XID_FELL_OFF_BUS {
                // The incident first: it records the booking's GPUs before the move.
                crate::backend::incidents::open_for_gpu(
                    &txn,
                    settings.incident_first_response,
                    crate::domain::incident::Trigger::Xid79,
                    *gpu_id,
                    event.at,
                    now,
                )
                .await?;
                fell_off_bus(&txn, *gpu_id, event.at, now, settings.offer_horizon).await?;
            }
        }
    }
    store_access(&txn, node_id, &report.access, &gpus, now).await?;
    crate::backend::env_profiles::store_reports(&txn, node_id, &report.environments, now).await?;
    txn.commit().await?;
    Ok(ReportOutcome { samples, events })
}

/// GPU `gpu_id` fell off the bus at `at`: Berth takes it out of booking for
/// [`FELL_OFF_BUS_OUT_FOR`] (a maintenance window platform admins end once it is back) unless
/// maintenance already covers it, and moves its bookings to equivalent GPUs.
async fn fell_off_bus(
    txn: &sea_orm::DatabaseTransaction,
    gpu_id: i64,
    at: DateTime<Utc>,
    now: DateTime<Utc>,
    offer_horizon: chrono::TimeDelta,
) -> Result<(), AppError> {
    let from = crate::domain::schedule::slot_floor(at.min(now));
    if !crate::backend::db::maintenance::covers(txn, gpu_id, now).await? {
        let window = crate::domain::schedule::Window::new(from, from + FELL_OFF_BUS_OUT_FOR)
            .map_err(AppError::internal)?;
        let why = crate::domain::maintenance::BerthMaintenance::FellOffBus {
            xid: XID_FELL_OFF_BUS,
        };
        let request = crate::domain::maintenance::NewMaintenance {
            window,
            reason: why.english(),
            berth_reason: Some(why),
        };
        crate::backend::db::maintenance::insert(txn, gpu_id, &request, None, now).await?;
    }
    let failure = Failure {
        gpus: vec![gpu_id],
        at,
        until: None,
        cause: FailureCause::FellOffBus,
    };
    failover::move_off(txn, &failure, None, now, now + offer_horizon).await?;
    Ok(())
}

/// Stores what the agent did about access (with the lease only when it is one of this node's)
/// and tells the holder: ready, ended, someone else on their GPU (each once: the outbox keeps
/// one event per key, however often an agent repeats itself).
async fn store_access(
    txn: &sea_orm::DatabaseTransaction,
    node_id: i64,
    access: &[crate::domain::telemetry::AccessEvent],
    gpus: &std::collections::HashMap<String, i64>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    use crate::backend::db::node_access::{self, NewAccessEvent};
    use crate::domain::telemetry::AccessKind;
    if access.is_empty() {
        return Ok(());
    }
    let mut views: std::collections::HashMap<i64, Option<crate::domain::reservation::Reservation>> =
        std::collections::HashMap::new();
    let mut rows = Vec::with_capacity(access.len());
    let mut notices = Vec::new();
    let node = node_access::node(txn, node_id).await?;
    for event in access {
        let Some(gpu_id) = gpus.get(&event.uuid).copied() else {
            continue;
        };
        // The lease named, if it is one of this node's and holds this GPU.
        let view = match event.reservation_id {
            Some(id) => {
                let view = match views.get(&id) {
                    Some(view) => view.clone(),
                    None => {
                        let view = crate::backend::db::reservations::view_of(txn, id, now)
                            .await?
                            .filter(|view| view.node_id == node_id);
                        views.insert(id, view.clone());
                        view
                    }
                };
                view.filter(|view| view.gpu_ids.contains(&gpu_id))
            }
            None => None,
        };
        rows.push(NewAccessEvent {
            gpu_id,
            reservation_id: view.as_ref().map(|v| v.id),
            at: event.at,
            kind: event.kind.as_str(),
            pid: event.pid.map(i64::from),
            uid: event.uid.map(i64::from),
            user_name: event.user.clone(),
            memory_mib: event
                .memory_mib
                .map(|m| i64::try_from(m).unwrap_or(i64::MAX)),
        });
        let Some(view) = view else { continue };
        match event.kind {
            AccessKind::Granted => {
                let login = event.user.clone().unwrap_or_default();
                let host = node
                    .as_ref()
                    .map(|n| n.hostname.clone())
                    .unwrap_or_default();
                notices.push(NewEvent::lease_ready(
                    &view,
                    &format!("ssh {login}@{host}"),
                    now,
                ));
            }
            AccessKind::Revoked => notices.push(NewEvent::lease_ended(&view, now)),
            AccessKind::Unauthorized => {
                let problem = GpuProblem::Intruder {
                    gpu: event.uuid.clone(),
                    user: event.user.clone().unwrap_or_else(|| {
                        event.uid.map(|uid| uid.to_string()).unwrap_or_default()
                    }),
                    pid: event.pid.unwrap_or(0),
                };
                notices.push(NewEvent::gpu_problem(&view, problem, now));
            }
            _ => {}
        }
    }
    node_access::insert_access_events(txn, &rows).await?;
    if !notices.is_empty() {
        crate::backend::notify::record(txn, &notices).await?;
    }
    Ok(())
}

/// Tells the holders of the bookings that hold `gpu_id` at `at` that it had `problem` (once per
/// booking, GPU and kind of problem), inside the caller's transaction.
async fn tell_holders(
    txn: &sea_orm::DatabaseTransaction,
    gpu_id: i64,
    problem: GpuProblem,
    at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    // The booking slot `at` falls in: bookings lie on the slot grid, so those overlapping it
    // hold the GPU at `at`.
    let slot = crate::domain::schedule::slot_floor(at);
    let Ok(instant) = crate::domain::schedule::Window::new(
        slot,
        slot + Duration::minutes(crate::domain::schedule::SLOT_MINUTES),
    ) else {
        return Ok(());
    };
    let holds = crate::backend::db::reservations::holds_on(txn, &[gpu_id], &instant).await?;
    for hold in holds {
        if let Some(view) =
            crate::backend::db::reservations::view_of(txn, hold.reservation_id, now).await?
        {
            crate::backend::notify::record(
                txn,
                &[NewEvent::gpu_problem(&view, problem.clone(), now)],
            )
            .await?;
        }
    }
    Ok(())
}

/// Tells every platform admin about each node whose agent has been silent for
/// [`NODE_SILENT_AFTER`] (once per silence: a report ends it), in one transaction.
pub async fn tell_silent_nodes(
    db: &DatabaseConnection,
    first_response: Duration,
    now: DateTime<Utc>,
) -> Result<u32, AppError> {
    let txn = begin_write(db).await?;
    let silent = store::newly_silent_nodes(&txn, now - NODE_SILENT_AFTER).await?;
    if silent.is_empty() {
        txn.rollback().await?;
        return Ok(0);
    }
    let admins = crate::backend::db::users::platform_admins(&txn).await?;
    for (node_id, name, last_seen) in &silent {
        let events: Vec<NewEvent> = admins
            .iter()
            .map(|admin| NewEvent::node_silent(*admin, *node_id, name, *last_seen, now))
            .collect();
        crate::backend::notify::record(&txn, &events).await?;
        // The bookings running there lost their GPUs: each gets an incident.
        crate::backend::incidents::open_for_silent_node(
            &txn,
            first_response,
            *node_id,
            *last_seen,
            now,
        )
        .await?;
        store::mark_silence_told(&txn, *node_id, now).await?;
    }
    txn.commit().await?;
    Ok(u32::try_from(silent.len()).unwrap_or(u32::MAX))
}

/// What a Prometheus scrape of `/metrics` reports: the live fleet, every node with its GPUs
/// (for their labels), and each GPU's last XID error code.
#[derive(Debug)]
pub struct Scrape {
    /// Live values and which nodes report.
    pub fleet: LiveFleet,
    /// Every node with its GPUs.
    pub nodes: Vec<crate::domain::inventory::NodeInventory>,
    /// GPU id → its last XID code.
    pub last_xids: HashMap<i64, i64>,
    /// GPU id → the quarters confirmed reservations hold on it now (GPUs with none left out).
    pub reserved: HashMap<i64, i64>,
    /// Notification deliveries by status.
    pub deliveries: crate::domain::notify::DeliveryCounts,
    /// When the oldest delivery still queued was written.
    pub oldest_queued: Option<DateTime<Utc>>,
}

/// Reads what `/metrics` reports at `now`.
pub async fn scrape(state: &AppState, now: DateTime<Utc>) -> Result<Scrape, AppError> {
    let db = &state.db;
    let (fleet, nodes, last_xids, reserved, deliveries, oldest_queued) = tokio::try_join!(
        live_fleet(state, now),
        async { Ok::<_, AppError>(db::inventory::list_nodes_with_gpus(db).await?) },
        async { Ok::<_, AppError>(store::last_xids(db).await?) },
        async { Ok::<_, AppError>(db::reservations::reserved_quarters_at(db, now).await?) },
        async { Ok::<_, AppError>(db::notify::delivery_counts(db).await?) },
        async { Ok::<_, AppError>(db::notify::oldest_queued(db).await?) },
    )?;
    Ok(Scrape {
        fleet,
        nodes,
        last_xids,
        reserved,
        deliveries,
        oldest_queued,
    })
}

/// The latest values of every GPU and the state of every node's agent.
pub async fn live_fleet(state: &AppState, now: DateTime<Utc>) -> Result<LiveFleet, AppError> {
    let db = &state.db;
    let (nodes, gpus, vanished) = tokio::try_join!(
        store::node_states(db),
        store::live_gpus(db, None),
        store::vanished_gpus(db)
    )?;
    Ok(LiveFleet {
        nodes: nodes.into_iter().map(|node| live_node(node, now)).collect(),
        gpus,
        vanished,
    })
}

/// GPU `gpu_id`'s node's agent (node `node_id`) and the GPU's latest values, read without the
/// rest of the fleet.
pub async fn live_gpu(
    state: &AppState,
    node_id: i64,
    gpu_id: i64,
    now: DateTime<Utc>,
) -> Result<(Option<LiveNode>, Option<LiveGpu>), AppError> {
    let db = &state.db;
    let (node, mut gpus) = tokio::try_join!(
        store::node_state(db, node_id),
        store::live_gpus(db, Some(gpu_id)),
    )?;
    Ok((node.map(|node| live_node(node, now)), gpus.pop()))
}

fn live_node(node: store::NodeAgentState, now: DateTime<Utc>) -> LiveNode {
    LiveNode {
        node_id: node.node_id,
        source: node.source,
        stale: node.source.is_some() && is_stale(node.last_seen, node.interval_seconds, now),
        last_seen: node.last_seen,
        driver_version: node.driver_version,
    }
}

/// Checks a history range: `to` after `from`, at most [`MAX_HISTORY_DAYS`].
pub fn check_range(from: DateTime<Utc>, to: DateTime<Utc>) -> Result<(), AppError> {
    if to <= from {
        return Err(AppError::invalid("to", Problem::ToNotAfterFrom));
    }
    if to - from > Duration::days(MAX_HISTORY_DAYS) {
        return Err(AppError::invalid(
            "from",
            Problem::RangeTooLong {
                days: MAX_HISTORY_DAYS,
            },
        ));
    }
    Ok(())
}

/// The source of a GPU's node, or `NotFound` for an unknown GPU.
async fn gpu_source(db: &DatabaseConnection, gpu_id: i64) -> Result<Option<SourceKind>, AppError> {
    let listing = db::inventory::gpu_node(db, gpu_id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("GPU {gpu_id}")))?;
    Ok(store::node_states(db)
        .await?
        .into_iter()
        .find(|node| node.node_id == listing)
        .and_then(|node| node.source))
}

/// A GPU's history over `[from, to)`.
pub async fn history(
    state: &AppState,
    gpu_id: i64,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<GpuHistory, AppError> {
    let (db, settings) = (&state.db, &state.portal.telemetry);
    check_range(from, to)?;
    let source = gpu_source(db, gpu_id).await?;
    let series = if wants_raw(from, to, now, settings.raw_keep) {
        Series::Raw(
            store::samples(db, gpu_id, from, to, MAX_RAW_POINTS)
                .await?
                .into_iter()
                .map(|(at, readings)| RawPoint { at, readings })
                .collect(),
        )
    } else {
        Series::Minute(store::rollups(db, gpu_id, from, to).await?)
    };
    Ok(GpuHistory {
        gpu_id,
        from,
        to,
        source,
        simulated: source == Some(SourceKind::Simulated),
        series,
    })
}

/// A page of a GPU's events over `[from, to)`, newest first.
pub async fn events(
    state: &AppState,
    gpu_id: i64,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    page: &crate::domain::paging::PageRequest,
) -> Result<crate::domain::paging::Page<GpuEvent>, AppError> {
    use crate::domain::paging::{Cursor, ListKind, Page};
    let db = &state.db;
    check_range(from, to)?;
    gpu_source(db, gpu_id).await?;
    let rows = store::events(db, gpu_id, from, to, page.after, page.fetch()).await?;
    Ok(Page::from_rows(rows, page, ListKind::GpuEvents, |event| {
        Cursor::at(event.at, event.id)
    }))
}

/// How long after a minute ends its samples are waited for before it is rolled up.
const ROLLUP_GRACE: Duration = Duration::seconds(30);

/// Key of the PostgreSQL advisory lock that lets one replica at a time run the job.
const JOB_LOCK_KEY: i64 = 0x6265_7274_6874; // "bertht"

/// One run of the rollup-and-prune job at `now` (one transaction; replicas take turns).
pub async fn run_maintenance(
    db: &DatabaseConnection,
    settings: &TelemetrySettings,
    now: DateTime<Utc>,
) -> Result<store::MaintenanceOutcome, AppError> {
    let txn = begin_write(db).await?;
    if db.get_database_backend() == sea_orm::DbBackend::Postgres {
        use sea_orm::ConnectionTrait;
        txn.execute_unprepared(&format!("SELECT pg_advisory_xact_lock({JOB_LOCK_KEY})"))
            .await?;
    }
    let outcome = store::roll_up_and_prune(
        &txn,
        now - ROLLUP_GRACE,
        now - settings.raw_keep,
        now - settings.rollup_keep,
        settings.idle_util_percent,
    )
    .await?;
    txn.commit().await?;
    Ok(outcome)
}
