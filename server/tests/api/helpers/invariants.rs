//! What must hold after any test: no GPU over capacity in any slot, capacity rows that match the
//! holds, and a ledger that balances.

use crate::helpers::{TestApp, get};
use berth_app::backend::db;
use berth_app::backend::entity::{reservation, reservation_gpu};
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{DatabaseConnection, EntityTrait, FromQueryResult, Statement};
use std::collections::HashMap;

/// The load per (GPU, slot) of all confirmed reservations, computed from the rows.
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

/// Asserts that no GPU holds more than a whole GPU in any slot, and that the capacity rows
/// (`gpu_slot_load`, whose CHECK refuses a booking the rules let through) count exactly the
/// quarters the confirmed reservations hold.
pub(crate) async fn assert_capacity_kept(app: &TestApp) {
    assert_capacity_kept_on(&app.db).await;
}

/// A `gpu_slot_load` row.
#[derive(Debug, FromQueryResult)]
struct SlotLoad {
    gpu_id: i64,
    slot_start: DateTime<Utc>,
    quarters: i16,
}

/// [`assert_capacity_kept`] on a database a portal of its own process serves.
pub(crate) async fn assert_capacity_kept_on(db: &DatabaseConnection) {
    let load = loads_on(db).await;
    assert!(
        load.values().all(|quarters| *quarters <= 4),
        "capacity exceeded: {:?}",
        load.iter().filter(|(_, q)| **q > 4).collect::<Vec<_>>()
    );
    let stored: HashMap<(i64, DateTime<Utc>), u32> =
        SlotLoad::find_by_statement(Statement::from_string(
            db.get_database_backend(),
            "SELECT gpu_id, slot_start, quarters FROM gpu_slot_load WHERE quarters <> 0",
        ))
        .all(db)
        .await
        .unwrap()
        .into_iter()
        .map(|row| {
            let quarters = u32::try_from(row.quarters)
                .unwrap_or_else(|_| panic!("negative capacity row: {row:?}"));
            ((row.gpu_id, row.slot_start), quarters)
        })
        .collect();
    let mut differ: Vec<_> = load
        .keys()
        .chain(stored.keys())
        .filter(|key| load.get(key) != stored.get(key))
        .map(|key| (key, load.get(key), stored.get(key)))
        .collect();
    differ.sort();
    differ.dedup();
    assert!(
        differ.is_empty(),
        "capacity rows differ from the holds ((GPU, slot), held, stored): {:?}",
        &differ[..differ.len().min(10)]
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
