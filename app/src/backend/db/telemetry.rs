//! Telemetry storage: node tokens, inventory sync, samples, the latest reading per GPU, events,
//! rollups and pruning.

use crate::backend::entity::{
    fleet_usage_hour, gpu, gpu_event, gpu_live, gpu_rollup, gpu_sample, node, node_token,
    reservation, reservation_gpu, reservation_usage, telemetry_state,
};
use crate::domain::report::Usage;
use crate::domain::telemetry::{
    EventKind, GpuEvent, GpuProcess, GpuSample, LiveGpu, Readings, Registration, ReportedEvent,
    Rollup, SourceKind, Stat, minute_of,
};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DbErr,
    EntityTrait, QueryFilter, QueryOrder, QuerySelect, RelationTrait,
};
use std::collections::HashMap;

/// Rows per multi-row INSERT (12 columns each: well under SQLite's 32,766 parameters).
const INSERT_CHUNK: usize = 1_000;

/// UTC milliseconds since the epoch.
pub fn to_ms(at: DateTime<Utc>) -> i64 {
    at.timestamp_millis()
}

/// The time of `ms` UTC milliseconds since the epoch.
pub fn from_ms(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

/// The node named `name`, created (not demo) if missing; returns its id.
pub async fn find_or_create_node(
    db: &impl ConnectionTrait,
    name: &str,
    hostname: &str,
    accept_new_gpus: Option<bool>,
    now: DateTime<Utc>,
) -> Result<i64, DbErr> {
    if let Some(existing) = node::Entity::find()
        .filter(node::Column::Name.eq(name))
        .one(db)
        .await?
    {
        if let Some(accept) = accept_new_gpus
            && accept != existing.accept_new_gpus
        {
            let mut row: node::ActiveModel = existing.clone().into();
            row.accept_new_gpus = Set(accept);
            row.update(db).await?;
        }
        return Ok(existing.id);
    }
    let inserted = node::ActiveModel {
        name: Set(name.to_owned()),
        hostname: Set(hostname.to_owned()),
        is_demo: Set(false),
        created_at: Set(now),
        accept_new_gpus: Set(accept_new_gpus.unwrap_or(false)),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(inserted.id)
}

/// Stores a node token's hash; returns the token's id.
pub async fn insert_node_token(
    db: &impl ConnectionTrait,
    node_id: i64,
    token_hash: &str,
    now: DateTime<Utc>,
) -> Result<i64, DbErr> {
    let inserted = node_token::ActiveModel {
        node_id: Set(node_id),
        token_hash: Set(token_hash.to_owned()),
        created_at: Set(now),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(inserted.id)
}

/// Revokes the tokens of a node; returns how many were live.
pub async fn revoke_node_tokens(
    db: &impl ConnectionTrait,
    node_id: i64,
    now: DateTime<Utc>,
) -> Result<u64, DbErr> {
    let result = node_token::Entity::update_many()
        .col_expr(node_token::Column::RevokedAt, Expr::value(now))
        .filter(node_token::Column::NodeId.eq(node_id))
        .filter(node_token::Column::RevokedAt.is_null())
        .exec(db)
        .await?;
    Ok(result.rows_affected)
}

/// Live (unrevoked) tokens per node.
pub async fn live_token_counts(db: &impl ConnectionTrait) -> Result<HashMap<i64, u64>, DbErr> {
    let rows: Vec<i64> = node_token::Entity::find()
        .select_only()
        .column(node_token::Column::NodeId)
        .filter(node_token::Column::RevokedAt.is_null())
        .into_tuple()
        .all(db)
        .await?;
    let mut counts = HashMap::new();
    for node in rows {
        *counts.entry(node).or_insert(0) += 1;
    }
    Ok(counts)
}

/// The node a live token reports for.
pub async fn node_for_token(
    db: &impl ConnectionTrait,
    token_hash: &str,
) -> Result<Option<i64>, DbErr> {
    Ok(node_token::Entity::find()
        .filter(node_token::Column::TokenHash.eq(token_hash))
        .filter(node_token::Column::RevokedAt.is_null())
        .one(db)
        .await?
        .map(|token| token.node_id))
}

/// The GPUs with these UUIDs: UUID → (GPU id, node id).
pub async fn gpus_by_uuid(
    db: &impl ConnectionTrait,
    uuids: &[&str],
) -> Result<HashMap<String, (i64, i64)>, DbErr> {
    let mut found = HashMap::new();
    for chunk in uuids.chunks(INSERT_CHUNK) {
        let rows: Vec<(i64, i64, String)> = gpu::Entity::find()
            .select_only()
            .columns([gpu::Column::Id, gpu::Column::NodeId, gpu::Column::Uuid])
            .filter(gpu::Column::Uuid.is_in(chunk.iter().copied()))
            .into_tuple()
            .all(db)
            .await?;
        found.extend(rows.into_iter().map(|(id, node, uuid)| (uuid, (id, node))));
    }
    Ok(found)
}

/// What a registration changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SyncOutcome {
    /// GPUs added to the inventory.
    pub added: usize,
    /// GPUs flagged as vanished.
    pub vanished: usize,
    /// Vanished GPUs reported again.
    pub returned: usize,
    /// Of the GPUs added, those waiting for a platform admin's acceptance.
    pub pending: usize,
    /// The GPUs flagged as vanished, by id and UUID.
    pub vanished_gpus: Vec<(i64, String)>,
}

/// Records what a node's agent said about itself: source, driver, interval, host name; and that
/// it reported now.
pub async fn note_agent(
    db: &impl ConnectionTrait,
    node_id: i64,
    registration: &Registration,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    node::Entity::update_many()
        .col_expr(
            node::Column::AgentSource,
            Expr::value(registration.source.as_str()),
        )
        .col_expr(
            node::Column::DriverVersion,
            Expr::value(registration.driver_version.clone()),
        )
        .col_expr(
            node::Column::Hostname,
            Expr::value(registration.hostname.clone()),
        )
        .col_expr(node::Column::LastSeenAt, Expr::value(now))
        .col_expr(
            node::Column::SilenceToldAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .col_expr(
            node::Column::ReportIntervalS,
            Expr::value(i32::try_from(registration.interval_seconds).unwrap_or(i32::MAX)),
        )
        .filter(node::Column::Id.eq(node_id))
        .exec(db)
        .await?;
    super::incidents::note_driver(
        db,
        node_id,
        registration.driver_version.as_deref(),
        registration.source.as_str(),
        now,
    )
    .await?;
    Ok(())
}

/// Brings a node's inventory in line with what its agent found: new GPUs are added (bookable,
/// whole GPUs only, at `new_gpu_price_minor` per hour), GPUs no longer reported are flagged as
/// vanished (never deleted), and vanished GPUs that come back are unflagged; each change is an
/// event. Run inside a transaction. The caller has checked that no UUID belongs to another node.
pub async fn sync_inventory(
    db: &impl ConnectionTrait,
    node_id: i64,
    registration: &Registration,
    new_gpu_price_minor: i64,
    now: DateTime<Utc>,
) -> Result<SyncOutcome, DbErr> {
    let mut outcome = SyncOutcome::default();
    note_agent(db, node_id, registration, now).await?;

    let existing = gpu::Entity::find()
        .filter(gpu::Column::NodeId.eq(node_id))
        .all(db)
        .await?;
    // Device indexes may move between GPUs (a swapped card, a re-enumerated bus): park every
    // GPU of the node out of the way first so the unique (node, index) pair never clashes, then
    // give each reported GPU its index and each vanished GPU a parking index of its own.
    gpu::Entity::update_many()
        .col_expr(
            gpu::Column::DeviceIndex,
            Expr::col(gpu::Column::Id).add(PARKED_INDEX_BASE),
        )
        .filter(gpu::Column::NodeId.eq(node_id))
        .exec(db)
        .await?;
    let mut events = Vec::new();
    for row in &existing {
        let reported = registration.gpus.iter().find(|g| g.uuid == row.uuid);
        let mut update: gpu::ActiveModel = row.clone().into();
        match reported {
            Some(info) => {
                update.device_index = Set(i32::try_from(info.device_index).unwrap_or(0));
                update.pci_bus_id = Set(info.pci_bus_id.clone());
                update.memory_mib = Set(i64::try_from(info.memory_total_mib).unwrap_or(i64::MAX));
                if row.vanished_at.is_some() {
                    update.vanished_at = Set(None);
                    events.push((row.id, EventKind::Returned));
                    outcome.returned += 1;
                }
            }
            None => {
                update.device_index =
                    Set(i32::try_from(row.id + PARKED_INDEX_BASE).unwrap_or(i32::MAX));
                if row.vanished_at.is_none() {
                    update.vanished_at = Set(Some(now));
                    events.push((row.id, EventKind::Vanished));
                    outcome.vanished += 1;
                    outcome.vanished_gpus.push((row.id, row.uuid.clone()));
                }
            }
        }
        update.updated_at = Set(now);
        update.update(db).await?;
    }
    // New GPUs wait for a platform admin unless their node accepts new GPUs by itself.
    let pending = !node::Entity::find_by_id(node_id)
        .one(db)
        .await?
        .is_some_and(|node| node.accept_new_gpus);
    for info in &registration.gpus {
        if existing.iter().any(|row| row.uuid == info.uuid) {
            continue;
        }
        let inserted = gpu::ActiveModel {
            node_id: Set(node_id),
            device_index: Set(i32::try_from(info.device_index).unwrap_or(0)),
            uuid: Set(info.uuid.clone()),
            model: Set(info.name.clone()),
            memory_mib: Set(i64::try_from(info.memory_total_mib).unwrap_or(i64::MAX)),
            status: Set(crate::domain::gpu::GpuStatus::Active),
            shareable: Set(false),
            hourly_price_minor: Set(new_gpu_price_minor),
            created_at: Set(now),
            updated_at: Set(now),
            pci_bus_id: Set(info.pci_bus_id.clone()),
            vanished_at: Set(None),
            pending: Set(pending),
            ..Default::default()
        }
        .insert(db)
        .await?;
        events.push((inserted.id, EventKind::Added));
        outcome.added += 1;
        outcome.pending += usize::from(pending);
    }
    for (gpu_id, kind) in events {
        insert_event(db, gpu_id, now, kind, None).await?;
    }
    Ok(outcome)
}

/// Vanished GPUs park their device index at this plus their id.
const PARKED_INDEX_BASE: i64 = 100_000;

async fn insert_event(
    db: &impl ConnectionTrait,
    gpu_id: i64,
    at: DateTime<Utc>,
    kind: EventKind,
    code: Option<i64>,
) -> Result<(), DbErr> {
    gpu_event::ActiveModel {
        gpu_id: Set(gpu_id),
        at: Set(at),
        kind: Set(kind.as_str().to_owned()),
        code: Set(code),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(())
}

fn narrow<T: TryFrom<u64>>(value: Option<u64>) -> Option<T> {
    value.and_then(|v| T::try_from(v).ok())
}

/// Stores samples (a sample already stored, same GPU and time, is skipped: agents resend after
/// a lost answer), updates the latest reading of each GPU and the node's last-seen time, and
/// marks rolled-up minutes that received late samples. `gpu_ids` maps each UUID to its GPU.
/// Run inside a transaction. Returns how many samples were new.
pub async fn store_samples(
    db: &impl ConnectionTrait,
    node_id: i64,
    samples: &[GpuSample],
    gpu_ids: &HashMap<String, i64>,
    now: DateTime<Utc>,
) -> Result<u64, DbErr> {
    let mut stored = 0;
    for chunk in samples.chunks(INSERT_CHUNK) {
        let rows = chunk.iter().filter_map(|sample| {
            let gpu_id = *gpu_ids.get(&sample.uuid)?;
            let r = &sample.readings;
            Some(gpu_sample::ActiveModel {
                gpu_id: Set(gpu_id),
                at_ms: Set(to_ms(sample.at)),
                gpu_util: Set(r.gpu_util.map(i16::from)),
                mem_util: Set(r.mem_util.map(i16::from)),
                memory_used_mib: Set(narrow(r.memory_used_mib)),
                temperature_c: Set(r.temperature_c),
                power_mw: Set(r.power_mw.and_then(|v| i32::try_from(v).ok())),
                power_limit_mw: Set(r.power_limit_mw.and_then(|v| i32::try_from(v).ok())),
                sm_clock_mhz: Set(r.sm_clock_mhz.and_then(|v| i32::try_from(v).ok())),
                throttle_reasons: Set(narrow(r.throttle_reasons)),
                ecc_corrected: Set(narrow(r.ecc_corrected)),
                ecc_uncorrected: Set(narrow(r.ecc_uncorrected)),
            })
        });
        let rows: Vec<_> = rows.collect();
        if rows.is_empty() {
            continue;
        }
        let result = gpu_sample::Entity::insert_many(rows)
            .on_conflict_do_nothing()
            .exec_without_returning(db)
            .await?;
        stored += match result {
            sea_orm::TryInsertResult::Inserted(n) => n,
            _ => 0,
        };
    }

    // The latest reading per GPU.
    let mut latest: HashMap<i64, &GpuSample> = HashMap::new();
    for sample in samples {
        if let Some(&gpu_id) = gpu_ids.get(&sample.uuid) {
            let entry = latest.entry(gpu_id).or_insert(sample);
            if sample.at > entry.at {
                *entry = sample;
            }
        }
    }
    if !latest.is_empty() {
        let current: HashMap<i64, DateTime<Utc>> = gpu_live::Entity::find()
            .select_only()
            .columns([gpu_live::Column::GpuId, gpu_live::Column::At])
            .filter(gpu_live::Column::GpuId.is_in(latest.keys().copied()))
            .into_tuple::<(i64, DateTime<Utc>)>()
            .all(db)
            .await?
            .into_iter()
            .collect();
        let rows: Vec<gpu_live::ActiveModel> = latest
            .iter()
            .filter(|(gpu_id, sample)| current.get(gpu_id).is_none_or(|at| sample.at > *at))
            .map(|(gpu_id, sample)| gpu_live::ActiveModel {
                gpu_id: Set(*gpu_id),
                at: Set(sample.at),
                readings: Set(serde_json::to_string(&sample.readings).unwrap_or_default()),
                processes: Set(serde_json::to_string(&sample.processes).unwrap_or_default()),
            })
            .collect();
        if !rows.is_empty() {
            gpu_live::Entity::insert_many(rows)
                .on_conflict(
                    OnConflict::column(gpu_live::Column::GpuId)
                        .update_columns([
                            gpu_live::Column::At,
                            gpu_live::Column::Readings,
                            gpu_live::Column::Processes,
                        ])
                        .to_owned(),
                )
                .exec_without_returning(db)
                .await?;
        }
    }

    if let Some(earliest) = samples.iter().map(|s| s.at).min() {
        let minute = to_ms(minute_of(earliest));
        // Only late samples touch the shared row, so ordinary reports never queue on it.
        telemetry_state::Entity::update_many()
            .col_expr(telemetry_state::Column::DirtyFromMs, Expr::value(minute))
            .filter(telemetry_state::Column::Id.eq(1))
            .filter(
                sea_orm::Condition::any()
                    .add(telemetry_state::Column::DirtyFromMs.is_null())
                    .add(telemetry_state::Column::DirtyFromMs.gt(minute)),
            )
            .filter(telemetry_state::Column::RolledUpToMs.gt(minute))
            .exec(db)
            .await?;
    }

    node::Entity::update_many()
        .col_expr(node::Column::LastSeenAt, Expr::value(now))
        .col_expr(
            node::Column::SilenceToldAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .filter(node::Column::Id.eq(node_id))
        .exec(db)
        .await?;
    Ok(stored)
}

/// Stores reported events (XID errors, throttle changes).
pub async fn store_events(
    db: &impl ConnectionTrait,
    events: &[ReportedEvent],
    gpu_ids: &HashMap<String, i64>,
) -> Result<usize, DbErr> {
    let mut stored = 0;
    for event in events {
        if let Some(&gpu_id) = gpu_ids.get(&event.uuid) {
            insert_event(db, gpu_id, event.at, event.kind, event.code).await?;
            stored += 1;
        }
    }
    Ok(stored)
}

/// A node's agent state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeAgentState {
    /// The node.
    pub node_id: i64,
    /// Its name.
    pub name: String,
    /// Demo node.
    pub is_demo: bool,
    /// Where its values come from.
    pub source: Option<SourceKind>,
    /// Driver version.
    pub driver_version: Option<String>,
    /// Last report.
    pub last_seen: Option<DateTime<Utc>>,
    /// Seconds between samples.
    pub interval_seconds: u32,
}

/// Every node's agent state, ordered by name.
pub async fn node_states(db: &impl ConnectionTrait) -> Result<Vec<NodeAgentState>, DbErr> {
    node_states_where(db, Condition::all()).await
}

/// The agent's state of node `node_id` (none when there is no such node).
pub async fn node_state(
    db: &impl ConnectionTrait,
    node_id: i64,
) -> Result<Option<NodeAgentState>, DbErr> {
    Ok(
        node_states_where(db, Condition::all().add(node::Column::Id.eq(node_id)))
            .await?
            .pop(),
    )
}

async fn node_states_where(
    db: &impl ConnectionTrait,
    condition: Condition,
) -> Result<Vec<NodeAgentState>, DbErr> {
    Ok(node::Entity::find()
        .filter(condition)
        .order_by_asc(node::Column::Name)
        .all(db)
        .await?
        .into_iter()
        .map(|row| NodeAgentState {
            node_id: row.id,
            name: row.name,
            is_demo: row.is_demo,
            source: row.agent_source.as_deref().and_then(SourceKind::parse),
            driver_version: row.driver_version,
            last_seen: row.last_seen_at,
            interval_seconds: row
                .report_interval_s
                .and_then(|v| u32::try_from(v).ok())
                .unwrap_or(5),
        })
        .collect())
}

/// The latest reading of every GPU that has one (or of `gpu_id` only).
pub async fn live_gpus(
    db: &impl ConnectionTrait,
    gpu_id: Option<i64>,
) -> Result<Vec<LiveGpu>, DbErr> {
    let mut query = gpu_live::Entity::find().order_by_asc(gpu_live::Column::GpuId);
    if let Some(id) = gpu_id {
        query = query.filter(gpu_live::Column::GpuId.eq(id));
    }
    query
        .all(db)
        .await?
        .into_iter()
        .map(|row| {
            let corrupt =
                |what: &str| DbErr::Custom(format!("gpu_live.gpu_id={}: {what}", row.gpu_id));
            Ok(LiveGpu {
                gpu_id: row.gpu_id,
                at: row.at,
                readings: serde_json::from_str::<Readings>(&row.readings)
                    .map_err(|_| corrupt("readings"))?,
                processes: serde_json::from_str::<Vec<GpuProcess>>(&row.processes)
                    .map_err(|_| corrupt("processes"))?,
            })
        })
        .collect()
}

/// The latest reading time and utilization of each of `gpu_ids` that has one.
pub async fn live_utilization(
    db: &impl ConnectionTrait,
    gpu_ids: &[i64],
) -> Result<HashMap<i64, (DateTime<Utc>, Option<u8>)>, DbErr> {
    let mut live = HashMap::new();
    for chunk in gpu_ids.chunks(1000) {
        let rows: Vec<(i64, DateTime<Utc>, String)> = gpu_live::Entity::find()
            .select_only()
            .columns([
                gpu_live::Column::GpuId,
                gpu_live::Column::At,
                gpu_live::Column::Readings,
            ])
            .filter(gpu_live::Column::GpuId.is_in(chunk.to_vec()))
            .into_tuple()
            .all(db)
            .await?;
        for (gpu_id, at, readings) in rows {
            let util = serde_json::from_str::<Readings>(&readings)
                .ok()
                .and_then(|r| r.gpu_util);
            live.insert(gpu_id, (at, util));
        }
    }
    Ok(live)
}

/// The ids of GPUs flagged as vanished.
pub async fn vanished_gpus(db: &impl ConnectionTrait) -> Result<Vec<i64>, DbErr> {
    gpu::Entity::find()
        .select_only()
        .column(gpu::Column::Id)
        .filter(gpu::Column::VanishedAt.is_not_null())
        .into_tuple()
        .all(db)
        .await
}

/// Raw samples of a GPU in `[from, to)`, oldest first, at most `limit`.
pub async fn samples(
    db: &impl ConnectionTrait,
    gpu_id: i64,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<(DateTime<Utc>, Readings)>, DbErr> {
    Ok(gpu_sample::Entity::find()
        .filter(gpu_sample::Column::GpuId.eq(gpu_id))
        .filter(gpu_sample::Column::AtMs.gte(to_ms(from)))
        .filter(gpu_sample::Column::AtMs.lt(to_ms(to)))
        .order_by_asc(gpu_sample::Column::AtMs)
        .limit(limit)
        .all(db)
        .await?
        .into_iter()
        .map(|row| (from_ms(row.at_ms), readings_of(&row)))
        .collect())
}

fn readings_of(row: &gpu_sample::Model) -> Readings {
    let u8_of = |v: Option<i16>| v.and_then(|v| u8::try_from(v).ok());
    let u32_of = |v: Option<i32>| v.and_then(|v| u32::try_from(v).ok());
    let u64_of = |v: Option<i64>| v.and_then(|v| u64::try_from(v).ok());
    Readings {
        gpu_util: u8_of(row.gpu_util),
        mem_util: u8_of(row.mem_util),
        memory_used_mib: u64_of(row.memory_used_mib),
        temperature_c: row.temperature_c,
        power_mw: u32_of(row.power_mw),
        power_limit_mw: u32_of(row.power_limit_mw),
        sm_clock_mhz: u32_of(row.sm_clock_mhz),
        throttle_reasons: u64_of(row.throttle_reasons),
        ecc_corrected: u64_of(row.ecc_corrected),
        ecc_uncorrected: u64_of(row.ecc_uncorrected),
    }
}

/// One-minute rollups of a GPU in `[from, to)`, oldest first.
pub async fn rollups(
    db: &impl ConnectionTrait,
    gpu_id: i64,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<Rollup>, DbErr> {
    let stat = |min: Option<f64>, avg: Option<f64>, max: Option<f64>| {
        Some(Stat {
            min: min?,
            avg: avg?,
            max: max?,
        })
    };
    Ok(gpu_rollup::Entity::find()
        .filter(gpu_rollup::Column::GpuId.eq(gpu_id))
        .filter(gpu_rollup::Column::MinuteMs.gte(to_ms(from)))
        .filter(gpu_rollup::Column::MinuteMs.lt(to_ms(to)))
        .order_by_asc(gpu_rollup::Column::MinuteMs)
        .all(db)
        .await?
        .into_iter()
        .map(|row| Rollup {
            gpu_id: row.gpu_id,
            minute: from_ms(row.minute_ms),
            samples: u32::try_from(row.samples).unwrap_or(0),
            gpu_util: stat(row.util_min, row.util_avg, row.util_max),
            memory_used_mib: stat(row.mem_min, row.mem_avg, row.mem_max),
            temperature_c: stat(row.temp_min, row.temp_avg, row.temp_max),
            power_w: stat(row.power_min, row.power_avg, row.power_max),
        })
        .collect())
}

/// Events of a GPU in `[from, to)`, newest first, at most `limit`.
pub async fn events(
    db: &impl ConnectionTrait,
    gpu_id: i64,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    after: Option<crate::domain::paging::Cursor>,
    limit: u64,
) -> Result<Vec<GpuEvent>, DbErr> {
    let mut query = gpu_event::Entity::find()
        .filter(gpu_event::Column::GpuId.eq(gpu_id))
        .filter(gpu_event::Column::At.gte(from))
        .filter(gpu_event::Column::At.lt(to));
    if let Some(after) = after {
        query = query.filter(super::before_key(
            gpu_event::Column::At,
            gpu_event::Column::Id,
            after,
        ));
    }
    query
        .order_by_desc(gpu_event::Column::At)
        .order_by_desc(gpu_event::Column::Id)
        .limit(limit)
        .all(db)
        .await?
        .into_iter()
        .map(|row| {
            Ok(GpuEvent {
                kind: EventKind::parse(&row.kind)
                    .ok_or_else(|| DbErr::Custom(format!("gpu_events.id={}: kind", row.id)))?,
                id: row.id,
                gpu_id: row.gpu_id,
                at: row.at,
                code: row.code,
            })
        })
        .collect()
}

/// The last XID of every GPU that had one.
pub async fn last_xids(db: &impl ConnectionTrait) -> Result<HashMap<i64, i64>, DbErr> {
    let rows: Vec<(i64, Option<i64>)> = gpu_event::Entity::find()
        .select_only()
        .columns([gpu_event::Column::GpuId, gpu_event::Column::Code])
        .filter(gpu_event::Column::Kind.eq(EventKind::Xid.as_str()))
        .order_by_asc(gpu_event::Column::At)
        .order_by_asc(gpu_event::Column::Id)
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(gpu, code)| Some((gpu, code?)))
        .collect())
}

/// What one run of the rollup-and-prune job did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MaintenanceOutcome {
    /// Rollup rows written (new or recomputed).
    pub rollups: usize,
    /// Raw samples deleted.
    pub samples_pruned: u64,
    /// Rollups deleted.
    pub rollups_pruned: u64,
    /// Events deleted.
    pub events_pruned: u64,
}

/// Rolls up every complete minute not rolled up yet (and minutes that received late samples),
/// then deletes raw samples older than `raw_keep` and rollups and events older than
/// `rollup_keep`. Run inside a transaction; `until` is the first minute not to roll up.
///
/// Each minute rolled up is added to the cost reports' usage tables (`reservation_usage` for the
/// reservations holding the GPU then, `fleet_usage_hours`), with `idle_below` (percent) as the
/// idle threshold; a minute rolled up again (late samples) first has its old values taken out.
pub async fn roll_up_and_prune(
    db: &impl ConnectionTrait,
    until: DateTime<Utc>,
    raw_cutoff: DateTime<Utc>,
    rollup_cutoff: DateTime<Utc>,
    idle_below: f64,
) -> Result<MaintenanceOutcome, DbErr> {
    let mut outcome = MaintenanceOutcome::default();
    // Lock the state row first: a report carrying late samples updates it too, so on
    // PostgreSQL that report waits for this run and then marks its minutes for the next one.
    let mut query = telemetry_state::Entity::find_by_id(1);
    if db.get_database_backend() == sea_orm::DbBackend::Postgres {
        query = query.lock_exclusive();
    }
    let state = query
        .one(db)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound("telemetry_state".into()))?;
    let until_ms = to_ms(minute_of(until));
    let pending_from = state.dirty_from_ms.map_or(state.rolled_up_to_ms, |dirty| {
        std::cmp::min(dirty, state.rolled_up_to_ms)
    });
    // Nothing older than the raw window is left to roll up.
    let from_ms_ = std::cmp::max(pending_from, to_ms(minute_of(raw_cutoff)));
    if from_ms_ < until_ms {
        let rows = gpu_sample::Entity::find()
            .filter(gpu_sample::Column::AtMs.gte(from_ms_))
            .filter(gpu_sample::Column::AtMs.lt(until_ms))
            .all(db)
            .await?;
        let readings: Vec<(i64, DateTime<Utc>, Readings)> = rows
            .iter()
            .map(|row| (row.gpu_id, from_ms(row.at_ms), readings_of(row)))
            .collect();
        let rollups =
            crate::domain::telemetry::roll_up(readings.iter().map(|(gpu, at, r)| (*gpu, *at, r)));
        outcome.rollups = rollups.len();
        let earlier: Vec<(i64, i64, Option<f64>)> = gpu_rollup::Entity::find()
            .select_only()
            .column(gpu_rollup::Column::GpuId)
            .column(gpu_rollup::Column::MinuteMs)
            .column(gpu_rollup::Column::UtilAvg)
            .filter(gpu_rollup::Column::MinuteMs.gte(from_ms_))
            .filter(gpu_rollup::Column::MinuteMs.lt(until_ms))
            .into_tuple()
            .all(db)
            .await?;
        // What each rolled-up minute changes in the usage tables: its new values, less the old
        // ones of a minute rolled up before (only minutes rewritten below).
        let mut changes: HashMap<(i64, i64), Usage> = rollups
            .iter()
            .map(|rollup| {
                let new = Usage::of_minute(rollup.gpu_util.map(|s| s.avg), idle_below);
                ((rollup.gpu_id, to_ms(rollup.minute)), new)
            })
            .collect();
        for (gpu_id, minute_ms, util) in earlier {
            if let Some(change) = changes.get_mut(&(gpu_id, minute_ms)) {
                *change = change.minus(Usage::of_minute(util, idle_below));
            }
        }
        changes.retain(|_, change| !change.is_zero());
        add_usage(db, &changes).await?;
        for chunk in rollups.chunks(INSERT_CHUNK) {
            let models = chunk.iter().map(|r| {
                let part = |s: Option<Stat>| (s.map(|s| s.min), s.map(|s| s.avg), s.map(|s| s.max));
                let (util_min, util_avg, util_max) = part(r.gpu_util);
                let (mem_min, mem_avg, mem_max) = part(r.memory_used_mib);
                let (temp_min, temp_avg, temp_max) = part(r.temperature_c);
                let (power_min, power_avg, power_max) = part(r.power_w);
                gpu_rollup::ActiveModel {
                    gpu_id: Set(r.gpu_id),
                    minute_ms: Set(to_ms(r.minute)),
                    samples: Set(i32::try_from(r.samples).unwrap_or(i32::MAX)),
                    util_min: Set(util_min),
                    util_avg: Set(util_avg),
                    util_max: Set(util_max),
                    mem_min: Set(mem_min),
                    mem_avg: Set(mem_avg),
                    mem_max: Set(mem_max),
                    temp_min: Set(temp_min),
                    temp_avg: Set(temp_avg),
                    temp_max: Set(temp_max),
                    power_min: Set(power_min),
                    power_avg: Set(power_avg),
                    power_max: Set(power_max),
                }
            });
            use gpu_rollup::Column as C;
            gpu_rollup::Entity::insert_many(models)
                .on_conflict(
                    OnConflict::columns([C::GpuId, C::MinuteMs])
                        .update_columns([
                            C::Samples,
                            C::UtilMin,
                            C::UtilAvg,
                            C::UtilMax,
                            C::MemMin,
                            C::MemAvg,
                            C::MemMax,
                            C::TempMin,
                            C::TempAvg,
                            C::TempMax,
                            C::PowerMin,
                            C::PowerAvg,
                            C::PowerMax,
                        ])
                        .to_owned(),
                )
                .exec_without_returning(db)
                .await?;
        }
    }
    telemetry_state::Entity::update_many()
        .col_expr(
            telemetry_state::Column::RolledUpToMs,
            Expr::value(std::cmp::max(until_ms, state.rolled_up_to_ms)),
        )
        .col_expr(
            telemetry_state::Column::DirtyFromMs,
            Expr::value(None::<i64>),
        )
        .filter(telemetry_state::Column::Id.eq(1))
        .exec(db)
        .await?;

    outcome.samples_pruned = gpu_sample::Entity::delete_many()
        .filter(gpu_sample::Column::AtMs.lt(to_ms(raw_cutoff)))
        .exec(db)
        .await?
        .rows_affected;
    outcome.rollups_pruned = gpu_rollup::Entity::delete_many()
        .filter(gpu_rollup::Column::MinuteMs.lt(to_ms(rollup_cutoff)))
        .exec(db)
        .await?
        .rows_affected;
    outcome.events_pruned = gpu_event::Entity::delete_many()
        .filter(gpu_event::Column::At.lt(rollup_cutoff))
        .exec(db)
        .await?
        .rows_affected;
    Ok(outcome)
}

/// Milliseconds in an hour.
const HOUR_MS: i64 = 3_600_000;

/// A reservation's hold of a GPU: reservation, GPU, start, end and cancellation.
type HeldGpu = (
    i64,
    i64,
    DateTime<Utc>,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
);

/// Adds the usage `changes` (per GPU and minute) to the fleet's hours and to the reservations
/// that held each GPU in that minute (until their end, or their cancellation if earlier).
async fn add_usage(
    db: &impl ConnectionTrait,
    changes: &HashMap<(i64, i64), Usage>,
) -> Result<(), DbErr> {
    if changes.is_empty() {
        return Ok(());
    }
    let mut hours: HashMap<i64, Usage> = HashMap::new();
    for ((_, minute_ms), change) in changes {
        let hour = minute_ms - minute_ms.rem_euclid(HOUR_MS);
        let entry = hours.entry(hour).or_default();
        *entry = entry.plus(*change);
    }
    let first = changes.keys().map(|k| k.1).min().unwrap_or_default();
    let last = changes.keys().map(|k| k.1).max().unwrap_or_default() + 60_000;
    let mut gpu_ids: Vec<i64> = changes.keys().map(|k| k.0).collect();
    gpu_ids.sort_unstable();
    gpu_ids.dedup();
    let mut held: Vec<HeldGpu> = Vec::new();
    for chunk in gpu_ids.chunks(INSERT_CHUNK) {
        held.extend(
            reservation_gpu::Entity::find()
                .select_only()
                .column(reservation_gpu::Column::ReservationId)
                .column(reservation_gpu::Column::GpuId)
                .column(reservation_gpu::Column::StartAt)
                .column(reservation_gpu::Column::EndAt)
                .column(reservation::Column::CancelledAt)
                .join(
                    sea_orm::JoinType::InnerJoin,
                    reservation_gpu::Relation::Reservation.def(),
                )
                .filter(reservation_gpu::Column::GpuId.is_in(chunk.to_vec()))
                .filter(reservation_gpu::Column::StartAt.lt(from_ms(last)))
                .filter(reservation_gpu::Column::EndAt.gt(from_ms(first)))
                .into_tuple::<HeldGpu>()
                .all(db)
                .await?,
        );
    }
    let mut by_gpu: HashMap<i64, Vec<(i64, Usage)>> = HashMap::new();
    for ((gpu_id, minute_ms), change) in changes {
        by_gpu
            .entry(*gpu_id)
            .or_default()
            .push((*minute_ms, *change));
    }
    let mut per_reservation: HashMap<(i64, i64), Usage> = HashMap::new();
    for (reservation_id, gpu_id, start, end, cancelled) in held {
        let (start, end) = (
            to_ms(start),
            to_ms(cancelled.map_or(end, |c| Ord::min(c, end))),
        );
        for (minute_ms, change) in by_gpu.get(&gpu_id).into_iter().flatten() {
            if *minute_ms >= start && *minute_ms < end {
                let entry = per_reservation.entry((reservation_id, gpu_id)).or_default();
                *entry = entry.plus(*change);
            }
        }
    }
    let add = |table: &str, column: &str| {
        Expr::col((
            sea_orm::sea_query::Alias::new(table),
            sea_orm::sea_query::Alias::new(column),
        ))
        .add(Expr::col((
            sea_orm::sea_query::Alias::new("excluded"),
            sea_orm::sea_query::Alias::new(column),
        )))
    };
    let hour_rows: Vec<(i64, Usage)> = hours.into_iter().collect();
    for chunk in hour_rows.chunks(INSERT_CHUNK) {
        use fleet_usage_hour::Column as C;
        let models = chunk
            .iter()
            .map(|(hour, usage)| fleet_usage_hour::ActiveModel {
                hour_ms: Set(*hour),
                measured_minutes: Set(usage.measured_minutes),
                idle_minutes: Set(usage.idle_minutes),
                util_sum: Set(usage.util_sum),
            });
        fleet_usage_hour::Entity::insert_many(models)
            .on_conflict(
                OnConflict::column(C::HourMs)
                    .value(
                        C::MeasuredMinutes,
                        add("fleet_usage_hours", "measured_minutes"),
                    )
                    .value(C::IdleMinutes, add("fleet_usage_hours", "idle_minutes"))
                    .value(C::UtilSum, add("fleet_usage_hours", "util_sum"))
                    .to_owned(),
            )
            .exec_without_returning(db)
            .await?;
    }
    let reservation_rows: Vec<((i64, i64), Usage)> = per_reservation.into_iter().collect();
    for chunk in reservation_rows.chunks(INSERT_CHUNK) {
        use reservation_usage::Column as C;
        let models =
            chunk.iter().map(
                |((reservation_id, gpu_id), usage)| reservation_usage::ActiveModel {
                    reservation_id: Set(*reservation_id),
                    gpu_id: Set(*gpu_id),
                    measured_minutes: Set(usage.measured_minutes),
                    idle_minutes: Set(usage.idle_minutes),
                    util_sum: Set(usage.util_sum),
                },
            );
        reservation_usage::Entity::insert_many(models)
            .on_conflict(
                OnConflict::columns([C::ReservationId, C::GpuId])
                    .value(
                        C::MeasuredMinutes,
                        add("reservation_usage", "measured_minutes"),
                    )
                    .value(C::IdleMinutes, add("reservation_usage", "idle_minutes"))
                    .value(C::UtilSum, add("reservation_usage", "util_sum"))
                    .to_owned(),
            )
            .exec_without_returning(db)
            .await?;
    }
    Ok(())
}

/// The GPUs of demo nodes, per node: (node id, [(uuid, model, memory MiB)]).
pub async fn demo_gpus(
    db: &impl ConnectionTrait,
) -> Result<Vec<(i64, String, Vec<(String, String, i64)>)>, DbErr> {
    let nodes = node::Entity::find()
        .filter(node::Column::IsDemo.eq(true))
        .order_by_asc(node::Column::Name)
        .all(db)
        .await?;
    let mut out = Vec::new();
    for node in nodes {
        let gpus = gpu::Entity::find()
            .filter(gpu::Column::NodeId.eq(node.id))
            .order_by_asc(gpu::Column::DeviceIndex)
            .all(db)
            .await?
            .into_iter()
            .map(|g| (g.uuid, g.model, g.memory_mib))
            .collect();
        out.push((node.id, node.hostname, gpus));
    }
    Ok(out)
}

/// Per GPU of `gpu_ids`: the average GPU utilization over the one-minute rollups in
/// `[from, to)` and how many minutes were measured; GPUs without readings are absent.
pub async fn average_utilization(
    db: &impl ConnectionTrait,
    gpu_ids: &[i64],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<HashMap<i64, (f64, i64)>, DbErr> {
    let rows: Vec<(i64, Option<f64>)> = gpu_rollup::Entity::find()
        .select_only()
        .column(gpu_rollup::Column::GpuId)
        .column(gpu_rollup::Column::UtilAvg)
        .filter(gpu_rollup::Column::GpuId.is_in(gpu_ids.to_vec()))
        .filter(gpu_rollup::Column::MinuteMs.gte(to_ms(from)))
        .filter(gpu_rollup::Column::MinuteMs.lt(to_ms(to)))
        .into_tuple()
        .all(db)
        .await?;
    let mut sums: HashMap<i64, (f64, i64)> = HashMap::new();
    for (gpu_id, util) in rows {
        if let Some(util) = util {
            let entry = sums.entry(gpu_id).or_insert((0.0, 0));
            entry.0 += util;
            entry.1 += 1;
        }
    }
    #[expect(clippy::cast_precision_loss, reason = "minutes in a lookback")]
    Ok(sums
        .into_iter()
        .map(|(gpu, (sum, minutes))| (gpu, (sum / minutes as f64, minutes)))
        .collect())
}

/// Nodes with an agent whose last report is older than `before` and whose silence nobody was
/// told about yet: id, name, last report.
pub async fn newly_silent_nodes(
    db: &impl ConnectionTrait,
    before: DateTime<Utc>,
) -> Result<Vec<(i64, String, DateTime<Utc>)>, DbErr> {
    let rows = node::Entity::find()
        .filter(node::Column::AgentSource.is_not_null())
        .filter(node::Column::LastSeenAt.lt(before))
        .filter(node::Column::SilenceToldAt.is_null())
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .filter_map(|row| row.last_seen_at.map(|seen| (row.id, row.name, seen)))
        .collect())
}

/// Notes that node `node_id`'s silence was told at `now` (until its next report).
pub async fn mark_silence_told(
    db: &impl ConnectionTrait,
    node_id: i64,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    node::Entity::update_many()
        .col_expr(node::Column::SilenceToldAt, Expr::value(now))
        .filter(node::Column::Id.eq(node_id))
        .exec(db)
        .await?;
    Ok(())
}
