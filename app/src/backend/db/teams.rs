//! Teams and their members.

use crate::backend::entity::{reservation, team, team_invitation, team_member, user};
use crate::domain::money::Money;
use crate::domain::team::{
    Budget, BudgetMode, Invitation, TeamMember, TeamMembership, TeamName, TeamRole, TeamSummary,
};
use crate::domain::user::Email;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveModelTrait,
    ActiveValue::{NotSet, Set},
    ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect,
};

/// The id of the team with this name, creating the team if there is none.
#[tracing::instrument(skip_all, fields(team.name = %name.as_str()))]
pub async fn ensure_team(
    db: &impl ConnectionTrait,
    name: &TeamName,
    now: DateTime<Utc>,
) -> Result<i64, DbErr> {
    team::Entity::insert(team::ActiveModel {
        name: Set(name.as_str().to_owned()),
        created_at: Set(now),
        ..Default::default()
    })
    .on_conflict(
        OnConflict::column(team::Column::Name)
            .do_nothing()
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    team::Entity::find()
        .filter(team::Column::Name.eq(name.as_str()))
        .one(db)
        .await?
        .map(|row| row.id)
        .ok_or_else(|| DbErr::RecordNotFound(format!("team {}", name.as_str())))
}

/// Makes the user a member of the team with `role` (changing the role if already a member).
#[tracing::instrument(skip_all, fields(team.id = team_id, user.id = user_id))]
pub async fn set_member(
    db: &impl ConnectionTrait,
    team_id: i64,
    user_id: i64,
    role: TeamRole,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    team_member::Entity::insert(team_member::ActiveModel {
        team_id: Set(team_id),
        user_id: Set(user_id),
        role: Set(role.as_str().to_owned()),
        created_at: Set(now),
    })
    .on_conflict(
        OnConflict::columns([team_member::Column::TeamId, team_member::Column::UserId])
            .update_column(team_member::Column::Role)
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    Ok(())
}

/// The teams the user belongs to, by name.
pub async fn memberships_of(
    db: &impl ConnectionTrait,
    user_id: i64,
) -> Result<Vec<TeamMembership>, DbErr> {
    team_member::Entity::find()
        .filter(team_member::Column::UserId.eq(user_id))
        .find_also_related(team::Entity)
        .order_by_asc(team::Column::Name)
        .all(db)
        .await?
        .into_iter()
        .filter_map(|(member, team)| team.map(|team| (member, team)))
        .map(|(member, team)| {
            let role = TeamRole::parse(&member.role).ok_or_else(|| {
                DbErr::Custom(format!(
                    "team_members({}, {}): unknown role {}",
                    member.team_id, member.user_id, member.role
                ))
            })?;
            Ok(TeamMembership {
                team_id: team.id,
                team_name: team.name,
                role,
            })
        })
        .collect()
}

/// Creates a team; `None` when the name is taken.
pub async fn create_team(
    db: &impl ConnectionTrait,
    name: &TeamName,
    now: DateTime<Utc>,
) -> Result<Option<i64>, DbErr> {
    let taken = team::Entity::find()
        .filter(team::Column::Name.eq(name.as_str()))
        .one(db)
        .await?
        .is_some();
    if taken {
        return Ok(None);
    }
    let row = team::ActiveModel {
        name: Set(name.as_str().to_owned()),
        created_at: Set(now),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(Some(row.id))
}

/// Locks the team's row until `txn` ends (PostgreSQL `FOR UPDATE`; SQLite's `IMMEDIATE`
/// transaction already holds the write lock), so changes to one team's members and
/// invitations happen one after another. Answers the team's name, `None` if there is no such
/// team.
pub async fn lock_team(txn: &impl ConnectionTrait, team_id: i64) -> Result<Option<String>, DbErr> {
    let mut query = team::Entity::find_by_id(team_id);
    if txn.get_database_backend() == DbBackend::Postgres {
        // Not FOR UPDATE: that would also block other transactions' foreign-key checks
        // against the row (a team wallet created, a reservation inserted for the team).
        query = query.lock(sea_orm::sea_query::LockType::NoKeyUpdate);
    }
    Ok(query.one(txn).await?.map(|row| row.name))
}

/// The team's name, `None` if there is no such team.
pub async fn team_name(db: &impl ConnectionTrait, team_id: i64) -> Result<Option<String>, DbErr> {
    Ok(team::Entity::find_by_id(team_id)
        .one(db)
        .await?
        .map(|row| row.name))
}

/// The team's members, admins first, then by name.
pub async fn members(db: &impl ConnectionTrait, team_id: i64) -> Result<Vec<TeamMember>, DbErr> {
    let rows = team_member::Entity::find()
        .filter(team_member::Column::TeamId.eq(team_id))
        .find_also_related(user::Entity)
        .all(db)
        .await?;
    let mut members = rows
        .into_iter()
        .filter_map(|(member, user)| user.map(|user| (member, user)))
        .map(|(member, user)| {
            let role = parse_role(&member.role, "team_members")?;
            Ok(TeamMember {
                user_id: user.id,
                name: user.name,
                email: user.email,
                role,
                since: member.created_at,
            })
        })
        .collect::<Result<Vec<_>, DbErr>>()?;
    members.sort_by(|a, b| {
        (b.role == TeamRole::Admin)
            .cmp(&(a.role == TeamRole::Admin))
            .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
    });
    Ok(members)
}

fn parse_role(raw: &str, table: &str) -> Result<TeamRole, DbErr> {
    TeamRole::parse(raw).ok_or_else(|| DbErr::Custom(format!("{table}: unknown role {raw}")))
}

/// The team's open invitations, oldest first.
pub async fn open_invitations(
    db: &impl ConnectionTrait,
    team_id: i64,
) -> Result<Vec<Invitation>, DbErr> {
    let rows = team_invitation::Entity::find()
        .filter(team_invitation::Column::TeamId.eq(team_id))
        .filter(team_invitation::Column::AcceptedAt.is_null())
        .filter(team_invitation::Column::RevokedAt.is_null())
        .order_by_asc(team_invitation::Column::Id)
        .all(db)
        .await?;
    let mut inviters: Vec<i64> = rows.iter().filter_map(|row| row.invited_by).collect();
    inviters.sort_unstable();
    inviters.dedup();
    let names = super::users::names_of(db, &inviters).await?;
    rows.into_iter()
        .map(|row| {
            Ok(Invitation {
                id: row.id,
                team_id: row.team_id,
                role: parse_role(&row.role, "team_invitations")?,
                invited_by: row.invited_by.and_then(|id| names.get(&id).cloned()),
                email: row.email,
                created_at: row.created_at,
            })
        })
        .collect()
}

/// Whether `email` has any open invitation (a read before a write transaction).
pub async fn has_open_invitations(db: &impl ConnectionTrait, email: &Email) -> Result<bool, DbErr> {
    Ok(team_invitation::Entity::find()
        .filter(team_invitation::Column::Email.eq(email.as_str()))
        .filter(team_invitation::Column::AcceptedAt.is_null())
        .filter(team_invitation::Column::RevokedAt.is_null())
        .one(db)
        .await?
        .is_some())
}

/// Whether `email` has an open invitation to the team.
pub async fn is_invited(
    db: &impl ConnectionTrait,
    team_id: i64,
    email: &Email,
) -> Result<bool, DbErr> {
    Ok(team_invitation::Entity::find()
        .filter(team_invitation::Column::TeamId.eq(team_id))
        .filter(team_invitation::Column::Email.eq(email.as_str()))
        .filter(team_invitation::Column::AcceptedAt.is_null())
        .filter(team_invitation::Column::RevokedAt.is_null())
        .one(db)
        .await?
        .is_some())
}

/// Records an invitation; answers its id. The caller checked (under [`lock_team`]) that the
/// address is neither a member nor already invited.
pub async fn insert_invitation(
    db: &impl ConnectionTrait,
    team_id: i64,
    email: &Email,
    role: TeamRole,
    invited_by: Option<i64>,
    now: DateTime<Utc>,
) -> Result<i64, DbErr> {
    let row = team_invitation::ActiveModel {
        id: NotSet,
        team_id: Set(team_id),
        email: Set(email.as_str().to_owned()),
        role: Set(role.as_str().to_owned()),
        invited_by: Set(invited_by),
        created_at: Set(now),
        accepted_at: Set(None),
        accepted_user_id: Set(None),
        revoked_at: Set(None),
        revoked_by: Set(None),
    }
    .insert(db)
    .await?;
    Ok(row.id)
}

/// Withdraws the team's open invitation `id`; answers it as it was, `None` if the team has no
/// such open invitation.
pub async fn revoke_invitation(
    db: &impl ConnectionTrait,
    team_id: i64,
    id: i64,
    by: i64,
    now: DateTime<Utc>,
) -> Result<Option<Invitation>, DbErr> {
    let Some(open) = open_invitations(db, team_id)
        .await?
        .into_iter()
        .find(|invitation| invitation.id == id)
    else {
        return Ok(None);
    };
    team_invitation::Entity::update_many()
        .col_expr(team_invitation::Column::RevokedAt, Expr::value(now))
        .col_expr(team_invitation::Column::RevokedBy, Expr::value(by))
        .filter(team_invitation::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(Some(open))
}

/// Removes the member; answers whether they were one.
pub async fn remove_member(
    db: &impl ConnectionTrait,
    team_id: i64,
    user_id: i64,
) -> Result<bool, DbErr> {
    let removed = team_member::Entity::delete_many()
        .filter(team_member::Column::TeamId.eq(team_id))
        .filter(team_member::Column::UserId.eq(user_id))
        .exec(db)
        .await?;
    Ok(removed.rows_affected > 0)
}

/// An invitation accepted at sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The invitation.
    pub invitation_id: i64,
    /// The team joined.
    pub team_id: i64,
    /// Its name.
    pub team_name: String,
    /// The role held now.
    pub role: TeamRole,
}

/// Accepts every open invitation of `email` for the user `user_id`: they become members with
/// the invited role (an admin invited as a member stays an admin). Run it in a write
/// transaction.
pub async fn accept_invitations(
    db: &impl ConnectionTrait,
    user_id: i64,
    email: &Email,
    now: DateTime<Utc>,
) -> Result<Vec<Accepted>, DbErr> {
    // Teams locked in id order, so two sign-ins with invitations to the same teams cannot
    // deadlock.
    let open = team_invitation::Entity::find()
        .filter(team_invitation::Column::Email.eq(email.as_str()))
        .filter(team_invitation::Column::AcceptedAt.is_null())
        .filter(team_invitation::Column::RevokedAt.is_null())
        .order_by_asc(team_invitation::Column::TeamId)
        .order_by_asc(team_invitation::Column::Id)
        .all(db)
        .await?;
    let mut accepted = Vec::with_capacity(open.len());
    for invitation in open {
        let Some(team_name) = lock_team(db, invitation.team_id).await? else {
            continue;
        };
        let invited = parse_role(&invitation.role, "team_invitations")?;
        let current = team_member::Entity::find_by_id((invitation.team_id, user_id))
            .one(db)
            .await?
            .map(|member| parse_role(&member.role, "team_members"))
            .transpose()?;
        let role = match current {
            Some(TeamRole::Admin) => TeamRole::Admin,
            _ => invited,
        };
        if current != Some(role) {
            set_member(db, invitation.team_id, user_id, role, now).await?;
        }
        team_invitation::Entity::update_many()
            .col_expr(team_invitation::Column::AcceptedAt, Expr::value(now))
            .col_expr(
                team_invitation::Column::AcceptedUserId,
                Expr::value(user_id),
            )
            .filter(team_invitation::Column::Id.eq(invitation.id))
            .exec(db)
            .await?;
        accepted.push(Accepted {
            invitation_id: invitation.id,
            team_id: invitation.team_id,
            team_name,
            role,
        });
    }
    Ok(accepted)
}

/// Teams with their counts of members, admins and open invitations, by name; only the teams
/// in `only` when given.
pub async fn summaries(
    db: &impl ConnectionTrait,
    only: Option<&[i64]>,
) -> Result<Vec<TeamSummary>, DbErr> {
    let mut query = team::Entity::find().order_by_asc(team::Column::Name);
    if let Some(ids) = only {
        query = query.filter(team::Column::Id.is_in(ids.iter().copied()));
    }
    summarize(db, query.all(db).await?).await
}

/// A page of teams (all, or `only` these), oldest first (by id), with their counts.
pub async fn summaries_page(
    db: &impl ConnectionTrait,
    only: Option<&[i64]>,
    page: &crate::domain::paging::PageRequest,
) -> Result<crate::domain::paging::Page<TeamSummary>, DbErr> {
    use crate::domain::paging::{Cursor, ListKind, Page};
    let mut query = team::Entity::find().order_by_asc(team::Column::Id);
    if let Some(ids) = only {
        query = query.filter(team::Column::Id.is_in(ids.iter().copied()));
    }
    if let Some(after) = page.after {
        query = query.filter(team::Column::Id.gt(after.id));
    }
    let rows = query.limit(page.fetch()).all(db).await?;
    let page = Page::from_rows(rows, page, ListKind::Teams, |team| Cursor::id(team.id));
    Ok(Page {
        items: summarize(db, page.items).await?,
        next: page.next,
    })
}

/// The member, admin and open invitation counts of `teams`, in their order.
async fn summarize(
    db: &impl ConnectionTrait,
    teams: Vec<team::Model>,
) -> Result<Vec<TeamSummary>, DbErr> {
    let ids: Vec<i64> = teams.iter().map(|team| team.id).collect();
    let members = team_member::Entity::find()
        .filter(team_member::Column::TeamId.is_in(ids.iter().copied()))
        .all(db)
        .await?;
    let invitations = team_invitation::Entity::find()
        .filter(team_invitation::Column::TeamId.is_in(ids.iter().copied()))
        .filter(team_invitation::Column::AcceptedAt.is_null())
        .filter(team_invitation::Column::RevokedAt.is_null())
        .all(db)
        .await?;
    Ok(teams
        .into_iter()
        .map(|team| {
            let of_team = || members.iter().filter(move |m| m.team_id == team.id);
            let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
            TeamSummary {
                id: team.id,
                members: count(of_team().count()),
                admins: count(of_team().filter(|m| m.role == "admin").count()),
                invitations: count(invitations.iter().filter(|i| i.team_id == team.id).count()),
                name: team.name,
            }
        })
        .collect())
}

/// The team's budget and booking rules, reading the team's row with a lock held until `txn`
/// ends (PostgreSQL `FOR NO KEY UPDATE`: not FOR UPDATE, which would also block other
/// transactions' foreign-key checks against the row; SQLite's write transaction holds its lock
/// already); `None`: no such team.
pub async fn lock_rules(
    txn: &impl ConnectionTrait,
    team_id: i64,
) -> Result<Option<(Budget, crate::domain::quota::TeamPolicy)>, DbErr> {
    let mut query = team::Entity::find_by_id(team_id);
    if txn.get_database_backend() == DbBackend::Postgres {
        query = query.lock(sea_orm::sea_query::LockType::NoKeyUpdate);
    }
    query
        .one(txn)
        .await?
        .map(|row| Ok((stored_budget(&row)?, super::quotas::stored_policy(&row)?)))
        .transpose()
}

/// The team's budget; `None`: no such team.
pub async fn budget(db: &impl ConnectionTrait, team_id: i64) -> Result<Option<Budget>, DbErr> {
    team::Entity::find_by_id(team_id)
        .one(db)
        .await?
        .map(|row| stored_budget(&row))
        .transpose()
}

fn stored_budget(row: &team::Model) -> Result<Budget, DbErr> {
    Ok(Budget {
        limit: row.budget_minor.map(Money::from_minor),
        mode: BudgetMode::parse(&row.budget_mode)
            .ok_or_else(|| DbErr::Custom(format!("teams.id={}: budget_mode", row.id)))?,
        warn_percent: u8::try_from(row.budget_warn_percent)
            .map_err(|_| DbErr::Custom(format!("teams.id={}: budget_warn_percent", row.id)))?,
    })
}

/// Stores the team's budget.
pub async fn set_budget(
    db: &impl ConnectionTrait,
    team_id: i64,
    budget: &Budget,
) -> Result<(), DbErr> {
    team::Entity::update_many()
        .col_expr(
            team::Column::BudgetMinor,
            Expr::value(budget.limit.map(Money::minor)),
        )
        .col_expr(team::Column::BudgetMode, Expr::value(budget.mode.as_str()))
        .col_expr(
            team::Column::BudgetWarnPercent,
            Expr::value(i16::from(budget.warn_percent)),
        )
        .filter(team::Column::Id.eq(team_id))
        .exec(db)
        .await?;
    Ok(())
}

/// What the team's confirmed bookings starting in `[from, to)` cost: what counts against its
/// budget for that month.
pub async fn month_spend(
    db: &impl ConnectionTrait,
    team_id: i64,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Money, DbErr> {
    let prices: Vec<i64> = reservation::Entity::find()
        .select_only()
        .column(reservation::Column::PriceMinor)
        .filter(reservation::Column::TeamId.eq(team_id))
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .filter(reservation::Column::StartAt.gte(from))
        .filter(reservation::Column::StartAt.lt(to))
        .into_tuple()
        .all(db)
        .await?;
    Ok(Money::from_minor(prices.into_iter().sum()))
}
