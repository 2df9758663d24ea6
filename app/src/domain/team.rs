//! Teams: groups of users who book and pay together. A member is a `member` or an `admin`.

use serde::{Deserialize, Serialize};

/// A user's role in one team.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TeamRole {
    /// Books for the team.
    Member,
    /// Also manages the team's members, quotas, budget and approvals.
    Admin,
}

impl TeamRole {
    /// The value stored in `team_members.role`.
    pub fn as_str(self) -> &'static str {
        match self {
            TeamRole::Member => "member",
            TeamRole::Admin => "admin",
        }
    }

    /// Reads a stored value.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "member" => Some(TeamRole::Member),
            "admin" => Some(TeamRole::Admin),
            _ => None,
        }
    }
}

/// One team a user belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamMembership {
    /// The team's id.
    pub team_id: i64,
    /// The team's name.
    pub team_name: String,
    /// The user's role in it.
    pub role: TeamRole,
}

/// A team's name.
pub type TeamName = crate::domain::user::Label<100>;

/// What a user may do with a team: see it (its members) or manage it too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TeamAccess {
    /// A member: sees the team, its members and its bookings.
    View,
    /// A team admin or a platform admin: also invites, removes and changes roles.
    Manage,
}

impl TeamAccess {
    /// What `memberships` (the user's teams) and the platform role allow with `team_id`; `None`:
    /// nothing (the team is not even shown to them).
    pub fn of(
        role: crate::domain::user::PlatformRole,
        memberships: &[TeamMembership],
        team_id: i64,
    ) -> Option<Self> {
        if role == crate::domain::user::PlatformRole::PlatformAdmin {
            return Some(TeamAccess::Manage);
        }
        memberships
            .iter()
            .find(|team| team.team_id == team_id)
            .map(|team| match team.role {
                TeamRole::Admin => TeamAccess::Manage,
                TeamRole::Member => TeamAccess::View,
            })
    }
}

/// One member of a team, as its page lists them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamMember {
    /// The user.
    pub user_id: i64,
    /// Their name.
    pub name: String,
    /// Their address.
    pub email: String,
    /// Their role in the team.
    pub role: TeamRole,
    /// When they joined (UTC).
    pub since: chrono::DateTime<chrono::Utc>,
}

/// An invitation not yet accepted or withdrawn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invitation {
    /// Its id.
    pub id: i64,
    /// The team.
    pub team_id: i64,
    /// The invited address.
    pub email: String,
    /// The role they get.
    pub role: TeamRole,
    /// Who invited (their name), if known.
    pub invited_by: Option<String>,
    /// When (UTC).
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// A team with its members and open invitations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamRoster {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Members by name.
    pub members: Vec<TeamMember>,
    /// Open invitations, oldest first.
    pub invitations: Vec<Invitation>,
}

/// A team in a list of teams.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamSummary {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// How many members it has.
    pub members: u32,
    /// How many of them are admins.
    pub admins: u32,
    /// Open invitations.
    pub invitations: u32,
}

/// Whether a change to the member `user_id` would leave the team without an admin. A team
/// always keeps at least one admin, so someone can run it from its dashboard.
pub fn leaves_no_admin(members: &[TeamMember], user_id: i64, new_role: Option<TeamRole>) -> bool {
    let admins_after = members
        .iter()
        .filter(|member| {
            let role = if member.user_id == user_id {
                new_role
            } else {
                Some(member.role)
            };
            role == Some(TeamRole::Admin)
        })
        .count();
    let had_admin = members.iter().any(|member| member.role == TeamRole::Admin);
    had_admin && admins_after == 0
}

/// What happens to a booking that would take a team over its monthly budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetMode {
    /// Refused, with the numbers.
    Refuse,
    /// Booked, with a warning.
    Warn,
}

impl BudgetMode {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetMode::Refuse => "refuse",
            BudgetMode::Warn => "warn",
        }
    }

    /// Reads a stored or sent name.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim() {
            "refuse" => Some(BudgetMode::Refuse),
            "warn" => Some(BudgetMode::Warn),
            _ => None,
        }
    }
}

