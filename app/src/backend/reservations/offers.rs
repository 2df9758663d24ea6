//! Finding room: the earliest windows that fit a request ("find a slot", the suggestion that
//! comes with a clash, the offer made to a displaced booking), and where displacing preemptible
//! bookings makes room.

use super::input::{
    MAX_GPUS_PER_RESERVATION, MAX_OFFERS, SlotForm, invalid, latest_start, parse_time,
};
use crate::backend::db;
use crate::backend::db::reservations::{BookableGpu, bookable_of_model, holders_on, occupancies};
use crate::backend::state::AppState;
use crate::domain::problem::Problem;
use crate::domain::quota::{Holder, Priority, plan_displacement};
use crate::domain::reservation::{Clash, SlotOffer};
use crate::domain::schedule::{
    Occupancy, SLOT_MINUTES, Share, Window, earliest_fit, price_minor, slot_ceil,
};
use crate::error::AppError;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{ConnectionTrait, DatabaseTransaction, DbErr};
use std::collections::BTreeMap;

/// The earliest windows that fit.
pub async fn find_slots(
    state: &AppState,
    form: &SlotForm,
    now: DateTime<Utc>,
) -> Result<Vec<SlotOffer>, AppError> {
    let minutes = form.hours * 60.0;
    let max_minutes = state.portal.booking.max_length.num_minutes();
    #[expect(clippy::cast_precision_loss, reason = "minutes are small")]
    let in_range = minutes.is_finite() && minutes >= 15.0 && minutes <= max_minutes as f64;
    #[expect(clippy::cast_possible_truncation, reason = "checked to be in range")]
    let whole_minutes = minutes.round() as i64;
    if !in_range || whole_minutes % 15 != 0 {
        return Err(invalid(
            "hours",
            Problem::BadLength {
                days: state.portal.booking.max_length.num_days(),
            },
        ));
    }
    let count = form.count.unwrap_or(1);
    if count == 0 || usize::try_from(count).unwrap_or(usize::MAX) > MAX_GPUS_PER_RESERVATION {
        return Err(invalid(
            "count",
            Problem::CountRange {
                max: MAX_GPUS_PER_RESERVATION,
            },
        ));
    }
    let share = match &form.share {
        Some(share) => share.parse()?,
        None => Share::Whole,
    };
    let earliest = match form.after.as_deref().filter(|raw| !raw.trim().is_empty()) {
        Some(raw) => parse_time("after", raw)?.max(now),
        None => now,
    };
    let earliest = slot_ceil(earliest.max(crate::domain::schedule::slot_floor(now)));
    let model = form
        .model
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(str::to_owned);
    let query = SlotQuery {
        model,
        min_memory_mib: form.min_memory_gib.map(|gib| i64::from(gib) * 1024),
        count: usize::try_from(count).unwrap_or(1),
        share,
        length: TimeDelta::minutes(whole_minutes),
        earliest,
    };
    Ok(search(&state.db, &query, latest_start(state, now), MAX_OFFERS).await?)
}

/// `count` of `candidates` on one node that a booking of `priority` gets by displacing
/// preemptible lower-priority bookings, on the node where that displaces fewest; None if no
/// node has enough.
pub async fn displace_on_nodes(
    txn: &DatabaseTransaction,
    candidates: &[BookableGpu],
    count: usize,
    window: &Window,
    quarters: u8,
    priority: Priority,
    borrowers: &std::collections::BTreeSet<i64>,
) -> Result<Option<(Vec<BookableGpu>, Vec<i64>)>, DbErr> {
    let ids: Vec<i64> = candidates.iter().map(|g| g.id).collect();
    let holders = holders_on(txn, &ids, window, priority, borrowers).await?;
    let mut best: Option<(Vec<BookableGpu>, Vec<i64>)> = None;
    for (_, node_gpus) in by_node(candidates) {
        let on_node: Vec<(i64, Vec<Holder>)> = holders
            .iter()
            .filter(|(id, _)| node_gpus.iter().any(|g| g.id == *id))
            .cloned()
            .collect();
        let Some((gpu_ids, victims)) = plan_displacement(&on_node, count, window, quarters) else {
            continue;
        };
        if best
            .as_ref()
            .is_none_or(|(_, fewest)| victims.len() < fewest.len())
        {
            let gpus = node_gpus
                .into_iter()
                .filter(|g| gpu_ids.contains(&g.id))
                .collect();
            best = Some((gpus, victims));
        }
    }
    Ok(best)
}

