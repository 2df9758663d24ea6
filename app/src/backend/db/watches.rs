//! Watches' queries: the watches, the windows held for them, and the holds a booking must respect.

use crate::backend::entity::{watch, watch_offer};
use crate::domain::schedule::{Share, Window};
use crate::domain::watch::{OfferOutcome, WatchOffer, WatchRequest, WatchState};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseTransaction, DbBackend, DbErr,
    EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};
use std::collections::HashMap;

/// A new watch.
#[derive(Debug, Clone)]
pub struct NewWatch<'a> {
    /// The watcher.
    pub user_id: i64,
    /// The team a booking from it is for.
    pub team_id: Option<i64>,
    /// What it asks for.
    pub request: &'a WatchRequest,
    /// Now.
    pub now: DateTime<Utc>,
}

/// Stores `new`, watching; answers its id.
pub async fn insert(txn: &DatabaseTransaction, new: &NewWatch<'_>) -> Result<i64, DbErr> {
    let request = new.request;
    let row = watch::ActiveModel {
        user_id: Set(new.user_id),
        team_id: Set(new.team_id),
        model: Set(request.model.clone()),
        gpu_count: Set(i32::try_from(request.count).unwrap_or(i32::MAX)),
        quarters: Set(i16::from(request.share.quarters())),
        length_minutes: Set(i32::try_from(request.length.num_minutes()).unwrap_or(i32::MAX)),
        from_at: Set(request.from),
        to_at: Set(request.to),
        state: Set(WatchState::Watching.as_str().to_owned()),
        created_at: Set(new.now),
        ..Default::default()
    }
    .insert(txn)
    .await?;
    Ok(row.id)
}

/// How many watches `user_id` has watching.
pub async fn open_count(db: &impl ConnectionTrait, user_id: i64) -> Result<u64, DbErr> {
    watch::Entity::find()
        .filter(watch::Column::UserId.eq(user_id))
        .filter(watch::Column::State.eq(WatchState::Watching.as_str()))
        .count(db)
        .await
}

/// What watch `row` asks for (`None` for a row that no longer reads).
pub fn request_of(row: &watch::Model) -> Option<WatchRequest> {
    Some(WatchRequest {
        model: row.model.clone(),
        count: u32::try_from(row.gpu_count).ok()?,
        share: u8::try_from(row.quarters)
            .ok()
            .and_then(Share::from_quarters)?,
        length: chrono::TimeDelta::minutes(i64::from(row.length_minutes)),
        from: row.from_at,
        to: row.to_at,
    })
}

/// The GPU ids stored on an offer.
pub fn gpu_ids_of(row: &watch_offer::Model) -> Vec<i64> {
    row.gpu_ids
        .split(',')
        .filter_map(|id| id.trim().parse().ok())
        .collect()
}

/// The offer stored in `row`, with its node's name.
pub fn offer_of(row: &watch_offer::Model, node_name: String) -> Result<WatchOffer, DbErr> {
    Ok(WatchOffer {
        id: row.id,
        node_name,
        gpu_ids: gpu_ids_of(row),
        window: Window::new(row.start_at, row.end_at)
            .map_err(|err| DbErr::Custom(format!("watch_offers.id={}: {err}", row.id)))?,
        price_minor: row.price_minor,
        hold_until: row.hold_until,
        outcome: row.outcome.as_deref().and_then(OfferOutcome::parse),
    })
}

/// `user_id`'s watches, newest first (at most `limit`), each with its last offer.
pub async fn of_user(
    db: &impl ConnectionTrait,
    user_id: i64,
    limit: u64,
) -> Result<Vec<(watch::Model, Option<watch_offer::Model>)>, DbErr> {
    let watches = watch::Entity::find()
        .filter(watch::Column::UserId.eq(user_id))
        .order_by_desc(watch::Column::CreatedAt)
        .order_by_desc(watch::Column::Id)
        .limit(limit)
        .all(db)
        .await?;
    let last = last_offers(db, &watches.iter().map(|w| w.id).collect::<Vec<_>>()).await?;
    Ok(watches
        .into_iter()
        .map(|w| {
            let offer = last.get(&w.id).cloned();
            (w, offer)
        })
        .collect())
}

