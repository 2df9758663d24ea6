//! Reservations as a service: book, cancel, list, retire a GPU, decide an approval, each with
//! its authorization, for the pages, the plain forms and the JSON API alike.
//!
//! - [`input`]: forms and JSON parsed into one command type.
//! - [`place`]: the booking engine, in named steps.
//! - [`offers`]: finding a free window (slot search, suggestions, offers to displaced bookings).
//! - [`calendar`]: the calendar and availability read models.

pub mod calendar;
pub mod failover;
pub mod input;
pub mod offers;
pub mod place;

pub use calendar::{CalendarQuery, MAX_AVAILABILITY_DAYS, availability, calendar};
pub use input::{
    BookingForm, MAX_GPUS_PER_RESERVATION, MAX_IDEMPOTENCY_KEY_CHARS, MAX_OFFERS, ShareInput,
    SlotForm, latest_start, local_to_rfc3339, parse_booking, parse_time,
};
pub use offers::find_slots;

use crate::backend::auth::actor::Actor;
use crate::backend::db::ledger::PostError;
use crate::backend::db::{self, begin_write};
use crate::backend::entity::reservation;
use crate::backend::notify;
use crate::backend::state::AppState;
use crate::backend::viewer;
use crate::domain::ledger::Account;
use crate::domain::money::{Currency, Money};
use crate::domain::notify::NewEvent;
use crate::domain::payment::{ChargeMode, ChargePlan, ChargePolicy};
use crate::domain::problem::Problem;
use crate::domain::reservation::{PaymentStatus, ReleaseReason, Reservation};
use crate::error::AppError;
use chrono::{DateTime, Utc};
use sea_orm::{DatabaseTransaction, DbErr};

/// Books for `actor`.
#[tracing::instrument(skip_all, fields(user.id = actor.user.id))]
pub async fn create(
    state: &AppState,
    actor: &Actor,
    form: &BookingForm,
    now: DateTime<Utc>,
    idempotency_key: Option<&str>,
) -> Result<Reservation, AppError> {
    let mut request = parse_booking(form, actor.user.id, state, now)?;
    request.platform_admin = actor.require_platform_admin().is_ok();
    request.owner_name = Some(actor.user.name.clone());
    if let Some(card) = request.card_id {
        crate::backend::card_payments::check_booking_card(state, actor, card, request.team_id)
            .await?;
    }
    // Only the team's members book for it (its admins and platform admins too).
    if let Some(team_id) = request.team_id {
        crate::backend::team_access::access(&state.db, actor, team_id).await?;
    }
    request.profile_version_id =
        crate::backend::env_profiles::for_booking(&state.db, &actor.user, form.profile).await?;
    let key = idempotency_key
        .map(|key| db::idempotency::IdempotencyKey::new(actor.user.id, key, "book", form))
        .transpose()?;
    let mut reservation =
        place::place(&state.db, &request, &terms(state, now), key.as_ref()).await?;
    state.wake.poke();
    tracing::info!(reservation.id = reservation.id, "reservation booked");
    // Paid by card at booking: the card is charged now (a retry answers the payment under
    // way); the booking is paid when Stripe confirms it.
    if request.card_id.is_some() && reservation.payment_status == PaymentStatus::Due {
        match crate::backend::card_payments::charge_booking(state, reservation.id, true, false)
            .await
        {
            Ok(payment) => reservation.card_payment = Some(payment),
            // Stripe unreachable: the booking stands, due; its page offers to pay again.
            Err(err) => {
                tracing::warn!(reservation.id = reservation.id, error = %err, "card charge at booking")
            }
        }
    }
    Ok(reservation)
}

/// The terms a booking made through the portal at `now` is made under (its settings; the holder
/// and whoever it displaces are told).
pub fn terms(state: &AppState, now: DateTime<Utc>) -> place::BookingTerms<'_> {
    place::BookingTerms {
        latest_start: latest_start(state, now),
        now,
        currency: &state.portal.currency,
        charge: &state.portal.charge,
        notify: true,
    }
}

