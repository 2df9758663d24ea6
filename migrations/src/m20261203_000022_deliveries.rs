//! Notification deliveries outside the portal (`notification_deliveries`: one row per event,
//! channel and target — a user's address, a webhook — queued with its attempts and next try, then
//! sent or failed with the reason), webhooks (`webhooks`: a user's or a team's URL, its signing
//! secret, and its run of failures), each user's choice of channels per kind of notice
//! (`notification_preferences`; no row: the defaults), and `users.locale`, the language a user's
//! messages are written in.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum NotificationDeliveries {
    Table,
    Id,
    EventId,
    Channel,
    TargetId,
    UserId,
    Status,
    Attempts,
    NextAt,
    LeaseUntil,
    LastError,
    SentAt,
    CreatedAt,
}

#[derive(DeriveIden)]
enum NotificationPreferences {
    Table,
    UserId,
    Kind,
    Inbox,
    Email,
    Webhook,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Webhooks {
    Table,
    Id,
    UserId,
    TeamId,
    Url,
    Secret,
    Active,
    Failures,
    LastError,
    DisabledAt,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Teams {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum NotificationEvents {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
    Locale,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Users::Table)
                    .add_column(string_len_null(Users::Locale, 16))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(NotificationDeliveries::Table)
                    .col(big_pk_auto(NotificationDeliveries::Id))
                    .col(big_integer(NotificationDeliveries::EventId))
                    .col(string_len(NotificationDeliveries::Channel, 16))
                    // The user for an e-mail, the webhook for a webhook call.
                    .col(big_integer(NotificationDeliveries::TargetId))
                    // Whose it is: the recipient, or the webhook's owner.
                    .col(big_integer(NotificationDeliveries::UserId))
                    .col(string_len(NotificationDeliveries::Status, 16))
                    .col(integer(NotificationDeliveries::Attempts).default(0))
                    .col(timestamp_with_time_zone(NotificationDeliveries::NextAt))
                    .col(timestamp_with_time_zone_null(
                        NotificationDeliveries::LeaseUntil,
                    ))
                    .col(text_null(NotificationDeliveries::LastError))
                    .col(timestamp_with_time_zone_null(
                        NotificationDeliveries::SentAt,
                    ))
                    .col(timestamp_with_time_zone(NotificationDeliveries::CreatedAt))
                    .check(Check::named(
                        "ck_notification_deliveries_status",
                        Expr::cust("status IN ('queued', 'sent', 'failed')"),
                    ))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_notification_deliveries_event")
                            .from(
                                NotificationDeliveries::Table,
                                NotificationDeliveries::EventId,
                            )
                            .to(NotificationEvents::Table, NotificationEvents::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_notification_deliveries_user")
                            .from(
                                NotificationDeliveries::Table,
                                NotificationDeliveries::UserId,
                            )
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    // Once per event, channel and target, whoever queues it.
                    .index(
                        Index::create()
                            .name("uq_notification_deliveries_once")
                            .col(NotificationDeliveries::EventId)
                            .col(NotificationDeliveries::Channel)
                            .col(NotificationDeliveries::TargetId)
                            .unique(),
                    )
                    .to_owned(),
            )
            .await?;
        // The sender's queue: deliveries still to try, by next try.
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE INDEX ix_notification_deliveries_queued \
                 ON notification_deliveries (next_at) WHERE status = 'queued'",
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(NotificationPreferences::Table)
                    .col(big_integer(NotificationPreferences::UserId))
                    .col(string_len(NotificationPreferences::Kind, 48))
                    .col(boolean(NotificationPreferences::Inbox))
                    .col(boolean(NotificationPreferences::Email))
                    .col(boolean(NotificationPreferences::Webhook).default(false))
                    .col(timestamp_with_time_zone(NotificationPreferences::UpdatedAt))
                    .primary_key(
                        Index::create()
                            .col(NotificationPreferences::UserId)
                            .col(NotificationPreferences::Kind),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_notification_preferences_user")
                            .from(
                                NotificationPreferences::Table,
                                NotificationPreferences::UserId,
                            )
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Webhooks::Table)
                    .col(big_pk_auto(Webhooks::Id))
                    .col(big_integer(Webhooks::UserId))
                    .col(big_integer_null(Webhooks::TeamId))
                    .col(string_len(Webhooks::Url, 2048))
                    .col(string_len(Webhooks::Secret, 128))
                    .col(boolean(Webhooks::Active))
                    .col(integer(Webhooks::Failures).default(0))
                    .col(text_null(Webhooks::LastError))
                    .col(timestamp_with_time_zone_null(Webhooks::DisabledAt))
                    .col(timestamp_with_time_zone(Webhooks::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_webhooks_user")
                            .from(Webhooks::Table, Webhooks::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_webhooks_team")
                            .from(Webhooks::Table, Webhooks::TeamId)
                            .to(Teams::Table, Teams::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_webhooks_user")
                    .table(Webhooks::Table)
                    .col(Webhooks::UserId)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_webhooks_team")
                    .table(Webhooks::Table)
                    .col(Webhooks::TeamId)
                    .to_owned(),
            )
            .await?;
        // The admins' view lists the latest first.
        manager
            .create_index(
                Index::create()
                    .name("ix_notification_deliveries_created")
                    .table(NotificationDeliveries::Table)
                    .col(NotificationDeliveries::CreatedAt)
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(Webhooks::Table).to_owned())
            .await?;
        manager
            .drop_table(
                Table::drop()
                    .table(NotificationPreferences::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(
                Table::drop()
                    .table(NotificationDeliveries::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Users::Table)
                    .drop_column(Users::Locale)
                    .to_owned(),
            )
            .await
    }
}