/// Stores on displaced reservation `id` the nearest window (from its start, or now if later)
/// where the same GPUs' worth of its model is free.
pub async fn offer_instead(
    txn: &DatabaseTransaction,
    id: i64,
    now: DateTime<Utc>,
    latest_start: DateTime<Utc>,
) -> Result<(), DbErr> {
    let Some(row) = db::reservations::row(txn, id).await? else {
        return Ok(());
    };
    let window = db::reservations::stored_window(&row)?;
    let share = u8::try_from(row.quarters)
        .ok()
        .and_then(Share::from_quarters)
        .unwrap_or(Share::Whole);
    let count = db::reservations::gpus_held_by(txn, &[id]).await?.len();
    let candidates = bookable_of_model(txn, &row.model, share).await?;
    let from = Ord::max(window.start(), slot_ceil(now));
    let offer = find_offers(
        txn,
        &candidates,
        count.max(1),
        share,
        window.length(),
        from,
        Ord::max(latest_start, from),
        1,
    )
    .await?
    .into_iter()
    .next();
    if let Some(offer) = offer {
        db::reservations::set_displaced_offer(txn, id, &offer).await?;
    }
    Ok(())
}

/// "`count` × `model` is booked then", with the earliest window from the same start where
/// `count` of `candidates` (GPUs of `model`) fit.
pub async fn model_clash(
    txn: &DatabaseTransaction,
    model: &str,
    candidates: &[BookableGpu],
    count: usize,
    share: Share,
    window: &Window,
    latest_start: DateTime<Utc>,
) -> Result<AppError, DbErr> {
    let suggestion = find_offers(
        txn,
        candidates,
        count,
        share,
        window.length(),
        window.start(),
        latest_start,
        1,
    )
    .await?
    .into_iter()
    .next();
    Ok(AppError::Clash(Box::new(Clash {
        gpu_id: None,
        what: format!("{count} × {model}"),
        at: window.start(),
        suggestion,
    })))
}

/// GPUs grouped by node, nodes by name.
pub fn by_node(gpus: &[BookableGpu]) -> Vec<(String, Vec<BookableGpu>)> {
    let mut grouped: BTreeMap<(String, i64), Vec<BookableGpu>> = BTreeMap::new();
    for g in gpus {
        grouped
            .entry((g.node_name.clone(), g.node_id))
            .or_default()
            .push(g.clone());
    }
    grouped
        .into_iter()
        .map(|((name, _), gpus)| (name, gpus))
        .collect()
}

/// The nearest window after a clash on these exact GPUs; else on any node with as many GPUs of
/// the model.
pub async fn suggest_for_gpus(
    db: &impl ConnectionTrait,
    gpus: &[BookableGpu],
    share: Share,
    window: &Window,
    latest_start: DateTime<Utc>,
) -> Result<Option<SlotOffer>, DbErr> {
    let same = find_offers(
        db,
        gpus,
        gpus.len(),
        share,
        window.length(),
        window.start(),
        latest_start,
        1,
    )
    .await?;
    if let Some(offer) = same.into_iter().next() {
        return Ok(Some(offer));
    }
    let candidates = bookable_of_model(db, &gpus[0].model, share).await?;
    Ok(find_offers(
        db,
        &candidates,
        gpus.len(),
        share,
        window.length(),
        window.start(),
        latest_start,
        1,
    )
    .await?
    .into_iter()
    .next())
}

/// The first stretch of the search for free windows. Most searches are answered within it, and
/// reading a day of bookings costs a fraction of reading the whole horizon.
const FIRST_SEARCH_SPAN: TimeDelta = TimeDelta::days(1);

/// Nodes whose bookings one read of a stretch covers. At fleet scale a model has hundreds of
/// nodes; reading them a batch at a time lets the search stop, or look less far ahead, once the
/// batches read already hold enough early offers.
const NODES_PER_READ: usize = 32;

