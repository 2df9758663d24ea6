//! Telling people: services record events in the transaction of the change that causes them
//! ([`record`]); the worker ([`run`]) hands each due event to its recipients' inboxes, once,
//! whichever replica gets to it first; a user reads and marks their inbox.
//!
//! The worker runs every few seconds on every replica and is woken at once after a change that
//! recorded events ([`Wake`]). A run claims the events due in one short write transaction (row
//! locks that other replicas skip on PostgreSQL, the write lock on SQLite) and hands them all
//! out in it, so a crash mid-run loses nothing and a replica never hands out an event another
//! one already has.

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::entity::{notification_event, reservation};
use crate::backend::mail::MailError;
use crate::backend::state::AppState;
use crate::domain::notify::{
    Audience, Channel, ChannelChoice, DELIVERY_LEASE, DeliveryCounts, DeliveryRow, DeliveryStatus,
    EventKind, InboxItem, NewEvent, NotificationSettings, WEBHOOK_FAILURES_TO_DISABLE, retry_after,
};
use crate::domain::reservation::PaymentStatus;
use crate::error::AppError;
use chrono::{DateTime, Utc};
use sea_orm::{DatabaseTransaction, DbErr};
use std::collections::{HashMap, HashSet};

/// Most events one run hands out.
const BATCH: u64 = 500;

/// Wakes the worker when a change recorded events, so a new notice reaches the inbox within
/// moments (the worker gathers a burst of pokes, see `server/src/notify.rs`) rather than at the
/// next tick (one per application).
#[derive(Debug, Default)]
pub struct Wake(tokio::sync::Notify);

impl Wake {
    /// After a commit that recorded events.
    pub fn poke(&self) {
        self.0.notify_one();
    }

    /// Waits for the next poke (or returns at once when one came since the last wait).
    pub async fn poked(&self) {
        self.0.notified().await;
    }
}

/// Records `events` in `txn`, the transaction of the change that causes them: they exist if and
/// only if the change commits. An event whose key is already recorded is left as it is.
pub async fn record(txn: &DatabaseTransaction, events: &[NewEvent]) -> Result<(), DbErr> {
    db::notify::enqueue(txn, events).await
}

/// Reservation `id` no longer holds its GPUs: its reminders not sent yet are dropped and
/// `events` (what its owner is told) recorded, in the transaction that withdrew it.
pub async fn withdrawn(
    txn: &DatabaseTransaction,
    id: i64,
    events: &[NewEvent],
) -> Result<(), DbErr> {
    db::notify::drop_reminders(txn, id).await?;
    record(txn, events).await
}

/// What one run of the worker did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Events handed to their recipients.
    pub handed_out: u32,
    /// Reminders dropped because their reservation no longer holds its GPUs.
    pub dropped: u32,
}

