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
}
