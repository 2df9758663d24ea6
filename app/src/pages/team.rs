//! `/teams/{id}`: a team's page. Members see who belongs; team admins (and platform admins) run
//! the team from it: invite by e-mail, withdraw invitations, change roles, remove members, and
//! read the team's recent audit entries. Rendered on the server only (no island); every form
//! posts to `POST /teams/{id}`, which comes back here with `done=` or `error=`.

use crate::api::teams::{TeamPage as TeamData, get_team_page};
use crate::components::error::ErrorPanel;
use crate::domain::calendar::ZoneOffsets;
use crate::domain::team::{TeamAccess, TeamRole};
use crate::domain::time_text::date_minute;
use crate::error::AppError;
use crate::i18n::*;
use crate::pages::audit::AuditTable;
use leptos::either::Either;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

/// The team page.
#[component]
pub fn TeamPage() -> impl IntoView {
    let i18n = use_i18n();
    let id =
        use_params_map().with_untracked(|p| p.get("id").and_then(|raw| raw.parse::<i64>().ok()));
    let (done, error) = use_query_map().with_untracked(|q| (q.get("done"), q.get("error")));
    let data = Resource::new(
        move || id,
        |id| async move {
            match id {
                Some(id) => get_team_page(id).await,
                None => Err(AppError::NotFound("team".into())),
            }
        },
    );
    let flash = match (done, error) {
        (Some(done), _) => {
            let text = match done.as_str() {
                "invited" => t_string!(i18n, team_done_invited),
                "revoked" => t_string!(i18n, team_done_revoked),
                "role" => t_string!(i18n, team_done_role),
                "removed" => t_string!(i18n, team_done_removed),
                "created" => t_string!(i18n, team_done_created),
                _ => t_string!(i18n, team_done_saved),
            };
            Some(Either::Left(
                view! { <p class="notice notice-ok" role="status">{text}</p> },
            ))
        }
        (None, Some(raw)) => {
            let error = serde_json::from_str::<AppError>(&raw).unwrap_or(AppError::Transport(raw));
            Some(Either::Right(view! { <ErrorPanel error /> }))
        }
        (None, None) => None,
    };
    view! {
        <Title text=t_string!(i18n, team_title).to_string() />
        <section class="team">
            <p class="breadcrumb"><a href="/teams">{t!(i18n, teams_title)}</a></p>
            {flash}
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    data.get()
                        .map(|result| match result {
                            Ok(data) => Either::Left(view! { <TeamView data /> }),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

fn role_text(i18n: leptos_i18n::I18nContext<Locale>, role: TeamRole) -> &'static str {
    match role {
        TeamRole::Member => t_string!(i18n, team_role_member),
        TeamRole::Admin => t_string!(i18n, team_role_admin),
    }
}

/// A role picker with `selected` chosen.
fn role_select(
    i18n: leptos_i18n::I18nContext<Locale>,
    id: String,
    selected: TeamRole,
) -> impl IntoView {
    let option = move |role: TeamRole| {
        view! { <option value=role.as_str() selected=role == selected>{role_text(i18n, role)}</option> }
    };
    view! {
        <select name="role" id=id>
            {option(TeamRole::Member)}
            {option(TeamRole::Admin)}
        </select>
    }
}

#[component]
fn TeamView(data: TeamData) -> impl IntoView {
    let i18n = use_i18n();
    let TeamData {
        roster,
        access,
        viewer_id,
        audit,
        zone,
    } = data;
    let manage = access == TeamAccess::Manage;
    let action = format!("/teams/{}", roster.id);
    let zone_name = zone.name.clone();
    let members = roster
        .members
        .into_iter()
        .map(|member| {
            let controls = if manage {
                let action = action.clone();
                let select_id = format!("role-{}", member.user_id);
                Some(Either::Left(view! {
                        <form method="post" action=action.clone() class="inline-form">
                            <input type="hidden" name="action" value="role" />
                            <input type="hidden" name="user_id" value=member.user_id />
                            <label class="sr-only" for=select_id.clone()>{t!(i18n, team_col_role)}</label>
                            {role_select(i18n, select_id, member.role)}
                            <button type="submit">{t!(i18n, team_change_role)}</button>
                        </form>
                        <form method="post" action=action class="inline-form">
                            <input type="hidden" name="action" value="remove" />
                            <input type="hidden" name="user_id" value=member.user_id />
                            <button type="submit" class="button-danger">
                                {if member.user_id == viewer_id { t_string!(i18n, team_leave) } else { t_string!(i18n, team_remove) }}
                            </button>
                        </form>
                }))
            } else if member.user_id == viewer_id {
                let action = action.clone();
                Some(Either::Right(view! {
                        <form method="post" action=action class="inline-form">
                            <input type="hidden" name="action" value="remove" />
                            <input type="hidden" name="user_id" value=member.user_id />
                            <button type="submit" class="button-danger">{t!(i18n, team_leave)}</button>
                        </form>
                }))
            } else {
                None
            };
            view! {
                <tr data-user=member.user_id data-role=member.role.as_str()>
                    <td>{member.name}</td>
                    <td>{member.email}</td>
                    <td>{role_text(i18n, member.role)}</td>
                    <td><time datetime=member.since.to_rfc3339()>{date_minute(zone.local(member.since))}</time></td>
                    <td class="team-controls">{controls}</td>
                </tr>
            }
        })
        .collect_view();
    let management = manage.then(|| {
        view! {
            <Invitations invitations=roster.invitations action=action.clone() zone=zone.clone() />
            <h2>{t!(i18n, team_activity)}</h2>
            {if audit.is_empty() {
                Either::Left(view! { <p class="empty">{t!(i18n, audit_none)}</p> })
            } else {
                Either::Right(view! { <AuditTable entries=audit zone=zone.clone() /> })
            }}
        }
    });
    view! {
        <h1>{roster.name}</h1>
        <p class="hint">{t!(i18n, times_in_zone, zone = move || zone_name.clone())}</p>
        <h2>{t!(i18n, team_members)}</h2>
        <div class="table-scroll">
            <table class="team-members">
                <thead>
                    <tr>
                        <th scope="col">{t!(i18n, team_col_name)}</th>
                        <th scope="col">{t!(i18n, credits_email)}</th>
                        <th scope="col">{t!(i18n, team_col_role)}</th>
                        <th scope="col">{t!(i18n, team_col_since)}</th>
                        <th scope="col"><span class="sr-only">{t!(i18n, team_col_actions)}</span></th>
                    </tr>
                </thead>
                <tbody>{members}</tbody>
            </table>
        </div>
        {management}
    }
}

#[component]
fn Invitations(
    invitations: Vec<crate::domain::team::Invitation>,
    action: String,
    zone: ZoneOffsets,
) -> impl IntoView {
    let i18n = use_i18n();
    let list = if invitations.is_empty() {
        Either::Left(view! { <p class="empty">{t!(i18n, team_no_invitations)}</p> })
    } else {
        let rows = invitations
            .into_iter()
            .map(|invitation| {
                let action = action.clone();
                view! {
                    <tr data-invitation=invitation.id>
                        <td>{invitation.email}</td>
                        <td>{role_text(i18n, invitation.role)}</td>
                        <td>{invitation.invited_by.unwrap_or_default()}</td>
                        <td><time datetime=invitation.created_at.to_rfc3339()>{date_minute(zone.local(invitation.created_at))}</time></td>
                        <td class="team-controls">
                            <form method="post" action=action class="inline-form">
                                <input type="hidden" name="action" value="revoke" />
                                <input type="hidden" name="invitation_id" value=invitation.id />
                                <button type="submit">{t!(i18n, team_revoke)}</button>
                            </form>
                        </td>
                    </tr>
                }
            })
            .collect_view();
        Either::Right(view! {
            <div class="table-scroll">
                <table class="team-invitations">
                    <thead>
                        <tr>
                            <th scope="col">{t!(i18n, credits_email)}</th>
                            <th scope="col">{t!(i18n, team_col_role)}</th>
                            <th scope="col">{t!(i18n, team_col_invited_by)}</th>
                            <th scope="col">{t!(i18n, team_col_invited_at)}</th>
                            <th scope="col"><span class="sr-only">{t!(i18n, team_col_actions)}</span></th>
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        })
    };
    view! {
        <h2>{t!(i18n, team_invitations)}</h2>
        <p class="hint">{t!(i18n, team_invite_hint)}</p>
        {list}
        <form class="team-form" method="post" action=action>
            <input type="hidden" name="action" value="invite" />
            <label class="field">{t!(i18n, credits_email)}
                <input type="email" name="email" required maxlength="320" />
            </label>
            <label class="field">{t!(i18n, team_col_role)}
                {role_select(i18n, "invite-role".to_owned(), TeamRole::Member)}
            </label>
            <button type="submit" class="button-primary">{t!(i18n, team_invite)}</button>
        </form>
    }
}
