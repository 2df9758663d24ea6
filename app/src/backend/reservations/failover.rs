//! A failed GPU does not cost the booking: every booking that holds a GPU which fell off the bus,
//! vanished, was retired or was taken for maintenance moves to an equivalent free GPU (same
//! model and share; on the same node first, then on a node where its environment is ready, then
//! on any node), inside the caller's write transaction, with its money and notices.
//!
//! - A booking that had not begun moves whole: its holds go to the new GPUs.
//! - A booking that had begun is split at the slot of the failure (see
//!   [`crate::domain::failover`]): the part before stays as it was and ends there (the node's
//!   agent closes it and saves the workspace, as at any end), the rest continues as a new
//!   reservation that names it (`moved_from`) on the new GPUs (that node's agent prepares the
//!   environment and restores the workspace before it opens).
//! - The minutes lost are refunded, counted in GPU-slots.
//! - With no equivalent GPU free, the rest is released and refunded in full, and the holder is
//!   told the nearest window where the same GPUs are free.

use super::offers::{by_node, find_offers};
use crate::backend::db;
use crate::backend::db::reservations::{BookableGpu, NewRow};
use crate::backend::entity::reservation;
use crate::backend::notify;
use crate::domain::failover::{FailureCause, Move, plan, worth};
use crate::domain::notify::{MovedBrief, NewEvent};
use crate::domain::reservation::{PaymentStatus, ReleaseReason};
use crate::domain::schedule::{Share, Window, fits, slot_ceil, slot_floor};
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{DatabaseTransaction, DbErr};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// GPUs that failed, and when.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The GPUs.
    pub gpus: Vec<i64>,
    /// When they failed (for maintenance: its start).
    pub at: DateTime<Utc>,
    /// Until when they are out (maintenance); `None`: from now on.
    pub until: Option<DateTime<Utc>>,
    /// Why.
    pub cause: FailureCause,
}

/// What became of one booking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Moved whole (it had not begun, or failed in its first slot) to other GPUs.
    Moved {
        /// The reservation.
        id: i64,
    },
    /// Its rest continues as reservation `to`.
    Continued {
        /// The reservation that failed.
        id: i64,
        /// The new one.
        to: i64,
    },
    /// No equivalent GPU was free: its rest was released and refunded.
    Released {
        /// The reservation.
        id: i64,
    },
}

impl Outcome {
    /// The booking that was on the failed GPU.
    pub fn id(&self) -> i64 {
        match *self {
            Outcome::Moved { id } | Outcome::Continued { id, .. } | Outcome::Released { id } => id,
        }
    }
}

