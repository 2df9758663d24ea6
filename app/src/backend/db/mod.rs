//! All database access. Functions take the connection or transaction they run on, so one
//! transaction can be passed through a multi-step write.

pub mod api_tokens;
pub mod audit;
pub mod calendar_feeds;
pub mod card_payments;
pub mod env_profiles;
pub mod idempotency;
pub mod incidents;
pub mod inventory;
pub mod leases;
pub mod ledger;
pub mod maintenance;
pub mod node_access;
pub mod notify;
pub mod payments;
pub mod quotas;
pub mod reclaim;
pub mod reports;
pub mod reservations;
pub mod sessions;
pub mod teams;
pub mod telemetry;
pub mod users;
pub mod watches;
pub mod webhooks;
pub mod workspaces;

use berth_migrations::{Migrator, MigratorTrait};
use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
use sea_orm::{
    ColumnTrait, ConnectOptions, ConnectionTrait, Database, DatabaseConnection,
    DatabaseTransaction, DbBackend, DbErr, RuntimeErr, SqliteTransactionMode, TransactionOptions,
    TransactionTrait,
};
use std::time::Duration;

/// Ids per `IN (…)` list when reading many rows by id (well under the bound-parameter limits of
/// both stores).
const IDS_PER_STATEMENT: usize = 5000;

/// How long to wait for a connection before giving up (start-up and requests).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections a pool keeps open at most unless told otherwise (sqlx's own default).
pub const DEFAULT_MAX_CONNECTIONS: u32 = 10;

/// How often opening an SQLite file is tried when another process holds it locked.
const SQLITE_OPEN_ATTEMPTS: u32 = 20;

/// Opens a connection pool to `url` (`sqlite://…` or `postgres://…`) and checks that the
/// database answers.
///
/// Two processes opening a new SQLite file at once both switch it to WAL, which needs the file
/// to themselves; SQLite refuses one of them at once (`database is locked`, without waiting out
/// the busy timeout, since waiting could deadlock). That refusal is retried after a short pause.
pub async fn connect(url: &str) -> Result<DatabaseConnection, DbErr> {
    connect_with_pool(url, DEFAULT_MAX_CONNECTIONS).await
}

/// [`connect`] with a pool of at most `max_connections` connections (at least 1).
pub async fn connect_with_pool(
    url: &str,
    max_connections: u32,
) -> Result<DatabaseConnection, DbErr> {
    let mut attempt = 1;
    loop {
        match connect_once(url, max_connections.max(1)).await {
            Err(err) if attempt < SQLITE_OPEN_ATTEMPTS && is_sqlite_busy(&err) => {
                tracing::debug!(
                    attempt,
                    "the SQLite file is locked by another process; retrying"
                );
                tokio::time::sleep(Duration::from_millis(25 * u64::from(attempt))).await;
                attempt += 1;
            }
            outcome => return outcome,
        }
    }
}

/// Whether `err` is SQLite's "database is locked" (`SQLITE_BUSY`, code 5, or one of its
/// extended codes).
fn is_sqlite_busy(err: &DbErr) -> bool {
    let (DbErr::Conn(RuntimeErr::SqlxError(sqlx_err))
    | DbErr::Exec(RuntimeErr::SqlxError(sqlx_err))
    | DbErr::Query(RuntimeErr::SqlxError(sqlx_err))) = err
    else {
        return false;
    };
    let sea_orm::sqlx::Error::Database(db_err) = sqlx_err.as_ref() else {
        return false;
    };
    use sea_orm::sqlx::error::DatabaseError as _;
    db_err
        .try_downcast_ref::<sea_orm::sqlx::sqlite::SqliteError>()
        .and_then(|sqlite| sqlite.code())
        .and_then(|code| code.parse::<i32>().ok())
        .is_some_and(|code| code & 0xff == 5)
}

async fn connect_once(url: &str, max_connections: u32) -> Result<DatabaseConnection, DbErr> {
    let mut options = ConnectOptions::new(url);
    options
        .max_connections(max_connections)
        .connect_timeout(CONNECT_TIMEOUT)
        .acquire_timeout(CONNECT_TIMEOUT)
        .sqlx_logging(false)
        .map_sqlx_sqlite_opts(|sqlite| {
            sqlite
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(Duration::from_secs(10))
                .foreign_keys(true)
        })
        // Plan each statement for its actual values. With the default, PostgreSQL switches a
        // prepared statement to a generic plan after five runs, and for "holds of these 64 GPUs
        // in this week" (an IN list of parameters) the generic plan hashes the whole
        // reservations table: 8-11 ms instead of about 2 ms planned for the values at hand.
        .map_sqlx_postgres_opts(|pg| pg.options([("plan_cache_mode", "force_custom_plan")]));
    let db = Database::connect(options).await?;
    db.ping().await?;
    Ok(db)
}

/// The connection pool's use at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolUsage {
    /// Most connections the pool opens.
    pub max: u32,
    /// Connections open now.
    pub open: u32,
    /// Open connections no request holds.
    pub idle: u32,
}

/// How `db`'s pool is used now.
pub fn pool_usage(db: &DatabaseConnection) -> PoolUsage {
    fn usage<D: sea_orm::sqlx::Database>(pool: &sea_orm::sqlx::Pool<D>) -> PoolUsage {
        PoolUsage {
            max: pool.options().get_max_connections(),
            open: pool.size(),
            idle: u32::try_from(pool.num_idle()).unwrap_or(u32::MAX),
        }
    }
    match db.get_database_backend() {
        DbBackend::Postgres => usage(db.get_postgres_connection_pool()),
        _ => usage(db.get_sqlite_connection_pool()),
    }
}

