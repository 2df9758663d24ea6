//! Personal API tokens: issuing, authenticating and revoking. Only hashes are stored.

use crate::domain::user::{ApiTokenInfo, TokenName, UserSummary};
use crate::server::db::users::summary;
use crate::server::entity::{api_token, user};
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QueryOrder,
};

/// Stores a new token (its hash) for `user_id`; returns the token's id.
#[tracing::instrument(skip_all, fields(user.id = user_id))]
pub async fn insert_token(
    db: &impl ConnectionTrait,
    user_id: i64,
    name: &TokenName,
    token_hash: &str,
    now: DateTime<Utc>,
) -> Result<i64, DbErr> {
    let row = api_token::ActiveModel {
        user_id: Set(user_id),
        name: Set(name.as_str().to_owned()),
        token_hash: Set(token_hash.to_owned()),
        created_at: Set(now),
        last_used_at: Set(None),
        revoked_at: Set(None),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(row.id)
}

/// How stale a token's `last_used_at` may get before a use updates it.
const LAST_USED_PRECISION: chrono::TimeDelta = chrono::TimeDelta::minutes(1);

/// The owner of the live (not revoked) token with this hash; records the use (to the minute).
pub async fn authenticate_token(
    db: &impl ConnectionTrait,
    token_hash: &str,
    now: DateTime<Utc>,
) -> Result<Option<UserSummary>, DbErr> {
    let found = api_token::Entity::find()
        .filter(api_token::Column::TokenHash.eq(token_hash))
        .filter(api_token::Column::RevokedAt.is_null())
        .find_also_related(user::Entity)
        .one(db)
        .await?;
    let Some((token, Some(owner))) = found else {
        return Ok(None);
    };
    // Minute precision is enough for "last used", and spares a write (a disk flush on
    // PostgreSQL) on every call of a busy script.
    if token
        .last_used_at
        .is_none_or(|last| now - last >= LAST_USED_PRECISION)
    {
        api_token::Entity::update_many()
            .col_expr(
                api_token::Column::LastUsedAt,
                sea_orm::sea_query::Expr::value(now),
            )
            .filter(api_token::Column::Id.eq(token.id))
            .exec(db)
            .await?;
    }
    summary(owner).map(Some)
}

/// Revokes token `token_id`; returns whether a live token was revoked.
#[tracing::instrument(skip_all, fields(api_token.id = token_id))]
pub async fn revoke_token(
    db: &impl ConnectionTrait,
    token_id: i64,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let result = api_token::Entity::update_many()
        .col_expr(
            api_token::Column::RevokedAt,
            sea_orm::sea_query::Expr::value(now),
        )
        .filter(api_token::Column::Id.eq(token_id))
        .filter(api_token::Column::RevokedAt.is_null())
        .exec(db)
        .await?;
    Ok(result.rows_affected == 1)
}

/// Revokes the user's own token `token_id`; returns whether a live token of theirs was revoked.
#[tracing::instrument(skip_all, fields(user.id = user_id, api_token.id = token_id))]
pub async fn revoke_own_token(
    db: &impl ConnectionTrait,
    user_id: i64,
    token_id: i64,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let result = api_token::Entity::update_many()
        .col_expr(
            api_token::Column::RevokedAt,
            sea_orm::sea_query::Expr::value(now),
        )
        .filter(api_token::Column::Id.eq(token_id))
        .filter(api_token::Column::UserId.eq(user_id))
        .filter(api_token::Column::RevokedAt.is_null())
        .exec(db)
        .await?;
    Ok(result.rows_affected == 1)
}

/// The user's live tokens, newest first.
pub async fn list_own_tokens(
    db: &impl ConnectionTrait,
    user_id: i64,
) -> Result<Vec<ApiTokenInfo>, DbErr> {
    Ok(api_token::Entity::find()
        .filter(api_token::Column::UserId.eq(user_id))
        .filter(api_token::Column::RevokedAt.is_null())
        .order_by_desc(api_token::Column::CreatedAt)
        .order_by_desc(api_token::Column::Id)
        .all(db)
        .await?
        .into_iter()
        .map(|row| ApiTokenInfo {
            id: row.id,
            name: row.name,
            created_at: row.created_at,
            last_used_at: row.last_used_at,
        })
        .collect())
}
