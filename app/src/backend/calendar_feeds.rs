//! Calendar feeds: a secret address per user (their bookings) or per team for its admins (the
//! team's bookings) that calendar programs subscribe to, made, replaced and revoked on the
//! profile page; and a single booking as a calendar file ("Add to calendar").
//!
//! The address holds a random token stored only as its hash: it is shown once, when made.
//! A team feed keeps working only while its maker manages the team.

use crate::backend::auth::actor::Actor;
use crate::backend::auth::tokens;
use crate::backend::calendar_file::{self, CalendarEntry};
use crate::backend::db;
use crate::backend::entity::reservation;
use crate::backend::state::AppState;
use crate::backend::team_access;
use crate::domain::notify::{CalendarFeedInfo, FEED_LIMIT, FEED_PAST, ReservationBrief};
use crate::domain::reservation::{PaymentStatus, Reservation};
use crate::error::AppError;
use chrono::{DateTime, Utc};

/// The actor's feeds.
pub async fn feeds(state: &AppState, actor: &Actor) -> Result<Vec<CalendarFeedInfo>, AppError> {
    let rows = db::calendar_feeds::of_user(&state.db, actor.user.id).await?;
    let mut feeds = Vec::with_capacity(rows.len());
    for row in rows {
        let team = match row.team_id {
            Some(id) => db::teams::team_name(&state.db, id)
                .await?
                .map(|name| (id, name)),
            None => None,
        };
        feeds.push(CalendarFeedInfo {
            team,
            created_at: row.created_at,
        });
    }
    Ok(feeds)
}

/// The teams the actor manages (they may make a feed or a webhook of each one's), by id and name.
pub async fn managed_teams(
    state: &AppState,
    actor: &Actor,
) -> Result<Vec<(i64, String)>, AppError> {
    Ok(actor
        .memberships(&state.db)
        .await?
        .into_iter()
        .filter(|team| team.role == crate::domain::team::TeamRole::Admin)
        .map(|team| (team.team_id, team.team_name))
        .collect())
}

/// Makes (or replaces) the actor's feed of their own bookings, or of team `team_id`'s when they
/// manage it; answers its path (`/ical/<token>.ics`), shown this once.
pub async fn create(
    state: &AppState,
    actor: &Actor,
    team_id: Option<i64>,
    now: DateTime<Utc>,
) -> Result<String, AppError> {
    if let Some(team) = team_id {
        team_access::require_manage(&state.db, actor, team).await?;
    }
    let (token, hash) = tokens::generate();
    let txn = db::begin_write(&state.db).await?;
    db::calendar_feeds::replace(&txn, actor.user.id, team_id, &hash, now).await?;
    txn.commit().await?;
    Ok(format!("/ical/{token}.ics"))
}

/// Revokes the actor's feed of their bookings (or of team `team_id`'s): its address stops
/// working at once.
pub async fn revoke(state: &AppState, actor: &Actor, team_id: Option<i64>) -> Result<(), AppError> {
    match db::calendar_feeds::remove(&state.db, actor.user.id, team_id).await? {
        0 => Err(AppError::NotFound("calendar feed".to_owned())),
        _ => Ok(()),
    }
}

/// The calendar behind the address with `token`, its links to Berth under `base` (the portal's
/// address); `NotFound` for an unknown or revoked one, or a team feed whose maker no longer
/// manages the team.
pub async fn feed(
    state: &AppState,
    token: &str,
    base: Option<&str>,
    now: DateTime<Utc>,
) -> Result<String, AppError> {
    let missing = || AppError::NotFound("calendar feed".to_owned());
    let db = &state.db;
    let row = db::calendar_feeds::by_hash(db, &tokens::hash(token))
        .await?
        .ok_or_else(missing)?;
    let user = db::users::row(db, row.user_id).await?.ok_or_else(missing)?;
    let owner = match row.team_id {
        Some(team) => {
            let summary = db::users::find_user(db, user.id)
                .await?
                .ok_or_else(missing)?;
            let maker = Actor::new(summary, None);
            team_access::require_manage(db, &maker, team)
                .await
                .map_err(|_| missing())?;
            None
        }
        None => Some(user.id),
    };
    let rows =
        db::calendar_feeds::bookings(db, owner, row.team_id, now - FEED_PAST, FEED_LIMIT).await?;
    let name = match row.team_id {
        Some(team) => db::teams::team_name(db, team)
            .await?
            .map_or_else(|| "Berth".to_owned(), |team| format!("Berth · {team}")),
        None => format!("Berth · {}", user.name),
    };
    calendar(state, &user, &name, rows, base, now).await
}

/// Reservation `id` as a calendar file, its link to Berth under `base`, for its owner or a
/// platform admin (`NotFound` for anyone else: they cannot tell it exists).
pub async fn reservation_file(
    state: &AppState,
    actor: &Actor,
    id: i64,
    base: Option<&str>,
    now: DateTime<Utc>,
) -> Result<String, AppError> {
    let db = &state.db;
    let row = db::reservations::row(db, id)
        .await?
        .filter(|row| row.owner_id == actor.user.id || actor.require_platform_admin().is_ok())
        .ok_or_else(|| AppError::NotFound(format!("reservation {id}")))?;
    let reader = db::users::row(db, actor.user.id)
        .await?
        .ok_or(AppError::Unauthorized)?;
    calendar(state, &reader, "Berth", vec![row], base, now).await
}

/// `rows` as an iCalendar document named `name`, summaries in `reader`'s language.
async fn calendar(
    state: &AppState,
    reader: &crate::backend::entity::user::Model,
    name: &str,
    rows: Vec<reservation::Model>,
    base: Option<&str>,
    now: DateTime<Utc>,
) -> Result<String, AppError> {
    let sequences: Vec<(i64, i32)> = rows.iter().map(|r| (r.id, r.calendar_sequence)).collect();
    let views: Vec<Reservation> = db::reservations::views(&state.db, rows, now).await?;
    // The UID's host comes from the configured address only, so it never changes with the
    // address a calendar happened to use.
    let host = state
        .portal
        .public_url
        .as_deref()
        .map_or_else(|| "berth.local".to_owned(), crate::backend::mail::host_of);
    let briefs: Vec<(ReservationBrief, &Reservation)> =
        views.iter().map(|r| (ReservationBrief::of(r), r)).collect();
    let entries: Vec<CalendarEntry<'_>> = briefs
        .iter()
        .map(|(brief, view)| CalendarEntry {
            reservation: brief,
            summary: state.words.calendar_summary(
                reader.locale.as_deref(),
                brief.gpus,
                &brief.model,
                &brief.node,
            ),
            url: base
                .map(|base| format!("{base}/reservations"))
                .unwrap_or_default(),
            sequence: sequences
                .iter()
                .find(|(id, _)| *id == view.id)
                .map_or(0, |(_, seq)| u32::try_from(*seq).unwrap_or(0)),
            cancelled: view.status == crate::domain::reservation::ReservationStatus::Cancelled,
            tentative: view.payment_status == PaymentStatus::AwaitingApproval,
        })
        .collect();
    Ok(calendar_file::calendar(name, &host, &entries, now))
}
