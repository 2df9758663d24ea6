//! Idempotency keys: a money-moving request sent again with the same `Idempotency-Key` gets the
//! first answer instead of being done twice.
//!
//! The key is claimed inside the request's own write transaction, before anything else is
//! written, and the answer is stored in the same transaction: a request that fails leaves no key
//! behind, and of two concurrent requests with one key the second waits on the key's unique
//! index (PostgreSQL) or the write lock (SQLite), then finds the first one's answer.

use crate::backend::entity::idempotency_key;
use crate::domain::problem::Problem;
use crate::error::AppError;
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ActiveValue::NotSet, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr,
    EntityTrait, QueryFilter,
};
use sha2::{Digest, Sha256};

/// Longest key accepted.
pub const MAX_KEY_CHARS: usize = 255;

/// A client's key for one request, with a hash of what the request asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey {
    user_id: i64,
    key: String,
    request_hash: String,
}

impl IdempotencyKey {
    /// Checks `key` (1 to 255 visible ASCII characters) and fingerprints the request: the
    /// endpoint's name and its parameters as JSON.
    pub fn new(
        user_id: i64,
        key: &str,
        endpoint: &str,
        parameters: &impl serde::Serialize,
    ) -> Result<Self, AppError> {
        if key.is_empty() || key.len() > MAX_KEY_CHARS || !key.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(AppError::invalid(
                "Idempotency-Key",
                Problem::BadIdempotencyKey { max: MAX_KEY_CHARS },
            ));
        }
        let json = serde_json::to_string(parameters).map_err(AppError::internal)?;
        let mut hasher = Sha256::new();
        hasher.update(endpoint.as_bytes());
        hasher.update(b"\n");
        hasher.update(json.as_bytes());
        let request_hash = hasher
            .finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        Ok(Self {
            user_id,
            key: key.to_owned(),
            request_hash,
        })
    }
}

/// What a claim found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key is new: do the work, then [`record`] the answer in the same transaction.
    Fresh,
    /// The request was done before: its answer.
    Replay {
        /// HTTP status.
        status: u16,
        /// JSON body.
        body: String,
    },
}

/// Claims `key` inside the caller's write transaction. A key used before with other
/// parameters answers 422 naming the header.
pub async fn claim(
    txn: &impl ConnectionTrait,
    key: &IdempotencyKey,
    now: DateTime<Utc>,
) -> Result<Result<Claim, AppError>, DbErr> {
    let existing = idempotency_key::Entity::find()
        .filter(idempotency_key::Column::UserId.eq(key.user_id))
        .filter(idempotency_key::Column::Key.eq(key.key.as_str()))
        .one(txn)
        .await?;
    if let Some(row) = existing {
        if row.request_hash != key.request_hash {
            return Ok(Err(AppError::invalid(
                "Idempotency-Key",
                Problem::IdempotencyKeyReused,
            )));
        }
        return Ok(Ok(Claim::Replay {
            status: u16::try_from(row.response_status).unwrap_or(200),
            body: row.response_body,
        }));
    }
    // A concurrent request with the same key (PostgreSQL) blocks here until the first commits,
    // then fails on the unique index; the caller retries and finds the answer.
    idempotency_key::ActiveModel {
        id: NotSet,
        user_id: Set(key.user_id),
        key: Set(key.key.clone()),
        request_hash: Set(key.request_hash.clone()),
        response_status: Set(0),
        response_body: Set(String::new()),
        created_at: Set(now),
    }
    .insert(txn)
    .await?;
    Ok(Ok(Claim::Fresh))
}

/// Stores the answer to a claimed key, in the transaction that claimed it.
pub async fn record(
    txn: &impl ConnectionTrait,
    key: &IdempotencyKey,
    status: u16,
    body: &impl serde::Serialize,
) -> Result<(), DbErr> {
    let body = serde_json::to_string(body).map_err(|err| DbErr::Custom(err.to_string()))?;
    idempotency_key::Entity::update_many()
        .col_expr(
            idempotency_key::Column::ResponseStatus,
            sea_orm::sea_query::Expr::value(i16::try_from(status).unwrap_or(200)),
        )
        .col_expr(
            idempotency_key::Column::ResponseBody,
            sea_orm::sea_query::Expr::value(body),
        )
        .filter(idempotency_key::Column::UserId.eq(key.user_id))
        .filter(idempotency_key::Column::Key.eq(key.key.as_str()))
        .exec(txn)
        .await?;
    Ok(())
}

/// A stored answer read back as `T`.
pub fn replayed<T: serde::de::DeserializeOwned>(body: &str) -> Result<T, AppError> {
    serde_json::from_str(body).map_err(AppError::internal)
}
