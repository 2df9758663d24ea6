//! Environment profiles as a service: a user's own profiles and those their teams share, edits
//! that make new versions, the default profile, the version a booking uses, and what node agents
//! report about preparing bookings' environments (with a notice when a build fails).

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::entity::{env_preparation, env_profile, env_profile_version};
use crate::backend::notify;
use crate::backend::state::AppState;
use crate::domain::notify::NewEvent;
use crate::domain::problem::Problem;
use crate::domain::profile::{
    self, Dotfile, PrepReport, PrepState, Preparation, Profile, ProfileSpec, ProfileVersion,
};
use crate::domain::user::UserSummary;
use crate::error::AppError;
use chrono::{DateTime, Utc};
use sea_orm::ConnectionTrait;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Most profiles one user may keep (archived ones do not count).
pub const MAX_PROFILES: usize = 50;

/// A profile as the JSON API sends it: a name, the team it is shared with, and the spec's parts.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProfileBody {
    /// Its name.
    pub name: String,
    /// Share it with this team's members.
    #[serde(default)]
    pub team_id: Option<i64>,
    /// The spec.
    #[serde(flatten)]
    pub spec: ProfileSpec,
    /// Make it the sender's default profile.
    #[serde(default)]
    pub default: bool,
}

/// A profile as the page's form sends it: the spec's parts as text.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProfileForm {
    /// Its name.
    pub name: String,
    /// A team id, or empty for none.
    #[serde(default)]
    pub team_id: String,
    /// `NAME=value` lines.
    #[serde(default)]
    pub variables: String,
    /// A Python version or empty.
    #[serde(default)]
    pub python: String,
    /// A requirements list.
    #[serde(default)]
    pub packages: String,
    /// A bash script.
    #[serde(default)]
    pub setup_script: String,
    /// Dotfiles (rows with an empty path and content are dropped).
    #[serde(default)]
    pub dotfiles: Vec<Dotfile>,
    /// `on` to make it the default.
    #[serde(default)]
    pub default: Option<String>,
}

impl ProfileForm {
    /// The form checked, as the API's body.
    pub fn parse(&self) -> Result<ProfileBody, AppError> {
        let spec = ProfileSpec::parse(
            &self.variables,
            &self.python,
            &self.packages,
            &self.setup_script,
            self.dotfiles.clone(),
        )
        .map_err(|problem| AppError::invalid(field_of(&problem), problem))?;
        let team_id = match self.team_id.trim() {
            "" => None,
            raw => Some(raw.parse::<i64>().map_err(|_| {
                AppError::invalid(
                    "team_id",
                    Problem::Unreadable {
                        detail: format!("`{raw}` is not a team"),
                    },
                )
            })?),
        };
        Ok(ProfileBody {
            name: self.name.clone(),
            team_id,
            spec,
            default: self.default.is_some(),
        })
    }
}

/// The form field a problem is about.
fn field_of(problem: &Problem) -> &'static str {
    match problem {
        Problem::BadVariable { .. } | Problem::ReservedVariable { .. } => "variables",
        Problem::BadPythonVersion { .. } => "python",
        Problem::BadRequirement { .. } => "packages",
        Problem::BadDotfilePath { .. } => "dotfiles",
        Problem::ProfileName { .. } => "name",
        _ => "profile",
    }
}

/// The teams `user_id` belongs to.
async fn teams_of(db: &impl ConnectionTrait, user_id: i64) -> Result<Vec<i64>, AppError> {
    Ok(db::teams::memberships_of(db, user_id)
        .await?
        .into_iter()
        .map(|m| m.team_id)
        .collect())
}

/// Whether `user_id` (member of `teams`) may use `row`.
fn usable(row: &env_profile::Model, user_id: i64, teams: &[i64]) -> bool {
    !row.archived && (row.owner_id == user_id || row.team_id.is_some_and(|t| teams.contains(&t)))
}

fn version_of(row: env_profile_version::Model) -> Result<ProfileVersion, AppError> {
    let spec: ProfileSpec = serde_json::from_str(&row.spec).map_err(|err| {
        AppError::from(sea_orm::DbErr::Custom(format!(
            "env_profile_versions.id={}: {err}",
            row.id
        )))
    })?;
    Ok(ProfileVersion {
        id: row.id,
        number: row.number,
        hash: row.content_hash,
        spec,
        created_at: row.created_at,
    })
}

