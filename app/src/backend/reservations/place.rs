//! The booking engine: one booking, all its GPUs or none, in one write transaction that no other
//! writer can interleave, read top to bottom as the steps below.
//!
//! 1. [`claim_key`]: a retry with the same idempotency key answers the first booking.
//! 2. [`priority_of`]: the team's default class unless a lower one is asked for.
//! 3. [`choose_gpus`]: the GPUs asked for, or `count` of a model on one node; when they are taken,
//!    preemptible lower-priority bookings may give way (else a clash with the nearest window).
//!    [`respect_holds`]: a window held for watchers is refused to anyone else.
//! 4. [`lock_displaced`]: the bookings that give way, their GPUs locked in the usual order.
//! 5. [`team_rules`]: a team booking's budget, quota and approval, under the team's lock.
//! 6. [`payment_of`] and [`check_funds`]: charged now, before the start, or free; the paying
//!    wallet's available funds must cover it.
//! 7. [`record`]: the row with its GPUs held, the charge, offers to those displaced, the watch it
//!    served, the answer kept for the idempotency key.
//!
//! Lock order, in every booking: GPUs (in id order), then a watch and its held window, then the
//! team, then the wallet. Money: a
//! booking charged at once or held until the payment job charges it locks the wallet that pays it
//! and must fit in what the wallet has available, its balance less what its unpaid bookings hold
//! ([`crate::domain::ledger::Funds`]); two bookings paid by one wallet check it one after the
//! other.

use super::offers::{displace_on_nodes, find_offers, model_clash, offer_instead, suggest_for_gpus};
use crate::backend::db::idempotency::{Claim, IdempotencyKey, replayed};
use crate::backend::db::ledger::PostError;
use crate::backend::db::reservations::{
    BookableGpu, InTheWay, NewRow, WatchHoldOn, bookable_of_model, gpus_held_by, holders_on,
    in_the_way, lock_gpus,
};
use crate::backend::db::{self, begin_write};
use crate::backend::entity::{reservation, watch_offer};
use crate::backend::notify;
use crate::backend::retry;
use crate::domain::ledger::Account;
use crate::domain::money::{Currency, Money};
use crate::domain::notify::NewEvent;
use crate::domain::payment::{ChargeMode, ChargePlan, ChargePolicy};
use crate::domain::problem::Problem;
use crate::domain::quota::{
    Guarantees, ModelHold, Priority, QuotaCheck, TeamSpan, booking_priority, borrowing,
    check_quota, gpu_hours_text, gpus_text, plan_displacement,
};
use crate::domain::reservation::{
    Clash, NewReservation, PaymentStatus, ReleaseReason, Reservation, Target,
};
use crate::domain::schedule::{Share, Window, first_overflow, fits, price_minor};
use crate::domain::team::BudgetCheck;
use crate::error::AppError;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{DatabaseConnection, DatabaseTransaction, DbErr};
use std::collections::BTreeSet;

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
    /// Whether the booking's holder (and whoever it displaces) is told (the demo's seeded
    /// history is not).
    pub notify: bool,
}

/// Books `request`, all GPUs or none, in one transaction; retried (see [`retry`]) when the
/// database reports a serialization failure or is busy. A clash answers [`AppError::Clash`] with
/// the nearest window that fits; bad GPUs answer [`AppError::Validation`] or
/// [`AppError::Conflict`].
#[tracing::instrument(skip_all, fields(user.id = request.owner_id))]
pub async fn place(
    db: &DatabaseConnection,
    request: &NewReservation,
    terms: &BookingTerms<'_>,
    idempotency: Option<&IdempotencyKey>,
) -> Result<Reservation, AppError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match attempt_once(db, request, terms, idempotency).await {
            Err(Refusal::Db(err)) if retry::again(attempt, &err) => {
                tracing::debug!(attempt, error = %err, "booking retried");
                retry::pause(attempt).await;
            }
            Err(Refusal::Db(err)) => return Err(capacity_or(err)),
            Err(Refusal::App(err)) => return Err(err),
            Ok(reservation) => return Ok(reservation),
        }
    }
}

