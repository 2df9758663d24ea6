//! Reservations in the database: what occupies the GPUs, the rows a booking locks, writes and
//! reads. The rules that decide a booking live in `backend::reservations`; this module only
//! queries.
//!
//! Concurrency: on PostgreSQL a booking locks the rows of the GPUs it considers (`FOR UPDATE`, in
//! id order, so two bookings never wait on each other in a cycle) before it reads their
//! occupancy; on SQLite the transaction takes the database's write lock up front (`BEGIN
//! IMMEDIATE`). Either way the check and the insert see the same data. As a safety net the
//! `gpu_slot_load` table counts the quarters booked per GPU and 15-minute slot, and its CHECK
//! refuses more than a whole GPU whatever the application does.

use crate::backend::entity::{gpu, maintenance_window, node, reservation, reservation_gpu, user};
use crate::domain::gpu::GpuStatus;
use crate::domain::payment::ChargeMode;
use crate::domain::profile::BookedProfile;
use crate::domain::quota::{Holder, Priority};
use crate::domain::reservation::{
    PaymentStatus, ReleaseReason, Reservation, ReservationStatus, SlotOffer,
};
use crate::domain::schedule::{Occupancy, SLOT_MINUTES, Share, WHOLE_GPU, Window};
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, LockType, OnConflict, Query};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseTransaction,
    DbBackend, DbErr, EntityTrait, FromQueryResult, QueryFilter, QueryOrder, QuerySelect,
    QueryTrait, RelationTrait, Statement,
};
use std::collections::{BTreeMap, HashMap};

use super::IDS_PER_STATEMENT;

/// Rows per `gpu_slot_load` insert statement.
const SLOT_ROWS_PER_STATEMENT: usize = 1000;

/// A GPU as booking needs it.
#[derive(Debug, Clone)]
pub struct BookableGpu {
    /// Database id.
    pub id: i64,
    /// Its node.
    pub node_id: i64,
    /// Its node's name.
    pub node_name: String,
    /// NVML index on the node.
    pub device_index: i32,
    /// Model name.
    pub model: String,
    /// `active`, `maintenance`, `retired`.
    pub status: String,
    /// Whether halves and quarters may be booked.
    pub shareable: bool,
    /// Price per hour of the whole GPU.
    pub hourly_price_minor: i64,
}

impl BookableGpu {
    /// `node-a #3`.
    pub fn label(&self) -> String {
        format!("{} #{}", self.node_name, self.device_index)
    }
}

/// GPUs matching `condition`, by node name and device index.
pub async fn gpus_where(
    db: &impl ConnectionTrait,
    filter: sea_orm::Condition,
) -> Result<Vec<BookableGpu>, DbErr> {
    read_gpus(db, filter, false).await
}

/// GPUs `ids` (those that exist), by node name and device index, their rows locked until the
/// transaction ends: on PostgreSQL by the read itself, in id order as every lock of GPUs is
/// taken ([`lock_gpus`]), so a price or sharing changed meanwhile is seen; on SQLite the
/// transaction already holds the write lock.
pub async fn lock_and_read_gpus(
    txn: &DatabaseTransaction,
    ids: &[i64],
) -> Result<Vec<BookableGpu>, DbErr> {
    let locking = txn.get_database_backend() == DbBackend::Postgres;
    let mut gpus = read_gpus(txn, gpu::Column::Id.is_in(ids.to_vec()).into(), locking).await?;
    if locking {
        gpus.sort_by_key(|g| (g.node_id, g.device_index));
    }
    Ok(gpus)
}

/// [`gpus_where`]; with `lock`, ordered by id and locked (`FOR UPDATE OF gpus`: the rows are
/// locked in the order the read returns them).
async fn read_gpus(
    db: &impl ConnectionTrait,
    filter: sea_orm::Condition,
    lock: bool,
) -> Result<Vec<BookableGpu>, DbErr> {
    // One query of the columns booking needs: each GPU with its node's name (at fleet scale a
    // model has thousands of GPUs, and whole rows of both tables cost more to decode than to read).
    let mut select = gpu::Entity::find()
        .select_only()
        .column(gpu::Column::Id)
        .column(gpu::Column::NodeId)
        .column_as(node::Column::Name, "node_name")
        .column(gpu::Column::DeviceIndex)
        .column(gpu::Column::Model)
        .column(gpu::Column::Status)
        .column(gpu::Column::Pending)
        .column(gpu::Column::VanishedAt)
        .column(gpu::Column::Shareable)
        .column(gpu::Column::HourlyPriceMinor)
        .join(sea_orm::JoinType::LeftJoin, gpu::Relation::Node.def())
        .filter(filter);
    if lock {
        select = select.order_by_asc(gpu::Column::Id);
        QueryTrait::query(&mut select).lock_with_tables(LockType::Update, [gpu::Entity]);
    } else {
        select = select
            .order_by_asc(gpu::Column::NodeId)
            .order_by_asc(gpu::Column::DeviceIndex);
    }
    let rows: Vec<BookableRow> = select.into_model::<BookableRow>().all(db).await?;
    Ok(rows
        .into_iter()
        .map(|row| BookableGpu {
            node_name: row.node_name.unwrap_or_default(),
            id: row.id,
            node_id: row.node_id,
            device_index: row.device_index,
            model: row.model,
            // A GPU no platform admin has accepted yet, or one its node no longer reports,
            // cannot be promised.
            status: if row.pending {
                "pending".to_owned()
            } else if row.vanished_at.is_some() {
                "missing".to_owned()
            } else {
                row.status.as_str().to_owned()
            },
            shareable: row.shareable,
            hourly_price_minor: row.hourly_price_minor,
        })
        .collect())
}

/// The columns of a GPU and its node that [`gpus_where`] reads.
#[derive(Debug, sea_orm::FromQueryResult)]
struct BookableRow {
    id: i64,
    node_id: i64,
    node_name: Option<String>,
    device_index: i32,
    model: String,
    status: GpuStatus,
    pending: bool,
    vanished_at: Option<DateTime<Utc>>,
    shareable: bool,
    hourly_price_minor: i64,
}

/// GPUs `ids` (those that exist), by node name and device index.
pub async fn gpus_by_id(db: &impl ConnectionTrait, ids: &[i64]) -> Result<Vec<BookableGpu>, DbErr> {
    gpus_where(db, gpu::Column::Id.is_in(ids.to_vec()).into()).await
}

/// PostgreSQL: locks the GPUs' rows in id order until the transaction ends. SQLite: the
/// transaction already holds the write lock.
pub async fn lock_gpus(txn: &DatabaseTransaction, ids: &[i64]) -> Result<(), DbErr> {
    if txn.get_database_backend() != DbBackend::Postgres || ids.is_empty() {
        return Ok(());
    }
    gpu::Entity::find()
        .select_only()
        .column(gpu::Column::Id)
        .filter(gpu::Column::Id.is_in(ids.to_vec()))
        .order_by_asc(gpu::Column::Id)
        .lock_exclusive()
        .into_tuple::<i64>()
        .all(txn)
        .await?;
    Ok(())
}

/// (gpu id, reservation id, start, end): a row of the holds index.
type HoldRow = (i64, i64, DateTime<Utc>, DateTime<Utc>);

/// A confirmed reservation's hold on one GPU.
#[derive(Debug, Clone)]
pub struct Hold {
    /// The GPU.
    pub gpu_id: i64,
    /// The reservation.
    pub reservation_id: i64,
    /// Who booked it.
    pub owner_id: i64,
    /// The team it was booked for.
    pub team_id: Option<i64>,
    /// When.
    pub window: Window,
    /// Share of the GPU in quarters.
    pub quarters: u8,
    /// Its priority class.
    pub priority: Priority,
    /// Whether a higher-priority booking may displace it.
    pub preemptible: bool,
    /// When it was booked.
    pub created_at: DateTime<Utc>,
}