/// `rows` as `user_id` sees them, each with its latest version.
async fn profiles_of(
    db: &impl ConnectionTrait,
    user_id: i64,
    rows: Vec<env_profile::Model>,
) -> Result<Vec<Profile>, AppError> {
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let mut latest: HashMap<i64, env_profile_version::Model> =
        db::env_profiles::latest_versions(db, &ids)
            .await?
            .into_iter()
            .map(|v| (v.profile_id, v))
            .collect();
    let mut owners: Vec<i64> = rows.iter().map(|r| r.owner_id).collect();
    owners.sort_unstable();
    owners.dedup();
    let owners: HashMap<i64, String> = db::env_profiles::user_names(db, &owners)
        .await?
        .into_iter()
        .collect();
    let mut teams: Vec<i64> = rows.iter().filter_map(|r| r.team_id).collect();
    teams.sort_unstable();
    teams.dedup();
    let teams: HashMap<i64, String> = db::env_profiles::team_names(db, &teams)
        .await?
        .into_iter()
        .collect();
    let default = db::env_profiles::default_of(db, user_id).await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let Some(version) = latest.remove(&row.id) else {
            continue;
        };
        out.push(Profile {
            id: row.id,
            name: row.name,
            owner_id: row.owner_id,
            owner_name: owners.get(&row.owner_id).cloned().unwrap_or_default(),
            team_id: row.team_id,
            team_name: row.team_id.and_then(|t| teams.get(&t).cloned()),
            is_default: default == Some(row.id),
            editable: row.owner_id == user_id,
            version: version_of(version)?,
        });
    }
    Ok(out)
}

/// The teams (id, name) the actor may share a profile with: those they belong to.
pub async fn teams_to_share_with(
    state: &AppState,
    actor: &Actor,
) -> Result<Vec<(i64, String)>, AppError> {
    Ok(actor
        .memberships(&state.db)
        .await?
        .into_iter()
        .map(|m| (m.team_id, m.team_name))
        .collect())
}

/// The profiles the actor may book with: their own and their teams' shared ones, by name.
pub async fn list(state: &AppState, actor: &Actor) -> Result<Vec<Profile>, AppError> {
    let teams = teams_of(&state.db, actor.user.id).await?;
    let rows = db::env_profiles::visible_to(&state.db, actor.user.id, &teams).await?;
    profiles_of(&state.db, actor.user.id, rows).await
}

/// Profile `id` with all its versions (newest first); `NotFound` unless the actor may use it.
pub async fn get(
    state: &AppState,
    actor: &Actor,
    id: i64,
) -> Result<(Profile, Vec<ProfileVersion>), AppError> {
    let row = visible(&state.db, actor, id).await?;
    let profile = profiles_of(&state.db, actor.user.id, vec![row])
        .await?
        .pop()
        .ok_or_else(|| AppError::NotFound(format!("profile {id}")))?;
    let versions = db::env_profiles::versions(&state.db, id)
        .await?
        .into_iter()
        .map(version_of)
        .collect::<Result<_, _>>()?;
    Ok((profile, versions))
}

async fn visible(
    db: &impl ConnectionTrait,
    actor: &Actor,
    id: i64,
) -> Result<env_profile::Model, AppError> {
    let teams = teams_of(db, actor.user.id).await?;
    match db::env_profiles::profile(db, id).await? {
        Some(row) if usable(&row, actor.user.id, &teams) => Ok(row),
        _ => Err(AppError::NotFound(format!("profile {id}"))),
    }
}

/// Checks the name and that the actor may share with the team.
async fn checked(
    db: &impl ConnectionTrait,
    actor: &Actor,
    body: &ProfileBody,
) -> Result<String, AppError> {
    let name =
        profile::profile_name(&body.name).map_err(|problem| AppError::invalid("name", problem))?;
    body.spec
        .check()
        .map_err(|problem| AppError::invalid(field_of(&problem), problem))?;
    if let Some(team_id) = body.team_id {
        crate::backend::team_access::access(db, actor, team_id).await?;
    }
    Ok(name)
}