/// The last offer of each of `watch_ids`.
pub async fn last_offers(
    db: &impl ConnectionTrait,
    watch_ids: &[i64],
) -> Result<HashMap<i64, watch_offer::Model>, DbErr> {
    if watch_ids.is_empty() {
        return Ok(HashMap::new());
    }
    let offers = watch_offer::Entity::find()
        .filter(watch_offer::Column::WatchId.is_in(watch_ids.to_vec()))
        .order_by_asc(watch_offer::Column::Id)
        .all(db)
        .await?;
    Ok(offers.into_iter().map(|o| (o.watch_id, o)).collect())
}

/// Every watch still watching, oldest first (the order watchers are told in).
pub async fn watching(db: &impl ConnectionTrait) -> Result<Vec<watch::Model>, DbErr> {
    watch::Entity::find()
        .filter(watch::Column::State.eq(WatchState::Watching.as_str()))
        .order_by_asc(watch::Column::CreatedAt)
        .order_by_asc(watch::Column::Id)
        .all(db)
        .await
}

/// Watch `id`, locked for the rest of `txn`.
pub async fn lock_watch(txn: &DatabaseTransaction, id: i64) -> Result<Option<watch::Model>, DbErr> {
    let mut query = watch::Entity::find_by_id(id);
    if txn.get_database_backend() == DbBackend::Postgres {
        query = query.lock_exclusive();
    }
    query.one(txn).await
}

/// Watch `id` stops watching (`state`), at `now`, served by `reservation_id` if any. Only a
/// watch still watching changes; answers whether it did.
pub async fn close(
    txn: &DatabaseTransaction,
    id: i64,
    state: WatchState,
    now: DateTime<Utc>,
    reservation_id: Option<i64>,
) -> Result<bool, DbErr> {
    let result = watch::Entity::update_many()
        .col_expr(watch::Column::State, Expr::value(state.as_str()))
        .col_expr(watch::Column::EndedAt, Expr::value(now))
        .col_expr(watch::Column::ReservationId, Expr::value(reservation_id))
        .filter(watch::Column::Id.eq(id))
        .filter(watch::Column::State.eq(WatchState::Watching.as_str()))
        .exec(txn)
        .await?;
    Ok(result.rows_affected == 1)
}

/// A window found for a watch.
#[derive(Debug, Clone)]
pub struct NewOffer {
    /// The watch.
    pub watch_id: i64,
    /// The node.
    pub node_id: i64,
    /// The GPUs.
    pub gpu_ids: Vec<i64>,
    /// Share of each.
    pub share: Share,
    /// When.
    pub window: Window,
    /// Its price, minor units.
    pub price_minor: i64,
    /// Found at.
    pub now: DateTime<Utc>,
    /// Held until.
    pub hold_until: DateTime<Utc>,
}