impl Hold {
    /// The hold as the guarantee rule reads it.
    pub fn model_hold(&self) -> crate::domain::quota::ModelHold {
        crate::domain::quota::ModelHold {
            reservation_id: self.reservation_id,
            team_id: self.team_id,
            preemptible: self.preemptible,
            created_at: self.created_at,
            window: self.window,
            quarters: self.quarters,
        }
    }
}

/// What a hold's reservation adds to the index row: owner, quarters, team, priority,
/// preemptible, booked at.
type HoldTerms = (i64, i16, Option<i64>, Priority, bool, DateTime<Utc>);
/// A reservation's id and its [`HoldTerms`], as read.
type HoldTermsRow = (i64, i64, i16, Option<i64>, Priority, bool, DateTime<Utc>);

/// Confirmed reservations holding any of `gpu_ids` during `range`. The first query walks only the
/// index of holds by GPU and end time, so its cost follows the GPUs asked for and the holds
/// ending after the range starts, not the fleet or its history; the second reads the owners and
/// shares of those reservations by primary key. (As one join, PostgreSQL's planner hashed the
/// whole reservations table: 10 ms instead of 1 ms for a week of 64 GPUs.)
pub async fn holds_on(
    db: &impl ConnectionTrait,
    gpu_ids: &[i64],
    range: &Window,
) -> Result<Vec<Hold>, DbErr> {
    let rows: Vec<HoldRow> = reservation_gpu::Entity::find()
        .select_only()
        .column(reservation_gpu::Column::GpuId)
        .column(reservation_gpu::Column::ReservationId)
        .column(reservation_gpu::Column::StartAt)
        .column(reservation_gpu::Column::EndAt)
        .filter(reservation_gpu::Column::GpuId.is_in(gpu_ids.to_vec()))
        .filter(reservation_gpu::Column::EndAt.gt(range.start()))
        .filter(reservation_gpu::Column::StartAt.lt(range.end()))
        .into_tuple()
        .all(db)
        .await?;
    let mut ids: Vec<i64> = rows.iter().map(|row| row.1).collect();
    ids.sort_unstable();
    ids.dedup();
    // Owner and quarters of the confirmed ones; cancelled reservations drop out here.
    let mut confirmed: HashMap<i64, HoldTerms> = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(IDS_PER_STATEMENT) {
        let found: Vec<HoldTermsRow> = reservation::Entity::find()
            .select_only()
            .column(reservation::Column::Id)
            .column(reservation::Column::OwnerId)
            .column(reservation::Column::Quarters)
            .column(reservation::Column::TeamId)
            .column(reservation::Column::Priority)
            .column(reservation::Column::Preemptible)
            .column(reservation::Column::CreatedAt)
            .filter(reservation::Column::Id.is_in(chunk.to_vec()))
            .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
            .into_tuple()
            .all(db)
            .await?;
        confirmed.extend(found.into_iter().map(
            |(id, owner, quarters, team, priority, preemptible, created)| {
                (id, (owner, quarters, team, priority, preemptible, created))
            },
        ));
    }
    rows.into_iter()
        .filter_map(|(gpu_id, reservation_id, start, end)| {
            let (owner_id, quarters, team_id, priority, preemptible, created_at) =
                *confirmed.get(&reservation_id)?;
            Some(
                Window::new(start, end)
                    .map(|window| Hold {
                        gpu_id,
                        reservation_id,
                        owner_id,
                        team_id,
                        window,
                        quarters: u8::try_from(quarters).unwrap_or(WHOLE_GPU),
                        priority,
                        preemptible,
                        created_at,
                    })
                    .map_err(|err| {
                        DbErr::Custom(format!("reservations.id={reservation_id}: {err}"))
                    }),
            )
        })
        .collect()
}

/// What occupies each of `gpu_ids` during `range`: confirmed reservations (with their share) and
/// maintenance windows (a whole GPU).
pub async fn occupancies(
    db: &impl ConnectionTrait,
    gpu_ids: &[i64],
    range: &Window,
) -> Result<HashMap<i64, Vec<Occupancy>>, DbErr> {
    // Both reads at once (on a transaction they queue on its connection).
    let (holds, maintenance) = tokio::try_join!(
        holds_on(db, gpu_ids, range),
        maintenance_window::Entity::find()
            .filter(maintenance_window::Column::GpuId.is_in(gpu_ids.to_vec()))
            .filter(maintenance_window::Column::StartAt.lt(range.end()))
            .filter(maintenance_window::Column::EndAt.gt(range.start()))
            .all(db),
    )?;
    let mut busy: HashMap<i64, Vec<Occupancy>> = HashMap::new();
    for hold in holds {
        busy.entry(hold.gpu_id).or_default().push(Occupancy {
            window: hold.window,
            quarters: hold.quarters,
        });
    }
    for window in maintenance {
        let stored = Window::new(window.start_at, window.end_at)
            .map_err(|err| DbErr::Custom(format!("maintenance_windows.id={}: {err}", window.id)))?;
        busy.entry(window.gpu_id).or_default().push(Occupancy {
            window: stored,
            quarters: WHOLE_GPU,
        });
    }
    Ok(busy)
}

/// A window held for watchers, on one of the GPUs asked about ([`in_the_way`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchHoldOn {
    /// The GPU.
    pub gpu_id: i64,
    /// The window held.
    pub window: Window,
    /// The share held, in quarters.
    pub quarters: u8,
    /// Held for watchers until then.
    pub hold_until: DateTime<Utc>,
}

/// What a booking of `gpu_ids` during `range` meets, read at once.
#[derive(Debug, Default)]
pub struct InTheWay {
    /// [`occupancies`]: confirmed reservations and maintenance windows, per GPU.
    pub occupied: HashMap<i64, Vec<Occupancy>>,
    /// Windows held for watchers that overlap `range` and still hold at `now`
    /// ([`super::watches::holds_on`]), one per GPU of `gpu_ids` they hold.
    pub watch_holds: Vec<WatchHoldOn>,
}

/// [`occupancies`] of `gpu_ids` during `range` and the windows held for watchers there at `now`.
/// On PostgreSQL one statement (a booking's reads of what stands in its way, one round trip); on
/// SQLite the three reads they are.
pub async fn in_the_way(
    txn: &DatabaseTransaction,
    gpu_ids: &[i64],
    range: &Window,
    now: DateTime<Utc>,
) -> Result<InTheWay, DbErr> {
    if gpu_ids.is_empty() {
        return Ok(InTheWay::default());
    }
    if txn.get_database_backend() == DbBackend::Postgres {
        return in_the_way_in_one_statement(txn, gpu_ids, range, now).await;
    }
    let (occupied, offers) = tokio::try_join!(
        occupancies(txn, gpu_ids, range),
        super::watches::holds_on(txn, gpu_ids, range, now)
    )?;
    let mut watch_holds = Vec::new();
    for offer in offers {
        let window = Window::new(offer.start_at, offer.end_at)
            .map_err(|err| DbErr::Custom(format!("watch_offers.id={}: {err}", offer.id)))?;
        for gpu_id in super::watches::gpu_ids_of(&offer) {
            if gpu_ids.contains(&gpu_id) {
                watch_holds.push(WatchHoldOn {
                    gpu_id,
                    window,
                    quarters: u8::try_from(offer.quarters).unwrap_or(WHOLE_GPU),
                    hold_until: offer.hold_until,
                });
            }
        }
    }
    Ok(InTheWay {
        occupied,
        watch_holds,
    })
}

/// One row of [`in_the_way_in_one_statement`]: a hold, a maintenance window (whole GPU), or a
/// window held for watchers (with `hold_until`).
#[derive(Debug, sea_orm::FromQueryResult)]
struct InTheWayRow {
    gpu_id: i64,
    start_at: DateTime<Utc>,
    end_at: DateTime<Utc>,
    quarters: i16,
    hold_until: Option<DateTime<Utc>>,
}

