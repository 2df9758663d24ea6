//! Signing in: the ways a server offers, who is signed in, and why a sign-in through an identity
//! provider failed. The failure travels from the callback to the sign-in page as a short code
//! (`/signin?error=state_mismatch`), which the page shows as a sentence in the user's language.

use crate::domain::team::{TeamMembership, TeamRole};
use crate::domain::user::{Email, PlatformRole, UserSummary};
use serde::{Deserialize, Serialize};

/// An identity provider shown as a button on the sign-in page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderButton {
    /// The id in the settings (`[oidc.<id>]`), part of the URL.
    pub id: String,
    /// The button's text ("Company SSO").
    pub label: String,
}

/// The ways to sign in that this server offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignInMethods {
    /// OpenID Connect providers, in settings order.
    pub providers: Vec<ProviderButton>,
    /// "Sign in as a demo user" without an identity provider.
    pub dev_sign_in: bool,
}

/// The signed-in user with their teams, for the header and the profile page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedInUser {
    /// Who it is.
    pub user: UserSummary,
    /// The teams they belong to, by name.
    pub teams: Vec<TeamMembership>,
    /// How many of their reservations wait for credits to be paid (shown on every page).
    #[serde(default)]
    pub payments_due: u32,
    /// How many of their bookings a higher-priority booking recently displaced.
    #[serde(default)]
    pub displaced: u32,
    /// How many bookings wait for their approval (as a team admin).
    #[serde(default)]
    pub approvals_waiting: u32,
    /// How many notices in their inbox are unread (the header's bell).
    #[serde(default)]
    pub unread: u32,
}

/// The most powerful role a user holds, as the header shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HighestRole {
    /// Platform admin.
    PlatformAdmin,
    /// Admin of these teams (at least one).
    TeamAdmin(Vec<String>),
    /// A user.
    User,
}

impl SignedInUser {
    /// The role to show next to the name.
    pub fn highest_role(&self) -> HighestRole {
        if self.user.role == PlatformRole::PlatformAdmin {
            return HighestRole::PlatformAdmin;
        }
        let admin_of: Vec<String> = self
            .teams
            .iter()
            .filter(|team| team.role == TeamRole::Admin)
            .map(|team| team.team_name.clone())
            .collect();
        if admin_of.is_empty() {
            HighestRole::User
        } else {
            HighestRole::TeamAdmin(admin_of)
        }
    }
}

/// The address a sign-in vouches for: the one stored on the account, when the identity
/// provider verifies that very address at this sign-in (`verified`: its `email_verified` is
/// true, or the provider is trusted to issue only verified addresses). `admin_emails` promote,
/// and team invitations are accepted, only through this address; a provider address that merely
/// matches a listed one (an account whose provider address changed since) vouches for nothing.
pub fn vouched_address<'a>(
    stored: &'a Email,
    presented: &Email,
    verified: bool,
) -> Option<&'a Email> {
    (verified && stored == presented).then_some(stored)
}

/// Whether a sign-in makes the account a platform admin (see [`vouched_address`]).
pub fn promotes_to_admin(
    admin_emails: &[Email],
    stored: &Email,
    presented: &Email,
    verified: bool,
) -> bool {
    vouched_address(stored, presented, verified).is_some_and(|email| admin_emails.contains(email))
}

/// Why a sign-in through an identity provider was refused. No session is created for any of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignInFailure {
    /// The provider named in the URL is not configured.
    UnknownProvider,
    /// The provider's discovery document, keys or token endpoint could not be reached or read.
    ProviderUnavailable,
    /// The provider answered with an error (the user cancelled, or access was denied).
    ProviderDenied,
    /// The callback came without `state`.
    StateMissing,
    /// The callback's `state` is not the one this browser was given.
    StateMismatch,
    /// No sign-in was in progress in this browser (or it took too long).
    NoSignInInProgress,
    /// The callback came without a code.
    CodeMissing,
    /// The provider refused to exchange the code (used already, expired, or the PKCE verifier
    /// did not match).
    CodeRejected,
    /// The provider's answer held no ID token.
    IdTokenMissing,
    /// The ID token is meant for another application.
    IdTokenAudience,
    /// The ID token comes from another issuer.
    IdTokenIssuer,
    /// The ID token has expired.
    IdTokenExpired,
    /// The ID token's signature does not verify with the provider's published keys.
    IdTokenSignature,
    /// The ID token's nonce is not the one this sign-in sent.
    IdTokenNonce,
    /// The ID token is malformed or otherwise invalid.
    IdTokenInvalid,
    /// Neither the ID token nor the user-info endpoint gave a usable e-mail address.
    EmailMissing,
    /// Another account (signed in through a different provider) already uses this e-mail address.
    AccountConflict,
}

