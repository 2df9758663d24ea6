//! `users`, their sign-in `identities` (bound to provider + subject) and personal `api_tokens`
//! (stored as SHA-256 hashes only).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
    Email,
    Name,
    IsPlatformAdmin,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Identities {
    Table,
    Id,
    UserId,
    Provider,
    Subject,
    CreatedAt,
}

#[derive(DeriveIden)]
enum ApiTokens {
    Table,
    Id,
    UserId,
    Name,
    TokenHash,
    CreatedAt,
    LastUsedAt,
    RevokedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Users::Table)
                    .col(big_pk_auto(Users::Id))
                    .col(string_len(Users::Email, 320))
                    .col(string_len(Users::Name, 200))
                    .col(boolean(Users::IsPlatformAdmin).default(false))
                    .col(timestamp_with_time_zone(Users::CreatedAt))
                    .col(timestamp_with_time_zone(Users::UpdatedAt))
                    .index(
                        Index::create()
                            .name("uq_users_email")
                            .col(Users::Email)
                            .unique(),
                    )
                    .check(Check::named(
                        "ck_users_email_lowercase",
                        Expr::cust("email = lower(email) AND email LIKE '%_@_%'"),
                    ))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Identities::Table)
                    .col(big_pk_auto(Identities::Id))
                    .col(big_integer(Identities::UserId))
                    .col(string_len(Identities::Provider, 64))
                    .col(string_len(Identities::Subject, 255))
                    .col(timestamp_with_time_zone(Identities::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_identities_user")
                            .from(Identities::Table, Identities::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .index(
                        Index::create()
                            .name("uq_identities_provider_subject")
                            .col(Identities::Provider)
                            .col(Identities::Subject)
                            .unique(),
                    )
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ApiTokens::Table)
                    .col(big_pk_auto(ApiTokens::Id))
                    .col(big_integer(ApiTokens::UserId))
                    .col(string_len(ApiTokens::Name, 100))
                    .col(string_len(ApiTokens::TokenHash, 64))
                    .col(timestamp_with_time_zone(ApiTokens::CreatedAt))
                    .col(timestamp_with_time_zone_null(ApiTokens::LastUsedAt))
                    .col(timestamp_with_time_zone_null(ApiTokens::RevokedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_api_tokens_user")
                            .from(ApiTokens::Table, ApiTokens::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .index(
                        Index::create()
                            .name("uq_api_tokens_hash")
                            .col(ApiTokens::TokenHash)
                            .unique(),
                    )
                    .check(Check::named(
                        "ck_api_tokens_name_not_blank",
                        Expr::cust("length(trim(name)) > 0"),
                    ))
                    .to_owned(),
            )
            .await?;

        manager
            .create_index(
                Index::create()
                    .name("ix_api_tokens_user")
                    .table(ApiTokens::Table)
                    .col(ApiTokens::UserId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            ApiTokens::Table.into_iden(),
            Identities::Table.into_iden(),
            Users::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