/// PostgreSQL: [`in_the_way`] as one statement, the three reads joined by `UNION ALL`. The
/// holds walk the index of holds by GPU and end time as [`holds_on`] does, and each looks up its
/// reservation by primary key (a lateral subquery that cannot be flattened, so the planner never
/// hashes the reservations table); a watch offer's GPUs are its comma-separated `gpu_ids`.
async fn in_the_way_in_one_statement(
    txn: &DatabaseTransaction,
    gpu_ids: &[i64],
    range: &Window,
    now: DateTime<Utc>,
) -> Result<InTheWay, DbErr> {
    let mut values: Vec<sea_orm::Value> =
        vec![range.start().into(), range.end().into(), now.into()];
    let ids = bind_ids(&mut values, gpu_ids, |at| format!("${at}"));
    let sql = format!(
        "SELECT g.gpu_id, g.start_at, g.end_at, r.quarters, NULL::timestamptz AS hold_until \
         FROM reservation_gpus g CROSS JOIN LATERAL \
         (SELECT quarters FROM reservations WHERE id = g.reservation_id AND status = 'confirmed' \
         OFFSET 0) r \
         WHERE g.gpu_id IN ({ids}) AND g.end_at > $1 AND g.start_at < $2 \
         UNION ALL \
         SELECT m.gpu_id, m.start_at, m.end_at, {WHOLE_GPU}::smallint, NULL::timestamptz \
         FROM maintenance_windows m \
         WHERE m.gpu_id IN ({ids}) AND m.start_at < $2 AND m.end_at > $1 \
         UNION ALL \
         SELECT w.gpu_id, o.start_at, o.end_at, o.quarters, o.hold_until \
         FROM watch_offers o CROSS JOIN LATERAL \
         unnest(string_to_array(o.gpu_ids, ',')::bigint[]) AS w(gpu_id) \
         WHERE o.outcome IS NULL AND o.hold_until > $3 AND o.start_at < $2 AND o.end_at > $1 \
         AND w.gpu_id IN ({ids})"
    );
    let rows = InTheWayRow::find_by_statement(Statement::from_sql_and_values(
        DbBackend::Postgres,
        sql,
        values,
    ))
    .all(txn)
    .await?;
    let mut found = InTheWay::default();
    for row in rows {
        let window = Window::new(row.start_at, row.end_at)
            .map_err(|err| DbErr::Custom(format!("a hold on GPU {}: {err}", row.gpu_id)))?;
        let quarters = u8::try_from(row.quarters).unwrap_or(WHOLE_GPU);
        match row.hold_until {
            Some(hold_until) => found.watch_holds.push(WatchHoldOn {
                gpu_id: row.gpu_id,
                window,
                quarters,
                hold_until,
            }),
            None => found
                .occupied
                .entry(row.gpu_id)
                .or_default()
                .push(Occupancy { window, quarters }),
        }
    }
    Ok(found)
}

/// The window stored on `row`.
pub fn stored_window(row: &reservation::Model) -> Result<Window, DbErr> {
    Window::new(row.start_at, row.end_at)
        .map_err(|err| DbErr::Custom(format!("reservations.id={}: {err}", row.id)))
}

/// Confirmed reservations and maintenance windows on `gpu_ids` during `window`, per GPU, each
/// marked displaceable when a booking of `priority` may take its place: preemptible and of
/// lower priority, or among `borrowers` (they borrow the capacity a team's guarantee claims).
pub async fn holders_on(
    txn: &DatabaseTransaction,
    gpu_ids: &[i64],
    window: &Window,
    priority: Priority,
    borrowers: &std::collections::BTreeSet<i64>,
) -> Result<Vec<(i64, Vec<Holder>)>, DbErr> {
    let (holds, maintenance) = tokio::try_join!(
        holds_on(txn, gpu_ids, window),
        maintenance_on(txn, gpu_ids, window)
    )?;
    let mut per_gpu: BTreeMap<i64, Vec<Holder>> =
        gpu_ids.iter().map(|id| (*id, Vec::new())).collect();
    for hold in holds {
        per_gpu.entry(hold.gpu_id).or_default().push(Holder {
            occupancy: Occupancy {
                window: hold.window,
                quarters: hold.quarters,
            },
            displaceable: ((hold.preemptible && hold.priority < priority)
                || borrowers.contains(&hold.reservation_id))
            .then_some((
                hold.reservation_id,
                (hold.priority, std::cmp::Reverse(hold.created_at)),
            )),
        });
    }
    for (gpu_id, occupancy) in maintenance {
        per_gpu.entry(gpu_id).or_default().push(Holder {
            occupancy,
            displaceable: None,
        });
    }
    Ok(per_gpu.into_iter().collect())
}

/// Maintenance windows on `gpu_ids` overlapping `range`, as whole-GPU occupancies.
pub async fn maintenance_on(
    db: &impl ConnectionTrait,
    gpu_ids: &[i64],
    range: &Window,
) -> Result<Vec<(i64, Occupancy)>, DbErr> {
    maintenance_window::Entity::find()
        .filter(maintenance_window::Column::GpuId.is_in(gpu_ids.to_vec()))
        .filter(maintenance_window::Column::StartAt.lt(range.end()))
        .filter(maintenance_window::Column::EndAt.gt(range.start()))
        .all(db)
        .await?
        .into_iter()
        .map(|window| {
            Window::new(window.start_at, window.end_at)
                .map(|stored| {
                    (
                        window.gpu_id,
                        Occupancy {
                            window: stored,
                            quarters: WHOLE_GPU,
                        },
                    )
                })
                .map_err(|err| {
                    DbErr::Custom(format!("maintenance_windows.id={}: {err}", window.id))
                })
        })
        .collect()
}

/// Bookable GPUs (active, accepted, still reported by their node; shareable ones when a share
/// is asked) of `model` if given, with at least `min_memory_mib` if given, by node and device
/// index.
pub async fn bookable_gpus(
    db: &impl ConnectionTrait,
    model: Option<&str>,
    min_memory_mib: Option<i64>,
    share: Share,
) -> Result<Vec<BookableGpu>, DbErr> {
    gpus_where(db, bookable(model, min_memory_mib, share)).await
}

/// The condition [`bookable_gpus`] reads.
fn bookable(model: Option<&str>, min_memory_mib: Option<i64>, share: Share) -> sea_orm::Condition {
    let mut condition = sea_orm::Condition::all()
        .add(gpu::Column::Status.eq(GpuStatus::Active))
        .add(gpu::Column::Pending.eq(false))
        // A GPU its node no longer reports cannot be promised.
        .add(gpu::Column::VanishedAt.is_null());
    if let Some(model) = model {
        condition = condition.add(gpu::Column::Model.eq(model));
    }
    if let Some(memory) = min_memory_mib {
        condition = condition.add(gpu::Column::MemoryMib.gte(memory));
    }
    if share != Share::Whole {
        condition = condition.add(gpu::Column::Shareable.eq(true));
    }
    condition
}

/// The models of the GPUs [`bookable_gpus`] would read, sorted.
pub async fn bookable_models(
    db: &impl ConnectionTrait,
    model: Option<&str>,
    min_memory_mib: Option<i64>,
    share: Share,
) -> Result<Vec<String>, DbErr> {
    gpu::Entity::find()
        .select_only()
        .column(gpu::Column::Model)
        .filter(bookable(model, min_memory_mib, share))
        .distinct()
        .order_by_asc(gpu::Column::Model)
        .into_tuple()
        .all(db)
        .await
}

