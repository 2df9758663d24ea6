//! Incidents: opening one (its holder, a platform admin, or Berth itself when the node agent
//! reports a failure that needs no report), the evidence over its window and the diagnosis the
//! rules draw from it, the workflow (acknowledge, diagnose, resolve or reject with a stated
//! cause, one reopening), replies, notices on every change, and the SLA credit: the minutes a
//! reserved GPU was unavailable through no fault of its holder, paid into the wallet that paid the
//! booking, once per incident, in one ledger transaction.
//!
//! Who sees an incident: the booking's holder, whoever opened it, and platform admins; anyone
//! else gets 404. Only platform admins move it; only its reporter reopens it.

use crate::backend::auth::actor::Actor;
use crate::backend::db::{self, begin_write};
use crate::backend::entity::{incident, reservation};
use crate::backend::state::AppState;
use crate::domain::diagnosis::{
    self, AdminChange, Cause, Diagnosis, GpuEvidence, Span, Thresholds,
};
use crate::domain::evidence::{
    AccessEntry, AdminEntry, Availability, BookingBrief, CreditView, DriverEntry, EventEntry,
    EvidenceReport, Gap, GpuTrack, IncidentView, MaintenanceEntry, MessageView, NodeHealth, SCHEMA,
    ShareEntry,
};
use crate::domain::incident::{
    self as rules, GpuAvailability, IncidentState, LostSpan, Refusal, SlaPolicy, Source,
    StatedCause, Step, Taker, Trigger,
};
use crate::domain::ledger::{Account, TransactionKind};
use crate::domain::money::Money;
use crate::domain::notify::{IncidentBrief, IncidentChange, NewEvent};
use crate::domain::paging::{Page, PageRequest};
use crate::domain::problem::Problem;
use crate::domain::schedule::Window;
use crate::domain::telemetry::{EventKind as GpuEventKind, RawPoint, Series, wants_raw};
use crate::domain::user::PlatformRole;
use crate::error::AppError;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr};
use std::collections::{BTreeSet, HashMap};

/// How incidents are answered and credited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncidentSettings {
    /// A platform admin answers within this (`incident_first_response_minutes`, default 240).
    pub first_response: TimeDelta,
    /// What the SLA credits (`sla_*`).
    pub sla: SlaPolicy,
    /// When the diagnosis' rules speak up.
    pub thresholds: Thresholds,
}

impl Default for IncidentSettings {
    fn default() -> Self {
        Self {
            first_response: TimeDelta::hours(4),
            sla: SlaPolicy::default(),
            thresholds: Thresholds::default(),
        }
    }
}

/// Most raw samples read per GPU.
const MAX_SAMPLES: u64 = 50_000;
/// Most events of each kind read.
const MAX_EVENTS: u64 = 2_000;
/// The audit actions the evidence cites: what an admin changes about GPUs, nodes, prices and
/// quotas.
const ADMIN_ACTIONS: [&str; 7] = [
    "maintenance.create",
    "maintenance.cancel",
    "gpu.retire",
    "gpu.price",
    "team.quota",
    "idle.policy",
    "node.token.revoke",
];
/// Incidents the credit job looks at per run.
const CREDIT_BATCH: u64 = 200;

/// What opening an incident asks.
#[derive(Debug, Clone, Default)]
pub struct OpenRequest {
    /// The reservation it is about.
    pub reservation_id: Option<i64>,
    /// Or the GPU.
    pub gpu_id: Option<i64>,
    /// What the reporter saw (may be empty).
    pub report: String,
    /// The window: from (default: an hour before its end) …
    pub from: Option<DateTime<Utc>>,
    /// … to (default: now, or the booking's end once it is over).
    pub to: Option<DateTime<Utc>>,
}

fn is_admin(actor: &Actor) -> bool {
    actor.user.role == PlatformRole::PlatformAdmin
}

fn not_found(id: i64) -> AppError {
    AppError::NotFound(format!("incident {id}"))
}