/// What the viewer should hear right after booking reservation `id` for a team.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BookingNote {
    /// It waits for a team admin's approval until `until`, shown in `zone`.
    AwaitingApproval {
        /// When the request lapses.
        until: DateTime<Utc>,
        /// The viewer's zone around `until`.
        zone: crate::domain::zone::ZoneOffsets,
    },
    /// It is paid by card (`card`): paid once Stripe confirms the charge, followed on its page.
    PaidByCard {
        /// The reservation.
        id: i64,
        /// The card (`Visa ···· 4242`).
        card: String,
    },
    /// It takes the team's month (`month`, `YYYY-MM`) to the budget's warning share or beyond.
    BudgetWarning {
        /// Spent this month with the booking, in minor units.
        spent_minor: i64,
        /// The month's budget, in minor units.
        limit_minor: i64,
        /// The month.
        month: String,
    },
}

/// For the viewer's reservation `id`, booked for a team: that it waits for approval (until
/// when), or the budget warning it brought when its month is at the warning share of the budget
/// or over it.
pub async fn booking_note(
    state: &AppState,
    actor: &Actor,
    id: i64,
) -> Result<Option<BookingNote>, AppError> {
    use crate::domain::team::BudgetCheck;
    let Some(row) = db::reservations::row(&state.db, id).await? else {
        return Ok(None);
    };
    // Paid by card: where to follow the payment.
    if row.owner_id == actor.user.id
        && let Some(card_id) = row.card_id
        && let Some(card) = db::card_payments::card_by_id(&state.db, card_id).await?
    {
        return Ok(Some(BookingNote::PaidByCard {
            id,
            card: crate::domain::payment::card_label(&card.brand, &card.last4),
        }));
    }
    // Waiting for a team admin: until when.
    if row.owner_id == actor.user.id
        && row.status == reservation::Status::Confirmed
        && row.payment_status == crate::domain::reservation::PaymentStatus::AwaitingApproval
        && let Some(until) = row.approval_expires_at
    {
        let zone = viewer::zone_named(viewer::request_zone(actor).as_deref(), until, until);
        return Ok(Some(BookingNote::AwaitingApproval { until, zone }));
    }
    let Some(team_id) = row.team_id.filter(|_| row.owner_id == actor.user.id) else {
        return Ok(None);
    };
    let Some(budget) = db::teams::budget(&state.db, team_id).await? else {
        return Ok(None);
    };
    let (from, to) = crate::domain::schedule::utc_month_of(row.start_at);
    let spent = db::teams::month_spend(&state.db, team_id, from, to).await?;
    let price = crate::domain::money::Money::from_minor(row.price_minor);
    let before = crate::domain::money::Money::from_minor(spent.minor() - price.minor());
    let BudgetCheck::Warn {
        spent_minor,
        limit_minor,
    } = budget.check(before, price)
    else {
        return Ok(None);
    };
    Ok(Some(BookingNote::BudgetWarning {
        spent_minor,
        limit_minor,
        month: from.format("%Y-%m").to_string(),
    }))
}