/// Moves (or releases) every confirmed booking that holds one of `failure.gpus` while they are
/// out, as `actor` (a platform admin; `None`: Berth itself), at `now`; offers reach up to
/// `latest_start`. Bookings in id order; the failed GPUs are locked first.
pub async fn move_off(
    txn: &DatabaseTransaction,
    failure: &Failure,
    actor: Option<i64>,
    now: DateTime<Utc>,
    latest_start: DateTime<Utc>,
) -> Result<Vec<Outcome>, DbErr> {
    if failure.gpus.is_empty() {
        return Ok(Vec::new());
    }
    let from = slot_floor(failure.at.max(now));
    let until = failure
        .until
        .unwrap_or(from + TimeDelta::days(366 * 3))
        .max(from + TimeDelta::minutes(crate::domain::schedule::SLOT_MINUTES));
    let range = Window::new(from, until).map_err(|err| DbErr::Custom(err.to_string()))?;
    db::reservations::lock_gpus(txn, &failure.gpus).await?;
    let mut hit: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
    for hold in db::reservations::holds_on(txn, &failure.gpus, &range).await? {
        hit.entry(hold.reservation_id)
            .or_default()
            .insert(hold.gpu_id);
    }
    let mut outcomes = Vec::with_capacity(hit.len());
    for (id, failed) in hit {
        let Some(row) = db::reservations::lock_reservation(txn, id).await? else {
            continue;
        };
        if row.status != reservation::Status::Confirmed {
            continue;
        }
        let window = db::reservations::stored_window(&row)?;
        let Some(step) = plan(window, failure.at, now) else {
            continue;
        };
        let failed: Vec<i64> = failed.into_iter().collect();
        let outcome = move_one(
            txn,
            &row,
            &failed,
            &step,
            failure.cause,
            (actor, now),
            latest_start,
        )
        .await?;
        tracing::info!(
            reservation.id = id,
            cause = failure.cause.as_str(),
            outcome = ?outcome,
            "booking moved off a failed GPU"
        );
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

/// Where a booking goes.
struct Target {
    /// Its node.
    node_id: i64,
    /// The GPUs it keeps.
    kept: Vec<i64>,
    /// The GPUs it gets.
    new: Vec<i64>,
}

async fn move_one(
    txn: &DatabaseTransaction,
    row: &reservation::Model,
    failed: &[i64],
    step: &Move,
    cause: FailureCause,
    (actor, now): (Option<i64>, DateTime<Utc>),
    latest_start: DateTime<Utc>,
) -> Result<Outcome, DbErr> {
    let held = db::reservations::gpus_held_by(txn, &[row.id]).await?;
    let share = share_of(row);
    let target = find_target(txn, row, &held, failed, share, &step.rest()).await?;
    let gpus = i64::try_from(held.len().max(1)).unwrap_or(1);
    let failed_count = i64::try_from(failed.len()).unwrap_or(gpus);
    let Some(target) = target else {
        return release_rest(
            txn,
            row,
            step,
            (failed_count, gpus),
            share,
            (actor, now),
            latest_start,
        )
        .await;
    };
    let moved = if target.node_id == row.node_id {
        failed_count
    } else {
        gpus
    };
    let lost = step.lost(failed_count, moved);
    let price = |gpu_slots: i64| worth(row.price_minor, gpus, &step.window, gpu_slots);
    let paid = row.payment_status == PaymentStatus::Paid;
    let failed_labels = labels(txn, failed).await?;
    let brief = |from_reservation: i64| MovedBrief {
        from_reservation,
        cause,
        failed: failed_labels.clone(),
        from: step.at,
    };
    if !step.splits() {
        // Whole: the holds move; what was lost of it comes back.
        db::reservations::replace_gpus(txn, row, &held, &target_gpus(&target), target.node_id)
            .await?;
        // Running on another node now: that node restores the workspace the old one saves.
        if step.interrupted && target.node_id != row.node_id {
            db::reservations::set_moved_at(txn, row.id, now).await?;
        }
        let refund = super::give_back(txn, row, price(lost.total()), (actor, now)).await?;
        let view = db::reservations::view_of(txn, row.id, now)
            .await?
            .ok_or_else(|| DbErr::RecordNotFound(format!("reservation {}", row.id)))?;
        let connect = connect_line(txn, row.owner_id, target.node_id).await?;
        notify::record(
            txn,
            &[NewEvent::moved(&view, brief(row.id), &connect, refund, now)],
        )
        .await?;
        return Ok(Outcome::Moved { id: row.id });
    }
    // Split: the first part ends at the move; the rest continues on the new GPUs.
    let rest = step.rest();
    let rest_worth = price(gpus * step.rest_slots());
    db::reservations::shorten(txn, row, step.at).await?;
    let refund_first =
        super::give_back(txn, row, rest_worth + price(lost.before), (actor, now)).await?;
    let rest_price = (rest_worth - price(lost.after)).max(0);
    let (status, mode, charge_at) = match row.payment_status {
        _ if rest_price == 0 => (
            PaymentStatus::Free,
            crate::domain::payment::ChargeMode::AtBooking,
            None,
        ),
        status => (status, row.charge_mode, row.charge_at),
    };
    let new = NewRow {
        owner_id: row.owner_id,
        profile_version_id: row.profile_version_id,
        team_id: row.team_id,
        node_id: target.node_id,
        model: row.model.clone(),
        quarters: share.quarters(),
        window: rest,
        price_minor: rest_price,
        payment_status: status,
        charge_mode: mode,
        charge_at,
        priority: row.priority,
        preemptible: row.preemptible,
        approval_expires_at: row.approval_expires_at,
        gpu_count: held.len(),
        created_at: now,
        moved_from: Some((row.id, cause)),
        start_early: false,
        card_id: None,
    };
    let continued = db::reservations::insert_holding(txn, &new, &target_gpus(&target)).await?;
    // Paid: the rest is paid from what the first part gave back, so the holder is out of
    // pocket only for what they used.
    if status == PaymentStatus::Paid {
        db::ledger::charge_inserted(txn, &continued, None, now, None)
            .await
            .map_err(|err| match err {
                db::ledger::PostError::Db(err) => err,
                other => DbErr::Custom(other.to_string()),
            })?;
    }
    let view = db::reservations::view_of(txn, continued.id, now)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("reservation {}", continued.id)))?;
    let connect = connect_line(txn, row.owner_id, target.node_id).await?;
    // What the holder got back for the minutes lost: refunded less what the rest costs.
    let lost_minor = if paid { refund_first - rest_price } else { 0 };
    notify::record(
        txn,
        &[NewEvent::moved(
            &view,
            brief(row.id),
            &connect,
            lost_minor,
            now,
        )],
    )
    .await?;
    Ok(Outcome::Continued {
        id: row.id,
        to: continued.id,
    })
}

