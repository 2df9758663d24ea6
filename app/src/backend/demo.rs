//! The demo fleet: sample nodes and GPUs added to an empty embedded database so that a newcomer
//! sees a working portal at once. Every demo node is marked `is_demo` and the UI says so.

use crate::backend::db;
use crate::domain::gpu::{GpuMemory, GpuStatus};
use crate::domain::inventory::{NewGpu, NewNode};
use crate::domain::money::Money;
use crate::domain::payment::{ChargeMode, ChargePolicy};
use crate::domain::team::{TeamName, TeamRole};
use crate::domain::user::{Email, NewUser, PlatformRole, UserName, UserSummary};
use chrono::{DateTime, Utc};
use sea_orm::{DatabaseConnection, DbErr, SqlErr};

/// What [`seed_if_empty`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedOutcome {
    /// The inventory was empty; the demo fleet was added.
    Seeded {
        /// Nodes added.
        nodes: usize,
        /// GPUs added.
        gpus: usize,
    },
    /// The inventory already had nodes; nothing was written.
    AlreadyPopulated,
}

struct DemoNode {
    name: &'static str,
    hostname: &'static str,
    /// (model, memory in MiB, price per hour in minor units, shareable, count)
    groups: &'static [(&'static str, u64, i64, bool, u32)],
    /// Device indexes that start in maintenance.
    in_maintenance: &'static [u32],
}

const FLEET: &[DemoNode] = &[
    DemoNode {
        name: "demo-hopper-01",
        hostname: "hopper-01.demo.invalid",
        groups: &[("NVIDIA H100 80GB HBM3", 81_559, 349, false, 8)],
        in_maintenance: &[],
    },
    DemoNode {
        name: "demo-ampere-01",
        hostname: "ampere-01.demo.invalid",
        groups: &[("NVIDIA A100-PCIE-40GB", 40_960, 189, true, 4)],
        in_maintenance: &[3],
    },
    DemoNode {
        name: "demo-lovelace-01",
        hostname: "lovelace-01.demo.invalid",
        groups: &[
            ("NVIDIA L40S", 49_140, 129, true, 2),
            ("NVIDIA RTX A5000", 24_564, 49, true, 2),
        ],
        in_maintenance: &[],
    },
];

/// The demo nodes with their GPUs.
pub fn demo_fleet() -> Vec<(NewNode, Vec<NewGpu>)> {
    FLEET
        .iter()
        .enumerate()
        .map(|(node_number, demo)| {
            let mut gpus = Vec::new();
            for &(model, memory_mib, price, shareable, count) in demo.groups {
                for _ in 0..count {
                    let device_index = u32::try_from(gpus.len()).unwrap_or(u32::MAX);
                    gpus.push(NewGpu {
                        device_index,
                        uuid: format!(
                            "GPU-de300000-0000-4000-8000-{node_number:04x}{device_index:08x}"
                        ),
                        model: model.to_owned(),
                        memory: GpuMemory::from_mib(memory_mib),
                        status: if demo.in_maintenance.contains(&device_index) {
                            GpuStatus::Maintenance
                        } else {
                            GpuStatus::Active
                        },
                        shareable,
                        hourly_price: Money::from_minor(price),
                    });
                }
            }
            let node = NewNode {
                name: demo.name.to_owned(),
                hostname: demo.hostname.to_owned(),
                is_demo: true,
            };
            (node, gpus)
        })
        .collect()
}

/// Adds the demo fleet if the inventory has no node at all, in one transaction. Safe to call on
/// every start and from several processes at once: a second call, or a concurrent one that loses
/// the race, writes nothing.
#[tracing::instrument(skip_all)]
pub async fn seed_if_empty(
    conn: &DatabaseConnection,
    now: DateTime<Utc>,
) -> Result<SeedOutcome, DbErr> {
    let txn = db::begin_write(conn).await?;
    if db::inventory::count_nodes(&txn).await? > 0 {
        return Ok(SeedOutcome::AlreadyPopulated);
    }
    let fleet = demo_fleet();
    let mut gpu_count = 0;
    // In the fleet since before the demo bookings' history (the fleet report counts capacity
    // from when a GPU was added).
    let since = now - chrono::TimeDelta::days(HISTORY_DAYS + 5);
    for (node, gpus) in &fleet {
        match db::inventory::insert_node_with_gpus(&txn, node, gpus, since).await {
            Ok(_) => gpu_count += gpus.len(),
            // Another process seeded first (PostgreSQL replicas starting together).
            Err(err) if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
                return Ok(SeedOutcome::AlreadyPopulated);
            }
            Err(err) => return Err(err),
        }
    }
    txn.commit().await?;
    Ok(SeedOutcome::Seeded {
        nodes: fleet.len(),
        gpus: gpu_count,
    })
}

