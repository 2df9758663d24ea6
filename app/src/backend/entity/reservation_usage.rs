//! `reservation_usage`: telemetry measured during a reservation, per GPU it holds.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "reservation_usage")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub reservation_id: i64,
    #[sea_orm(primary_key, auto_increment = false)]
    pub gpu_id: i64,
    pub measured_minutes: i64,
    pub idle_minutes: i64,
    pub util_sum: f64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
