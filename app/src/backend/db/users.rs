//! Users: adding them (by e-mail address), the queries a sign-in through an identity provider
//! runs (`backend::session` decides), finding and listing them.

use crate::backend::entity::{identity, user};
use crate::domain::user::{Email, NewUser, PlatformRole, UserSummary};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect,
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

/// Sets the language of `user_id`'s e-mails (a locale code checked by the caller).
pub async fn set_locale(
    db: &impl ConnectionTrait,
    user_id: i64,
    locale: &str,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let updated = user::Entity::update_many()
        .col_expr(user::Column::Locale, Expr::value(locale.to_owned()))
        .col_expr(user::Column::UpdatedAt, Expr::value(now))
        .filter(user::Column::Id.eq(user_id))
        .exec(db)
        .await?;
    Ok(updated.rows_affected == 1)
}

/// Sets the language of `user_id`'s e-mails unless one is set already (their first sign-in).
pub async fn set_first_locale(
    db: &impl ConnectionTrait,
    user_id: i64,
    locale: &str,
) -> Result<(), DbErr> {
    user::Entity::update_many()
        .col_expr(user::Column::Locale, Expr::value(locale.to_owned()))
        .filter(user::Column::Id.eq(user_id))
        .filter(user::Column::Locale.is_null())
        .exec(db)
        .await?;
    Ok(())
}

/// The platform admins' ids.
pub async fn platform_admins(db: &impl ConnectionTrait) -> Result<Vec<i64>, DbErr> {
    user::Entity::find()
        .select_only()
        .column(user::Column::Id)
        .filter(user::Column::IsPlatformAdmin.eq(true))
        .into_tuple()
        .all(db)
        .await
}

/// A user's row (address, language and zone for an e-mail).
pub async fn row(db: &impl ConnectionTrait, id: i64) -> Result<Option<user::Model>, DbErr> {
    user::Entity::find_by_id(id).one(db).await
}

/// The rows of users `ids`, by id.
pub async fn rows_of(
    db: &impl ConnectionTrait,
    ids: &[i64],
) -> Result<std::collections::HashMap<i64, user::Model>, DbErr> {
    if ids.is_empty() {
        return Ok(std::collections::HashMap::new());
    }
    Ok(user::Entity::find()
        .filter(user::Column::Id.is_in(ids.to_vec()))
        .all(db)
        .await?
        .into_iter()
        .map(|row| (row.id, row))
        .collect())
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

/// Every user, by e-mail address (the `berth user list` command; the portal pages them).
pub async fn list_users(db: &impl ConnectionTrait) -> Result<Vec<UserSummary>, DbErr> {
    user::Entity::find()
        .order_by_asc(user::Column::Email)
        .all(db)
        .await?
        .into_iter()
        .map(summary)
        .collect()
}

/// A page of users, oldest account first (by id).
pub async fn users_page(
    db: &impl ConnectionTrait,
    page: &crate::domain::paging::PageRequest,
) -> Result<crate::domain::paging::Page<UserSummary>, DbErr> {
    use crate::domain::paging::{Cursor, ListKind, Page};
    let mut query = user::Entity::find().order_by_asc(user::Column::Id);
    if let Some(after) = page.after {
        query = query.filter(user::Column::Id.gt(after.id));
    }
    let rows = query.limit(page.fetch()).all(db).await?;
    let page = Page::from_rows(rows, page, ListKind::Users, |row| Cursor::id(row.id));
    Ok(Page {
        items: page
            .items
            .into_iter()
            .map(summary)
            .collect::<Result<_, _>>()?,
        next: page.next,
    })
}

/// A database row as a [`UserSummary`].
pub(crate) fn summary(row: user::Model) -> Result<UserSummary, DbErr> {
    Ok(UserSummary {
        email: Email::parse(&row.email)
            .map_err(|err| DbErr::Custom(format!("users.id={}: {err}", row.id)))?,
        id: row.id,
        name: row.name,
        time_zone: row.time_zone,
        default_profile_id: row.default_profile_id,
        role: if row.is_platform_admin {
            PlatformRole::PlatformAdmin
        } else {
            PlatformRole::User
        },
    })
}

/// The user bound to the identity (`provider`, `subject`), if any.
pub async fn identity_user(
    db: &impl ConnectionTrait,
    provider: &str,
    subject: &str,
) -> Result<Option<i64>, DbErr> {
    Ok(identity::Entity::find()
        .filter(identity::Column::Provider.eq(provider))
        .filter(identity::Column::Subject.eq(subject))
        .one(db)
        .await?
        .map(|bound| bound.user_id))
}

/// The id and stored address of the user with `email`, if any.
pub async fn user_with_email(
    db: &impl ConnectionTrait,
    email: &str,
) -> Result<Option<(i64, String)>, DbErr> {
    Ok(user::Entity::find()
        .filter(user::Column::Email.eq(email))
        .one(db)
        .await?
        .map(|found| (found.id, found.email)))
}

/// Whether the user is bound to any identity.
pub async fn has_identity(db: &impl ConnectionTrait, user_id: i64) -> Result<bool, DbErr> {
    Ok(identity::Entity::find()
        .filter(identity::Column::UserId.eq(user_id))
        .one(db)
        .await?
        .is_some())
}

/// Inserts a user; answers the new id.
pub async fn insert_user(
    db: &impl ConnectionTrait,
    email: &str,
    name: &str,
    platform_admin: bool,
    now: DateTime<Utc>,
) -> Result<i64, DbErr> {
    Ok(user::ActiveModel {
        email: Set(email.to_owned()),
        name: Set(name.to_owned()),
        is_platform_admin: Set(platform_admin),
        created_at: Set(now),
        updated_at: Set(now),
        ..Default::default()
    }
    .insert(db)
    .await?
    .id)
}

/// Binds the identity (`provider`, `subject`) to the user.
pub async fn bind_identity(
    db: &impl ConnectionTrait,
    user_id: i64,
    provider: &str,
    subject: &str,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    identity::ActiveModel {
        user_id: Set(user_id),
        provider: Set(provider.to_owned()),
        subject: Set(subject.to_owned()),
        created_at: Set(now),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(())
}

/// The address stored on the user's account.
pub async fn stored_email(db: &impl ConnectionTrait, user_id: i64) -> Result<String, DbErr> {
    user::Entity::find_by_id(user_id)
        .one(db)
        .await?
        .map(|found| found.email)
        .ok_or_else(|| DbErr::RecordNotFound(format!("user {user_id}")))
}

/// Sets the user's name, and makes them a platform admin when `promote`.
pub async fn refresh_user(
    db: &impl ConnectionTrait,
    user_id: i64,
    name: &str,
    promote: bool,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let mut update = user::Entity::update_many()
        .col_expr(user::Column::Name, Expr::value(name))
        .col_expr(user::Column::UpdatedAt, Expr::value(now))
        .filter(user::Column::Id.eq(user_id));
    if promote {
        update = update.col_expr(user::Column::IsPlatformAdmin, Expr::value(true));
    }
    update.exec(db).await?;
    Ok(())
}