/// Up to `limit` earliest windows of `length` starting in `[earliest, latest_start]` where
/// `count` of `candidates` on one node fit `share`, earliest first (one per node, ties by node
/// name).
///
/// The horizon is searched in stretches that double in length (a day, two, four, …), reading only
/// the bookings that touch each stretch: a node that has no fit starting in one stretch can only
/// have a later one, so once `limit` nodes have a fit the rest of the horizon cannot offer
/// anything earlier. Within a stretch the nodes are read [`NODES_PER_READ`] at a time in name
/// order: once `limit` offers are in hand, a node further on (a later name) ranks before the last
/// of them only by starting strictly earlier, so the next batches are searched only up to that
/// start, and not at all when it is the earliest possible.
#[expect(
    clippy::too_many_arguments,
    reason = "a query with many independent knobs"
)]
pub async fn find_offers(
    db: &impl ConnectionTrait,
    candidates: &[BookableGpu],
    count: usize,
    share: Share,
    length: TimeDelta,
    earliest: DateTime<Utc>,
    latest_start: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<SlotOffer>, DbErr> {
    let mut offers: Vec<SlotOffer> = Vec::new();
    if limit == 0 {
        return Ok(offers);
    }
    // On the grid, so that consecutive stretches leave no slot untried between them.
    let mut from = crate::domain::schedule::slot_ceil(earliest);
    let mut span = FIRST_SEARCH_SPAN;
    while from <= latest_start && offers.len() < limit {
        let to = std::cmp::min(latest_start, from + span);
        let open: Vec<BookableGpu> = candidates
            .iter()
            .filter(|g| !offers.iter().any(|offer| offer.node_id == g.node_id))
            .cloned()
            .collect();
        for batch in by_node(&open).chunks(NODES_PER_READ) {
            let until = match offer_to_beat(&mut offers, limit) {
                // Only a strictly earlier start beats it from a later node.
                Some(start) => std::cmp::min(to, start - TimeDelta::microseconds(1)),
                None => to,
            };
            if until < from {
                break;
            }
            let gpus: Vec<BookableGpu> = batch
                .iter()
                .flat_map(|(_, gpus)| gpus.iter().cloned())
                .collect();
            offers.extend(find_offers_in(db, &gpus, count, share, length, from, until).await?);
        }
        from = to + TimeDelta::minutes(SLOT_MINUTES);
        span = span * 2;
    }
    offers.sort_by_key(|offer| (offer.window.start(), offer.node_name.clone()));
    offers.truncate(limit);
    Ok(offers)
}

/// With `limit` or more offers in hand, the start of the last one that would be kept (`offers`
/// sorted as the answer is).
fn offer_to_beat(offers: &mut [SlotOffer], limit: usize) -> Option<DateTime<Utc>> {
    if offers.len() < limit {
        return None;
    }
    offers.sort_by(|a, b| (a.window.start(), &a.node_name).cmp(&(b.window.start(), &b.node_name)));
    Some(offers[limit - 1].window.start())
}

/// For each node of `candidates`, the earliest window of `length` starting in
/// `[earliest, latest_start]` where `count` of its GPUs fit `share`.
pub async fn find_offers_in(
    db: &impl ConnectionTrait,
    candidates: &[BookableGpu],
    count: usize,
    share: Share,
    length: TimeDelta,
    earliest: DateTime<Utc>,
    latest_start: DateTime<Utc>,
) -> Result<Vec<SlotOffer>, DbErr> {
    if candidates.is_empty() || latest_start < earliest {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = candidates.iter().map(|g| g.id).collect();
    let range = Window::new(
        crate::domain::schedule::slot_floor(earliest),
        crate::domain::schedule::slot_ceil(latest_start + length),
    )
    .map_err(|err| DbErr::Custom(err.to_string()))?;
    let busy = occupancies(db, &ids, &range).await?;
    let mut offers = Vec::new();
    for (node_name, node_gpus) in by_node(candidates) {
        let occupancy: Vec<Vec<Occupancy>> = node_gpus
            .iter()
            .map(|g| busy.get(&g.id).cloned().unwrap_or_default())
            .collect();
        if let Some((start, picked)) = earliest_fit(
            &occupancy,
            count,
            share.quarters(),
            length,
            earliest,
            latest_start,
        ) {
            let window =
                Window::new(start, start + length).map_err(|err| DbErr::Custom(err.to_string()))?;
            let gpus: Vec<&BookableGpu> = picked.iter().map(|i| &node_gpus[*i]).collect();
            offers.push(SlotOffer {
                node_id: gpus[0].node_id,
                node_name,
                model: gpus[0].model.clone(),
                gpu_ids: gpus.iter().map(|g| g.id).collect(),
                share,
                price_minor: gpus
                    .iter()
                    .map(|g| price_minor(g.hourly_price_minor, share.quarters(), &window))
                    .sum(),
                window,
            });
        }
    }
    Ok(offers)
}

/// What "find a slot" asks for.
#[derive(Debug, Clone)]
pub struct SlotQuery {
    /// Exact model, or any model with at least `min_memory_mib`.
    pub model: Option<String>,
    /// Minimum memory per GPU when no model is given.
    pub min_memory_mib: Option<i64>,
    /// GPUs on one node.
    pub count: usize,
    /// Share of each.
    pub share: Share,
    /// Length.
    pub length: TimeDelta,
    /// Earliest start.
    pub earliest: DateTime<Utc>,
}

/// The earliest windows (up to `limit`) that fit `query`, across all nodes and matching models.
#[tracing::instrument(skip_all)]
pub async fn search(
    db: &impl ConnectionTrait,
    query: &SlotQuery,
    latest_start: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<SlotOffer>, DbErr> {
    if let Some(offers) = search_at_earliest(db, query, latest_start, limit).await? {
        return Ok(offers);
    }
    search_all(db, query, latest_start, limit).await
}

/// [`search`] without its shortcut: every GPU of the matching models, stretch by stretch.
pub async fn search_all(
    db: &impl ConnectionTrait,
    query: &SlotQuery,
    latest_start: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<SlotOffer>, DbErr> {
    let candidates = db::reservations::bookable_gpus(
        db,
        query.model.as_deref(),
        query.min_memory_mib,
        query.share,
    )
    .await?;
    // One model per reservation: search each model separately.
    let mut models: BTreeMap<String, Vec<BookableGpu>> = BTreeMap::new();
    for g in candidates {
        models.entry(g.model.clone()).or_default().push(g);
    }
    let mut offers = Vec::new();
    for gpus in models.values() {
        offers.extend(
            find_offers(
                db,
                gpus,
                query.count,
                query.share,
                query.length,
                query.earliest,
                latest_start,
                limit,
            )
            .await?,
        );
    }
    rank(&mut offers);
    offers.truncate(limit);
    Ok(offers)
}

/// The common case at fleet scale, answered without reading every GPU of the model: when at
/// least `limit` nodes have room right at the earliest start, nothing can start earlier, and
/// those nodes are the answer. Per model, the first `limit` nodes by name with room for the
/// whole window (one grouped query over the slot-load rows each booking adds to and the
/// maintenance windows), each then checked on its bookings by [`find_offers_in`]; ranked as
/// [`search`] ranks. None when fewer than `limit` such offers exist (or the check disagrees
/// with the slot rows): then the full search decides.
async fn search_at_earliest(
    db: &impl ConnectionTrait,
    query: &SlotQuery,
    latest_start: DateTime<Utc>,
    limit: usize,
) -> Result<Option<Vec<SlotOffer>>, DbErr> {
    let start = query.earliest;
    if limit == 0 || start > latest_start || crate::domain::schedule::slot_ceil(start) != start {
        return Ok(None);
    }
    let Ok(window) = Window::new(start, start + query.length) else {
        return Ok(None);
    };
    let models = db::reservations::bookable_models(
        db,
        query.model.as_deref(),
        query.min_memory_mib,
        query.share,
    )
    .await?;
    let mut offers = Vec::new();
    for model in models {
        let nodes = db::reservations::nodes_with_room(
            db,
            &model,
            query.min_memory_mib,
            query.share,
            query.count,
            &window,
            limit,
        )
        .await?;
        if nodes.is_empty() {
            continue;
        }
        let gpus = db::reservations::bookable_on_nodes(
            db,
            &model,
            query.min_memory_mib,
            query.share,
            &nodes,
        )
        .await?;
        let found = find_offers_in(
            db,
            &gpus,
            query.count,
            query.share,
            query.length,
            start,
            start,
        )
        .await?;
        if found.len() != nodes.len() {
            return Ok(None);
        }
        offers.extend(found);
    }
    if offers.len() < limit {
        return Ok(None);
    }
    rank(&mut offers);
    offers.truncate(limit);
    Ok(Some(offers))
}

/// Earliest first, then cheapest, then by node name.
fn rank(offers: &mut [SlotOffer]) {
    offers.sort_by_key(|offer| {
        (
            offer.window.start(),
            offer.price_minor,
            offer.node_name.clone(),
        )
    });
}