/// The first `limit` nodes by name with at least `count` bookable GPUs of `model` (at least
/// `min_memory_mib` if given) that `share` of fits throughout `window`: no 15-minute slot of it
/// loaded beyond what the share leaves (the `gpu_slot_load` rows every booking adds to, under
/// their CHECK) and no maintenance window overlapping it. One query whatever the fleet's size,
/// answering node ids only; it reads the nodes up to the last one it answers.
pub async fn nodes_with_room(
    db: &impl ConnectionTrait,
    model: &str,
    min_memory_mib: Option<i64>,
    share: Share,
    count: usize,
    window: &Window,
    limit: usize,
) -> Result<Vec<i64>, DbErr> {
    let load = Alias::new("gpu_slot_load");
    let loaded = Query::select()
        .expr(Expr::val(1))
        .from(load.clone())
        .and_where(
            Expr::col((load.clone(), Alias::new("gpu_id"))).equals((gpu::Entity, gpu::Column::Id)),
        )
        .and_where(Expr::col((load.clone(), Alias::new("slot_start"))).gte(window.start()))
        .and_where(Expr::col((load.clone(), Alias::new("slot_start"))).lt(window.end()))
        .and_where(
            Expr::col((load, Alias::new("quarters")))
                .gt(i16::from(WHOLE_GPU.saturating_sub(share.quarters()))),
        )
        .to_owned();
    let maintained = Query::select()
        .expr(Expr::val(1))
        .from(maintenance_window::Entity)
        .and_where(
            Expr::col((
                maintenance_window::Entity,
                maintenance_window::Column::GpuId,
            ))
            .equals((gpu::Entity, gpu::Column::Id)),
        )
        .and_where(
            Expr::col((
                maintenance_window::Entity,
                maintenance_window::Column::StartAt,
            ))
            .lt(window.end()),
        )
        .and_where(
            Expr::col((
                maintenance_window::Entity,
                maintenance_window::Column::EndAt,
            ))
            .gt(window.start()),
        )
        .to_owned();
    // Per node, how many of its GPUs have room: a correlated count, so that the nodes are walked
    // in name order (their unique index) and the walk stops at the `limit`-th node with room,
    // instead of grouping every GPU of the model first.
    let with_room = Query::select()
        .expr(Expr::col((gpu::Entity, gpu::Column::Id)).count())
        .from(gpu::Entity)
        .and_where(
            Expr::col((gpu::Entity, gpu::Column::NodeId)).equals((node::Entity, node::Column::Id)),
        )
        .cond_where(bookable(Some(model), min_memory_mib, share))
        .and_where(Expr::exists(loaded).not())
        .and_where(Expr::exists(maintained).not())
        .to_owned();
    node::Entity::find()
        .select_only()
        .column(node::Column::Id)
        .filter(
            Expr::SubQuery(None, Box::new(with_room.into()))
                .gte(i64::try_from(count).unwrap_or(i64::MAX)),
        )
        .order_by_asc(node::Column::Name)
        .order_by_asc(node::Column::Id)
        .limit(u64::try_from(limit).unwrap_or(u64::MAX))
        .into_tuple()
        .all(db)
        .await
}

/// The bookable GPUs of `model` (at least `min_memory_mib` if given) on `nodes`, by node and
/// device index.
pub async fn bookable_on_nodes(
    db: &impl ConnectionTrait,
    model: &str,
    min_memory_mib: Option<i64>,
    share: Share,
    nodes: &[i64],
) -> Result<Vec<BookableGpu>, DbErr> {
    gpus_where(
        db,
        bookable(Some(model), min_memory_mib, share).add(gpu::Column::NodeId.is_in(nodes.to_vec())),
    )
    .await
}

/// Bookable GPUs of `model` (shareable ones when a share is asked), by node and device index.
pub async fn bookable_of_model(
    db: &impl ConnectionTrait,
    model: &str,
    share: Share,
) -> Result<Vec<BookableGpu>, DbErr> {
    bookable_gpus(db, Some(model), None, share).await
}

/// Adds `quarters` to every slot of `window` on each GPU; the table's CHECK refuses more than a
/// whole GPU.
pub async fn add_slot_load(
    txn: &DatabaseTransaction,
    gpu_ids: &[i64],
    window: &Window,
    quarters: i16,
) -> Result<(), DbErr> {
    let table = Alias::new("gpu_slot_load");
    let mut rows: Vec<(i64, DateTime<Utc>)> = Vec::new();
    for gpu_id in gpu_ids {
        let mut slot = window.start();
        while slot < window.end() {
            rows.push((*gpu_id, slot));
            slot += TimeDelta::minutes(SLOT_MINUTES);
        }
    }
    for chunk in rows.chunks(SLOT_ROWS_PER_STATEMENT) {
        let mut insert = Query::insert();
        insert.into_table(table.clone()).columns([
            Alias::new("gpu_id"),
            Alias::new("slot_start"),
            Alias::new("quarters"),
        ]);
        for (gpu_id, slot) in chunk {
            insert.values_panic([(*gpu_id).into(), (*slot).into(), quarters.into()]);
        }
        insert.on_conflict(
            OnConflict::columns([Alias::new("gpu_id"), Alias::new("slot_start")])
                .value(
                    Alias::new("quarters"),
                    Expr::col((table.clone(), Alias::new("quarters")))
                        .add(Expr::col((Alias::new("excluded"), Alias::new("quarters")))),
                )
                .to_owned(),
        );
        txn.execute(&insert).await?;
    }
    Ok(())
}

/// Marks confirmed reservation `row` cancelled at `now` (by a person, or released by Berth for
/// `released`) and frees its slots, inside the caller's write transaction. False when it was no
/// longer confirmed (a concurrent cancellation won).
pub async fn withdraw(
    txn: &DatabaseTransaction,
    row: &reservation::Model,
    now: DateTime<Utc>,
    cancelled_by: Option<i64>,
    released: Option<ReleaseReason>,
) -> Result<bool, DbErr> {
    let held: Vec<i64> = reservation_gpu::Entity::find()
        .filter(reservation_gpu::Column::ReservationId.eq(row.id))
        .all(txn)
        .await?
        .into_iter()
        .map(|r| r.gpu_id)
        .collect();
    lock_gpus(txn, &held).await?;
    let updated = reservation::Entity::update_many()
        .col_expr(
            reservation::Column::Status,
            Expr::value(reservation::Status::Cancelled),
        )
        .col_expr(reservation::Column::CancelledAt, Expr::value(now))
        .col_expr(reservation::Column::CancelledBy, Expr::value(cancelled_by))
        .col_expr(reservation::Column::ReleasedReason, Expr::value(released))
        .col_expr(
            reservation::Column::CalendarSequence,
            Expr::col(reservation::Column::CalendarSequence).add(1),
        )
        .filter(reservation::Column::Id.eq(row.id))
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .exec(txn)
        .await?;
    if updated.rows_affected != 1 {
        return Ok(false);
    }
    sub_slot_load(txn, &held, &stored_window(row)?, row.quarters).await?;
    Ok(true)
}

/// Takes `quarters` off every slot of `window` on each GPU (a hold given up).
pub async fn sub_slot_load(
    txn: &DatabaseTransaction,
    gpu_ids: &[i64],
    window: &Window,
    quarters: i16,
) -> Result<(), DbErr> {
    if gpu_ids.is_empty() {
        return Ok(());
    }
    let mut update = Query::update();
    update
        .table(Alias::new("gpu_slot_load"))
        .value(
            Alias::new("quarters"),
            Expr::col(Alias::new("quarters")).sub(quarters),
        )
        .and_where(Expr::col(Alias::new("gpu_id")).is_in(gpu_ids.to_vec()))
        .and_where(Expr::col(Alias::new("slot_start")).gte(window.start()))
        .and_where(Expr::col(Alias::new("slot_start")).lt(window.end()));
    txn.execute(&update).await?;
    Ok(())
}

/// Ends confirmed reservation `row` early at `end` (inside its window, on the grid): its row,
/// its GPUs' holds and their slots from `end` on, in the caller's write transaction.
pub async fn shorten(
    txn: &DatabaseTransaction,
    row: &reservation::Model,
    end: DateTime<Utc>,
) -> Result<(), DbErr> {
    let held = gpus_held_by(txn, &[row.id]).await?;
    reservation::Entity::update_many()
        .col_expr(reservation::Column::EndAt, Expr::value(end))
        .col_expr(
            reservation::Column::CalendarSequence,
            Expr::col(reservation::Column::CalendarSequence).add(1),
        )
        .filter(reservation::Column::Id.eq(row.id))
        .exec(txn)
        .await?;
    reservation_gpu::Entity::update_many()
        .col_expr(reservation_gpu::Column::EndAt, Expr::value(end))
        .filter(reservation_gpu::Column::ReservationId.eq(row.id))
        .filter(reservation_gpu::Column::EndAt.gt(end))
        .exec(txn)
        .await?;
    let cut = Window::new(end, row.end_at).map_err(|err| DbErr::Custom(err.to_string()))?;
    sub_slot_load(txn, &held, &cut, row.quarters).await
}

