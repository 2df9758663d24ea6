//! `fleet_usage_hours`: the whole fleet's measured GPU-minutes per UTC hour.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "fleet_usage_hours")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub hour_ms: i64,
    pub measured_minutes: i64,
    pub idle_minutes: i64,
    pub util_sum: f64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