/// A team's monthly budget (calendar months in UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// The most the team's bookings starting in one month may cost, minor units (None: no
    /// limit).
    pub limit: Option<crate::domain::money::Money>,
    /// What happens beyond it.
    pub mode: BudgetMode,
    /// From this share of the limit (percent, 1–100) bookings carry a warning.
    pub warn_percent: u8,
}

/// What a booking of `price` does to the month's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "budget", rename_all = "snake_case")]
pub enum BudgetCheck {
    /// No limit, or well within it.
    Within,
    /// Booked, but the month's bookings now reach the warning share (or, in `warn` mode, go
    /// over the limit).
    Warn {
        /// The month's bookings with this one, minor units.
        spent_minor: i64,
        /// The limit, minor units.
        limit_minor: i64,
    },
    /// Refused: it would go over the limit.
    Over {
        /// The month's bookings before this one, minor units.
        spent_minor: i64,
        /// The limit, minor units.
        limit_minor: i64,
        /// This booking's price, minor units.
        price_minor: i64,
    },
}

impl Budget {
    /// Judges a booking of `price` when the month's bookings already cost `spent`.
    pub fn check(
        &self,
        spent: crate::domain::money::Money,
        price: crate::domain::money::Money,
    ) -> BudgetCheck {
        let Some(limit) = self.limit else {
            return BudgetCheck::Within;
        };
        let after = spent.minor().saturating_add(price.minor());
        if after > limit.minor() && self.mode == BudgetMode::Refuse {
            return BudgetCheck::Over {
                spent_minor: spent.minor(),
                limit_minor: limit.minor(),
                price_minor: price.minor(),
            };
        }
        // after / limit >= warn_percent / 100, in integers.
        let warn_from = i128::from(limit.minor()) * i128::from(self.warn_percent);
        if i128::from(after) * 100 >= warn_from && after > 0 {
            BudgetCheck::Warn {
                spent_minor: after,
                limit_minor: limit.minor(),
            }
        } else {
            BudgetCheck::Within
        }
    }
}

/// A team's money as its dashboard shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamMoney {
    /// The team wallet's balance.
    pub balance: crate::domain::money::Money,
    /// What its bookings not charged yet will take.
    pub on_hold: crate::domain::money::Money,
    /// The budget.
    pub budget: Budget,
    /// The current month (UTC): its first instant.
    pub month: chrono::DateTime<chrono::Utc>,
    /// What the team's bookings starting this month cost.
    pub month_spent: crate::domain::money::Money,
    /// How many of its bookings wait for credits (the team wallet was short when due).
    #[serde(default)]
    pub payments_due: u32,
}

/// The week (Monday 00:00 to the next Monday, UTC) that `at` falls in.
pub fn utc_week_of(
    at: chrono::DateTime<chrono::Utc>,
) -> (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>) {
    use chrono::Datelike;
    let day = at.date_naive();
    let monday = day - chrono::TimeDelta::days(i64::from(day.weekday().num_days_from_monday()));
    let start = monday.and_time(chrono::NaiveTime::MIN).and_utc();
    (start, start + chrono::TimeDelta::days(7))
}

/// The warning threshold of a budget set without one, in percent of the limit.
pub const DEFAULT_WARN_PERCENT: i64 = 80;