/// Credits each demo account and demo colleague starts with, in minor units (1,000.00 in a
/// currency with two decimals), so that demo bookings can be paid.
pub const DEMO_CREDITS_MINOR: i64 = 100_000;

/// Gives `user_id` the demo credits when its wallet is new (once, even with concurrent calls);
/// true when it was.
async fn fund_demo_wallet(
    db: &impl sea_orm::ConnectionTrait,
    user_id: i64,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    fund_demo(
        db,
        crate::domain::ledger::Account::Wallet(user_id),
        DEMO_CREDITS_MINOR,
        now,
    )
    .await
}

/// The environment profile a demo account starts with (not its default: demo nodes have no
/// agent to prepare it), so that the profiles page and the booking panel's choice have something
/// to show.
async fn demo_profile(
    db: &impl sea_orm::ConnectionTrait,
    user_id: i64,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    use crate::domain::profile::{Dotfile, ProfileSpec, Variable};
    let spec = ProfileSpec {
        variables: vec![
            Variable {
                name: "HF_HOME".into(),
                value: "/data/huggingface".into(),
            },
            Variable {
                name: "TOKENIZERS_PARALLELISM".into(),
                value: "false".into(),
            },
        ],
        python: Some("3.11".into()),
        packages: vec!["torch==2.5.1".into(), "transformers==4.46.3".into()],
        setup_script: "git config --global pull.rebase true\n".into(),
        dotfiles: vec![Dotfile {
            path: ".config/pip/pip.conf".into(),
            content: "[global]\ndisable-pip-version-check = true\n".into(),
        }],
    };
    let row = db::env_profiles::insert_profile(db, user_id, None, "PyTorch starter", now).await?;
    let json = serde_json::to_string(&spec).map_err(|err| DbErr::Custom(err.to_string()))?;
    db::env_profiles::insert_version(db, row.id, 1, &json, &spec.hash(), now).await?;
    Ok(())
}

/// Credits the demo team's wallet starts with (10,000.00), and its monthly budget (1,500.00,
/// warning from 80 %), so that team bookings can be tried at once.
pub const DEMO_TEAM_CREDITS_MINOR: i64 = 1_000_000;

/// Gives `wallet` (a user's or a team's) `minor` demo credits when it is new; true when it was.
async fn fund_demo(
    db: &impl sea_orm::ConnectionTrait,
    wallet: crate::domain::ledger::Account,
    minor: i64,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    use crate::domain::ledger::{Account, Posting, TransactionKind};
    use crate::domain::money::Money;
    if !db::ledger::create_account(db, wallet).await? {
        return Ok(false);
    }
    let posting = Posting::transfer(Account::Funding, wallet, Money::from_minor(minor))
        .map_err(|err| DbErr::Custom(err.to_string()))?;
    let record = db::ledger::TransactionRecord {
        kind: TransactionKind::Grant,
        user_id: wallet.user_id(),
        reservation_id: None,
        reverses_id: None,
        reason: db::ledger::RecordReason::Berth(&crate::domain::ledger::BerthReason::DemoCredits),
        actor_id: None,
        provider: Some(crate::backend::ledger::MANUAL_PROVIDER),
        // Before the demo bookings, which are dated up to HISTORY_DAYS back.
        at: now - chrono::TimeDelta::days(HISTORY_DAYS + 5),
    };
    db::ledger::post(db, &record, &posting)
        .await
        .map_err(|err| match err {
            db::ledger::PostError::Db(err) => err,
            other => DbErr::Custom(other.to_string()),
        })?;
    Ok(true)
}

/// How many days back the demo bookings go (the cost reports have a previous month to show).
const HISTORY_DAYS: i64 = 40;

/// People who own the demo bookings besides the demo accounts.
const DEMO_COLLEAGUES: [(&str, &str); 3] = [
    ("ana.souza@berth.invalid", "Ana Souza"),
    ("bruno.lima@berth.invalid", "Bruno Lima"),
    ("chen.wei@berth.invalid", "Chen Wei"),
];

