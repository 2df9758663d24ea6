//! Users as the portal knows them: validated e-mail addresses, names and roles.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a user field was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UserInputError {
    /// Not an address of the form `local@domain.tld`.
    #[error("`{0}` is not an e-mail address")]
    Email(String),
    /// Blank, or longer than the limit.
    #[error("a name needs 1 to {max} characters")]
    Name {
        /// The limit.
        max: usize,
    },
}

/// An e-mail address, trimmed and lower-cased, so one person has one spelling.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Email(String);

impl Email {
    /// Parses `raw`: one `@`, something before it, a dotted domain after it, no spaces.
    pub fn parse(raw: &str) -> Result<Self, UserInputError> {
        let email = raw.trim().to_lowercase();
        let valid = email.len() <= 320
            && !email.chars().any(char::is_whitespace)
            && matches!(email.split_once('@'), Some((local, domain))
                if !local.is_empty()
                    && !domain.contains('@')
                    && domain.split('.').count() >= 2
                    && domain.split('.').all(|label| !label.is_empty()));
        if valid {
            Ok(Self(email))
        } else {
            Err(UserInputError::Email(raw.trim().to_owned()))
        }
    }

    /// The address.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A trimmed, non-empty label of at most `MAX` characters (user names, token names).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Label<const MAX: usize>(String);

impl<const MAX: usize> Label<MAX> {
    /// Parses `raw`.
    pub fn parse(raw: &str) -> Result<Self, UserInputError> {
        let label = raw.trim();
        if label.is_empty() || label.chars().count() > MAX {
            Err(UserInputError::Name { max: MAX })
        } else {
            Ok(Self(label.to_owned()))
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A person's display name.
pub type UserName = Label<200>;

/// The name a user gives an API token ("CI pipeline").
pub type TokenName = Label<100>;

/// What a user is allowed to do across the whole portal. Team roles come with teams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlatformRole {
    /// Books and manages their own reservations.
    User,
    /// Also manages GPUs, prices, users and credits.
    PlatformAdmin,
}

/// A user as shown to themselves and to admins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserSummary {
    /// Database id.
    pub id: i64,
    /// E-mail address.
    pub email: Email,
    /// Display name.
    pub name: String,
    /// Portal-wide role.
    pub role: PlatformRole,
    /// IANA time zone chosen on the profile page; `None`: the browser's.
    #[serde(default)]
    pub time_zone: Option<String>,
    /// The environment profile their bookings use when they name none (read with the user, so
    /// that a booking need not read it again).
    #[serde(default)]
    pub default_profile_id: Option<i64>,
}

/// The time-zone setting on the profile page: the user's choice and the names to choose from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeZoneChoice {
    /// The chosen IANA zone; `None`: the browser's.
    pub current: Option<String>,
    /// Every IANA zone name, sorted.
    pub zones: Vec<String>,
}

/// A live personal API token as its owner sees it (the secret itself is shown only once, when
/// created).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiTokenInfo {
    /// Database id.
    pub id: i64,
    /// The owner's label.
    pub name: String,
    /// When it was created (UTC).
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// When it last authenticated a request (UTC).
    pub last_used_at: Option<chrono::DateTime<chrono::Utc>>,
    /// What it may do.
    #[serde(default)]
    pub scope: crate::domain::api_token::TokenScope,
    /// When it stops working (UTC); `None`: never.
    #[serde(default)]
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Whether `expires_at` had passed when the list was made (the browser's clock is not asked).
    #[serde(default)]
    pub expired: bool,
}

/// A token just created: the secret is in `token`, shown once and never stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedApiToken {
    /// What the list shows.
    pub info: ApiTokenInfo,
    /// The secret (`berth_…`).
    pub token: String,
}

/// A user to add, or to update by e-mail address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUser {
    /// E-mail address (the key).
    pub email: Email,
    /// Display name.
    pub name: UserName,
    /// Portal-wide role.
    pub role: PlatformRole,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn email_addresses_are_trimmed_and_lower_cased() {
        assert_eq!(
            Email::parse("  Ana.Souza@Example.COM ").unwrap().as_str(),
            "ana.souza@example.com"
        );
    }

    #[test]
    fn malformed_email_addresses_are_refused() {
        for raw in [
            "",
            "ana",
            "@example.com",
            "ana@",
            "ana@example",
            "ana@@example.com",
            "a na@example.com",
            "ana@example..com",
        ] {
            assert!(Email::parse(raw).is_err(), "{raw:?} must be refused");
        }
    }

    #[test]
    fn labels_are_trimmed_and_bounded() {
        assert_eq!(TokenName::parse("  CI  ").unwrap().as_str(), "CI");
        assert!(TokenName::parse("   ").is_err());
        assert!(TokenName::parse(&"x".repeat(101)).is_err());
        assert!(
            TokenName::parse(&"é".repeat(100)).is_ok(),
            "characters, not bytes, are counted"
        );
    }
}
