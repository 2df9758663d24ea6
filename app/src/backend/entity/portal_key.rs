//! `portal_keys`: secrets every portal replica shares.

use sea_orm::entity::prelude::*;

/// A row of `portal_keys`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "portal_keys")]
pub struct Model {
    /// What it is for.
    #[sea_orm(primary_key, auto_increment = false)]
    pub name: String,
    /// The secret, base64.
    pub value: String,
}

/// Relations of `portal_keys`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
