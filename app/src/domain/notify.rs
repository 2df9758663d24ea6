//! What Berth tells people, and when: the events worth a message, who receives each, and the
//! notice an event carries (a snapshot of what happened, put into words only when it is shown, in
//! the reader's language and time zone).
//!
//! An event is written in the same transaction as the change that causes it (the outbox), with
//! a key that makes it unique (`confirmed:42`): a retried transaction or a replayed request
//! cannot write it twice. Events about the future (a reservation starting in 15 minutes) are
//! rows due later; a worker hands each to its recipients once it is due.

use crate::domain::reservation::{ReleaseReason, Reservation, SlotOffer};
use crate::domain::schedule::{Share, Window};
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// How long before a reservation's start (and before its end) its holder is reminded.
pub const REMINDER_LEAD: TimeDelta = TimeDelta::minutes(15);

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(sea_orm::EnumIter, sea_orm::DeriveActiveEnum))]
#[cfg_attr(
    feature = "ssr",
    sea_orm(rs_type = "String", db_type = "Text", rename_all = "snake_case")
)]
pub enum EventKind {
    /// A booking was confirmed (or, waiting for approval, recorded).
    BookingConfirmed,
    /// Its holder or an admin cancelled a reservation (with what was refunded).
    BookingCancelled,
    /// Berth released a reservation: unpaid, its GPU taken for maintenance or retired.
    BookingReleased,
    /// A higher-priority booking took a preemptible reservation's place (with the window offered
    /// instead).
    Displaced,
    /// A reservation starts in [`REMINDER_LEAD`].
    StartingSoon,
    /// A reservation ends in [`REMINDER_LEAD`].
    EndingSoon,
    /// The payment job charged a reservation.
    PaymentCharged,
    /// The payment job found the wallet short: the reservation is released unless credits
    /// arrive before the release time.
    PaymentDue,
    /// A booking waits for a team admin's approval (sent to the team's admins).
    ApprovalRequested,
    /// A team admin approved the booking.
    ApprovalApproved,
    /// A team admin rejected the booking.
    ApprovalRejected,
    /// Nobody decided in time: the booking was released.
    ApprovalExpired,
    /// Credits were added to a wallet.
    CreditsAdded,
    /// A webhook failed again and again: Berth stopped calling it (sent to its maker, or to the
    /// team's admins).
    WebhookDisabled,
    /// A team's bookings this month reached the budget's warning share (to its admins).
    BudgetWarning,
    /// A team's bookings this month reached its budget (to its admins).
    BudgetReached,
    /// A GPU of a running booking reported a problem (an XID error) or went missing.
    GpuProblem,
    /// A node's agent stopped reporting (to platform admins).
    NodeSilent,
    /// A reservation's GPUs are open on its node: the holder may log in (with how).
    LeaseReady,
    /// A reservation's access on its node was closed at its end.
    LeaseEnded,
    /// The environment of a booking's profile failed to build on its node (with the log's end).
    EnvironmentFailed,
    /// The workspace could not be saved at a lease's end (over the quota, or the store failed).
    WorkspaceNotSaved,
    /// A booking's GPU failed and Berth moved it to an equivalent GPU (with how to connect and
    /// what was refunded for the minutes lost).
    BookingMoved,
    /// A running booking's GPUs have sat idle: what the idle policy will do, and when.
    IdleWarning,
    /// A window a watch asked for came free and is held for the watcher for a while.
    WatchOffer,
    /// A batch or burst booking that asked to start early moved to an earlier window, on the
    /// same GPUs, when they freed up (backfill).
    StartedEarly,
    /// An incident was opened, changed, answered or paid an SLA credit (to its reporter and to
    /// platform admins).
    Incident,
    /// A receipt: a card was charged (a top-up or a booking) or refunded.
    Receipt,
    /// Stripe's balance and Berth's ledger disagree about a card payment or refund (to
    /// platform admins).
    PaymentMismatch,
}

impl EventKind {
    /// Every kind, in the order a preferences page lists them.
    pub const ALL: [EventKind; 29] = [
        EventKind::BookingConfirmed,
        EventKind::BookingCancelled,
        EventKind::BookingReleased,
        EventKind::Displaced,
        EventKind::StartingSoon,
        EventKind::EndingSoon,
        EventKind::PaymentCharged,
        EventKind::PaymentDue,
        EventKind::ApprovalRequested,
        EventKind::ApprovalApproved,
        EventKind::ApprovalRejected,
        EventKind::ApprovalExpired,
        EventKind::CreditsAdded,
        EventKind::WebhookDisabled,
        EventKind::BudgetWarning,
        EventKind::BudgetReached,
        EventKind::GpuProblem,
        EventKind::NodeSilent,
        EventKind::LeaseReady,
        EventKind::LeaseEnded,
        EventKind::EnvironmentFailed,
        EventKind::WorkspaceNotSaved,
        EventKind::BookingMoved,
        EventKind::IdleWarning,
        EventKind::WatchOffer,
        EventKind::StartedEarly,
        EventKind::Incident,
        EventKind::Receipt,
        EventKind::PaymentMismatch,
    ];

