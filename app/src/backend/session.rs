//! Who is signed in: signing in through an identity provider (finding or creating the user),
//! and the signed-in user with what the navigation shows about them.

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::state::AppState;
use crate::domain::sign_in::{ExternalIdentity, SignedInUser, promotes_to_admin};
use crate::domain::user::{Email, UserSummary};
use crate::error::AppError;
use chrono::{DateTime, Utc};
use sea_orm::{DatabaseConnection, DbErr, SqlErr};

/// `actor` with their teams and the counts the navigation shows (payments due, displaced
/// bookings, approvals waiting for them).
pub async fn signed_in_user(
    state: &AppState,
    actor: Actor,
    now: DateTime<Utc>,
) -> Result<SignedInUser, AppError> {
    let db = &state.db;
    let (teams, payments_due, displaced, approvals_waiting, unread) = tokio::try_join!(
        actor.memberships(db),
        db::payments::count_due(db, actor.user.id),
        db::quotas::count_displaced(db, actor.user.id, now),
        db::quotas::count_awaiting_for_admin(db, actor.user.id),
        db::notify::unread(db, actor.user.id),
    )?;
    Ok(SignedInUser {
        user: actor.user,
        teams,
        payments_due,
        displaced,
        approvals_waiting,
        unread,
    })
}

/// A page of users, oldest account first (platform admins). `page` is the request's as parsed:
/// a problem with it is answered only to those allowed.
pub async fn users(
    state: &AppState,
    actor: &Actor,
    page: Result<crate::domain::paging::PageRequest, AppError>,
) -> Result<crate::domain::paging::Page<crate::domain::user::UserSummary>, AppError> {
    let db = &state.db;
    actor.require_platform_admin()?;
    Ok(db::users::users_page(db, &page?).await?)
}

/// How a sign-in through an identity provider ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentitySignIn {
    /// The user bound to the identity (created now if it is their first sign-in).
    User(UserSummary),
    /// The e-mail address belongs to an account bound to another identity (or to an account
    /// added with `berth user add` while the provider does not vouch for the address); nothing
    /// was written.
    EmailTaken,
}

/// Finds or creates the user bound to `identity`, in one transaction.
///
/// Users are bound to (provider, subject), never to an e-mail address alone: a first sign-in
/// creates a user, or binds to an existing account with the same address only when that account
/// has no identity yet (added with `berth user add`) and the provider verifies the address.
/// A user becomes a platform admin when the address stored on their account is one of
/// `admin_emails` and the provider verifies that very address at this sign-in (a linked user
/// whose provider address changed to a listed one is not promoted). The provider's name is the
/// current one.
#[tracing::instrument(skip_all, fields(identity.provider = %identity.provider))]
pub async fn sign_in_identity(
    state: &AppState,
    identity: &ExternalIdentity,
    now: DateTime<Utc>,
) -> Result<IdentitySignIn, AppError> {
    let (db, admin_emails) = (&state.db, state.portal.admin_emails.as_slice());
    // Two first sign-ins of one person at once: the loser of the unique index tries again and
    // finds the winner's row.
    let mut attempts = 0;
    loop {
        attempts += 1;
        match try_sign_in_identity(db, identity, admin_emails, now).await {
            Err(err)
                if attempts < 3
                    && matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) =>
            {
                tracing::debug!(error = %err, "concurrent first sign-in, retrying");
            }
            other => return Ok(other?),
        }
    }
}

async fn try_sign_in_identity(
    db: &DatabaseConnection,
    identity: &ExternalIdentity,
    admin_emails: &[Email],
    now: DateTime<Utc>,
) -> Result<IdentitySignIn, DbErr> {
    let promotes = |stored: &str| {
        Email::parse(stored).is_ok_and(|stored| {
            promotes_to_admin(
                admin_emails,
                &stored,
                &identity.email,
                identity.email_verified,
            )
        })
    };
    let txn = db::begin_write(db).await?;
    let bound = db::users::identity_user(&txn, &identity.provider, &identity.subject).await?;
    let user_id = match bound {
        Some(user_id) => user_id,
        None => {
            let email = identity.email.as_str();
            let user_id = match db::users::user_with_email(&txn, email).await? {
                Some((existing, _)) => {
                    if db::users::has_identity(&txn, existing).await? || !identity.email_verified {
                        return Ok(IdentitySignIn::EmailTaken);
                    }
                    existing
                }
                None => {
                    let name = identity.name.as_str();
                    db::users::insert_user(&txn, email, name, promotes(email), now).await?
                }
            };
            db::users::bind_identity(&txn, user_id, &identity.provider, &identity.subject, now)
                .await?;
            user_id
        }
    };
    // The admin bootstrap only ever adds the role, for the address stored on the account.
    let stored = db::users::stored_email(&txn, user_id).await?;
    db::users::refresh_user(
        &txn,
        user_id,
        identity.name.as_str(),
        promotes(&stored),
        now,
    )
    .await?;
    let user = db::users::find_user(&txn, user_id)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("user {user_id}")))?;
    txn.commit().await?;
    Ok(IdentitySignIn::User(user))
}