/// Stores `new`, holding; answers its id.
pub async fn insert_offer(txn: &DatabaseTransaction, new: &NewOffer) -> Result<i64, DbErr> {
    let mut ids = new.gpu_ids.clone();
    ids.sort_unstable();
    let row = watch_offer::ActiveModel {
        watch_id: Set(new.watch_id),
        node_id: Set(new.node_id),
        gpu_ids: Set(ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")),
        quarters: Set(i16::from(new.share.quarters())),
        start_at: Set(new.window.start()),
        end_at: Set(new.window.end()),
        price_minor: Set(new.price_minor),
        created_at: Set(new.now),
        hold_until: Set(new.hold_until),
        ..Default::default()
    }
    .insert(txn)
    .await?;
    Ok(row.id)
}

/// Offer `id` of watch `watch_id`, locked for the rest of `txn`.
pub async fn lock_offer(
    txn: &DatabaseTransaction,
    watch_id: i64,
    id: i64,
) -> Result<Option<watch_offer::Model>, DbErr> {
    let mut query =
        watch_offer::Entity::find_by_id(id).filter(watch_offer::Column::WatchId.eq(watch_id));
    if txn.get_database_backend() == DbBackend::Postgres {
        query = query.lock_exclusive();
    }
    query.one(txn).await
}

/// Holds that ended unused by `now` lapse; answers how many.
pub async fn lapse(txn: &DatabaseTransaction, now: DateTime<Utc>) -> Result<u64, DbErr> {
    let result = watch_offer::Entity::update_many()
        .col_expr(
            watch_offer::Column::Outcome,
            Expr::value(OfferOutcome::Lapsed.as_str()),
        )
        .filter(watch_offer::Column::Outcome.is_null())
        .filter(watch_offer::Column::HoldUntil.lte(now))
        .exec(txn)
        .await?;
    Ok(result.rows_affected)
}

/// Holds not settled yet whose window overlaps `window` on any of `gpu_ids` and that still hold
/// at `now`.
pub async fn holds_on(
    db: &impl ConnectionTrait,
    gpu_ids: &[i64],
    window: &Window,
    now: DateTime<Utc>,
) -> Result<Vec<watch_offer::Model>, DbErr> {
    let open = watch_offer::Entity::find()
        .filter(watch_offer::Column::Outcome.is_null())
        .filter(watch_offer::Column::HoldUntil.gt(now))
        .filter(watch_offer::Column::StartAt.lt(window.end()))
        .filter(watch_offer::Column::EndAt.gt(window.start()))
        .all(db)
        .await?;
    Ok(open
        .into_iter()
        .filter(|offer| gpu_ids_of(offer).iter().any(|id| gpu_ids.contains(id)))
        .collect())
}

/// Offer `id` was booked as `reservation_id`; the other holds of the same window on the same
/// GPUs are lost (their watches keep watching). Answers the watches that lost.
pub async fn settle_booked(
    txn: &DatabaseTransaction,
    offer: &watch_offer::Model,
    reservation_id: i64,
    now: DateTime<Utc>,
) -> Result<Vec<i64>, DbErr> {
    watch_offer::Entity::update_many()
        .col_expr(
            watch_offer::Column::Outcome,
            Expr::value(OfferOutcome::Booked.as_str()),
        )
        .col_expr(
            watch_offer::Column::ReservationId,
            Expr::value(reservation_id),
        )
        .filter(watch_offer::Column::Id.eq(offer.id))
        .exec(txn)
        .await?;
    let window = Window::new(offer.start_at, offer.end_at)
        .map_err(|err| DbErr::Custom(format!("watch_offers.id={}: {err}", offer.id)))?;
    let rivals = holds_on(txn, &gpu_ids_of(offer), &window, now).await?;
    let ids: Vec<i64> = rivals.iter().map(|o| o.id).collect();
    if !ids.is_empty() {
        watch_offer::Entity::update_many()
            .col_expr(
                watch_offer::Column::Outcome,
                Expr::value(OfferOutcome::Lost.as_str()),
            )
            .filter(watch_offer::Column::Id.is_in(ids))
            .exec(txn)
            .await?;
    }
    Ok(rivals.into_iter().map(|o| o.watch_id).collect())
}

/// The names of nodes `ids`.
pub async fn node_names(
    db: &impl ConnectionTrait,
    ids: &[i64],
) -> Result<HashMap<i64, String>, DbErr> {
    use crate::backend::entity::node;
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows: Vec<(i64, String)> = node::Entity::find()
        .select_only()
        .column(node::Column::Id)
        .column(node::Column::Name)
        .filter(node::Column::Id.is_in(ids.to_vec()))
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows.into_iter().collect())
}

/// Watch `id`.
pub async fn of_id(db: &impl ConnectionTrait, id: i64) -> Result<Option<watch::Model>, DbErr> {
    watch::Entity::find_by_id(id).one(db).await
}

/// The holds of watch `watch_id` still open are let go (it stopped watching).
pub async fn let_go(txn: &DatabaseTransaction, watch_id: i64) -> Result<(), DbErr> {
    watch_offer::Entity::update_many()
        .col_expr(
            watch_offer::Column::Outcome,
            Expr::value(OfferOutcome::Lapsed.as_str()),
        )
        .filter(watch_offer::Column::WatchId.eq(watch_id))
        .filter(watch_offer::Column::Outcome.is_null())
        .exec(txn)
        .await?;
    Ok(())
}