/// A new profile (version 1) of the actor's.
pub async fn create(
    state: &AppState,
    actor: &Actor,
    body: &ProfileBody,
) -> Result<Profile, AppError> {
    let name = checked(&state.db, actor, body).await?;
    let now = state.now();
    let txn = db::begin_write(&state.db).await?;
    let own = db::env_profiles::visible_to(&txn, actor.user.id, &[])
        .await?
        .into_iter()
        .filter(|p| p.owner_id == actor.user.id)
        .count();
    if own >= MAX_PROFILES {
        return Err(AppError::invalid(
            "name",
            Problem::TooMany { max: MAX_PROFILES },
        ));
    }
    let row =
        db::env_profiles::insert_profile(&txn, actor.user.id, body.team_id, &name, now).await?;
    let spec = serde_json::to_string(&body.spec).map_err(|_| AppError::Internal)?;
    db::env_profiles::insert_version(&txn, row.id, 1, &spec, &body.spec.hash(), now).await?;
    if body.default {
        db::env_profiles::set_default(&txn, actor.user.id, Some(row.id)).await?;
    }
    txn.commit().await?;
    tracing::info!(profile.id = row.id, "environment profile created");
    Ok(get(state, actor, row.id).await?.0)
}

/// Changes profile `id` (its owner only): the name and team apply at once; a changed spec makes
/// a new version, which bookings not yet started take (started ones keep theirs), the owner's
/// and those of the members of the team it is shared with now (others keep the version they
/// booked).
pub async fn update(
    state: &AppState,
    actor: &Actor,
    id: i64,
    body: &ProfileBody,
) -> Result<Profile, AppError> {
    let row = visible(&state.db, actor, id).await?;
    if row.owner_id != actor.user.id {
        return Err(AppError::Forbidden);
    }
    let name = checked(&state.db, actor, body).await?;
    let now = state.now();
    let txn = db::begin_write(&state.db).await?;
    let row = db::env_profiles::lock_profile(&txn, id)
        .await?
        .filter(|r| !r.archived && r.owner_id == actor.user.id)
        .ok_or_else(|| AppError::NotFound(format!("profile {id}")))?;
    db::env_profiles::update_profile(&txn, row.id, &name, body.team_id).await?;
    let latest = db::env_profiles::latest_versions(&txn, &[row.id]).await?;
    let hash = body.spec.hash();
    let number = latest.first().map_or(0, |v| v.number);
    if latest.first().map(|v| v.content_hash.as_str()) != Some(hash.as_str()) {
        let spec = serde_json::to_string(&body.spec).map_err(|_| AppError::Internal)?;
        let version =
            db::env_profiles::insert_version(&txn, row.id, number + 1, &spec, &hash, now).await?;
        // Bookings that have not started take the new version (a fix applies before the start).
        let holders = (actor.user.id, body.team_id);
        let moved = db::env_profiles::move_upcoming(&txn, row.id, version.id, holders, now).await?;
        tracing::info!(
            profile.id = row.id,
            version = number + 1,
            moved,
            "environment profile changed"
        );
    }
    if body.default {
        db::env_profiles::set_default(&txn, actor.user.id, Some(row.id)).await?;
    }
    txn.commit().await?;
    Ok(get(state, actor, id).await?.0)
}

/// Deletes profile `id` (its owner only): no longer offered; bookings keep their version.
pub async fn archive(state: &AppState, actor: &Actor, id: i64) -> Result<(), AppError> {
    let row = visible(&state.db, actor, id).await?;
    if row.owner_id != actor.user.id {
        return Err(AppError::Forbidden);
    }
    let txn = db::begin_write(&state.db).await?;
    db::env_profiles::archive(&txn, id).await?;
    txn.commit().await?;
    Ok(())
}

/// Makes profile `id` the actor's default (`None`: no default).
pub async fn set_default(state: &AppState, actor: &Actor, id: Option<i64>) -> Result<(), AppError> {
    if let Some(id) = id {
        visible(&state.db, actor, id).await?;
    }
    db::env_profiles::set_default(&state.db, actor.user.id, id).await?;
    Ok(())
}

