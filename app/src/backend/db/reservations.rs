//! Reservations: booking (check and insert in one transaction no other writer can interleave),
//! cancelling, and reading what occupies the GPUs.
//!
//! Concurrency: on PostgreSQL a booking locks the rows of the GPUs it considers (`FOR UPDATE`, in
//! id order, so two bookings never wait on each other in a cycle) before it reads their
//! occupancy; on SQLite the transaction takes the database's write lock up front (`BEGIN
//! IMMEDIATE`). Either way the check and the insert see the same data. As a safety net the
//! `gpu_slot_load` table counts the quarters booked per GPU and 15-minute slot, and its CHECK
//! refuses more than a whole GPU whatever the application does.
//!
//! Money: a booking charged at once or held until the payment job charges it locks the wallet
//! that pays it (after the GPUs and the team) and must fit in what the wallet has available,
//! its balance less what its unpaid bookings hold ([`crate::domain::ledger::Funds`]); two
//! bookings paid by one wallet check it one after the other.

use crate::backend::db::begin_write;
use crate::backend::db::idempotency::{Claim, IdempotencyKey, replayed};
use crate::backend::db::ledger::PostError;
use crate::backend::entity::{gpu, maintenance_window, node, reservation, reservation_gpu, user};
use crate::domain::ledger::{Account, RefundPolicy};
use crate::domain::money::{Currency, Money};
use crate::domain::payment::{ChargeMode, ChargePlan, ChargePolicy};
use crate::domain::problem::Problem;
use crate::domain::quota::{
    Holder, Priority, QuotaCheck, TeamSpan, booking_priority, check_quota, gpu_hours_text,
    gpus_text, plan_displacement,
};
use crate::domain::reservation::{
    Clash, NewReservation, PaymentStatus, ReleaseReason, Reservation, ReservationStatus, SlotOffer,
    Target,
};
use crate::domain::schedule::{
    Occupancy, SLOT_MINUTES, Share, WHOLE_GPU, Window, earliest_fit, first_overflow, fits,
    price_minor,
};
use crate::domain::team::BudgetCheck;
use crate::error::AppError;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, OnConflict, Query};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection,
    DatabaseTransaction, DbBackend, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};
use std::collections::{BTreeMap, HashMap};

/// How many times a booking is retried after a serialization failure or a busy database.
const MAX_ATTEMPTS: u32 = 5;
/// Rows per `gpu_slot_load` insert statement.
const SLOT_ROWS_PER_STATEMENT: usize = 1000;

/// A GPU as booking needs it.
#[derive(Debug, Clone)]
struct BookableGpu {
    id: i64,
    node_id: i64,
    node_name: String,
    device_index: i32,
    model: String,
    status: String,
    shareable: bool,
    hourly_price_minor: i64,
}

impl BookableGpu {
    fn label(&self) -> String {
        format!("{} #{}", self.node_name, self.device_index)
    }
}

async fn gpus_where(
    db: &impl ConnectionTrait,
    filter: sea_orm::Condition,
) -> Result<Vec<BookableGpu>, DbErr> {
    // One query: each GPU with its node's name.
    let rows: Vec<(gpu::Model, Option<node::Model>)> = gpu::Entity::find()
        .find_also_related(node::Entity)
        .filter(filter)
        .order_by_asc(gpu::Column::NodeId)
        .order_by_asc(gpu::Column::DeviceIndex)
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(row, node)| BookableGpu {
            node_name: node.map(|n| n.name).unwrap_or_default(),
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
                row.status
            },
            shareable: row.shareable,
            hourly_price_minor: row.hourly_price_minor,
        })
        .collect())
}