/// The GPUs the booking holds after the move.
fn target_gpus(target: &Target) -> Vec<i64> {
    let mut all: Vec<i64> = target.kept.iter().chain(&target.new).copied().collect();
    all.sort_unstable();
    all
}

/// Where the rest of `row` can go: the failed GPUs swapped for free ones on its node, else all
/// its GPUs on another node (where its environment is ready first, then by name); `None` when
/// no equivalent GPUs are free for the whole rest.
async fn find_target(
    txn: &DatabaseTransaction,
    row: &reservation::Model,
    held: &[i64],
    failed: &[i64],
    share: Share,
    rest: &Window,
) -> Result<Option<Target>, DbErr> {
    let own: HashSet<i64> = held.iter().chain(failed).copied().collect();
    let mut candidates: Vec<BookableGpu> =
        db::reservations::bookable_of_model(txn, &row.model, share)
            .await?
            .into_iter()
            .filter(|g| !own.contains(&g.id))
            .collect();
    if candidates.is_empty() {
        return Ok(None);
    }
    let ids: Vec<i64> = candidates.iter().map(|g| g.id).collect();
    db::reservations::lock_gpus(txn, &ids).await?;
    let busy = db::reservations::occupancies(txn, &ids, rest).await?;
    candidates.retain(|g| {
        fits(
            busy.get(&g.id).map(Vec::as_slice).unwrap_or(&[]),
            rest,
            share.quarters(),
        )
    });
    let kept: Vec<i64> = held
        .iter()
        .filter(|id| !failed.contains(id))
        .copied()
        .collect();
    let same: Vec<i64> = candidates
        .iter()
        .filter(|g| g.node_id == row.node_id)
        .map(|g| g.id)
        .take(failed.len())
        .collect();
    if same.len() == failed.len() {
        return Ok(Some(Target {
            node_id: row.node_id,
            kept,
            new: same,
        }));
    }
    // A simulated (demo) node cannot take a booking from a node with an agent, nor the reverse.
    let demo: HashSet<i64> = db::node_access::nodes(txn)
        .await?
        .into_iter()
        .filter(|n| n.is_demo)
        .map(|n| n.id)
        .collect();
    let from_demo = demo.contains(&row.node_id);
    candidates.retain(|g| demo.contains(&g.node_id) == from_demo);
    let ready: Vec<i64> = match row.profile_version_id {
        Some(version) => match db::env_profiles::versions_with_profiles(txn, &[version])
            .await?
            .first()
        {
            Some((v, _)) => db::env_profiles::nodes_ready_for(txn, &v.content_hash).await?,
            None => Vec::new(),
        },
        None => Vec::new(),
    };
    let mut nodes = by_node(&candidates);
    nodes.sort_by_key(|(_, gpus)| !ready.contains(&gpus[0].node_id));
    let count = held.len().max(1);
    Ok(nodes
        .into_iter()
        .filter(|(_, gpus)| gpus[0].node_id != row.node_id && gpus.len() >= count)
        .map(|(_, gpus)| Target {
            node_id: gpus[0].node_id,
            kept: Vec::new(),
            new: gpus.iter().take(count).map(|g| g.id).collect(),
        })
        .next())
}

