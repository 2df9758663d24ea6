//! Watches as a service: make one, list one's own, stop one, book the window held for it, and the
//! job that finds windows for them.
//!
//! The job runs every `watch_job_seconds` and at once when capacity may have come free (a
//! cancellation, a release, an idle reclaim, a GPU added: [`AppState::freed`]). For each watch
//! still watching, oldest first, it searches the watch's span with the booking engine's own
//! search; a window found is *held* for [`HOLD`] and its watcher told at once, through every
//! channel they enabled. Several watchers may be told of the same window: the first to book it
//! gets it (the booking engine claims the hold under the GPUs' locks), the others' holds are
//! lost and they keep watching. A hold nobody books lapses; the watch then waits for a different
//! window. Every hold, and how it ended, stays recorded in `watch_offers`.

use crate::backend::auth::actor::Actor;
use crate::backend::clock::Clock;
use crate::backend::db::reservations::bookable_of_model;
use crate::backend::db::watches::{NewOffer, NewWatch, request_of};
use crate::backend::db::{self, begin_write};
use crate::backend::entity::{watch, watch_offer};
use crate::backend::notify;
use crate::backend::reservations::{ShareInput, latest_start, parse_time, place};
use crate::backend::state::AppState;
use crate::domain::audit::AuditAction;
use crate::domain::notify::NewEvent;
use crate::domain::problem::Problem;
use crate::domain::reservation::{NewReservation, Reservation, SlotOffer, Target};
use crate::domain::schedule::{Share, Window};
use crate::domain::watch::{
    HOLD, MAX_OPEN_WATCHES, OfferOutcome, Watch, WatchLimits, WatchRequest, WatchState,
};
use crate::error::AppError;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr};
use serde::{Deserialize, Serialize};

/// Most watches a list shows.
pub const LIST_LIMIT: u64 = 100;

/// A watch as a form or the API sends it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchForm {
    /// The GPU model.
    pub model: String,
    /// GPUs on one node (default 1).
    #[serde(default)]
    pub count: Option<u32>,
    /// Share of each (default whole).
    #[serde(default)]
    pub share: Option<ShareInput>,
    /// Length in hours (quarter hours: 1.5).
    pub hours: f64,
    /// Earliest start, RFC 3339.
    pub from: String,
    /// Latest end, RFC 3339.
    pub to: String,
    /// Book for this team (default: personal).
    #[serde(default)]
    pub team_id: Option<i64>,
}

/// What one run of the job did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Windows found and held (one per watcher told).
    pub offered: u32,
    /// Holds that ended unused.
    pub lapsed: u64,
    /// Watches that expired.
    pub expired: u32,
}

fn invalid(field: &str, problem: Problem) -> AppError {
    AppError::invalid(field, problem)
}

/// The watch `form` describes, checked.
fn read_form(
    state: &AppState,
    form: &WatchForm,
    now: DateTime<Utc>,
) -> Result<WatchRequest, AppError> {
    let model = form.model.trim();
    if model.is_empty() {
        return Err(invalid("model", Problem::NoModel));
    }
    let minutes = form.hours * 60.0;
    let max_minutes = state.portal.booking.max_length.num_minutes();
    #[expect(clippy::cast_precision_loss, reason = "minutes are small")]
    let in_range = minutes.is_finite() && minutes >= 15.0 && minutes <= max_minutes as f64;
    #[expect(clippy::cast_possible_truncation, reason = "checked to be in range")]
    let whole = minutes.round() as i64;
    if !in_range || (minutes - minutes.round()).abs() > 1e-6 {
        return Err(invalid(
            "hours",
            Problem::BadLength {
                days: state.portal.booking.max_length.num_days(),
            },
        ));
    }
    let share = match &form.share {
        Some(share) => share.parse()?,
        None => Share::Whole,
    };
    let request = WatchRequest {
        model: model.to_owned(),
        count: form.count.unwrap_or(1),
        share,
        length: TimeDelta::minutes(whole),
        from: parse_time("from", &form.from)?,
        to: parse_time("to", &form.to)?,
    };
    let limits = WatchLimits {
        max_length: state.portal.booking.max_length,
        latest_start: latest_start(state, now),
        horizon_weeks: state.portal.booking.horizon.num_weeks(),
    };
    request
        .check(&limits, now)
        .map_err(|(field, problem)| AppError::Validation { field, problem })?;
    Ok(request)
}