/// Cancels reservation `id` before it starts, refunding what the refund policy gives, in one
/// transaction. Only its owner or a platform admin may; others get `NotFound` (they cannot tell
/// it exists).
#[tracing::instrument(skip_all, fields(reservation.id = id, user.id = actor.user.id))]
pub async fn cancel(
    state: &AppState,
    actor: &Actor,
    id: i64,
    now: DateTime<Utc>,
) -> Result<Reservation, AppError> {
    let is_admin = actor.require_platform_admin().is_ok();
    let actor_id = actor.user.id;
    let txn = begin_write(&state.db).await?;
    let row = db::reservations::row(&txn, id)
        .await?
        .filter(|row| is_admin || row.owner_id == actor_id)
        .ok_or_else(|| AppError::NotFound(format!("reservation {id}")))?;
    if row.status == reservation::Status::Cancelled {
        return Err(AppError::Conflict(Problem::AlreadyCancelled { id }));
    }
    if now >= row.start_at {
        return Err(AppError::Conflict(Problem::AlreadyStarted { id }));
    }
    if !db::reservations::withdraw(&txn, &row, now, Some(actor_id), None).await? {
        return Err(AppError::Conflict(Problem::AlreadyCancelled { id }));
    }
    // The refund the policy gives, in the same transaction as the cancellation.
    if let Some((charge_id, paid)) = db::ledger::charge_of(&txn, id).await? {
        let refund = state.portal.refund.refund(paid, row.start_at, now);
        if refund.minor() > 0 {
            crate::backend::card_payments::refund_booking(
                &txn,
                &row,
                charge_id,
                refund,
                Some(actor_id),
                now,
            )
            .await?;
        }
    }
    let view = db::reservations::view_of(&txn, id, now)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("reservation {id}")))?;
    let by = (actor_id != row.owner_id).then(|| actor.user.name.clone());
    notify::withdrawn(
        &txn,
        id,
        &[NewEvent::cancelled(&view, view.refunded_minor, by, now)],
    )
    .await?;
    txn.commit().await?;
    state.wake.poke();
    state.freed.poke();
    tracing::info!(reservation.id = id, "reservation cancelled");
    // A refund to its card goes to Stripe now (the reconciliation job retries one that could
    // not be sent).
    if row.card_id.is_some()
        && let Err(err) = crate::backend::card_payments::send_refunds(state).await
    {
        tracing::warn!(error = %err, "card refund not sent yet");
    }
    Ok(view)
}

/// The viewer's reservations, latest first.
#[derive(Debug, Clone)]
pub struct Mine {
    /// The reservations.
    pub list: Vec<Reservation>,
    /// The cursor of the next (older) page, if any.
    pub next: Option<String>,
    /// What cancelling each paid, not yet started one would refund now (id, minor units).
    pub refunds_now: Vec<(i64, i64)>,
    /// The running ones idle now (every GPU below its idle policy's threshold).
    pub idle_now: Vec<i64>,
}

/// A page of the viewer's reservations, latest first, what cancelling each paid, not yet started
/// one would refund now, and which running ones are idle now.
pub async fn mine(
    state: &AppState,
    actor: &Actor,
    page: &crate::domain::paging::PageRequest,
    now: DateTime<Utc>,
) -> Result<Mine, AppError> {
    use crate::domain::reservation::{PaymentStatus, ReservationStatus};
    let filter = db::reservations::ListFilter {
        owner_id: Some(actor.user.id),
        ..Default::default()
    };
    let crate::domain::paging::Page { items: list, next } =
        db::reservations::list_page(&state.db, &filter, page, now).await?;
    let running: Vec<&Reservation> = list
        .iter()
        .filter(|r| r.status == ReservationStatus::Active)
        .collect();
    let mut idle_now = Vec::new();
    if !running.is_empty() {
        let gpu_ids: Vec<i64> = running.iter().flat_map(|r| r.gpu_ids.clone()).collect();
        let (live, policies) = tokio::try_join!(
            db::telemetry::live_utilization(&state.db, &gpu_ids),
            crate::backend::reclaim::policies(&state.db),
        )?;
        for r in running {
            let utils: Vec<Option<u8>> = r
                .gpu_ids
                .iter()
                .map(|id| crate::domain::calendar::util_now(live.get(id).copied(), now))
                .collect();
            let threshold = policies
                .for_team(r.team.as_ref().map(|(id, _)| *id))
                .threshold_percent;
            if crate::domain::calendar::all_idle_now(&utils, threshold) {
                idle_now.push(r.id);
            }
        }
    }
    let refunds_now = list
        .iter()
        .filter(|r| {
            r.status == ReservationStatus::Confirmed && r.payment_status == PaymentStatus::Paid
        })
        .map(|r| {
            let paid = crate::domain::money::Money::from_minor(r.price_minor);
            (
                r.id,
                state
                    .portal
                    .refund
                    .refund(paid, r.window.start(), now)
                    .minor(),
            )
        })
        .collect();
    Ok(Mine {
        list,
        next,
        refunds_now,
        idle_now,
    })
}

