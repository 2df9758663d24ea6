//! Reservations as users see them, what a booking asks for, and why one is refused.

use crate::domain::schedule::{Share, Window};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Where a reservation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReservationStatus {
    /// Booked, not started yet.
    Confirmed,
    /// Running now.
    Active,
    /// Ended.
    Completed,
    /// Cancelled before it ended.
    Cancelled,
}

impl ReservationStatus {
    /// The status at `now` of a reservation stored as cancelled or not, for `window`.
    pub fn at(cancelled: bool, window: &Window, now: DateTime<Utc>) -> Self {
        if cancelled {
            ReservationStatus::Cancelled
        } else if now < window.start() {
            ReservationStatus::Confirmed
        } else if now < window.end() {
            ReservationStatus::Active
        } else {
            ReservationStatus::Completed
        }
    }
}

/// How a reservation was paid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(sea_orm::EnumIter, sea_orm::DeriveActiveEnum))]
#[cfg_attr(
    feature = "ssr",
    sea_orm(rs_type = "String", db_type = "Text", rename_all = "snake_case")
)]
pub enum PaymentStatus {
    /// Charged from the owner's wallet when booked.
    Paid,
    /// Nothing to pay (a price of zero).
    Free,
    /// Booked before Berth took payments.
    Unpaid,
    /// To be charged by the payment job before the start.
    Pending,
    /// The payment job found the wallet short: paid as soon as credits arrive, released shortly
    /// before the start if not.
    Due,
    /// Waits for a team admin's approval; charged per the payment rules once approved.
    AwaitingApproval,
}

impl PaymentStatus {
    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            PaymentStatus::Paid => "paid",
            PaymentStatus::Free => "free",
            PaymentStatus::Unpaid => "unpaid",
            PaymentStatus::Pending => "pending",
            PaymentStatus::Due => "due",
            PaymentStatus::AwaitingApproval => "awaiting_approval",
        }
    }

    /// From the stored text.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "paid" => Some(PaymentStatus::Paid),
            "free" => Some(PaymentStatus::Free),
            "unpaid" => Some(PaymentStatus::Unpaid),
            "pending" => Some(PaymentStatus::Pending),
            "due" => Some(PaymentStatus::Due),
            "awaiting_approval" => Some(PaymentStatus::AwaitingApproval),
            _ => None,
        }
    }
}

/// Why Berth released a reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(sea_orm::EnumIter, sea_orm::DeriveActiveEnum))]
#[cfg_attr(
    feature = "ssr",
    sea_orm(rs_type = "String", db_type = "Text", rename_all = "snake_case")
)]
pub enum ReleaseReason {
    /// Still unpaid shortly before its start.
    Unpaid,
    /// A platform admin took its GPU for maintenance; refunded in full.
    Maintenance,
    /// A platform admin retired its GPU; refunded in full.
    Retired,
    /// A higher-priority booking took its place (it was preemptible); refunded in full.
    Preempted,
    /// A team admin rejected it.
    Rejected,
    /// Nobody approved it in time.
    ApprovalExpired,
    /// Its GPU failed and no equivalent GPU was free; the rest refunded in full.
    GpuFailed,
    /// Its GPUs sat idle past the idle policy's window: the rest came back to the fleet, part of
    /// it refunded.
    Idle,
}

impl ReleaseReason {
    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            ReleaseReason::Unpaid => "unpaid",
            ReleaseReason::Maintenance => "maintenance",
            ReleaseReason::Retired => "retired",
            ReleaseReason::Preempted => "preempted",
            ReleaseReason::Rejected => "rejected",
            ReleaseReason::ApprovalExpired => "approval_expired",
            ReleaseReason::GpuFailed => "gpu_failed",
            ReleaseReason::Idle => "idle",
        }
    }

    /// From the stored text.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "unpaid" => Some(ReleaseReason::Unpaid),
            "maintenance" => Some(ReleaseReason::Maintenance),
            "retired" => Some(ReleaseReason::Retired),
            "preempted" => Some(ReleaseReason::Preempted),
            "rejected" => Some(ReleaseReason::Rejected),
            "approval_expired" => Some(ReleaseReason::ApprovalExpired),
            "gpu_failed" => Some(ReleaseReason::GpuFailed),
            "idle" => Some(ReleaseReason::Idle),
            _ => None,
        }
    }
}