/// Moves confirmed reservation `row`'s holds off `remove` onto `add` (on node `node_id`) for
/// its whole window, in the caller's write transaction (the slot table's CHECK refuses more
/// than a whole GPU on the new ones).
pub async fn replace_gpus(
    txn: &DatabaseTransaction,
    row: &reservation::Model,
    remove: &[i64],
    add: &[i64],
    node_id: i64,
) -> Result<(), DbErr> {
    reservation_gpu::Entity::delete_many()
        .filter(reservation_gpu::Column::ReservationId.eq(row.id))
        .filter(reservation_gpu::Column::GpuId.is_in(remove.to_vec()))
        .exec(txn)
        .await?;
    let window = stored_window(row)?;
    sub_slot_load(txn, remove, &window, row.quarters).await?;
    reservation::Entity::update_many()
        .col_expr(reservation::Column::NodeId, Expr::value(node_id))
        .col_expr(
            reservation::Column::CalendarSequence,
            Expr::col(reservation::Column::CalendarSequence).add(1),
        )
        .filter(reservation::Column::Id.eq(row.id))
        .exec(txn)
        .await?;
    hold_gpus(txn, row, add).await
}

/// Records that running reservation `id` moved whole to another node at `at`.
pub async fn set_moved_at(
    txn: &DatabaseTransaction,
    id: i64,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    set_column(txn, id, reservation::Column::MovedAt, at).await
}

/// Sets one column of reservation `id`.
async fn set_column(
    txn: &DatabaseTransaction,
    id: i64,
    column: reservation::Column,
    value: impl Into<sea_orm::Value>,
) -> Result<(), DbErr> {
    reservation::Entity::update_many()
        .col_expr(column, Expr::value(value))
        .filter(reservation::Column::Id.eq(id))
        .exec(txn)
        .await?;
    Ok(())
}

/// Records why Berth ended confirmed reservation `id` early.
pub async fn set_released_reason(
    txn: &DatabaseTransaction,
    id: i64,
    reason: ReleaseReason,
) -> Result<(), DbErr> {
    set_column(txn, id, reservation::Column::ReleasedReason, reason).await
}

/// Takes `less_minor` off reservation `id`'s price (a part it no longer holds, not charged).
pub async fn lower_price(txn: &DatabaseTransaction, id: i64, less_minor: i64) -> Result<(), DbErr> {
    reservation::Entity::update_many()
        .col_expr(
            reservation::Column::PriceMinor,
            Expr::col(reservation::Column::PriceMinor).sub(less_minor),
        )
        .filter(reservation::Column::Id.eq(id))
        .exec(txn)
        .await?;
    Ok(())
}

/// What a new reservation row holds.
#[derive(Debug, Clone)]
pub struct NewRow {
    /// Who booked it.
    pub owner_id: i64,
    /// The environment profile version it uses.
    pub profile_version_id: Option<i64>,
    /// The team it is booked for.
    pub team_id: Option<i64>,
    /// Its node.
    pub node_id: i64,
    /// Its GPUs' model.
    pub model: String,
    /// Share of each GPU.
    pub quarters: u8,
    /// When.
    pub window: Window,
    /// Price of the whole booking.
    pub price_minor: i64,
    /// How it is paid.
    pub payment_status: PaymentStatus,
    /// When it is charged.
    pub charge_mode: ChargeMode,
    /// When the payment job charges it.
    pub charge_at: Option<DateTime<Utc>>,
    /// Its priority class.
    pub priority: Priority,
    /// Whether a higher-priority booking may take its place.
    pub preemptible: bool,
    /// Until when it waits for approval.
    pub approval_expires_at: Option<DateTime<Utc>>,
    /// How many GPUs it holds.
    pub gpu_count: usize,
    /// Booked at.
    pub created_at: DateTime<Utc>,
    /// The reservation it continues after a GPU failed, and why.
    pub moved_from: Option<(i64, crate::domain::failover::FailureCause)>,
    /// A preemptible booking that starts early when its GPUs free up.
    pub start_early: bool,
    /// The saved card that pays it.
    pub card_id: Option<i64>,
}

/// Inserts a confirmed reservation holding `gpu_ids` ([`hold_gpus`]); on PostgreSQL the row, its
/// GPUs and its slots are one statement ([`insert_holding_in_one_statement`]). A row inserted
/// paid ([`PaymentStatus::Paid`]) is written with its charged total: the caller charges its
/// wallet in the same transaction with [`super::ledger::charge_inserted`], which leaves the total
/// as written (one statement fewer than adding it afterwards).
pub async fn insert_holding(
    txn: &DatabaseTransaction,
    new: &NewRow,
    gpu_ids: &[i64],
) -> Result<reservation::Model, DbErr> {
    if txn.get_database_backend() == DbBackend::Postgres {
        return insert_holding_in_one_statement(txn, new, gpu_ids).await;
    }
    let row = row_of(new).insert(txn).await?;
    hold_gpus(txn, &row, gpu_ids).await?;
    Ok(row)
}

/// PostgreSQL: [`insert_holding`] as one statement. The row's `INSERT … RETURNING` (its columns
/// named) is a data-modifying common table expression; its returned id and window feed the GPU
/// rows' insert, whose returned GPU ids feed the slots' upsert as in
/// [`hold_gpus_in_one_statement`] (the capacity `CHECK` fires as there, failing the whole
/// statement); the statement answers the inserted row.
async fn insert_holding_in_one_statement(
    txn: &DatabaseTransaction,
    new: &NewRow,
    gpu_ids: &[i64],
) -> Result<reservation::Model, DbErr> {
    let mut insert = reservation::Entity::insert(row_of(new));
    // The columns named, never `*`: a prepared statement whose result changes shape (a column
    // a later release adds while this one serves) fails on every connection that cached it.
    QueryTrait::query(&mut insert)
        .returning(Query::returning().columns(<reservation::Column as sea_orm::Iterable>::iter()));
    let row = QueryTrait::build(&insert, DbBackend::Postgres);
    let mut values = row.values.map(|values| values.0).unwrap_or_default();
    let ids = bind_ids(&mut values, gpu_ids, |at| format!("(${at}::bigint)"));
    let sql = format!(
        "WITH booked AS ({row}), \
         held AS (INSERT INTO reservation_gpus (reservation_id, gpu_id, start_at, end_at) \
         SELECT booked.id, ids.gpu_id, booked.start_at, booked.end_at \
         FROM booked CROSS JOIN (VALUES {ids}) AS ids(gpu_id) RETURNING gpu_id), \
         load AS ({load}) \
         SELECT booked.* FROM booked",
        row = row.sql,
        load = add_held_slots(
            "booked.quarters",
            "booked.start_at",
            "booked.end_at",
            " CROSS JOIN booked"
        ),
    );
    reservation::Entity::find()
        .from_raw_sql(Statement::from_sql_and_values(
            DbBackend::Postgres,
            sql,
            values,
        ))
        .one(txn)
        .await?
        .ok_or_else(|| DbErr::RecordNotInserted)
}

