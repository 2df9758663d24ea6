//! The ledger's tables: posting a balanced transaction, reading a wallet, and auditing that the
//! books balance.
//!
//! A posting runs inside the caller's write transaction. Each wallet entry moves the wallet's
//! cached balance with one guarded `UPDATE … WHERE balance_minor + amount >= 0`: the row lock
//! (PostgreSQL) or the write lock (SQLite) serialises concurrent postings to a wallet, and a
//! posting that would take it below zero changes nothing and answers
//! [`PostError::InsufficientFunds`]. The platform's accounts keep no cached balance, so postings
//! for different users never wait on each other. On PostgreSQL the (last) wallet's `UPDATE`, the
//! transaction and its entries are one statement; SQLite runs them one after the other.

use crate::backend::entity::{ledger_account, ledger_entry, ledger_transaction, reservation};
use crate::domain::ledger::{Account, BerthReason, Posting, TransactionKind, WalletEntry};
use crate::domain::money::Money;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{
    ActiveValue::{NotSet, Set},
    ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, FromQueryResult, QueryFilter,
    QueryOrder, QuerySelect, RelationTrait, Statement,
};

/// What a transaction records besides its entries.
#[derive(Debug, Clone)]
pub struct TransactionRecord<'a> {
    /// What it is.
    pub kind: TransactionKind,
    /// Whose wallet it moves.
    pub user_id: Option<i64>,
    /// The reservation paid or refunded.
    pub reservation_id: Option<i64>,
    /// The transaction this one refunds or corrects.
    pub reverses_id: Option<i64>,
    /// Why.
    pub reason: RecordReason<'a>,
    /// Who did it (None: the command line or a job).
    pub actor_id: Option<i64>,
    /// The payment provider of a top-up.
    pub provider: Option<&'a str>,
    /// When.
    pub at: DateTime<Utc>,
}

/// Why a transaction was made: words a person typed, or Berth's own reason.
#[derive(Debug, Clone, Copy)]
pub enum RecordReason<'a> {
    /// As typed (empty: none, the kind says it).
    Typed(&'a str),
    /// Berth's, stored as data and in English words.
    Berth(&'a BerthReason),
}

impl RecordReason<'_> {
    /// The words stored in `reason`.
    fn words(self) -> String {
        match self {
            RecordReason::Typed(text) => text.to_owned(),
            RecordReason::Berth(reason) => reason.english(),
        }
    }

    /// What is stored in `reason_code`.
    fn code(self) -> Option<String> {
        match self {
            RecordReason::Typed(_) => None,
            RecordReason::Berth(reason) => Some(reason.code()),
        }
    }
}

/// Why a posting was not written.
#[derive(Debug, thiserror::Error)]
pub enum PostError {
    /// A wallet would go below zero; nothing was written.
    #[error("{account:?} is short by {missing:?}")]
    InsufficientFunds {
        /// The wallet.
        account: Account,
        /// How much more it would need.
        missing: Money,
    },
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbErr),
}

/// The condition that picks `account`'s row.
fn account_is(account: Account) -> sea_orm::Condition {
    use sea_orm::Condition;
    let user = match account.user_id() {
        Some(user) => ledger_account::Column::UserId.eq(user),
        None => ledger_account::Column::UserId.is_null(),
    };
    let team = match account.team_id() {
        Some(team) => ledger_account::Column::TeamId.eq(team),
        None => ledger_account::Column::TeamId.is_null(),
    };
    Condition::all()
        .add(ledger_account::Column::Kind.eq(account.kind()))
        .add(user)
        .add(team)
}

/// The id of `account`, creating a user's wallet on first use.
pub async fn account_id(db: &impl ConnectionTrait, account: Account) -> Result<i64, DbErr> {
    let find = || ledger_account::Entity::find().filter(account_is(account));
    if let Some(row) = find().one(db).await? {
        return Ok(row.id);
    }
    if !account.may_not_go_negative() {
        return Err(DbErr::RecordNotFound(format!(
            "the {} account (created by the ledger migration)",
            account.kind()
        )));
    }
    // Two first postings for one wallet at once (PostgreSQL) both get here: one inserts, the
    // other's insert does nothing, and both read the one row.
    create_account(db, account).await?;
    find()
        .one(db)
        .await?
        .map(|row| row.id)
        .ok_or_else(|| DbErr::RecordNotFound(format!("{account:?}")))
}

