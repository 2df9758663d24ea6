//! Maintenance windows: times platform admins take a GPU out of booking (driver updates, repairs).
//! A window covers whole GPUs on the booking grid; it may not overlap a confirmed reservation (the
//! admin cancels those first, so nobody loses a booking silently).

use crate::domain::schedule::{SLOT_MINUTES, Window, WindowError, slot_floor};
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// Longest maintenance window.
pub const MAX_LENGTH_DAYS: i64 = 90;
/// How far ahead a maintenance window may start.
pub const MAX_AHEAD_DAYS: i64 = 366;
/// Longest reason, in characters.
pub const MAX_REASON_CHARS: usize = 200;

/// Why Berth itself set a maintenance window, kept as data (`maintenance_windows.reason_code`)
/// so admins read it in their language; `reason` holds English words for the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum BerthMaintenance {
    /// The node's agent reported this XID (79: the GPU fell off the bus).
    FellOffBus {
        /// The XID.
        xid: i64,
    },
}

impl BerthMaintenance {
    /// Its English words, as stored in `reason`.
    pub fn english(self) -> String {
        match self {
            BerthMaintenance::FellOffBus { xid } => {
                format!("XID {xid}: the GPU fell off the bus (set by Berth)")
            }
        }
    }

    /// As stored in `reason_code`.
    pub fn code(self) -> String {
        serde_json::to_string(&self).unwrap_or_default()
    }

    /// From a stored `reason_code` (None: unreadable, the English words stand).
    pub fn from_code(raw: &str) -> Option<Self> {
        serde_json::from_str(raw).ok()
    }
}

/// A maintenance window as admins and the API see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MaintenanceWindow {
    /// Database id.
    pub id: i64,
    /// The GPU.
    pub gpu_id: i64,
    /// The GPU as people name it (`node-a #3`).
    pub gpu_label: String,
    /// The GPU's model.
    pub model: String,
    /// When (UTC).
    pub window: Window,
    /// Why (English words where Berth set it).
    pub reason: String,
    /// Why, as data, where Berth set it.
    #[serde(default)]
    pub berth_reason: Option<BerthMaintenance>,
    /// The admin who set it, if still known.
    pub created_by: Option<String>,
    /// When it was set.
    pub created_at: DateTime<Utc>,
}

impl MaintenanceWindow {
    /// Where the window stands at `now`.
    pub fn phase(&self, now: DateTime<Utc>) -> MaintenancePhase {
        if now < self.window.start() {
            MaintenancePhase::Upcoming
        } else if now < self.window.end() {
            MaintenancePhase::Ongoing
        } else {
            MaintenancePhase::Over
        }
    }
}

/// Before, during or after a maintenance window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaintenancePhase {
    /// Not started.
    Upcoming,
    /// Under way.
    Ongoing,
    /// Finished (kept as history).
    Over,
}

/// Why a maintenance request was refused; each names the field to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MaintenanceError {
    /// The window's grid or order is wrong.
    #[error(transparent)]
    Window(#[from] WindowError),
    /// Ends before the current slot: nothing to block.
    #[error("the window is already over")]
    AlreadyOver,
    /// Longer than [`MAX_LENGTH_DAYS`].
    #[error("a maintenance window lasts at most {MAX_LENGTH_DAYS} days")]
    TooLong,
    /// Starts more than [`MAX_AHEAD_DAYS`] ahead.
    #[error("a maintenance window starts at most {MAX_AHEAD_DAYS} days ahead")]
    TooFarAhead,
    /// No reason given, or too long a one.
    #[error("give a reason of 1 to {MAX_REASON_CHARS} characters")]
    Reason,
}

impl MaintenanceError {
    /// The error as a [`Problem`](crate::domain::problem::Problem) to show or send.
    pub fn problem(&self) -> crate::domain::problem::Problem {
        use crate::domain::problem::Problem;
        match self {
            MaintenanceError::Window(err) => err.problem(),
            MaintenanceError::AlreadyOver => Problem::AlreadyOver,
            MaintenanceError::TooLong => Problem::TooLong {
                days: MAX_LENGTH_DAYS,
            },
            MaintenanceError::TooFarAhead => Problem::TooFarAhead {
                days: MAX_AHEAD_DAYS,
            },
            MaintenanceError::Reason => Problem::Reason {
                max: MAX_REASON_CHARS,
            },
        }
    }

    /// The input field the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            MaintenanceError::Window(err) => err.field(),
            MaintenanceError::AlreadyOver | MaintenanceError::TooLong => "end",
            MaintenanceError::TooFarAhead => "start",
            MaintenanceError::Reason => "reason",
        }
    }
}

/// A validated request to take GPUs out of booking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMaintenance {
    /// The window. A start before now is moved to the current slot: maintenance cannot rewrite
    /// the past.
    pub window: Window,
    /// Why, trimmed.
    pub reason: String,
    /// Why, where Berth sets it (`reason` holds its English words).
    pub berth_reason: Option<BerthMaintenance>,
}