/// Makes a watch for `actor`, and looks for a window for it at once.
#[tracing::instrument(skip_all, fields(user.id = actor.user.id))]
pub async fn create(state: &AppState, actor: &Actor, form: &WatchForm) -> Result<Watch, AppError> {
    let now = state.now();
    let request = read_form(state, form, now)?;
    if let Some(team_id) = form.team_id {
        crate::backend::team_access::access(&state.db, actor, team_id).await?;
    }
    if bookable_of_model(&state.db, &request.model, request.share)
        .await?
        .is_empty()
    {
        return Err(invalid(
            "model",
            Problem::NoGpuOfModel {
                model: request.model.clone(),
            },
        ));
    }
    let txn = begin_write(&state.db).await?;
    let open = db::watches::open_count(&txn, actor.user.id).await?;
    if usize::try_from(open).unwrap_or(usize::MAX) >= MAX_OPEN_WATCHES {
        return Err(AppError::Conflict(Problem::TooManyWatches {
            max: MAX_OPEN_WATCHES,
        }));
    }
    let id = db::watches::insert(
        &txn,
        &NewWatch {
            user_id: actor.user.id,
            team_id: form.team_id,
            request: &request,
            now,
        },
    )
    .await?;
    txn.commit().await?;
    tracing::info!(watch.id = id, model = %request.model, "watch made");
    // A window that is free already is offered at once. The watch is made either way: a failed
    // search is logged, and the job runs again soon.
    match run(&state.db, state.clock.as_ref(), latest_start(state, now)).await {
        Ok(_) => state.wake.poke(),
        Err(err) => {
            tracing::warn!(watch.id = id, error = %err, "watch made; its first search failed")
        }
    }
    one(state, actor, id).await
}

/// `actor`'s watches, newest first.
pub async fn mine(state: &AppState, actor: &Actor) -> Result<Vec<Watch>, AppError> {
    let rows = db::watches::of_user(&state.db, actor.user.id, LIST_LIMIT).await?;
    Ok(views(&state.db, rows).await?)
}

/// `actor`'s watch `id` (anyone else's: not found), read alone.
pub async fn one(state: &AppState, actor: &Actor, id: i64) -> Result<Watch, AppError> {
    let not_found = || AppError::NotFound(format!("watch {id}"));
    let watch = db::watches::of_id(&state.db, id)
        .await?
        .filter(|w| w.user_id == actor.user.id)
        .ok_or_else(not_found)?;
    let offer = db::watches::last_offers(&state.db, &[id])
        .await?
        .remove(&id);
    views(&state.db, vec![(watch, offer)])
        .await?
        .pop()
        .ok_or_else(not_found)
}

async fn views(
    db: &impl ConnectionTrait,
    rows: Vec<(watch::Model, Option<watch_offer::Model>)>,
) -> Result<Vec<Watch>, DbErr> {
    let nodes: Vec<i64> = rows
        .iter()
        .filter_map(|(_, offer)| offer.as_ref().map(|o| o.node_id))
        .collect();
    let names = db::watches::node_names(db, &nodes).await?;
    let teams: Vec<i64> = rows.iter().filter_map(|(w, _)| w.team_id).collect();
    let team_names: std::collections::HashMap<i64, String> =
        db::env_profiles::team_names(db, &teams)
            .await?
            .into_iter()
            .collect();
    let mut out = Vec::with_capacity(rows.len());
    for (row, offer) in rows {
        let Some(request) = request_of(&row) else {
            continue;
        };
        let offer = match offer {
            Some(offer) => {
                let name = names.get(&offer.node_id).cloned().unwrap_or_default();
                Some(db::watches::offer_of(&offer, name)?)
            }
            None => None,
        };
        out.push(Watch {
            id: row.id,
            model: request.model,
            count: request.count,
            share: request.share,
            length_minutes: request.length.num_minutes(),
            from: request.from,
            to: request.to,
            team: row
                .team_id
                .map(|id| (id, team_names.get(&id).cloned().unwrap_or_default())),
            state: WatchState::parse(&row.state).unwrap_or(WatchState::Expired),
            created_at: row.created_at,
            offer,
            reservation_id: row.reservation_id,
        });
    }
    Ok(out)
}

