//! Team bookings and team money: `reservations.team_id` (booked for a team, paid from its
//! wallet), team wallets in the ledger (`ledger_accounts.kind = 'team_wallet'` with `team_id`),
//! and each team's monthly budget (`teams.budget_minor`, `budget_mode` `refuse` or `warn`,
//! `budget_warn_percent`).
//!
//! The ledger's CHECK constraints change. PostgreSQL alters them in place; SQLite cannot, so the
//! table is rebuilt (copied aside, dropped, created anew, copied back) with foreign keys deferred
//! to the end of the migration's transaction, as SQLite's documentation describes.

use sea_orm_migration::sea_orm::DbBackend;
use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum LedgerAccounts {
    Table,
    Id,
    Kind,
    UserId,
    TeamId,
    BalanceMinor,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Teams {
    Table,
    Id,
}

const KIND_CHECK: &str = "(kind = 'wallet' AND user_id IS NOT NULL AND team_id IS NULL) \
     OR (kind = 'team_wallet' AND team_id IS NOT NULL AND user_id IS NULL) \
     OR (kind IN ('revenue', 'funding') AND user_id IS NULL AND team_id IS NULL)";
const NOT_NEGATIVE_CHECK: &str = "kind NOT IN ('wallet', 'team_wallet') OR balance_minor >= 0";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// The SQLite rebuild defers foreign keys to the end of a transaction: always run in one.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        match manager.get_database_backend() {
            DbBackend::Postgres => {
                for statement in [
                    "ALTER TABLE ledger_accounts ADD COLUMN team_id BIGINT NULL \
                     CONSTRAINT fk_ledger_accounts_team REFERENCES teams (id) ON DELETE RESTRICT",
                    "ALTER TABLE ledger_accounts DROP CONSTRAINT ck_ledger_accounts_kind",
                    "ALTER TABLE ledger_accounts DROP CONSTRAINT ck_ledger_accounts_wallet_not_negative",
                    "DROP INDEX uq_ledger_accounts_platform",
                ] {
                    db.execute_unprepared(statement).await?;
                }
                db.execute_unprepared(&format!(
                    "ALTER TABLE ledger_accounts ADD CONSTRAINT ck_ledger_accounts_kind \
                     CHECK ({KIND_CHECK})"
                ))
                .await?;
                db.execute_unprepared(&format!(
                    "ALTER TABLE ledger_accounts ADD CONSTRAINT \
                     ck_ledger_accounts_wallet_not_negative CHECK ({NOT_NEGATIVE_CHECK})"
                ))
                .await?;
            }
            _ => {
                db.execute_unprepared("PRAGMA defer_foreign_keys = ON")
                    .await?;
                db.execute_unprepared(
                    "CREATE TABLE ledger_accounts_before_teams AS SELECT * FROM ledger_accounts",
                )
                .await?;
                db.execute_unprepared("DROP TABLE ledger_accounts").await?;
                manager
                    .create_table(
                        Table::create()
                            .table(LedgerAccounts::Table)
                            .col(big_pk_auto(LedgerAccounts::Id))
                            .col(string_len(LedgerAccounts::Kind, 16))
                            .col(big_integer_null(LedgerAccounts::UserId))
                            .col(big_integer(LedgerAccounts::BalanceMinor).default(0))
                            .col(timestamp_with_time_zone(LedgerAccounts::CreatedAt))
                            .col(big_integer_null(LedgerAccounts::TeamId))
                            .foreign_key(
                                ForeignKey::create()
                                    .name("fk_ledger_accounts_user")
                                    .from(LedgerAccounts::Table, LedgerAccounts::UserId)
                                    .to(Users::Table, Users::Id)
                                    .on_delete(ForeignKeyAction::Restrict),
                            )
                            .foreign_key(
                                ForeignKey::create()
                                    .name("fk_ledger_accounts_team")
                                    .from(LedgerAccounts::Table, LedgerAccounts::TeamId)
                                    .to(Teams::Table, Teams::Id)
                                    .on_delete(ForeignKeyAction::Restrict),
                            )
                            .check(Check::named(
                                "ck_ledger_accounts_kind",
                                Expr::cust(KIND_CHECK),
                            ))
                            .check(Check::named(
                                "ck_ledger_accounts_wallet_not_negative",
                                Expr::cust(NOT_NEGATIVE_CHECK),
                            ))
                            .to_owned(),
                    )
                    .await?;
                db.execute_unprepared(
                    "INSERT INTO ledger_accounts (id, kind, user_id, balance_minor, created_at, team_id) \
                     SELECT id, kind, user_id, balance_minor, created_at, NULL \
                     FROM ledger_accounts_before_teams",
                )
                .await?;
                db.execute_unprepared("DROP TABLE ledger_accounts_before_teams")
                    .await?;
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
            }
        }
        // One revenue and one funding account; one wallet per team.
        db.execute_unprepared(
            "CREATE UNIQUE INDEX uq_ledger_accounts_platform ON ledger_accounts (kind) \
             WHERE user_id IS NULL AND team_id IS NULL",
        )
        .await?;
        db.execute_unprepared(
            "CREATE UNIQUE INDEX uq_ledger_accounts_team ON ledger_accounts (kind, team_id) \
             WHERE team_id IS NOT NULL",
        )
        .await?;

        for statement in [
            "ALTER TABLE reservations ADD COLUMN team_id BIGINT NULL REFERENCES teams (id)",
            "CREATE INDEX ix_reservations_team_start ON reservations (team_id, start_at)",
            "ALTER TABLE teams ADD COLUMN budget_minor BIGINT NULL \
             CHECK (budget_minor IS NULL OR budget_minor >= 0)",
            "ALTER TABLE teams ADD COLUMN budget_mode VARCHAR(8) NOT NULL DEFAULT 'refuse' \
             CHECK (budget_mode IN ('refuse', 'warn'))",
            "ALTER TABLE teams ADD COLUMN budget_warn_percent SMALLINT NOT NULL DEFAULT 80 \
             CHECK (budget_warn_percent BETWEEN 1 AND 100)",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }

    async fn down(&self, _manager: &SchemaManager) -> Result<(), DbErr> {
        // Team money cannot be folded back into the earlier ledger without losing it.
        Err(DbErr::Migration(
            "team wallets and budgets cannot be rolled back; restore a backup instead".into(),
        ))
    }
}