/// Adds plausible bookings (sparse ones over the past weeks, more over the last few days and the
/// next week) by demo users
/// to the demo fleet, through the same booking path as real ones, so the calendar is not empty
/// on a first run. Returns how many were added.
#[tracing::instrument(skip_all)]
pub async fn seed_demo_bookings(
    conn: &DatabaseConnection,
    now: DateTime<Utc>,
    currency: &crate::domain::money::Currency,
) -> Result<usize, DbErr> {
    use crate::domain::reservation::{NewReservation, Target};
    use crate::domain::schedule::{Share, Window};
    use chrono::TimeDelta;

    let mut owners = Vec::new();
    for account in [DemoAccount::User, DemoAccount::TeamAdmin] {
        owners.push(demo_account(conn, account, now).await?.id);
    }
    // The demo team admin books for the demo team, so its members see team bookings by name.
    let team_admin = owners[1];
    let demo_team = db::teams::memberships_of(conn, team_admin)
        .await?
        .first()
        .map(|team| team.team_id);
    for (email, name) in DEMO_COLLEAGUES {
        let user = NewUser {
            email: Email::parse(email).map_err(|err| DbErr::Custom(err.to_string()))?,
            name: UserName::parse(name).map_err(|err| DbErr::Custom(err.to_string()))?,
            role: PlatformRole::User,
        };
        let txn = db::begin_write(conn).await?;
        let id = db::users::upsert_user(&txn, &user, now).await?.id;
        fund_demo_wallet(&txn, id, now).await?;
        txn.commit().await?;
        owners.push(id);
    }
    let nodes = db::inventory::list_nodes_with_gpus(conn).await?;
    let day_start = now.date_naive().and_time(chrono::NaiveTime::MIN).and_utc();
    let mut added = 0;
    let mut n: i64 = 0;
    for node in nodes.iter().filter(|node| node.is_demo) {
        for gpu in node.gpus.iter().filter(|gpu| gpu.status.is_bookable()) {
            for day in -HISTORY_DAYS..7 {
                n += 1;
                // A deterministic spread: some GPUs busy most days, some rarely; the weeks
                // before the last few days more sparsely (the cost reports' history).
                let skip = if day < -3 { 7 } else { 4 };
                if (n * 7 + i64::from(gpu.device_index) * 3) % 10 < skip {
                    continue;
                }
                let start_hour = 6 + (n * 5 + day * 3).rem_euclid(12);
                let hours = 2 + (n * 3 + i64::from(gpu.device_index)).rem_euclid(9);
                let start = day_start + TimeDelta::days(day) + TimeDelta::hours(start_hour);
                let Ok(window) = Window::new(start, start + TimeDelta::hours(hours)) else {
                    continue;
                };
                let share = if gpu.shareable && n % 3 == 0 {
                    if n % 2 == 0 {
                        Share::Half
                    } else {
                        Share::Quarter
                    }
                } else {
                    Share::Whole
                };
                let owner = owners[usize::try_from(n).unwrap_or(0) % owners.len()];
                let request = NewReservation {
                    owner_id: owner,
                    owner_name: None,
                    target: Target::Gpus(vec![gpu.id]),
                    share,
                    window,
                    charge: ChargeMode::AtBooking,
                    // The team admin books for the team; in the history the demo user does
                    // too, so the team's cost report has last month's bookings.
                    team_id: demo_team
                        .filter(|_| owner == team_admin || (day < -3 && owner == owners[0])),
                    priority: None,
                    platform_admin: false,
                    profile_version_id: None,
                    through_watch: None,
                    start_early: false,
                    card_id: None,
                };
                let created_at = (start - TimeDelta::days(2)).min(now);
                let terms = crate::backend::reservations::place::BookingTerms {
                    latest_start: now + TimeDelta::weeks(8),
                    now: created_at,
                    currency,
                    charge: &ChargePolicy::default(),
                    notify: false,
                };
                if crate::backend::reservations::place::place(conn, &request, &terms, None)
                    .await
                    .is_ok()
                {
                    added += 1;
                }
            }
        }
    }
    Ok(added)
}