    /// As stored, sent and used in keys.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::BookingConfirmed => "booking_confirmed",
            EventKind::BookingCancelled => "booking_cancelled",
            EventKind::BookingReleased => "booking_released",
            EventKind::Displaced => "displaced",
            EventKind::StartingSoon => "starting_soon",
            EventKind::EndingSoon => "ending_soon",
            EventKind::PaymentCharged => "payment_charged",
            EventKind::PaymentDue => "payment_due",
            EventKind::ApprovalRequested => "approval_requested",
            EventKind::ApprovalApproved => "approval_approved",
            EventKind::ApprovalRejected => "approval_rejected",
            EventKind::ApprovalExpired => "approval_expired",
            EventKind::CreditsAdded => "credits_added",
            EventKind::WebhookDisabled => "webhook_disabled",
            EventKind::BudgetWarning => "budget_warning",
            EventKind::BudgetReached => "budget_reached",
            EventKind::GpuProblem => "gpu_problem",
            EventKind::NodeSilent => "node_silent",
            EventKind::LeaseReady => "lease_ready",
            EventKind::LeaseEnded => "lease_ended",
            EventKind::EnvironmentFailed => "environment_failed",
            EventKind::WorkspaceNotSaved => "workspace_not_saved",
            EventKind::BookingMoved => "booking_moved",
            EventKind::IdleWarning => "idle_warning",
            EventKind::WatchOffer => "watch_offer",
            EventKind::StartedEarly => "started_early",
            EventKind::Incident => "incident",
            EventKind::Receipt => "receipt",
            EventKind::PaymentMismatch => "payment_mismatch",
        }
    }

    /// Whether it is about money or a reservation's start and end: the kinds people want outside
    /// the portal by default (the rest go to the inbox only).
    pub fn urgent(self) -> bool {
        matches!(
            self,
            EventKind::BookingConfirmed
                | EventKind::BookingCancelled
                | EventKind::BookingReleased
                | EventKind::Displaced
                | EventKind::StartingSoon
                | EventKind::EndingSoon
                | EventKind::PaymentCharged
                | EventKind::PaymentDue
                | EventKind::CreditsAdded
                | EventKind::WebhookDisabled
                | EventKind::BudgetReached
                | EventKind::GpuProblem
                | EventKind::NodeSilent
                | EventKind::LeaseReady
                | EventKind::EnvironmentFailed
                | EventKind::WorkspaceNotSaved
                | EventKind::BookingMoved
                | EventKind::IdleWarning
                | EventKind::WatchOffer
                | EventKind::StartedEarly
                | EventKind::Incident
                | EventKind::Receipt
                | EventKind::PaymentMismatch
        )
    }
}

/// Who receives an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Audience {
    /// One user (a reservation's holder, a wallet's owner).
    User(i64),
    /// The admins of a team (approvals, a team wallet's credits).
    TeamAdmins(i64),
}

/// A reservation as a notice describes it, kept as it was when the event happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationBrief {
    /// Its id (links go to it).
    pub id: i64,
    /// GPU model.
    pub model: String,
    /// Node name.
    pub node: String,
    /// How many GPUs.
    pub gpus: u32,
    /// Share of each.
    pub share: Share,
    /// When.
    pub window: Window,
    /// Price, minor units.
    pub price_minor: i64,
    /// The holder's name (for team admins).
    pub owner: String,
    /// The team it is booked for (name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
}

impl ReservationBrief {
    /// The brief of `reservation`.
    pub fn of(reservation: &Reservation) -> Self {
        Self {
            id: reservation.id,
            model: reservation.model.clone(),
            node: reservation.node_name.clone(),
            gpus: u32::try_from(reservation.gpu_ids.len()).unwrap_or(u32::MAX),
            share: reservation.share,
            window: reservation.window,
            price_minor: reservation.price_minor,
            owner: reservation.owner_name.clone(),
            team: reservation.team.as_ref().map(|(_, name)| name.clone()),
        }
    }
}

/// What a notice says, beyond its kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Notice {
    /// The reservation it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<ReservationBrief>,
    /// Money moved: a refund, a charge, credits added (minor units).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount_minor: Option<i64>,
    /// Why Berth released a reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<ReleaseReason>,
    /// A displaced booking's offered window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offer: Option<SlotOffer>,
    /// A deadline: when an unpaid reservation is released, when an approval expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
    /// Who did it (a cancelling admin, an approving team admin), by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// What it is about outside Berth (a webhook's URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// What went wrong there (the last answer a webhook gave).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A budget's limit (minor units), with what was spent in `amount_minor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_minor: Option<i64>,
    /// What a GPU reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<GpuProblem>,
    /// Where a booking moved when its GPU failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved: Option<MovedBrief>,
    /// How long a booking's GPUs have sat idle, and what the policy does about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdleBrief>,
    /// The watch a held window answers (links go to the watches page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<i64>,
    /// The start a booking had before it moved earlier (backfill).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub was_start: Option<DateTime<Utc>>,
    /// The incident it is about (links go to its page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incident: Option<IncidentBrief>,
    /// What a receipt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<ReceiptBrief>,
}

/// What a card receipt is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptBrief {
    /// `top_up`, `booking` (a charge) or `refund`.
    pub what: String,
    /// The card (`Visa ···· 4242`).
    pub card: String,
    /// Stripe's reference (`pi_…`, `re_…`).
    pub reference: String,
    /// Berth's id of the payment or refund.
    pub id: i64,
}

/// What happened to an incident, as a notice tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IncidentChange {
    /// It was opened.
    Opened,
    /// Its state changed (to the brief's state).
    Moved,
    /// Someone replied.
    Reply,
    /// It paid an SLA credit (the notice's amount).
    Credited,
}

