//! `incident_messages`: replies and changes of state on an incident.

use sea_orm::entity::prelude::*;

/// A row of `incident_messages`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "incident_messages")]
pub struct Model {
    /// Id (the order they were written in).
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The incident.
    pub incident_id: i64,
    /// When.
    pub at: DateTimeUtc,
    /// Who (none: Berth).
    pub author_id: Option<i64>,
    /// `reply` or `state`.
    pub kind: String,
    /// The new state, for `state`.
    pub state: Option<String>,
    /// What they wrote.
    pub body: String,
}

/// Relations of `incident_messages`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