/// The ids of `accounts`, in their order, read in one statement; a user's wallet not created
/// yet is created as by [`account_id`].
async fn account_ids(db: &impl ConnectionTrait, accounts: &[Account]) -> Result<Vec<i64>, DbErr> {
    let rows = ledger_account::Entity::find()
        .filter(
            accounts
                .iter()
                .fold(sea_orm::Condition::any(), |any, account| {
                    any.add(account_is(*account))
                }),
        )
        .all(db)
        .await?;
    let mut ids = Vec::with_capacity(accounts.len());
    for account in accounts {
        let found = rows.iter().find(|row| {
            row.kind == account.kind()
                && row.user_id == account.user_id()
                && row.team_id == account.team_id()
        });
        ids.push(match found {
            Some(row) => row.id,
            None => account_id(db, *account).await?,
        });
    }
    Ok(ids)
}

/// Writes `posting` as one transaction described by `record`; returns its id. Run it inside a
/// write transaction: on [`PostError::InsufficientFunds`] the caller rolls back (nothing of the
/// posting was kept anyway).
pub async fn post(
    db: &impl ConnectionTrait,
    record: &TransactionRecord<'_>,
    posting: &Posting,
) -> Result<i64, PostError> {
    post_with(db, record, posting, Totals::Add, &[]).await
}

/// Whether a posting for a reservation adds its wallet side to the booking's running totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Totals {
    /// Added by the posting (every posting but [`charge_inserted`]).
    Add,
    /// Written with the row, in the same transaction, before the posting.
    Written,
}

/// [`post`], with the booking's totals added or already written.
async fn post_with(
    db: &impl ConnectionTrait,
    record: &TransactionRecord<'_>,
    posting: &Posting,
    totals: Totals,
    known: &[(Account, i64)],
) -> Result<i64, PostError> {
    let accounts: Vec<Account> = posting
        .entries()
        .iter()
        .map(|(account, _)| *account)
        .collect();
    // The ids the caller read already (a wallet it locked), else read now.
    let found: Option<Vec<i64>> = accounts
        .iter()
        .map(|account| {
            known
                .iter()
                .find(|(have, _)| have == account)
                .map(|(_, id)| *id)
        })
        .collect();
    let ids = match found {
        Some(ids) => ids,
        None => account_ids(db, &accounts).await?,
    };
    let mut resolved: Vec<(Account, i64, Money)> = posting
        .entries()
        .iter()
        .zip(ids)
        .map(|((account, amount), id)| (*account, id, *amount))
        .collect();
    // Wallets in id order, so two postings that touch the same wallets lock them in one order.
    resolved.sort_by_key(|(_, id, _)| *id);
    let guarded: Vec<(Account, i64, Money)> = resolved
        .iter()
        .filter(|(account, _, _)| account.may_not_go_negative())
        .copied()
        .collect();
    let transaction = if db.get_database_backend() == DbBackend::Postgres {
        // Every wallet but the last moved alone (in id order); the last with the transaction
        // and its entries in one statement.
        let (last, before) = match guarded.split_last() {
            Some((last, before)) => (Some(*last), before),
            None => (None, &[][..]),
        };
        for (account, id, amount) in before {
            move_balance(db, *account, *id, *amount).await?;
        }
        match post_in_one_statement(
            db,
            record,
            &resolved,
            last.map(|(_, id, amount)| (id, amount)),
        )
        .await?
        {
            Some(transaction) => transaction,
            None => {
                let (account, id, amount) = last.ok_or_else(|| {
                    DbErr::Custom("a posting with no wallet wrote no transaction".to_owned())
                })?;
                return Err(short(db, account, id, amount).await?);
            }
        }
    } else {
        for (account, id, amount) in &guarded {
            move_balance(db, *account, *id, *amount).await?;
        }
        let transaction = ledger_transaction::Entity::insert(ledger_transaction::ActiveModel {
            id: NotSet,
            kind: Set(record.kind.as_str().to_owned()),
            user_id: Set(record.user_id),
            reservation_id: Set(record.reservation_id),
            reverses_id: Set(record.reverses_id),
            reason: Set(record.reason.words()),
            reason_code: Set(record.reason.code()),
            actor_id: Set(record.actor_id),
            provider: Set(record.provider.map(str::to_owned)),
            created_at: Set(record.at),
        })
        .exec(db)
        .await?
        .last_insert_id;
        ledger_entry::Entity::insert_many(resolved.iter().map(|(_, account_id, amount)| {
            ledger_entry::ActiveModel {
                id: NotSet,
                transaction_id: Set(transaction),
                account_id: Set(*account_id),
                amount_minor: Set(amount.minor()),
            }
        }))
        .exec_without_returning(db)
        .await?;
        transaction
    };
    if let Some(reservation_id) = record.reservation_id
        && totals == Totals::Add
    {
        add_to_booking_totals(db, reservation_id, record.kind, &resolved).await?;
    }
    Ok(transaction)
}