/// An incident, as a notice tells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncidentBrief {
    /// Its id.
    pub id: i64,
    /// What happened.
    pub change: IncidentChange,
    /// Where it stands now.
    pub state: crate::domain::incident::IncidentState,
    /// What opened it by itself.
    pub trigger: Option<crate::domain::incident::Trigger>,
    /// The booking it is about.
    pub reservation_id: Option<i64>,
}

/// An idle booking, as a warning tells it (the deadline is the notice's `until`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleBrief {
    /// Idle without a break since.
    pub since: DateTime<Utc>,
    /// The policy's threshold, percent.
    pub threshold_percent: u8,
    /// What happens at the deadline.
    pub action: crate::domain::reclaim::IdleAction,
}

/// A booking's move off a failed GPU, as a notice tells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovedBrief {
    /// The reservation that was on the failed GPU (the same as the notice's when it moved
    /// whole, before it began).
    pub from_reservation: i64,
    /// Why.
    pub cause: crate::domain::failover::FailureCause,
    /// The failed GPUs (`node-a #1`).
    pub failed: Vec<String>,
    /// From when the booking is on its new GPUs.
    pub from: DateTime<Utc>,
}

/// What went wrong with a GPU, as a notice tells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GpuProblem {
    /// The driver reported an XID error.
    Xid {
        /// The GPU (its NVML UUID).
        gpu: String,
        /// The XID code.
        code: i64,
    },
    /// The node's agent no longer finds the GPU.
    Missing {
        /// The GPU (its NVML UUID).
        gpu: String,
    },
    /// Someone who holds no lease on the GPU runs a process on it.
    Intruder {
        /// The GPU (its NVML UUID).
        gpu: String,
        /// The process owner's user name on the node.
        user: String,
        /// The process.
        pid: u32,
    },
}

/// A node's agent counts as gone silent for notices after this long without a report.
pub const NODE_SILENT_AFTER: TimeDelta = TimeDelta::minutes(5);

/// A way a notice leaves the portal (the inbox is always written).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(sea_orm::EnumIter, sea_orm::DeriveActiveEnum))]
#[cfg_attr(
    feature = "ssr",
    sea_orm(rs_type = "String", db_type = "Text", rename_all = "snake_case")
)]
pub enum Channel {
    /// An e-mail to the recipient's address.
    Email,
    /// A signed JSON call to a webhook.
    Webhook,
}

/// Where a user wants notices of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelChoice {
    /// In the portal's inbox (and the bell).
    pub inbox: bool,
    /// By e-mail (when the portal sends e-mail).
    pub email: bool,
    /// To the user's webhooks.
    pub webhook: bool,
}

impl ChannelChoice {
    /// The choice of a user who chose nothing: everything in the inbox; by e-mail what is about
    /// money or a reservation's start and end ([`EventKind::urgent`]).
    pub fn default_for(kind: EventKind) -> Self {
        Self {
            inbox: true,
            email: kind.urgent(),
            webhook: kind.urgent(),
        }
    }
}

/// A user's notification settings, as the profile page shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationSettings {
    /// Every kind, in [`EventKind::ALL`] order, with the user's choice (or the default).
    pub kinds: Vec<(EventKind, ChannelChoice)>,
    /// Whether this portal sends e-mail at all (`smtp_url`).
    pub email_available: bool,
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(sea_orm::EnumIter, sea_orm::DeriveActiveEnum))]
#[cfg_attr(
    feature = "ssr",
    sea_orm(rs_type = "String", db_type = "Text", rename_all = "snake_case")
)]
pub enum DeliveryStatus {
    /// Waiting for its first or next try.
    Queued,
    /// Accepted by the recipient's server.
    Sent,
    /// Given up: refused for good, or every try failed.
    Failed,
}

/// Tries a delivery gets before it is given up.
pub const MAX_ATTEMPTS: u32 = 8;

/// How long a sender holds a delivery it is trying: another replica takes it over after this
/// (a sender that died mid-try).
pub const DELIVERY_LEASE: TimeDelta = TimeDelta::minutes(2);

/// When a delivery that failed for the `attempts`-th time is tried again: after 1, 2, 4, … minutes
/// (at most an hour), or never once [`MAX_ATTEMPTS`] tries have failed.
pub fn retry_after(attempts: u32) -> Option<TimeDelta> {
    if attempts >= MAX_ATTEMPTS {
        return None;
    }
    let minutes = 1_i64 << attempts.saturating_sub(1).min(6);
    Some(TimeDelta::minutes(minutes.min(60)))
}

/// A delivery as platform admins see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryRow {
    /// Its id.
    pub id: i64,
    /// What it tells.
    pub kind: EventKind,
    /// How it goes.
    pub channel: Channel,
    /// To whom (their address).
    pub recipient: String,
    /// Queued, sent or failed.
    pub status: DeliveryStatus,
    /// Tries so far.
    pub attempts: u32,
    /// When it was queued.
    pub created_at: DateTime<Utc>,
    /// Its next try (while queued).
    pub next_at: DateTime<Utc>,
    /// When it was sent.
    pub sent_at: Option<DateTime<Utc>>,
    /// Why the last try failed.
    pub last_error: Option<String>,
}

/// How many deliveries stand where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryCounts {
    /// Waiting for a try.
    pub queued: u64,
    /// Sent.
    pub sent: u64,
    /// Given up.
    pub failed: u64,
}

