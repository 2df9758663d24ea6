//! Berth's database schema, as ordered SeaORM migrations that run on SQLite and PostgreSQL.
//!
//! Every constraint is named (`pk_`, `fk_`, `uq_`, `ck_` prefixes) so that the data layer can map a
//! violated constraint to a domain error.

pub use sea_orm_migration::prelude::*;

mod m20261130_000001_create_nodes_and_gpus;
mod m20261130_000002_create_sessions;
mod m20261130_000003_create_users_and_tokens;
mod m20261130_000004_create_teams;
mod m20261130_000005_create_reservations;
mod m20261130_000006_add_user_time_zone;
mod m20261130_000007_reservation_gpus_window;
mod m20261130_000008_telemetry;
mod m20261201_000009_ledger;
mod m20261201_000010_reservation_payment;
mod m20261201_000011_idempotency_keys;
mod m20261201_000012_charge_mode;
mod m20261201_000013_team_invitations_audit;
mod m20261201_000014_team_wallets_budgets;
mod m20261201_000015_quotas_priorities_approvals;
mod m20261201_000016_usage_reports;
mod m20261201_000017_ledger_by_reservation;
mod m20261202_000018_booking_totals;
mod m20261202_000019_token_scopes_session_hashes;
mod m20261202_000020_pending_gpus;
mod m20261203_000021_notifications;
mod m20261203_000022_deliveries;
mod m20261203_000023_calendar_feeds;
mod m20261204_000024_node_access;
mod m20261205_000025_environment_profiles;
mod m20261206_000026_workspaces;
mod m20261207_000027_booking_moves;
mod m20261208_000028_idle_reclaim;
mod m20261209_000029_watches;
mod m20261210_000030_start_early;
mod m20261211_000031_incidents;
mod m20261212_000032_card_payments;
mod m20261214_000033_booking_by_card;
mod m20261215_000034_leader_leases;
mod m20261216_000035_berth_reason_codes;

/// The ordered list of Berth's migrations.
#[derive(Debug)]
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261130_000001_create_nodes_and_gpus::Migration),
            Box::new(m20261130_000002_create_sessions::Migration),
            Box::new(m20261130_000003_create_users_and_tokens::Migration),
            Box::new(m20261130_000004_create_teams::Migration),
            Box::new(m20261130_000005_create_reservations::Migration),
            Box::new(m20261130_000006_add_user_time_zone::Migration),
            Box::new(m20261130_000007_reservation_gpus_window::Migration),
            Box::new(m20261130_000008_telemetry::Migration),
            Box::new(m20261201_000009_ledger::Migration),
            Box::new(m20261201_000010_reservation_payment::Migration),
            Box::new(m20261201_000011_idempotency_keys::Migration),
            Box::new(m20261201_000012_charge_mode::Migration),
            Box::new(m20261201_000013_team_invitations_audit::Migration),
            Box::new(m20261201_000014_team_wallets_budgets::Migration),
            Box::new(m20261201_000015_quotas_priorities_approvals::Migration),
            Box::new(m20261201_000016_usage_reports::Migration),
            Box::new(m20261201_000017_ledger_by_reservation::Migration),
            Box::new(m20261202_000018_booking_totals::Migration),
            Box::new(m20261202_000019_token_scopes_session_hashes::Migration),
            Box::new(m20261202_000020_pending_gpus::Migration),
            Box::new(m20261203_000021_notifications::Migration),
            Box::new(m20261203_000022_deliveries::Migration),
            Box::new(m20261203_000023_calendar_feeds::Migration),
            Box::new(m20261204_000024_node_access::Migration),
            Box::new(m20261205_000025_environment_profiles::Migration),
            Box::new(m20261206_000026_workspaces::Migration),
            Box::new(m20261207_000027_booking_moves::Migration),
            Box::new(m20261208_000028_idle_reclaim::Migration),
            Box::new(m20261209_000029_watches::Migration),
            Box::new(m20261210_000030_start_early::Migration),
            Box::new(m20261211_000031_incidents::Migration),
            Box::new(m20261212_000032_card_payments::Migration),
            Box::new(m20261214_000033_booking_by_card::Migration),
            Box::new(m20261215_000034_leader_leases::Migration),
            Box::new(m20261216_000035_berth_reason_codes::Migration),
        ]
    }
}
