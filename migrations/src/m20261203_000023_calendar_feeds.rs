//! Calendar feeds: `calendar_feeds` (a secret address per user, or per team for its admins,
//! stored as the SHA-256 of its token) and `reservations.calendar_sequence`, bumped whenever a
//! reservation changes in a way calendars must show (approved, cancelled, released), so that a
//! subscribed calendar replaces its copy (RFC 5545 SEQUENCE); and `nodes.silence_told_at`, when
//! platform admins were told a node's agent went silent (cleared by its next report).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum CalendarFeeds {
    Table,
    Id,
    UserId,
    TeamId,
    TokenHash,
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

#[derive(DeriveIden)]
enum Nodes {
    Table,
    SilenceToldAt,
}

#[derive(DeriveIden)]
enum Reservations {
    Table,
    CalendarSequence,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Nodes::Table)
                    .add_column(timestamp_with_time_zone_null(Nodes::SilenceToldAt))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .add_column(integer(Reservations::CalendarSequence).default(0))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(CalendarFeeds::Table)
                    .col(big_pk_auto(CalendarFeeds::Id))
                    .col(big_integer(CalendarFeeds::UserId))
                    .col(big_integer_null(CalendarFeeds::TeamId))
                    .col(string_len(CalendarFeeds::TokenHash, 64))
                    .col(timestamp_with_time_zone(CalendarFeeds::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_calendar_feeds_user")
                            .from(CalendarFeeds::Table, CalendarFeeds::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_calendar_feeds_team")
                            .from(CalendarFeeds::Table, CalendarFeeds::TeamId)
                            .to(Teams::Table, Teams::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .index(
                        Index::create()
                            .name("uq_calendar_feeds_token")
                            .col(CalendarFeeds::TokenHash)
                            .unique(),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_calendar_feeds_user")
                    .table(CalendarFeeds::Table)
                    .col(CalendarFeeds::UserId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Nodes::Table)
                    .drop_column(Nodes::SilenceToldAt)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(CalendarFeeds::Table).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .drop_column(Reservations::CalendarSequence)
                    .to_owned(),
            )
            .await
    }
}