/// Hands every event due at `now` (at most [`BATCH`] a run) to its recipients' inboxes, and
/// queues an e-mail for each recipient who wants one of its kind (when the portal has an e-mail
/// channel) and a call to each webhook that wants it, in one transaction: a burst of bookings
/// costs one run of a few statements, not a transaction per event. A reminder whose reservation
/// no longer holds its GPUs is dropped instead.
pub async fn run(state: &AppState, now: DateTime<Utc>) -> Result<Outcome, DbErr> {
    let db = &state.db;
    let due = db::notify::due_ids(db, now, BATCH).await?;
    if due.is_empty() {
        return Ok(Outcome::default());
    }
    let txn = db::begin_write(db).await?;
    // Those another replica holds or has handed out meanwhile are left out.
    let events = db::notify::claim(&txn, &due).await?;
    if events.is_empty() {
        txn.rollback().await?;
        return Ok(Outcome::default());
    }
    let reminded: Vec<i64> = events
        .iter()
        .filter(|event| is_reminder(event.kind))
        .filter_map(|event| event.reservation_id)
        .collect();
    let holding: HashSet<i64> = if reminded.is_empty() {
        HashSet::new()
    } else {
        db::reservations::rows(&txn, &reminded)
            .await?
            .into_iter()
            .filter(|row| {
                row.status == reservation::Status::Confirmed
                    && row.payment_status != PaymentStatus::AwaitingApproval
            })
            .map(|row| row.id)
            .collect()
    };
    let holds = |event: &notification_event::Model| match event.reservation_id {
        Some(id) if is_reminder(event.kind) => holding.contains(&id),
        _ => true,
    };
    // Who each event goes to (nobody for a dropped reminder): its user, or its team's admins.
    let audiences: Vec<Option<Audience>> = events
        .iter()
        .map(|event| match (holds(event), event.user_id, event.team_id) {
            (false, _, _) | (true, None, None) => None,
            (true, Some(user), _) => Some(Audience::User(user)),
            (true, None, Some(team)) => Some(Audience::TeamAdmins(team)),
        })
        .collect();
    // Each team's admins and its hooks, read once per team however many of its events.
    let mut admins: HashMap<i64, Vec<i64>> = HashMap::new();
    let mut hooks_of_team: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
    for audience in &audiences {
        if let Some(Audience::TeamAdmins(team)) = *audience
            && !admins.contains_key(&team)
        {
            admins.insert(team, db::notify::team_admins(&txn, team).await?);
            let hooks = db::webhooks::active_of_team(&txn, team).await?;
            hooks_of_team.insert(team, hooks.iter().map(|h| (h.id, h.user_id)).collect());
        }
    }
    // Each recipient's choice for each kind, else the kind's default.
    let mut users: Vec<i64> = audiences
        .iter()
        .flat_map(|audience| recipients(audience, &admins))
        .copied()
        .collect();
    users.sort_unstable();
    users.dedup();
    let kinds: Vec<EventKind> = events
        .iter()
        .map(|event| event.kind)
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let chosen: HashMap<(i64, EventKind), ChannelChoice> =
        db::notify::preferences_for(&txn, &users, &kinds)
            .await?
            .into_iter()
            .map(|row| ((row.user_id, row.kind), row.choice()))
            .collect();
    let choice = |user: i64, kind: EventKind| {
        chosen
            .get(&(user, kind))
            .copied()
            .unwrap_or_else(|| ChannelChoice::default_for(kind))
    };
    // A user's own hooks when they want this kind there; a team's hooks get its notices.
    let wants_hooks =
        |event: &notification_event::Model, audience: &Option<Audience>| match *audience {
            Some(Audience::User(user)) => choice(user, event.kind).webhook.then_some(user),
            _ => None,
        };
    let mut hook_users: Vec<i64> = events
        .iter()
        .zip(&audiences)
        .filter_map(|(event, audience)| wants_hooks(event, audience))
        .collect();
    hook_users.sort_unstable();
    hook_users.dedup();
    let mut hooks_of_user: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
    for hook in db::webhooks::active_of_users(&txn, &hook_users).await? {
        hooks_of_user
            .entry(hook.user_id)
            .or_default()
            .push((hook.id, hook.user_id));
    }
    let (mut inbox, mut email, mut calls) = (Vec::new(), Vec::new(), Vec::new());
    for (event, audience) in events.iter().zip(&audiences) {
        for user in recipients(audience, &admins) {
            let wants = choice(*user, event.kind);
            if wants.inbox {
                inbox.push((event.id, *user));
            }
            if wants.email && state.mail.is_some() {
                email.push((event.id, *user, *user));
            }
        }
        let hooks = match *audience {
            Some(Audience::TeamAdmins(team)) => hooks_of_team.get(&team),
            _ => wants_hooks(event, audience).and_then(|user| hooks_of_user.get(&user)),
        };
        calls.extend(
            hooks
                .into_iter()
                .flatten()
                .map(|(hook, owner)| (event.id, *hook, *owner)),
        );
    }
    let handed: Vec<i64> = events.iter().map(|event| event.id).collect();
    db::notify::hand_out(&txn, &handed, &inbox, now).await?;
    db::notify::queue_deliveries(&txn, Channel::Email, &email, now).await?;
    db::notify::queue_deliveries(&txn, Channel::Webhook, &calls, now).await?;
    txn.commit().await?;
    let kept = events.iter().filter(|event| holds(event)).count();
    Ok(Outcome {
        handed_out: u32::try_from(kept).unwrap_or(u32::MAX),
        dropped: u32::try_from(events.len() - kept).unwrap_or(u32::MAX),
    })
}

