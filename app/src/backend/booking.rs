//! The booking service shared by the server functions (pages) and the JSON API: parses raw input
//! into domain types with field-level errors, checks who may do what, and calls `db::reservations`.

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::db::reservations::SlotQuery;
use crate::backend::state::AppState;
use crate::backend::viewer;
use crate::domain::date_range;
use crate::domain::payment::ChargeMode;
use crate::domain::problem::Problem;
use crate::domain::reservation::{
    BlockKind, BusyBlock, GpuAvailability, NewReservation, Reservation, SlotOffer, Target,
};
use crate::domain::schedule::{Share, Window, WindowError, slot_ceil};
use crate::error::AppError;
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// Most GPUs one reservation may hold.
pub const MAX_GPUS_PER_RESERVATION: usize = 64;
/// Most offers "find a slot" returns.
pub const MAX_OFFERS: usize = 5;

/// A share as the API writes it: `1`, `0.5`, `0.25`, or `"half"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ShareInput {
    /// A number.
    Number(f64),
    /// A word or number as text.
    Text(String),
}

impl ShareInput {
    fn parse(&self) -> Result<Share, AppError> {
        let share = match self {
            ShareInput::Number(n) if (*n - 1.0).abs() < f64::EPSILON => Some(Share::Whole),
            ShareInput::Number(n) if (*n - 0.5).abs() < f64::EPSILON => Some(Share::Half),
            ShareInput::Number(n) if (*n - 0.25).abs() < f64::EPSILON => Some(Share::Quarter),
            ShareInput::Number(_) => None,
            ShareInput::Text(text) => Share::parse(text),
        };
        share.ok_or_else(|| invalid("share", Problem::BadShare))
    }
}

/// A booking as sent by a form or the API, before validation.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BookingForm {
    /// Exact GPUs (one node, one model) …
    #[serde(default)]
    pub gpu_ids: Option<Vec<i64>>,
    /// … or a model and a count, and Berth picks GPUs on one node.
    #[serde(default)]
    pub model: Option<String>,
    /// How many GPUs of `model`.
    #[serde(default)]
    pub count: Option<u32>,
    /// Share of each GPU (default: whole).
    #[serde(default)]
    pub share: Option<ShareInput>,
    /// RFC 3339 start.
    pub start: String,
    /// RFC 3339 end.
    pub end: String,
    /// `at_booking` or `before_start` (default: the portal's).
    #[serde(default)]
    pub charge: Option<String>,
    /// Book for this team (paid from its wallet); absent: a personal booking.
    #[serde(default)]
    pub team_id: Option<i64>,
    /// Priority class: `production`, `training`, `development` or `batch` (default: the team's;
    /// development when personal).
    #[serde(default)]
    pub priority: Option<String>,
}

fn invalid(field: &str, problem: Problem) -> AppError {
    AppError::invalid(field, problem)
}

/// Parses an RFC 3339 timestamp of field `field`, in the years Berth accepts.
pub fn parse_time(field: &str, raw: &str) -> Result<DateTime<Utc>, AppError> {
    let at = DateTime::parse_from_rfc3339(raw.trim())
        .map(|at| at.with_timezone(&Utc))
        .map_err(|_| {
            invalid(
                field,
                Problem::NotATime {
                    raw: raw.to_owned(),
                },
            )
        })?;
    date_range::check_instant(at).map_err(|err| invalid(field, err.into()))
}

fn window_error(err: WindowError) -> AppError {
    invalid(err.field(), err.problem())
}

