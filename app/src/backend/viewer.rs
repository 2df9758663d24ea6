//! Who is looking, as far as times go: the time zone a viewer sees times in (chosen on the profile
//! page, else the browser's cookie, else UTC), and the offsets of a zone over a range.

use crate::backend::auth::actor::Actor;
use crate::domain::problem::Problem;
use crate::domain::zone::{OffsetChange, ZoneOffsets};
use crate::error::AppError;
use chrono::{DateTime, TimeDelta, Utc};

/// The zone the caller of the current request sees times in: their profile setting, else the
/// request's `berth_tz` cookie.
pub fn request_zone(actor: &Actor) -> Option<String> {
    match leptos::prelude::use_context::<http::request::Parts>() {
        Some(parts) => viewer_zone(actor, &parts.headers),
        None => actor.user.time_zone.clone(),
    }
}

/// The offsets of the zone named `name` (IANA; UTC when unknown) over `[from, to]`.
pub fn zone_named(name: Option<&str>, from: DateTime<Utc>, to: DateTime<Utc>) -> ZoneOffsets {
    let zone: chrono_tz::Tz = name.and_then(|n| n.parse().ok()).unwrap_or(chrono_tz::UTC);
    zone_offsets(zone, from, to)
}

/// The offsets of `zone` over `[from, to]`.
pub fn zone_offsets(zone: chrono_tz::Tz, from: DateTime<Utc>, to: DateTime<Utc>) -> ZoneOffsets {
    use chrono::Offset;
    let offset = |at: DateTime<Utc>| at.with_timezone(&zone).offset().fix().local_minus_utc();
    let mut changes = vec![OffsetChange {
        at: from - TimeDelta::days(2),
        offset_seconds: offset(from - TimeDelta::days(2)),
    }];
    let mut at = from - TimeDelta::days(2);
    while at <= to + TimeDelta::days(2) {
        let current = offset(at);
        if changes
            .last()
            .is_some_and(|last| last.offset_seconds != current)
        {
            // Find the change to the minute.
            let mut low = at - TimeDelta::minutes(15);
            while offset(low) == current {
                low -= TimeDelta::minutes(15);
            }
            let mut instant = low;
            while offset(instant) != current {
                instant += TimeDelta::minutes(1);
            }
            changes.push(OffsetChange {
                at: instant,
                offset_seconds: current,
            });
        }
        at += TimeDelta::minutes(15);
    }
    ZoneOffsets {
        name: zone.name().to_owned(),
        changes,
    }
}

/// The zone `actor` sees times in: the one chosen on the profile page, else the browser's
/// (cookie), else none (UTC).
pub fn viewer_zone(actor: &Actor, headers: &http::HeaderMap) -> Option<String> {
    actor
        .user
        .time_zone
        .clone()
        .or_else(|| zone_from_headers(headers))
}

/// Checks a time-zone name from a form: empty means "the browser's" (`None`); anything else must
/// be an IANA name (`America/Sao_Paulo`).
pub fn parse_zone_choice(raw: &str) -> Result<Option<String>, AppError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    raw.parse::<chrono_tz::Tz>()
        .map(|zone| Some(zone.name().to_owned()))
        .map_err(|_| {
            AppError::invalid(
                "time_zone",
                Problem::UnknownZone {
                    raw: raw.to_owned(),
                },
            )
        })
}

/// Every time-zone name a user may choose, sorted.
pub fn zone_names() -> Vec<String> {
    let mut names: Vec<String> = chrono_tz::TZ_VARIANTS
        .iter()
        .map(|zone| zone.name().to_owned())
        .collect();
    names.sort();
    names
}

/// The viewer's IANA time zone from the `berth_tz` cookie the browser sets, if any.
pub fn zone_from_headers(headers: &http::HeaderMap) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(tower_sessions::cookie::Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|cookie| cookie.name() == crate::domain::zone::ZONE_COOKIE)
        .map(|cookie| cookie.value().replace("%2F", "/"))
}
