//! Incidents, their messages, the evidence's own queries (access events, maintenance, admin
//! changes and driver versions over a window), and each node's driver history.

use crate::backend::entity::{
    audit_entry, gpu, gpu_access_event, incident, incident_message, maintenance_window, node,
    node_driver_version, reservation,
};
use crate::domain::paging::{Cursor, ListKind, Page, PageRequest};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, ExprTrait,
    QueryFilter, QueryOrder, QuerySelect, Set,
};

/// A new incident.
#[derive(Debug, Clone)]
pub struct NewIncident {
    /// The reservation.
    pub reservation_id: Option<i64>,
    /// The GPU, when opened from one.
    pub gpu_id: Option<i64>,
    /// The GPUs the evidence covers.
    pub gpu_ids: Vec<i64>,
    /// The node, when it fell silent.
    pub node_id: Option<i64>,
    /// Who opened it (none: Berth).
    pub opened_by: Option<i64>,
    /// `user`, `admin`, `agent`.
    pub source: &'static str,
    /// What opened it by itself.
    pub trigger: Option<&'static str>,
    /// Dedupes incidents Berth opens.
    pub auto_key: Option<String>,
    /// What the reporter saw.
    pub report: String,
    /// The window: from …
    pub from: DateTime<Utc>,
    /// … to (none: now).
    pub to: Option<DateTime<Utc>>,
    /// The first response is due by.
    pub first_response_due: DateTime<Utc>,
    /// The booking's price.
    pub booking_price_minor: i64,
    /// The booking's GPU-minutes.
    pub booking_gpu_minutes: i64,
    /// Now.
    pub at: DateTime<Utc>,
}