/// A reservation in full, as its owner (or a platform admin) sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reservation {
    /// Database id.
    pub id: i64,
    /// Who booked.
    pub owner_id: i64,
    /// Their name.
    pub owner_name: String,
    /// The node.
    pub node_id: i64,
    /// The node's name.
    pub node_name: String,
    /// The GPU model.
    pub model: String,
    /// The GPUs held.
    pub gpu_ids: Vec<i64>,
    /// Share of each GPU.
    pub share: Share,
    /// When.
    pub window: Window,
    /// Where it stands now.
    pub status: ReservationStatus,
    /// Price locked at booking, minor units.
    pub price_minor: i64,
    /// How it was paid.
    pub payment_status: PaymentStatus,
    /// Returned to the owner's wallet on cancellation, minor units.
    pub refunded_minor: i64,
    /// When it is charged.
    pub charge_mode: crate::domain::payment::ChargeMode,
    /// When the payment job charges it (pending or due ones).
    pub charge_at: Option<DateTime<Utc>>,
    /// Released by Berth rather than cancelled by a person: not paid in time, or its GPU taken
    /// for maintenance (refunded in full).
    pub released: Option<ReleaseReason>,
    /// When it was booked.
    pub created_at: DateTime<Utc>,
    /// The team it was booked for (id, name), paid from the team's wallet.
    #[serde(default)]
    pub team: Option<(i64, String)>,
    /// At booking only: where a team booking leaves the team's monthly budget, when it is
    /// close to or over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::domain::team::BudgetCheck>,
    /// Its priority class.
    #[serde(default)]
    pub priority: crate::domain::quota::Priority,
    /// A higher-priority booking may displace it (a burst or batch booking).
    #[serde(default)]
    pub preemptible: bool,
    /// Waiting for a team admin's approval until then (released if nobody decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_expires_at: Option<DateTime<Utc>>,
    /// Displaced by a higher-priority booking: the nearest free window it was offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub displaced_offer: Option<SlotOffer>,
    /// The environment profile (and version) the booking uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::domain::profile::BookedProfile>,
    /// It continues reservation `.0`, whose GPU failed (`.1` why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<(i64, crate::domain::failover::FailureCause)>,
    /// Its GPU failed and its rest continues as this reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<i64>,
    /// A batch or burst booking that asked to start early when its GPUs free up.
    #[serde(default)]
    pub start_early: bool,
    /// Brought forward when its GPUs freed up: the start it had before.
    #[serde(default)]
    pub early_from: Option<DateTime<Utc>>,
    /// SLA credits its incidents paid, minor units.
    #[serde(default)]
    pub sla_credit_minor: i64,
    /// Paid by card: the card payment made for it at booking (to authenticate when the bank
    /// asks), in the answer to the booking only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card_payment: Option<crate::domain::payment::CardPayment>,
}

/// Which GPUs a booking wants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Target {
    /// These GPUs (one node, one model).
    Gpus(Vec<i64>),
    /// Any `count` GPUs of `model` on one node; Berth picks them.
    Model {
        /// Model name.
        model: String,
        /// How many.
        count: u32,
    },
}

/// A validated booking request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReservation {
    /// Who books.
    pub owner_id: i64,
    /// Their name, when the caller has read it already (the signed-in actor's): the booking's
    /// answer shows it without reading it again. `None`: read with the booking.
    pub owner_name: Option<String>,
    /// Which GPUs.
    pub target: Target,
    /// Share of each.
    pub share: Share,
    /// When.
    pub window: Window,
    /// When it is charged (the portal's default when the request names none).
    pub charge: crate::domain::payment::ChargeMode,
    /// Booked for this team (paid from its wallet, within its budget); None: personal.
    pub team_id: Option<i64>,
    /// The priority class asked for (None: the team's default; development when personal).
    pub priority: Option<crate::domain::quota::Priority>,
    /// The booker is a platform admin (who may ask for any priority).
    pub platform_admin: bool,
    /// The environment profile version the booking uses.
    pub profile_version_id: Option<i64>,
    /// Booked through the window held for a watch (watch id, offer id): the hold does not stand
    /// in its way, and the watch is served in the same transaction.
    pub through_watch: Option<(i64, i64)>,
    /// A preemptible booking asks to start early, on the same GPUs, when they free up before its
    /// start (backfill).
    pub start_early: bool,
    /// Paid with this saved card instead of credits.
    pub card_id: Option<i64>,
}