/// The users `audience` names: its user, or its team's admins (read into `admins`).
fn recipients<'a>(audience: &'a Option<Audience>, admins: &'a HashMap<i64, Vec<i64>>) -> &'a [i64] {
    match audience {
        None => &[],
        Some(Audience::User(user)) => std::slice::from_ref(user),
        Some(Audience::TeamAdmins(team)) => admins.get(team).map_or(&[], Vec::as_slice),
    }
}

/// Whether events of `kind` remind of a reservation's start or end (dropped once it no longer
/// holds its GPUs).
fn is_reminder(kind: EventKind) -> bool {
    matches!(kind, EventKind::StartingSoon | EventKind::EndingSoon)
}

/// What one run of the sender did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// Messages the recipient's server accepted.
    pub sent: u32,
    /// Tries that failed and will be made again later.
    pub retried: u32,
    /// Messages given up (refused for good, or out of tries).
    pub failed: u32,
}

/// Sends every delivery due now (by the state's clock) that no other sender holds (e-mails when
/// the portal has an e-mail channel, webhook calls). Each is taken with a short conditional
/// update and released with another, so no lock is held while a message goes out; a sender
/// that dies mid-try loses its lease and the delivery is tried again. A failed try is tried
/// again later ([`retry_after`]) until it succeeds or runs out of tries; a webhook that fails
/// [`WEBHOOK_FAILURES_TO_DISABLE`] times in a row is turned off and its owner told.
pub async fn deliver(state: &AppState) -> Result<Sent, DbErr> {
    let mut outcome = Sent::default();
    let db = &state.db;
    for id in db::notify::due_deliveries(db, state.now(), BATCH).await? {
        // The time of this try, not the run's start: a run of slow receivers takes minutes,
        // and a lease counted from its start would run out before its try began (another
        // sender would try the message again while this one sends it).
        let now = state.now();
        let Some(delivery) = db::notify::take_delivery(db, id, now, now + DELIVERY_LEASE).await?
        else {
            continue;
        };
        let event = db::notify::event(db, delivery.event_id).await?;
        let owner = db::users::row(db, delivery.user_id).await?;
        let gone = || MailError {
            permanent: true,
            reason: "the event or its recipient is gone".to_owned(),
        };
        let (result, hook) = match (delivery.channel, &event, &owner) {
            (_, None, _) | (_, _, None) => (Err(gone()), None),
            (Channel::Email, Some(event), Some(owner)) => match state.mail.as_deref() {
                Some(mail) => {
                    let result = match mail.message(
                        delivery.id,
                        event,
                        owner,
                        &state.portal.currency,
                        state.words.as_ref(),
                        now,
                    ) {
                        Ok(message) => mail.mailer.send(message).await,
                        Err(err) => Err(err),
                    };
                    (result, None)
                }
                // E-mail was turned off since it was queued.
                None => (
                    Err(MailError {
                        permanent: true,
                        reason: "e-mail is not set up (smtp_url)".to_owned(),
                    }),
                    None,
                ),
            },
            (Channel::Webhook, Some(event), Some(owner)) => {
                match db::webhooks::row(db, delivery.target_id).await? {
                    Some(hook) if hook.active => {
                        let result =
                            call_webhook(state, &hook, event, owner, delivery.id, now).await;
                        (result, Some(hook))
                    }
                    _ => (
                        Err(MailError {
                            permanent: true,
                            reason: "the webhook was removed or turned off".to_owned(),
                        }),
                        None,
                    ),
                }
            }
        };
        let attempts = u32::try_from(delivery.attempts).unwrap_or(u32::MAX);
        let (status, next_at, error) = match &result {
            Ok(()) => (DeliveryStatus::Sent, None, None),
            Err(err) => match retry_after(attempts).filter(|_| !err.permanent) {
                Some(wait) => (
                    DeliveryStatus::Queued,
                    Some(now + wait),
                    Some(err.reason.clone()),
                ),
                None => (DeliveryStatus::Failed, None, Some(err.reason.clone())),
            },
        };
        if let Some(reason) = &error {
            tracing::info!(delivery.id = id, delivery.attempts = attempts, %reason, ?status, "notice not delivered");
        }
        let end = match hook {
            // The call was made, whatever became of the delivery meanwhile: its hook counts it,
            // first (a failure that turns the hook off gives this delivery up with the rest),
            // in one transaction with the delivery's outcome (a sent call never stays unrecorded
            // to be made again).
            Some(hook) => {
                let txn = db::begin_write(db).await?;
                let turned_off = webhook_outcome(&txn, &hook, error.clone(), now).await?;
                let end = db::notify::finish_delivery(
                    &txn,
                    id,
                    delivery.attempts,
                    status,
                    next_at,
                    error,
                    now,
                )
                .await?;
                txn.commit().await?;
                if turned_off {
                    state.wake.poke();
                }
                end
            }
            None => {
                db::notify::finish_delivery(db, id, delivery.attempts, status, next_at, error, now)
                    .await?
            }
        };
        match end {
            db::notify::TryEnd::Recorded => {}
            db::notify::TryEnd::GivenUp => {
                outcome.failed += 1;
                continue;
            }
            db::notify::TryEnd::Lost => {
                tracing::warn!(delivery.id = id, "a delivery try outlived its lease");
                continue;
            }
        }
        match status {
            DeliveryStatus::Sent => outcome.sent += 1,
            DeliveryStatus::Queued => outcome.retried += 1,
            DeliveryStatus::Failed => outcome.failed += 1,
        }
    }
    Ok(outcome)
}