/// Key of the PostgreSQL advisory lock held while migrating.
const MIGRATION_LOCK_KEY: i64 = 0x6265_7274_686d; // "berthm"

/// Where the database's schema stands against this release's migrations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchemaState {
    /// This release's migrations not applied yet, in order.
    pub pending: Vec<String>,
    /// Migrations applied that this release does not know: a newer release migrated the
    /// database (expand/contract keeps it usable by this one, see the README's upgrades).
    pub ahead: Vec<String>,
}

/// Reads which migrations are applied (without creating anything: safe for a readiness probe)
/// and sets them against this release's.
pub async fn schema_state<'c, C>(db: &'c C) -> Result<SchemaState, DbErr>
where
    C: ConnectionTrait,
    &'c C: berth_migrations::IntoSchemaManagerConnection<'c>,
{
    use berth_migrations::{Alias, Query, SchemaManager};
    let applied: Vec<String> = if SchemaManager::new(db).has_table("seaql_migrations").await? {
        let select = Query::select()
            .column(Alias::new("version"))
            .from(Alias::new("seaql_migrations"))
            .to_owned();
        db.query_all(&select)
            .await?
            .iter()
            .map(|row| row.try_get::<String>("", "version"))
            .collect::<Result<_, _>>()?
    } else {
        Vec::new()
    };
    let known: Vec<String> = Migrator::migrations()
        .iter()
        .map(|migration| migration.name().to_owned())
        .collect();
    Ok(SchemaState {
        pending: known
            .iter()
            .filter(|name| !applied.contains(name))
            .cloned()
            .collect(),
        ahead: applied
            .iter()
            .filter(|name| !known.contains(name))
            .cloned()
            .collect(),
    })
}

/// Applies every pending migration in one transaction; returns how many ran. Replicas that start
/// together queue on a lock (PostgreSQL advisory lock, SQLite write lock): one migrates, the
/// others then find nothing to do. A database a newer release has migrated already is left as
/// it is (this release runs on the expanded schema); one that is both behind and ahead of this
/// release (a migration of it missing from the database, another unknown to it) is refused.
pub async fn migrate(db: &DatabaseConnection) -> Result<usize, DbErr> {
    let txn = begin_write(db).await?;
    if db.get_database_backend() == DbBackend::Postgres {
        txn.execute_unprepared(&format!(
            "SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})"
        ))
        .await?;
    }
    let state = schema_state(&txn).await?;
    if !state.ahead.is_empty() {
        if !state.pending.is_empty() {
            return Err(DbErr::Custom(format!(
                "the database lacks this release's migrations {:?} but has {:?}, which this \
                 release does not know: upgrade through each release in turn",
                state.pending, state.ahead
            )));
        }
        tracing::warn!(
            newer = ?state.ahead,
            "the database was migrated by a newer release; running on its expanded schema \
             until this replica is upgraded too"
        );
        txn.commit().await?;
        return Ok(0);
    }
    let pending = state.pending.len();
    Migrator::up(&txn, None).await?;
    txn.commit().await?;
    Ok(pending)
}

/// Number of this release's migrations not yet applied (0 when the schema is current, or ahead
/// of this release). Reads only: safe for a readiness probe.
pub async fn pending_migrations(db: &DatabaseConnection) -> Result<usize, DbErr> {
    Ok(schema_state(db).await?.pending.len())
}

/// For the rest of `txn`, on PostgreSQL: reuse each prepared statement's generic plan instead of
/// planning it again for its values (the sessions' `force_custom_plan`, see [`connect`]).
///
/// For a transaction whose remaining statements are all keyed (by id, or by a GPU's capacity
/// rows in one window), where the generic plan is the same index scan: a booking's inserts and
/// keyed reads then skip 1.3–1.8 ms of planning. Not for statements over `IN` lists of many
/// values or wide ranges; those keep custom plans. Nothing to do on SQLite.
pub async fn reuse_generic_plans(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    if txn.get_database_backend() == DbBackend::Postgres {
        txn.execute_unprepared("SET LOCAL plan_cache_mode = force_generic_plan")
            .await?;
    }
    Ok(())
}

/// For the rest of `txn`, on PostgreSQL: plan each statement for its values again (the sessions'
/// setting), after [`reuse_generic_plans`], before a search over many GPUs or a wide range.
pub async fn plan_for_values(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    if txn.get_database_backend() == DbBackend::Postgres {
        txn.execute_unprepared("SET LOCAL plan_cache_mode = force_custom_plan")
            .await?;
    }
    Ok(())
}

/// Starts a transaction for a write. On SQLite it takes the write lock up front (`BEGIN
/// IMMEDIATE`), so concurrent writers queue instead of failing with `SQLITE_BUSY` half-way.
pub async fn begin_write(db: &DatabaseConnection) -> Result<DatabaseTransaction, DbErr> {
    db.begin_with_options(TransactionOptions {
        sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
        ..TransactionOptions::default()
    })
    .await
}

/// The rows after `after` in a list read newest first by (`time`, `id`): older, or as old with a
/// lower id. Written as `time <= t AND (time < t OR id < i)` so an index on `time` bounds the
/// range.
pub fn before_key(
    time: impl ColumnTrait,
    id: impl ColumnTrait,
    after: crate::domain::paging::Cursor,
) -> sea_orm::Condition {
    let at = after.time();
    sea_orm::Condition::all().add(time.lte(at)).add(
        sea_orm::Condition::any()
            .add(time.lt(at))
            .add(id.lt(after.id)),
    )
}