/// The row [`insert_holding`] writes for `new`.
fn row_of(new: &NewRow) -> reservation::ActiveModel {
    reservation::ActiveModel {
        owner_id: Set(new.owner_id),
        node_id: Set(new.node_id),
        model: Set(new.model.clone()),
        quarters: Set(i16::from(new.quarters)),
        start_at: Set(new.window.start()),
        end_at: Set(new.window.end()),
        status: Set(reservation::Status::Confirmed),
        price_minor: Set(new.price_minor),
        created_at: Set(new.created_at),
        cancelled_at: Set(None),
        cancelled_by: Set(None),
        payment_status: Set(new.payment_status),
        charge_mode: Set(new.charge_mode),
        charge_at: Set(new.charge_at),
        released_reason: Set(None),
        team_id: Set(new.team_id),
        priority: Set(new.priority),
        preemptible: Set(new.preemptible),
        approval_expires_at: Set(new.approval_expires_at),
        displaced_offer: Set(None),
        gpu_count: Set(i32::try_from(new.gpu_count).unwrap_or(i32::MAX)),
        profile_version_id: Set(new.profile_version_id),
        moved_from_id: Set(new.moved_from.map(|(id, _)| id)),
        move_cause: Set(new.moved_from.map(|(_, cause)| cause.as_str().to_owned())),
        moved_at: Set(None),
        start_early: Set(new.start_early),
        card_id: Set(new.card_id),
        early_from: Set(None),
        charged_minor: Set(if new.payment_status == PaymentStatus::Paid {
            new.price_minor
        } else {
            0
        }),
        refunded_minor: Set(0),
        ..Default::default()
    }
}

/// Holds `gpu_ids` for reservation `row`: its GPU rows and its quarters in every slot of its
/// window (the slot table's CHECK refuses more than a whole GPU).
pub async fn hold_gpus(
    txn: &DatabaseTransaction,
    row: &reservation::Model,
    gpu_ids: &[i64],
) -> Result<(), DbErr> {
    if txn.get_database_backend() == DbBackend::Postgres {
        return hold_gpus_in_one_statement(txn, row, gpu_ids).await;
    }
    reservation_gpu::Entity::insert_many(gpu_ids.iter().map(|id| reservation_gpu::ActiveModel {
        reservation_id: Set(row.id),
        gpu_id: Set(*id),
        start_at: Set(row.start_at),
        end_at: Set(row.end_at),
    }))
    .exec_without_returning(txn)
    .await?;
    add_slot_load(txn, gpu_ids, &stored_window(row)?, row.quarters).await
}

/// PostgreSQL: [`hold_gpus`] as one statement: the GPU rows inserted in a data-modifying common
/// table expression, and for each of them its quarters added to every slot of the window
/// (`generate_series`, the slots [`add_slot_load`] writes: from the start, a slot apart, before
/// the end).
async fn hold_gpus_in_one_statement(
    txn: &DatabaseTransaction,
    row: &reservation::Model,
    gpu_ids: &[i64],
) -> Result<(), DbErr> {
    let window = stored_window(row)?;
    let mut values: Vec<sea_orm::Value> = vec![
        row.id.into(),
        window.start().into(),
        window.end().into(),
        row.quarters.into(),
    ];
    let held = bind_ids(&mut values, gpu_ids, |at| format!("($1, ${at}, $2, $3)"));
    let sql = format!(
        "WITH held AS (INSERT INTO reservation_gpus (reservation_id, gpu_id, start_at, end_at) \
         VALUES {held} RETURNING gpu_id) {load}",
        load = add_held_slots("$4", "$2", "$3", "")
    );
    txn.execute_raw(Statement::from_sql_and_values(
        DbBackend::Postgres,
        sql,
        values,
    ))
    .await?;
    Ok(())
}

/// PostgreSQL: the upsert that adds `quarters` to every slot from `start` to before `end` (the
/// slots [`add_slot_load`] writes) for each GPU id of the common table expression `held`, joined
/// with what `also_from` names: SQL expressions, for the statements written by hand.
fn add_held_slots(quarters: &str, start: &str, end: &str, also_from: &str) -> String {
    format!(
        "INSERT INTO gpu_slot_load (gpu_id, slot_start, quarters) \
         SELECT held.gpu_id, slot, {quarters} FROM held{also_from} CROSS JOIN \
         generate_series({start}, {end} - interval '1 microsecond', \
         interval '{SLOT_MINUTES} minutes') AS slot \
         ON CONFLICT (gpu_id, slot_start) \
         DO UPDATE SET quarters = gpu_slot_load.quarters + excluded.quarters"
    )
}

