//! `team_invitations`: an e-mail address invited into a team, accepted at that person's sign-in.

use sea_orm::entity::prelude::*;

/// A row of `team_invitations`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "team_invitations")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The team.
    pub team_id: i64,
    /// The invited address (lower case).
    pub email: String,
    /// `member` or `admin`.
    pub role: String,
    /// Who invited.
    pub invited_by: Option<i64>,
    /// When (UTC).
    pub created_at: DateTimeUtc,
    /// When it was accepted (UTC).
    pub accepted_at: Option<DateTimeUtc>,
    /// The user who accepted it.
    pub accepted_user_id: Option<i64>,
    /// When it was withdrawn (UTC).
    pub revoked_at: Option<DateTimeUtc>,
    /// Who withdrew it.
    pub revoked_by: Option<i64>,
}

/// Relations of `team_invitations` (none navigated).
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