/// Opens an incident as `actor` and answers its id.
pub async fn open(state: &AppState, actor: &Actor, request: OpenRequest) -> Result<i64, AppError> {
    let now = state.now();
    let admin = is_admin(actor);
    let report = rules::text(&request.report).map_err(|p| AppError::invalid("report", p))?;
    let txn = begin_write(&state.db).await?;
    let (row, gpu_id) = match (request.reservation_id, request.gpu_id) {
        (Some(id), _) => {
            let row = db::reservations::row(&txn, id)
                .await?
                .filter(|row| admin || row.owner_id == actor.user.id)
                .ok_or_else(|| AppError::NotFound(format!("reservation {id}")))?;
            (Some(row), None)
        }
        (None, Some(gpu_id)) => {
            if db::incidents::gpu_facts(&txn, &[gpu_id]).await?.is_empty() {
                return Err(AppError::NotFound(format!("GPU {gpu_id}")));
            }
            let (from, to) = rules::window(request.from, request.to, now)
                .map_err(|(field, problem)| AppError::invalid(field, problem))?;
            let window = grid_around(from, to.unwrap_or(now))
                .ok_or_else(|| AppError::invalid("from", Problem::ToNotAfterFrom))?;
            let mut holds = db::reservations::holds_on(&txn, &[gpu_id], &window).await?;
            holds.retain(|h| h.owner_id == actor.user.id);
            holds.sort_by_key(|h| h.window.start());
            match holds.last() {
                Some(hold) => (
                    db::reservations::row(&txn, hold.reservation_id).await?,
                    Some(gpu_id),
                ),
                None if admin => (None, Some(gpu_id)),
                None => return Err(AppError::invalid("gpu_id", Problem::NoBookingOnGpu)),
            }
        }
        (None, None) => return Err(AppError::invalid("reservation_id", Problem::IncidentTarget)),
    };
    // The booking's window when nothing else is asked: the hour before now while it runs, the
    // booking itself once it is over.
    let (from, to) = match (&row, request.from, request.to) {
        (Some(row), None, None) if row.end_at <= now => {
            let from = row.start_at.max(row.end_at - rules::MAX_WINDOW);
            (from, Some(row.end_at))
        }
        _ => rules::window(request.from, request.to, now)
            .map_err(|(field, problem)| AppError::invalid(field, problem))?,
    };
    // A holder looks into their booking's time only (an hour either side): the GPUs' evidence
    // at other times is other tenants'.
    let (from, to) = match &row {
        Some(row) if !admin => {
            let until = row.cancelled_at.map_or(row.end_at, |at| at.min(row.end_at));
            rules::within_booking((from, to), now, row.start_at, until)
                .map_err(|problem| AppError::invalid("from", problem))?
        }
        _ => (from, to),
    };
    let gpu_ids = match &row {
        Some(row) => db::reservations::gpus_held_by(&txn, &[row.id]).await?,
        None => gpu_id.into_iter().collect(),
    };
    let source = if admin && row.as_ref().is_none_or(|r| r.owner_id != actor.user.id) {
        Source::Admin
    } else {
        Source::User
    };
    let new = db::incidents::NewIncident {
        reservation_id: row.as_ref().map(|r| r.id),
        gpu_id,
        gpu_ids,
        node_id: None,
        opened_by: Some(actor.user.id),
        source: source.as_str(),
        trigger: None,
        auto_key: None,
        report,
        from,
        to,
        first_response_due: now + state.portal.incidents.first_response,
        booking_price_minor: row.as_ref().map_or(0, |r| r.price_minor),
        booking_gpu_minutes: row.as_ref().map_or(0, booking_gpu_minutes),
        at: now,
    };
    let incident = db::incidents::insert(&txn, &new)
        .await?
        .ok_or(AppError::Internal)?;
    tell(
        &txn,
        &incident,
        row.as_ref().map(|r| r.owner_id),
        Some(actor.user.id),
        IncidentChange::Opened,
        "opened",
        None,
        now,
    )
    .await?;
    txn.commit().await?;
    state.wake.poke();
    tracing::info!(
        incident.id = incident.id,
        source = source.as_str(),
        "incident opened"
    );
    Ok(incident.id)
}

/// GPU-minutes of a booking: its GPUs times its minutes.
fn booking_gpu_minutes(row: &reservation::Model) -> i64 {
    i64::from(row.gpu_count.max(1)) * (row.end_at - row.start_at).num_minutes().max(0)
}

/// Opens an incident on Berth's own, inside the caller's transaction, for each confirmed booking
/// that holds `gpu_id` at `at` (`trigger`: XID 79 or the GPU gone), at most once per booking and
/// GPU. Run before the failover moves the bookings.
pub async fn open_for_gpu(
    txn: &DatabaseTransaction,
    first_response: TimeDelta,
    trigger: Trigger,
    gpu_id: i64,
    at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let slot = crate::domain::schedule::slot_floor(at);
    let Ok(instant) = Window::new(
        slot,
        slot + TimeDelta::minutes(crate::domain::schedule::SLOT_MINUTES),
    ) else {
        return Ok(());
    };
    let holds = db::reservations::holds_on(txn, &[gpu_id], &instant).await?;
    for hold in holds {
        // Only a booking that had begun lost anything: a later one just moves.
        if hold.window.start() > at {
            continue;
        }
        let Some(row) = db::reservations::row(txn, hold.reservation_id).await? else {
            continue;
        };
        let key = format!("{}:{}:{gpu_id}", trigger.as_str(), row.id);
        open_auto(txn, first_response, trigger, &row, None, key, at, now).await?;
    }
    Ok(())
}