/// Why one attempt ended without a booking: the database (maybe worth retrying), or a rule.
enum Refusal {
    Db(DbErr),
    App(AppError),
}

impl From<DbErr> for Refusal {
    fn from(err: DbErr) -> Self {
        Refusal::Db(err)
    }
}

impl From<AppError> for Refusal {
    fn from(err: AppError) -> Self {
        Refusal::App(err)
    }
}

fn invalid(field: &str, problem: Problem) -> Refusal {
    Refusal::App(AppError::invalid(field, problem))
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

/// One attempt, the steps in order.
async fn attempt_once(
    db: &DatabaseConnection,
    request: &NewReservation,
    terms: &BookingTerms<'_>,
    idempotency: Option<&IdempotencyKey>,
) -> Result<Reservation, Refusal> {
    let txn = begin_write(db).await?;
    if let Some(first) = claim_key(&txn, idempotency, terms.now).await? {
        return Ok(first);
    }
    let priority = priority_of(&txn, request).await?;
    let Chosen {
        gpus,
        displaced,
        claimed,
        watch_holds,
    } = choose_gpus(&txn, request, priority, terms.latest_start, terms.now).await?;
    // The GPUs are chosen and nobody gives way: what is left reads and writes by key, where a
    // generic plan is the same index scan (checked with `EXPLAIN ANALYZE EXECUTE`, see
    // BENCHMARKS.md), so PostgreSQL need not plan each statement again. Listed GPUs were
    // chosen under generic plans already (see `choose_listed`).
    if displaced.is_empty() && !matches!(request.target, Target::Gpus(_)) {
        db::reuse_generic_plans(&txn).await?;
    }
    let held = respect_holds(&txn, request, &gpus, &watch_holds, terms.now).await?;
    let victims = lock_displaced(&txn, &displaced).await?;
    let price: i64 = gpus
        .iter()
        .map(|g| {
            price_minor(
                g.hourly_price_minor,
                request.share.quarters(),
                &request.window,
            )
        })
        .sum();
    let team = team_rules(&txn, request, &gpus, &victims, price, priority, terms).await?;
    if request.start_early && !team.preemptible {
        return Err(invalid("start_early", Problem::StartEarlyNotPreemptible));
    }
    // A booking that waits for approval takes nobody's place: it might never be approved; nor
    // does one that turned out beyond its team's guarantee (a change of quota meanwhile) take
    // the place of bookings that only borrow guaranteed capacity.
    if (team.approval_until.is_some() || (claimed && team.preemptible)) && !displaced.is_empty() {
        let model = &gpus[0].model;
        let candidates = bookable_of_model(&txn, model, request.share).await?;
        let window = &request.window;
        let clash = model_clash(
            &txn,
            model,
            &candidates,
            gpus.len(),
            request.share,
            window,
            terms.latest_start,
        )
        .await?;
        return Err(clash.into());
    }
    for victim in &displaced {
        super::release(&txn, *victim, None, terms.now, ReleaseReason::Preempted).await?;
    }
    let payment = payment_of(request, price, team.approval_until, terms);
    let wallet = check_funds(&txn, request, payment.status, price, terms.currency).await?;
    let new = NewRow {
        owner_id: request.owner_id,
        profile_version_id: request.profile_version_id,
        team_id: request.team_id,
        node_id: gpus[0].node_id,
        model: gpus[0].model.clone(),
        quarters: request.share.quarters(),
        window: request.window,
        price_minor: price,
        payment_status: payment.status,
        charge_mode: payment.mode,
        charge_at: payment.charge_at,
        priority,
        preemptible: team.preemptible,
        approval_expires_at: team.approval_until,
        gpu_count: gpus.len(),
        created_at: terms.now,
        moved_from: None,
        start_early: request.start_early,
        card_id: request.card_id,
    };
    record(
        txn,
        &new,
        request.owner_name.as_deref(),
        wallet.as_ref(),
        &gpus,
        &displaced,
        held.as_ref(),
        team.warning,
        terms,
        idempotency,
    )
    .await
}

/// Step 1: with an idempotency key, claims it; a key used before answers the first booking.
async fn claim_key(
    txn: &DatabaseTransaction,
    idempotency: Option<&IdempotencyKey>,
    now: DateTime<Utc>,
) -> Result<Option<Reservation>, Refusal> {
    let Some(key) = idempotency else {
        return Ok(None);
    };
    match db::idempotency::claim(txn, key, now).await? {
        Ok(Claim::Fresh) => Ok(None),
        Ok(Claim::Replay { body, .. }) => Ok(Some(replayed(&body)?)),
        Err(err) => Err(err.into()),
    }
}

/// Step 2: the booking's priority class: the team's default unless a lower one is asked for.
async fn priority_of(
    txn: &DatabaseTransaction,
    request: &NewReservation,
) -> Result<Priority, Refusal> {
    let default_priority = match request.team_id {
        None => None,
        Some(team_id) => Some(
            db::quotas::policy(txn, team_id)
                .await?
                .ok_or_else(|| AppError::NotFound(format!("team {team_id}")))?
                .default_priority,
        ),
    };
    booking_priority(request.priority, default_priority, request.platform_admin)
        .map_err(|problem| invalid("priority", problem))
}

/// The GPUs a booking gets, and the bookings that give way to it.
struct Chosen {
    gpus: Vec<BookableGpu>,
    displaced: Vec<i64>,
    /// Some of `displaced` give way only because they borrow the team's guaranteed capacity.
    claimed: bool,
    /// The windows held for watchers on the GPUs looked at (for [`respect_holds`]).
    watch_holds: Vec<WatchHoldOn>,
}

/// Step 3: the GPUs for `request`, locked.
async fn choose_gpus(
    txn: &DatabaseTransaction,
    request: &NewReservation,
    priority: Priority,
    latest_start: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Chosen, Refusal> {
    match &request.target {
        Target::Gpus(ids) => choose_listed(txn, request, ids, priority, latest_start, now).await,
        Target::Model { model, count } => {
            let count = usize::try_from(*count).unwrap_or(usize::MAX);
            choose_of_model(txn, request, model, count, priority, latest_start, now).await
        }
    }
}

/// The GPUs `ids`, which must exist, be on one node, of one model, active and (for a share)
/// shareable. When one is taken, other GPUs free at the same time come first (the booking is
/// refused with a suggestion); only then does it take the place of preemptible bookings of lower
/// priority on these.
async fn choose_listed(
    txn: &DatabaseTransaction,
    request: &NewReservation,
    ids: &[i64],
    priority: Priority,
    latest_start: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Chosen, Refusal> {
    let window = request.window;
    // Until a clash, every statement is keyed by the listed GPUs (at most 64): generic
    // plans, as for the rest of a booking (see `attempt_once`).
    db::reuse_generic_plans(txn).await?;
    // Locked as they are read: a price or sharing changed meanwhile is seen.
    let gpus = db::reservations::lock_and_read_gpus(txn, ids).await?;
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
    let quarters = request.share.quarters();
    let ids: Vec<i64> = gpus.iter().map(|g| g.id).collect();
    let InTheWay {
        occupied: busy,
        watch_holds,
    } = in_the_way(txn, &ids, &window, now).await?;
    let clash = gpus.iter().find_map(|g| {
        let taken = busy.get(&g.id).map(Vec::as_slice).unwrap_or(&[]);
        first_overflow(taken, &window, quarters).map(|at| (g.id, g.label(), at))
    });
    let Some((gpu_id, what, at)) = clash else {
        return Ok(Chosen {
            gpus,
            displaced: Vec::new(),
            claimed: false,
            watch_holds,
        });
    };
    // Taken: what follows searches the model's GPUs, or gives way, planned for its values.
    db::plan_for_values(txn).await?;
    let candidates = bookable_of_model(txn, &first.model, request.share).await?;
    let elsewhere = find_offers(
        txn,
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
    let (plan, borrowers) = match elsewhere {
        Some(_) => (None, BTreeSet::new()),
        None => {
            let borrowers =
                borrowers_for(txn, request, priority, &first.model, gpus.len(), &window).await?;
            let holders = holders_on(txn, &ids, &window, priority, &borrowers).await?;
            (
                plan_displacement(&holders, gpus.len(), &window, quarters),
                borrowers,
            )
        }
    };
    match plan {
        Some((_, victims)) => Ok(Chosen {
            gpus,
            claimed: victims.iter().any(|id| borrowers.contains(id)),
            displaced: victims,
            watch_holds,
        }),
        None => {
            let suggestion =
                suggest_for_gpus(txn, &gpus, request.share, &window, latest_start).await?;
            Err(AppError::Clash(Box::new(Clash {
                gpu_id: Some(gpu_id),
                what,
                at,
                suggestion,
            }))
            .into())
        }
    }
}

/// `count` GPUs of `model` on one node, the first node (by name) where they fit; else where
/// giving way displaces fewest bookings; else a clash with the nearest window.
async fn choose_of_model(
    txn: &DatabaseTransaction,
    request: &NewReservation,
    model: &str,
    count: usize,
    priority: Priority,
    latest_start: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Chosen, Refusal> {
    let window = request.window;
    let quarters = request.share.quarters();
    let candidates = bookable_of_model(txn, model, request.share).await?;
    if candidates.is_empty() {
        return Err(invalid(
            "model",
            Problem::NoGpuOfModel {
                model: model.to_owned(),
            },
        ));
    }
    let ids: Vec<i64> = candidates.iter().map(|g| g.id).collect();
    lock_gpus(txn, &ids).await?;
    // Read again under the locks: a price or sharing changed meanwhile is seen (GPUs added
    // meanwhile are left out: they are not locked).
    let locked: std::collections::HashSet<i64> = ids.iter().copied().collect();
    let candidates: Vec<BookableGpu> = bookable_of_model(txn, model, request.share)
        .await?
        .into_iter()
        .filter(|g| locked.contains(&g.id))
        .collect();
    let ids: Vec<i64> = candidates.iter().map(|g| g.id).collect();
    let InTheWay {
        occupied: mut busy,
        watch_holds,
    } = in_the_way(txn, &ids, &window, now).await?;
    // Windows held for watchers count as taken here, so that another GPU free then is chosen
    // (step 3b refuses a held one to anyone but a watcher).
    if request.through_watch.is_none() {
        for hold in &watch_holds {
            busy.entry(hold.gpu_id)
                .or_default()
                .push(crate::domain::schedule::Occupancy {
                    window: hold.window,
                    quarters: hold.quarters,
                });
        }
    }
    for (_, node_gpus) in super::offers::by_node(&candidates) {
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
            return Ok(Chosen {
                gpus: fitting,
                displaced: Vec::new(),
                claimed: false,
                watch_holds,
            });
        }
    }
    let borrowers = borrowers_for(txn, request, priority, model, count, &window).await?;
    if let Some((gpus, displaced)) = displace_on_nodes(
        txn,
        &candidates,
        count,
        &window,
        quarters,
        priority,
        &borrowers,
    )
    .await?
    {
        return Ok(Chosen {
            gpus,
            claimed: displaced.iter().any(|id| borrowers.contains(id)),
            displaced,
            watch_holds,
        });
    }
    let clash = model_clash(
        txn,
        model,
        &candidates,
        count,
        request.share,
        &window,
        latest_start,
    )
    .await?;
    Err(clash.into())
}

/// For a team booking of `count` GPUs of `model` within the team's guarantee (not a batch
/// booking: that one is preemptible itself): the reservations
/// that borrow guaranteed capacity of the model during `window` ([`borrowing`]), which give way
/// to it; empty for any other booking. Which shared bookings borrow depends on the whole fleet
/// of the model, so every GPU of it is locked first (in id order), and two such bookings of
/// one model decide one after the other.
async fn borrowers_for(
    txn: &DatabaseTransaction,
    request: &NewReservation,
    priority: Priority,
    model: &str,
    count: usize,
    window: &Window,
) -> Result<BTreeSet<i64>, DbErr> {
    let none = BTreeSet::new();
    let Some(team_id) = request.team_id.filter(|_| priority != Priority::Batch) else {
        return Ok(none);
    };
    let Some(quota) = db::quotas::quota(txn, team_id, model)
        .await?
        .filter(|q| q.guaranteed_gpus > 0)
    else {
        return Ok(none);
    };
    let span = TeamSpan {
        window: *window,
        quarters: i64::from(request.share.quarters()) * i64::try_from(count).unwrap_or(i64::MAX),
    };
    if !matches!(
        quota_check(txn, team_id, model, &quota, &span).await?,
        QuotaCheck::Within
    ) {
        return Ok(none);
    }
    let ids = db::quotas::lock_model_gpus(txn, model).await?;
    let guarantees = Guarantees {
        fleet_gpus: u32::try_from(ids.len()).unwrap_or(u32::MAX),
        teams: db::quotas::guarantees(txn, model).await?,
    };
    let holds: Vec<ModelHold> = db::reservations::holds_on(txn, &ids, window)
        .await?
        .iter()
        .map(db::reservations::Hold::model_hold)
        .collect();
    Ok(borrowing(&holds, &guarantees, Some(team_id)))
}

/// How `span` of team `team_id`'s bookings of `model` stands against the team's `quota`, next to
/// its other non-preemptible bookings of the model.
async fn quota_check(
    txn: &DatabaseTransaction,
    team_id: i64,
    model: &str,
    quota: &crate::domain::quota::Quota,
    span: &TeamSpan,
) -> Result<QuotaCheck, DbErr> {
    let window = span.window;
    let weeks_from = crate::domain::team::utc_week_of(window.start()).0;
    let weeks_to = crate::domain::team::utc_week_of(window.end() - TimeDelta::minutes(1)).1;
    let existing: Vec<TeamSpan> = db::quotas::team_spans(
        txn,
        team_id,
        Some(model),
        Ord::min(weeks_from, window.start()),
        Ord::max(weeks_to, window.end()),
        true,
    )
    .await?
    .into_iter()
    .map(|(_, span, _)| span)
    .collect();
    Ok(check_quota(quota, &existing, span))
}

/// Step 3b: a window held for watchers is theirs until the hold ends: anyone else's booking of
/// it is refused; a watcher booking through the window held for their watch claims it (the first
/// watcher to get here under the GPUs' locks wins; the others then meet a clash). `watch_holds`:
/// those step 3 read on the GPUs it looked at, under their locks.
async fn respect_holds(
    txn: &DatabaseTransaction,
    request: &NewReservation,
    gpus: &[BookableGpu],
    watch_holds: &[WatchHoldOn],
    now: DateTime<Utc>,
) -> Result<Option<watch_offer::Model>, Refusal> {
    if let Some((watch_id, offer_id)) = request.through_watch {
        let offer =
            crate::backend::watches::claim(txn, request.owner_id, watch_id, offer_id, now).await?;
        return Ok(Some(offer));
    }
    let on_these = watch_holds
        .iter()
        .filter(|hold| gpus.iter().any(|g| g.id == hold.gpu_id));
    match on_these.map(|hold| hold.hold_until).max() {
        Some(until) => Err(AppError::Conflict(Problem::HeldForWatchers { until }).into()),
        None => Ok(None),
    }
}

/// Step 4: the displaced bookings, with their other GPUs (same node and model, but maybe not
/// among those read) locked now, before the team row, as every booking orders its locks: GPUs,
/// then team. Outside id order they may meet another booking's locks in a cycle; PostgreSQL then
/// cancels one of the two, which is retried.
async fn lock_displaced(
    txn: &DatabaseTransaction,
    displaced: &[i64],
) -> Result<Vec<reservation::Model>, DbErr> {
    if displaced.is_empty() {
        return Ok(Vec::new());
    }
    let held = gpus_held_by(txn, displaced).await?;
    lock_gpus(txn, &held).await?;
    db::reservations::rows(txn, displaced).await
}

/// What a team's rules made of a booking.
struct TeamVerdict {
    /// The budget warning it brings, if any.
    warning: Option<BudgetCheck>,
    /// A higher-priority booking may take its place (batch, or a burst beyond a quota).
    preemptible: bool,
    /// It waits for a team admin's approval until then.
    approval_until: Option<DateTime<Utc>>,
}

/// Step 5: a team booking stays within the team's monthly budget and quota: the team's row is
/// locked (after the GPUs, in every booking) so that two bookings cannot both take their last
/// part. Batch bookings, and burst bookings beyond a quota, may be displaced.
async fn team_rules(
    txn: &DatabaseTransaction,
    request: &NewReservation,
    gpus: &[BookableGpu],
    victims: &[reservation::Model],
    price: i64,
    priority: Priority,
    terms: &BookingTerms<'_>,
) -> Result<TeamVerdict, Refusal> {
    let window = request.window;
    let mut verdict = TeamVerdict {
        warning: None,
        preemptible: priority == Priority::Batch,
        approval_until: None,
    };
    let Some(team_id) = request.team_id else {
        return Ok(verdict);
    };
    let (budget, policy) = db::teams::lock_rules(txn, team_id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("team {team_id}")))?;
    // Again under the lock: a member removed while this request ran books nothing.
    let Some(by_admin) =
        db::quotas::standing(txn, team_id, request.owner_id, request.platform_admin).await?
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
        db::teams::month_spend(txn, team_id, from, to)
            .await?
            .minor()
            - freed,
    );
    verdict.warning = match budget.check(spent, Money::from_minor(price)) {
        BudgetCheck::Over {
            spent_minor,
            limit_minor,
            price_minor,
        } => {
            let currency = terms.currency;
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
    let model = &gpus[0].model;
    let span = TeamSpan {
        window,
        quarters: i64::from(request.share.quarters())
            * i64::try_from(gpus.len()).unwrap_or(i64::MAX),
    };
    if !verdict.preemptible
        && let Some(quota) = db::quotas::quota(txn, team_id, model).await?
    {
        match quota_check(txn, team_id, model, &quota, &span).await? {
            QuotaCheck::Within => {}
            _ if policy.allow_burst => verdict.preemptible = true,
            over => return Err(AppError::Conflict(over_quota(model, &over)).into()),
        }
    }
    verdict.approval_until = policy.approval_until(&span, by_admin, terms.now);
    Ok(verdict)
}

/// How a booking is paid.
#[derive(Debug, Clone, Copy)]
struct Payment {
    status: PaymentStatus,
    mode: ChargeMode,
    charge_at: Option<DateTime<Utc>>,
}

/// Step 6: waiting for approval, free, charged now or before the start.
fn payment_of(
    request: &NewReservation,
    price: i64,
    approval_until: Option<DateTime<Utc>>,
    terms: &BookingTerms<'_>,
) -> Payment {
    let plan = terms
        .charge
        .plan(request.charge, request.window.start(), terms.now);
    let (status, mode, charge_at) = match plan {
        _ if approval_until.is_some() => (PaymentStatus::AwaitingApproval, request.charge, None),
        _ if price == 0 => (PaymentStatus::Free, ChargeMode::AtBooking, None),
        // Paid by card at booking: due until Stripe confirms the charge, which pays it; the
        // payment job leaves it to the card for a while.
        ChargePlan::Now if request.card_id.is_some() => (
            PaymentStatus::Due,
            ChargeMode::AtBooking,
            Some(terms.now + crate::domain::payment::CARD_GRACE),
        ),
        ChargePlan::Now => (PaymentStatus::Paid, ChargeMode::AtBooking, None),
        ChargePlan::At(at) => (PaymentStatus::Pending, ChargeMode::BeforeStart, Some(at)),
    };
    Payment {
        status,
        mode,
        charge_at,
    }
}

/// Charged now or held until the payment job charges it, a booking spends only what its wallet
/// has available: the balance less what its unpaid bookings hold. The wallet is locked until the
/// transaction ends, so the charge or hold is written before any other booking paid by it reads
/// its funds; the locked wallet is answered for the charge.
async fn check_funds(
    txn: &DatabaseTransaction,
    request: &NewReservation,
    status: PaymentStatus,
    price: i64,
    currency: &Currency,
) -> Result<Option<db::ledger::LockedWallet>, Refusal> {
    // A booking paid by card spends no credits it has not brought.
    if !matches!(status, PaymentStatus::Paid | PaymentStatus::Pending) || request.card_id.is_some()
    {
        return Ok(None);
    }
    let payer = match request.team_id {
        Some(team) => Account::TeamWallet(team),
        None => Account::Wallet(request.owner_id),
    };
    let wallet = db::ledger::lock_wallet(txn, payer).await?;
    match wallet.funds.missing_for(Money::from_minor(price)) {
        Some(missing) => Err(crate::backend::ledger::insufficient(missing, currency).into()),
        None => Ok(Some(wallet)),
    }
}

/// Step 7: the reservation row with its GPUs held, its charge when paid now (a short wallet
/// refuses the booking and nothing is kept), offers to those it displaced, and the answer kept
/// for the idempotency key; then commit.
#[expect(
    clippy::too_many_arguments,
    reason = "the steps' results, each named at the one call"
)]
async fn record(
    txn: DatabaseTransaction,
    new: &NewRow,
    owner_name: Option<&str>,
    wallet: Option<&db::ledger::LockedWallet>,
    gpus: &[BookableGpu],
    displaced: &[i64],
    held: Option<&watch_offer::Model>,
    warning: Option<BudgetCheck>,
    terms: &BookingTerms<'_>,
    idempotency: Option<&IdempotencyKey>,
) -> Result<Reservation, Refusal> {
    let ids: Vec<i64> = gpus.iter().map(|g| g.id).collect();
    let row = db::reservations::insert_holding(&txn, new, &ids).await?;
    if let Some(offer) = held {
        crate::backend::watches::served(&txn, offer, row.id, new.owner_id, terms.now).await?;
    }
    if new.payment_status == PaymentStatus::Paid {
        match db::ledger::charge_inserted(&txn, &row, Some(new.owner_id), terms.now, wallet).await {
            Ok(_) => {}
            Err(PostError::InsufficientFunds { missing, .. }) => {
                return Err(crate::backend::ledger::insufficient(missing, terms.currency).into());
            }
            Err(PostError::Db(err)) => return Err(Refusal::Db(err)),
        }
    }
    // Each displaced owner is offered the nearest window that is free now, and told so.
    for victim in displaced {
        offer_instead(&txn, *victim, terms.now, terms.latest_start).await?;
        if terms.notify
            && let Some(view) = db::reservations::view_of(&txn, *victim, terms.now).await?
        {
            let event = NewEvent::released(
                &view,
                ReleaseReason::Preempted,
                view.refunded_minor,
                terms.now,
            );
            notify::record(&txn, &[event]).await?;
        }
    }
    // As every reservation lists them: by id.
    let mut gpu_ids = ids;
    gpu_ids.sort_unstable();
    let node_name = gpus[0].node_name.clone();
    let mut reservation =
        db::reservations::new_view(&txn, row, gpu_ids, node_name, owner_name, terms.now).await?;
    reservation.budget = warning;
    if terms.notify {
        notify::record(&txn, &NewEvent::booked(&reservation, terms.now)).await?;
    }
    if let Some(key) = idempotency {
        db::idempotency::record(&txn, key, 201, &reservation).await?;
    }
    txn.commit().await?;
    Ok(reservation)
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

/// `minor` units as `12.50 USD`, for messages the API writes.
fn amount_text(minor: i64, currency: &Currency) -> String {
    format!(
        "{} {}",
        Money::from_minor(minor).to_decimal_string(currency),
        currency.code()
    )
}
