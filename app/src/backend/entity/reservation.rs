//! `reservations`: who holds which share of which GPUs when, at what locked price.

use crate::domain::payment::ChargeMode;
use crate::domain::quota::Priority;
use crate::domain::reservation::{PaymentStatus, ReleaseReason};
use sea_orm::entity::prelude::*;

/// A reservation as stored: in force, or cancelled (whether it is running or over follows from
/// its window and the time; see `domain::reservation::ReservationStatus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum)]
#[sea_orm(rs_type = "String", db_type = "Text", rename_all = "snake_case")]
pub enum Status {
    /// Holds its GPUs.
    Confirmed,
    /// Cancelled by a person or released by Berth; holds nothing.
    Cancelled,
}

/// A row of `reservations`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "reservations")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The user who booked.
    pub owner_id: i64,
    /// The node all its GPUs are on.
    pub node_id: i64,
    /// The GPU model.
    pub model: String,
    /// Share of each GPU in quarters (1, 2, 4).
    pub quarters: i16,
    /// Start (UTC, inclusive).
    pub start_at: DateTimeUtc,
    /// End (UTC, exclusive).
    pub end_at: DateTimeUtc,
    /// In force or cancelled.
    pub status: Status,
    /// Price locked at booking, minor units.
    pub price_minor: i64,
    /// Booking time (UTC).
    pub created_at: DateTimeUtc,
    /// Cancellation time (UTC).
    pub cancelled_at: Option<DateTimeUtc>,
    /// Who cancelled.
    pub cancelled_by: Option<i64>,
    /// `paid`, `free`, `pending` (charged later), `due` (the wallet was short when the charge was
    /// due) or `unpaid` (booked before payments).
    pub payment_status: PaymentStatus,
    /// When it is charged.
    pub charge_mode: ChargeMode,
    /// When the payment job charges a `before_start` reservation (UTC).
    pub charge_at: Option<DateTimeUtc>,
    /// Why Berth released it (None: cancelled by a person, or not).
    pub released_reason: Option<ReleaseReason>,
    /// The team it was booked for (paid from the team's wallet); None: a personal booking.
    pub team_id: Option<i64>,
    /// Priority class.
    pub priority: Priority,
    /// A higher-priority booking may displace it (a burst or batch booking).
    pub preemptible: bool,
    /// Waiting for a team admin's approval until then (`payment_status = 'awaiting_approval'`).
    pub approval_expires_at: Option<DateTimeUtc>,
    /// Once displaced: the nearest free window offered to its owner (a `SlotOffer` as JSON).
    pub displaced_offer: Option<String>,
    /// How many GPUs it holds (its `reservation_gpus` rows), kept for reports.
    pub gpu_count: i32,
    /// What its charges took from the paying wallet, minor units (kept with each charge).
    pub charged_minor: i64,
    /// What its refunds gave back to the paying wallet, minor units (kept with each refund).
    pub refunded_minor: i64,
    /// Bumped whenever calendars must replace their copy (approved, cancelled, released).
    pub calendar_sequence: i32,
    /// The holder's processes may keep running past the end until a following booking needs
    /// the GPU.
    pub keep_running: bool,
    /// The environment profile version the booking uses.
    pub profile_version_id: Option<i64>,
    /// The reservation this one continues after its GPU failed.
    pub moved_from_id: Option<i64>,
    /// Why it moved (`domain::failover::FailureCause`).
    pub move_cause: Option<String>,
    /// When it moved whole to another node while running (its workspace follows from the old
    /// node's save).
    pub moved_at: Option<DateTimeUtc>,
    /// The start of the idle streak the policy last warned about.
    pub idle_since: Option<DateTimeUtc>,
    /// Warnings sent about that streak.
    pub idle_warnings: i32,
    /// When the holder said "I'm still using it" (once per booking).
    pub idle_snoozed_at: Option<DateTimeUtc>,
    /// Reclaimed for idleness: the end it had before (its `end_at` is the new end).
    pub reclaimed_until: Option<DateTimeUtc>,
    /// What the reclaim refunded, minor units.
    pub reclaim_refund_minor: i64,
    /// SLA credits its incidents paid, minor units.
    pub sla_credit_minor: i64,
    /// A preemptible booking that asked to start early when its GPUs free up (backfill).
    pub start_early: bool,
    /// The saved card that pays it (charged at booking or before the start), if any.
    pub card_id: Option<i64>,
    /// Moved to start early: the start it had before.
    pub early_from: Option<DateTimeUtc>,
}

/// Relations of `reservations`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The GPUs it holds.
    #[sea_orm(has_many = "super::reservation_gpu::Entity")]
    Gpus,
}

impl Related<super::reservation_gpu::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Gpus.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
