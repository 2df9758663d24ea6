//! `/profiles` and `/profiles/{id}`: environment profiles — what a session on a node needs
//! (variables, a Python environment, a setup script, dotfiles), prepared by the node's agent
//! before each booking starts. The list is rendered on the server; the editor is an island, so
//! a refused save keeps everything typed and shows what is wrong.

use crate::api::env_profiles::{
    DeleteProfile, ProfileDetail, ProfilesPage as ProfilesData, SaveProfile, SetDefaultProfile,
    get_profile_page, get_profiles_page,
};
use crate::components::error::{ErrorPanel, form_outcome};
use crate::domain::profile::{Dotfile, Profile, ProfileSpec};
use crate::domain::time_text::date_minute;
use crate::i18n::*;
use leptos::either::Either;
use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

fn done_text(i18n: leptos_i18n::I18nContext<Locale>, done: &str) -> String {
    match done {
        "deleted" => t_string!(i18n, profiles_done_deleted),
        "default" => t_string!(i18n, profiles_done_default),
        _ => t_string!(i18n, profiles_done_saved),
    }
    .to_string()
}

/// The profiles page.
#[component]
pub fn ProfilesPage() -> impl IntoView {
    let i18n = use_i18n();
    let (done, error) = use_query_map().with_untracked(|q| (q.get("done"), q.get("error")));
    let flash = form_outcome(done.map(|d| done_text(i18n, &d)), error);
    let data = Resource::new(|| (), |()| get_profiles_page());
    view! {
        <Title text=t_string!(i18n, profiles_title).to_string() />
        <section class="profiles">
            <h1>{t!(i18n, profiles_title)}</h1>
            <p class="lede">{t!(i18n, profiles_intro)}</p>
            {flash}
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    data.get()
                        .map(|result| match result {
                            Ok(data) => Either::Left(view! { <ProfileList data /> }),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

#[component]
fn ProfileList(data: ProfilesData) -> impl IntoView {
    let i18n = use_i18n();
    let ProfilesData {
        profiles,
        teams,
        workspace,
    } = data;
    let empty = profiles.is_empty();
    let has_default = profiles.iter().any(|p| p.is_default);
    let rows = profiles
        .into_iter()
        .map(|profile| {
            let shared = profile
                .team_name
                .clone()
                .unwrap_or_else(|| t_string!(i18n, profiles_private).to_string());
            let id = profile.id;
            let parts = summary(i18n, &profile.version.spec);
            view! {
                <tr>
                    <td>
                        <a href=format!("/profiles/{id}")>{profile.name.clone()}</a>
                        {profile.is_default.then(|| view! { " " <span class="badge">{t!(i18n, profiles_default_badge)}</span> })}
                    </td>
                    <td class="num">{profile.version.number}</td>
                    <td>{parts}</td>
                    <td>{shared}</td>
                    <td>{profile.owner_name.clone()}</td>
                    <td>
                        {(!profile.is_default).then(|| view! {
                            <form method="post" action=SetDefaultProfile::PATH class="inline-form">
                                <input type="hidden" name="id" value=id />
                                <button type="submit" class="button-secondary">{t!(i18n, profiles_make_default)}</button>
                            </form>
                        })}
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        {if empty {
            Either::Left(view! { <p class="empty">{t!(i18n, profiles_empty)}</p> })
        } else {
            Either::Right(view! {
                <div class="table-scroll">
                    <table class="token-table profile-table">
                        <thead>
                            <tr>
                                <th scope="col">{t!(i18n, profiles_name)}</th>
                                <th scope="col" class="num">{t!(i18n, profiles_version)}</th>
                                <th scope="col">{t!(i18n, profiles_contents)}</th>
                                <th scope="col">{t!(i18n, profiles_shared)}</th>
                                <th scope="col">{t!(i18n, profiles_owner)}</th>
                                <th scope="col"><span class="visually-hidden">{t!(i18n, profiles_actions)}</span></th>
                            </tr>
                        </thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
                {has_default.then(|| view! {
                    <form method="post" action=SetDefaultProfile::PATH class="inline-form">
                        <input type="hidden" name="id" value="" />
                        <button type="submit" class="button-secondary">{t!(i18n, profiles_no_default)}</button>
                    </form>
                })}
            })
        }}
        <WorkspaceSection workspace />
        <h2>{t!(i18n, profiles_new)}</h2>
        <ProfileEditor profile=None teams />
    }
}

/// "1.5 GiB", "320.0 MiB", "12 KiB".
fn size_text(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if b >= KIB * KIB * KIB {
        format!("{:.1} GiB", b / (KIB * KIB * KIB))
    } else if b >= KIB * KIB {
        format!("{:.1} MiB", b / (KIB * KIB))
    } else {
        format!("{} KiB", bytes.div_ceil(1024))
    }
}

/// Where the caller's workspace is on the nodes, its last save and the quota.
#[component]
fn WorkspaceSection(workspace: crate::api::env_profiles::WorkspaceSummary) -> impl IntoView {
    let i18n = use_i18n();
    let dir = if workspace.dir.starts_with('/') {
        workspace.dir.clone()
    } else {
        format!("~/{}", workspace.dir)
    };
    let quota = size_text(workspace.quota_bytes);
    let body = if workspace.shared {
        Either::Left(view! { <p>{t!(i18n, workspace_shared, dir)}</p> })
    } else {
        let last = match workspace.last {
            Some((at, bytes, files, new_bytes)) => {
                let size = size_text(u64::try_from(bytes).unwrap_or(0));
                let new = size_text(u64::try_from(new_bytes).unwrap_or(0));
                t_string!(i18n, workspace_last_saved, at, size, files, new).to_string()
            }
            None => t_string!(i18n, workspace_never_saved).to_string(),
        };
        Either::Right(view! {
            <p>{t!(i18n, workspace_follows, dir)}</p>
            <p class="workspace-last">{last}</p>
            <p class="hint">{t!(i18n, workspace_quota, quota)}</p>
        })
    };
    view! {
        <section class="workspace-summary" aria-labelledby="workspace-heading">
            <h2 id="workspace-heading">{t!(i18n, workspace_title)}</h2>
            {body}
        </section>
    }
}

/// "2 variables · Python 3.11, 3 packages · setup script · 1 dotfile".
fn summary(i18n: leptos_i18n::I18nContext<Locale>, spec: &ProfileSpec) -> String {
    let mut parts = Vec::new();
    if !spec.variables.is_empty() {
        parts.push(
            t_string!(i18n, profiles_sum_variables, count = spec.variables.len()).to_string(),
        );
    }
    if spec.has_python() {
        let python = spec.python.clone().unwrap_or_else(|| "3".to_owned());
        parts.push(
            t_string!(
                i18n,
                profiles_sum_python,
                version = python,
                count = spec.packages.len()
            )
            .to_string(),
        );
    }
    if !spec.setup_script.trim().is_empty() {
        parts.push(t_string!(i18n, profiles_sum_script).to_string());
    }
    if !spec.dotfiles.is_empty() {
        parts.push(t_string!(i18n, profiles_sum_dotfiles, count = spec.dotfiles.len()).to_string());
    }
    if parts.is_empty() {
        t_string!(i18n, profiles_sum_empty).to_string()
    } else {
        parts.join(" · ")
    }
}

/// One profile: the editor (its owner) or its content (a team member), and its versions.
#[component]
pub fn ProfileDetailPage() -> impl IntoView {
    let i18n = use_i18n();
    let params = use_params_map();
    let id = params
        .read_untracked()
        .get("id")
        .and_then(|raw| raw.parse::<i64>().ok())
        .unwrap_or(0);
    let (done, error) = use_query_map().with_untracked(|q| (q.get("done"), q.get("error")));
    let flash = form_outcome(done.map(|d| done_text(i18n, &d)), error);
    let data = Resource::new(move || id, get_profile_page);
    view! {
        <Title text=t_string!(i18n, profiles_title).to_string() />
        <section class="profiles">
            <p class="back"><a href="/profiles">{t!(i18n, profiles_back)}</a></p>
            {flash}
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    data.get()
                        .map(|result| match result {
                            Ok(detail) => Either::Left(view! { <ProfileDetailView detail /> }),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

#[component]
fn ProfileDetailView(detail: ProfileDetail) -> impl IntoView {
    let i18n = use_i18n();
    let ProfileDetail {
        profile,
        versions,
        teams,
        zone,
    } = detail;
    let id = profile.id;
    let editable = profile.editable;
    let zone_name = zone.name.clone();
    let versions = versions
        .into_iter()
        .map(|v| {
            let parts = summary(i18n, &v.spec);
            view! {
                <tr>
                    <td class="num">{v.number}</td>
                    <td>{date_minute(zone.local(v.created_at))}</td>
                    <td>{parts}</td>
                    <td><code class="fingerprint">{v.hash.chars().take(12).collect::<String>()}</code></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h1>{profile.name.clone()}</h1>
        <p class="lede">
            {t!(i18n, profiles_by, owner = profile.owner_name.clone())}
            {profile.team_name.clone().map(|team| view! { " · " {t!(i18n, profiles_shared_with, team = team)} })}
        </p>
        {if editable {
            Either::Left(view! {
                <p class="hint">{t!(i18n, profiles_edit_hint)}</p>
                <ProfileEditor profile=Some(profile.clone()) teams />
                <form method="post" action=DeleteProfile::PATH class="inline-form danger-zone">
                    <input type="hidden" name="id" value=id />
                    <button type="submit" class="button-danger">{t!(i18n, profiles_delete)}</button>
                </form>
            })
        } else {
            Either::Right(view! { <ProfileContent spec=profile.version.spec.clone() /> })
        }}
        <h2>{t!(i18n, profiles_versions)}</h2>
        <div class="table-scroll">
            <table class="token-table">
                <thead>
                    <tr>
                        <th scope="col" class="num">{t!(i18n, profiles_version)}</th>
                        <th scope="col">{t!(i18n, profiles_made)} " (" {zone_name} ")"</th>
                        <th scope="col">{t!(i18n, profiles_contents)}</th>
                        <th scope="col">{t!(i18n, profiles_hash)}</th>
                    </tr>
                </thead>
                <tbody>{versions}</tbody>
            </table>
        </div>
    }
}

/// A profile's content, read only (a team member's view of a shared profile).
#[component]
fn ProfileContent(spec: ProfileSpec) -> impl IntoView {
    let i18n = use_i18n();
    let dotfiles = spec
        .dotfiles
        .iter()
        .map(|d| view! { <h3><code>{format!("~/{}", d.path)}</code></h3> <pre><code>{d.content.clone()}</code></pre> })
        .collect_view();
    view! {
        <h2>{t!(i18n, profiles_variables)}</h2>
        <pre><code>{spec.variables_text()}</code></pre>
        <h2>{t!(i18n, profiles_python)}</h2>
        <p>{spec.python.clone().unwrap_or_default()}</p>
        <pre><code>{spec.packages_text()}</code></pre>
        <h2>{t!(i18n, profiles_setup_script)}</h2>
        <pre><code>{spec.setup_script.clone()}</code></pre>
        <h2>{t!(i18n, profiles_dotfiles)}</h2>
        {dotfiles}
    }
}

/// Empty rows offered for new dotfiles.
const NEW_DOTFILE_ROWS: usize = 2;

/// The editor (an island: a refused save keeps what was typed, with the reason).
#[cfg_attr(feature = "hydrate", island(lazy))]
#[cfg_attr(not(feature = "hydrate"), island)]
pub fn ProfileEditor(profile: Option<Profile>, teams: Vec<(i64, String)>) -> impl IntoView {
    let i18n = use_i18n();
    let save = ServerAction::<SaveProfile>::new();
    let id = profile.as_ref().map(|p| p.id);
    let spec = profile
        .as_ref()
        .map(|p| p.version.spec.clone())
        .unwrap_or_default();
    let name = profile.as_ref().map(|p| p.name.clone()).unwrap_or_default();
    let team = profile.as_ref().and_then(|p| p.team_id);
    let is_default = profile.as_ref().is_some_and(|p| p.is_default);
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    // Saved: to the profile's page, which shows the new version.
    Effect::new(move |_| {
        if let Some(Ok(saved)) = save.value().get() {
            #[cfg(feature = "hydrate")]
            {
                let _ = window()
                    .location()
                    .assign(&format!("/profiles/{saved}?done=saved"));
            }
            #[cfg(not(feature = "hydrate"))]
            let _ = saved;
        }
    });
    let mut rows: Vec<Dotfile> = spec.dotfiles.clone();
    rows.extend((0..NEW_DOTFILE_ROWS).map(|_| Dotfile {
        path: String::new(),
        content: String::new(),
    }));
    let dotfiles = rows
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            view! {
                <div class="dotfile-row">
                    <label>
                        {t!(i18n, profiles_dotfile_path)}
                        <input type="text" name=format!("dotfiles[{i}][path]") value=d.path placeholder=".bashrc.d/tools.sh" maxlength="255" />
                    </label>
                    <label>
                        {t!(i18n, profiles_dotfile_content)}
                        <textarea name=format!("dotfiles[{i}][content]") rows="4" spellcheck="false">{d.content}</textarea>
                    </label>
                </div>
            }
        })
        .collect_view();
    let team_options = teams
        .into_iter()
        .map(|(team_id, team_name)| {
            view! { <option value=team_id selected=team == Some(team_id)>{team_name}</option> }
        })
        .collect_view();
    view! {
        <ActionForm action=save attr:class="profile-editor" attr:data-hydrated=move || hydrated.get().to_string()>
            {id.map(|id| view! { <input type="hidden" name="id" value=id /> })}
            <label>
                {t!(i18n, profiles_name)}
                <input type="text" name="name" value=name required maxlength="64" />
            </label>
            <label>
                {t!(i18n, profiles_shared)}
                <select name="team_id">
                    <option value="" selected=team.is_none()>{t!(i18n, profiles_private)}</option>
                    {team_options}
                </select>
            </label>
            <label>
                {t!(i18n, profiles_variables)}
                <span class="hint">{t!(i18n, profiles_variables_hint)}</span>
                <textarea name="variables" rows="4" spellcheck="false" placeholder="HF_HOME=/data/hf">{spec.variables_text()}</textarea>
            </label>
            <fieldset>
                <legend>{t!(i18n, profiles_python)}</legend>
                <label>
                    {t!(i18n, profiles_python_version)}
                    <input type="text" name="python" value=spec.python.clone().unwrap_or_default() placeholder="3.11" maxlength="5" />
                </label>
                <label>
                    {t!(i18n, profiles_packages)}
                    <span class="hint">{t!(i18n, profiles_packages_hint)}</span>
                    <textarea name="packages" rows="5" spellcheck="false" placeholder="torch==2.5.1">{spec.packages_text()}</textarea>
                </label>
            </fieldset>
            <label>
                {t!(i18n, profiles_setup_script)}
                <span class="hint">{t!(i18n, profiles_setup_hint)}</span>
                <textarea name="setup_script" rows="6" spellcheck="false" class="code">{spec.setup_script.clone()}</textarea>
            </label>
            <fieldset>
                <legend>{t!(i18n, profiles_dotfiles)}</legend>
                <span class="hint">{t!(i18n, profiles_dotfiles_hint)}</span>
                {dotfiles}
            </fieldset>
            <label class="checkbox">
                <input type="checkbox" name="default" checked=is_default />
                {t!(i18n, profiles_make_default)}
            </label>
            <button type="submit" disabled=move || save.pending().get()>{t!(i18n, profiles_save)}</button>
        </ActionForm>
        {move || save.value().get().and_then(Result::err).map(|error| view! { <ErrorPanel error /> })}
    }
}