/// Reservation `id` for its owner or a platform admin; others get `NotFound` (they cannot tell
/// it exists).
pub async fn one(
    state: &AppState,
    actor: &Actor,
    id: i64,
    now: DateTime<Utc>,
) -> Result<Reservation, AppError> {
    let is_admin = actor.require_platform_admin().is_ok();
    db::reservations::view_of(&state.db, id, now)
        .await?
        .filter(|view| is_admin || view.owner_id == actor.user.id)
        .ok_or_else(|| AppError::NotFound(format!("reservation {id}")))
}

/// A page of reservations for the JSON API, latest start first: the actor's own, or with
/// `everyone` all of them (platform admins), narrowed by `filter` (whose owner is set here).
pub async fn list(
    state: &AppState,
    actor: &Actor,
    everyone: bool,
    mut filter: db::reservations::ListFilter,
    page: &crate::domain::paging::PageRequest,
    now: DateTime<Utc>,
) -> Result<crate::domain::paging::Page<Reservation>, AppError> {
    if everyone {
        actor.require_platform_admin()?;
        filter.owner_id = None;
    } else {
        filter.owner_id = Some(actor.user.id);
    }
    Ok(db::reservations::list_page(&state.db, &filter, page, now).await?)
}

/// Retires GPU `gpu_id` (platform admins): it can no longer be booked, and every reservation
/// holding it from now on moves to an equivalent free GPU, or is released with its rest
/// refunded when none is free ([`failover`]), in one transaction. Answers what became of each.
pub async fn retire_gpu(
    state: &AppState,
    actor: &Actor,
    gpu_id: i64,
    now: DateTime<Utc>,
) -> Result<Vec<failover::Outcome>, AppError> {
    actor.require_platform_admin()?;
    let admin = actor.user.id;
    let txn = begin_write(&state.db).await?;
    db::reservations::lock_gpus(&txn, &[gpu_id]).await?;
    let Some(status_before) = db::reservations::retire(&txn, gpu_id).await? else {
        return Err(AppError::NotFound(format!("GPU {gpu_id}")));
    };
    let failure = failover::Failure {
        gpus: vec![gpu_id],
        at: now,
        until: None,
        cause: crate::domain::failover::FailureCause::Retired,
    };
    let outcomes =
        failover::move_off(&txn, &failure, Some(admin), now, latest_start(state, now)).await?;
    let ids: Vec<i64> = outcomes.iter().map(failover::Outcome::id).collect();
    let released: Vec<i64> = outcomes
        .iter()
        .filter(|o| matches!(o, failover::Outcome::Released { .. }))
        .map(failover::Outcome::id)
        .collect();
    db::audit::append(
        &txn,
        db::audit::NewEntry {
            at: now,
            actor_id: Some(admin),
            action: crate::domain::audit::AuditAction::GpuRetire,
            target_kind: "gpu",
            target_id: gpu_id.to_string(),
            team_id: None,
        },
        Some(&serde_json::json!({ "status": Some(status_before) })),
        Some(&serde_json::json!({
            "status": "retired",
            "moved_reservations": ids,
            "released_reservations": released,
        })),
    )
    .await?;
    txn.commit().await?;
    state.wake.poke();
    tracing::info!(gpu.id = gpu_id, bookings = ids.len(), "GPU retired");
    Ok(outcomes)
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
    let row = db::reservations::lock_reservation(txn, id)
        .await?
        .filter(|row| row.team_id == Some(team_id))
        .ok_or_else(|| AppError::NotFound(format!("reservation {id}")))?;
    // Then the team (GPUs first, as bookings lock them): the caller re-checks the decider's
    // rights under it, so an admin removed meanwhile decides nothing.
    db::teams::lock_team(txn, team_id).await?;
    let waiting = row.status == reservation::Status::Confirmed
        && row.payment_status == PaymentStatus::AwaitingApproval
        && row.approval_expires_at.is_some_and(|until| now < until);
    if !waiting {
        return Err(AppError::Conflict(Problem::NotAwaitingApproval { id }));
    }
    if !approve {
        db::reservations::withdraw(
            txn,
            &row,
            now,
            Some(actor_id),
            Some(ReleaseReason::Rejected),
        )
        .await?;
        return Ok(row);
    }
    let (status, mode, at) = match charge.plan(row.charge_mode, row.start_at, now) {
        _ if row.price_minor == 0 => (PaymentStatus::Free, ChargeMode::AtBooking, None),
        ChargePlan::Now => (PaymentStatus::Paid, ChargeMode::AtBooking, None),
        ChargePlan::At(at) => (PaymentStatus::Pending, ChargeMode::BeforeStart, Some(at)),
    };
    // Approved, the booking is charged now or held until the payment job charges it: either
    // way the team wallet's available funds must cover it.
    if matches!(status, PaymentStatus::Paid | PaymentStatus::Pending)
        && let Some(missing) = db::ledger::lock_funds(txn, Account::TeamWallet(team_id))
            .await?
            .missing_for(Money::from_minor(row.price_minor))
    {
        return Err(crate::backend::ledger::insufficient(missing, currency));
    }
    if status == PaymentStatus::Paid {
        match db::ledger::charge(txn, &row, Some(actor_id), now).await {
            Ok(_) => {}
            Err(PostError::InsufficientFunds { missing, .. }) => {
                return Err(crate::backend::ledger::insufficient(missing, currency));
            }
            Err(PostError::Db(err)) => return Err(err.into()),
        }
    }
    db::reservations::set_payment(txn, id, status, mode, at).await?;
    Ok(row)
}