/// Validates a budget as a team admin sends it: a limit of 0 or more (None: no limit) and a
/// warning share of 1–100 % (none given: [`DEFAULT_WARN_PERCENT`]).
pub fn parse_budget(
    limit_minor: Option<i64>,
    mode: &str,
    warn_percent: Option<i64>,
) -> Result<Budget, (&'static str, crate::domain::problem::Problem)> {
    use crate::domain::problem::Problem;
    let warn_percent = warn_percent.unwrap_or(DEFAULT_WARN_PERCENT);
    if let Some(limit) = limit_minor
        && !(0..=1_000_000_000_000).contains(&limit)
    {
        return Err((
            "budget_minor",
            Problem::OutOfRange {
                min: 0,
                max: 1_000_000_000_000,
            },
        ));
    }
    let mode = BudgetMode::parse(mode).ok_or((
        "mode",
        Problem::Unreadable {
            detail: format!("`{mode}`: use refuse or warn"),
        },
    ))?;
    let warn_percent = u8::try_from(warn_percent)
        .ok()
        .filter(|p| (1..=100).contains(p))
        .ok_or(("warn_percent", Problem::OutOfRange { min: 1, max: 100 }))?;
    Ok(Budget {
        limit: limit_minor.map(crate::domain::money::Money::from_minor),
        mode,
        warn_percent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn team_roles_round_trip_through_their_stored_names() {
        for role in [TeamRole::Member, TeamRole::Admin] {
            assert_eq!(TeamRole::parse(role.as_str()), Some(role));
        }
        assert_eq!(TeamRole::parse("owner"), None);
    }

    fn member(user_id: i64, role: TeamRole) -> TeamMember {
        TeamMember {
            user_id,
            name: format!("user {user_id}"),
            email: format!("u{user_id}@example.com"),
            role,
            since: chrono::DateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn the_last_admin_can_be_neither_removed_nor_demoted() {
        let team = [member(1, TeamRole::Admin), member(2, TeamRole::Member)];
        assert!(leaves_no_admin(&team, 1, None));
        assert!(leaves_no_admin(&team, 1, Some(TeamRole::Member)));
        assert!(!leaves_no_admin(&team, 1, Some(TeamRole::Admin)));
        assert!(!leaves_no_admin(&team, 2, None));
        assert!(!leaves_no_admin(&team, 2, Some(TeamRole::Admin)));
    }

    fn budget(limit: Option<i64>, mode: BudgetMode) -> Budget {
        Budget {
            limit: limit.map(crate::domain::money::Money::from_minor),
            mode,
            warn_percent: 80,
        }
    }

    fn m(minor: i64) -> crate::domain::money::Money {
        crate::domain::money::Money::from_minor(minor)
    }

    #[test]
    fn a_budget_refuses_or_warns_beyond_its_limit_and_warns_from_its_threshold() {
        let refuse = budget(Some(10_000), BudgetMode::Refuse);
        assert_eq!(refuse.check(m(0), m(7_999)), BudgetCheck::Within);
        assert_eq!(
            refuse.check(m(0), m(8_000)),
            BudgetCheck::Warn {
                spent_minor: 8_000,
                limit_minor: 10_000
            }
        );
        assert_eq!(
            refuse.check(m(4_000), m(6_000)),
            BudgetCheck::Warn {
                spent_minor: 10_000,
                limit_minor: 10_000
            }
        );
        assert_eq!(
            refuse.check(m(4_000), m(6_001)),
            BudgetCheck::Over {
                spent_minor: 4_000,
                limit_minor: 10_000,
                price_minor: 6_001
            }
        );
        let warn = budget(Some(10_000), BudgetMode::Warn);
        assert_eq!(
            warn.check(m(9_000), m(5_000)),
            BudgetCheck::Warn {
                spent_minor: 14_000,
                limit_minor: 10_000
            }
        );
        assert_eq!(
            budget(None, BudgetMode::Refuse).check(m(1 << 40), m(5)),
            BudgetCheck::Within
        );
        // A zero budget refuses anything that costs money, and lets free bookings through.
        let zero = budget(Some(0), BudgetMode::Refuse);
        assert!(matches!(zero.check(m(0), m(1)), BudgetCheck::Over { .. }));
        assert_eq!(zero.check(m(0), m(0)), BudgetCheck::Within);
    }

    #[test]
    fn weeks_run_monday_to_monday_utc() {
        let at = |raw: &str| raw.parse::<chrono::DateTime<chrono::Utc>>().unwrap();
        assert_eq!(
            utc_week_of(at("2026-12-03T12:00:00Z")),
            (at("2026-11-30T00:00:00Z"), at("2026-12-07T00:00:00Z"))
        );
        assert_eq!(
            utc_week_of(at("2026-11-30T00:00:00Z")).0,
            at("2026-11-30T00:00:00Z")
        );
    }

    #[test]
    fn budgets_are_validated() {
        assert!(parse_budget(Some(100), "refuse", Some(80)).is_ok());
        assert!(parse_budget(None, "warn", Some(100)).is_ok());
        // The page's form and the JSON API leave it out alike: one default.
        assert_eq!(
            parse_budget(Some(1), "warn", None).unwrap().warn_percent,
            DEFAULT_WARN_PERCENT as u8
        );
        assert_eq!(
            parse_budget(Some(-1), "refuse", Some(80)).unwrap_err().0,
            "budget_minor"
        );
        assert_eq!(
            parse_budget(Some(1), "block", Some(80)).unwrap_err().0,
            "mode"
        );
        assert_eq!(
            parse_budget(Some(1), "warn", Some(0)).unwrap_err().0,
            "warn_percent"
        );
        assert_eq!(
            parse_budget(Some(1), "warn", Some(101)).unwrap_err().0,
            "warn_percent"
        );
    }

    #[test]
    fn one_of_two_admins_may_leave() {
        let team = [member(1, TeamRole::Admin), member(2, TeamRole::Admin)];
        assert!(!leaves_no_admin(&team, 1, None));
        assert!(!leaves_no_admin(&team, 2, Some(TeamRole::Member)));
    }

    #[test]
    fn a_team_without_admins_may_still_lose_members() {
        // Created by a platform admin whose invited admin has not signed in yet.
        let team = [member(2, TeamRole::Member)];
        assert!(!leaves_no_admin(&team, 2, None));
    }

    #[test]
    fn access_follows_the_team_role_and_platform_admins_manage_every_team() {
        use crate::domain::user::PlatformRole;
        let mine = [
            TeamMembership {
                team_id: 1,
                team_name: "A".into(),
                role: TeamRole::Admin,
            },
            TeamMembership {
                team_id: 2,
                team_name: "B".into(),
                role: TeamRole::Member,
            },
        ];
        assert_eq!(
            TeamAccess::of(PlatformRole::User, &mine, 1),
            Some(TeamAccess::Manage)
        );
        assert_eq!(
            TeamAccess::of(PlatformRole::User, &mine, 2),
            Some(TeamAccess::View)
        );
        assert_eq!(TeamAccess::of(PlatformRole::User, &mine, 3), None);
        assert_eq!(
            TeamAccess::of(PlatformRole::PlatformAdmin, &[], 3),
            Some(TeamAccess::Manage)
        );
    }

    proptest::proptest! {
        /// Whatever changes are tried, in any order, those the rule lets through never leave a
        /// team that had an admin without one.
        #[test]
        fn allowed_changes_never_leave_a_team_without_an_admin(
            admins in 1usize..4,
            members in 0usize..4,
            changes in proptest::collection::vec((0i64..8, 0u8..3), 0..40),
        ) {
            let mut team: Vec<TeamMember> = (0..admins + members)
                .map(|i| {
                    let role = if i < admins { TeamRole::Admin } else { TeamRole::Member };
                    member(i as i64, role)
                })
                .collect();
            for (user_id, change) in changes {
                if !team.iter().any(|m| m.user_id == user_id) {
                    continue;
                }
                let new_role = match change {
                    0 => None,
                    1 => Some(TeamRole::Member),
                    _ => Some(TeamRole::Admin),
                };
                if leaves_no_admin(&team, user_id, new_role) {
                    continue;
                }
                match new_role {
                    None => team.retain(|m| m.user_id != user_id),
                    Some(role) => {
                        if let Some(m) = team.iter_mut().find(|m| m.user_id == user_id) {
                            m.role = role;
                        }
                    }
                }
                proptest::prop_assert!(team.iter().any(|m| m.role == TeamRole::Admin));
            }
        }
    }

    proptest::proptest! {
        /// Bookings admitted one after another by a refusing budget never add up to more than
        /// its limit, and each refusal is one that really would have gone over.
        #[test]
        fn a_refusing_budget_is_never_exceeded(
            limit in 0i64..100_000,
            prices in proptest::collection::vec(0i64..30_000, 0..50),
        ) {
            let budget = Budget {
                limit: Some(m(limit)),
                mode: BudgetMode::Refuse,
                warn_percent: 80,
            };
            let mut spent = 0i64;
            for price in prices {
                match budget.check(m(spent), m(price)) {
                    BudgetCheck::Over { .. } => proptest::prop_assert!(spent + price > limit),
                    _ => spent += price,
                }
                proptest::prop_assert!(spent <= limit);
            }
        }
    }
}