impl SignInFailure {
    /// Every failure, for tests and the page.
    pub const ALL: [SignInFailure; 17] = [
        SignInFailure::UnknownProvider,
        SignInFailure::ProviderUnavailable,
        SignInFailure::ProviderDenied,
        SignInFailure::StateMissing,
        SignInFailure::StateMismatch,
        SignInFailure::NoSignInInProgress,
        SignInFailure::CodeMissing,
        SignInFailure::CodeRejected,
        SignInFailure::IdTokenMissing,
        SignInFailure::IdTokenAudience,
        SignInFailure::IdTokenIssuer,
        SignInFailure::IdTokenExpired,
        SignInFailure::IdTokenSignature,
        SignInFailure::IdTokenNonce,
        SignInFailure::IdTokenInvalid,
        SignInFailure::EmailMissing,
        SignInFailure::AccountConflict,
    ];

    /// The short code used in the sign-in page's URL.
    pub fn code(self) -> &'static str {
        match self {
            SignInFailure::UnknownProvider => "unknown_provider",
            SignInFailure::ProviderUnavailable => "provider_unavailable",
            SignInFailure::ProviderDenied => "provider_denied",
            SignInFailure::StateMissing => "state_missing",
            SignInFailure::StateMismatch => "state_mismatch",
            SignInFailure::NoSignInInProgress => "no_sign_in_in_progress",
            SignInFailure::CodeMissing => "code_missing",
            SignInFailure::CodeRejected => "code_rejected",
            SignInFailure::IdTokenMissing => "id_token_missing",
            SignInFailure::IdTokenAudience => "id_token_audience",
            SignInFailure::IdTokenIssuer => "id_token_issuer",
            SignInFailure::IdTokenExpired => "id_token_expired",
            SignInFailure::IdTokenSignature => "id_token_signature",
            SignInFailure::IdTokenNonce => "id_token_nonce",
            SignInFailure::IdTokenInvalid => "id_token_invalid",
            SignInFailure::EmailMissing => "email_missing",
            SignInFailure::AccountConflict => "account_conflict",
        }
    }

    /// The failure with this code.
    pub fn from_code(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|failure| failure.code() == code)
    }
}

/// A person as an identity provider vouched for them in a verified ID token.
#[derive(Debug, Clone)]
pub struct ExternalIdentity {
    /// Provider id from the settings.
    pub provider: String,
    /// The provider's `sub` claim.
    pub subject: String,
    /// Their e-mail address.
    pub email: crate::domain::user::Email,
    /// Whether the provider vouches for the address at this sign-in: its `email_verified` is
    /// `true`, or the provider is trusted to give only verified addresses (`trust_email`).
    pub email_verified: bool,
    /// Their display name.
    pub name: crate::domain::user::UserName,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::user::Email;

    #[test]
    fn failure_codes_are_unique_and_round_trip() {
        let mut codes: Vec<_> = SignInFailure::ALL.iter().map(|f| f.code()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), SignInFailure::ALL.len());
        for failure in SignInFailure::ALL {
            assert_eq!(SignInFailure::from_code(failure.code()), Some(failure));
        }
        assert_eq!(SignInFailure::from_code("<script>"), None);
    }

    fn user(role: PlatformRole, teams: &[(&str, TeamRole)]) -> SignedInUser {
        SignedInUser {
            payments_due: 0,
            displaced: 0,
            approvals_waiting: 0,
            unread: 0,
            user: UserSummary {
                id: 1,
                email: Email::parse("ana@example.com").unwrap(),
                name: "Ana".into(),
                role,
                time_zone: None,
                default_profile_id: None,
            },
            teams: teams
                .iter()
                .enumerate()
                .map(|(index, (name, role))| TeamMembership {
                    team_id: i64::try_from(index).unwrap(),
                    team_name: (*name).to_owned(),
                    role: *role,
                })
                .collect(),
        }
    }

    #[test]
    fn only_the_stored_address_verified_now_vouches() {
        let email = |raw: &str| Email::parse(raw).unwrap();
        let admins = [email("ops@example.com")];
        let ops = email("ops@example.com");
        assert_eq!(vouched_address(&ops, &ops, true), Some(&ops));
        assert!(promotes_to_admin(&admins, &ops, &ops, true));
        assert_eq!(vouched_address(&ops, &ops, false), None, "not verified");
        assert!(!promotes_to_admin(&admins, &ops, &ops, false));
        // An account stored as bia@ whose provider now says ops@: neither address counts.
        let bia = email("bia@example.com");
        assert_eq!(vouched_address(&bia, &ops, true), None);
        assert!(!promotes_to_admin(&admins, &bia, &ops, true));
        assert!(!promotes_to_admin(&admins, &bia, &bia, true), "not listed");
    }

    #[test]
    fn the_highest_role_wins() {
        let admin = user(PlatformRole::PlatformAdmin, &[("Lab", TeamRole::Admin)]);
        assert_eq!(admin.highest_role(), HighestRole::PlatformAdmin);
        let team_admin = user(
            PlatformRole::User,
            &[("Lab", TeamRole::Admin), ("Ops", TeamRole::Member)],
        );
        assert_eq!(
            team_admin.highest_role(),
            HighestRole::TeamAdmin(vec!["Lab".into()])
        );
        let member = user(PlatformRole::User, &[("Ops", TeamRole::Member)]);
        assert_eq!(member.highest_role(), HighestRole::User);
    }
}