/// Moves wallet `account` (row `id`) by `amount`, unless that takes it below zero.
async fn move_balance(
    db: &impl ConnectionTrait,
    account: Account,
    id: i64,
    amount: Money,
) -> Result<(), PostError> {
    let moved = ledger_account::Entity::update_many()
        .col_expr(
            ledger_account::Column::BalanceMinor,
            Expr::col(ledger_account::Column::BalanceMinor).add(amount.minor()),
        )
        .filter(ledger_account::Column::Id.eq(id))
        .filter(
            Expr::col(ledger_account::Column::BalanceMinor)
                .add(amount.minor())
                .gte(0),
        )
        .exec(db)
        .await?;
    if moved.rows_affected == 0 {
        return Err(short(db, account, id, amount).await?);
    }
    Ok(())
}

/// Why wallet `account` (row `id`) could not move by `amount`: what it misses.
async fn short(
    db: &impl ConnectionTrait,
    account: Account,
    id: i64,
    amount: Money,
) -> Result<PostError, DbErr> {
    let balance = ledger_account::Entity::find_by_id(id)
        .one(db)
        .await?
        .map_or(0, |row| row.balance_minor);
    Ok(PostError::InsufficientFunds {
        account,
        missing: Money::from_minor(-(balance + amount.minor())),
    })
}

/// PostgreSQL: `record`'s transaction and its `entries` written in one statement (data-modifying
/// common table expressions), after moving `wallet` (a row id and an amount) by its guarded
/// `UPDATE` in the same statement; None, with nothing written, when that would take the wallet
/// below zero. One statement where SQLite runs three (every part of a statement sees one
/// snapshot: the transaction is inserted only from the wallet's moved row, and the entries only
/// from the inserted transaction).
async fn post_in_one_statement(
    db: &impl ConnectionTrait,
    record: &TransactionRecord<'_>,
    entries: &[(Account, i64, Money)],
    wallet: Option<(i64, Money)>,
) -> Result<Option<i64>, DbErr> {
    let mut values: Vec<sea_orm::Value> = Vec::new();
    let mut param = |value: sea_orm::Value| {
        values.push(value);
        format!("${}", values.len())
    };
    let mut sql = String::from("WITH ");
    let source = match wallet {
        Some((id, amount)) => {
            let (amount, id) = (param(amount.minor().into()), param(id.into()));
            sql.push_str(&format!(
                "moved AS (UPDATE ledger_accounts SET balance_minor = balance_minor + {amount} \
                 WHERE id = {id} AND balance_minor + {amount} >= 0 RETURNING id), "
            ));
            " FROM moved"
        }
        None => "",
    };
    let fields = [
        param(record.kind.as_str().into()),
        param(record.user_id.into()),
        param(record.reservation_id.into()),
        param(record.reverses_id.into()),
        param(record.reason.words().into()),
        param(record.reason.code().into()),
        param(record.actor_id.into()),
        param(record.provider.map(str::to_owned).into()),
        param(record.at.into()),
    ]
    .join(", ");
    let rows = entries
        .iter()
        .map(|(_, id, amount)| {
            let id = param((*id).into());
            let amount = param(amount.minor().into());
            format!("({id}::bigint, {amount}::bigint)")
        })
        .collect::<Vec<_>>()
        .join(", ");
    sql.push_str(&format!(
        "tx AS (INSERT INTO ledger_transactions (kind, user_id, reservation_id, reverses_id, \
         reason, reason_code, actor_id, provider, created_at) SELECT {fields}{source} RETURNING id) \
         , entries AS (INSERT INTO ledger_entries (transaction_id, account_id, amount_minor) \
         SELECT tx.id, e.account_id, e.amount_minor FROM tx \
         CROSS JOIN (VALUES {rows}) AS e (account_id, amount_minor)) \
         SELECT id FROM tx"
    ));
    let written = db
        .query_one_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            sql,
            values,
        ))
        .await?;
    written.map(|row| row.try_get::<i64>("", "id")).transpose()
}