impl DeliveryStatus {
    /// As stored and used in page addresses.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Queued => "queued",
            DeliveryStatus::Sent => "sent",
            DeliveryStatus::Failed => "failed",
        }
    }

    /// The status called `raw`, if any.
    pub fn parse(raw: &str) -> Option<Self> {
        [
            DeliveryStatus::Queued,
            DeliveryStatus::Sent,
            DeliveryStatus::Failed,
        ]
        .into_iter()
        .find(|status| status.as_str() == raw.trim())
    }
}

/// A calendar feed as its owner sees it (the address itself is shown only when made).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalendarFeedInfo {
    /// The team whose bookings it lists, by id and name (None: the owner's own bookings).
    pub team: Option<(i64, String)>,
    /// When it was made.
    pub created_at: DateTime<Utc>,
}

/// A calendar feed lists bookings that ended at most this long ago (and every later one).
pub const FEED_PAST: TimeDelta = TimeDelta::days(60);

/// Most bookings one feed lists.
pub const FEED_LIMIT: u64 = 1000;

/// A notice in a user's inbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxItem {
    /// Its id in the inbox (to mark it read).
    pub id: i64,
    /// What happened.
    pub kind: EventKind,
    /// What it says.
    pub notice: Notice,
    /// When it happened.
    pub occurred_at: DateTime<Utc>,
    /// Whether its reader marked it read.
    pub read: bool,
}

/// An event to write in the transaction of the change that causes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    /// What happened.
    pub kind: EventKind,
    /// Unique per event: the same key again writes nothing.
    pub key: String,
    /// Who receives it.
    pub audience: Audience,
    /// The reservation it is about (scheduled reminders of a withdrawn one are dropped).
    pub reservation_id: Option<i64>,
    /// What it says.
    pub notice: Notice,
    /// When it happened.
    pub occurred_at: DateTime<Utc>,
    /// When it is handed to its recipients (`occurred_at`, or later for reminders).
    pub due_at: DateTime<Utc>,
}

impl NewEvent {
    fn about(
        kind: EventKind,
        reservation: &Reservation,
        notice: Notice,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            kind,
            key: format!("{}:{}", kind.as_str(), reservation.id),
            audience: Audience::User(reservation.owner_id),
            reservation_id: Some(reservation.id),
            notice: Notice {
                reservation: Some(ReservationBrief::of(reservation)),
                ..notice
            },
            occurred_at: now,
            due_at: now,
        }
    }

    /// A booking was made: its confirmation now, and its reminders 15 minutes before its start
    /// (unless that is already past) and before its end. A booking that waits for approval gets
    /// its confirmation, and its team's admins a request; its reminders wait for the approval.
    pub fn booked(reservation: &Reservation, now: DateTime<Utc>) -> Vec<Self> {
        let mut events = vec![Self::about(
            EventKind::BookingConfirmed,
            reservation,
            Notice {
                until: reservation.approval_expires_at,
                ..Notice::default()
            },
            now,
        )];
        match (reservation.approval_expires_at, &reservation.team) {
            (Some(until), Some((team_id, _))) => {
                let mut request = Self::about(
                    EventKind::ApprovalRequested,
                    reservation,
                    Notice {
                        until: Some(until),
                        ..Notice::default()
                    },
                    now,
                );
                request.audience = Audience::TeamAdmins(*team_id);
                events.push(request);
            }
            _ => events.extend(Self::reminders(reservation, now)),
        }
        events.extend(Self::budget(reservation, now));
        events
    }

    /// The reminders of a reservation that holds its GPUs: 15 minutes before its start (none when
    /// that has passed) and before its end.
    pub fn reminders(reservation: &Reservation, now: DateTime<Utc>) -> Vec<Self> {
        let mut events = Vec::with_capacity(2);
        for (kind, at) in [
            (EventKind::StartingSoon, reservation.window.start()),
            (EventKind::EndingSoon, reservation.window.end()),
        ] {
            let due = at - REMINDER_LEAD;
            if due > now {
                let mut event = Self::about(kind, reservation, Notice::default(), now);
                event.due_at = due;
                events.push(event);
            }
        }
        events
    }

    /// A person cancelled the reservation (`by`: who, when not its holder); `refund_minor` went
    /// back to the paying wallet.
    pub fn cancelled(
        reservation: &Reservation,
        refund_minor: i64,
        by: Option<String>,
        now: DateTime<Utc>,
    ) -> Self {
        Self::about(
            EventKind::BookingCancelled,
            reservation,
            Notice {
                amount_minor: Some(refund_minor),
                by,
                ..Notice::default()
            },
            now,
        )
    }

    /// Berth released the reservation for `reason`, refunding `refund_minor`. A displacement
    /// carries the window offered instead; a rejection or an expired approval is the answer to
    /// the approval request.
    pub fn released(
        reservation: &Reservation,
        reason: ReleaseReason,
        refund_minor: i64,
        now: DateTime<Utc>,
    ) -> Self {
        let kind = match reason {
            ReleaseReason::Preempted => EventKind::Displaced,
            ReleaseReason::Rejected => EventKind::ApprovalRejected,
            ReleaseReason::ApprovalExpired => EventKind::ApprovalExpired,
            ReleaseReason::Unpaid
            | ReleaseReason::Maintenance
            | ReleaseReason::Retired
            | ReleaseReason::GpuFailed
            | ReleaseReason::Idle => EventKind::BookingReleased,
        };
        Self::about(
            kind,
            reservation,
            Notice {
                amount_minor: (refund_minor > 0).then_some(refund_minor),
                reason: Some(reason),
                offer: reservation.displaced_offer.clone(),
                ..Notice::default()
            },
            now,
        )
    }

    /// A team admin approved the booking.
    pub fn approved(reservation: &Reservation, by: String, now: DateTime<Utc>) -> Self {
        Self::about(
            EventKind::ApprovalApproved,
            reservation,
            Notice {
                by: Some(by),
                ..Notice::default()
            },
            now,
        )
    }

    /// The payment job charged `amount_minor` for the reservation.
    pub fn charged(reservation: &Reservation, amount_minor: i64, now: DateTime<Utc>) -> Self {
        Self::about(
            EventKind::PaymentCharged,
            reservation,
            Notice {
                amount_minor: Some(amount_minor),
                ..Notice::default()
            },
            now,
        )
    }

    /// The wallet was short when the reservation's charge was due: it is released at `until`
    /// unless credits arrive.
    pub fn payment_due(
        reservation: &Reservation,
        until: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Self {
        Self::about(
            EventKind::PaymentDue,
            reservation,
            Notice {
                amount_minor: Some(reservation.price_minor),
                until: Some(until),
                ..Notice::default()
            },
            now,
        )
    }

    /// `amount_minor` of credits were added to the wallet of `audience` by ledger transaction
    /// `transaction_id`.
    pub fn credits_added(
        audience: Audience,
        transaction_id: i64,
        amount_minor: i64,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            kind: EventKind::CreditsAdded,
            key: format!("{}:{transaction_id}", EventKind::CreditsAdded.as_str()),
            audience,
            reservation_id: None,
            notice: Notice {
                amount_minor: Some(amount_minor),
                ..Notice::default()
            },
            occurred_at: now,
            due_at: now,
        }
    }
}

