//! `users`.

use sea_orm::entity::prelude::*;

/// A row of `users`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "users")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Lower-case e-mail address (unique).
    pub email: String,
    /// Display name.
    pub name: String,
    /// Platform admin.
    pub is_platform_admin: bool,
    /// Creation time (UTC).
    pub created_at: DateTimeUtc,
    /// Last change (UTC).
    pub updated_at: DateTimeUtc,
    /// IANA time zone chosen on the profile page; NULL: the browser's.
    pub time_zone: Option<String>,
    /// Language of the user's e-mails (`en`, `pt-BR`), the last one they chose in the portal;
    /// NULL: English.
    pub locale: Option<String>,
    /// The name Berth uses for this user on every node (unique; NULL until first given).
    pub login: Option<String>,
    /// The profile a booking uses when it names none.
    pub default_profile_id: Option<i64>,
}

/// Relations of `users`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// A user has API tokens.
    #[sea_orm(has_many = "super::api_token::Entity")]
    ApiTokens,
}

impl Related<super::api_token::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::ApiTokens.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