/// Validates a booking form at `now`.
pub fn parse_booking(
    form: &BookingForm,
    owner_id: i64,
    state: &AppState,
    now: DateTime<Utc>,
) -> Result<NewReservation, AppError> {
    let start = parse_time("start", &form.start)?;
    let end = parse_time("end", &form.end)?;
    let window =
        Window::for_booking(start, end, now, state.portal.booking).map_err(window_error)?;
    let share = match &form.share {
        Some(share) => share.parse()?,
        None => Share::Whole,
    };
    let target = match (&form.gpu_ids, &form.model) {
        (Some(ids), None) => {
            let mut unique = ids.clone();
            unique.sort_unstable();
            unique.dedup();
            if unique.is_empty() {
                return Err(invalid("gpu_ids", Problem::NoGpu));
            }
            if unique.len() != ids.len() {
                return Err(invalid("gpu_ids", Problem::GpuTwice));
            }
            if unique.len() > MAX_GPUS_PER_RESERVATION {
                return Err(invalid(
                    "gpu_ids",
                    Problem::TooManyGpus {
                        max: MAX_GPUS_PER_RESERVATION,
                    },
                ));
            }
            Target::Gpus(unique)
        }
        (None, Some(model)) => {
            let model = model.trim();
            if model.is_empty() {
                return Err(invalid("model", Problem::NoModel));
            }
            let count = form.count.unwrap_or(1);
            if count == 0 || usize::try_from(count).unwrap_or(usize::MAX) > MAX_GPUS_PER_RESERVATION
            {
                return Err(invalid(
                    "count",
                    Problem::CountRange {
                        max: MAX_GPUS_PER_RESERVATION,
                    },
                ));
            }
            Target::Model {
                model: model.to_owned(),
                count,
            }
        }
        _ => {
            return Err(invalid("gpu_ids", Problem::GpusOrModel));
        }
    };
    let charge = form
        .charge
        .as_deref()
        .map(str::trim)
        .filter(|raw| !raw.is_empty())
        .map(|raw| {
            ChargeMode::parse(raw).ok_or_else(|| {
                invalid(
                    "charge",
                    Problem::UnknownChargeMode {
                        raw: raw.to_owned(),
                    },
                )
            })
        })
        .transpose()?;
    let charge = state
        .portal
        .charge
        .mode(charge)
        .map_err(|problem| invalid("charge", problem))?;
    let priority = form
        .priority
        .as_deref()
        .map(str::trim)
        .filter(|raw| !raw.is_empty())
        .map(|raw| {
            crate::domain::quota::Priority::parse(raw).ok_or_else(|| {
                invalid(
                    "priority",
                    Problem::Unreadable {
                        detail: format!("`{raw}`: use production, training, development or batch"),
                    },
                )
            })
        })
        .transpose()?;
    Ok(NewReservation {
        owner_id,
        target,
        share,
        window,
        charge,
        team_id: form.team_id,
        priority,
        platform_admin: false,
    })
}

/// The latest start a booking made at `now` may have.
pub fn latest_start(state: &AppState, now: DateTime<Utc>) -> DateTime<Utc> {
    now + state.portal.booking.horizon
}

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
    // Only the team's members book for it (its admins and platform admins too).
    if let Some(team_id) = request.team_id {
        crate::backend::teams::access(&state.db, actor, team_id).await?;
    }
    let key = idempotency_key
        .map(|key| db::idempotency::IdempotencyKey::new(actor.user.id, key, "book", form))
        .transpose()?;
    let reservation = db::reservations::book(
        &state.db,
        &request,
        &db::reservations::BookingTerms {
            latest_start: latest_start(state, now),
            now,
            currency: &state.portal.currency,
            charge: &state.portal.charge,
        },
        key.as_ref(),
    )
    .await?;
    tracing::info!(reservation.id = reservation.id, "reservation booked");
    Ok(reservation)
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
    // Waiting for a team admin: until when.
    if row.owner_id == actor.user.id
        && row.status == "confirmed"
        && row.payment_status
            == crate::domain::reservation::PaymentStatus::AwaitingApproval.as_str()
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

/// Cancels reservation `id` (owner or platform admin, before it starts).
pub async fn cancel(
    state: &AppState,
    actor: &Actor,
    id: i64,
    now: DateTime<Utc>,
) -> Result<Reservation, AppError> {
    let is_admin = actor.require_platform_admin().is_ok();
    let reservation = db::reservations::cancel(
        &state.db,
        id,
        actor.user.id,
        is_admin,
        now,
        &state.portal.refund,
    )
    .await?;
    tracing::info!(reservation.id = id, "reservation cancelled");
    Ok(reservation)
}

