//! `incidents`: a problem on a reservation (or a GPU), its workflow and its SLA credit.

use sea_orm::entity::prelude::*;

/// A row of `incidents`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "incidents")]
pub struct Model {
    /// Id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The reservation it is about (none: a GPU outside any booking).
    pub reservation_id: Option<i64>,
    /// The GPU it is about, when opened from a GPU.
    pub gpu_id: Option<i64>,
    /// The GPUs the evidence covers (the booking's when it was opened), comma-separated ids.
    pub gpu_ids: String,
    /// The node it is about, when the node fell silent.
    pub node_id: Option<i64>,
    /// Who opened it (none: Berth, from the node agent's reports).
    pub opened_by: Option<i64>,
    /// `user`, `admin` or `agent`.
    pub source: String,
    /// What opened it by itself (`xid_79`, `gpu_gone`, `node_silent`).
    pub trigger: Option<String>,
    /// Dedupes incidents Berth opens (one per failure).
    pub auto_key: Option<String>,
    /// What the reporter saw.
    pub report: String,
    /// The window the evidence covers: from …
    pub from_at: DateTimeUtc,
    /// … to (none: to now, while it is open).
    pub to_at: Option<DateTimeUtc>,
    /// `open`, `acknowledged`, `diagnosed`, `resolved` or `rejected`.
    pub state: String,
    /// The first response is due by.
    pub first_response_due_at: DateTimeUtc,
    /// When a platform admin first answered.
    pub first_response_at: Option<DateTimeUtc>,
    /// The stated cause: a diagnosis cause, or `written`.
    pub cause: Option<String>,
    /// The cause in words (for `written`, or a note on the chosen one).
    pub cause_text: Option<String>,
    /// When its reporter reopened it (once).
    pub reopened_at: Option<DateTimeUtc>,
    /// The booking's price when it was opened.
    pub booking_price_minor: i64,
    /// The booking's GPU-minutes when it was opened.
    pub booking_gpu_minutes: i64,
    /// The SLA credit paid.
    pub credit_minor: i64,
    /// The GPU-minutes it paid for.
    pub credit_gpu_minutes: i64,
    /// When it was paid.
    pub credited_at: Option<DateTimeUtc>,
    /// The first lost minute it paid for.
    pub credit_from: Option<DateTimeUtc>,
    /// The end of the last lost minute it paid for.
    pub credit_to: Option<DateTimeUtc>,
    /// When it was opened.
    pub created_at: DateTimeUtc,
    /// When it last changed.
    pub updated_at: DateTimeUtc,
}

/// Relations of `incidents`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