/// Stops `actor`'s watch `id` (a window held for it is let go).
#[tracing::instrument(skip_all, fields(watch.id = id, user.id = actor.user.id))]
pub async fn cancel(state: &AppState, actor: &Actor, id: i64) -> Result<Watch, AppError> {
    let now = state.now();
    let txn = begin_write(&state.db).await?;
    let watch = db::watches::lock_watch(&txn, id)
        .await?
        .filter(|w| w.user_id == actor.user.id)
        .ok_or_else(|| AppError::NotFound(format!("watch {id}")))?;
    if !db::watches::close(&txn, watch.id, WatchState::Cancelled, now, None).await? {
        return Err(AppError::Conflict(Problem::WatchClosed { id }));
    }
    db::watches::let_go(&txn, id).await?;
    txn.commit().await?;
    tracing::info!(watch.id = id, "watch stopped");
    one(state, actor, id).await
}

/// Books the window held for `actor`'s watch `id`: the one-click booking its notice leads to.
/// Another watcher who booked it first: 409 `window_taken` (the watch goes on watching).
#[tracing::instrument(skip_all, fields(watch.id = id, user.id = actor.user.id))]
pub async fn book(state: &AppState, actor: &Actor, id: i64) -> Result<Reservation, AppError> {
    let now = state.now();
    let watch = db::watches::of_id(&state.db, id)
        .await?
        .filter(|w| w.user_id == actor.user.id)
        .ok_or_else(|| AppError::NotFound(format!("watch {id}")))?;
    if watch.state != WatchState::Watching.as_str() {
        return Err(AppError::Conflict(Problem::WatchClosed { id }));
    }
    let offer = db::watches::last_offers(&state.db, &[id])
        .await?
        .remove(&id)
        .ok_or(AppError::Conflict(Problem::NoWindowHeld { id }))?;
    match offer.outcome.as_deref().and_then(OfferOutcome::parse) {
        Some(OfferOutcome::Lost) => return Err(AppError::Conflict(Problem::WindowTaken)),
        Some(_) => return Err(AppError::Conflict(Problem::NoWindowHeld { id })),
        None if offer.hold_until <= now => {
            return Err(AppError::Conflict(Problem::NoWindowHeld { id }));
        }
        None => {}
    }
    let share = u8::try_from(offer.quarters)
        .ok()
        .and_then(Share::from_quarters)
        .unwrap_or(Share::Whole);
    let window = Window::new(offer.start_at, offer.end_at)
        .map_err(|err| AppError::internal(DbErr::Custom(err.to_string())))?;
    let request = NewReservation {
        owner_id: actor.user.id,
        owner_name: Some(actor.user.name.clone()),
        target: Target::Gpus(db::watches::gpu_ids_of(&offer)),
        share,
        window,
        charge: state
            .portal
            .charge
            .mode(None)
            .map_err(|problem| invalid("charge", problem))?,
        team_id: watch.team_id,
        priority: None,
        platform_admin: actor.require_platform_admin().is_ok(),
        profile_version_id: crate::backend::env_profiles::for_booking(&state.db, &actor.user, None)
            .await?,
        through_watch: Some((id, offer.id)),
        start_early: false,
        card_id: None,
    };
    let booked = place::place(
        &state.db,
        &request,
        &crate::backend::reservations::terms(state, now),
        None,
    )
    .await;
    let reservation = match booked {
        Ok(reservation) => reservation,
        // Another watcher's booking got there first.
        Err(AppError::Clash(_)) => return Err(AppError::Conflict(Problem::WindowTaken)),
        Err(err) => return Err(err),
    };
    state.wake.poke();
    tracing::info!(
        watch.id = id,
        reservation.id = reservation.id,
        "watched window booked"
    );
    Ok(reservation)
}

