//! `idempotency_keys`: the first answer to each money-moving request a client sent with an
//! `Idempotency-Key`, per user, so that a retry gets the same answer instead of a second charge.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum IdempotencyKeys {
    Table,
    Id,
    UserId,
    Key,
    RequestHash,
    ResponseStatus,
    ResponseBody,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(IdempotencyKeys::Table)
                    .col(big_pk_auto(IdempotencyKeys::Id))
                    .col(big_integer(IdempotencyKeys::UserId))
                    .col(string_len(IdempotencyKeys::Key, 255))
                    .col(string_len(IdempotencyKeys::RequestHash, 64))
                    .col(small_integer(IdempotencyKeys::ResponseStatus))
                    .col(text(IdempotencyKeys::ResponseBody))
                    .col(timestamp_with_time_zone(IdempotencyKeys::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_idempotency_keys_user")
                            .from(IdempotencyKeys::Table, IdempotencyKeys::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .index(
                        Index::create()
                            .name("uq_idempotency_keys_user_key")
                            .col(IdempotencyKeys::UserId)
                            .col(IdempotencyKeys::Key)
                            .unique(),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(IdempotencyKeys::Table).to_owned())
            .await
    }
}