/// Posts `event` to `hook`, its words in `owner`'s language.
async fn call_webhook(
    state: &AppState,
    hook: &crate::backend::entity::webhook::Model,
    event: &crate::backend::entity::notification_event::Model,
    owner: &crate::backend::entity::user::Model,
    delivery_id: i64,
    now: DateTime<Utc>,
) -> Result<(), MailError> {
    let notice: crate::domain::notify::Notice =
        serde_json::from_str(&event.notice).map_err(|err| MailError {
            permanent: true,
            reason: format!("unreadable notice: {err}"),
        })?;
    let body = crate::backend::webhooks::body(state, event, &notice, owner, now);
    state
        .webhooks
        .post(
            &hook.url,
            &hook.secret,
            event.kind.as_str(),
            delivery_id,
            body,
        )
        .await
        .map_err(|(permanent, reason)| MailError { permanent, reason })
}

/// Counts a webhook call's outcome in `txn`: a success ends its run of failures; the failure
/// that makes [`WEBHOOK_FAILURES_TO_DISABLE`] in a row turns it off, gives up its deliveries
/// still waiting and tells its owner (or the team's admins). Answers whether it turned it off.
async fn webhook_outcome(
    txn: &DatabaseTransaction,
    hook: &crate::backend::entity::webhook::Model,
    error: Option<String>,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let Some(error) = error else {
        db::webhooks::succeeded(txn, hook.id).await?;
        return Ok(false);
    };
    let Some(now_hook) = db::webhooks::failed(txn, hook.id, &error).await? else {
        return Ok(false);
    };
    let failures = u32::try_from(now_hook.failures).unwrap_or(0);
    if failures < WEBHOOK_FAILURES_TO_DISABLE || !db::webhooks::disable(txn, hook.id, now).await? {
        return Ok(false);
    }
    let audience = match now_hook.team_id {
        Some(team) => Audience::TeamAdmins(team),
        None => Audience::User(now_hook.user_id),
    };
    record(
        txn,
        &[NewEvent::webhook_disabled(
            audience, hook.id, &hook.url, &error, now,
        )],
    )
    .await?;
    tracing::warn!(
        webhook.id = hook.id,
        failures,
        "webhook turned off after repeated failures"
    );
    Ok(true)
}

/// A page of the actor's notices, newest first.
pub async fn inbox(
    state: &AppState,
    actor: &Actor,
    page: &crate::domain::paging::PageRequest,
) -> Result<crate::domain::paging::Page<InboxItem>, AppError> {
    Ok(db::notify::inbox(&state.db, actor.user.id, page).await?)
}

