//! `audit_log`: append-only record of admin and money actions.

use sea_orm::entity::prelude::*;

/// A row of `audit_log`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "audit_log")]
pub struct Model {
    /// Primary key (the order things happened in).
    #[sea_orm(primary_key)]
    pub id: i64,
    /// When (UTC).
    pub at: DateTimeUtc,
    /// Who (None: the command line or a job).
    pub actor_id: Option<i64>,
    /// What (`team.invite`, `credits.grant`, …).
    pub action: String,
    /// The kind of thing acted on (`team`, `user`, `gpu`, …).
    pub target_kind: String,
    /// Its id.
    pub target_id: String,
    /// The team concerned, if any (so team admins can read their part).
    pub team_id: Option<i64>,
    /// Values before, as JSON.
    pub before_json: Option<String>,
    /// Values after, as JSON.
    pub after_json: Option<String>,
}

/// Relations of `audit_log` (none).
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
