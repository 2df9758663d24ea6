//! `idempotency_keys`.

use sea_orm::entity::prelude::*;

/// A row of `idempotency_keys`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "idempotency_keys")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Whose request.
    pub user_id: i64,
    /// The client's key.
    pub key: String,
    /// SHA-256 (hex) of the endpoint and its parameters.
    pub request_hash: String,
    /// The first answer's HTTP status.
    pub response_status: i16,
    /// The first answer's JSON body.
    pub response_body: String,
    /// When (UTC).
    pub created_at: DateTimeUtc,
}

/// Relations of `idempotency_keys` (none navigated).
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