/// PostgreSQL: locks the GPUs' rows in id order until the transaction ends. SQLite: the
/// transaction already holds the write lock.
pub(crate) async fn lock_gpus(txn: &DatabaseTransaction, ids: &[i64]) -> Result<(), DbErr> {
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

/// Reservation ids per statement when reading the reservations of many holds (well under the
/// bound-parameter limits of both stores).
const IDS_PER_STATEMENT: usize = 5000;

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

/// What a hold's reservation adds to the index row: owner, quarters, team, priority,
/// preemptible, booked at.
type HoldTerms = (i64, i16, Option<i64>, String, bool, DateTime<Utc>);
/// A reservation's id and its [`HoldTerms`], as read.
type HoldTermsRow = (i64, i64, i16, Option<i64>, String, bool, DateTime<Utc>);

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
            .filter(reservation::Column::Status.eq("confirmed"))
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
                confirmed.get(&reservation_id)?.clone();
            Some(
                Window::new(start, end)
                    .map(|window| Hold {
                        gpu_id,
                        reservation_id,
                        owner_id,
                        team_id,
                        window,
                        quarters: u8::try_from(quarters).unwrap_or(WHOLE_GPU),
                        priority: Priority::parse(&priority).unwrap_or_default(),
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

fn stored_window(row: &reservation::Model) -> Result<Window, DbErr> {
    Window::new(row.start_at, row.end_at)
        .map_err(|err| DbErr::Custom(format!("reservations.id={}: {err}", row.id)))
}

pub(crate) fn is_retryable(err: &DbErr) -> bool {
    let text = err.to_string();
    [
        "40001",
        "40P01",
        "could not serialize",
        "deadlock",
        "database is locked",
        "SQLITE_BUSY",
        // A concurrent request with the same idempotency key committed first.
        "uq_idempotency_keys_user_key",
    ]
    .iter()
    .any(|needle| text.contains(needle))
}

/// What a booking is made under besides the request itself.
#[derive(Debug, Clone, Copy)]
pub struct BookingTerms<'a> {
    /// The latest start allowed (the booking horizon).
    pub latest_start: DateTime<Utc>,
    /// The time of booking.
    pub now: DateTime<Utc>,
    /// The currency, for the insufficient-funds message.
    pub currency: &'a Currency,
    /// When bookings are charged.
    pub charge: &'a ChargePolicy,
}

/// Books `request`, all GPUs or none, in one transaction; retried a few times when the database
/// reports a serialization failure or is busy. A clash answers [`AppError::Clash`] with the
/// nearest window that fits; bad GPUs answer [`AppError::Validation`] or [`AppError::Conflict`].
#[tracing::instrument(skip_all, fields(user.id = request.owner_id))]
pub async fn book(
    db: &DatabaseConnection,
    request: &NewReservation,
    terms: &BookingTerms<'_>,
    idempotency: Option<&IdempotencyKey>,
) -> Result<Reservation, AppError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match try_book(db, request, terms, idempotency).await {
            Err(BookError::Db(err)) if attempt < MAX_ATTEMPTS && is_retryable(&err) => {
                tracing::debug!(attempt, error = %err, "booking retried");
                tokio_sleep_ms(10 * u64::from(attempt)).await;
            }
            Err(BookError::Db(err)) => return Err(capacity_or(err)),
            Err(BookError::App(err)) => return Err(err),
            Ok(reservation) => return Ok(reservation),
        }
    }
}

async fn tokio_sleep_ms(ms: u64) {
    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
}

/// The safety net fired (a bug elsewhere), or a plain database error.
fn capacity_or(err: DbErr) -> AppError {
    if err.to_string().contains("ck_gpu_slot_load_capacity") {
        tracing::error!(error = %err, "capacity guard refused a booking the check let through");
        AppError::Conflict(Problem::FullyBooked)
    } else {
        AppError::from(err)
    }
}

enum BookError {
    Db(DbErr),
    App(AppError),
}

impl From<DbErr> for BookError {
    fn from(err: DbErr) -> Self {
        BookError::Db(err)
    }
}

impl From<AppError> for BookError {
    fn from(err: AppError) -> Self {
        BookError::App(err)
    }
}

fn invalid(field: &str, problem: Problem) -> BookError {
    BookError::App(AppError::invalid(field, problem))
}

async fn try_book(
    db: &DatabaseConnection,
    request: &NewReservation,
    terms: &BookingTerms<'_>,
    idempotency: Option<&IdempotencyKey>,
) -> Result<Reservation, BookError> {
    let BookingTerms {
        latest_start,
        now,
        currency,
        charge,
    } = *terms;
    let txn = begin_write(db).await?;
    if let Some(key) = idempotency {
        match super::idempotency::claim(&txn, key, now).await? {
            Ok(Claim::Fresh) => {}
            Ok(Claim::Replay { body, .. }) => return Ok(replayed(&body)?),
            Err(err) => return Err(err.into()),
        }
    }
    let quarters = request.share.quarters();
    let window = request.window;
    // The booking's priority class: the team's default unless a lower one is asked for.
    let default_priority = match request.team_id {
        None => None,
        Some(team_id) => Some(
            super::quotas::policy(&txn, team_id)
                .await?
                .ok_or_else(|| AppError::NotFound(format!("team {team_id}")))?
                .default_priority,
        ),
    };
    let priority = booking_priority(request.priority, default_priority, request.platform_admin)
        .map_err(|problem| invalid("priority", problem))?;
    // Preemptible lower-priority bookings this one takes the place of, when nothing else fits.
    let mut displaced: Vec<i64> = Vec::new();
    let chosen: Vec<BookableGpu> = match &request.target {
        Target::Gpus(ids) => {
            // Locked before they are read: a price or sharing changed meanwhile is seen.
            lock_gpus(&txn, ids).await?;
            let gpus = gpus_where(&txn, gpu::Column::Id.is_in(ids.clone()).into()).await?;
            if let Some(missing) = ids.iter().find(|id| !gpus.iter().any(|g| g.id == **id)) {
                return Err(invalid("gpu_ids", Problem::NoSuchGpu { id: *missing }));
            }
            let first = &gpus[0];
            if gpus
                .iter()
                .any(|g| g.node_id != first.node_id || g.model != first.model)
            {
                return Err(invalid("gpu_ids", Problem::MixedGpus));
            }
            if let Some(g) = gpus.iter().find(|g| g.status != "active") {
                return Err(AppError::Conflict(Problem::GpuUnavailable {
                    gpu: g.label(),
                    status: g.status.clone(),
                })
                .into());
            }
            if request.share != Share::Whole
                && let Some(g) = gpus.iter().find(|g| !g.shareable)
            {
                return Err(invalid("share", Problem::NotShareable { gpu: g.label() }));
            }
            let ids: Vec<i64> = gpus.iter().map(|g| g.id).collect();
            let busy = occupancies(&txn, &ids, &window).await?;
            let clash = gpus.iter().find_map(|g| {
                let taken = busy.get(&g.id).map(Vec::as_slice).unwrap_or(&[]);
                first_overflow(taken, &window, quarters).map(|at| (g.id, g.label(), at))
            });
            if let Some((gpu_id, what, at)) = clash {
                // Other GPUs free at the same time come first (the booking is refused with a
                // suggestion); only then does it take the place of preemptible bookings of lower
                // priority on these.
                let candidates = bookable_of_model(&txn, &first.model, request.share).await?;
                let elsewhere = find_offers(
                    &txn,
                    &candidates,
                    gpus.len(),
                    request.share,
                    window.length(),
                    window.start(),
                    window.start(),
                    1,
                )
                .await?
                .into_iter()
                .next();
                let plan = match elsewhere {
                    Some(_) => None,
                    None => {
                        let holders = holders_on(&txn, &ids, &window, priority).await?;
                        plan_displacement(&holders, gpus.len(), &window, quarters)
                    }
                };
                match plan {
                    Some((_, victims)) => displaced = victims,
                    None => {
                        let suggestion =
                            suggest_for_gpus(&txn, &gpus, request.share, &window, latest_start)
                                .await?;
                        return Err(AppError::Clash(Box::new(Clash {
                            gpu_id: Some(gpu_id),
                            what,
                            at,
                            suggestion,
                        }))
                        .into());
                    }
                }
            }
            gpus
        }
        Target::Model { model, count } => {
            let candidates = bookable_of_model(&txn, model, request.share).await?;
            if candidates.is_empty() {
                return Err(invalid(
                    "model",
                    Problem::NoGpuOfModel {
                        model: model.clone(),
                    },
                ));
            }
            let ids: Vec<i64> = candidates.iter().map(|g| g.id).collect();
            lock_gpus(&txn, &ids).await?;
            // Read again under the locks: a price or sharing changed meanwhile is seen (GPUs
            // added meanwhile are left out: they are not locked).
            let locked: std::collections::HashSet<i64> = ids.iter().copied().collect();
            let candidates: Vec<BookableGpu> = bookable_of_model(&txn, model, request.share)
                .await?
                .into_iter()
                .filter(|g| locked.contains(&g.id))
                .collect();
            let ids: Vec<i64> = candidates.iter().map(|g| g.id).collect();
            let busy = occupancies(&txn, &ids, &window).await?;
            let count = usize::try_from(*count).unwrap_or(usize::MAX);
            let mut picked = None;
            for (_, node_gpus) in by_node(&candidates) {
                let fitting: Vec<BookableGpu> = node_gpus
                    .into_iter()
                    .filter(|g| {
                        fits(
                            busy.get(&g.id).map(Vec::as_slice).unwrap_or(&[]),
                            &window,
                            quarters,
                        )
                    })
                    .take(count)
                    .collect();
                if fitting.len() == count {
                    picked = Some(fitting);
                    break;
                }
            }
            if picked.is_none()
                && let Some((gpus, victims)) =
                    displace_on_nodes(&txn, &candidates, count, &window, quarters, priority).await?
            {
                displaced = victims;
                picked = Some(gpus);
            }
            match picked {
                Some(gpus) => gpus,
                None => {
                    return Err(model_clash(
                        &txn,
                        model,
                        &candidates,
                        count,
                        request.share,
                        &window,
                        latest_start,
                    )
                    .await?
                    .into());
                }
            }
        }
    };

    // The displaced bookings' other GPUs (same node and model, but maybe not among those read)
    // are locked now, before the team row, as every booking orders its locks: GPUs, then team.
    // Outside id order they may meet another booking's locks in a cycle; PostgreSQL then
    // cancels one of the two, which is retried.
    let victims: Vec<reservation::Model> = if displaced.is_empty() {
        Vec::new()
    } else {
        let held: Vec<i64> = reservation_gpu::Entity::find()
            .select_only()
            .column(reservation_gpu::Column::GpuId)
            .filter(reservation_gpu::Column::ReservationId.is_in(displaced.clone()))
            .into_tuple()
            .all(&txn)
            .await?;
        lock_gpus(&txn, &held).await?;
        reservation::Entity::find()
            .filter(reservation::Column::Id.is_in(displaced.clone()))
            .all(&txn)
            .await?
    };
    let price: i64 = chosen
        .iter()
        .map(|g| price_minor(g.hourly_price_minor, quarters, &window))
        .sum();
    let first = &chosen[0];
    let span = TeamSpan {
        window,
        quarters: i64::from(quarters) * i64::try_from(chosen.len()).unwrap_or(i64::MAX),
    };
    // Batch bookings, and burst bookings beyond a quota, may be displaced.
    let mut preemptible = priority == Priority::Batch;
    let mut approval_until = None;
    // A team booking stays within the team's monthly budget and quota: the team's row is locked
    // (after the GPUs, in every booking) so that two bookings cannot both take their last part.
    let budget = match request.team_id {
        None => None,
        Some(team_id) => {
            let (budget, policy) = super::teams::lock_rules(&txn, team_id)
                .await?
                .ok_or_else(|| AppError::NotFound(format!("team {team_id}")))?;
            // Again under the lock: a member removed while this request ran books nothing.
            let Some(by_admin) =
                super::quotas::standing(&txn, team_id, request.owner_id, request.platform_admin)
                    .await?
            else {
                return Err(AppError::NotFound(format!("team {team_id}")).into());
            };
            let (from, to) = crate::domain::schedule::utc_month_of(window.start());
            // The team's own bookings this one displaces no longer count.
            let freed: i64 = victims
                .iter()
                .filter(|v| v.team_id == Some(team_id) && from <= v.start_at && v.start_at < to)
                .map(|v| v.price_minor)
                .sum();
            let spent = Money::from_minor(
                super::teams::month_spend(&txn, team_id, from, to)
                    .await?
                    .minor()
                    - freed,
            );
            let warning = match budget.check(spent, Money::from_minor(price)) {
                BudgetCheck::Over {
                    spent_minor,
                    limit_minor,
                    price_minor,
                } => {
                    return Err(AppError::Conflict(Problem::OverBudget {
                        spent_minor,
                        limit_minor,
                        price_minor,
                        spent: amount_text(spent_minor, currency),
                        limit: amount_text(limit_minor, currency),
                        price: amount_text(price_minor, currency),
                    })
                    .into());
                }
                BudgetCheck::Within => None,
                warn @ BudgetCheck::Warn { .. } => Some(warn),
            };
            if !preemptible
                && let Some(quota) = super::quotas::quota(&txn, team_id, &first.model).await?
            {
                let weeks_from = crate::domain::team::utc_week_of(window.start()).0;
                let weeks_to =
                    crate::domain::team::utc_week_of(window.end() - TimeDelta::minutes(1)).1;
                let existing: Vec<TeamSpan> = super::quotas::team_spans(
                    &txn,
                    team_id,
                    Some(&first.model),
                    Ord::min(weeks_from, window.start()),
                    Ord::max(weeks_to, window.end()),
                    true,
                )
                .await?
                .into_iter()
                .map(|(_, span, _)| span)
                .collect();
                match check_quota(&quota, &existing, &span) {
                    QuotaCheck::Within => {}
                    _ if policy.allow_burst => preemptible = true,
                    over => return Err(AppError::Conflict(over_quota(&first.model, &over)).into()),
                }
            }
            approval_until = policy.approval_until(&span, by_admin, now);
            warning
        }
    };
    // A booking that waits for approval takes nobody's place: it might never be approved.
    if approval_until.is_some() && !displaced.is_empty() {
        let candidates = bookable_of_model(&txn, &first.model, request.share).await?;
        return Err(model_clash(
            &txn,
            &first.model,
            &candidates,
            chosen.len(),
            request.share,
            &window,
            latest_start,
        )
        .await?
        .into());
    }
    for victim in &displaced {
        displace(&txn, *victim, now).await?;
    }
    let plan = charge.plan(request.charge, window.start(), now);
    let (payment_status, charge_mode, charge_at) = match plan {
        _ if approval_until.is_some() => (PaymentStatus::AwaitingApproval, request.charge, None),
        _ if price == 0 => (PaymentStatus::Free, ChargeMode::AtBooking, None),
        ChargePlan::Now => (PaymentStatus::Paid, ChargeMode::AtBooking, None),
        ChargePlan::At(at) => (PaymentStatus::Pending, ChargeMode::BeforeStart, Some(at)),
    };
    // Charged now or held until the payment job charges it, a booking spends only what its
    // wallet has available: the balance less what its unpaid bookings hold.
    if matches!(payment_status, PaymentStatus::Paid | PaymentStatus::Pending)
        && let Some(missing) = shortfall(&txn, payer_of(request), Money::from_minor(price)).await?
    {
        return Err(BookError::App(crate::backend::ledger::insufficient(
            missing, currency,
        )));
    }
    let row = reservation::ActiveModel {
        owner_id: Set(request.owner_id),
        node_id: Set(first.node_id),
        model: Set(first.model.clone()),
        quarters: Set(i16::from(quarters)),
        start_at: Set(window.start()),
        end_at: Set(window.end()),
        status: Set("confirmed".into()),
        price_minor: Set(price),
        created_at: Set(now),
        cancelled_at: Set(None),
        cancelled_by: Set(None),
        payment_status: Set(payment_status.as_str().to_owned()),
        charge_mode: Set(charge_mode.as_str().to_owned()),
        charge_at: Set(charge_at),
        released_reason: Set(None),
        team_id: Set(request.team_id),
        priority: Set(priority.as_str().to_owned()),
        preemptible: Set(preemptible),
        approval_expires_at: Set(approval_until),
        displaced_offer: Set(None),
        gpu_count: Set(i32::try_from(chosen.len()).unwrap_or(i32::MAX)),
        charged_minor: Set(0),
        refunded_minor: Set(0),
        ..Default::default()
    }
    .insert(&txn)
    .await?;
    // Paid in the same transaction: a short wallet refuses the booking and nothing is kept.
    if payment_status == PaymentStatus::Paid {
        match super::ledger::charge(&txn, &row, Some(request.owner_id), now).await {
            Ok(_) => {}
            Err(PostError::InsufficientFunds { missing, .. }) => {
                return Err(BookError::App(crate::backend::ledger::insufficient(
                    missing, currency,
                )));
            }
            Err(PostError::Db(err)) => return Err(BookError::Db(err)),
        }
    }
    reservation_gpu::Entity::insert_many(chosen.iter().map(|g| reservation_gpu::ActiveModel {
        reservation_id: Set(row.id),
        gpu_id: Set(g.id),
        start_at: Set(row.start_at),
        end_at: Set(row.end_at),
    }))
    .exec_without_returning(&txn)
    .await?;
    let ids: Vec<i64> = chosen.iter().map(|g| g.id).collect();
    add_slot_load(&txn, &ids, &window, i16::from(quarters)).await?;
    // Each displaced owner is offered the nearest window that is free now.
    for victim in &displaced {
        offer_instead(&txn, *victim, now, latest_start).await?;
    }
    let mut reservation = reservation_view(&txn, row, now).await?;
    reservation.budget = budget;
    if let Some(key) = idempotency {
        super::idempotency::record(&txn, key, 201, &reservation).await?;
    }
    txn.commit().await?;
    Ok(reservation)
}

/// The wallet that pays `request`: its team's for a team booking, else its owner's.
fn payer_of(request: &NewReservation) -> Account {
    match request.team_id {
        Some(team) => Account::TeamWallet(team),
        None => Account::Wallet(request.owner_id),
    }
}

/// Locks `wallet` until the transaction ends and answers how much more than it has available
/// (its balance less what its unpaid bookings hold) a booking of `price` needs, `None` when it is
/// covered. Holding the lock, the caller's charge or hold is written before any other booking
/// paid by the wallet reads its funds.
async fn shortfall(
    txn: &DatabaseTransaction,
    wallet: Account,
    price: Money,
) -> Result<Option<Money>, DbErr> {
    Ok(super::ledger::lock_funds(txn, wallet)
        .await?
        .missing_for(price))
}

/// Confirmed reservations and maintenance windows on `gpu_ids` during `window`, per GPU, each
/// marked displaceable when a booking of `priority` may take its place (preemptible and of
/// lower priority).
async fn holders_on(
    txn: &DatabaseTransaction,
    gpu_ids: &[i64],
    window: &Window,
    priority: Priority,
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
            displaceable: (hold.preemptible && hold.priority < priority).then_some((
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
async fn maintenance_on(
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

/// `count` of `candidates` on one node that a booking of `priority` gets by displacing
/// preemptible lower-priority bookings, on the node where that displaces fewest; None if no
/// node has enough.
async fn displace_on_nodes(
    txn: &DatabaseTransaction,
    candidates: &[BookableGpu],
    count: usize,
    window: &Window,
    quarters: u8,
    priority: Priority,
) -> Result<Option<(Vec<BookableGpu>, Vec<i64>)>, DbErr> {
    let ids: Vec<i64> = candidates.iter().map(|g| g.id).collect();
    let holders = holders_on(txn, &ids, window, priority).await?;
    let mut best: Option<(Vec<BookableGpu>, Vec<i64>)> = None;
    for (_, node_gpus) in by_node(candidates) {
        let on_node: Vec<(i64, Vec<Holder>)> = holders
            .iter()
            .filter(|(id, _)| node_gpus.iter().any(|g| g.id == *id))
            .cloned()
            .collect();
        let Some((gpu_ids, victims)) = plan_displacement(&on_node, count, window, quarters) else {
            continue;
        };
        if best
            .as_ref()
            .is_none_or(|(_, fewest)| victims.len() < fewest.len())
        {
            let gpus = node_gpus
                .into_iter()
                .filter(|g| gpu_ids.contains(&g.id))
                .collect();
            best = Some((gpus, victims));
        }
    }
    Ok(best)
}

/// Cancels reservation `id`, displaced by a higher-priority booking, with a full refund.
async fn displace(txn: &DatabaseTransaction, id: i64, now: DateTime<Utc>) -> Result<(), DbErr> {
    release(txn, id, None, now, ReleaseReason::Preempted).await
}

/// Stores on displaced reservation `id` the nearest window (from its start, or now if later)
/// where the same GPUs' worth of its model is free.
async fn offer_instead(
    txn: &DatabaseTransaction,
    id: i64,
    now: DateTime<Utc>,
    latest_start: DateTime<Utc>,
) -> Result<(), DbErr> {
    let Some(row) = reservation::Entity::find_by_id(id).one(txn).await? else {
        return Ok(());
    };
    let window = stored_window(&row)?;
    let share = u8::try_from(row.quarters)
        .ok()
        .and_then(Share::from_quarters)
        .unwrap_or(Share::Whole);
    let count = reservation_gpu::Entity::find()
        .filter(reservation_gpu::Column::ReservationId.eq(id))
        .all(txn)
        .await?
        .len();
    let candidates = bookable_of_model(txn, &row.model, share).await?;
    let from = Ord::max(window.start(), crate::domain::schedule::slot_ceil(now));
    let offer = find_offers(
        txn,
        &candidates,
        count.max(1),
        share,
        window.length(),
        from,
        Ord::max(latest_start, from),
        1,
    )
    .await?
    .into_iter()
    .next();
    if let Some(offer) = offer {
        let json = serde_json::to_string(&offer).map_err(|err| DbErr::Custom(err.to_string()))?;
        reservation::Entity::update_many()
            .col_expr(reservation::Column::DisplacedOffer, Expr::value(json))
            .filter(reservation::Column::Id.eq(id))
            .exec(txn)
            .await?;
    }
    Ok(())
}

/// "`count` × `model` is booked then", with the earliest window from the same start where
/// `count` of `candidates` (GPUs of `model`) fit.
async fn model_clash(
    txn: &DatabaseTransaction,
    model: &str,
    candidates: &[BookableGpu],
    count: usize,
    share: Share,
    window: &Window,
    latest_start: DateTime<Utc>,
) -> Result<AppError, DbErr> {
    let suggestion = find_offers(
        txn,
        candidates,
        count,
        share,
        window.length(),
        window.start(),
        latest_start,
        1,
    )
    .await?
    .into_iter()
    .next();
    Ok(AppError::Clash(Box::new(Clash {
        gpu_id: None,
        what: format!("{count} × {model}"),
        at: window.start(),
        suggestion,
    })))
}

/// A quota refusal with its numbers.
fn over_quota(model: &str, over: &QuotaCheck) -> Problem {
    match *over {
        QuotaCheck::Weekly {
            used_quarter_minutes,
            asked_quarter_minutes,
            limit_gpu_hours,
            ..
        } => Problem::OverQuotaHours {
            model: model.to_owned(),
            used: gpu_hours_text(used_quarter_minutes),
            asked: gpu_hours_text(asked_quarter_minutes),
            limit: limit_gpu_hours,
        },
        QuotaCheck::Concurrent {
            used_quarters,
            asked_quarters,
            limit_gpus,
        } => Problem::OverQuotaGpus {
            model: model.to_owned(),
            used: gpus_text(used_quarters),
            asked: gpus_text(asked_quarters),
            limit: limit_gpus,
        },
        // Not a refusal: never asked for.
        QuotaCheck::Within => Problem::OverQuotaGpus {
            model: model.to_owned(),
            used: String::new(),
            asked: String::new(),
            limit: 0,
        },
    }
}

/// Bookable GPUs of `model` (shareable ones when a share is asked), by node and device index.
async fn bookable_of_model(
    db: &impl ConnectionTrait,
    model: &str,
    share: Share,
) -> Result<Vec<BookableGpu>, DbErr> {
    let mut condition = sea_orm::Condition::all()
        .add(gpu::Column::Model.eq(model))
        .add(gpu::Column::Status.eq("active"))
        .add(gpu::Column::Pending.eq(false))
        // A GPU its node no longer reports cannot be promised.
        .add(gpu::Column::VanishedAt.is_null());
    if share != Share::Whole {
        condition = condition.add(gpu::Column::Shareable.eq(true));
    }
    gpus_where(db, condition).await
}

/// GPUs grouped by node, nodes by name.
fn by_node(gpus: &[BookableGpu]) -> Vec<(String, Vec<BookableGpu>)> {
    let mut grouped: BTreeMap<(String, i64), Vec<BookableGpu>> = BTreeMap::new();
    for g in gpus {
        grouped
            .entry((g.node_name.clone(), g.node_id))
            .or_default()
            .push(g.clone());
    }
    grouped
        .into_iter()
        .map(|((name, _), gpus)| (name, gpus))
        .collect()
}

/// The nearest window after a clash on these exact GPUs; else on any node with as many GPUs of
/// the model.
async fn suggest_for_gpus(
    db: &impl ConnectionTrait,
    gpus: &[BookableGpu],
    share: Share,
    window: &Window,
    latest_start: DateTime<Utc>,
) -> Result<Option<SlotOffer>, DbErr> {
    let same = find_offers(
        db,
        gpus,
        gpus.len(),
        share,
        window.length(),
        window.start(),
        latest_start,
        1,
    )
    .await?;
    if let Some(offer) = same.into_iter().next() {
        return Ok(Some(offer));
    }
    let candidates = bookable_of_model(db, &gpus[0].model, share).await?;
    Ok(find_offers(
        db,
        &candidates,
        gpus.len(),
        share,
        window.length(),
        window.start(),
        latest_start,
        1,
    )
    .await?
    .into_iter()
    .next())
}

/// The first stretch of the search for free windows. Most searches are answered within it, and
/// reading a day of bookings costs a fraction of reading the whole horizon.
const FIRST_SEARCH_SPAN: TimeDelta = TimeDelta::days(1);

/// Up to `limit` earliest windows of `length` starting in `[earliest, latest_start]` where
/// `count` of `candidates` on one node fit `share`, earliest first (one per node).
///
/// The horizon is searched in stretches that double in length (a day, two, four, …), reading only the bookings that
/// touch each stretch: a node that has no fit starting in one stretch can only have a later one,
/// so once `limit` nodes have a fit the rest of the horizon cannot offer anything earlier.
#[expect(
    clippy::too_many_arguments,
    reason = "a query with many independent knobs"
)]
async fn find_offers(
    db: &impl ConnectionTrait,
    candidates: &[BookableGpu],
    count: usize,
    share: Share,
    length: TimeDelta,
    earliest: DateTime<Utc>,
    latest_start: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<SlotOffer>, DbErr> {
    let mut offers: Vec<SlotOffer> = Vec::new();
    // On the grid, so that consecutive stretches leave no slot untried between them.
    let mut from = crate::domain::schedule::slot_ceil(earliest);
    let mut span = FIRST_SEARCH_SPAN;
    while from <= latest_start && offers.len() < limit {
        let to = std::cmp::min(latest_start, from + span);
        let open: Vec<BookableGpu> = candidates
            .iter()
            .filter(|g| !offers.iter().any(|offer| offer.node_id == g.node_id))
            .cloned()
            .collect();
        offers.extend(find_offers_in(db, &open, count, share, length, from, to).await?);
        from = to + TimeDelta::minutes(SLOT_MINUTES);
        span = span * 2;
    }
    offers.sort_by_key(|offer| (offer.window.start(), offer.node_name.clone()));
    offers.truncate(limit);
    Ok(offers)
}

/// For each node of `candidates`, the earliest window of `length` starting in
/// `[earliest, latest_start]` where `count` of its GPUs fit `share`.
async fn find_offers_in(
    db: &impl ConnectionTrait,
    candidates: &[BookableGpu],
    count: usize,
    share: Share,
    length: TimeDelta,
    earliest: DateTime<Utc>,
    latest_start: DateTime<Utc>,
) -> Result<Vec<SlotOffer>, DbErr> {
    if candidates.is_empty() || latest_start < earliest {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = candidates.iter().map(|g| g.id).collect();
    let range = Window::new(
        crate::domain::schedule::slot_floor(earliest),
        crate::domain::schedule::slot_ceil(latest_start + length),
    )
    .map_err(|err| DbErr::Custom(err.to_string()))?;
    let busy = occupancies(db, &ids, &range).await?;
    let mut offers = Vec::new();
    for (node_name, node_gpus) in by_node(candidates) {
        let occupancy: Vec<Vec<Occupancy>> = node_gpus
            .iter()
            .map(|g| busy.get(&g.id).cloned().unwrap_or_default())
            .collect();
        if let Some((start, picked)) = earliest_fit(
            &occupancy,
            count,
            share.quarters(),
            length,
            earliest,
            latest_start,
        ) {
            let window =
                Window::new(start, start + length).map_err(|err| DbErr::Custom(err.to_string()))?;
            let gpus: Vec<&BookableGpu> = picked.iter().map(|i| &node_gpus[*i]).collect();
            offers.push(SlotOffer {
                node_id: gpus[0].node_id,
                node_name,
                model: gpus[0].model.clone(),
                gpu_ids: gpus.iter().map(|g| g.id).collect(),
                share,
                price_minor: gpus
                    .iter()
                    .map(|g| price_minor(g.hourly_price_minor, share.quarters(), &window))
                    .sum(),
                window,
            });
        }
    }
    Ok(offers)
}

/// What "find a slot" asks for.
#[derive(Debug, Clone)]
pub struct SlotQuery {
    /// Exact model, or any model with at least `min_memory_mib`.
    pub model: Option<String>,
    /// Minimum memory per GPU when no model is given.
    pub min_memory_mib: Option<i64>,
    /// GPUs on one node.
    pub count: usize,
    /// Share of each.
    pub share: Share,
    /// Length.
    pub length: TimeDelta,
    /// Earliest start.
    pub earliest: DateTime<Utc>,
}

/// The earliest windows (up to `limit`) that fit `query`, across all nodes and matching models.
#[tracing::instrument(skip_all)]
pub async fn find_slots(
    db: &impl ConnectionTrait,
    query: &SlotQuery,
    latest_start: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<SlotOffer>, DbErr> {
    let mut condition = sea_orm::Condition::all()
        .add(gpu::Column::Status.eq("active"))
        .add(gpu::Column::Pending.eq(false))
        .add(gpu::Column::VanishedAt.is_null());
    if let Some(model) = &query.model {
        condition = condition.add(gpu::Column::Model.eq(model.as_str()));
    }
    if let Some(memory) = query.min_memory_mib {
        condition = condition.add(gpu::Column::MemoryMib.gte(memory));
    }
    if query.share != Share::Whole {
        condition = condition.add(gpu::Column::Shareable.eq(true));
    }
    let candidates = gpus_where(db, condition).await?;
    // One model per reservation: search each model separately.
    let mut models: BTreeMap<String, Vec<BookableGpu>> = BTreeMap::new();
    for g in candidates {
        models.entry(g.model.clone()).or_default().push(g);
    }
    let mut offers = Vec::new();
    for gpus in models.values() {
        offers.extend(
            find_offers(
                db,
                gpus,
                query.count,
                query.share,
                query.length,
                query.earliest,
                latest_start,
                limit,
            )
            .await?,
        );
    }
    offers.sort_by_key(|offer| {
        (
            offer.window.start(),
            offer.price_minor,
            offer.node_name.clone(),
        )
    });
    offers.truncate(limit);
    Ok(offers)
}

/// Adds `quarters` to every slot of `window` on each GPU; the table's CHECK refuses more than a
/// whole GPU.
async fn add_slot_load(
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
pub(crate) async fn withdraw(
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
        .col_expr(reservation::Column::Status, Expr::value("cancelled"))
        .col_expr(reservation::Column::CancelledAt, Expr::value(now))
        .col_expr(reservation::Column::CancelledBy, Expr::value(cancelled_by))
        .col_expr(
            reservation::Column::ReleasedReason,
            Expr::value(released.map(|reason| reason.as_str().to_owned())),
        )
        .filter(reservation::Column::Id.eq(row.id))
        .filter(reservation::Column::Status.eq("confirmed"))
        .exec(txn)
        .await?;
    if updated.rows_affected != 1 {
        return Ok(false);
    }
    let mut update = Query::update();
    update
        .table(Alias::new("gpu_slot_load"))
        .value(
            Alias::new("quarters"),
            Expr::col(Alias::new("quarters")).sub(row.quarters),
        )
        .and_where(Expr::col(Alias::new("gpu_id")).is_in(held))
        .and_where(Expr::col(Alias::new("slot_start")).gte(row.start_at))
        .and_where(Expr::col(Alias::new("slot_start")).lt(row.end_at));
    txn.execute(&update).await?;
    Ok(true)
}

/// Releases reservation `id` for `reason` (its GPU taken for maintenance or retired by platform
/// admin `admin`), refunding what was paid in full, inside the caller's write transaction.
pub(crate) async fn release(
    txn: &DatabaseTransaction,
    id: i64,
    admin: Option<i64>,
    now: DateTime<Utc>,
    reason: ReleaseReason,
) -> Result<(), DbErr> {
    let Some(row) = reservation::Entity::find_by_id(id).one(txn).await? else {
        return Ok(());
    };
    if !withdraw(txn, &row, now, admin, Some(reason)).await? {
        return Ok(());
    }
    if let Some((charge_id, paid)) = super::ledger::charge_of(txn, id).await? {
        super::ledger::refund(txn, &row, charge_id, paid, admin, now).await?;
    }
    tracing::info!(
        reservation.id = id,
        reason = reason.as_str(),
        "reservation released"
    );
    Ok(())
}

/// Retires GPU `gpu_id` (platform admin `admin`): it can no longer be booked, and every
/// reservation holding it from now on is released with a full refund, in one transaction.
/// Returns the released reservations.
pub async fn retire_gpu(
    db: &DatabaseConnection,
    gpu_id: i64,
    admin: i64,
    now: DateTime<Utc>,
) -> Result<Vec<i64>, AppError> {
    let txn = begin_write(db).await?;
    lock_gpus(&txn, &[gpu_id]).await?;
    let status_before = gpu::Entity::find_by_id(gpu_id)
        .one(&txn)
        .await?
        .map(|row| row.status);
    let updated = gpu::Entity::update_many()
        .col_expr(gpu::Column::Status, Expr::value("retired"))
        .filter(gpu::Column::Id.eq(gpu_id))
        .exec(&txn)
        .await?;
    if updated.rows_affected == 0 {
        return Err(AppError::NotFound(format!("GPU {gpu_id}")));
    }
    // Everything ending after now (reservations start at most a booking horizon ahead).
    let from = crate::domain::schedule::slot_floor(now);
    let range = Window::new(from, from + TimeDelta::days(366 * 3))
        .map_err(|err| DbErr::Custom(err.to_string()))?;
    let mut ids: Vec<i64> = holds_on(&txn, &[gpu_id], &range)
        .await?
        .into_iter()
        .filter(|hold| hold.window.end() > now)
        .map(|hold| hold.reservation_id)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    for id in &ids {
        release(&txn, *id, Some(admin), now, ReleaseReason::Retired).await?;
    }
    crate::backend::db::audit::append(
        &txn,
        crate::backend::db::audit::NewEntry {
            at: now,
            actor_id: Some(admin),
            action: crate::domain::audit::AuditAction::GpuRetire,
            target_kind: "gpu",
            target_id: gpu_id.to_string(),
            team_id: None,
        },
        Some(&serde_json::json!({ "status": status_before })),
        Some(&serde_json::json!({ "status": "retired", "released_reservations": ids })),
    )
    .await?;
    txn.commit().await?;
    tracing::info!(gpu.id = gpu_id, released = ids.len(), "GPU retired");
    Ok(ids)
}

/// Reservation `id` as stored, if it exists.
pub async fn row(db: &impl ConnectionTrait, id: i64) -> Result<Option<reservation::Model>, DbErr> {
    reservation::Entity::find_by_id(id).one(db).await
}

/// Reservation `id`, locking the rows of its GPUs and then its own (PostgreSQL; SQLite's write
/// transaction holds its lock already) in the order bookings take them.
pub(crate) async fn lock_reservation(
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

/// Approves (charged per the payment rules: now, or before its start) or rejects (its slots
/// freed) team `team_id`'s reservation `id` that waits for approval, inside the caller's write
/// transaction; `actor_id` decides. Answers the reservation as it was before.
pub async fn decide_approval(
    txn: &DatabaseTransaction,
    team_id: i64,
    id: i64,
    approve: bool,
    actor_id: i64,
    now: DateTime<Utc>,
    terms: (&ChargePolicy, &Currency),
) -> Result<reservation::Model, AppError> {
    let (charge, currency) = terms;
    let row = lock_reservation(txn, id)
        .await?
        .filter(|row| row.team_id == Some(team_id))
        .ok_or_else(|| AppError::NotFound(format!("reservation {id}")))?;
    // Then the team (GPUs first, as bookings lock them): the caller re-checks the decider's
    // rights under it, so an admin removed meanwhile decides nothing.
    super::teams::lock_team(txn, team_id).await?;
    let waiting = row.status == "confirmed"
        && row.payment_status == PaymentStatus::AwaitingApproval.as_str()
        && row.approval_expires_at.is_some_and(|until| now < until);
    if !waiting {
        return Err(AppError::Conflict(Problem::NotAwaitingApproval { id }));
    }
    if !approve {
        withdraw(
            txn,
            &row,
            now,
            Some(actor_id),
            Some(ReleaseReason::Rejected),
        )
        .await?;
        return Ok(row);
    }
    let mode = ChargeMode::parse(&row.charge_mode)
        .ok_or_else(|| DbErr::Custom(format!("reservations.id={id}: charge_mode")))?;
    let (status, mode, at) = match charge.plan(mode, row.start_at, now) {
        _ if row.price_minor == 0 => (PaymentStatus::Free, ChargeMode::AtBooking, None),
        ChargePlan::Now => (PaymentStatus::Paid, ChargeMode::AtBooking, None),
        ChargePlan::At(at) => (PaymentStatus::Pending, ChargeMode::BeforeStart, Some(at)),
    };
    // Approved, the booking is charged now or held until the payment job charges it: either
    // way the team wallet's available funds must cover it.
    if matches!(status, PaymentStatus::Paid | PaymentStatus::Pending)
        && let Some(missing) = shortfall(
            txn,
            Account::TeamWallet(team_id),
            Money::from_minor(row.price_minor),
        )
        .await?
    {
        return Err(crate::backend::ledger::insufficient(missing, currency));
    }
    if status == PaymentStatus::Paid {
        match super::ledger::charge(txn, &row, Some(actor_id), now).await {
            Ok(_) => {}
            Err(PostError::InsufficientFunds { missing, .. }) => {
                return Err(crate::backend::ledger::insufficient(missing, currency));
            }
            Err(PostError::Db(err)) => return Err(err.into()),
        }
    }
    reservation::Entity::update_many()
        .col_expr(
            reservation::Column::PaymentStatus,
            Expr::value(status.as_str()),
        )
        .col_expr(reservation::Column::ChargeMode, Expr::value(mode.as_str()))
        .col_expr(reservation::Column::ChargeAt, Expr::value(at))
        .col_expr(
            reservation::Column::ApprovalExpiresAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .filter(reservation::Column::Id.eq(id))
        .exec(txn)
        .await?;
    Ok(row)
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

/// Cancels reservation `id` before it starts. Only its owner or a platform admin may; others get
/// `NotFound` (they cannot tell it exists).
#[tracing::instrument(skip_all, fields(reservation.id = id, user.id = actor_id))]
pub async fn cancel(
    db: &DatabaseConnection,
    id: i64,
    actor_id: i64,
    actor_is_admin: bool,
    now: DateTime<Utc>,
    policy: &RefundPolicy,
) -> Result<Reservation, AppError> {
    let txn = begin_write(db).await?;
    let row = reservation::Entity::find_by_id(id)
        .one(&txn)
        .await?
        .filter(|row| actor_is_admin || row.owner_id == actor_id)
        .ok_or_else(|| AppError::NotFound(format!("reservation {id}")))?;
    if row.status == "cancelled" {
        return Err(AppError::Conflict(Problem::AlreadyCancelled { id }));
    }
    if now >= row.start_at {
        return Err(AppError::Conflict(Problem::AlreadyStarted { id }));
    }
    if !withdraw(&txn, &row, now, Some(actor_id), None).await? {
        return Err(AppError::Conflict(Problem::AlreadyCancelled { id }));
    }
    // The refund the policy gives, in the same transaction as the cancellation.
    if let Some((charge_id, paid)) = super::ledger::charge_of(&txn, id).await? {
        let refund = policy.refund(paid, row.start_at, now);
        if refund.minor() > 0 {
            super::ledger::refund(&txn, &row, charge_id, refund, Some(actor_id), now).await?;
        }
    }
    let fresh = reservation::Entity::find_by_id(id)
        .one(&txn)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("reservation {id}")))?;
    let view = reservation_view(&txn, fresh, now).await?;
    txn.commit().await?;
    Ok(view)
}

/// A reservation row as a [`Reservation`].
async fn reservation_view(
    db: &impl ConnectionTrait,
    row: reservation::Model,
    now: DateTime<Utc>,
) -> Result<Reservation, DbErr> {
    Ok(views(db, vec![row], now).await?.remove(0))
}

/// Rows as [`Reservation`]s, reading owners, nodes and GPUs in three queries.
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
    let owners: HashMap<i64, String> = user::Entity::find()
        .filter(user::Column::Id.is_in(rows.iter().map(|r| r.owner_id).collect::<Vec<_>>()))
        .all(db)
        .await?
        .into_iter()
        .map(|u| (u.id, u.name))
        .collect();
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
    let nodes: HashMap<i64, String> = node::Entity::find()
        .filter(node::Column::Id.is_in(rows.iter().map(|r| r.node_id).collect::<Vec<_>>()))
        .all(db)
        .await?
        .into_iter()
        .map(|n| (n.id, n.name))
        .collect();
    let refunds =
        super::ledger::refunds_of(db, &rows.iter().map(|r| r.id).collect::<Vec<_>>()).await?;
    rows.into_iter()
        .map(|row| {
            let window = stored_window(&row)?;
            let payment_status = PaymentStatus::parse(&row.payment_status).ok_or_else(|| {
                DbErr::Custom(format!("reservations.id={}: payment_status", row.id))
            })?;
            let share = u8::try_from(row.quarters)
                .ok()
                .and_then(Share::from_quarters)
                .ok_or_else(|| DbErr::Custom(format!("reservations.id={}: quarters", row.id)))?;
            Ok(Reservation {
                owner_name: owners.get(&row.owner_id).cloned().unwrap_or_default(),
                node_name: nodes.get(&row.node_id).cloned().unwrap_or_default(),
                gpu_ids: gpus.remove(&row.id).unwrap_or_default(),
                status: ReservationStatus::at(row.status == "cancelled", &window, now),
                share,
                window,
                id: row.id,
                owner_id: row.owner_id,
                node_id: row.node_id,
                model: row.model,
                price_minor: row.price_minor,
                payment_status,
                refunded_minor: refunds.get(&row.id).map_or(0, |m| m.minor()),
                charge_mode: ChargeMode::parse(&row.charge_mode).ok_or_else(|| {
                    DbErr::Custom(format!("reservations.id={}: charge_mode", row.id))
                })?,
                charge_at: row.charge_at,
                released: row
                    .released_reason
                    .as_deref()
                    .and_then(ReleaseReason::parse),
                created_at: row.created_at,
                team: row
                    .team_id
                    .map(|id| (id, teams.get(&id).cloned().unwrap_or_default())),
                budget: None,
                priority: Priority::parse(&row.priority).unwrap_or_default(),
                preemptible: row.preemptible,
                approval_expires_at: row
                    .approval_expires_at
                    .filter(|_| payment_status == PaymentStatus::AwaitingApproval),
                displaced_offer: row
                    .displaced_offer
                    .as_deref()
                    .and_then(|json| serde_json::from_str(json).ok()),
            })
        })
        .collect()
}

/// The user's reservations, latest start first.
pub async fn list_for_owner(
    db: &impl ConnectionTrait,
    owner_id: i64,
    now: DateTime<Utc>,
) -> Result<Vec<Reservation>, DbErr> {
    let rows = reservation::Entity::find()
        .filter(reservation::Column::OwnerId.eq(owner_id))
        .order_by_desc(reservation::Column::StartAt)
        .order_by_desc(reservation::Column::Id)
        .all(db)
        .await?;
    views(db, rows, now).await
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
        .filter(reservation::Column::Status.eq("confirmed"))
        .filter(reservation::Column::StartAt.lt(to))
        .filter(reservation::Column::EndAt.gt(from))
        .order_by_asc(reservation::Column::StartAt)
        .order_by_asc(reservation::Column::Id)
        .limit(500)
        .all(db)
        .await?;
    views(db, rows, now).await
}

/// The latest 1,000 reservations of everyone, latest start first (platform admins).
pub async fn list_all(
    db: &impl ConnectionTrait,
    now: DateTime<Utc>,
) -> Result<Vec<Reservation>, DbErr> {
    let rows = reservation::Entity::find()
        .order_by_desc(reservation::Column::StartAt)
        .order_by_desc(reservation::Column::Id)
        .limit(1000)
        .all(db)
        .await?;
    views(db, rows, now).await
}

/// Maintenance windows overlapping `range`: (gpu id, window, reason).
pub async fn maintenance_overlapping(
    db: &impl ConnectionTrait,
    range: &Window,
) -> Result<Vec<(i64, Window, String)>, DbErr> {
    maintenance_window::Entity::find()
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

/// `minor` units as `12.50 USD`, for messages the API writes.
fn amount_text(minor: i64, currency: &Currency) -> String {
    format!(
        "{} {}",
        Money::from_minor(minor).to_decimal_string(currency),
        currency.code()
    )
}