/// A window that would fit instead, offered with a conflict and by "find a slot".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotOffer {
    /// The node.
    pub node_id: i64,
    /// Its name.
    pub node_name: String,
    /// The model.
    pub model: String,
    /// GPUs that fit together.
    pub gpu_ids: Vec<i64>,
    /// Share of each.
    pub share: Share,
    /// When.
    pub window: Window,
    /// Price of booking it, minor units.
    pub price_minor: i64,
}

/// Why a booking lost: the first clash found, and the nearest window that fits instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Clash {
    /// The GPU that is taken (for model requests: one of the node's GPUs).
    pub gpu_id: Option<i64>,
    /// Readable name of what clashed: `demo-hopper-01 #3` or `4 × NVIDIA L40S`.
    pub what: String,
    /// The first taken instant inside the requested window.
    pub at: DateTime<Utc>,
    /// The nearest later window that fits the same request, if there is one within the horizon.
    pub suggestion: Option<SlotOffer>,
}

impl std::fmt::Display for Clash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is already booked at {} UTC",
            self.what,
            crate::domain::time_text::date_minute(self.at.naive_utc())
        )?;
        if let Some(offer) = &self.suggestion {
            write!(
                f,
                "; nearest free window: {} – {} UTC",
                crate::domain::time_text::date_minute(offer.window.start().naive_utc()),
                crate::domain::time_text::date_minute(offer.window.end().naive_utc())
            )?;
        }
        Ok(())
    }
}

/// The viewer's reservations with what is needed to show them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MyReservations {
    /// Latest start first.
    pub list: Vec<Reservation>,
    /// The viewer's time zone over the reservations' times.
    pub zone: crate::domain::zone::ZoneOffsets,
    /// The currency prices are in.
    pub currency: crate::domain::money::Currency,
    /// What cancelling now would refund, by reservation id (upcoming paid ones).
    pub refunds_now: Vec<(i64, i64)>,
    /// How a reservation is or will be paid, when that needs saying (the coming charge, a
    /// payment that is due, why Berth released it), by id, in the viewer's language.
    pub payment_notes: Vec<(i64, String)>,
    /// Running reservations whose GPUs are all below their idle policy's threshold now.
    #[serde(default)]
    pub idle_now: Vec<i64>,
    /// The cursor of the next (older) page, when there is one.
    #[serde(default)]
    pub next: Option<String>,
}

/// What a block of time on the calendar is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// The viewer's own booking.
    Mine,
    /// Someone else's booking (no details shown).
    Booked,
    /// A booking for one of the viewer's teams by a teammate (shown with their name).
    Team,
    /// Maintenance: not bookable.
    Maintenance,
}

/// A busy stretch of one GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BusyBlock {
    /// Start (UTC).
    pub start: DateTime<Utc>,
    /// End (UTC, exclusive).
    pub end: DateTime<Utc>,
    /// Quarters of the GPU taken (4 for maintenance).
    pub quarters: u8,
    /// Whose.
    pub kind: BlockKind,
    /// The reservation, for the viewer's own bookings only.
    pub reservation_id: Option<i64>,
    /// Who booked it and for which team, for a teammate's team booking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub who: Option<String>,
    /// It borrows capacity guaranteed to a team (a burst or batch booking, or a booking beyond
    /// the fleet's unguaranteed GPUs): a team booking within its guarantee may displace it.
    #[serde(default)]
    pub borrowing: bool,
    /// A booking on the shared part of the fleet (not preemptible, personal or of a team without
    /// a guarantee on the model), counted against the GPUs nobody is guaranteed.
    #[serde(default)]
    pub shared: bool,
}

/// The busy blocks of one GPU in a range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuAvailability {
    /// The GPU.
    pub gpu_id: i64,
    /// What occupies it, by start.
    pub busy: Vec<BusyBlock>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn status_follows_the_clock_unless_cancelled() {
        let start = Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, 0).unwrap();
        let window = Window::new(start, start + chrono::TimeDelta::hours(2)).unwrap();
        let before = start - chrono::TimeDelta::minutes(1);
        let during = start + chrono::TimeDelta::hours(1);
        let after = start + chrono::TimeDelta::hours(2);
        assert_eq!(
            ReservationStatus::at(false, &window, before),
            ReservationStatus::Confirmed
        );
        assert_eq!(
            ReservationStatus::at(false, &window, during),
            ReservationStatus::Active
        );
        assert_eq!(
            ReservationStatus::at(false, &window, after),
            ReservationStatus::Completed
        );
        assert_eq!(
            ReservationStatus::at(true, &window, during),
            ReservationStatus::Cancelled
        );
    }
}
