//! Server functions for environment profiles: the list, one profile with its versions, saving
//! (create or edit: a changed spec makes a new version), delete, and the default profile.

// A server function's arguments are its form's fields (the browser build's generated client
// takes them one by one too).
#![allow(clippy::too_many_arguments)]

use crate::domain::profile::{Dotfile, Profile, ProfileVersion};
use crate::error::AppError;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// What the profiles page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfilesPage {
    /// The caller's profiles and those shared with their teams, by name.
    pub profiles: Vec<Profile>,
    /// The caller's teams (id, name): whom a profile can be shared with.
    pub teams: Vec<(i64, String)>,
    /// The caller's workspace.
    pub workspace: WorkspaceSummary,
}

/// The workspace that follows the caller, as the profiles page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceSummary {
    /// The directory on the nodes (relative to the home, or absolute).
    pub dir: String,
    /// On a filesystem every node shares: nothing is saved or restored.
    pub shared: bool,
    /// The quota, in bytes.
    pub quota_bytes: u64,
    /// The latest save: when (in the caller's zone, `YYYY-MM-DD HH:MM`), bytes, files, bytes new.
    pub last: Option<(String, i64, i64, i64)>,
}

/// One profile with its versions, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileDetail {
    /// The profile.
    pub profile: Profile,
    /// Its versions.
    pub versions: Vec<ProfileVersion>,
    /// The caller's teams.
    pub teams: Vec<(i64, String)>,
    /// The caller's zone over the versions' times.
    pub zone: crate::domain::zone::ZoneOffsets,
}

#[cfg(feature = "ssr")]
async fn teams_of(call: &crate::api::context::Call) -> Result<Vec<(i64, String)>, AppError> {
    crate::backend::env_profiles::teams_to_share_with(&call.state, &call.actor).await
}

/// The caller's profiles.
#[server(endpoint = "get_profiles_page")]
pub async fn get_profiles_page() -> Result<ProfilesPage, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        let profiles = crate::backend::env_profiles::list(&call.state, &call.actor).await?;
        let teams = teams_of(&call).await?;
        let usage = crate::backend::workspaces::usage(&call.state, &call.actor).await?;
        let last = usage.snapshots.first().map(|s| {
            let zone = call.zone_over(s.saved_at, s.saved_at);
            (
                crate::domain::time_text::date_minute(zone.local(s.saved_at)),
                s.bytes,
                s.files,
                s.new_bytes,
            )
        });
        Ok(ProfilesPage {
            profiles,
            teams,
            workspace: WorkspaceSummary {
                dir: usage.dir,
                shared: usage.shared,
                quota_bytes: usage.quota_bytes,
                last,
            },
        })
    })
    .await
}

/// Profile `id` with its versions.
#[server(endpoint = "get_profile_page")]
pub async fn get_profile_page(id: i64) -> Result<ProfileDetail, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        let (profile, versions) =
            crate::backend::env_profiles::get(&call.state, &call.actor, id).await?;
        let teams = teams_of(&call).await?;
        let first = versions.last().map_or(call.now, |v| v.created_at);
        let zone = call.zone_over(first, call.now);
        Ok(ProfileDetail {
            profile,
            versions,
            teams,
            zone,
        })
    })
    .await
}

/// Saves a profile (`id` empty: a new one) from the editor; answers its id.
#[server(endpoint = "save_profile")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn save_profile(
    #[server(default)] id: Option<i64>,
    name: String,
    #[server(default)] team_id: String,
    #[server(default)] variables: String,
    #[server(default)] python: String,
    #[server(default)] packages: String,
    #[server(default)] setup_script: String,
    #[server(default)] dotfiles: Vec<Dotfile>,
    #[server(default)] default: Option<String>,
) -> Result<i64, AppError> {
    use crate::api::context::signed_in;
    use crate::backend::env_profiles::{self, ProfileForm};
    signed_in(|call| async move {
        let body = ProfileForm {
            name,
            team_id,
            variables,
            python,
            packages,
            setup_script,
            dotfiles,
            default,
        }
        .parse()?;
        let profile = match id {
            Some(id) => env_profiles::update(&call.state, &call.actor, id, &body).await?,
            None => env_profiles::create(&call.state, &call.actor, &body).await?,
        };
        Ok(profile.id)
    })
    .await
}

/// Deletes profile `id` (its owner); back to the profiles page.
#[server(endpoint = "forms/profile_delete")]
pub async fn delete_profile(id: i64) -> Result<(), AppError> {
    let call = crate::api::context::signed_in(|call| async move { Ok(call) }).await?;
    let result = crate::backend::env_profiles::archive(&call.state, &call.actor, id)
        .await
        .map(|()| ("done", "deleted".to_owned()));
    crate::api::forms::back_to("/profiles", result)
}

/// Makes profile `id` the caller's default (`id` empty: none); back to the profiles page.
#[server(endpoint = "forms/profile_default")]
pub async fn set_default_profile(#[server(default)] id: String) -> Result<(), AppError> {
    let call = crate::api::context::signed_in(|call| async move { Ok(call) }).await?;
    let result = async {
        let id = crate::backend::input::whole_number("id", Some(&id))?;
        crate::backend::env_profiles::set_default(&call.state, &call.actor, id).await
    }
    .await
    .map(|()| ("done", "default".to_owned()));
    crate::api::forms::back_to("/profiles", result)
}