/// Writes `new`; `None` when Berth opened one with the same key before.
pub async fn insert(
    db: &impl ConnectionTrait,
    new: &NewIncident,
) -> Result<Option<incident::Model>, DbErr> {
    let ids = new
        .gpu_ids
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let row = incident::ActiveModel {
        reservation_id: Set(new.reservation_id),
        gpu_id: Set(new.gpu_id),
        gpu_ids: Set(ids),
        node_id: Set(new.node_id),
        opened_by: Set(new.opened_by),
        source: Set(new.source.to_owned()),
        trigger: Set(new.trigger.map(str::to_owned)),
        auto_key: Set(new.auto_key.clone()),
        report: Set(new.report.clone()),
        from_at: Set(new.from),
        to_at: Set(new.to),
        state: Set("open".to_owned()),
        first_response_due_at: Set(new.first_response_due),
        first_response_at: Set(None),
        cause: Set(None),
        cause_text: Set(None),
        reopened_at: Set(None),
        booking_price_minor: Set(new.booking_price_minor),
        booking_gpu_minutes: Set(new.booking_gpu_minutes),
        credit_minor: Set(0),
        credit_gpu_minutes: Set(0),
        credited_at: Set(None),
        credit_from: Set(None),
        credit_to: Set(None),
        created_at: Set(new.at),
        updated_at: Set(new.at),
        ..Default::default()
    };
    if new.auto_key.is_none() {
        return row.insert(db).await.map(Some);
    }
    let written = incident::Entity::insert(row)
        .on_conflict(
            OnConflict::column(incident::Column::AutoKey)
                .do_nothing()
                .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    if written == 0 {
        return Ok(None);
    }
    incident::Entity::find()
        .filter(incident::Column::AutoKey.eq(new.auto_key.clone()))
        .one(db)
        .await
}

/// Incident `id`.
pub async fn find(db: &impl ConnectionTrait, id: i64) -> Result<Option<incident::Model>, DbErr> {
    incident::Entity::find_by_id(id).one(db).await
}

/// Incident `id`, locked until the transaction ends (PostgreSQL; SQLite's write transaction
/// holds the database already).
pub async fn lock(db: &impl ConnectionTrait, id: i64) -> Result<Option<incident::Model>, DbErr> {
    let mut query = incident::Entity::find_by_id(id);
    if db.get_database_backend() == DbBackend::Postgres {
        query = query.lock_exclusive();
    }
    query.one(db).await
}

/// Which incidents a list shows.
#[derive(Debug, Clone, Copy)]
pub enum Scope {
    /// Every one (platform admins).
    All,
    /// Those on `user`'s reservations or opened by them.
    Of(i64),
    /// Those on one reservation.
    Reservation(i64),
    /// Those on one GPU (opened from it, or covering it).
    Gpu(i64),
    /// Those on one GPU that are `user`'s (as [`Scope::Of`]).
    GpuOf(i64, i64),
}

/// A page of the incidents in `scope`, newest (highest id) first.
pub async fn list(
    db: &impl ConnectionTrait,
    scope: Scope,
    page: &PageRequest,
) -> Result<Page<incident::Model>, DbErr> {
    let mut query = incident::Entity::find()
        .order_by_desc(incident::Column::Id)
        .limit(page.fetch());
    if let Some(after) = page.after {
        query = query.filter(incident::Column::Id.lt(after.id));
    }
    let on_gpu = |id: i64| {
        incident::Column::GpuId
            .eq(id)
            .or(incident::Column::GpuIds.eq(id.to_string()))
            .or(incident::Column::GpuIds.like(format!("{id},%")))
            .or(incident::Column::GpuIds.like(format!("%,{id}")))
            .or(incident::Column::GpuIds.like(format!("%,{id},%")))
    };
    let of_user = |user: i64| {
        // Their bookings' incidents by a subquery: a user with years of bookings is no longer a
        // list of every id sent to the database.
        let own = sea_orm::sea_query::Query::select()
            .column(reservation::Column::Id)
            .from(reservation::Entity)
            .and_where(reservation::Column::OwnerId.eq(user))
            .to_owned();
        incident::Column::OpenedBy
            .eq(user)
            .or(incident::Column::ReservationId.in_subquery(own))
    };
    query = match scope {
        Scope::All => query,
        Scope::Reservation(id) => query.filter(incident::Column::ReservationId.eq(id)),
        Scope::Gpu(id) => query.filter(on_gpu(id)),
        Scope::Of(user) => query.filter(of_user(user)),
        Scope::GpuOf(id, user) => query.filter(on_gpu(id)).filter(of_user(user)),
    };
    let rows = query.all(db).await?;
    Ok(Page::from_rows(rows, page, ListKind::Incidents, |row| {
        Cursor::id(row.id)
    }))
}

/// What a change of an incident writes.
#[derive(Debug, Clone)]
pub struct Change {
    /// The new state.
    pub state: String,
    /// The stated cause.
    pub cause: Option<String>,
    /// The cause in words.
    pub cause_text: Option<String>,
    /// When its reporter reopened it.
    pub reopened_at: Option<DateTime<Utc>>,
    /// When a platform admin first answered.
    pub first_response_at: Option<DateTime<Utc>>,
    /// The end of the evidence window (none: now).
    pub to: Option<DateTime<Utc>>,
    /// Now.
    pub at: DateTime<Utc>,
}

/// Writes `change` to incident `id`.
pub async fn update(db: &impl ConnectionTrait, id: i64, change: &Change) -> Result<(), DbErr> {
    incident::Entity::update_many()
        .col_expr(incident::Column::State, Expr::value(change.state.clone()))
        .col_expr(incident::Column::Cause, Expr::value(change.cause.clone()))
        .col_expr(
            incident::Column::CauseText,
            Expr::value(change.cause_text.clone()),
        )
        .col_expr(
            incident::Column::ReopenedAt,
            Expr::value(change.reopened_at),
        )
        .col_expr(
            incident::Column::FirstResponseAt,
            Expr::value(change.first_response_at),
        )
        .col_expr(incident::Column::ToAt, Expr::value(change.to))
        .col_expr(incident::Column::UpdatedAt, Expr::value(change.at))
        .filter(incident::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// Notes the first response to incident `id` (if none was noted) at `at`.
pub async fn note_first_response(
    db: &impl ConnectionTrait,
    id: i64,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    incident::Entity::update_many()
        .col_expr(incident::Column::FirstResponseAt, Expr::value(Some(at)))
        .col_expr(incident::Column::UpdatedAt, Expr::value(at))
        .filter(incident::Column::Id.eq(id))
        .filter(incident::Column::FirstResponseAt.is_null())
        .exec(db)
        .await?;
    Ok(())
}

/// Adds a message to incident `id`.
pub async fn add_message(
    db: &impl ConnectionTrait,
    incident_id: i64,
    author: Option<i64>,
    kind: &str,
    state: Option<&str>,
    body: &str,
    at: DateTime<Utc>,
) -> Result<incident_message::Model, DbErr> {
    incident_message::ActiveModel {
        incident_id: Set(incident_id),
        at: Set(at),
        author_id: Set(author),
        kind: Set(kind.to_owned()),
        state: Set(state.map(str::to_owned)),
        body: Set(body.to_owned()),
        ..Default::default()
    }
    .insert(db)
    .await
}

/// The messages of incident `id`, oldest first.
pub async fn messages(
    db: &impl ConnectionTrait,
    incident_id: i64,
) -> Result<Vec<incident_message::Model>, DbErr> {
    incident_message::Entity::find()
        .filter(incident_message::Column::IncidentId.eq(incident_id))
        .order_by_asc(incident_message::Column::Id)
        .all(db)
        .await
}

/// The SLA credit incident `id` paid.
#[derive(Debug, Clone, Copy)]
pub struct Credit {
    /// Minor units.
    pub minor: i64,
    /// GPU-minutes it paid for.
    pub gpu_minutes: i64,
    /// First lost minute.
    pub from: Option<DateTime<Utc>>,
    /// End of the last.
    pub to: Option<DateTime<Utc>>,
    /// When.
    pub at: DateTime<Utc>,
}

/// Notes incident `id`'s credit (once: `false` when it was credited already). The ledger
/// posting adds it to its reservation's total.
pub async fn set_credit(
    db: &impl ConnectionTrait,
    id: i64,
    credit: &Credit,
) -> Result<bool, DbErr> {
    let written = incident::Entity::update_many()
        .col_expr(incident::Column::CreditMinor, Expr::value(credit.minor))
        .col_expr(
            incident::Column::CreditGpuMinutes,
            Expr::value(credit.gpu_minutes),
        )
        .col_expr(incident::Column::CreditedAt, Expr::value(Some(credit.at)))
        .col_expr(incident::Column::CreditFrom, Expr::value(credit.from))
        .col_expr(incident::Column::CreditTo, Expr::value(credit.to))
        .filter(incident::Column::Id.eq(id))
        .filter(incident::Column::CreditedAt.is_null())
        .exec(db)
        .await?;
    Ok(written.rows_affected > 0)
}

/// Incidents not credited yet, not rejected, on a reservation: the credit job's candidates.
pub async fn uncredited(
    db: &impl ConnectionTrait,
    limit: u64,
) -> Result<Vec<incident::Model>, DbErr> {
    incident::Entity::find()
        .filter(incident::Column::CreditedAt.is_null())
        .filter(incident::Column::ReservationId.is_not_null())
        .filter(incident::Column::State.ne("rejected"))
        .order_by_asc(incident::Column::Id)
        .limit(limit)
        .all(db)
        .await
}

/// The credited spans of the other incidents on reservation `reservation_id`.
pub async fn credited_spans(
    db: &impl ConnectionTrait,
    reservation_id: i64,
    except: i64,
) -> Result<Vec<(DateTime<Utc>, DateTime<Utc>)>, DbErr> {
    type SpanRow = (Option<DateTime<Utc>>, Option<DateTime<Utc>>);
    let rows: Vec<SpanRow> = incident::Entity::find()
        .select_only()
        .column(incident::Column::CreditFrom)
        .column(incident::Column::CreditTo)
        .filter(incident::Column::ReservationId.eq(reservation_id))
        .filter(incident::Column::Id.ne(except))
        .filter(incident::Column::CreditedAt.is_not_null())
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(from, to)| Some((from?, to?)))
        .collect())
}

/// A GPU as the evidence names it.
#[derive(Debug, Clone)]
pub struct GpuFacts {
    /// Id.
    pub id: i64,
    /// `node-a #3`.
    pub label: String,
    /// UUID.
    pub uuid: String,
    /// Model.
    pub model: String,
    /// Memory, MiB.
    pub memory_mib: i64,
    /// Its node.
    pub node_id: i64,
    /// When it went missing.
    pub vanished_at: Option<DateTime<Utc>>,
    /// When it joined the inventory.
    pub created_at: DateTime<Utc>,
}

/// The GPUs `ids`, in id order.
pub async fn gpu_facts(db: &impl ConnectionTrait, ids: &[i64]) -> Result<Vec<GpuFacts>, DbErr> {
    let gpus = gpu::Entity::find()
        .filter(gpu::Column::Id.is_in(ids.to_vec()))
        .order_by_asc(gpu::Column::Id)
        .all(db)
        .await?;
    let mut node_ids: Vec<i64> = gpus.iter().map(|g| g.node_id).collect();
    node_ids.sort_unstable();
    node_ids.dedup();
    let names: std::collections::HashMap<i64, String> = node::Entity::find()
        .filter(node::Column::Id.is_in(node_ids))
        .all(db)
        .await?
        .into_iter()
        .map(|n| (n.id, n.name))
        .collect();
    Ok(gpus
        .into_iter()
        .map(|g| GpuFacts {
            label: format!(
                "{} #{}",
                names.get(&g.node_id).cloned().unwrap_or_default(),
                g.device_index
            ),
            id: g.id,
            uuid: g.uuid,
            model: g.model,
            memory_mib: g.memory_mib,
            node_id: g.node_id,
            vanished_at: g.vanished_at,
            created_at: g.created_at,
        })
        .collect())
}

/// Nodes `ids`.
pub async fn nodes(db: &impl ConnectionTrait, ids: &[i64]) -> Result<Vec<node::Model>, DbErr> {
    node::Entity::find()
        .filter(node::Column::Id.is_in(ids.to_vec()))
        .order_by_asc(node::Column::Id)
        .all(db)
        .await
}

/// Access events of `gpu_ids` in `[from, to)`, oldest first, at most `limit`.
pub async fn access_events(
    db: &impl ConnectionTrait,
    gpu_ids: &[i64],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<gpu_access_event::Model>, DbErr> {
    gpu_access_event::Entity::find()
        .filter(gpu_access_event::Column::GpuId.is_in(gpu_ids.to_vec()))
        .filter(gpu_access_event::Column::At.gte(from))
        .filter(gpu_access_event::Column::At.lt(to))
        .order_by_asc(gpu_access_event::Column::At)
        .order_by_asc(gpu_access_event::Column::Id)
        .limit(limit)
        .all(db)
        .await
}

/// Access events of reservations `ids` (any GPU) from `from` on, oldest first.
pub async fn access_events_of(
    db: &impl ConnectionTrait,
    ids: &[i64],
    from: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<gpu_access_event::Model>, DbErr> {
    gpu_access_event::Entity::find()
        .filter(gpu_access_event::Column::ReservationId.is_in(ids.to_vec()))
        .filter(gpu_access_event::Column::At.gte(from))
        .order_by_asc(gpu_access_event::Column::At)
        .order_by_asc(gpu_access_event::Column::Id)
        .limit(limit)
        .all(db)
        .await
}

/// Maintenance windows of `gpu_ids` overlapping `[from, to)`.
pub async fn maintenance(
    db: &impl ConnectionTrait,
    gpu_ids: &[i64],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<maintenance_window::Model>, DbErr> {
    maintenance_window::Entity::find()
        .filter(maintenance_window::Column::GpuId.is_in(gpu_ids.to_vec()))
        .filter(maintenance_window::Column::StartAt.lt(to))
        .filter(maintenance_window::Column::EndAt.gt(from))
        .order_by_asc(maintenance_window::Column::StartAt)
        .all(db)
        .await
}

/// Audit entries with `actions` in `[from, to)`, oldest first, at most `limit`.
pub async fn audit_between(
    db: &impl ConnectionTrait,
    actions: &[&str],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<audit_entry::Model>, DbErr> {
    audit_entry::Entity::find()
        .filter(audit_entry::Column::Action.is_in(actions.iter().map(|a| (*a).to_owned())))
        .filter(audit_entry::Column::At.gte(from))
        .filter(audit_entry::Column::At.lt(to))
        .order_by_asc(audit_entry::Column::Id)
        .limit(limit)
        .all(db)
        .await
}

/// The reservations that continue `id` after a move (and those continuing them), ids.
pub async fn continuations(db: &impl ConnectionTrait, id: i64) -> Result<Vec<i64>, DbErr> {
    let mut found = Vec::new();
    let mut frontier = vec![id];
    // A booking moves at most a few times; the bound keeps a corrupt cycle from looping.
    for _ in 0..16 {
        if frontier.is_empty() {
            break;
        }
        let next: Vec<i64> = reservation::Entity::find()
            .select_only()
            .column(reservation::Column::Id)
            .filter(reservation::Column::MovedFromId.is_in(frontier.clone()))
            .into_tuple()
            .all(db)
            .await?;
        found.extend(next.iter().copied());
        frontier = next;
    }
    Ok(found)
}

/// Records that node `node_id`'s agent reports `version` from `source` at `at`, when it differs
/// from the last version recorded.
pub async fn note_driver(
    db: &impl ConnectionTrait,
    node_id: i64,
    version: Option<&str>,
    source: &str,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    let last = node_driver_version::Entity::find()
        .filter(node_driver_version::Column::NodeId.eq(node_id))
        .order_by_desc(node_driver_version::Column::FromAt)
        .order_by_desc(node_driver_version::Column::Id)
        .one(db)
        .await?;
    if last.is_some_and(|row| row.driver_version.as_deref() == version && row.source == source) {
        return Ok(());
    }
    node_driver_version::ActiveModel {
        node_id: Set(node_id),
        driver_version: Set(version.map(str::to_owned)),
        source: Set(source.to_owned()),
        from_at: Set(at),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(())
}

/// The driver versions of `node_ids` in force during `[from, to)`: the one before `from` and
/// every change up to `to`, oldest first.
pub async fn driver_versions(
    db: &impl ConnectionTrait,
    node_ids: &[i64],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<node_driver_version::Model>, DbErr> {
    let mut out = Vec::new();
    for node_id in node_ids {
        let before = node_driver_version::Entity::find()
            .filter(node_driver_version::Column::NodeId.eq(*node_id))
            .filter(node_driver_version::Column::FromAt.lt(from))
            .order_by_desc(node_driver_version::Column::FromAt)
            .order_by_desc(node_driver_version::Column::Id)
            .one(db)
            .await?;
        out.extend(before);
        out.extend(
            node_driver_version::Entity::find()
                .filter(node_driver_version::Column::NodeId.eq(*node_id))
                .filter(node_driver_version::Column::FromAt.gte(from))
                .filter(node_driver_version::Column::FromAt.lt(to))
                .order_by_asc(node_driver_version::Column::FromAt)
                .limit(100)
                .all(db)
                .await?,
        );
    }
    Ok(out)
}

/// Running reservations on node `node_id` at `at` (ids, owners): a silent node's leases.
pub async fn running_on_node(
    db: &impl ConnectionTrait,
    node_id: i64,
    at: DateTime<Utc>,
) -> Result<Vec<reservation::Model>, DbErr> {
    reservation::Entity::find()
        .filter(reservation::Column::NodeId.eq(node_id))
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::StartAt.lte(at))
        .filter(reservation::Column::EndAt.gt(at))
        .all(db)
        .await
}

/// The GPUs of `node_ids`: (GPU id, node id).
pub async fn gpus_of_nodes(
    db: &impl ConnectionTrait,
    node_ids: &[i64],
) -> Result<Vec<(i64, i64)>, DbErr> {
    gpu::Entity::find()
        .select_only()
        .column(gpu::Column::Id)
        .column(gpu::Column::NodeId)
        .filter(gpu::Column::NodeId.is_in(node_ids.to_vec()))
        .into_tuple()
        .all(db)
        .await
}

/// When any of `gpu_ids` reported in `[from, to)`, oldest first: raw samples' times, or (`raw`
/// false) the minutes of their rollups.
pub async fn report_times(
    db: &impl ConnectionTrait,
    gpu_ids: &[i64],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    raw: bool,
) -> Result<Vec<DateTime<Utc>>, DbErr> {
    use crate::backend::db::telemetry::{from_ms, to_ms};
    use crate::backend::entity::{gpu_rollup, gpu_sample};
    let times: Vec<i64> = if raw {
        gpu_sample::Entity::find()
            .select_only()
            .column(gpu_sample::Column::AtMs)
            .distinct()
            .filter(gpu_sample::Column::GpuId.is_in(gpu_ids.to_vec()))
            .filter(gpu_sample::Column::AtMs.gte(to_ms(from)))
            .filter(gpu_sample::Column::AtMs.lt(to_ms(to)))
            .order_by_asc(gpu_sample::Column::AtMs)
            .into_tuple()
            .all(db)
            .await?
    } else {
        gpu_rollup::Entity::find()
            .select_only()
            .column(gpu_rollup::Column::MinuteMs)
            .distinct()
            .filter(gpu_rollup::Column::GpuId.is_in(gpu_ids.to_vec()))
            .filter(gpu_rollup::Column::MinuteMs.gte(to_ms(from)))
            .filter(gpu_rollup::Column::MinuteMs.lt(to_ms(to)))
            .order_by_asc(gpu_rollup::Column::MinuteMs)
            .into_tuple()
            .all(db)
            .await?
    };
    Ok(times.into_iter().map(from_ms).collect())
}

/// When any of `gpu_ids` last reported before `before` (raw samples, else rollups), if ever.
pub async fn last_report_before(
    db: &impl ConnectionTrait,
    gpu_ids: &[i64],
    before: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, DbErr> {
    use crate::backend::db::telemetry::{from_ms, to_ms};
    use crate::backend::entity::{gpu_rollup, gpu_sample};
    let raw: Option<i64> = gpu_sample::Entity::find()
        .select_only()
        .column(gpu_sample::Column::AtMs)
        .filter(gpu_sample::Column::GpuId.is_in(gpu_ids.to_vec()))
        .filter(gpu_sample::Column::AtMs.lt(to_ms(before)))
        .order_by_desc(gpu_sample::Column::AtMs)
        .into_tuple()
        .one(db)
        .await?;
    let rolled: Option<i64> = gpu_rollup::Entity::find()
        .select_only()
        .column(gpu_rollup::Column::MinuteMs)
        .filter(gpu_rollup::Column::GpuId.is_in(gpu_ids.to_vec()))
        .filter(gpu_rollup::Column::MinuteMs.lt(to_ms(before)))
        .order_by_desc(gpu_rollup::Column::MinuteMs)
        .into_tuple()
        .one(db)
        .await?;
    Ok(Ord::max(raw, rolled).map(from_ms))
}
