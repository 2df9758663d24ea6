//! The money ledger, double-entry and append-only: `ledger_accounts` (a wallet per user, and the
//! platform's revenue and external funding accounts), `ledger_transactions` (one per movement:
//! a grant, a deduction, later charges and refunds), and their `ledger_entries`, which sum to
//! zero per transaction. Wallets cache their balance (`balance_minor`; a CHECK keeps it from
//! going negative whatever the application does); the two platform accounts are created here and
//! their balance is the sum of their entries (`balance_minor` stays 0), so that charges and
//! grants do not all queue on one row.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum LedgerAccounts {
    Table,
    Id,
    Kind,
    UserId,
    BalanceMinor,
    CreatedAt,
}

#[derive(DeriveIden)]
enum LedgerTransactions {
    Table,
    Id,
    Kind,
    UserId,
    ReservationId,
    ReversesId,
    Reason,
    ActorId,
    Provider,
    CreatedAt,
}

#[derive(DeriveIden)]
enum LedgerEntries {
    Table,
    Id,
    TransactionId,
    AccountId,
    AmountMinor,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Reservations {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(LedgerAccounts::Table)
                    .col(big_pk_auto(LedgerAccounts::Id))
                    .col(string_len(LedgerAccounts::Kind, 16))
                    .col(big_integer_null(LedgerAccounts::UserId))
                    .col(big_integer(LedgerAccounts::BalanceMinor).default(0))
                    .col(timestamp_with_time_zone(LedgerAccounts::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_ledger_accounts_user")
                            .from(LedgerAccounts::Table, LedgerAccounts::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Restrict),
                    )
                    .check(Check::named(
                        "ck_ledger_accounts_kind",
                        Expr::cust(
                            "(kind = 'wallet' AND user_id IS NOT NULL) \
                             OR (kind IN ('revenue', 'funding') AND user_id IS NULL)",
                        ),
                    ))
                    .check(Check::named(
                        "ck_ledger_accounts_wallet_not_negative",
                        Expr::cust("kind <> 'wallet' OR balance_minor >= 0"),
                    ))
                    .to_owned(),
            )
            .await?;
        // One wallet per user; one revenue and one funding account (NULLs are distinct in a
        // unique index on both stores, hence the second, partial index).
        manager
            .create_index(
                Index::create()
                    .name("uq_ledger_accounts_kind_user")
                    .table(LedgerAccounts::Table)
                    .col(LedgerAccounts::Kind)
                    .col(LedgerAccounts::UserId)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX uq_ledger_accounts_platform ON ledger_accounts (kind) \
                 WHERE user_id IS NULL",
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(
                "INSERT INTO ledger_accounts (kind, user_id, balance_minor, created_at) VALUES \
                 ('revenue', NULL, 0, '2026-12-01T00:00:00+00:00'), \
                 ('funding', NULL, 0, '2026-12-01T00:00:00+00:00')",
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(LedgerTransactions::Table)
                    .col(big_pk_auto(LedgerTransactions::Id))
                    .col(string_len(LedgerTransactions::Kind, 16))
                    .col(big_integer_null(LedgerTransactions::UserId))
                    .col(big_integer_null(LedgerTransactions::ReservationId))
                    .col(big_integer_null(LedgerTransactions::ReversesId))
                    .col(string_len(LedgerTransactions::Reason, 500))
                    .col(big_integer_null(LedgerTransactions::ActorId))
                    .col(string_len_null(LedgerTransactions::Provider, 32))
                    .col(timestamp_with_time_zone(LedgerTransactions::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_ledger_transactions_user")
                            .from(LedgerTransactions::Table, LedgerTransactions::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Restrict),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_ledger_transactions_actor")
                            .from(LedgerTransactions::Table, LedgerTransactions::ActorId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Restrict),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_ledger_transactions_reservation")
                            .from(LedgerTransactions::Table, LedgerTransactions::ReservationId)
                            .to(Reservations::Table, Reservations::Id)
                            .on_delete(ForeignKeyAction::Restrict),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_ledger_transactions_reverses")
                            .from(LedgerTransactions::Table, LedgerTransactions::ReversesId)
                            .to(LedgerTransactions::Table, LedgerTransactions::Id)
                            .on_delete(ForeignKeyAction::Restrict),
                    )
                    .check(Check::named(
                        "ck_ledger_transactions_kind",
                        Expr::cust("kind IN ('grant', 'deduct', 'charge', 'refund')"),
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_ledger_transactions_user")
                    .table(LedgerTransactions::Table)
                    .col(LedgerTransactions::UserId)
                    .col(LedgerTransactions::Id)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(LedgerEntries::Table)
                    .col(big_pk_auto(LedgerEntries::Id))
                    .col(big_integer(LedgerEntries::TransactionId))
                    .col(big_integer(LedgerEntries::AccountId))
                    .col(big_integer(LedgerEntries::AmountMinor))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_ledger_entries_transaction")
                            .from(LedgerEntries::Table, LedgerEntries::TransactionId)
                            .to(LedgerTransactions::Table, LedgerTransactions::Id)
                            .on_delete(ForeignKeyAction::Restrict),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_ledger_entries_account")
                            .from(LedgerEntries::Table, LedgerEntries::AccountId)
                            .to(LedgerAccounts::Table, LedgerAccounts::Id)
                            .on_delete(ForeignKeyAction::Restrict),
                    )
                    .check(Check::named(
                        "ck_ledger_entries_not_zero",
                        Expr::cust("amount_minor <> 0"),
                    ))
                    .to_owned(),
            )
            .await?;
        for (name, col) in [
            (
                "ix_ledger_entries_transaction",
                LedgerEntries::TransactionId,
            ),
            ("ix_ledger_entries_account", LedgerEntries::AccountId),
        ] {
            manager
                .create_index(
                    Index::create()
                        .name(name)
                        .table(LedgerEntries::Table)
                        .col(col)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            LedgerEntries::Table.into_iden(),
            LedgerTransactions::Table.into_iden(),
            LedgerAccounts::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
