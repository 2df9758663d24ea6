//! `watch_offers`: a window found for a watch, held for watchers until `hold_until`.

use sea_orm::entity::prelude::*;

/// A row of `watch_offers`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "watch_offers")]
pub struct Model {
    /// Id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The watch it answers.
    pub watch_id: i64,
    /// The node.
    pub node_id: i64,
    /// The GPUs, comma-separated ids.
    pub gpu_ids: String,
    /// Share of each, in quarters.
    pub quarters: i16,
    /// The window's start (UTC).
    pub start_at: DateTimeUtc,
    /// The window's end (UTC).
    pub end_at: DateTimeUtc,
    /// Its price when found, minor units.
    pub price_minor: i64,
    /// When it was found.
    pub created_at: DateTimeUtc,
    /// Held for watchers until then.
    pub hold_until: DateTimeUtc,
    /// None while it holds; then `booked`, `lost` or `lapsed`.
    pub outcome: Option<String>,
    /// The booking made from it.
    pub reservation_id: Option<i64>,
}

/// Relations of `watch_offers`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