/// The viewer's reservations, latest first, and what cancelling each paid, not yet started one
/// would refund now.
pub async fn mine(
    state: &AppState,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<(Vec<Reservation>, Vec<(i64, i64)>), AppError> {
    use crate::domain::reservation::{PaymentStatus, ReservationStatus};
    let list = db::reservations::list_for_owner(&state.db, actor.user.id, now).await?;
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
    Ok((list, refunds_now))
}

/// Reservations for the JSON API, latest first: the actor's own, or with `everyone` all of them
/// (platform admins).
pub async fn list(
    state: &AppState,
    actor: &Actor,
    everyone: bool,
    now: DateTime<Utc>,
) -> Result<Vec<Reservation>, AppError> {
    if everyone {
        actor.require_platform_admin()?;
        return Ok(db::reservations::list_all(&state.db, now).await?);
    }
    Ok(db::reservations::list_for_owner(&state.db, actor.user.id, now).await?)
}

/// Retires GPU `id` (platform admins): it can no longer be booked, and the reservations holding
/// it from now on are released and refunded in full; answers their ids.
pub async fn retire_gpu(
    state: &AppState,
    actor: &Actor,
    id: i64,
    now: DateTime<Utc>,
) -> Result<Vec<i64>, AppError> {
    actor.require_platform_admin()?;
    db::reservations::retire_gpu(&state.db, id, actor.user.id, now).await
}

/// The longest `Idempotency-Key` accepted.
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = db::idempotency::MAX_KEY_CHARS;

/// "Find a slot" as sent by a form or the API.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SlotForm {
    /// Exact model …
    #[serde(default)]
    pub model: Option<String>,
    /// … or minimum memory per GPU in GiB.
    #[serde(default)]
    pub min_memory_gib: Option<u32>,
    /// GPUs on one node (default 1).
    #[serde(default)]
    pub count: Option<u32>,
    /// Share (default whole).
    #[serde(default)]
    pub share: Option<ShareInput>,
    /// Length in hours (may be fractional in quarter hours: 1.5).
    pub hours: f64,
    /// Earliest start, RFC 3339 (default now).
    #[serde(default)]
    pub after: Option<String>,
}

/// The earliest windows that fit.
pub async fn find_slots(
    state: &AppState,
    form: &SlotForm,
    now: DateTime<Utc>,
) -> Result<Vec<SlotOffer>, AppError> {
    let minutes = form.hours * 60.0;
    let max_minutes = state.portal.booking.max_length.num_minutes();
    #[expect(clippy::cast_precision_loss, reason = "minutes are small")]
    let in_range = minutes.is_finite() && minutes >= 15.0 && minutes <= max_minutes as f64;
    #[expect(clippy::cast_possible_truncation, reason = "checked to be in range")]
    let whole_minutes = minutes.round() as i64;
    if !in_range || whole_minutes % 15 != 0 {
        return Err(invalid(
            "hours",
            Problem::BadLength {
                days: state.portal.booking.max_length.num_days(),
            },
        ));
    }
    let count = form.count.unwrap_or(1);
    if count == 0 || usize::try_from(count).unwrap_or(usize::MAX) > MAX_GPUS_PER_RESERVATION {
        return Err(invalid(
            "count",
            Problem::CountRange {
                max: MAX_GPUS_PER_RESERVATION,
            },
        ));
    }
    let share = match &form.share {
        Some(share) => share.parse()?,
        None => Share::Whole,
    };
    let earliest = match form.after.as_deref().filter(|raw| !raw.trim().is_empty()) {
        Some(raw) => parse_time("after", raw)?.max(now),
        None => now,
    };
    let earliest = slot_ceil(earliest.max(crate::domain::schedule::slot_floor(now)));
    let model = form
        .model
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(str::to_owned);
    let query = SlotQuery {
        model,
        min_memory_mib: form.min_memory_gib.map(|gib| i64::from(gib) * 1024),
        count: usize::try_from(count).unwrap_or(1),
        share,
        length: TimeDelta::minutes(whole_minutes),
        earliest,
    };
    Ok(
        db::reservations::find_slots(&state.db, &query, latest_start(state, now), MAX_OFFERS)
            .await?,
    )
}

/// Longest range the availability view reads at once.
pub const MAX_AVAILABILITY_DAYS: i64 = 62;

/// Busy blocks per GPU in `[from, to)` (optionally one model), from the viewer's point of view:
/// their own bookings in detail, others' only as "booked".
pub async fn availability(
    state: &AppState,
    actor: &Actor,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    model: Option<&str>,
) -> Result<Vec<GpuAvailability>, AppError> {
    if to <= from {
        return Err(invalid("to", Problem::ToNotAfterFrom));
    }
    if to - from > TimeDelta::days(MAX_AVAILABILITY_DAYS) {
        return Err(invalid(
            "to",
            Problem::TooLong {
                days: MAX_AVAILABILITY_DAYS,
            },
        ));
    }
    let range = Window::new(crate::domain::schedule::slot_floor(from), slot_ceil(to))
        .map_err(window_error)?;
    let inventory = db::inventory::list_matching_gpus(&state.db, model, None).await?;
    let gpus: Vec<i64> = inventory
        .iter()
        .flat_map(|node| node.gpus.iter())
        .map(|gpu| gpu.id)
        .collect();
    let mut busy = busy_blocks(state, actor, &range, &gpus).await?;
    Ok(gpus
        .into_iter()
        .map(|gpu_id| GpuAvailability {
            gpu_id,
            busy: busy.remove(&gpu_id).unwrap_or_default(),
        })
        .collect())
}