impl NewEvent {
    /// A receipt to `user`: `amount_minor` charged to or refunded on a card, for `reservation`
    /// when it paid or refunded a booking.
    pub fn receipt(
        user: i64,
        receipt: ReceiptBrief,
        amount_minor: i64,
        reservation: Option<&Reservation>,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            kind: EventKind::Receipt,
            key: format!(
                "{}:{}:{}",
                EventKind::Receipt.as_str(),
                receipt.what,
                receipt.id
            ),
            audience: Audience::User(user),
            reservation_id: reservation.map(|r| r.id),
            notice: Notice {
                reservation: reservation.map(ReservationBrief::of),
                amount_minor: Some(amount_minor),
                receipt: Some(receipt),
                ..Notice::default()
            },
            occurred_at: now,
            due_at: now,
        }
    }

    /// To platform admin `admin`: Stripe's balance and Berth's ledger disagree about `what`
    /// (Stripe's or Berth's reference), as `detail` says.
    pub fn payment_mismatch(admin: i64, what: &str, detail: &str, now: DateTime<Utc>) -> Self {
        Self {
            kind: EventKind::PaymentMismatch,
            key: format!("{}:{what}:{admin}", EventKind::PaymentMismatch.as_str()),
            audience: Audience::User(admin),
            reservation_id: None,
            notice: Notice {
                target: Some(what.to_owned()),
                error: Some(detail.to_owned()),
                ..Notice::default()
            },
            occurred_at: now,
            due_at: now,
        }
    }
}

impl NewEvent {
    /// Webhook `webhook_id` (at `url`) was disabled at `now` after failing again and again, the
    /// last time with `error`.
    pub fn webhook_disabled(
        audience: Audience,
        webhook_id: i64,
        url: &str,
        error: &str,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            kind: EventKind::WebhookDisabled,
            key: format!(
                "{}:{webhook_id}:{}",
                EventKind::WebhookDisabled.as_str(),
                now.timestamp()
            ),
            audience,
            reservation_id: None,
            notice: Notice {
                target: Some(url.to_owned()),
                error: Some(error.chars().take(300).collect()),
                ..Notice::default()
            },
            occurred_at: now,
            due_at: now,
        }
    }
}

impl NewEvent {
    /// What a team booking tells its team's admins about the month's budget: a warning when its
    /// bookings reach the warning share, or that they reached the limit (once a month each).
    pub fn budget(reservation: &Reservation, now: DateTime<Utc>) -> Option<Self> {
        let (team_id, _) = reservation.team.as_ref()?;
        let Some(crate::domain::team::BudgetCheck::Warn {
            spent_minor,
            limit_minor,
        }) = reservation.budget
        else {
            return None;
        };
        let kind = if spent_minor >= limit_minor {
            EventKind::BudgetReached
        } else {
            EventKind::BudgetWarning
        };
        let month = reservation.window.start().format("%Y-%m");
        Some(Self {
            kind,
            key: format!("{}:{team_id}:{month}", kind.as_str()),
            audience: Audience::TeamAdmins(*team_id),
            reservation_id: None,
            notice: Notice {
                reservation: Some(ReservationBrief::of(reservation)),
                amount_minor: Some(spent_minor),
                limit_minor: Some(limit_minor),
                ..Notice::default()
            },
            occurred_at: now,
            due_at: now,
        })
    }