/// Adds a charge's or refund's wallet side to the booking's running totals
/// (`reservations.charged_minor`, `refunded_minor`, which cost reports read), in the posting's
/// transaction, so they always equal the ledger's sums.
async fn add_to_booking_totals(
    db: &impl ConnectionTrait,
    reservation_id: i64,
    kind: TransactionKind,
    entries: &[(Account, i64, Money)],
) -> Result<(), DbErr> {
    let wallet_side: i64 = entries
        .iter()
        .filter(|(account, _, _)| matches!(account, Account::Wallet(_) | Account::TeamWallet(_)))
        .map(|(_, _, amount)| amount.minor())
        .sum();
    let (column, amount) = match kind {
        TransactionKind::Charge => (reservation::Column::ChargedMinor, -wallet_side),
        TransactionKind::Refund => (reservation::Column::RefundedMinor, wallet_side),
        TransactionKind::SlaCredit => (reservation::Column::SlaCreditMinor, wallet_side),
        TransactionKind::Grant | TransactionKind::Deduct => return Ok(()),
    };
    if amount != 0 {
        reservation::Entity::update_many()
            .col_expr(column, Expr::col(column).add(amount))
            .filter(reservation::Column::Id.eq(reservation_id))
            .exec(db)
            .await?;
    }
    Ok(())
}

/// Moves `amount` from `from` to `to` as one transaction described by `record`.
pub async fn transfer(
    db: &impl ConnectionTrait,
    record: &TransactionRecord<'_>,
    from: Account,
    to: Account,
    amount: Money,
) -> Result<i64, PostError> {
    let posting = Posting::transfer(from, to, amount)
        .map_err(|err| PostError::Db(DbErr::Custom(err.to_string())))?;
    post(db, record, &posting).await
}

/// Charges reservation `row`'s price to the wallet that pays it ([`payer`]) (inside the caller's transaction,
/// which also marks it paid). `actor`: who booked, or None for the payment job.
pub async fn charge(
    db: &impl ConnectionTrait,
    row: &reservation::Model,
    actor: Option<i64>,
    at: DateTime<Utc>,
) -> Result<i64, PostError> {
    charge_with(db, row, actor, at, Totals::Add, &[]).await
}

/// [`charge`] for a reservation just inserted in the caller's transaction with its charged total
/// already written (a paid row, see [`super::reservations::insert_holding`]), which the posting
/// leaves as it is; a row written otherwise is refused (the totals would not match the ledger).
/// `wallet`: the paying wallet as the caller locked it in this transaction, whose account ids
/// the posting then takes.
pub async fn charge_inserted(
    db: &impl ConnectionTrait,
    row: &reservation::Model,
    actor: Option<i64>,
    at: DateTime<Utc>,
    wallet: Option<&LockedWallet>,
) -> Result<i64, PostError> {
    if row.charged_minor != row.price_minor || row.refunded_minor != 0 {
        return Err(PostError::Db(DbErr::Custom(format!(
            "reservations.id={}: charged {} of {} before its charge was posted",
            row.id, row.charged_minor, row.price_minor
        ))));
    }
    let known = wallet.map_or(&[][..], |wallet| wallet.known.as_slice());
    charge_with(db, row, actor, at, Totals::Written, known).await
}

/// [`charge`], the booking's totals added or already written.
async fn charge_with(
    db: &impl ConnectionTrait,
    row: &reservation::Model,
    actor: Option<i64>,
    at: DateTime<Utc>,
    totals: Totals,
    known: &[(Account, i64)],
) -> Result<i64, PostError> {
    let record = TransactionRecord {
        kind: TransactionKind::Charge,
        user_id: Some(row.owner_id),
        reservation_id: Some(row.id),
        reverses_id: None,
        reason: RecordReason::Typed(""),
        actor_id: actor,
        provider: None,
        at,
    };
    let posting = Posting::transfer(
        payer(row),
        Account::Revenue,
        Money::from_minor(row.price_minor),
    )
    .map_err(|err| PostError::Db(DbErr::Custom(err.to_string())))?;
    post_with(db, &record, &posting, totals, known).await
}

/// The wallet that pays reservation `row`: its team's for a team booking, else its owner's.
pub fn payer(row: &reservation::Model) -> Account {
    match row.team_id {
        Some(team) => Account::TeamWallet(team),
        None => Account::Wallet(row.owner_id),
    }
}

/// Refunds `amount` of reservation `row`'s charge `charge_id` to the wallet that paid it.
pub async fn refund(
    db: &impl ConnectionTrait,
    row: &reservation::Model,
    charge_id: i64,
    amount: Money,
    actor: Option<i64>,
    at: DateTime<Utc>,
) -> Result<i64, DbErr> {
    let record = TransactionRecord {
        kind: TransactionKind::Refund,
        user_id: Some(row.owner_id),
        reservation_id: Some(row.id),
        reverses_id: Some(charge_id),
        reason: RecordReason::Typed(""),
        actor_id: actor,
        provider: None,
        at,
    };
    transfer(db, &record, Account::Revenue, payer(row), amount)
        .await
        .map_err(|err| match err {
            PostError::Db(err) => err,
            // Money goes into the wallet: it cannot run short.
            other => DbErr::Custom(other.to_string()),
        })
}