/// What occupies each of `gpus` during `range`, by start, as the viewer may see it.
async fn busy_blocks(
    state: &AppState,
    actor: &Actor,
    range: &Window,
    gpus: &[i64],
) -> Result<std::collections::HashMap<i64, Vec<BusyBlock>>, AppError> {
    let mut busy: std::collections::HashMap<i64, Vec<BusyBlock>> =
        gpus.iter().map(|id| (*id, Vec::new())).collect();
    let (holds, maintenance, teams) = tokio::try_join!(
        db::reservations::holds_on(&state.db, gpus, range),
        db::reservations::maintenance_overlapping(&state.db, range),
        db::teams::memberships_of(&state.db, actor.user.id),
    )?;
    // Teammates' bookings for a shared team show who booked them; others stay anonymous.
    let teammate_of = |hold: &db::reservations::Hold| {
        hold.team_id.and_then(|team| {
            teams
                .iter()
                .find(|t| t.team_id == team)
                .map(|t| t.team_name.clone())
        })
    };
    let mut teammates: Vec<i64> = holds
        .iter()
        .filter(|hold| hold.owner_id != actor.user.id && teammate_of(hold).is_some())
        .map(|hold| hold.owner_id)
        .collect();
    teammates.sort_unstable();
    teammates.dedup();
    let names = db::users::names_of(&state.db, &teammates).await?;
    for hold in holds {
        let mine = hold.owner_id == actor.user.id;
        let team = if mine { None } else { teammate_of(&hold) };
        if let Some(blocks) = busy.get_mut(&hold.gpu_id) {
            blocks.push(BusyBlock {
                start: hold.window.start(),
                end: hold.window.end(),
                quarters: hold.quarters,
                kind: match (mine, &team) {
                    (true, _) => BlockKind::Mine,
                    (false, Some(_)) => BlockKind::Team,
                    (false, None) => BlockKind::Booked,
                },
                reservation_id: mine.then_some(hold.reservation_id),
                who: team.map(|team| {
                    let name = names.get(&hold.owner_id).cloned().unwrap_or_default();
                    format!("{name} · {team}")
                }),
            });
        }
    }
    for (gpu_id, window, _) in maintenance {
        if let Some(blocks) = busy.get_mut(&gpu_id) {
            blocks.push(BusyBlock {
                start: window.start(),
                end: window.end(),
                quarters: crate::domain::schedule::WHOLE_GPU,
                kind: BlockKind::Maintenance,
                reservation_id: None,
                who: None,
            });
        }
    }
    for blocks in busy.values_mut() {
        blocks.sort_by_key(|b| (b.start, b.end));
    }
    Ok(busy)
}

/// What the calendar page asks for.
#[derive(Debug, Clone, Default)]
pub struct CalendarQuery {
    /// First local day (default today).
    pub start: Option<chrono::NaiveDate>,
    /// Day or week.
    pub span: crate::domain::calendar::Span,
    /// Only this model.
    pub model: Option<String>,
    /// Only GPUs with at least this much memory.
    pub min_memory_gib: Option<u32>,
    /// IANA time zone of the viewer (default UTC).
    pub zone: Option<String>,
}

