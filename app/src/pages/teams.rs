//! `/teams`: the viewer's teams (platform admins: every team, and a form to create one).
//! Rendered on the server only (no island); the form posts to the
//! `create_team` server function.

use crate::api::teams::CreateTeam;
use crate::api::teams::{TeamsPage as TeamsData, get_teams_page};
use crate::components::error::{ErrorPanel, form_outcome};
use crate::i18n::*;
use leptos::either::Either;
use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// The teams page.
#[component]
pub fn TeamsPage() -> impl IntoView {
    let i18n = use_i18n();
    let error = use_query_map().with_untracked(|q| q.get("error"));
    let cursor = use_query_map()
        .with_untracked(|q| q.get("cursor"))
        .filter(|cursor| !cursor.is_empty());
    let on_later_page = cursor.is_some();
    let data = Resource::new(|| (), move |()| get_teams_page(cursor.clone()));
    let flash = form_outcome(None, error);
    view! {
        <Title text=t_string!(i18n, teams_title).to_string() />
        <section class="teams">
            <h1>{t!(i18n, teams_title)}</h1>
            <p class="lede">{t!(i18n, teams_intro)}</p>
            {flash}
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    data.get()
                        .map(|result| match result {
                            Ok(data) => Either::Left(view! { <TeamsView data on_later_page /> }),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

#[component]
fn TeamsView(data: TeamsData, on_later_page: bool) -> impl IntoView {
    let i18n = use_i18n();
    let TeamsData {
        teams,
        can_create,
        next,
    } = data;
    let list = if teams.is_empty() {
        Either::Left(view! { <p class="empty">{t!(i18n, teams_none)}</p> })
    } else {
        let rows = teams
            .into_iter()
            .map(|team| {
                let href = format!("/teams/{}", team.id);
                view! {
                    <tr data-team=team.id>
                        <td><a href=href>{team.name}</a></td>
                        <td class="num">{team.members}</td>
                        <td class="num">{team.admins}</td>
                        <td class="num">{team.invitations}</td>
                    </tr>
                }
            })
            .collect_view();
        Either::Right(view! {
            <div class="table-scroll">
                <table class="teams-table">
                    <thead>
                        <tr>
                            <th scope="col">{t!(i18n, teams_col_name)}</th>
                            <th scope="col" class="num">{t!(i18n, teams_col_members)}</th>
                            <th scope="col" class="num">{t!(i18n, teams_col_admins)}</th>
                            <th scope="col" class="num">{t!(i18n, teams_col_invitations)}</th>
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
            <crate::components::table::PageLinks next on_later_page base="/teams" ascending=true />
        })
    };
    let create = can_create.then(|| {
        view! {
            <h2>{t!(i18n, teams_create_title)}</h2>
            <form class="team-form" method="post" action=CreateTeam::PATH>
                <label class="field">{t!(i18n, teams_col_name)}
                    <input type="text" name="name" required maxlength="100" />
                </label>
                <label class="field">{t!(i18n, teams_create_admin)}
                    <input type="email" name="admin_email" required maxlength="320" />
                </label>
                <button type="submit" class="button-primary">{t!(i18n, teams_create_submit)}</button>
            </form>
        }
    });
    view! {
        {list}
        {create}
    }
}