/// Locks wallet `account` (a user's or a team's, created on first use) until `db`'s
/// transaction ends and answers its balance and what its unpaid bookings hold, read under the
/// lock. PostgreSQL: `FOR NO KEY UPDATE` on the wallet's row, the lock every posting to it
/// takes, so two bookings paid by one wallet check its funds one after the other and the second
/// sees the first's hold (each statement of a READ COMMITTED transaction reads what was
/// committed before it); not FOR UPDATE, which would also block the foreign-key checks of
/// ledger entries written for it. SQLite: the `IMMEDIATE` write transaction holds the database's
/// lock already. Bookings take it after the GPUs and the team, as postings do.
pub async fn lock_funds(
    db: &impl ConnectionTrait,
    account: Account,
) -> Result<crate::domain::ledger::Funds, DbErr> {
    Ok(lock_wallet(db, account).await?.funds)
}

/// A wallet locked by [`lock_wallet`]: what it has, and the ids a charge from it posts to.
#[derive(Debug, Clone)]
pub struct LockedWallet {
    /// Its balance and what its unpaid bookings hold.
    pub funds: crate::domain::ledger::Funds,
    /// The wallet's account id and the revenue account's, read with the lock (the revenue
    /// account's id never changes), so that [`charge_inserted`] need not read them again.
    known: Vec<(Account, i64)>,
}

/// [`lock_funds`], keeping the account ids a charge from the wallet posts to: the revenue
/// account's is read in the locking statement (a sub-select, which locks nothing).
pub async fn lock_wallet(
    db: &impl ConnectionTrait,
    account: Account,
) -> Result<LockedWallet, DbErr> {
    let locked = |filter: sea_orm::Condition| {
        let revenue = sea_orm::sea_query::Query::select()
            .column((
                sea_orm::sea_query::Alias::new("revenue"),
                ledger_account::Column::Id,
            ))
            .from_as(
                ledger_account::Entity,
                sea_orm::sea_query::Alias::new("revenue"),
            )
            .and_where(
                Expr::col((
                    sea_orm::sea_query::Alias::new("revenue"),
                    ledger_account::Column::Kind,
                ))
                .eq(Account::Revenue.kind()),
            )
            .to_owned();
        let query = ledger_account::Entity::find()
            .select_only()
            .column(ledger_account::Column::Id)
            .column(ledger_account::Column::BalanceMinor)
            .expr_as(Expr::SubQuery(None, Box::new(revenue.into())), "revenue_id")
            .filter(filter);
        if db.get_database_backend() == sea_orm::DbBackend::Postgres {
            query.lock(sea_orm::sea_query::LockType::NoKeyUpdate)
        } else {
            query
        }
    };
    // Found and locked in one statement; a wallet not created yet is created first.
    let mut row: Option<(i64, i64, Option<i64>)> =
        locked(account_is(account)).into_tuple().one(db).await?;
    if row.is_none() {
        let id = account_id(db, account).await?;
        row = locked(sea_orm::Condition::all().add(ledger_account::Column::Id.eq(id)))
            .into_tuple()
            .one(db)
            .await?;
    }
    let held = super::payments::held_by(db, account).await?;
    let (balance, known) = match row {
        Some((id, balance, revenue)) => (
            balance,
            std::iter::once((account, id))
                .chain(revenue.map(|revenue| (Account::Revenue, revenue)))
                .collect(),
        ),
        None => (0, Vec::new()),
    };
    Ok(LockedWallet {
        funds: crate::domain::ledger::Funds {
            balance: Money::from_minor(balance),
            held,
        },
        known,
    })
}

/// Creates `user_id`'s wallet if it does not exist; true when this call created it (of several
/// concurrent calls, exactly one).
pub async fn create_wallet(db: &impl ConnectionTrait, user_id: i64) -> Result<bool, DbErr> {
    create_account(db, Account::Wallet(user_id)).await
}