/// The demo accounts offered by the development sign-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoAccount {
    /// A user in the demo team.
    User,
    /// The demo team's admin.
    TeamAdmin,
    /// A platform admin.
    PlatformAdmin,
}

/// The demo team both demo team accounts belong to.
pub const DEMO_TEAM: &str = "Demo Lab";

impl DemoAccount {
    /// Reads the form value (`user`, `team_admin`, `platform_admin`).
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "user" => Some(DemoAccount::User),
            "team_admin" => Some(DemoAccount::TeamAdmin),
            "platform_admin" => Some(DemoAccount::PlatformAdmin),
            _ => None,
        }
    }

    fn details(self) -> (&'static str, &'static str, PlatformRole, Option<TeamRole>) {
        match self {
            DemoAccount::User => (
                "demo-user@berth.invalid",
                "Demo User",
                PlatformRole::User,
                Some(TeamRole::Member),
            ),
            DemoAccount::TeamAdmin => (
                "demo-team-admin@berth.invalid",
                "Demo Team Admin",
                PlatformRole::User,
                Some(TeamRole::Admin),
            ),
            DemoAccount::PlatformAdmin => (
                "demo-admin@berth.invalid",
                "Demo Platform Admin",
                PlatformRole::PlatformAdmin,
                None,
            ),
        }
    }
}

/// The demo account, created with its team membership on first use, in one transaction.
#[tracing::instrument(skip_all, fields(demo.account = ?account))]
pub async fn demo_account(
    conn: &DatabaseConnection,
    account: DemoAccount,
    now: DateTime<Utc>,
) -> Result<UserSummary, DbErr> {
    let (email, name, role, team_role) = account.details();
    let new_user = NewUser {
        email: Email::parse(email).map_err(|err| DbErr::Custom(err.to_string()))?,
        name: UserName::parse(name).map_err(|err| DbErr::Custom(err.to_string()))?,
        role,
    };
    let txn = db::begin_write(conn).await?;
    let user = db::users::upsert_user(&txn, &new_user, now).await?;
    if fund_demo_wallet(&txn, user.id, now).await? {
        demo_profile(&txn, user.id, now).await?;
    }
    if let Some(team_role) = team_role {
        let team_name = TeamName::parse(DEMO_TEAM).map_err(|err| DbErr::Custom(err.to_string()))?;
        let team_id = db::teams::ensure_team(&txn, &team_name, now).await?;
        db::teams::set_member(&txn, team_id, user.id, team_role, now).await?;
        let new_team_wallet = fund_demo(
            &txn,
            crate::domain::ledger::Account::TeamWallet(team_id),
            DEMO_TEAM_CREDITS_MINOR,
            now,
        )
        .await?;
        if new_team_wallet {
            let budget = crate::domain::team::Budget {
                limit: Some(crate::domain::money::Money::from_minor(150_000)),
                mode: crate::domain::team::BudgetMode::Refuse,
                warn_percent: 80,
            };
            db::teams::set_budget(&txn, team_id, &budget).await?;
        }
    }
    txn.commit().await?;
    Ok(user)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_fleet_has_three_nodes_and_sixteen_mixed_gpus() {
        let fleet = demo_fleet();
        assert_eq!(fleet.len(), 3);
        let gpus: Vec<&NewGpu> = fleet.iter().flat_map(|(_, gpus)| gpus).collect();
        assert_eq!(gpus.len(), 16);
        let mut models: Vec<&str> = gpus.iter().map(|gpu| gpu.model.as_str()).collect();
        models.dedup();
        assert_eq!(models.len(), 4);
        assert!(fleet.iter().all(|(node, _)| node.is_demo));
    }

    #[test]
    fn demo_uuids_are_unique_and_indexes_are_dense_per_node() {
        let fleet = demo_fleet();
        let mut uuids: Vec<&str> = fleet
            .iter()
            .flat_map(|(_, gpus)| gpus.iter().map(|gpu| gpu.uuid.as_str()))
            .collect();
        uuids.sort_unstable();
        uuids.dedup();
        assert_eq!(uuids.len(), 16);
        for (_, gpus) in &fleet {
            let indexes: Vec<u32> = gpus.iter().map(|gpu| gpu.device_index).collect();
            assert_eq!(
                indexes,
                (0..u32::try_from(gpus.len()).unwrap()).collect::<Vec<_>>()
            );
        }
    }
}
