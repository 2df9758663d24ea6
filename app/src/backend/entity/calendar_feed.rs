//! `calendar_feeds`: the secret addresses calendars subscribe to (a user's bookings, or a team's
//! for its admins), stored as the SHA-256 of their token.

use sea_orm::entity::prelude::*;

/// A row of `calendar_feeds`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "calendar_feeds")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Whose address it is.
    pub user_id: i64,
    /// The team whose bookings it lists (None: the user's own).
    pub team_id: Option<i64>,
    /// Hex SHA-256 of the token in the address.
    pub token_hash: String,
    /// When it was made.
    pub created_at: DateTimeUtc,
}

/// Relations of `calendar_feeds` (none followed).
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