/// How many notices the actor has not read (the bell's count).
pub async fn unread(state: &AppState, actor: &Actor) -> Result<u32, AppError> {
    Ok(db::notify::unread(&state.db, actor.user.id).await?)
}

/// Marks the actor's notice `id` read (`None`: every one); another user's notice is not found.
pub async fn mark_read(
    state: &AppState,
    actor: &Actor,
    id: Option<i64>,
    now: DateTime<Utc>,
) -> Result<u64, AppError> {
    let marked = db::notify::mark_read(&state.db, actor.user.id, id, now).await?;
    // Nothing marked: already read, or not the actor's (told apart only then).
    if marked == 0
        && let Some(id) = id
        && !db::notify::owns(&state.db, actor.user.id, id).await?
    {
        return Err(AppError::NotFound(format!("notice {id}")));
    }
    Ok(marked)
}

/// The actor's notification settings: every kind with their choice (or the default).
pub async fn settings(state: &AppState, actor: &Actor) -> Result<NotificationSettings, AppError> {
    let chosen = db::notify::preferences(&state.db, actor.user.id).await?;
    let kinds = EventKind::ALL
        .iter()
        .map(|kind| {
            let choice = chosen
                .iter()
                .find(|row| row.kind == *kind)
                .map_or(ChannelChoice::default_for(*kind), |row| row.choice());
            (*kind, choice)
        })
        .collect();
    Ok(NotificationSettings {
        kinds,
        email_available: state.mail.is_some(),
    })
}

/// Stores the actor's settings from the profile form: `inbox`, `email` and `webhook` name the
/// kinds ticked for each channel (`booking_confirmed`, …); every kind not named is off for that channel. An
/// unknown kind refuses the whole form and changes nothing.
pub async fn save_settings(
    state: &AppState,
    actor: &Actor,
    inbox: &[String],
    email: &[String],
    webhook: &[String],
    now: DateTime<Utc>,
) -> Result<NotificationSettings, AppError> {
    let parse = |field: &'static str, raw: &[String]| {
        raw.iter()
            .map(|raw| {
                EventKind::ALL
                    .into_iter()
                    .find(|kind| kind.as_str() == raw.trim())
                    .ok_or_else(|| {
                        AppError::invalid(
                            field,
                            crate::domain::problem::Problem::UnknownNoticeKind {
                                raw: raw.chars().take(60).collect(),
                            },
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()
    };
    let (inbox, email, webhook) = (
        parse("inbox", inbox)?,
        parse("email", email)?,
        parse("webhook", webhook)?,
    );
    let choices: Vec<_> = EventKind::ALL
        .into_iter()
        .map(|kind| {
            (
                kind,
                ChannelChoice {
                    inbox: inbox.contains(&kind),
                    email: email.contains(&kind),
                    webhook: webhook.contains(&kind),
                },
            )
        })
        .collect();
    let txn = db::begin_write(&state.db).await?;
    db::notify::save_preferences(&txn, actor.user.id, &choices, now).await?;
    txn.commit().await?;
    settings(state, actor).await
}

/// A page of the deliveries, newest first (those with `status` when one is given; `cursor`:
/// after an earlier page), and how many stand where: the platform admins' view of what went out
/// and what did not.
pub async fn deliveries(
    state: &AppState,
    actor: &Actor,
    status: Option<&str>,
    cursor: Option<&str>,
) -> Result<(crate::domain::paging::Page<DeliveryRow>, DeliveryCounts), AppError> {
    actor.require_platform_admin()?;
    let page =
        crate::backend::input::page(crate::domain::paging::ListKind::Deliveries, None, cursor)?;
    let status = match status.map(str::trim).filter(|raw| !raw.is_empty()) {
        None => None,
        Some(raw) => Some(DeliveryStatus::parse(raw).ok_or_else(|| {
            AppError::invalid(
                "status",
                crate::domain::problem::Problem::UnknownDeliveryStatus {
                    raw: raw.chars().take(60).collect(),
                },
            )
        })?),
    };
    let db = &state.db;
    Ok(tokio::try_join!(
        db::notify::delivery_rows(db, status, &page),
        db::notify::delivery_counts(db),
    )?)
}
