//! `teams` and their `team_members` (role `member` or `admin`). Team admins steer their team's
//! bookings, quotas and spend (later migrations add those).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Teams {
    Table,
    Id,
    Name,
    CreatedAt,
}

#[derive(DeriveIden)]
enum TeamMembers {
    Table,
    TeamId,
    UserId,
    Role,
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
                    .table(Teams::Table)
                    .col(big_pk_auto(Teams::Id))
                    .col(string_len(Teams::Name, 100))
                    .col(timestamp_with_time_zone(Teams::CreatedAt))
                    .index(
                        Index::create()
                            .name("uq_teams_name")
                            .col(Teams::Name)
                            .unique(),
                    )
                    .check(Check::named(
                        "ck_teams_name_not_blank",
                        Expr::cust("length(trim(name)) > 0"),
                    ))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(TeamMembers::Table)
                    .col(big_integer(TeamMembers::TeamId))
                    .col(big_integer(TeamMembers::UserId))
                    .col(string_len(TeamMembers::Role, 16))
                    .col(timestamp_with_time_zone(TeamMembers::CreatedAt))
                    .primary_key(
                        Index::create()
                            .name("pk_team_members")
                            .col(TeamMembers::TeamId)
                            .col(TeamMembers::UserId),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_team_members_team")
                            .from(TeamMembers::Table, TeamMembers::TeamId)
                            .to(Teams::Table, Teams::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_team_members_user")
                            .from(TeamMembers::Table, TeamMembers::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .check(Check::named(
                        "ck_team_members_role",
                        Expr::cust("role IN ('member', 'admin')"),
                    ))
                    .to_owned(),
            )
            .await?;

        manager
            .create_index(
                Index::create()
                    .name("ix_team_members_user")
                    .table(TeamMembers::Table)
                    .col(TeamMembers::UserId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [TeamMembers::Table.into_iden(), Teams::Table.into_iden()] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