/// Creates the wallet `account` (a user's or a team's) if it does not exist; true when this
/// call created it.
pub async fn create_account(db: &impl ConnectionTrait, account: Account) -> Result<bool, DbErr> {
    let row = ledger_account::ActiveModel {
        id: NotSet,
        kind: Set(account.kind().to_owned()),
        user_id: Set(account.user_id()),
        team_id: Set(account.team_id()),
        balance_minor: Set(0),
        created_at: Set(Utc::now()),
    };
    // Each kind of wallet has its own unique index (a partial one for teams, which PostgreSQL
    // cannot name as an ON CONFLICT target without its predicate): insert only when missing.
    let inserted = if account.user_id().is_some() {
        ledger_account::Entity::insert(row)
            .on_conflict(
                OnConflict::columns([ledger_account::Column::Kind, ledger_account::Column::UserId])
                    .do_nothing()
                    .to_owned(),
            )
            .exec_without_returning(db)
            .await?
    } else {
        ledger_account::Entity::insert(row)
            .on_conflict(OnConflict::new().do_nothing().to_owned())
            .exec_without_returning(db)
            .await?
    };
    Ok(inserted == 1)
}

/// The charge that paid reservation `reservation_id`: its transaction and amount.
pub async fn charge_of(
    db: &impl ConnectionTrait,
    reservation_id: i64,
) -> Result<Option<(i64, Money)>, DbErr> {
    Ok(refund_or_charge(db, "charge", &[reservation_id])
        .await?
        .into_iter()
        .next()
        .map(|row| (row.transaction_id, Money::from_minor(-row.amount))))
}

/// What was refunded to the owners' wallets for these reservations, by reservation.
pub async fn refunds_of(
    db: &impl ConnectionTrait,
    reservation_ids: &[i64],
) -> Result<std::collections::HashMap<i64, Money>, DbErr> {
    let mut refunds = std::collections::HashMap::new();
    for row in refund_or_charge(db, "refund", reservation_ids).await? {
        let total = refunds.entry(row.reservation_id).or_insert(Money::ZERO);
        *total = Money::from_minor(total.minor() + row.amount);
    }
    Ok(refunds)
}

#[derive(Debug, FromQueryResult)]
struct ReservationMoneyRow {
    transaction_id: i64,
    reservation_id: i64,
    amount: i64,
}

/// The wallet side of the `kind` transactions of these reservations.
async fn refund_or_charge(
    db: &impl ConnectionTrait,
    kind: &str,
    reservation_ids: &[i64],
) -> Result<Vec<ReservationMoneyRow>, DbErr> {
    if reservation_ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows = ledger_entry::Entity::find()
        .select_only()
        .column_as(ledger_transaction::Column::Id, "transaction_id")
        .column_as(ledger_transaction::Column::ReservationId, "reservation_id")
        .column_as(ledger_entry::Column::AmountMinor, "amount")
        .join(
            sea_orm::JoinType::InnerJoin,
            ledger_entry::Relation::Transaction.def(),
        )
        .filter(ledger_transaction::Column::Kind.eq(kind))
        .filter(ledger_transaction::Column::ReservationId.is_in(reservation_ids.to_vec()))
        .filter(
            ledger_entry::Column::AccountId.in_subquery(
                sea_orm::sea_query::Query::select()
                    .column(ledger_account::Column::Id)
                    .from(ledger_account::Entity)
                    .and_where(ledger_account::Column::Kind.is_in(["wallet", "team_wallet"]))
                    .to_owned(),
            ),
        )
        .order_by_asc(ledger_transaction::Column::Id)
        .into_model::<ReservationMoneyRow>()
        .all(db)
        .await?;
    Ok(rows)
}

/// The wallet balances of `users` (those with a wallet), by user.
pub async fn balances_of(
    db: &impl ConnectionTrait,
    users: &[i64],
) -> Result<std::collections::HashMap<i64, Money>, DbErr> {
    if users.is_empty() {
        return Ok(std::collections::HashMap::new());
    }
    Ok(ledger_account::Entity::find()
        .filter(ledger_account::Column::Kind.eq("wallet"))
        .filter(ledger_account::Column::UserId.is_in(users.iter().copied()))
        .all(db)
        .await?
        .into_iter()
        .filter_map(|row| Some((row.user_id?, Money::from_minor(row.balance_minor))))
        .collect())
}

/// A wallet's cached balance (zero for a user who never had one).
pub async fn wallet_balance(db: &impl ConnectionTrait, user_id: i64) -> Result<Money, DbErr> {
    account_balance(db, Account::Wallet(user_id)).await
}

