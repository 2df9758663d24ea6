//! `webhooks`: URLs that receive a user's (or a team's) notices as signed JSON.

use sea_orm::entity::prelude::*;

/// A row of `webhooks`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "webhooks")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Who made it (and is told when it is disabled).
    pub user_id: i64,
    /// The team whose notices it receives (None: its maker's own).
    pub team_id: Option<i64>,
    /// Where the JSON is posted.
    pub url: String,
    /// The HMAC-SHA256 key of its signatures (shown to its maker once).
    pub secret: String,
    /// Whether it receives notices (false once disabled).
    pub active: bool,
    /// Tries that failed in a row.
    pub failures: i32,
    /// Why the last try failed.
    pub last_error: Option<String>,
    /// When Berth disabled it after repeated failures.
    pub disabled_at: Option<DateTimeUtc>,
    /// When it was made.
    pub created_at: DateTimeUtc,
}

/// Relations of `webhooks` (none followed).
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