/// Opens an incident on Berth's own for every booking running on node `node_id`, whose agent has
/// been silent since `last_seen`, inside the caller's transaction (once per silence).
pub async fn open_for_silent_node(
    txn: &DatabaseTransaction,
    first_response: TimeDelta,
    node_id: i64,
    last_seen: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    for row in db::incidents::running_on_node(txn, node_id, now).await? {
        if row.start_at > last_seen && row.start_at > now {
            continue;
        }
        let key = format!(
            "{}:{}:{}",
            Trigger::NodeSilent.as_str(),
            row.id,
            last_seen.timestamp_millis()
        );
        let at = last_seen.max(row.start_at);
        open_auto(
            txn,
            first_response,
            Trigger::NodeSilent,
            &row,
            Some(node_id),
            key,
            at,
            now,
        )
        .await?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn open_auto(
    txn: &DatabaseTransaction,
    first_response: TimeDelta,
    trigger: Trigger,
    row: &reservation::Model,
    node_id: Option<i64>,
    key: String,
    at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    if row.status != reservation::Status::Confirmed || row.released_reason.is_some() {
        return Ok(());
    }
    let gpu_ids = db::reservations::gpus_held_by(txn, &[row.id]).await?;
    let new = db::incidents::NewIncident {
        reservation_id: Some(row.id),
        gpu_id: None,
        gpu_ids,
        node_id,
        opened_by: None,
        source: Source::Agent.as_str(),
        trigger: Some(trigger.as_str()),
        auto_key: Some(key),
        report: String::new(),
        from: at.min(now) - rules::DEFAULT_LOOKBACK,
        to: None,
        first_response_due: now + first_response,
        booking_price_minor: row.price_minor,
        booking_gpu_minutes: booking_gpu_minutes(row),
        at: now,
    };
    if let Some(incident) = db::incidents::insert(txn, &new).await? {
        tell(
            txn,
            &incident,
            Some(row.owner_id),
            None,
            IncidentChange::Opened,
            "opened",
            None,
            now,
        )
        .await?;
        tracing::info!(
            incident.id = incident.id,
            reservation.id = row.id,
            trigger = trigger.as_str(),
            "incident opened by Berth"
        );
    }
    Ok(())
}

/// Records the notices of a change to `incident`: to its holder (`holder`), its opener and every
/// platform admin, except `actor`, who made it.
#[allow(clippy::too_many_arguments)]
async fn tell(
    txn: &DatabaseTransaction,
    incident: &incident::Model,
    holder: Option<i64>,
    actor: Option<i64>,
    change: IncidentChange,
    stamp: &str,
    amount_minor: Option<i64>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let mut users: BTreeSet<i64> = db::users::platform_admins(txn).await?.into_iter().collect();
    users.extend(holder);
    users.extend(incident.opened_by);
    // An SLA credit concerns the holder only.
    if change == IncidentChange::Credited {
        users = holder.into_iter().collect();
    }
    let brief = IncidentBrief {
        id: incident.id,
        change,
        state: IncidentState::parse(&incident.state).unwrap_or(IncidentState::Open),
        trigger: incident.trigger.as_deref().and_then(Trigger::parse),
        reservation_id: incident.reservation_id,
    };
    let events: Vec<NewEvent> = users
        .into_iter()
        .filter(|user| Some(*user) != actor)
        .map(|user| NewEvent::incident(user, brief.clone(), stamp, amount_minor, now))
        .collect();
    crate::backend::notify::record(txn, &events).await
}

/// Who `actor` is to `row`: an admin, its reporter (the booking's holder or its opener), or
/// nobody (404).
async fn taker_of(
    db: &impl ConnectionTrait,
    actor: &Actor,
    row: &incident::Model,
) -> Result<(Taker, Option<i64>), AppError> {
    let holder = match row.reservation_id {
        Some(id) => db::reservations::row(db, id).await?.map(|r| r.owner_id),
        None => None,
    };
    let reporter = holder == Some(actor.user.id) || row.opened_by == Some(actor.user.id);
    let taker = Taker {
        admin: is_admin(actor),
        reporter,
    };
    if !taker.admin && !taker.reporter {
        return Err(not_found(row.id));
    }
    Ok((taker, holder))
}

/// Incident `id` with its messages and evidence, as `actor` may see it.
pub async fn report(state: &AppState, actor: &Actor, id: i64) -> Result<EvidenceReport, AppError> {
    let row = db::incidents::find(&state.db, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    let (taker, _) = taker_of(&state.db, actor, &row).await?;
    let report = build(&state.db, state, &row, state.now()).await?;
    Ok(if taker.admin {
        report
    } else {
        report.for_reporter()
    })
}

/// A page of the incidents `actor` may see, newest first: every one for platform admins, else
/// those on their bookings or opened by them; `reservation`/`gpu` narrow the list.
pub async fn list(
    state: &AppState,
    actor: &Actor,
    reservation: Option<i64>,
    gpu: Option<i64>,
    page: &PageRequest,
) -> Result<Page<IncidentView>, AppError> {
    let db = &state.db;
    let admin = is_admin(actor);
    let scope = match (reservation, gpu) {
        (Some(id), _) => {
            let row = db::reservations::row(db, id)
                .await?
                .filter(|r| admin || r.owner_id == actor.user.id)
                .ok_or_else(|| AppError::NotFound(format!("reservation {id}")))?;
            db::incidents::Scope::Reservation(row.id)
        }
        (None, Some(gpu)) if admin => db::incidents::Scope::Gpu(gpu),
        (None, Some(gpu)) => db::incidents::Scope::GpuOf(gpu, actor.user.id),
        (None, None) if admin => db::incidents::Scope::All,
        (None, None) => db::incidents::Scope::Of(actor.user.id),
    };
    let rows = db::incidents::list(db, scope, page).await?;
    let mut out = Vec::with_capacity(rows.items.len());
    for row in &rows.items {
        if !admin && taker_of(db, actor, row).await.is_err() {
            continue;
        }
        out.push(view(db, row, state.now()).await?);
    }
    Ok(Page {
        items: out,
        next: rows.next,
    })
}

/// What a step asks.
#[derive(Debug, Clone, Default)]
pub struct StepRequest {
    /// The step (`acknowledge`, `diagnose`, `resolve`, `reject`, `reopen`).
    pub step: String,
    /// A cause of the diagnosis (`thermal`).
    pub cause: Option<String>,
    /// The cause in words, or a note.
    pub note: String,
}

/// Takes `request`'s step on incident `id` as `actor`.
pub async fn take_step(
    state: &AppState,
    actor: &Actor,
    id: i64,
    request: StepRequest,
) -> Result<IncidentView, AppError> {
    let now = state.now();
    let step = Step::parse(&request.step).ok_or_else(|| {
        AppError::invalid(
            "step",
            Problem::NotOneOf {
                allowed: "acknowledge, diagnose, resolve, reject, reopen".into(),
            },
        )
    })?;
    let note = rules::text(&request.note).map_err(|p| AppError::invalid("note", p))?;
    let chosen = match request.cause.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(raw) => Some(
            Cause::parse(raw).ok_or_else(|| AppError::invalid("cause", Problem::NotInDiagnosis))?,
        ),
    };
    // The diagnosis is read before the write: the evidence only grows, and a cause chosen from it
    // stays one of its hypotheses.
    let row = db::incidents::find(&state.db, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    taker_of(&state.db, actor, &row).await?;
    let hypotheses: Vec<Cause> = if chosen.is_some() {
        build(&state.db, state, &row, now)
            .await?
            .diagnosis
            .hypotheses
            .iter()
            .map(|h| h.cause)
            .collect()
    } else {
        Vec::new()
    };
    let stated = match chosen {
        Some(cause) => Some(StatedCause::Diagnosed(cause)),
        None if !note.is_empty() => Some(StatedCause::Written(note.clone())),
        None => None,
    };
    let txn = begin_write(&state.db).await?;
    let row = db::incidents::lock(&txn, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    let (taker, holder) = taker_of(&txn, actor, &row).await?;
    let current = IncidentState::parse(&row.state).ok_or(AppError::Internal)?;
    let next = rules::take(
        current,
        step,
        taker,
        row.reopened_at.is_some(),
        stated.as_ref(),
        &note,
        &hypotheses,
    )
    .map_err(|refusal| match refusal {
        Refusal::Forbidden => AppError::Forbidden,
        Refusal::Conflict(problem) => AppError::Conflict(problem),
        Refusal::Invalid(field, problem) => AppError::invalid(field, problem),
    })?;
    let (cause, cause_text) = match step {
        Step::Diagnose | Step::Resolve | Step::Reject => (
            chosen.map(|c| c.as_str().to_owned()),
            (!note.is_empty()).then(|| note.clone()),
        ),
        Step::Acknowledge => (row.cause.clone(), row.cause_text.clone()),
        Step::Reopen => (None, None),
    };
    let to = match step {
        Step::Resolve | Step::Reject => Some(row.to_at.unwrap_or(now)),
        // Reopened with new evidence: the window follows the present again, a holder's no
        // further than their booking (and its margin).
        Step::Reopen if taker.admin => None,
        Step::Reopen => match row.reservation_id {
            Some(booking) => {
                let booking = db::reservations::row(&txn, booking)
                    .await?
                    .ok_or(AppError::Internal)?;
                let until = booking
                    .cancelled_at
                    .map_or(booking.end_at, |at| at.min(booking.end_at));
                rules::within_booking((row.from_at, None), now, booking.start_at, until)
                    .map_err(|problem| AppError::invalid("step", problem))?
                    .1
            }
            None => None,
        },
        _ => row.to_at,
    };
    let change = db::incidents::Change {
        state: next.as_str().to_owned(),
        cause,
        cause_text,
        reopened_at: if step == Step::Reopen {
            Some(now)
        } else {
            row.reopened_at
        },
        first_response_at: match row.first_response_at {
            None if taker.admin && step != Step::Reopen => Some(now),
            other => other,
        },
        to,
        at: now,
    };
    db::incidents::update(&txn, id, &change).await?;
    let body = match (&stated, step) {
        (Some(StatedCause::Diagnosed(cause)), _) if note.is_empty() => cause.as_str().to_owned(),
        _ => note.clone(),
    };
    let message = db::incidents::add_message(
        &txn,
        id,
        Some(actor.user.id),
        "state",
        Some(next.as_str()),
        &body,
        now,
    )
    .await?;
    let updated = db::incidents::find(&txn, id)
        .await?
        .ok_or(AppError::Internal)?;
    tell(
        &txn,
        &updated,
        holder,
        Some(actor.user.id),
        IncidentChange::Moved,
        &format!("m{}", message.id),
        None,
        now,
    )
    .await?;
    txn.commit().await?;
    state.wake.poke();
    tracing::info!(
        incident.id = id,
        step = step.as_str(),
        state = next.as_str(),
        "incident step"
    );
    if next == IncidentState::Resolved {
        credit(state, id, now).await?;
    }
    let row = db::incidents::find(&state.db, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    Ok(view(&state.db, &row, now).await?)
}

/// Adds `actor`'s reply to incident `id`.
pub async fn reply(
    state: &AppState,
    actor: &Actor,
    id: i64,
    body: &str,
) -> Result<MessageView, AppError> {
    let now = state.now();
    let body = rules::text(body).map_err(|p| AppError::invalid("body", p))?;
    if body.is_empty() {
        return Err(AppError::invalid(
            "body",
            Problem::TextLength {
                max: rules::MAX_TEXT_CHARS,
            },
        ));
    }
    let txn = begin_write(&state.db).await?;
    let row = db::incidents::lock(&txn, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    let (taker, holder) = taker_of(&txn, actor, &row).await?;
    let message =
        db::incidents::add_message(&txn, id, Some(actor.user.id), "reply", None, &body, now)
            .await?;
    if taker.admin && !taker.reporter {
        db::incidents::note_first_response(&txn, id, now).await?;
    }
    tell(
        &txn,
        &row,
        holder,
        Some(actor.user.id),
        IncidentChange::Reply,
        &format!("m{}", message.id),
        None,
        now,
    )
    .await?;
    txn.commit().await?;
    state.wake.poke();
    Ok(MessageView {
        id: message.id,
        at: now,
        author: Some(actor.user.name.clone()),
        by_admin: taker.admin,
        state: None,
        body,
    })
}

/// The credit job: pays the SLA credit of every incident whose losses are over (its booking
/// ended, it was resolved, or every lost stretch ended), each in its own write transaction.
/// Answers how many were credited.
pub async fn run_credits(state: &AppState, now: DateTime<Utc>) -> Result<u32, AppError> {
    let mut credited = 0;
    for row in db::incidents::uncredited(&state.db, CREDIT_BATCH).await? {
        if credit(state, row.id, now).await? {
            credited += 1;
        }
    }
    Ok(credited)
}

/// Pays incident `id`'s SLA credit when its losses are over; whether it did.
async fn credit(state: &AppState, id: i64, now: DateTime<Utc>) -> Result<bool, AppError> {
    let Some(row) = db::incidents::find(&state.db, id).await? else {
        return Ok(false);
    };
    let (Some(reservation_id), None) = (row.reservation_id, row.credited_at) else {
        return Ok(false);
    };
    if row.state == IncidentState::Rejected.as_str() {
        return Ok(false);
    }
    let report = build(&state.db, state, &row, now).await?;
    let mut chain = vec![reservation_id];
    chain.extend(db::incidents::continuations(&state.db, reservation_id).await?);
    let booking_over = db::reservations::rows(&state.db, &chain)
        .await?
        .iter()
        .all(|r| r.end_at <= now);
    let resolved = row.state == IncidentState::Resolved.as_str();
    let lost = &report.availability.lost;
    let losses_over = !lost.is_empty() && lost.iter().all(|span| span.to < now);
    if !(booking_over || resolved || losses_over) {
        return Ok(false);
    }
    let txn = begin_write(&state.db).await?;
    let Some(locked) = db::incidents::lock(&txn, id).await? else {
        return Ok(false);
    };
    if locked.credited_at.is_some() || locked.state == IncidentState::Rejected.as_str() {
        return Ok(false);
    }
    let Some(booking) = db::reservations::row(&txn, reservation_id).await? else {
        return Ok(false);
    };
    let paid = booking.payment_status == crate::domain::reservation::PaymentStatus::Paid;
    let amount = if paid {
        report.availability.credit_minor
    } else {
        0
    };
    if amount > 0 {
        let reason = crate::domain::ledger::BerthReason::SlaCredit { incident: id };
        let record = db::ledger::TransactionRecord {
            kind: TransactionKind::SlaCredit,
            user_id: Some(booking.owner_id),
            reservation_id: Some(booking.id),
            reverses_id: None,
            reason: db::ledger::RecordReason::Berth(&reason),
            actor_id: None,
            provider: None,
            at: now,
        };
        db::ledger::transfer(
            &txn,
            &record,
            Account::Revenue,
            db::ledger::payer(&booking),
            Money::from_minor(amount),
        )
        .await
        .map_err(|err| match err {
            db::ledger::PostError::Db(err) => AppError::from(err),
            // Money goes into the wallet: it cannot run short.
            other => AppError::internal(other),
        })?;
    }
    let credit = db::incidents::Credit {
        minor: amount,
        gpu_minutes: report.availability.lost_gpu_minutes,
        from: lost.iter().map(|s| s.from).min(),
        to: lost.iter().map(|s| s.to).max(),
        at: now,
    };
    db::incidents::set_credit(&txn, id, &credit).await?;
    if amount > 0 {
        tell(
            &txn,
            &locked,
            Some(booking.owner_id),
            None,
            IncidentChange::Credited,
            "credited",
            Some(amount),
            now,
        )
        .await?;
    }
    txn.commit().await?;
    if amount > 0 {
        state.wake.poke();
        tracing::info!(incident.id = id, credit.minor = amount, "SLA credit paid");
    }
    Ok(true)
}

/// The incident as a page shows it.
async fn view(
    db: &impl ConnectionTrait,
    row: &incident::Model,
    now: DateTime<Utc>,
) -> Result<IncidentView, DbErr> {
    let booking = match row.reservation_id {
        Some(id) => match db::reservations::row(db, id).await? {
            Some(r) => {
                let gpus = db::incidents::gpu_facts(db, &parse_ids(&row.gpu_ids)).await?;
                let node = db::incidents::nodes(db, &[r.node_id]).await?;
                Some(BookingBrief {
                    id: r.id,
                    owner_id: r.owner_id,
                    model: r.model.clone(),
                    node: node.first().map(|n| n.name.clone()).unwrap_or_default(),
                    gpus: gpus.into_iter().map(|g| g.label).collect(),
                    quarters: u8::try_from(r.quarters).unwrap_or(4),
                    start: r.start_at,
                    end: r.end_at,
                    price_minor: r.price_minor,
                })
            }
            None => None,
        },
        None => None,
    };
    let opened_by = match row.opened_by {
        Some(user) => db::users::names_of(db, &[user]).await?.remove(&user),
        None => None,
    };
    let state = IncidentState::parse(&row.state)
        .ok_or_else(|| DbErr::Custom(format!("incidents.id={}: state", row.id)))?;
    Ok(IncidentView {
        id: row.id,
        state,
        source: Source::parse(&row.source).unwrap_or(Source::User),
        trigger: row.trigger.as_deref().and_then(Trigger::parse),
        opened_by,
        opened_by_id: row.opened_by,
        opened_at: row.created_at,
        report: row.report.clone(),
        reservation: booking,
        gpu_id: row.gpu_id,
        from: row.from_at,
        to: row.to_at.unwrap_or(now).max(row.from_at),
        to_now: row.to_at.is_none(),
        first_response_due: row.first_response_due_at,
        first_response_at: row.first_response_at,
        first_response_overdue: row.first_response_at.is_none()
            && !state.closed()
            && row.first_response_due_at < now,
        cause: row.cause.as_deref().and_then(Cause::parse),
        cause_text: row.cause_text.clone(),
        reopened: row.reopened_at.is_some(),
        credit: row.credited_at.map(|at| CreditView {
            minor: row.credit_minor,
            gpu_minutes: row.credit_gpu_minutes,
            at,
        }),
    })
}

fn parse_ids(raw: &str) -> Vec<i64> {
    raw.split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

/// Builds incident `row`'s evidence, diagnosis and SLA reading at `now`.
pub async fn build(
    db: &DatabaseConnection,
    state: &AppState,
    row: &incident::Model,
    now: DateTime<Utc>,
) -> Result<EvidenceReport, DbErr> {
    let settings = &state.portal.incidents;
    let incident = view(db, row, now).await?;
    let (from, to) = (incident.from, incident.to.max(incident.from));
    let gpu_ids = parse_ids(&row.gpu_ids);
    let facts = db::incidents::gpu_facts(db, &gpu_ids).await?;
    // Nothing could report before the GPUs joined the inventory: that is not a silence.
    let observed_from = facts
        .iter()
        .map(|g| g.created_at)
        .min()
        .map_or(from, |joined| joined.max(from).min(to));
    let window = Span::new(observed_from, to.max(observed_from + TimeDelta::seconds(1)))
        .ok_or_else(|| DbErr::Custom(format!("incidents.id={}: window", row.id)))?;
    let booking = match row.reservation_id {
        Some(id) => db::reservations::row(db, id).await?,
        None => None,
    };
    let mut chain = vec![];
    if let Some(b) = &booking {
        chain.push(b.id);
        chain.extend(db::incidents::continuations(db, b.id).await?);
    }
    let raw = wants_raw(from, to, now, state.portal.telemetry.raw_keep);

    // The nodes: their agents' health and driver versions.
    let mut node_ids: Vec<i64> = facts.iter().map(|g| g.node_id).collect();
    node_ids.extend(row.node_id);
    node_ids.sort_unstable();
    node_ids.dedup();
    let node_rows = db::incidents::nodes(db, &node_ids).await?;
    let node_gpus = db::incidents::gpus_of_nodes(db, &node_ids).await?;
    let drivers = db::incidents::driver_versions(db, &node_ids, from, to).await?;
    let mut reports: HashMap<i64, Vec<DateTime<Utc>>> = HashMap::new();
    let mut reported_before: Option<DateTime<Utc>> = None;
    let mut nodes = Vec::with_capacity(node_rows.len());
    for node in &node_rows {
        let ids: Vec<i64> = node_gpus
            .iter()
            .filter(|(_, n)| *n == node.id)
            .map(|(g, _)| *g)
            .collect();
        let before = db::incidents::last_report_before(db, &ids, observed_from).await?;
        let times = db::incidents::report_times(db, &ids, observed_from, to, raw).await?;
        let interval = TimeDelta::seconds(i64::from(node.report_interval_s.unwrap_or(5).max(1)));
        let longest = if raw {
            interval * 3
        } else {
            (interval * 3).max(TimeDelta::minutes(2))
        };
        // Nothing before a node's first report is a gap: it was not there yet.
        let mut marks: Vec<DateTime<Utc>> = before.map(|_| observed_from).into_iter().collect();
        marks.extend(times.iter().copied());
        marks.push(to.min(now));
        let gaps = marks
            .windows(2)
            .filter(|pair| pair[1] - pair[0] > longest)
            .map(|pair| Gap {
                from: pair[0],
                to: pair[1],
            })
            .collect();
        reported_before = reported_before.max(before);
        reports.insert(node.id, before.into_iter().chain(times).collect());
        nodes.push(NodeHealth {
            id: node.id,
            name: node.name.clone(),
            source: node.agent_source.clone(),
            report_interval_s: node.report_interval_s,
            last_seen_at: node.last_seen_at,
            gaps,
            drivers: drivers
                .iter()
                .filter(|d| d.node_id == node.id)
                .map(|d| DriverEntry {
                    from: d.from_at,
                    version: d.driver_version.clone(),
                    source: d.source.clone(),
                })
                .collect(),
        });
    }

    // Other tenants' shares of the GPUs.
    let holds = match grid_around(from, to) {
        Some(grid) => db::reservations::holds_on(db, &gpu_ids, &grid).await?,
        None => Vec::new(),
    };
    // Lease events on the GPUs, and the booking's own wherever it moved.
    let mut access_rows = db::incidents::access_events(db, &gpu_ids, from, to, MAX_EVENTS).await?;
    if !chain.is_empty() {
        for event in db::incidents::access_events_of(db, &chain, from, MAX_EVENTS).await? {
            if event.at < to && !access_rows.iter().any(|e| e.id == event.id) {
                access_rows.push(event);
            }
        }
        access_rows.sort_by_key(|e| (e.at, e.id));
    }
    let mut labels: HashMap<i64, String> = facts.iter().map(|g| (g.id, g.label.clone())).collect();
    let missing: Vec<i64> = access_rows
        .iter()
        .map(|e| e.gpu_id)
        .filter(|g| !labels.contains_key(g))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !missing.is_empty() {
        for g in db::incidents::gpu_facts(db, &missing).await? {
            labels.insert(g.id, g.label);
        }
    }
    let access: Vec<AccessEntry> = access_rows
        .iter()
        .map(|e| AccessEntry {
            at: e.at,
            gpu: labels.get(&e.gpu_id).cloned().unwrap_or_default(),
            kind: e.kind.clone(),
            this_booking: e.reservation_id.is_some_and(|r| chain.contains(&r)),
            pid: e.pid,
            user: e.user_name.clone(),
            memory_mib: e.memory_mib,
        })
        .collect();
    let maintenance_rows = db::incidents::maintenance(db, &gpu_ids, from, to).await?;
    let maintenance: Vec<MaintenanceEntry> = maintenance_rows
        .iter()
        .map(|m| MaintenanceEntry {
            gpu: labels.get(&m.gpu_id).cloned().unwrap_or_default(),
            from: m.start_at,
            to: m.end_at,
            reason: m.reason.clone(),
            created_at: m.created_at,
        })
        .collect();
    // Admin changes in the window and the hour before it that concern these GPUs, their nodes,
    // their model, the booking's team, or the whole fleet.
    let models: BTreeSet<String> = facts.iter().map(|g| g.model.clone()).collect();
    let team = booking.as_ref().and_then(|b| b.team_id);
    let admin_rows = db::incidents::audit_between(
        db,
        &ADMIN_ACTIONS,
        from - TimeDelta::hours(1),
        to,
        MAX_EVENTS,
    )
    .await?;
    let admin_changes: Vec<AdminEntry> = admin_rows
        .into_iter()
        .filter(|a| {
            let id: Option<i64> = a.target_id.parse().ok();
            match a.target_kind.as_str() {
                "gpu" => id.is_some_and(|id| gpu_ids.contains(&id)),
                "node" => id.is_some_and(|id| node_ids.contains(&id)),
                "model" => models.contains(&a.target_id),
                "team" => team.is_some() && id == team,
                // A maintenance window names its GPU in what it set.
                "maintenance" => a
                    .after_json
                    .as_deref()
                    .and_then(|raw| serde_json::from_str::<serde_json::Value>(raw).ok())
                    .and_then(|after| after.get("gpu_id").and_then(serde_json::Value::as_i64))
                    .is_some_and(|gpu| gpu_ids.contains(&gpu)),
                // The platform's idle policy, or this team's.
                "idle_policy" => {
                    a.target_id == "platform"
                        || team.is_some_and(|t| a.target_id == db::reclaim::team_scope(t))
                }
                _ => false,
            }
        })
        .map(|a| AdminEntry {
            at: a.at,
            target: format!("{} {}", a.target_kind, a.target_id),
            action: a.action,
            after: a.after_json,
        })
        .collect();

    // Each GPU's telemetry and events.
    let mut gpus = Vec::with_capacity(facts.len());
    let mut evidence_gpus = Vec::with_capacity(facts.len());
    let mut availability_gpus = Vec::with_capacity(facts.len());
    // The booking as it was held: from its start to the end of its last continuation (a move
    // splits it at the failure), or to where a reclaim cut it short.
    let chain_rows = db::reservations::rows(db, &chain).await?;
    let chain_window = booking.as_ref().map(|b| {
        let end = chain_rows
            .iter()
            .map(|r| r.end_at.max(r.reclaimed_until.unwrap_or(r.end_at)))
            .max()
            .unwrap_or(b.end_at);
        (b.start_at, end)
    });
    for gpu in &facts {
        let series = if raw {
            Series::Raw(
                db::telemetry::samples(db, gpu.id, from, to, MAX_SAMPLES)
                    .await?
                    .into_iter()
                    .map(|(at, readings)| RawPoint { at, readings })
                    .collect(),
            )
        } else {
            Series::Minute(db::telemetry::rollups(db, gpu.id, from, to).await?)
        };
        let mut events: Vec<EventEntry> =
            db::telemetry::events(db, gpu.id, from, to, None, MAX_EVENTS)
                .await?
                .into_iter()
                .map(|e| EventEntry {
                    at: e.at,
                    kind: e.kind.as_str().to_owned(),
                    code: e.code,
                })
                .collect();
        events.reverse();
        let others: Vec<ShareEntry> = holds
            .iter()
            .filter(|h| h.gpu_id == gpu.id && !chain.contains(&h.reservation_id))
            .map(|h| ShareEntry {
                quarters: h.quarters,
                from: h.window.start(),
                to: h.window.end(),
            })
            .collect();
        let samples = diagnosis_samples(&series);
        let xids: Vec<(DateTime<Utc>, i64)> = events
            .iter()
            .filter(|e| e.kind == GpuEventKind::Xid.as_str())
            .filter_map(|e| Some((e.at, e.code?)))
            .collect();
        let gone_at = events
            .iter()
            .find(|e| e.kind == GpuEventKind::Vanished.as_str())
            .map(|e| e.at)
            .or(gpu.vanished_at.filter(|at| window.contains(*at)));
        evidence_gpus.push(GpuEvidence {
            gpu: gpu.label.clone(),
            memory_total_mib: u64::try_from(gpu.memory_mib).unwrap_or(0),
            samples: samples.clone(),
            xids: xids.clone(),
            gone_at,
            others: others
                .iter()
                .filter_map(|o| Some((Span::new(o.from, o.to)?, o.quarters)))
                .collect(),
        });
        if let Some((start, end)) = chain_window {
            let held_to = end.min(to).min(now);
            let held_from = start.max(from);
            if let Some(held) = Span::new(held_from, held_to) {
                let created = booking.as_ref().map(|b| b.created_at);
                availability_gpus.push(GpuAvailability {
                    gpu: gpu.label.clone(),
                    held,
                    node_reports: reports.get(&gpu.node_id).cloned().unwrap_or_default(),
                    samples,
                    fell_off_bus_at: xids
                        .iter()
                        .find(|(_, code)| *code == crate::domain::failover::XID_FELL_OFF_BUS)
                        .map(|(at, _)| *at),
                    gone_at,
                    restored: access_rows
                        .iter()
                        .filter(|e| {
                            e.kind == "granted"
                                && e.gpu_id != gpu.id
                                && e.reservation_id.is_some_and(|r| chain.contains(&r))
                        })
                        .map(|e| e.at)
                        .collect(),
                    maintenance: maintenance_rows
                        .iter()
                        // Set by an admin after the booking was made; maintenance Berth sets
                        // after a failure is counted as that failure.
                        .filter(|m| {
                            m.gpu_id == gpu.id
                                && m.created_by.is_some()
                                && created.is_some_and(|c| m.created_at > c)
                        })
                        .filter_map(|m| Span::new(m.start_at, m.end_at))
                        .collect(),
                });
            }
        }
        gpus.push(GpuTrack {
            id: gpu.id,
            label: gpu.label.clone(),
            uuid: gpu.uuid.clone(),
            model: gpu.model.clone(),
            memory_mib: gpu.memory_mib,
            vanished_at: gpu.vanished_at,
            series,
            events,
            others,
        });
    }
    let interval = node_rows
        .iter()
        .filter_map(|n| n.report_interval_s)
        .max()
        .map_or(5, |s| u32::try_from(s.max(1)).unwrap_or(5));
    let evidence = diagnosis::Evidence {
        window,
        gpus: evidence_gpus,
        report_interval_seconds: if raw { interval } else { interval.max(60) },
        admin_changes: admin_changes
            .iter()
            .map(|a| AdminChange {
                at: a.at,
                action: a.action.clone(),
                target: a.target.clone(),
            })
            .collect(),
        reported_before,
    };
    let diagnosis: Diagnosis = diagnosis::diagnose(&evidence, &settings.thresholds);

    // The SLA: what was lost, less what other incidents of the booking paid for already.
    let mut lost = rules::lost_spans(&availability_gpus, interval, &settings.sla);
    if let Some(id) = row.reservation_id {
        let taken = db::incidents::credited_spans(db, id, row.id).await?;
        lost = without(lost, &taken);
    }
    let (lost_gpu_minutes, credit_minor) = match row.credited_at {
        Some(_) => (row.credit_gpu_minutes, row.credit_minor),
        None => {
            let minutes = rules::lost_gpu_minutes(&lost);
            let credit = rules::credit_minor(
                row.booking_price_minor,
                row.booking_gpu_minutes,
                minutes,
                settings.sla.percent,
            );
            (minutes, credit)
        }
    };
    let messages = messages(db, row).await?;
    Ok(EvidenceReport {
        schema: SCHEMA.to_owned(),
        generated_at: now,
        currency: state.portal.currency.code().to_owned(),
        incident,
        messages,
        gpus,
        nodes,
        access,
        maintenance,
        admin_changes,
        diagnosis,
        availability: Availability {
            lost,
            lost_gpu_minutes,
            credit_minor,
            percent: settings.sla.percent,
        },
    })
}

/// The booking-grid window that covers `[from, to)`.
fn grid_around(from: DateTime<Utc>, to: DateTime<Utc>) -> Option<Window> {
    let start = crate::domain::schedule::slot_floor(from);
    let end = crate::domain::schedule::slot_ceil(to)
        .max(start + TimeDelta::minutes(crate::domain::schedule::SLOT_MINUTES));
    Window::new(start, end).ok()
}

/// `spans` less the stretches in `taken`.
fn without(spans: Vec<LostSpan>, taken: &[(DateTime<Utc>, DateTime<Utc>)]) -> Vec<LostSpan> {
    let mut out = spans;
    for &(from, to) in taken {
        out = out
            .into_iter()
            .flat_map(|span| {
                let mut parts = Vec::new();
                if span.to <= from || span.from >= to {
                    parts.push(span);
                    return parts;
                }
                if span.from < from {
                    parts.push(LostSpan {
                        to: from,
                        ..span.clone()
                    });
                }
                if span.to > to {
                    parts.push(LostSpan { from: to, ..span });
                }
                parts
            })
            .collect();
    }
    out
}

/// The samples the rules read: raw samples as they are, rollups as their minute's highs.
fn diagnosis_samples(series: &Series) -> Vec<diagnosis::Sample> {
    match series {
        Series::Raw(points) => points
            .iter()
            .map(|p| diagnosis::Sample {
                at: p.at,
                temperature_c: p.readings.temperature_c,
                sm_clock_mhz: p.readings.sm_clock_mhz,
                throttle_reasons: p.readings.throttle_reasons,
                memory_used_mib: p.readings.memory_used_mib,
                ecc_corrected: p.readings.ecc_corrected,
                ecc_uncorrected: p.readings.ecc_uncorrected,
            })
            .collect(),
        Series::Minute(rollups) => rollups
            .iter()
            .map(|r| diagnosis::Sample {
                at: r.minute,
                temperature_c: r
                    .temperature_c
                    .as_ref()
                    .and_then(|s| i16::try_from(s.max.round() as i64).ok()),
                sm_clock_mhz: None,
                throttle_reasons: None,
                memory_used_mib: r
                    .memory_used_mib
                    .as_ref()
                    .map(|s| s.max.max(0.0).round() as u64),
                ecc_corrected: None,
                ecc_uncorrected: None,
            })
            .collect(),
    }
}

/// The messages of `row`, oldest first.
async fn messages(
    db: &impl ConnectionTrait,
    row: &incident::Model,
) -> Result<Vec<MessageView>, DbErr> {
    let rows = db::incidents::messages(db, row.id).await?;
    let mut authors: Vec<i64> = rows.iter().filter_map(|m| m.author_id).collect();
    authors.sort_unstable();
    authors.dedup();
    let names = db::users::names_of(db, &authors).await?;
    let admins: BTreeSet<i64> = db::users::platform_admins(db).await?.into_iter().collect();
    Ok(rows
        .into_iter()
        .map(|m| MessageView {
            id: m.id,
            at: m.at,
            author: m.author_id.and_then(|a| names.get(&a).cloned()),
            by_admin: m.author_id.is_some_and(|a| admins.contains(&a)),
            state: m.state.as_deref().and_then(IncidentState::parse),
            body: m.body,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 4, h, m, 0).unwrap()
    }

    fn span(from: DateTime<Utc>, to: DateTime<Utc>) -> LostSpan {
        LostSpan {
            gpu: "g".into(),
            cause: rules::LossCause::NodeSilent,
            from,
            to,
        }
    }

    #[test]
    fn minutes_another_incident_paid_for_are_left_out() {
        let spans = vec![span(at(10, 0), at(11, 0)), span(at(12, 0), at(12, 30))];
        let left = without(spans, &[(at(10, 20), at(10, 40)), (at(12, 0), at(13, 0))]);
        assert_eq!(
            left.iter().map(|s| (s.from, s.to)).collect::<Vec<_>>(),
            vec![(at(10, 0), at(10, 20)), (at(10, 40), at(11, 0))]
        );
    }

    #[test]
    fn ids_are_read_from_the_stored_list() {
        assert_eq!(parse_ids("3,14, 15"), vec![3, 14, 15]);
        assert!(parse_ids("").is_empty());
    }
}