/// The cached balance of the wallet `account` (a user's or a team's; 0 before its first
/// posting).
pub async fn account_balance(db: &impl ConnectionTrait, account: Account) -> Result<Money, DbErr> {
    let query =
        ledger_account::Entity::find().filter(ledger_account::Column::Kind.eq(account.kind()));
    let query = match (account.user_id(), account.team_id()) {
        (Some(user), _) => query.filter(ledger_account::Column::UserId.eq(user)),
        (None, Some(team)) => query.filter(ledger_account::Column::TeamId.eq(team)),
        (None, None) => return Ok(Money::ZERO),
    };
    Ok(Money::from_minor(
        query.one(db).await?.map_or(0, |row| row.balance_minor),
    ))
}

#[derive(Debug, FromQueryResult)]
struct EntryRow {
    transaction_id: i64,
    amount_minor: i64,
    kind: String,
    reason: String,
    reason_code: Option<String>,
    reservation_id: Option<i64>,
    created_at: DateTime<Utc>,
}

/// A wallet's balance and a page of its movements, newest first (by time, then by posting
/// order), each with the balance right after it. A later page starts from the balance before the
/// movements newer than its cursor.
pub async fn wallet(
    db: &impl ConnectionTrait,
    user_id: i64,
    page: &crate::domain::paging::PageRequest,
) -> Result<(Money, crate::domain::paging::Page<WalletEntry>), DbErr> {
    use crate::domain::paging::{Cursor, ListKind, Page};
    let balance = wallet_balance(db, user_id).await?;
    let wallet_accounts = || {
        ledger_entry::Column::AccountId.in_subquery(
            sea_orm::sea_query::Query::select()
                .column(ledger_account::Column::Id)
                .from(ledger_account::Entity)
                .and_where(ledger_account::Column::Kind.eq("wallet"))
                .and_where(ledger_account::Column::UserId.eq(user_id))
                .to_owned(),
        )
    };
    // Movements strictly after the cursor in the list's order (older), or up to it (newer).
    let older_than = |after: Cursor| {
        super::before_key(
            ledger_transaction::Column::CreatedAt,
            ledger_entry::Column::TransactionId,
            after,
        )
    };
    let mut query = ledger_entry::Entity::find()
        .select_only()
        .column(ledger_entry::Column::TransactionId)
        .column(ledger_entry::Column::AmountMinor)
        .column(ledger_transaction::Column::Kind)
        .column(ledger_transaction::Column::Reason)
        .column(ledger_transaction::Column::ReasonCode)
        .column(ledger_transaction::Column::ReservationId)
        .column(ledger_transaction::Column::CreatedAt)
        .join(
            sea_orm::JoinType::InnerJoin,
            ledger_entry::Relation::Transaction.def(),
        )
        .filter(wallet_accounts());
    let mut after = balance;
    if let Some(cursor) = page.after {
        query = query.filter(older_than(cursor));
        let newer = ledger_entry::Entity::find()
            .select_only()
            .column_as(
                sea_orm::sea_query::Expr::cust(
                    "CAST(COALESCE(SUM(ledger_entries.amount_minor), 0) AS BIGINT)",
                ),
                "total",
            )
            .join(
                sea_orm::JoinType::InnerJoin,
                ledger_entry::Relation::Transaction.def(),
            )
            .filter(wallet_accounts())
            .filter(older_than(cursor).not())
            .into_tuple::<i64>()
            .one(db)
            .await?;
        after = Money::from_minor(balance.minor() - newer.unwrap_or(0));
    }
    let rows = query
        .order_by_desc(ledger_transaction::Column::CreatedAt)
        .order_by_desc(ledger_entry::Column::TransactionId)
        .limit(page.fetch())
        .into_model::<EntryRow>()
        .all(db)
        .await?;
    let mut entries = Vec::with_capacity(rows.len());
    for row in rows {
        let amount = Money::from_minor(row.amount_minor);
        let kind = TransactionKind::parse(&row.kind).ok_or_else(|| {
            DbErr::Custom(format!(
                "ledger_transactions.id={}: unknown kind {}",
                row.transaction_id, row.kind
            ))
        })?;
        entries.push(WalletEntry {
            transaction_id: row.transaction_id,
            at: row.created_at,
            kind,
            amount,
            balance_after: after,
            reason: row.reason,
            berth_reason: row.reason_code.as_deref().and_then(BerthReason::from_code),
            reservation_id: row.reservation_id,
        });
        after = Money::from_minor(after.minor() - amount.minor());
    }
    let entries = Page::from_rows(entries, page, ListKind::WalletEntries, |entry| {
        Cursor::at(entry.at, entry.transaction_id)
    });
    Ok((balance, entries))
}

