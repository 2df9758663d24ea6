//! API tokens get a `scope` (`read` or `write`; tokens made before are `write`, as they could do
//! everything) and an optional `expires_at` (none for tokens made before). Session ids are
//! stored as their SHA-256 from now on: the sessions stored under a plain id cannot be found by
//! their cookie any more, so they are deleted (everyone signs in again once).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ApiTokens {
    Table,
    Scope,
    ExpiresAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        // Written out: a named CHECK on an added column, the same on both stores.
        db.execute_unprepared(
            "ALTER TABLE api_tokens ADD COLUMN scope VARCHAR(8) NOT NULL DEFAULT 'write' \
             CONSTRAINT ck_api_tokens_scope CHECK (scope IN ('read', 'write'))",
        )
        .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(ApiTokens::Table)
                    .add_column(timestamp_with_time_zone_null(ApiTokens::ExpiresAt))
                    .to_owned(),
            )
            .await?;
        db.execute_unprepared("DELETE FROM sessions").await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // Hashed ids mean nothing to the older code either.
        manager
            .get_connection()
            .execute_unprepared("DELETE FROM sessions")
            .await?;
        for column in [ApiTokens::ExpiresAt, ApiTokens::Scope] {
            manager
                .alter_table(
                    Table::alter()
                        .table(ApiTokens::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
