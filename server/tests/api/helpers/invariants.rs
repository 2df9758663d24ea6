//! What must hold after any test: no GPU over capacity in any slot, and a ledger that balances.

use crate::helpers::{TestApp, get};
use berth_app::backend::db;
use berth_app::backend::entity::{reservation, reservation_gpu};
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{DatabaseConnection, EntityTrait};
use std::collections::HashMap;

/// The load per (GPU, slot) of all confirmed reservations, computed from the rows.
pub(crate) async fn loads(app: &TestApp) -> HashMap<(i64, DateTime<Utc>), u32> {
    loads_on(&app.db).await
}

async fn loads_on(db: &DatabaseConnection) -> HashMap<(i64, DateTime<Utc>), u32> {
    let mut load = HashMap::new();
    for (held, r) in reservation_gpu::Entity::find()
        .find_also_related(reservation::Entity)
        .all(db)
        .await
        .unwrap()
    {
        let r = r.unwrap();
        if r.status != reservation::Status::Confirmed {
            continue;
        }
        let mut slot = r.start_at;
        while slot < r.end_at {
            *load.entry((held.gpu_id, slot)).or_insert(0) += u32::try_from(r.quarters).unwrap();
            slot += TimeDelta::minutes(15);
        }
    }
    load
}

/// Asserts that no GPU holds more than a whole GPU in any slot.
pub(crate) async fn assert_capacity_kept(app: &TestApp) {
    assert_capacity_kept_on(&app.db).await;
}

/// [`assert_capacity_kept`] on a database a portal of its own process serves.
pub(crate) async fn assert_capacity_kept_on(db: &DatabaseConnection) {
    let load = loads_on(db).await;
    assert!(
        load.values().all(|quarters| *quarters <= 4),
        "capacity exceeded: {:?}",
        load.iter().filter(|(_, q)| **q > 4).collect::<Vec<_>>()
    );
}
/// The balance of the token holder's wallet, minor units.
pub(crate) async fn balance(app: &TestApp, token: &str) -> i64 {
    get(app, token, "/api/v1/wallet").await.1["balance_minor"]
        .as_i64()
        .unwrap()
}

/// Asserts that the ledger balances (every transaction sums to zero, every account equals its
/// entries); answers the audit.
pub(crate) async fn assert_books_balance(app: &TestApp) -> db::ledger::Audit {
    assert_books_balance_on(&app.db).await
}

/// [`assert_books_balance`] on a database a portal of its own process serves.
pub(crate) async fn assert_books_balance_on(db: &DatabaseConnection) -> db::ledger::Audit {
    let audit = db::ledger::audit(db).await.unwrap();
    assert!(audit.is_clean(), "{audit:?}");
    audit
}
