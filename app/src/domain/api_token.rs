//! What a personal API token may do and for how long: its scope (`read` or `write`) and its
//! lifetime in days. Parsed the same way from the profile page, the command line and the API.

use crate::domain::problem::Problem;
use serde::{Deserialize, Serialize};

/// Longest lifetime a token may be given, in days (about ten years).
pub const MAX_EXPIRY_DAYS: u32 = 3650;

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenScope {
    /// Only reads: any request that could change something is refused (403).
    Read,
    /// Everything its owner may do, except creating more tokens.
    #[default]
    Write,
}

impl TokenScope {
    /// Every scope, in the order forms offer them.
    pub const ALL: [TokenScope; 2] = [TokenScope::Write, TokenScope::Read];

    /// The name stored and accepted: `read` or `write`.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenScope::Read => "read",
            TokenScope::Write => "write",
        }
    }

    /// `read` or `write` (any case, surrounding spaces ignored); empty is `write`.
    pub fn parse(raw: &str) -> Result<Self, Problem> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "" | "write" => Ok(TokenScope::Write),
            "read" => Ok(TokenScope::Read),
            _ => Err(Problem::NotOneOf {
                allowed: "read, write".into(),
            }),
        }
    }

    /// Whether a request with this HTTP method is allowed: a read token only makes requests
    /// that change nothing (`GET`, `HEAD`, `OPTIONS`).
    pub fn allows_method(self, method: &str) -> bool {
        match self {
            TokenScope::Write => true,
            TokenScope::Read => matches!(method, "GET" | "HEAD" | "OPTIONS"),
        }
    }
}

/// Days until a token expires: empty for never, else a whole number from 1 to
/// [`MAX_EXPIRY_DAYS`].
pub fn parse_expiry_days(raw: &str) -> Result<Option<u32>, Problem> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    let out_of_range = Problem::OutOfRange {
        min: 1,
        max: i64::from(MAX_EXPIRY_DAYS),
    };
    let days: i64 = raw.parse().map_err(|_| out_of_range.clone())?;
    u32::try_from(days)
        .ok()
        .filter(|days| (1..=MAX_EXPIRY_DAYS).contains(days))
        .map(Some)
        .ok_or(out_of_range)
}

/// When a token made at `now` to last `days` expires (`None`: never).
pub fn expires_at(
    now: chrono::DateTime<chrono::Utc>,
    days: Option<u32>,
) -> Option<chrono::DateTime<chrono::Utc>> {
    days.map(|days| now + chrono::TimeDelta::days(i64::from(days)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_and_default_to_write() {
        assert_eq!(TokenScope::parse("read"), Ok(TokenScope::Read));
        assert_eq!(TokenScope::parse(" Write "), Ok(TokenScope::Write));
        assert_eq!(TokenScope::parse(""), Ok(TokenScope::Write));
        assert!(TokenScope::parse("admin").is_err());
        for scope in TokenScope::ALL {
            assert_eq!(TokenScope::parse(scope.as_str()), Ok(scope));
        }
    }

    #[test]
    fn a_read_token_only_reads() {
        for method in ["GET", "HEAD", "OPTIONS"] {
            assert!(TokenScope::Read.allows_method(method));
        }
        for method in ["POST", "PUT", "PATCH", "DELETE", "get"] {
            assert!(!TokenScope::Read.allows_method(method), "{method}");
            assert!(TokenScope::Write.allows_method(method));
        }
    }

    #[test]
    fn expiry_is_one_to_3650_days_or_never() {
        assert_eq!(parse_expiry_days(""), Ok(None));
        assert_eq!(parse_expiry_days(" 30 "), Ok(Some(30)));
        assert_eq!(parse_expiry_days("1"), Ok(Some(1)));
        assert_eq!(parse_expiry_days("3650"), Ok(Some(3650)));
        for bad in ["0", "-1", "3651", "99999999999999999999", "1.5", "soon"] {
            assert_eq!(
                parse_expiry_days(bad),
                Err(Problem::OutOfRange { min: 1, max: 3650 }),
                "{bad}"
            );
        }
        let now = chrono::DateTime::UNIX_EPOCH;
        assert_eq!(expires_at(now, None), None);
        assert_eq!(
            expires_at(now, Some(2)),
            Some(now + chrono::TimeDelta::days(2))
        );
    }
}