/// The calendar for `actor`.
#[tracing::instrument(skip_all)]
pub async fn calendar(
    state: &AppState,
    actor: &Actor,
    query: &CalendarQuery,
    now: DateTime<Utc>,
) -> Result<crate::domain::calendar::CalendarView, AppError> {
    use crate::domain::calendar::{
        CalendarGpu, CalendarNode, CalendarView, DayColumn, PlacedBlock, assign_lanes,
    };
    use chrono::TimeZone;
    let zone: chrono_tz::Tz = query
        .zone
        .as_deref()
        .and_then(|name| name.parse().ok())
        .unwrap_or(chrono_tz::UTC);
    let today = now.with_timezone(&zone).date_naive();
    let first = query.start.unwrap_or(today);
    let midnight = |date: chrono::NaiveDate| -> DateTime<Utc> {
        zone.from_local_datetime(&date.and_hms_opt(0, 0, 0).unwrap_or_default())
            .earliest()
            .map_or_else(
                || date.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc(),
                |at| at.with_timezone(&Utc),
            )
    };
    let days: Vec<DayColumn> = (0..query.span.days())
        .map(|offset| {
            let date = first + TimeDelta::days(offset);
            DayColumn {
                date,
                start: midnight(date),
                end: midnight(date + TimeDelta::days(1)),
            }
        })
        .collect();
    let range = Window::new(days[0].start, days[days.len() - 1].end).map_err(window_error)?;
    let inventory = db::inventory::list_matching_gpus(
        &state.db,
        query.model.as_deref(),
        query.min_memory_gib.map(|gib| i64::from(gib) * 1024),
    )
    .await?;
    let shown_ids: Vec<i64> = inventory
        .iter()
        .flat_map(|node| node.gpus.iter())
        .map(|gpu| gpu.id)
        .collect();
    // Two independent reads on two pooled connections at once.
    let (mut busy, models) =
        tokio::try_join!(busy_blocks(state, actor, &range, &shown_ids), async {
            db::inventory::list_models(&state.db)
                .await
                .map_err(AppError::from)
        },)?;
    let nodes = inventory
        .into_iter()
        .map(|node| CalendarNode {
            id: node.id,
            name: node.name,
            is_demo: node.is_demo,
            gpus: node
                .gpus
                .into_iter()
                .map(|gpu| {
                    let blocks = busy.remove(&gpu.id).unwrap_or_default();
                    let lanes = assign_lanes(&blocks);
                    CalendarGpu {
                        gpu,
                        blocks: blocks
                            .into_iter()
                            .zip(lanes)
                            .map(|(block, lane)| PlacedBlock { block, lane })
                            .collect(),
                    }
                })
                .collect(),
        })
        .collect();
    Ok(CalendarView {
        span: query.span,
        zone: viewer::zone_offsets(zone, range.start(), range.end()),
        previous: first - TimeDelta::days(query.span.days()),
        next: first + TimeDelta::days(query.span.days()),
        today,
        range,
        days,
        now,
        nodes,
        models,
        currency: state.portal.currency.clone(),
        payment: booking_payment(state, actor.user.id).await?,
        texts: crate::domain::calendar::PanelTexts::default(),
    })
}

/// The viewer's balance, what unpaid reservations hold, and the charge modes.
async fn booking_payment(
    state: &AppState,
    user_id: i64,
) -> Result<crate::domain::calendar::BookingPayment, AppError> {
    let (balance, unpaid, memberships) = tokio::try_join!(
        db::ledger::wallet_balance(&state.db, user_id),
        db::payments::unpaid_of(&state.db, user_id),
        db::teams::memberships_of(&state.db, user_id),
    )?;
    let mut teams = Vec::with_capacity(memberships.len());
    for team in memberships {
        let (balance, unpaid) = tokio::try_join!(
            db::ledger::account_balance(
                &state.db,
                crate::domain::ledger::Account::TeamWallet(team.team_id)
            ),
            db::payments::unpaid_of_team(&state.db, team.team_id),
        )?;
        let available = balance.minor() - db::payments::held(&unpaid).minor();
        teams.push((team.team_id, team.team_name, available));
    }
    Ok(crate::domain::calendar::BookingPayment {
        balance,
        on_hold: db::payments::held(&unpaid),
        modes: state.portal.charge.offered(),
        form_key: uuid::Uuid::new_v4().to_string(),
        teams,
    })
}

/// A `datetime-local` value (`2026-12-01T09:00`) in time zone `zone` (IANA, default UTC) as an
/// RFC 3339 instant.
pub fn local_to_rfc3339(zone: Option<&str>, field: &str, raw: &str) -> Result<String, AppError> {
    use chrono::TimeZone;
    let zone: chrono_tz::Tz = zone.and_then(|z| z.parse().ok()).unwrap_or(chrono_tz::UTC);
    let local = chrono::NaiveDateTime::parse_from_str(raw.trim(), "%Y-%m-%dT%H:%M")
        .or_else(|_| chrono::NaiveDateTime::parse_from_str(raw.trim(), "%Y-%m-%dT%H:%M:%S"))
        .map_err(|_| {
            invalid(
                field,
                Problem::NotADateTime {
                    raw: raw.to_owned(),
                },
            )
        })?;
    let local = date_range::check_local(local).map_err(|err| invalid(field, err.into()))?;
    let at = zone.from_local_datetime(&local).earliest().ok_or_else(|| {
        invalid(
            field,
            Problem::NoSuchLocalTime {
                raw: raw.to_owned(),
                zone: zone.name().to_owned(),
            },
        )
    })?;
    Ok(at.with_timezone(&Utc).to_rfc3339())
}