    /// A GPU of `reservation` had `problem` (told once per reservation, GPU and kind of problem).
    pub fn gpu_problem(reservation: &Reservation, problem: GpuProblem, now: DateTime<Utc>) -> Self {
        let what = match &problem {
            GpuProblem::Xid { gpu, .. } => format!("{gpu}:xid"),
            GpuProblem::Missing { gpu } => format!("{gpu}:missing"),
            GpuProblem::Intruder { gpu, user, .. } => format!("{gpu}:intruder:{user}"),
        };
        Self {
            kind: EventKind::GpuProblem,
            key: format!(
                "{}:{}:{what}",
                EventKind::GpuProblem.as_str(),
                reservation.id
            ),
            audience: Audience::User(reservation.owner_id),
            reservation_id: Some(reservation.id),
            notice: Notice {
                reservation: Some(ReservationBrief::of(reservation)),
                problem: Some(problem),
                ..Notice::default()
            },
            occurred_at: now,
            due_at: now,
        }
    }

    /// `reservation`'s GPUs are open on its node; `connect` says how to log in (told once).
    pub fn lease_ready(reservation: &Reservation, connect: &str, now: DateTime<Utc>) -> Self {
        Self {
            kind: EventKind::LeaseReady,
            key: format!("{}:{}", EventKind::LeaseReady.as_str(), reservation.id),
            audience: Audience::User(reservation.owner_id),
            reservation_id: Some(reservation.id),
            notice: Notice {
                reservation: Some(ReservationBrief::of(reservation)),
                target: Some(connect.to_owned()),
                ..Notice::default()
            },
            occurred_at: now,
            due_at: now,
        }
    }

    /// `reservation`'s environment (profile `profile`) failed to build on its node; `log` is
    /// the end of the build log (told once per content hash).
    pub fn environment_failed(
        reservation: &Reservation,
        profile: &str,
        hash: &str,
        log: &str,
        now: DateTime<Utc>,
    ) -> Self {
        let short: String = log
            .lines()
            .rev()
            .take(12)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        Self {
            kind: EventKind::EnvironmentFailed,
            key: format!(
                "{}:{}:{hash}",
                EventKind::EnvironmentFailed.as_str(),
                reservation.id
            ),
            audience: Audience::User(reservation.owner_id),
            reservation_id: Some(reservation.id),
            notice: Notice {
                reservation: Some(ReservationBrief::of(reservation)),
                target: Some(profile.to_owned()),
                error: Some(short),
                ..Notice::default()
            },
            occurred_at: now,
            due_at: now,
        }
    }

    /// `reservation`'s workspace could not be saved at its end; `why` says why (told once per
    /// reservation).
    pub fn workspace_not_saved(reservation: &Reservation, why: &str, now: DateTime<Utc>) -> Self {
        Self {
            kind: EventKind::WorkspaceNotSaved,
            key: format!(
                "{}:{}",
                EventKind::WorkspaceNotSaved.as_str(),
                reservation.id
            ),
            audience: Audience::User(reservation.owner_id),
            reservation_id: Some(reservation.id),
            notice: Notice {
                reservation: Some(ReservationBrief::of(reservation)),
                error: Some(why.to_owned()),
                ..Notice::default()
            },
            occurred_at: now,
            due_at: now,
        }
    }