/// Under the GPUs' locks, in the booking's transaction: the hold `offer_id` of `owner_id`'s watch
/// `watch_id` is still theirs to book.
pub(crate) async fn claim(
    txn: &DatabaseTransaction,
    owner_id: i64,
    watch_id: i64,
    offer_id: i64,
    now: DateTime<Utc>,
) -> Result<watch_offer::Model, AppError> {
    let watch = db::watches::lock_watch(txn, watch_id)
        .await?
        .filter(|w| w.user_id == owner_id)
        .ok_or_else(|| AppError::NotFound(format!("watch {watch_id}")))?;
    if watch.state != WatchState::Watching.as_str() {
        return Err(AppError::Conflict(Problem::WatchClosed { id: watch_id }));
    }
    let offer = db::watches::lock_offer(txn, watch_id, offer_id)
        .await?
        .ok_or(AppError::Conflict(Problem::NoWindowHeld { id: watch_id }))?;
    match offer.outcome.as_deref().and_then(OfferOutcome::parse) {
        Some(OfferOutcome::Lost) => Err(AppError::Conflict(Problem::WindowTaken)),
        Some(_) => Err(AppError::Conflict(Problem::NoWindowHeld { id: watch_id })),
        None if offer.hold_until <= now => {
            Err(AppError::Conflict(Problem::NoWindowHeld { id: watch_id }))
        }
        None => Ok(offer),
    }
}

/// In the booking's transaction: the held window `offer` became reservation `reservation_id`; its
/// watch is served, the other watchers' holds on it are lost, and it is audited.
pub(crate) async fn served(
    txn: &DatabaseTransaction,
    offer: &watch_offer::Model,
    reservation_id: i64,
    owner_id: i64,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let lost = db::watches::settle_booked(txn, offer, reservation_id, now).await?;
    db::watches::close(
        txn,
        offer.watch_id,
        WatchState::Served,
        now,
        Some(reservation_id),
    )
    .await?;
    db::audit::append(
        txn,
        db::audit::NewEntry {
            at: now,
            actor_id: Some(owner_id),
            action: AuditAction::WatchBooked,
            target_kind: "watch",
            target_id: offer.watch_id.to_string(),
            team_id: None,
        },
        None::<&()>,
        Some(&serde_json::json!({
            "reservation": reservation_id,
            "offer": offer.id,
            "start": offer.start_at,
            "end": offer.end_at,
            "gpus": db::watches::gpu_ids_of(offer),
            "held_since": offer.created_at,
            "watches_that_lost": lost,
        })),
    )
    .await?;
    Ok(())
}

/// Lapses ended holds, expires watches no window can answer any more, and looks for a window for
/// every watch still watching that holds none, oldest watch first. A hold runs from the moment
/// it is made (`clock` read again), not from the run's start: a run over a large fleet takes a
/// while, and a watcher gets the whole hold.
#[tracing::instrument(skip_all)]
pub async fn run(
    db: &DatabaseConnection,
    clock: &dyn Clock,
    latest_start: DateTime<Utc>,
) -> Result<Outcome, DbErr> {
    let now = clock.now();
    let mut outcome = Outcome::default();
    let txn = begin_write(db).await?;
    outcome.lapsed = db::watches::lapse(&txn, now).await?;
    txn.commit().await?;
    let watching = db::watches::watching(db).await?;
    if watching.is_empty() {
        return Ok(outcome);
    }
    let ids: Vec<i64> = watching.iter().map(|w| w.id).collect();
    let last = db::watches::last_offers(db, &ids).await?;
    for watch in watching {
        let Some(request) = request_of(&watch) else {
            continue;
        };
        if request.expired(now) {
            let txn = begin_write(db).await?;
            if db::watches::close(&txn, watch.id, WatchState::Expired, now, None).await? {
                outcome.expired += 1;
            }
            txn.commit().await?;
            continue;
        }
        if last.get(&watch.id).is_some_and(|o| holds(o, now)) {
            continue;
        }
        let Some(found) = find_window(db, &request, now, latest_start).await? else {
            continue;
        };
        if hold(db, &watch, &found, now, clock.now()).await? {
            outcome.offered += 1;
        }
    }
    Ok(outcome)
}

