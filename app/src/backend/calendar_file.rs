//! Reservations as iCalendar (RFC 5545): the file attached to a confirmation e-mail. Each
//! reservation is one event whose UID never changes (`reservation-<id>@<host>`), times in UTC.

use crate::domain::notify::ReservationBrief;
use chrono::{DateTime, Utc};
use icalendar::{Calendar, Component, Event, EventLike, EventStatus};

/// One reservation as a calendar shows it.
#[derive(Debug, Clone)]
pub struct CalendarEntry<'a> {
    /// The reservation.
    pub reservation: &'a ReservationBrief,
    /// Its title in the reader's language ("2× H100 on gpu-node-1").
    pub summary: String,
    /// Its page in Berth.
    pub url: String,
    /// Bumped each time the reservation changes, so calendars replace their copy.
    pub sequence: u32,
    /// Cancelled or released: calendars strike it out.
    pub cancelled: bool,
    /// Waiting for a team admin's approval: calendars show it as tentative.
    pub tentative: bool,
}

/// The stable UID of reservation `id` on the portal at `host`.
pub fn uid(id: i64, host: &str) -> String {
    format!("reservation-{id}@{host}")
}

/// `entries` as an iCalendar document named `name`, stamped `now`.
pub fn calendar(
    name: &str,
    host: &str,
    entries: &[CalendarEntry<'_>],
    now: DateTime<Utc>,
) -> String {
    let mut calendar = Calendar::new();
    calendar
        .name(name)
        .append_property(("PRODID", "-//Berth//GPU reservations//EN"))
        .append_property(("METHOD", "PUBLISH"));
    for entry in entries {
        let r = entry.reservation;
        let status = if entry.cancelled {
            EventStatus::Cancelled
        } else if entry.tentative {
            EventStatus::Tentative
        } else {
            EventStatus::Confirmed
        };
        let mut event = Event::new();
        event
            .uid(&uid(r.id, host))
            .timestamp(now)
            .starts(r.window.start())
            .ends(r.window.end())
            .summary(&entry.summary)
            .location(&r.node)
            .sequence(entry.sequence)
            .status(status);
        if !entry.url.is_empty() {
            event.url(&entry.url);
        }
        calendar.push(event.done());
    }
    calendar.done().to_string()
}
