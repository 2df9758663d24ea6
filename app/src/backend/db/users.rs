//! Users: adding them (by e-mail address), binding them to identity-provider accounts, finding
//! and listing them.

use crate::backend::db::begin_write;
use crate::backend::entity::{identity, user};
use crate::domain::sign_in::promotes_to_admin;
use crate::domain::user::{Email, NewUser, PlatformRole, UserName, UserSummary};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr,
    EntityTrait, QueryFilter, QueryOrder, SqlErr,
};

/// Adds the user, or updates the name and role of the user with that e-mail address; returns it.
#[tracing::instrument(skip_all, fields(user.email = %new_user.email))]
pub async fn upsert_user(
    db: &impl ConnectionTrait,
    new_user: &NewUser,
    now: DateTime<Utc>,
) -> Result<UserSummary, DbErr> {
    user::Entity::insert(user::ActiveModel {
        email: Set(new_user.email.as_str().to_owned()),
        name: Set(new_user.name.as_str().to_owned()),
        is_platform_admin: Set(new_user.role == PlatformRole::PlatformAdmin),
        created_at: Set(now),
        updated_at: Set(now),
        ..Default::default()
    })
    .on_conflict(
        OnConflict::column(user::Column::Email)
            .update_columns([
                user::Column::Name,
                user::Column::IsPlatformAdmin,
                user::Column::UpdatedAt,
            ])
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    find_user_by_email(db, &new_user.email)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("user {}", new_user.email)))
}

/// The user with this e-mail address.
pub async fn find_user_by_email(
    db: &impl ConnectionTrait,
    email: &Email,
) -> Result<Option<UserSummary>, DbErr> {
    user::Entity::find()
        .filter(user::Column::Email.eq(email.as_str()))
        .one(db)
        .await?
        .map(summary)
        .transpose()
}

/// The user with this id.
pub async fn find_user(db: &impl ConnectionTrait, id: i64) -> Result<Option<UserSummary>, DbErr> {
    user::Entity::find_by_id(id)
        .one(db)
        .await?
        .map(summary)
        .transpose()
}

/// Sets the time zone `user_id` sees times in (`None`: the browser's). Names are checked by the
/// caller.
pub async fn set_time_zone(
    db: &impl ConnectionTrait,
    user_id: i64,
    zone: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let updated = user::Entity::update_many()
        .col_expr(user::Column::TimeZone, Expr::value(zone.map(str::to_owned)))
        .col_expr(user::Column::UpdatedAt, Expr::value(now))
        .filter(user::Column::Id.eq(user_id))
        .exec(db)
        .await?;
    Ok(updated.rows_affected == 1)
}

/// The names of the users `ids`.
pub async fn names_of(
    db: &impl ConnectionTrait,
    ids: &[i64],
) -> Result<std::collections::HashMap<i64, String>, DbErr> {
    if ids.is_empty() {
        return Ok(std::collections::HashMap::new());
    }
    Ok(user::Entity::find()
        .filter(user::Column::Id.is_in(ids.to_vec()))
        .all(db)
        .await?
        .into_iter()
        .map(|row| (row.id, row.name))
        .collect())
}

/// Every user, by e-mail address.
pub async fn list_users(db: &impl ConnectionTrait) -> Result<Vec<UserSummary>, DbErr> {
    user::Entity::find()
        .order_by_asc(user::Column::Email)
        .all(db)
        .await?
        .into_iter()
        .map(summary)
        .collect()
}

/// A database row as a [`UserSummary`].
pub(crate) fn summary(row: user::Model) -> Result<UserSummary, DbErr> {
    Ok(UserSummary {
        email: Email::parse(&row.email)
            .map_err(|err| DbErr::Custom(format!("users.id={}: {err}", row.id)))?,
        id: row.id,
        name: row.name,
        time_zone: row.time_zone,
        role: if row.is_platform_admin {
            PlatformRole::PlatformAdmin
        } else {
            PlatformRole::User
        },
    })
}

/// A person as an identity provider vouched for them in a verified ID token.
#[derive(Debug, Clone)]
pub struct ExternalIdentity {
    /// Provider id from the settings.
    pub provider: String,
    /// The provider's `sub` claim.
    pub subject: String,
    /// Their e-mail address.
    pub email: Email,
    /// Whether the provider vouches for the address at this sign-in: its `email_verified` is
    /// `true`, or the provider is trusted to give only verified addresses (`trust_email`).
    pub email_verified: bool,
    /// Their display name.
    pub name: UserName,
}

/// What [`sign_in_identity`] found.
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
/// whose provider address changed to a listed one is not promoted).
#[tracing::instrument(skip_all, fields(identity.provider = %identity.provider))]
pub async fn sign_in_identity(
    db: &DatabaseConnection,
    identity: &ExternalIdentity,
    admin_emails: &[Email],
    now: DateTime<Utc>,
) -> Result<IdentitySignIn, DbErr> {
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
            other => return other,
        }
    }
}

async fn try_sign_in_identity(
    db: &DatabaseConnection,
    identity: &ExternalIdentity,
    admin_emails: &[Email],
    now: DateTime<Utc>,
) -> Result<IdentitySignIn, DbErr> {
    let make_admin = |stored: &str| {
        Email::parse(stored).is_ok_and(|stored| {
            promotes_to_admin(
                admin_emails,
                &stored,
                &identity.email,
                identity.email_verified,
            )
        })
    };
    let txn = begin_write(db).await?;
    let bound = identity::Entity::find()
        .filter(identity::Column::Provider.eq(&identity.provider))
        .filter(identity::Column::Subject.eq(&identity.subject))
        .one(&txn)
        .await?;
    let user_id = if let Some(bound) = bound {
        bound.user_id
    } else {
        let existing = user::Entity::find()
            .filter(user::Column::Email.eq(identity.email.as_str()))
            .one(&txn)
            .await?;
        let user_id = match existing {
            Some(existing) => {
                let has_identity = identity::Entity::find()
                    .filter(identity::Column::UserId.eq(existing.id))
                    .one(&txn)
                    .await?
                    .is_some();
                if has_identity || !identity.email_verified {
                    return Ok(IdentitySignIn::EmailTaken);
                }
                existing.id
            }
            None => {
                user::ActiveModel {
                    email: Set(identity.email.as_str().to_owned()),
                    name: Set(identity.name.as_str().to_owned()),
                    is_platform_admin: Set(make_admin(identity.email.as_str())),
                    created_at: Set(now),
                    updated_at: Set(now),
                    ..Default::default()
                }
                .insert(&txn)
                .await?
                .id
            }
        };
        identity::ActiveModel {
            user_id: Set(user_id),
            provider: Set(identity.provider.clone()),
            subject: Set(identity.subject.clone()),
            created_at: Set(now),
            ..Default::default()
        }
        .insert(&txn)
        .await?;
        user_id
    };
    // The provider's name is the current one; the admin bootstrap only ever adds the role, for
    // the address stored on the account.
    let stored = user::Entity::find_by_id(user_id)
        .one(&txn)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("user {user_id}")))?;
    let mut update = user::Entity::update_many()
        .col_expr(user::Column::Name, Expr::value(identity.name.as_str()))
        .col_expr(user::Column::UpdatedAt, Expr::value(now))
        .filter(user::Column::Id.eq(user_id));
    if make_admin(&stored.email) {
        update = update.col_expr(user::Column::IsPlatformAdmin, Expr::value(true));
    }
    update.exec(&txn).await?;
    let user = find_user(&txn, user_id)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("user {user_id}")))?;
    txn.commit().await?;
    Ok(IdentitySignIn::User(user))
}
