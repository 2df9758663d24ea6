//! What a booking, a slot search or a local time looks like on the way in: forms and JSON bodies
//! parsed into one command type ([`NewReservation`]) with a field-level error for each problem,
//! so that the pages, the plain forms and the JSON API share one parser.

use crate::backend::db;
use crate::backend::state::AppState;
use crate::domain::date_range;
use crate::domain::payment::ChargeMode;
use crate::domain::problem::Problem;
use crate::domain::reservation::{NewReservation, Target};
use crate::domain::schedule::{Share, Window, WindowError};
use crate::error::AppError;
use chrono::{DateTime, Utc};
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
    pub fn parse(&self) -> Result<Share, AppError> {
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
    /// The environment profile to prepare on the node (default: the booker's default profile).
    #[serde(default)]
    pub profile: Option<i64>,
    /// A batch or burst booking asks to start early, on the same GPUs, when they free up before
    /// its start.
    #[serde(default)]
    pub start_early: bool,
    /// Pay with this saved card (at booking, or before the start per `charge`) instead of
    /// credits; personal bookings only, with cards on.
    #[serde(default)]
    pub card: Option<i64>,
}

pub(super) fn invalid(field: &str, problem: Problem) -> AppError {
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

pub(super) fn window_error(err: WindowError) -> AppError {
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
        owner_name: None,
        target,
        share,
        window,
        charge,
        team_id: form.team_id,
        priority,
        platform_admin: false,
        profile_version_id: None,
        through_watch: None,
        start_early: form.start_early,
        card_id: form.card,
    })
}

/// The latest start a booking made at `now` may have.
pub fn latest_start(state: &AppState, now: DateTime<Utc>) -> DateTime<Utc> {
    now + state.portal.booking.horizon
}

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

/// The longest `Idempotency-Key` accepted.
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = db::idempotency::MAX_KEY_CHARS;