    /// `reservation` (on its new GPUs) took over the rest of a booking whose GPU failed;
    /// `connect` says how to log in there, `refund_minor` is what the minutes lost gave back.
    pub fn moved(
        reservation: &Reservation,
        moved: MovedBrief,
        connect: &str,
        refund_minor: i64,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            kind: EventKind::BookingMoved,
            key: format!(
                "{}:{}:{}:{}",
                EventKind::BookingMoved.as_str(),
                moved.from_reservation,
                reservation.id,
                moved.from.timestamp()
            ),
            audience: Audience::User(reservation.owner_id),
            reservation_id: Some(reservation.id),
            notice: Notice {
                reservation: Some(ReservationBrief::of(reservation)),
                amount_minor: (refund_minor > 0).then_some(refund_minor),
                target: Some(connect.to_owned()),
                moved: Some(moved),
                ..Notice::default()
            },
            occurred_at: now,
            due_at: now,
        }
    }

    /// Warning `number` about `reservation`'s idle streak: what the policy does at `acts_at`.
    pub fn idle_warning(
        reservation: &Reservation,
        idle: IdleBrief,
        number: u32,
        acts_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            key: format!(
                "{}:{}:{}:{number}",
                EventKind::IdleWarning.as_str(),
                reservation.id,
                idle.since.timestamp()
            ),
            ..Self::about(
                EventKind::IdleWarning,
                reservation,
                Notice {
                    until: Some(acts_at),
                    idle: Some(idle),
                    ..Notice::default()
                },
                now,
            )
        }
    }

    /// The idle policy released the rest of `reservation`, refunding `refund_minor`: its holder
    /// is told, and its team's admins when it is a team booking.
    pub fn reclaimed(
        reservation: &Reservation,
        refund_minor: i64,
        now: DateTime<Utc>,
    ) -> Vec<Self> {
        let mut holder = Self::released(reservation, ReleaseReason::Idle, refund_minor, now);
        holder.key = format!("{}:idle", holder.key);
        let mut events = vec![holder.clone()];
        if let Some((team_id, _)) = &reservation.team {
            events.push(Self {
                key: format!("{}:team", holder.key),
                audience: Audience::TeamAdmins(*team_id),
                ..holder
            });
        }
        events
    }

    /// Window `offer` (hold `offer_id`) answers watch `watch_id` of `user_id` and is held for
    /// them until `hold_until`.
    pub fn watch_offer(
        user_id: i64,
        watch_id: i64,
        offer_id: i64,
        offer: &SlotOffer,
        hold_until: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            kind: EventKind::WatchOffer,
            key: format!("{}:{offer_id}", EventKind::WatchOffer.as_str()),
            audience: Audience::User(user_id),
            reservation_id: None,
            notice: Notice {
                offer: Some(offer.clone()),
                until: Some(hold_until),
                watch: Some(watch_id),
                ..Notice::default()
            },
            occurred_at: now,
            due_at: now,
        }
    }

    /// `reservation` (as it is now) moved earlier from `was_start`, on the same GPUs, when they
    /// freed up; its reminders follow it.
    pub fn started_early(
        reservation: &Reservation,
        was_start: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Vec<Self> {
        let mut events = vec![Self::about(
            EventKind::StartedEarly,
            reservation,
            Notice {
                was_start: Some(was_start),
                ..Notice::default()
            },
            now,
        )];
        events.extend(Self::reminders(reservation, now));
        events
    }

    /// Incident `brief` changed (`stamp` tells this change from others), told to `user`.
    pub fn incident(
        user: i64,
        brief: IncidentBrief,
        stamp: &str,
        amount_minor: Option<i64>,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            kind: EventKind::Incident,
            key: format!(
                "{}:{}:{stamp}:{user}",
                EventKind::Incident.as_str(),
                brief.id
            ),
            audience: Audience::User(user),
            reservation_id: None,
            notice: Notice {
                amount_minor,
                incident: Some(brief),
                ..Notice::default()
            },
            occurred_at: now,
            due_at: now,
        }
    }

    /// `reservation`'s access on its node was closed (told once).
    pub fn lease_ended(reservation: &Reservation, now: DateTime<Utc>) -> Self {
        Self {
            kind: EventKind::LeaseEnded,
            key: format!("{}:{}", EventKind::LeaseEnded.as_str(), reservation.id),
            audience: Audience::User(reservation.owner_id),
            reservation_id: Some(reservation.id),
            notice: Notice {
                reservation: Some(ReservationBrief::of(reservation)),
                ..Notice::default()
            },
            occurred_at: now,
            due_at: now,
        }
    }

    /// Node `node` (named `name`) has not reported since `last_seen`: told to platform admin
    /// `admin` (once per silence).
    pub fn node_silent(
        admin: i64,
        node: i64,
        name: &str,
        last_seen: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            kind: EventKind::NodeSilent,
            key: format!(
                "{}:{node}:{}:{admin}",
                EventKind::NodeSilent.as_str(),
                last_seen.timestamp()
            ),
            audience: Audience::User(admin),
            reservation_id: None,
            notice: Notice {
                target: Some(name.to_owned()),
                until: Some(last_seen),
                ..Notice::default()
            },
            occurred_at: now,
            due_at: now,
        }
    }
}

/// A webhook's tries that may fail in a row before Berth disables it.
pub const WEBHOOK_FAILURES_TO_DISABLE: u32 = 5;

/// A webhook as its maker sees it (the secret is shown only when made).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookInfo {
    /// Its id.
    pub id: i64,
    /// Where it posts.
    pub url: String,
    /// The team whose notices it receives, by id and name (None: its maker's own).
    pub team: Option<(i64, String)>,
    /// Who made it, when another admin of the team did (None: the viewer).
    #[serde(default)]
    pub maker: Option<String>,
    /// Whether it is called.
    pub active: bool,
    /// Tries that failed in a row.
    pub failures: u32,
    /// The last failure.
    pub last_error: Option<String>,
    /// When Berth disabled it.
    pub disabled_at: Option<DateTime<Utc>>,
    /// When it was made.
    pub created_at: DateTime<Utc>,
}

