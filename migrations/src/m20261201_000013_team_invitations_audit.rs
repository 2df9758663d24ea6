//! Team invitations (`team_invitations`: a team admin invites an e-mail address; the invitation
//! is accepted when that person signs in) and the append-only `audit_log` of admin and money
//! actions (who, when, what, to what, with the values before and after). Triggers refuse every
//! UPDATE and DELETE of `audit_log` on both stores.

use sea_orm_migration::sea_orm::DbBackend;
use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum TeamInvitations {
    Table,
    Id,
    TeamId,
    Email,
    Role,
    InvitedBy,
    CreatedAt,
    AcceptedAt,
    AcceptedUserId,
    RevokedAt,
    RevokedBy,
}

#[derive(DeriveIden)]
enum AuditLog {
    Table,
    Id,
    At,
    ActorId,
    Action,
    TargetKind,
    TargetId,
    TeamId,
    BeforeJson,
    AfterJson,
}

#[derive(DeriveIden)]
enum Teams {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(TeamInvitations::Table)
                    .col(big_pk_auto(TeamInvitations::Id))
                    .col(big_integer(TeamInvitations::TeamId))
                    .col(string_len(TeamInvitations::Email, 320))
                    .col(string_len(TeamInvitations::Role, 16))
                    .col(big_integer_null(TeamInvitations::InvitedBy))
                    .col(timestamp_with_time_zone(TeamInvitations::CreatedAt))
                    .col(timestamp_with_time_zone_null(TeamInvitations::AcceptedAt))
                    .col(big_integer_null(TeamInvitations::AcceptedUserId))
                    .col(timestamp_with_time_zone_null(TeamInvitations::RevokedAt))
                    .col(big_integer_null(TeamInvitations::RevokedBy))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_team_invitations_team")
                            .from(TeamInvitations::Table, TeamInvitations::TeamId)
                            .to(Teams::Table, Teams::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .check(Check::named(
                        "ck_team_invitations_role",
                        Expr::cust("role IN ('member', 'admin')"),
                    ))
                    .check(Check::named(
                        "ck_team_invitations_settled_once",
                        Expr::cust("accepted_at IS NULL OR revoked_at IS NULL"),
                    ))
                    .to_owned(),
            )
            .await?;
        // One open invitation per team and address: two admins inviting at once get one row.
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX uq_team_invitations_open ON team_invitations (team_id, email) \
                 WHERE accepted_at IS NULL AND revoked_at IS NULL",
            )
            .await?;
        // Sign-in looks up the open invitations of an address.
        manager
            .create_index(
                Index::create()
                    .name("ix_team_invitations_email")
                    .table(TeamInvitations::Table)
                    .col(TeamInvitations::Email)
                    .to_owned(),
            )
            .await?;

        // No foreign keys: the log outlives what it describes, and a cascade would have to
        // change it.
        manager
            .create_table(
                Table::create()
                    .table(AuditLog::Table)
                    .col(big_pk_auto(AuditLog::Id))
                    .col(timestamp_with_time_zone(AuditLog::At))
                    .col(big_integer_null(AuditLog::ActorId))
                    .col(string_len(AuditLog::Action, 64))
                    .col(string_len(AuditLog::TargetKind, 32))
                    .col(string_len(AuditLog::TargetId, 64))
                    .col(big_integer_null(AuditLog::TeamId))
                    .col(text_null(AuditLog::BeforeJson))
                    .col(text_null(AuditLog::AfterJson))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_audit_log_at")
                    .table(AuditLog::Table)
                    .col(AuditLog::At)
                    .col(AuditLog::Id)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_audit_log_team")
                    .table(AuditLog::Table)
                    .col(AuditLog::TeamId)
                    .col(AuditLog::Id)
                    .to_owned(),
            )
            .await?;
        let db = manager.get_connection();
        match manager.get_database_backend() {
            DbBackend::Postgres => {
                db.execute_unprepared(
                    "CREATE FUNCTION audit_log_append_only() RETURNS trigger \
                     LANGUAGE plpgsql AS $$ BEGIN \
                     RAISE EXCEPTION 'audit_log is append-only'; END; $$",
                )
                .await?;
                db.execute_unprepared(
                    "CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log \
                     FOR EACH ROW EXECUTE FUNCTION audit_log_append_only()",
                )
                .await?;
                db.execute_unprepared(
                    "CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log \
                     FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only()",
                )
                .await?;
            }
            _ => {
                db.execute_unprepared(
                    "CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log \
                     BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END",
                )
                .await?;
                db.execute_unprepared(
                    "CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log \
                     BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END",
                )
                .await?;
            }
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        if manager.get_database_backend() == DbBackend::Postgres {
            db.execute_unprepared("DROP TABLE audit_log").await?;
            db.execute_unprepared("DROP FUNCTION audit_log_append_only()")
                .await?;
        } else {
            manager
                .drop_table(Table::drop().table(AuditLog::Table).to_owned())
                .await?;
        }
        manager
            .drop_table(Table::drop().table(TeamInvitations::Table).to_owned())
            .await
    }
}
