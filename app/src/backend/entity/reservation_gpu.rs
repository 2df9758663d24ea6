//! `reservation_gpus`: the GPUs a reservation holds.

use sea_orm::entity::prelude::*;

/// A row of `reservation_gpus`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "reservation_gpus")]
pub struct Model {
    /// The reservation.
    #[sea_orm(primary_key, auto_increment = false)]
    pub reservation_id: i64,
    /// One of its GPUs.
    #[sea_orm(primary_key, auto_increment = false)]
    pub gpu_id: i64,
    /// The reservation's start (UTC), copied so holds can be found by GPU and time.
    pub start_at: DateTimeUtc,
    /// The reservation's end (UTC, exclusive).
    pub end_at: DateTimeUtc,
}

/// Relations of `reservation_gpus`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The reservation.
    #[sea_orm(
        belongs_to = "super::reservation::Entity",
        from = "Column::ReservationId",
        to = "super::reservation::Column::Id"
    )]
    Reservation,
}

impl Related<super::reservation::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Reservation.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