/// No equivalent GPU: the rest of `row` is released and refunded in full (with what the failed
/// GPUs stood idle before), and the holder is offered the nearest window for it.
async fn release_rest(
    txn: &DatabaseTransaction,
    row: &reservation::Model,
    step: &Move,
    (failed, gpus): (i64, i64),
    share: Share,
    (actor, now): (Option<i64>, DateTime<Utc>),
    latest_start: DateTime<Utc>,
) -> Result<Outcome, DbErr> {
    let back = worth(
        row.price_minor,
        gpus,
        &step.window,
        step.released(failed, gpus),
    );
    if step.splits() {
        db::reservations::shorten(txn, row, step.at).await?;
        super::give_back(txn, row, back, (actor, now)).await?;
        db::reservations::set_released_reason(txn, row.id, ReleaseReason::GpuFailed).await?;
    } else {
        db::reservations::withdraw(txn, row, now, actor, Some(ReleaseReason::GpuFailed)).await?;
        if let Some((charge_id, paid)) = db::ledger::charge_of(txn, row.id).await? {
            db::ledger::refund(txn, row, charge_id, paid, actor, now).await?;
        }
    }
    // The nearest window for the rest, on any node.
    let candidates = db::reservations::bookable_of_model(txn, &row.model, share).await?;
    let earliest = slot_ceil(now).max(step.at);
    let offer = find_offers(
        txn,
        &candidates,
        usize::try_from(gpus).unwrap_or(1),
        share,
        step.rest().length(),
        earliest,
        latest_start.max(earliest),
        1,
    )
    .await?
    .into_iter()
    .next();
    if let Some(offer) = &offer {
        db::reservations::set_displaced_offer(txn, row.id, offer).await?;
    }
    if let Some(view) = db::reservations::view_of(txn, row.id, now).await? {
        let refunded = view.refunded_minor;
        let event = NewEvent::released(&view, ReleaseReason::GpuFailed, refunded, now);
        if step.splits() {
            notify::record(txn, &[event]).await?;
        } else {
            notify::withdrawn(txn, row.id, &[event]).await?;
        }
    }
    Ok(Outcome::Released { id: row.id })
}

/// `node-a #1` for each of `gpus`.
async fn labels(txn: &DatabaseTransaction, gpus: &[i64]) -> Result<Vec<String>, DbErr> {
    Ok(db::reservations::gpus_by_id(txn, gpus)
        .await?
        .iter()
        .map(BookableGpu::label)
        .collect())
}

/// `ssh login@host` for `user_id` on node `node_id`.
async fn connect_line(
    txn: &DatabaseTransaction,
    user_id: i64,
    node_id: i64,
) -> Result<String, DbErr> {
    let host = db::node_access::node(txn, node_id)
        .await?
        .map(|n| n.hostname)
        .unwrap_or_default();
    let login = match db::node_access::logins_of(txn, &[user_id])
        .await?
        .into_iter()
        .next()
    {
        Some((_, current, email)) => {
            crate::backend::node_access::login_of(txn, user_id, current, &email)
                .await
                .map_err(|err| DbErr::Custom(err.to_string()))?
        }
        None => String::new(),
    };
    Ok(format!("ssh {login}@{host}"))
}

fn share_of(row: &reservation::Model) -> Share {
    u8::try_from(row.quarters)
        .ok()
        .and_then(Share::from_quarters)
        .unwrap_or(Share::Whole)
}