/// Releases reservation `id` for `reason` (its GPU taken for maintenance, retired by platform
/// admin `admin`, or its slot given to a higher priority), refunding what was paid in full,
/// inside the caller's write transaction.
pub(crate) async fn release(
    txn: &DatabaseTransaction,
    id: i64,
    admin: Option<i64>,
    now: DateTime<Utc>,
    reason: ReleaseReason,
) -> Result<(), DbErr> {
    let Some(row) = db::reservations::row(txn, id).await? else {
        return Ok(());
    };
    if !db::reservations::withdraw(txn, &row, now, admin, Some(reason)).await? {
        return Ok(());
    }
    if let Some((charge_id, paid)) = db::ledger::charge_of(txn, id).await? {
        crate::backend::card_payments::refund_booking(txn, &row, charge_id, paid, admin, now)
            .await?;
    }
    // A displaced owner hears of it with the window offered instead, once the booking that
    // took its place has found one (place.rs).
    let events = match reason {
        ReleaseReason::Preempted => Vec::new(),
        _ => db::reservations::view_of(txn, id, now)
            .await?
            .map(|view| NewEvent::released(&view, reason, view.refunded_minor, now))
            .into_iter()
            .collect(),
    };
    notify::withdrawn(txn, id, &events).await?;
    tracing::info!(
        reservation.id = id,
        reason = reason.as_str(),
        "reservation released"
    );
    Ok(())
}

/// `row` costs `amount` less (a part it no longer holds, or minutes lost): its price drops, and
/// what its charge paid for that part goes back to the wallet that paid it (never more than is
/// left of the charge). Answers the refund.
pub(crate) async fn give_back(
    txn: &DatabaseTransaction,
    row: &reservation::Model,
    amount: i64,
    (actor, now): (Option<i64>, DateTime<Utc>),
) -> Result<i64, DbErr> {
    let amount = amount.min(row.price_minor);
    if amount <= 0 {
        return Ok(0);
    }
    db::reservations::lower_price(txn, row.id, amount).await?;
    let Some((charge_id, paid)) = db::ledger::charge_of(txn, row.id).await? else {
        return Ok(0);
    };
    let refunded = db::ledger::refunds_of(txn, &[row.id])
        .await?
        .get(&row.id)
        .map_or(0, |m| m.minor());
    let amount = amount.min(paid.minor() - refunded);
    if amount <= 0 {
        return Ok(0);
    }
    crate::backend::card_payments::refund_booking(
        txn,
        row,
        charge_id,
        Money::from_minor(amount),
        actor,
        now,
    )
    .await?;
    Ok(amount)
}