/// The version a booking by `owner` uses: the latest version of `requested` (which the owner
/// must be able to use: 422 otherwise), none for `requested` 0, or the latest version of the
/// owner's default profile (as read with the owner) when none is named (nothing when the default
/// is gone).
pub async fn for_booking(
    db: &impl ConnectionTrait,
    owner: &UserSummary,
    requested: Option<i64>,
) -> Result<Option<i64>, AppError> {
    if requested == Some(0) {
        // Explicitly none (the booking panel's "no profile").
        return Ok(None);
    }
    let owner_id = owner.id;
    // The profile asked for, else the holder's default; without either nothing more is read.
    let (id, asked) = match requested.or(owner.default_profile_id) {
        Some(id) => (id, requested.is_some()),
        None => return Ok(None),
    };
    let usable_here = match db::env_profiles::profile(db, id).await? {
        Some(row) => {
            // The holder's teams matter only for another member's team profile.
            let teams = if row.team_id.is_some() && row.owner_id != owner_id {
                teams_of(db, owner_id).await?
            } else {
                Vec::new()
            };
            usable(&row, owner_id, &teams)
        }
        None => false,
    };
    if !usable_here {
        // A default no longer usable (archived, or its team left) books without a profile.
        return if asked {
            Err(AppError::invalid(
                "profile",
                Problem::Unreadable {
                    detail: format!("profile {id} is not one you can use"),
                },
            ))
        } else {
            Ok(None)
        };
    }
    Ok(db::env_profiles::latest_versions(db, &[id])
        .await?
        .first()
        .map(|v| v.id))
}

/// The specs of versions `ids` (for node schedules), by version id.
pub async fn specs(
    db: &impl ConnectionTrait,
    ids: &[i64],
) -> Result<HashMap<i64, (String, ProfileVersion)>, AppError> {
    let mut out = HashMap::new();
    for (version, row) in db::env_profiles::versions_with_profiles(db, ids).await? {
        out.insert(version.id, (row.name, version_of(version)?));
    }
    Ok(out)
}

/// Reservation `reservation`'s environment as its page shows it (`None` without a profile).
pub async fn preparation(
    db: &impl ConnectionTrait,
    reservation: &crate::domain::reservation::Reservation,
) -> Result<Option<Preparation>, AppError> {
    let Some(booked) = reservation.profile.clone() else {
        return Ok(None);
    };
    let row = db::env_profiles::preparation(db, reservation.id)
        .await?
        .filter(|row| row.content_hash == booked.hash);
    Ok(Some(match row {
        Some(row) => Preparation {
            state: PrepState::parse(&row.state).unwrap_or(PrepState::Waiting),
            cached: row.cached,
            at: Some(row.at),
            log: row.log,
            profile: booked,
        },
        None => Preparation {
            profile: booked,
            state: PrepState::Waiting,
            cached: false,
            at: None,
            log: String::new(),
        },
    }))
}

/// Keeps what node `node_id`'s agent reported about its bookings' environments: only about
/// reservations on that node and the version they use; a failed build is told to the holder
/// once per version.
pub async fn store_reports(
    txn: &sea_orm::DatabaseTransaction,
    node_id: i64,
    reports: &[PrepReport],
    now: DateTime<Utc>,
) -> Result<usize, AppError> {
    let mut kept = 0;
    for report in reports {
        if !profile::valid_hash(&report.hash) {
            continue;
        }
        let Some(Some(version_id)) =
            db::env_profiles::reservation_on_node(txn, report.reservation_id, node_id).await?
        else {
            continue;
        };
        let versions = db::env_profiles::versions_with_profiles(txn, &[version_id]).await?;
        let Some((version, row)) = versions.first() else {
            continue;
        };
        if version.content_hash != report.hash {
            continue;
        }
        let before = db::env_profiles::preparation(txn, report.reservation_id).await?;
        if before
            .as_ref()
            .is_some_and(|b| b.content_hash == report.hash && b.at > report.at)
        {
            continue;
        }
        let log = profile::log_tail(&report.log).to_owned();
        db::env_profiles::upsert_preparation(
            txn,
            env_preparation::Model {
                reservation_id: report.reservation_id,
                node_id,
                content_hash: report.hash.clone(),
                state: report.state.as_str().to_owned(),
                cached: report.cached,
                log: log.clone(),
                at: report.at.min(now),
            },
        )
        .await?;
        kept += 1;
        if report.state == PrepState::Failed
            && let Some(view) = db::reservations::view_of(txn, report.reservation_id, now).await?
        {
            let event = NewEvent::environment_failed(&view, &row.name, &report.hash, &log, now);
            notify::record(txn, &[event]).await?;
        }
    }
    Ok(kept)
}