/// What an audit of the books found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audit {
    /// The sum of every entry (0 when the books balance).
    pub total_minor: i64,
    /// Transactions whose entries do not sum to zero.
    pub unbalanced_transactions: Vec<i64>,
    /// Wallets whose cached balance differs from the sum of their entries.
    pub drifted_wallets: Vec<i64>,
    /// Wallets below zero.
    pub negative_wallets: Vec<i64>,
    /// Reservations whose kept totals (`charged_minor`, `refunded_minor`) differ from the wallet
    /// side of their charges and refunds in the ledger.
    pub drifted_bookings: Vec<i64>,
    /// Number of transactions.
    pub transactions: u64,
}

impl Audit {
    /// Whether every check passed.
    pub fn is_clean(&self) -> bool {
        self.total_minor == 0
            && self.unbalanced_transactions.is_empty()
            && self.drifted_wallets.is_empty()
            && self.negative_wallets.is_empty()
            && self.drifted_bookings.is_empty()
    }
}

#[derive(Debug, FromQueryResult)]
struct IdRow {
    id: i64,
}

#[derive(Debug, FromQueryResult)]
struct NumberRow {
    n: Option<i64>,
}

/// Checks the books from the entries, independently of the cached balances.
pub async fn audit(db: &impl ConnectionTrait) -> Result<Audit, DbErr> {
    let backend = db.get_database_backend();
    let ids = |sql: &str| Statement::from_string(backend, sql.to_owned());
    let number = |sql: &str| Statement::from_string(backend, sql.to_owned());
    let total = NumberRow::find_by_statement(number(
        "SELECT CAST(COALESCE(SUM(amount_minor), 0) AS BIGINT) AS n FROM ledger_entries",
    ))
    .one(db)
    .await?
    .and_then(|row| row.n)
    .unwrap_or(0);
    let transactions = NumberRow::find_by_statement(number(
        "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM ledger_transactions",
    ))
    .one(db)
    .await?
    .and_then(|row| row.n)
    .unwrap_or(0);
    let collect = |rows: Vec<IdRow>| rows.into_iter().map(|row| row.id).collect::<Vec<_>>();
    let unbalanced = IdRow::find_by_statement(ids("SELECT t.id AS id FROM ledger_transactions t \
         LEFT JOIN ledger_entries e ON e.transaction_id = t.id \
         GROUP BY t.id HAVING COALESCE(SUM(e.amount_minor), 0) <> 0 OR COUNT(e.id) < 2"))
    .all(db)
    .await?;
    let drifted = IdRow::find_by_statement(ids("SELECT a.id AS id FROM ledger_accounts a \
         LEFT JOIN ledger_entries e ON e.account_id = a.id \
         WHERE a.kind IN ('wallet', 'team_wallet') \
         GROUP BY a.id, a.balance_minor \
         HAVING a.balance_minor <> COALESCE(SUM(e.amount_minor), 0)"))
    .all(db)
    .await?;
    let negative = IdRow::find_by_statement(ids(
        "SELECT id FROM ledger_accounts WHERE kind IN ('wallet', 'team_wallet') AND balance_minor < 0",
    ))
    .all(db)
    .await?;
    let drifted_bookings = IdRow::find_by_statement(ids("SELECT r.id AS id FROM reservations r \
         LEFT JOIN (SELECT t.reservation_id AS rid, \
         SUM(CASE WHEN t.kind = 'charge' THEN -e.amount_minor ELSE 0 END) AS charged, \
         SUM(CASE WHEN t.kind = 'refund' THEN e.amount_minor ELSE 0 END) AS refunded, \
         SUM(CASE WHEN t.kind = 'sla_credit' THEN e.amount_minor ELSE 0 END) AS credited \
         FROM ledger_transactions t \
         JOIN ledger_entries e ON e.transaction_id = t.id \
         JOIN ledger_accounts a ON a.id = e.account_id \
         WHERE t.reservation_id IS NOT NULL AND t.kind IN ('charge', 'refund', 'sla_credit') \
         AND a.kind IN ('wallet', 'team_wallet') \
         GROUP BY t.reservation_id) m ON m.rid = r.id \
         WHERE r.charged_minor <> COALESCE(m.charged, 0) \
         OR r.refunded_minor <> COALESCE(m.refunded, 0) \
         OR r.sla_credit_minor <> COALESCE(m.credited, 0)"))
    .all(db)
    .await?;
    Ok(Audit {
        total_minor: total,
        unbalanced_transactions: collect(unbalanced),
        drifted_wallets: collect(drifted),
        negative_wallets: collect(negative),
        drifted_bookings: collect(drifted_bookings),
        transactions: u64::try_from(transactions).unwrap_or(0),
    })
}
