//! Environment profiles: `env_profiles` (a user's profile, optionally shared with a team),
//! `env_profile_versions` (immutable versions with their content hash), the user's default
//! profile (`users.default_profile_id`), the version a booking uses
//! (`reservations.profile_version_id`), and `env_preparations`: what the node's agent last said
//! about preparing a booking's environment.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
    DefaultProfileId,
}

#[derive(DeriveIden)]
enum Teams {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Reservations {
    Table,
    Id,
    ProfileVersionId,
}

#[derive(DeriveIden)]
enum EnvProfiles {
    Table,
    Id,
    OwnerId,
    TeamId,
    Name,
    Archived,
    CreatedAt,
}

#[derive(DeriveIden)]
enum EnvProfileVersions {
    Table,
    Id,
    ProfileId,
    Number,
    Spec,
    ContentHash,
    CreatedAt,
}

#[derive(DeriveIden)]
enum EnvPreparations {
    Table,
    ReservationId,
    NodeId,
    ContentHash,
    State,
    Cached,
    Log,
    At,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(EnvProfiles::Table)
                    .col(big_pk_auto(EnvProfiles::Id))
                    .col(big_integer(EnvProfiles::OwnerId))
                    .col(big_integer_null(EnvProfiles::TeamId))
                    .col(string_len(EnvProfiles::Name, 64))
                    .col(boolean(EnvProfiles::Archived).default(false))
                    .col(timestamp_with_time_zone(EnvProfiles::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_env_profiles_owner")
                            .from(EnvProfiles::Table, EnvProfiles::OwnerId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_env_profiles_team")
                            .from(EnvProfiles::Table, EnvProfiles::TeamId)
                            .to(Teams::Table, Teams::Id)
                            .on_delete(ForeignKeyAction::SetNull),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_env_profiles_owner")
                    .table(EnvProfiles::Table)
                    .col(EnvProfiles::OwnerId)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_env_profiles_team")
                    .table(EnvProfiles::Table)
                    .col(EnvProfiles::TeamId)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(EnvProfileVersions::Table)
                    .col(big_pk_auto(EnvProfileVersions::Id))
                    .col(big_integer(EnvProfileVersions::ProfileId))
                    .col(integer(EnvProfileVersions::Number))
                    .col(text(EnvProfileVersions::Spec))
                    .col(string_len(EnvProfileVersions::ContentHash, 64))
                    .col(timestamp_with_time_zone(EnvProfileVersions::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_env_profile_versions_profile")
                            .from(EnvProfileVersions::Table, EnvProfileVersions::ProfileId)
                            .to(EnvProfiles::Table, EnvProfiles::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .index(
                        Index::create()
                            .name("uq_env_profile_versions_number")
                            .col(EnvProfileVersions::ProfileId)
                            .col(EnvProfileVersions::Number)
                            .unique(),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Users::Table)
                    .add_column(big_integer_null(Users::DefaultProfileId))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .add_column(big_integer_null(Reservations::ProfileVersionId))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(EnvPreparations::Table)
                    .col(big_integer(EnvPreparations::ReservationId).primary_key())
                    .col(big_integer(EnvPreparations::NodeId))
                    .col(string_len(EnvPreparations::ContentHash, 64))
                    .col(string_len(EnvPreparations::State, 16))
                    .col(boolean(EnvPreparations::Cached).default(false))
                    .col(text(EnvPreparations::Log))
                    .col(timestamp_with_time_zone(EnvPreparations::At))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_env_preparations_reservation")
                            .from(EnvPreparations::Table, EnvPreparations::ReservationId)
                            .to(Reservations::Table, Reservations::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .check(Check::named(
                        "ck_env_preparations_state",
                        Expr::col(EnvPreparations::State).is_in([
                            "waiting",
                            "preparing",
                            "ready",
                            "failed",
                        ]),
                    ))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(EnvPreparations::Table).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .drop_column(Reservations::ProfileVersionId)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Users::Table)
                    .drop_column(Users::DefaultProfileId)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(EnvProfileVersions::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(EnvProfiles::Table).to_owned())
            .await
    }
}
