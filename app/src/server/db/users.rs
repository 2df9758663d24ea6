//! Users: adding them (by e-mail address), finding and listing them.

use crate::domain::user::{Email, NewUser, PlatformRole, UserSummary};
use crate::server::entity::user;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
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
        role: if row.is_platform_admin {
            PlatformRole::PlatformAdmin
        } else {
            PlatformRole::User
        },
    })
}
