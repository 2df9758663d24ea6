//! Personal API tokens: issuing, authenticating and revoking. Only hashes are stored.

use crate::backend::db::users::summary;
use crate::backend::entity::{api_token, user};
use crate::domain::api_token::TokenScope;
use crate::domain::user::{ApiTokenInfo, TokenName, UserSummary};
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QueryOrder,
};

/// What a new token may do and until when.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenGrant {
    /// Read only, or read and write.
    pub scope: TokenScope,
    /// When it stops working; `None`: never.
    pub expires_at: Option<DateTime<Utc>>,
}

/// Stores a new write token without expiry (its hash) for `user_id`; returns the token's id.
pub async fn insert_token(
    db: &impl ConnectionTrait,
    user_id: i64,
    name: &TokenName,
    token_hash: &str,
    now: DateTime<Utc>,
) -> Result<i64, DbErr> {
    insert_granted_token(db, user_id, name, token_hash, TokenGrant::default(), now).await
}

/// Stores a new token (its hash) for `user_id` with `grant`; returns the token's id.
#[tracing::instrument(skip_all, fields(user.id = user_id, api_token.scope = grant.scope.as_str()))]
pub async fn insert_granted_token(
    db: &impl ConnectionTrait,
    user_id: i64,
    name: &TokenName,
    token_hash: &str,
    grant: TokenGrant,
    now: DateTime<Utc>,
) -> Result<i64, DbErr> {
    let row = api_token::ActiveModel {
        user_id: Set(user_id),
        name: Set(name.as_str().to_owned()),
        token_hash: Set(token_hash.to_owned()),
        created_at: Set(now),
        last_used_at: Set(None),
        revoked_at: Set(None),
        scope: Set(grant.scope.as_str().to_owned()),
        expires_at: Set(grant.expires_at),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(row.id)
}

/// What a presented token turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenCheck {
    /// A live token of this user, with its scope.
    Valid(UserSummary, TokenScope),
    /// A token that was valid until its expiry, now past.
    Expired,
    /// No live token has this hash (never issued, or revoked).
    Unknown,
}

/// How stale a token's `last_used_at` may get before a use updates it.
const LAST_USED_PRECISION: chrono::TimeDelta = chrono::TimeDelta::minutes(1);

/// The owner and scope of the live (not revoked, not expired) token with this hash; records
/// the use (to the minute).
pub async fn authenticate_token(
    db: &impl ConnectionTrait,
    token_hash: &str,
    now: DateTime<Utc>,
) -> Result<TokenCheck, DbErr> {
    let found = api_token::Entity::find()
        .filter(api_token::Column::TokenHash.eq(token_hash))
        .filter(api_token::Column::RevokedAt.is_null())
        .find_also_related(user::Entity)
        .one(db)
        .await?;
    let Some((token, Some(owner))) = found else {
        return Ok(TokenCheck::Unknown);
    };
    if token.expires_at.is_some_and(|end| end <= now) {
        return Ok(TokenCheck::Expired);
    }
    // Anything unreadable is treated as the narrower scope.
    let scope = TokenScope::parse(&token.scope).unwrap_or(TokenScope::Read);
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
    Ok(TokenCheck::Valid(summary(owner)?, scope))
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

/// The user's tokens that are not revoked (expired ones too, marked), newest first.
pub async fn list_own_tokens(
    db: &impl ConnectionTrait,
    user_id: i64,
    now: DateTime<Utc>,
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
            scope: TokenScope::parse(&row.scope).unwrap_or(TokenScope::Read),
            expires_at: row.expires_at,
            expired: row.expires_at.is_some_and(|end| end <= now),
        })
        .collect())
}