/// A webhook just made: its id and signing secret, shown this once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedWebhook {
    /// Its id.
    pub id: i64,
    /// The HMAC-SHA256 key its calls are signed with.
    pub secret: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::payment::ChargeMode;
    use crate::domain::reservation::{PaymentStatus, ReservationStatus};
    use chrono::TimeZone;

    fn at(hour: u32, minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 3, hour, minute, 0).unwrap()
    }

    fn reservation(start: DateTime<Utc>, hours: i64) -> Reservation {
        Reservation {
            id: 42,
            owner_id: 7,
            owner_name: "Ana".into(),
            node_id: 1,
            node_name: "node-a".into(),
            model: "H100".into(),
            gpu_ids: vec![3, 4],
            share: Share::Whole,
            window: Window::new(start, start + TimeDelta::hours(hours)).unwrap(),
            status: ReservationStatus::Confirmed,
            price_minor: 1_000,
            payment_status: PaymentStatus::Paid,
            refunded_minor: 0,
            charge_mode: ChargeMode::AtBooking,
            charge_at: None,
            released: None,
            created_at: at(8, 0),
            team: None,
            budget: None,
            priority: Default::default(),
            preemptible: false,
            approval_expires_at: None,
            displaced_offer: None,
            moved_from: None,
            moved_to: None,
            start_early: false,
            early_from: None,
            sla_credit_minor: 0,
            card_payment: None,
            profile: None,
        }
    }

    #[test]
    fn a_booking_is_confirmed_now_and_reminded_before_its_start_and_end() {
        let events = NewEvent::booked(&reservation(at(10, 0), 2), at(8, 0));
        let kinds: Vec<_> = events.iter().map(|e| (e.kind, e.due_at)).collect();
        assert_eq!(
            kinds,
            vec![
                (EventKind::BookingConfirmed, at(8, 0)),
                (EventKind::StartingSoon, at(9, 45)),
                (EventKind::EndingSoon, at(11, 45)),
            ]
        );
        assert_eq!(events[0].key, "booking_confirmed:42");
        assert_eq!(events[1].key, "starting_soon:42");
        assert!(events.iter().all(|e| e.audience == Audience::User(7)));
        assert_eq!(events[0].notice.reservation.as_ref().unwrap().gpus, 2);
    }

    #[test]
    fn no_start_reminder_once_its_time_has_passed() {
        let events = NewEvent::booked(&reservation(at(10, 0), 2), at(9, 50));
        let kinds: Vec<_> = events.iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            vec![EventKind::BookingConfirmed, EventKind::EndingSoon]
        );
    }

    #[test]
    fn a_booking_waiting_for_approval_asks_the_team_admins_and_is_not_reminded_yet() {
        let mut waiting = reservation(at(10, 0), 2);
        waiting.team = Some((5, "Vision".into()));
        waiting.approval_expires_at = Some(at(9, 0));
        let events = NewEvent::booked(&waiting, at(8, 0));
        let kinds: Vec<_> = events.iter().map(|e| (e.kind, e.audience)).collect();
        assert_eq!(
            kinds,
            vec![
                (EventKind::BookingConfirmed, Audience::User(7)),
                (EventKind::ApprovalRequested, Audience::TeamAdmins(5)),
            ]
        );
        assert_eq!(events[1].notice.until, Some(at(9, 0)));
    }

    #[test]
    fn a_release_is_told_by_its_reason() {
        let r = reservation(at(10, 0), 2);
        for (reason, kind) in [
            (ReleaseReason::Preempted, EventKind::Displaced),
            (ReleaseReason::Rejected, EventKind::ApprovalRejected),
            (ReleaseReason::ApprovalExpired, EventKind::ApprovalExpired),
            (ReleaseReason::Unpaid, EventKind::BookingReleased),
            (ReleaseReason::Maintenance, EventKind::BookingReleased),
            (ReleaseReason::Retired, EventKind::BookingReleased),
            (ReleaseReason::GpuFailed, EventKind::BookingReleased),
        ] {
            let event = NewEvent::released(&r, reason, 1_000, at(8, 0));
            assert_eq!(event.kind, kind, "{reason:?}");
            assert_eq!(event.notice.reason, Some(reason));
            assert_eq!(event.notice.amount_minor, Some(1_000));
        }
        let free = NewEvent::released(&r, ReleaseReason::Unpaid, 0, at(8, 0));
        assert_eq!(free.notice.amount_minor, None, "nothing was refunded");
    }

    #[test]
    fn credits_are_keyed_by_their_ledger_transaction() {
        let event = NewEvent::credits_added(Audience::TeamAdmins(5), 900, 2_500, at(8, 0));
        assert_eq!(event.key, "credits_added:900");
        assert_eq!(event.reservation_id, None);
    }

    #[test]
    fn money_and_start_and_end_are_urgent_the_rest_is_not() {
        assert!(EventKind::PaymentDue.urgent());
        assert!(EventKind::StartingSoon.urgent());
        assert!(!EventKind::ApprovalRequested.urgent());
        assert!(!EventKind::ApprovalApproved.urgent());
        for kind in EventKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
    }

    #[test]
    fn a_notice_survives_its_json() {
        let event = NewEvent::cancelled(
            &reservation(at(10, 0), 2),
            500,
            Some("Bia".into()),
            at(8, 0),
        );
        let json = serde_json::to_string(&event.notice).unwrap();
        let back: Notice = serde_json::from_str(&json).unwrap();
        assert_eq!(back, event.notice);
    }

    #[test]
    fn failed_deliveries_back_off_and_give_up() {
        assert_eq!(retry_after(1), Some(TimeDelta::minutes(1)));
        assert_eq!(retry_after(2), Some(TimeDelta::minutes(2)));
        assert_eq!(retry_after(3), Some(TimeDelta::minutes(4)));
        assert_eq!(retry_after(7), Some(TimeDelta::minutes(60)));
        assert_eq!(retry_after(MAX_ATTEMPTS), None);
        assert_eq!(retry_after(u32::MAX), None);
        let waits: Vec<_> = (1..MAX_ATTEMPTS).map(|n| retry_after(n).unwrap()).collect();
        assert!(waits.windows(2).all(|pair| pair[0] <= pair[1]));
    }

    #[test]
    fn by_default_money_and_start_and_end_are_mailed_the_rest_stays_in_the_inbox() {
        for kind in EventKind::ALL {
            let choice = ChannelChoice::default_for(kind);
            assert!(choice.inbox, "{kind:?}");
            assert_eq!(choice.email, kind.urgent(), "{kind:?}");
        }
        assert!(ChannelChoice::default_for(EventKind::PaymentDue).email);
        assert!(ChannelChoice::default_for(EventKind::StartingSoon).email);
        assert!(!ChannelChoice::default_for(EventKind::ApprovalRequested).email);
    }

    #[test]
    fn delivery_statuses_read_back_from_their_word() {
        for status in [
            DeliveryStatus::Queued,
            DeliveryStatus::Sent,
            DeliveryStatus::Failed,
        ] {
            assert_eq!(DeliveryStatus::parse(status.as_str()), Some(status));
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                serde_json::Value::String(status.as_str().to_owned())
            );
        }
        assert_eq!(DeliveryStatus::parse("bogus"), None);
        assert_eq!(DeliveryStatus::parse(""), None);
    }
}