impl NewMaintenance {
    /// Checks a request made at `now`: on the grid, ending after the current slot starts, at most
    /// [`MAX_LENGTH_DAYS`] long, starting within [`MAX_AHEAD_DAYS`], with a reason.
    pub fn parse(
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<Self, MaintenanceError> {
        let requested = Window::new(start, end)?;
        let reason = reason.trim();
        if reason.is_empty() || reason.chars().count() > MAX_REASON_CHARS {
            return Err(MaintenanceError::Reason);
        }
        if requested.length() > TimeDelta::days(MAX_LENGTH_DAYS) {
            return Err(MaintenanceError::TooLong);
        }
        if requested.start() > now + TimeDelta::days(MAX_AHEAD_DAYS) {
            return Err(MaintenanceError::TooFarAhead);
        }
        let current_slot = slot_floor(now);
        if requested.end() <= current_slot {
            return Err(MaintenanceError::AlreadyOver);
        }
        let start = requested.start().max(current_slot);
        let window = Window::new(start, requested.end())?;
        Ok(Self {
            window,
            reason: reason.to_owned(),
            berth_reason: None,
        })
    }
}

/// What ending a maintenance window early does at `now`: an upcoming window is removed, an
/// ongoing one ends at the next slot boundary, a finished one stays as history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndEarly {
    /// Delete it.
    Remove,
    /// Shorten it to end here.
    EndAt(DateTime<Utc>),
    /// Refuse: it is over.
    AlreadyOver,
}

/// See [`EndEarly`].
pub fn end_early(window: &Window, now: DateTime<Utc>) -> EndEarly {
    if now < window.start() {
        EndEarly::Remove
    } else if now < window.end() {
        let next = slot_floor(now) + TimeDelta::minutes(SLOT_MINUTES);
        if next >= window.end() {
            EndEarly::EndAt(window.end())
        } else {
            EndEarly::EndAt(next)
        }
    } else {
        EndEarly::AlreadyOver
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, h, m, 0).unwrap()
    }

    #[test]
    fn a_valid_request_keeps_its_window_and_trims_the_reason() {
        let request =
            NewMaintenance::parse(at(10, 0), at(12, 0), "  driver update ", at(9, 7)).unwrap();
        assert_eq!(request.window, Window::new(at(10, 0), at(12, 0)).unwrap());
        assert_eq!(request.reason, "driver update");
    }

    #[test]
    fn a_start_in_the_past_moves_to_the_current_slot() {
        let request = NewMaintenance::parse(at(8, 0), at(12, 0), "fan", at(9, 7)).unwrap();
        assert_eq!(request.window.start(), at(9, 0));
    }

    #[test]
    fn refuses_what_is_over_off_grid_too_long_too_far_or_unexplained() {
        let now = at(9, 7);
        let err = |s, e, r: &str| NewMaintenance::parse(s, e, r, now).unwrap_err();
        assert_eq!(err(at(7, 0), at(9, 0), "x"), MaintenanceError::AlreadyOver);
        assert_eq!(err(at(10, 5), at(12, 0), "x").field(), "start");
        assert_eq!(err(at(12, 0), at(10, 0), "x").field(), "end");
        assert_eq!(err(at(10, 0), at(12, 0), "   "), MaintenanceError::Reason);
        assert_eq!(
            err(at(10, 0), at(12, 0), &"x".repeat(201)),
            MaintenanceError::Reason
        );
        assert_eq!(
            err(at(10, 0), at(10, 0) + TimeDelta::days(91), "x"),
            MaintenanceError::TooLong
        );
        let far = at(10, 0) + TimeDelta::days(400);
        assert_eq!(
            err(far, far + TimeDelta::hours(1), "x"),
            MaintenanceError::TooFarAhead
        );
    }

    #[test]
    fn berths_reasons_keep_their_data_and_their_english_words() {
        let why = BerthMaintenance::FellOffBus { xid: 79 };
        assert_eq!(why.code(), r#"{"what":"fell_off_bus","xid":79}"#);
        assert_eq!(BerthMaintenance::from_code(&why.code()), Some(why));
        assert_eq!(
            why.english(),
            "XID 79: the GPU fell off the bus (set by Berth)"
        );
        assert_eq!(BerthMaintenance::from_code("driver update"), None);
    }

    #[test]
    fn ending_early_removes_shortens_or_refuses() {
        let window = Window::new(at(10, 0), at(14, 0)).unwrap();
        assert_eq!(end_early(&window, at(9, 0)), EndEarly::Remove);
        assert_eq!(end_early(&window, at(11, 5)), EndEarly::EndAt(at(11, 15)));
        assert_eq!(end_early(&window, at(13, 50)), EndEarly::EndAt(at(14, 0)));
        assert_eq!(end_early(&window, at(14, 0)), EndEarly::AlreadyOver);
    }

    #[test]
    fn phase_follows_the_clock() {
        let m = MaintenanceWindow {
            id: 1,
            gpu_id: 1,
            gpu_label: "n #0".into(),
            model: "L40S".into(),
            window: Window::new(at(10, 0), at(11, 0)).unwrap(),
            reason: "x".into(),
            berth_reason: None,
            created_by: None,
            created_at: at(8, 0),
        };
        assert_eq!(m.phase(at(9, 59)), MaintenancePhase::Upcoming);
        assert_eq!(m.phase(at(10, 0)), MaintenancePhase::Ongoing);
        assert_eq!(m.phase(at(11, 0)), MaintenancePhase::Over);
    }
}
