//! Paging of long lists: a page size (`limit`) and an opaque cursor that says where the next
//! page starts. Lists are read newest first by a (time, id) key, or by id alone, so a page is an
//! index range and new rows arriving between two requests never shift a page already read.
//!
//! The cursor is the last row's key with the list's tag, URL-safe base64 encoded: a client passes
//! it back as it came. A cursor of another list, or one edited by hand, is refused as unreadable
//! rather than silently reading from the wrong place. Forging one gains nothing: every list
//! applies its own access rules to whatever page is asked for.

use crate::domain::problem::Problem;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};

/// The page size when none is asked for.
pub const DEFAULT_LIMIT: u64 = 100;
/// The largest page that may be asked for.
pub const MAX_LIMIT: u64 = 1_000;

/// Which list a cursor belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// Reservations, latest start first.
    Reservations,
    /// A wallet's movements, newest first.
    WalletEntries,
    /// A GPU's telemetry events, newest first.
    GpuEvents,
    /// The audit log, newest first.
    Audit,
    /// Teams, by id.
    Teams,
    /// Users, by id (platform admins' lists).
    Users,
    /// What node agents did and saw on a GPU, newest first.
    AccessEvents,
    /// Incidents, newest (highest id) first.
    Incidents,
    /// A user's notices, newest first.
    Inbox,
    /// Notification deliveries, newest first.
    Deliveries,
}

impl ListKind {
    fn tag(self) -> &'static str {
        match self {
            ListKind::Reservations => "r",
            ListKind::WalletEntries => "w",
            ListKind::GpuEvents => "e",
            ListKind::Audit => "a",
            ListKind::Teams => "t",
            ListKind::Users => "u",
            ListKind::AccessEvents => "g",
            ListKind::Incidents => "i",
            ListKind::Inbox => "n",
            ListKind::Deliveries => "d",
        }
    }
}

/// Where a page starts: strictly after the row with this key, in the list's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// The row's time in microseconds since the epoch (0 for lists ordered by id alone).
    pub at_micros: i64,
    /// The row's id.
    pub id: i64,
}

impl Cursor {
    /// The key of a row ordered by (time, id).
    pub fn at(at: DateTime<Utc>, id: i64) -> Self {
        Cursor {
            at_micros: at.timestamp_micros(),
            id,
        }
    }

    /// The key of a row ordered by id alone.
    pub fn id(id: i64) -> Self {
        Cursor { at_micros: 0, id }
    }

    /// The time of the key.
    pub fn time(&self) -> DateTime<Utc> {
        DateTime::from_timestamp_micros(self.at_micros).unwrap_or(DateTime::<Utc>::MIN_UTC)
    }

    /// The opaque text a client passes back.
    pub fn encode(&self, kind: ListKind) -> String {
        URL_SAFE_NO_PAD.encode(format!("{}1.{}.{}", kind.tag(), self.at_micros, self.id))
    }

    /// Reads a cursor of list `kind`; anything else is [`Problem::BadCursor`].
    pub fn decode(kind: ListKind, text: &str) -> Result<Self, Problem> {
        if text.len() > 64 {
            return Err(Problem::BadCursor);
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(text.as_bytes())
            .map_err(|_| Problem::BadCursor)?;
        let plain = String::from_utf8(bytes).map_err(|_| Problem::BadCursor)?;
        let rest = plain
            .strip_prefix(kind.tag())
            .and_then(|rest| rest.strip_prefix("1."))
            .ok_or(Problem::BadCursor)?;
        let (at, id) = rest.split_once('.').ok_or(Problem::BadCursor)?;
        let at_micros: i64 = at.parse().map_err(|_| Problem::BadCursor)?;
        let id: i64 = id.parse().map_err(|_| Problem::BadCursor)?;
        if id < 0 || DateTime::from_timestamp_micros(at_micros).is_none() {
            return Err(Problem::BadCursor);
        }
        Ok(Cursor { at_micros, id })
    }
}

/// What one request asks for: how many rows, and after which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    /// At most this many rows (1 to [`MAX_LIMIT`]).
    pub limit: u64,
    /// Rows strictly after this key; the first page when absent.
    pub after: Option<Cursor>,
}

impl PageRequest {
    /// The first page of the default size.
    pub fn first() -> Self {
        PageRequest {
            limit: DEFAULT_LIMIT,
            after: None,
        }
    }