/// PostgreSQL: pushes `ids` onto `values` as bound parameters and answers them written by `each`
/// (given each one's parameter number, `$n`) and joined by commas, for a statement written by
/// hand.
fn bind_ids(
    values: &mut Vec<sea_orm::Value>,
    ids: &[i64],
    each: impl Fn(usize) -> String,
) -> String {
    ids.iter()
        .map(|id| {
            values.push((*id).into());
            each(values.len())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Confirmed bookings that asked to start early and start after `after`, the earliest booked
/// first (at most `limit`); those waiting for approval, or whose charge failed, wait.
pub async fn start_early_ids(
    db: &impl ConnectionTrait,
    after: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<i64>, DbErr> {
    reservation::Entity::find()
        .select_only()
        .column(reservation::Column::Id)
        .filter(reservation::Column::StartEarly.eq(true))
        .filter(reservation::Column::StartAt.gt(after))
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(
            reservation::Column::PaymentStatus
                .is_not_in([PaymentStatus::AwaitingApproval, PaymentStatus::Due]),
        )
        .order_by_asc(reservation::Column::CreatedAt)
        .order_by_asc(reservation::Column::Id)
        .limit(limit)
        .into_tuple()
        .all(db)
        .await
}

/// Moves confirmed reservation `row`, held on `gpu_ids`, to `window` on the same GPUs: its row
/// (the first start it had kept in `early_from`), its holds and their slots, in the caller's
/// write transaction (the slot table's CHECK refuses more than a whole GPU).
pub async fn bring_forward(
    txn: &DatabaseTransaction,
    row: &reservation::Model,
    gpu_ids: &[i64],
    window: &Window,
) -> Result<(), DbErr> {
    reservation::Entity::update_many()
        .col_expr(reservation::Column::StartAt, Expr::value(window.start()))
        .col_expr(reservation::Column::EndAt, Expr::value(window.end()))
        .col_expr(
            reservation::Column::EarlyFrom,
            Expr::value(row.early_from.unwrap_or(row.start_at)),
        )
        .col_expr(
            reservation::Column::CalendarSequence,
            Expr::col(reservation::Column::CalendarSequence).add(1),
        )
        .filter(reservation::Column::Id.eq(row.id))
        .exec(txn)
        .await?;
    reservation_gpu::Entity::update_many()
        .col_expr(
            reservation_gpu::Column::StartAt,
            Expr::value(window.start()),
        )
        .col_expr(reservation_gpu::Column::EndAt, Expr::value(window.end()))
        .filter(reservation_gpu::Column::ReservationId.eq(row.id))
        .exec(txn)
        .await?;
    sub_slot_load(txn, gpu_ids, &stored_window(row)?, row.quarters).await?;
    add_slot_load(txn, gpu_ids, window, row.quarters).await
}

/// The GPUs reservations `ids` hold.
pub async fn gpus_held_by(txn: &DatabaseTransaction, ids: &[i64]) -> Result<Vec<i64>, DbErr> {
    reservation_gpu::Entity::find()
        .select_only()
        .column(reservation_gpu::Column::GpuId)
        .filter(reservation_gpu::Column::ReservationId.is_in(ids.to_vec()))
        .into_tuple()
        .all(txn)
        .await
}

/// Reservations `ids` as stored.
pub async fn rows(
    db: &impl ConnectionTrait,
    ids: &[i64],
) -> Result<Vec<reservation::Model>, DbErr> {
    reservation::Entity::find()
        .filter(reservation::Column::Id.is_in(ids.to_vec()))
        .all(db)
        .await
}

/// Stores on displaced reservation `id` the window offered instead.
pub async fn set_displaced_offer(
    txn: &DatabaseTransaction,
    id: i64,
    offer: &SlotOffer,
) -> Result<(), DbErr> {
    let json = serde_json::to_string(offer).map_err(|err| DbErr::Custom(err.to_string()))?;
    set_column(txn, id, reservation::Column::DisplacedOffer, json).await
}

/// Sets how reservation `id` is paid (an approval decided), ending its wait for approval.
pub async fn set_payment(
    txn: &DatabaseTransaction,
    id: i64,
    status: PaymentStatus,
    mode: ChargeMode,
    charge_at: Option<DateTime<Utc>>,
) -> Result<(), DbErr> {
    reservation::Entity::update_many()
        .col_expr(reservation::Column::PaymentStatus, Expr::value(status))
        .col_expr(reservation::Column::ChargeMode, Expr::value(mode))
        .col_expr(reservation::Column::ChargeAt, Expr::value(charge_at))
        .col_expr(
            reservation::Column::ApprovalExpiresAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .col_expr(
            reservation::Column::CalendarSequence,
            Expr::col(reservation::Column::CalendarSequence).add(1),
        )
        .filter(reservation::Column::Id.eq(id))
        .exec(txn)
        .await?;
    Ok(())
}

/// Marks GPU `gpu_id` retired; answers its status before, `None` when there is no such GPU.
pub async fn retire(txn: &DatabaseTransaction, gpu_id: i64) -> Result<Option<GpuStatus>, DbErr> {
    let Some(before) = gpu::Entity::find_by_id(gpu_id).one(txn).await? else {
        return Ok(None);
    };
    gpu::Entity::update_many()
        .col_expr(gpu::Column::Status, Expr::value(GpuStatus::Retired))
        .filter(gpu::Column::Id.eq(gpu_id))
        .exec(txn)
        .await?;
    Ok(Some(before.status))
}

/// Reservation `id` as stored, if it exists.
pub async fn row(db: &impl ConnectionTrait, id: i64) -> Result<Option<reservation::Model>, DbErr> {
    reservation::Entity::find_by_id(id).one(db).await
}

/// Reservation `id`, locking the rows of its GPUs and then its own (PostgreSQL; SQLite's write
/// transaction holds its lock already) in the order bookings take them.
pub async fn lock_reservation(
    txn: &DatabaseTransaction,
    id: i64,
) -> Result<Option<reservation::Model>, DbErr> {
    let held: Vec<i64> = reservation_gpu::Entity::find()
        .select_only()
        .column(reservation_gpu::Column::GpuId)
        .filter(reservation_gpu::Column::ReservationId.eq(id))
        .into_tuple()
        .all(txn)
        .await?;
    lock_gpus(txn, &held).await?;
    let mut query = reservation::Entity::find_by_id(id);
    if txn.get_database_backend() == DbBackend::Postgres {
        query = query.lock_exclusive();
    }
    query.one(txn).await
}

/// The reservation `id` as its viewer sees it now.
pub async fn view_of(
    db: &impl ConnectionTrait,
    id: i64,
    now: DateTime<Utc>,
) -> Result<Option<Reservation>, DbErr> {
    match reservation::Entity::find_by_id(id).one(db).await? {
        Some(row) => Ok(Some(reservation_view(db, row, now).await?)),
        None => Ok(None),
    }
}

/// A reservation row as a [`Reservation`].
pub async fn reservation_view(
    db: &impl ConnectionTrait,
    row: reservation::Model,
    now: DateTime<Utc>,
) -> Result<Reservation, DbErr> {
    Ok(views(db, vec![row], now).await?.remove(0))
}

/// Rows as [`Reservation`]s, reading their GPUs, owners, teams, nodes, profiles and
/// continuations a query each.
pub async fn views(
    db: &impl ConnectionTrait,
    rows: Vec<reservation::Model>,
    now: DateTime<Utc>,
) -> Result<Vec<Reservation>, DbErr> {
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let mut gpus: HashMap<i64, Vec<i64>> = HashMap::new();
    for held in reservation_gpu::Entity::find()
        .filter(reservation_gpu::Column::ReservationId.is_in(ids))
        .order_by_asc(reservation_gpu::Column::GpuId)
        .all(db)
        .await?
    {
        gpus.entry(held.reservation_id)
            .or_default()
            .push(held.gpu_id);
    }
    let nodes: HashMap<i64, String> = node::Entity::find()
        .filter(node::Column::Id.is_in(rows.iter().map(|r| r.node_id).collect::<Vec<_>>()))
        .all(db)
        .await?
        .into_iter()
        .map(|n| (n.id, n.name))
        .collect();
    // The reservations that continue these after a GPU failed.
    let moved_to: HashMap<i64, i64> = reservation::Entity::find()
        .select_only()
        .column(reservation::Column::MovedFromId)
        .column(reservation::Column::Id)
        .filter(
            reservation::Column::MovedFromId.is_in(rows.iter().map(|r| r.id).collect::<Vec<_>>()),
        )
        .into_tuple::<(Option<i64>, i64)>()
        .all(db)
        .await?
        .into_iter()
        .filter_map(|(from, id)| Some((from?, id)))
        .collect();
    let parts = ViewParts {
        gpus,
        nodes,
        moved_to,
        ..people_of(db, &rows, HashMap::new()).await?
    };
    assemble(rows, parts, now)
}

/// A reservation row just written by the caller, who holds its GPUs and its node's name (and
/// maybe its owner's), as a [`Reservation`]: nothing continues it yet, so only its owner (unless
/// named), team and profile are read.
pub async fn new_view(
    db: &impl ConnectionTrait,
    row: reservation::Model,
    gpu_ids: Vec<i64>,
    node_name: String,
    owner_name: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Reservation, DbErr> {
    let known = owner_name
        .map(|name| HashMap::from([(row.owner_id, name.to_owned())]))
        .unwrap_or_default();
    let parts = ViewParts {
        gpus: HashMap::from([(row.id, gpu_ids)]),
        nodes: HashMap::from([(row.node_id, node_name)]),
        ..people_of(db, std::slice::from_ref(&row), known).await?
    };
    let rows = vec![row];
    Ok(assemble(rows, parts, now)?.remove(0))
}

/// What a [`Reservation`] shows beside its row, by id.
#[derive(Default)]
struct ViewParts {
    gpus: HashMap<i64, Vec<i64>>,
    owners: HashMap<i64, String>,
    teams: HashMap<i64, String>,
    nodes: HashMap<i64, String>,
    profiles: HashMap<i64, BookedProfile>,
    moved_to: HashMap<i64, i64>,
}

/// The owners' names (those not `known` already), the teams' names and the booked profiles of
/// `rows` (the other parts empty).
async fn people_of(
    db: &impl ConnectionTrait,
    rows: &[reservation::Model],
    known: HashMap<i64, String>,
) -> Result<ViewParts, DbErr> {
    let mut unknown: Vec<i64> = rows
        .iter()
        .map(|r| r.owner_id)
        .filter(|id| !known.contains_key(id))
        .collect();
    unknown.sort_unstable();
    unknown.dedup();
    let mut owners = known;
    if !unknown.is_empty() {
        let read: Vec<(i64, String)> = user::Entity::find()
            .select_only()
            .column(user::Column::Id)
            .column(user::Column::Name)
            .filter(user::Column::Id.is_in(unknown))
            .into_tuple()
            .all(db)
            .await?;
        owners.extend(read);
    }
    let mut team_ids: Vec<i64> = rows.iter().filter_map(|r| r.team_id).collect();
    team_ids.sort_unstable();
    team_ids.dedup();
    let teams: HashMap<i64, String> = if team_ids.is_empty() {
        HashMap::new()
    } else {
        crate::backend::entity::team::Entity::find()
            .filter(crate::backend::entity::team::Column::Id.is_in(team_ids))
            .all(db)
            .await?
            .into_iter()
            .map(|t| (t.id, t.name))
            .collect()
    };
    let version_ids: Vec<i64> = rows.iter().filter_map(|r| r.profile_version_id).collect();
    let profiles: HashMap<i64, BookedProfile> =
        super::env_profiles::versions_with_profiles(db, &version_ids)
            .await?
            .into_iter()
            .map(|(version, profile)| {
                (
                    version.id,
                    BookedProfile {
                        profile_id: profile.id,
                        name: profile.name,
                        version_id: version.id,
                        number: version.number,
                        hash: version.content_hash,
                    },
                )
            })
            .collect();
    Ok(ViewParts {
        owners,
        teams,
        profiles,
        ..ViewParts::default()
    })
}

/// `rows` with their `parts`, as seen at `now`.
fn assemble(
    rows: Vec<reservation::Model>,
    mut parts: ViewParts,
    now: DateTime<Utc>,
) -> Result<Vec<Reservation>, DbErr> {
    rows.into_iter()
        .map(|row| {
            let window = stored_window(&row)?;
            let payment_status = row.payment_status;
            let share = u8::try_from(row.quarters)
                .ok()
                .and_then(Share::from_quarters)
                .ok_or_else(|| DbErr::Custom(format!("reservations.id={}: quarters", row.id)))?;
            Ok(Reservation {
                owner_name: parts.owners.get(&row.owner_id).cloned().unwrap_or_default(),
                node_name: parts.nodes.get(&row.node_id).cloned().unwrap_or_default(),
                gpu_ids: parts.gpus.remove(&row.id).unwrap_or_default(),
                status: ReservationStatus::at(
                    row.status == reservation::Status::Cancelled,
                    &window,
                    now,
                ),
                share,
                window,
                id: row.id,
                owner_id: row.owner_id,
                node_id: row.node_id,
                model: row.model,
                price_minor: row.price_minor,
                payment_status,
                // Kept with the booking by every refund (the ledger audit checks it).
                refunded_minor: row.refunded_minor,
                charge_mode: row.charge_mode,
                charge_at: row.charge_at,
                released: row.released_reason,
                created_at: row.created_at,
                team: row
                    .team_id
                    .map(|id| (id, parts.teams.get(&id).cloned().unwrap_or_default())),
                budget: None,
                priority: row.priority,
                preemptible: row.preemptible,
                approval_expires_at: row
                    .approval_expires_at
                    .filter(|_| payment_status == PaymentStatus::AwaitingApproval),
                displaced_offer: row
                    .displaced_offer
                    .as_deref()
                    .and_then(|json| serde_json::from_str(json).ok()),
                profile: row
                    .profile_version_id
                    .and_then(|id| parts.profiles.get(&id).cloned()),
                moved_from: row.moved_from_id.map(|id| {
                    let cause = row
                        .move_cause
                        .as_deref()
                        .and_then(crate::domain::failover::FailureCause::parse)
                        .unwrap_or(crate::domain::failover::FailureCause::Missing);
                    (id, cause)
                }),
                moved_to: parts.moved_to.get(&row.id).copied(),
                start_early: row.start_early,
                early_from: row.early_from,
                sla_credit_minor: row.sla_credit_minor,
                card_payment: None,
            })
        })
        .collect()
}

/// Which reservations a page of the list holds (all filters optional).
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Only this user's.
    pub owner_id: Option<i64>,
    /// Only those that end after this time.
    pub from: Option<DateTime<Utc>>,
    /// Only those that start before this time.
    pub to: Option<DateTime<Utc>>,
    /// Only those holding this GPU.
    pub gpu_id: Option<i64>,
    /// Only those with this status at `now`.
    pub status: Option<ReservationStatus>,
}

/// A page of reservations matching `filter`, latest start first (then highest id), after the
/// request's cursor: an index range on `(owner_id, start_at)` or `start_at`.
pub async fn list_page(
    db: &impl ConnectionTrait,
    filter: &ListFilter,
    page: &crate::domain::paging::PageRequest,
    now: DateTime<Utc>,
) -> Result<crate::domain::paging::Page<Reservation>, DbErr> {
    use crate::domain::paging::{Cursor, ListKind, Page};
    let mut query = reservation::Entity::find();
    if let Some(owner) = filter.owner_id {
        query = query.filter(reservation::Column::OwnerId.eq(owner));
    }
    if let Some(from) = filter.from {
        query = query.filter(reservation::Column::EndAt.gt(from));
    }
    if let Some(to) = filter.to {
        query = query.filter(reservation::Column::StartAt.lt(to));
    }
    if let Some(gpu) = filter.gpu_id {
        query = query.filter(
            reservation::Column::Id.in_subquery(
                Query::select()
                    .column(reservation_gpu::Column::ReservationId)
                    .from(reservation_gpu::Entity)
                    .and_where(reservation_gpu::Column::GpuId.eq(gpu))
                    .to_owned(),
            ),
        );
    }
    let cancelled = reservation::Column::Status.eq(reservation::Status::Cancelled);
    let kept = reservation::Column::Status.ne(reservation::Status::Cancelled);
    query = match filter.status {
        None => query,
        Some(ReservationStatus::Cancelled) => query.filter(cancelled),
        Some(ReservationStatus::Confirmed) => query
            .filter(kept)
            .filter(reservation::Column::StartAt.gt(now)),
        Some(ReservationStatus::Active) => query
            .filter(kept)
            .filter(reservation::Column::StartAt.lte(now))
            .filter(reservation::Column::EndAt.gt(now)),
        Some(ReservationStatus::Completed) => query
            .filter(kept)
            .filter(reservation::Column::EndAt.lte(now)),
    };
    if let Some(after) = page.after {
        query = query.filter(super::before_key(
            reservation::Column::StartAt,
            reservation::Column::Id,
            after,
        ));
    }
    let rows = query
        .order_by_desc(reservation::Column::StartAt)
        .order_by_desc(reservation::Column::Id)
        .limit(page.fetch())
        .all(db)
        .await?;
    let page = Page::from_rows(rows, page, ListKind::Reservations, |row| {
        Cursor::at(row.start_at, row.id)
    });
    let next = page.next;
    Ok(Page {
        items: views(db, page.items, now).await?,
        next,
    })
}

/// The team's confirmed bookings that overlap `[from, to)`, soonest first (at most 500).
pub async fn team_bookings(
    db: &impl ConnectionTrait,
    team_id: i64,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Vec<Reservation>, DbErr> {
    let rows = reservation::Entity::find()
        .filter(reservation::Column::TeamId.eq(team_id))
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::StartAt.lt(to))
        .filter(reservation::Column::EndAt.gt(from))
        .order_by_asc(reservation::Column::StartAt)
        .order_by_asc(reservation::Column::Id)
        .limit(500)
        .all(db)
        .await?;
    views(db, rows, now).await
}

/// Maintenance windows of `gpu_ids` overlapping `range`: (gpu id, window, reason).
pub async fn maintenance_overlapping(
    db: &impl ConnectionTrait,
    gpu_ids: &[i64],
    range: &Window,
) -> Result<Vec<(i64, Window, String)>, DbErr> {
    maintenance_window::Entity::find()
        .filter(maintenance_window::Column::GpuId.is_in(gpu_ids.iter().copied()))
        .filter(maintenance_window::Column::StartAt.lt(range.end()))
        .filter(maintenance_window::Column::EndAt.gt(range.start()))
        .all(db)
        .await?
        .into_iter()
        .map(|m| {
            let window = Window::new(m.start_at, m.end_at)
                .map_err(|err| DbErr::Custom(format!("maintenance_windows.id={}: {err}", m.id)))?;
            Ok((m.gpu_id, window, m.reason))
        })
        .collect()
}

/// The quarters booked on each GPU at `now` by confirmed reservations (GPUs with none left out),
/// for the metrics' reserved-versus-used view.
pub async fn reserved_quarters_at(
    db: &impl ConnectionTrait,
    now: DateTime<Utc>,
) -> Result<HashMap<i64, i64>, DbErr> {
    let rows: Vec<(i64, Option<i64>)> = reservation_gpu::Entity::find()
        .select_only()
        .column(reservation_gpu::Column::GpuId)
        .column_as(
            Expr::cust("CAST(SUM(reservations.quarters) AS BIGINT)"),
            "quarters",
        )
        .join(
            sea_orm::JoinType::InnerJoin,
            reservation_gpu::Relation::Reservation.def(),
        )
        .filter(reservation_gpu::Column::StartAt.lte(now))
        .filter(reservation_gpu::Column::EndAt.gt(now))
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .group_by(reservation_gpu::Column::GpuId)
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(gpu, quarters)| (gpu, quarters.unwrap_or(0)))
        .collect())
}