/// Whether `offer` still holds its window at `now`.
fn holds(offer: &watch_offer::Model, now: DateTime<Utc>) -> bool {
    offer.outcome.is_none() && offer.hold_until > now
}

/// Whether `found` is the window `offer` held and let lapse: the same window again, unbooked,
/// which the watcher has seen.
fn seen(offer: &watch_offer::Model, found: &SlotOffer) -> bool {
    offer.outcome.as_deref() == Some(OfferOutcome::Lapsed.as_str())
        && offer.start_at == found.window.start()
        && db::watches::gpu_ids_of(offer) == sorted(&found.gpu_ids)
}

fn sorted(ids: &[i64]) -> Vec<i64> {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids
}

/// The earliest window answering `request`, by the booking engine's search (held windows count
/// as free: every watcher a window fits is told of it).
async fn find_window(
    db: &DatabaseConnection,
    request: &WatchRequest,
    now: DateTime<Utc>,
    latest_start: DateTime<Utc>,
) -> Result<Option<SlotOffer>, DbErr> {
    let candidates = bookable_of_model(db, &request.model, request.share).await?;
    let count = usize::try_from(request.count).unwrap_or(usize::MAX);
    let last_start = request.latest_start().min(latest_start);
    let from = request.search_from(now);
    if candidates.len() < count || last_start < from {
        return Ok(None);
    }
    let found = crate::backend::reservations::offers::find_offers(
        db,
        &candidates,
        count,
        request.share,
        request.length,
        from,
        last_start,
        1,
    )
    .await?;
    Ok(found
        .into_iter()
        .next()
        .filter(|offer| request.answered_by(&offer.window)))
}

/// Holds `found` for `watch` from `held_at` and tells its watcher, in one transaction that
/// re-reads the watch under lock: a watch stopped meanwhile, holding a window another run found
/// (judged at the run's `now`, the time its data was read at), or whose hold of this very window
/// lapsed meanwhile, is left alone.
async fn hold(
    db: &DatabaseConnection,
    watch: &watch::Model,
    found: &SlotOffer,
    now: DateTime<Utc>,
    held_at: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let txn = begin_write(db).await?;
    let still = db::watches::lock_watch(&txn, watch.id)
        .await?
        .is_some_and(|w| w.state == WatchState::Watching.as_str());
    // Another run (another replica, or the run a change started) may have held one meanwhile,
    // and it may have lapsed since.
    let last = db::watches::last_offers(&txn, &[watch.id])
        .await?
        .remove(&watch.id);
    if !still || last.is_some_and(|o| holds(&o, now) || seen(&o, found)) {
        txn.rollback().await?;
        return Ok(false);
    }
    let hold_until = held_at + HOLD;
    let offer_id = db::watches::insert_offer(
        &txn,
        &NewOffer {
            watch_id: watch.id,
            node_id: found.node_id,
            gpu_ids: found.gpu_ids.clone(),
            share: found.share,
            window: found.window,
            price_minor: found.price_minor,
            now: held_at,
            hold_until,
        },
    )
    .await?;
    notify::record(
        &txn,
        &[NewEvent::watch_offer(
            watch.user_id,
            watch.id,
            offer_id,
            found,
            hold_until,
            held_at,
        )],
    )
    .await?;
    txn.commit().await?;
    tracing::info!(
        watch.id = watch.id,
        offer.id = offer_id,
        start = %found.window.start(),
        "window found for a watch and held"
    );
    Ok(true)
}

/// What the watches page offers to choose from: the fleet's models and the caller's teams.
pub async fn choices(
    state: &AppState,
    actor: &Actor,
) -> Result<(Vec<String>, Vec<(i64, String)>), AppError> {
    let models = db::inventory::list_models(&state.db).await?;
    let teams = crate::backend::env_profiles::teams_to_share_with(state, actor).await?;
    Ok((models, teams))
}