    /// Reads `limit` (default [`DEFAULT_LIMIT`], 1 to [`MAX_LIMIT`]) and `cursor` (of list
    /// `kind`). The error names the parameter at fault.
    pub fn parse(
        kind: ListKind,
        limit: Option<i64>,
        cursor: Option<&str>,
    ) -> Result<Self, (&'static str, Problem)> {
        let limit = match limit {
            None => DEFAULT_LIMIT,
            Some(n) if (1..=MAX_LIMIT as i64).contains(&n) => n as u64,
            Some(_) => {
                return Err((
                    "limit",
                    Problem::OutOfRange {
                        min: 1,
                        max: MAX_LIMIT as i64,
                    },
                ));
            }
        };
        let after = match cursor.map(str::trim) {
            None | Some("") => None,
            Some(text) => Some(Cursor::decode(kind, text).map_err(|p| ("cursor", p))?),
        };
        Ok(PageRequest { limit, after })
    }

    /// How many rows to read: one more than the page, to know whether another page follows.
    pub fn fetch(&self) -> u64 {
        self.limit + 1
    }
}

/// One page of a list, and the cursor of the next one when there is more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The rows, in the list's order.
    pub items: Vec<T>,
    /// The cursor of the next page; `None` on the last one.
    pub next: Option<String>,
}

impl<T> Page<T> {
    /// Makes a page from rows read with [`PageRequest::fetch`]: keeps `limit` of them and, when
    /// there was one more, gives the cursor after the last one kept.
    pub fn from_rows(
        mut rows: Vec<T>,
        request: &PageRequest,
        kind: ListKind,
        key: impl Fn(&T) -> Cursor,
    ) -> Self {
        let limit = usize::try_from(request.limit).unwrap_or(usize::MAX);
        let next = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(|row| key(row).encode(kind))
        } else {
            None
        };
        Page { items: rows, next }
    }

    /// The same page with its rows changed by `f`.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            next: self.next,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn limits_default_and_are_bounded() {
        let parse = |limit| PageRequest::parse(ListKind::Reservations, limit, None);
        assert_eq!(parse(None).unwrap().limit, 100);
        assert_eq!(parse(Some(1)).unwrap().limit, 1);
        assert_eq!(parse(Some(1000)).unwrap().limit, 1000);
        for bad in [0, -1, 1001, i64::MAX, i64::MIN] {
            assert_eq!(
                parse(Some(bad)).unwrap_err(),
                ("limit", Problem::OutOfRange { min: 1, max: 1000 })
            );
        }
    }

    #[test]
    fn a_cursor_of_another_list_or_edited_is_refused() {
        let cursor = Cursor::id(42).encode(ListKind::Audit);
        assert_eq!(Cursor::decode(ListKind::Audit, &cursor), Ok(Cursor::id(42)));
        assert_eq!(
            Cursor::decode(ListKind::Teams, &cursor),
            Err(Problem::BadCursor)
        );
        for bad in ["", "%%%", "abc", &"A".repeat(65), "cjEuNS4tMQ"] {
            assert_eq!(
                Cursor::decode(ListKind::Reservations, bad),
                Err(Problem::BadCursor),
                "{bad}"
            );
        }
        // A blank cursor is the first page.
        assert_eq!(
            PageRequest::parse(ListKind::Audit, None, Some(" ")).unwrap(),
            PageRequest::first()
        );
    }

    #[test]
    fn a_page_keeps_the_limit_and_points_after_its_last_row() {
        let request = PageRequest {
            limit: 2,
            after: None,
        };
        let page = Page::from_rows(vec![5, 4, 3], &request, ListKind::Teams, |n| Cursor::id(*n));
        assert_eq!(page.items, vec![5, 4]);
        let next = page.next.expect("another page");
        assert_eq!(Cursor::decode(ListKind::Teams, &next), Ok(Cursor::id(4)));
        let last = Page::from_rows(vec![3], &request, ListKind::Teams, |n| Cursor::id(*n));
        assert_eq!(last.next, None);
    }

    proptest! {
        #[test]
        fn cursors_read_back_as_written(at in -62_000_000_000_000_000i64..200_000_000_000_000_000, id in 0i64..i64::MAX) {
            let cursor = Cursor { at_micros: at, id };
            for kind in [ListKind::Reservations, ListKind::WalletEntries, ListKind::GpuEvents, ListKind::Audit, ListKind::Teams, ListKind::Users, ListKind::AccessEvents] {
                let text = cursor.encode(kind);
                prop_assert!(text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
                prop_assert_eq!(Cursor::decode(kind, &text), Ok(cursor));
            }
        }
    }
}
