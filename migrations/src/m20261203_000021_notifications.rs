//! Notifications: the outbox of events (`notification_events`, written in the transaction of
//! the change that causes each, unique by key, due now or later for reminders) and the in-app
//! inbox (`notification_inbox`, one row per recipient and event, read or not).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum NotificationEvents {
    Table,
    Id,
    Kind,
    EventKey,
    UserId,
    TeamId,
    ReservationId,
    Notice,
    OccurredAt,
    DueAt,
    FannedOutAt,
}

#[derive(DeriveIden)]
enum NotificationInbox {
    Table,
    Id,
    UserId,
    EventId,
    CreatedAt,
    ReadAt,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // No foreign keys on the event: like the audit log, it outlives what it describes.
        manager
            .create_table(
                Table::create()
                    .table(NotificationEvents::Table)
                    .col(big_pk_auto(NotificationEvents::Id))
                    .col(string_len(NotificationEvents::Kind, 48))
                    .col(string_len(NotificationEvents::EventKey, 160))
                    .col(big_integer_null(NotificationEvents::UserId))
                    .col(big_integer_null(NotificationEvents::TeamId))
                    .col(big_integer_null(NotificationEvents::ReservationId))
                    .col(text(NotificationEvents::Notice))
                    .col(timestamp_with_time_zone(NotificationEvents::OccurredAt))
                    .col(timestamp_with_time_zone(NotificationEvents::DueAt))
                    .col(timestamp_with_time_zone_null(
                        NotificationEvents::FannedOutAt,
                    ))
                    .check(Check::named(
                        "ck_notification_events_audience",
                        Expr::cust("(user_id IS NULL) <> (team_id IS NULL)"),
                    ))
                    .index(
                        Index::create()
                            .name("uq_notification_events_key")
                            .col(NotificationEvents::EventKey)
                            .unique(),
                    )
                    .to_owned(),
            )
            .await?;
        let db = manager.get_connection();
        // The worker's queue: events not handed out yet, by due time.
        db.execute_unprepared(
            "CREATE INDEX ix_notification_events_due ON notification_events (due_at) \
             WHERE fanned_out_at IS NULL",
        )
        .await?;
        // A withdrawn reservation's reminders are dropped by reservation.
        manager
            .create_index(
                Index::create()
                    .name("ix_notification_events_reservation")
                    .table(NotificationEvents::Table)
                    .col(NotificationEvents::ReservationId)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(NotificationInbox::Table)
                    .col(big_pk_auto(NotificationInbox::Id))
                    .col(big_integer(NotificationInbox::UserId))
                    .col(big_integer(NotificationInbox::EventId))
                    .col(timestamp_with_time_zone(NotificationInbox::CreatedAt))
                    .col(timestamp_with_time_zone_null(NotificationInbox::ReadAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_notification_inbox_user")
                            .from(NotificationInbox::Table, NotificationInbox::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_notification_inbox_event")
                            .from(NotificationInbox::Table, NotificationInbox::EventId)
                            .to(NotificationEvents::Table, NotificationEvents::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .index(
                        Index::create()
                            .name("uq_notification_inbox_once")
                            .col(NotificationInbox::UserId)
                            .col(NotificationInbox::EventId)
                            .unique(),
                    )
                    .to_owned(),
            )
            .await?;
        // The bell's count: a user's unread notices.
        db.execute_unprepared(
            "CREATE INDEX ix_notification_inbox_unread ON notification_inbox (user_id) \
             WHERE read_at IS NULL",
        )
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(NotificationInbox::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(NotificationEvents::Table).to_owned())
            .await
    }
}
