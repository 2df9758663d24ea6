//! `/profile`: who you are, your teams, the time zone you see times in, and your personal API
//! tokens (create, list, revoke).

use crate::api::profile::{
    CreateApiToken, RevokeApiToken, SetTimeZone, get_time_zone, list_api_tokens,
};
use crate::api::session::current_user;
use crate::components::error::ErrorPanel;
use crate::components::layout::RoleText;
use crate::domain::api_token::{MAX_EXPIRY_DAYS, TokenScope};
use crate::domain::team::TeamRole;
use crate::domain::user::ApiTokenInfo;
use crate::i18n::*;
use crate::text::format::date_text;
use leptos::either::{Either, EitherOf3};
use leptos::prelude::*;
use leptos_meta::Title;

/// The profile page.
#[component]
pub fn ProfilePage() -> impl IntoView {
    let i18n = use_i18n();
    let me = Resource::new(|| (), |()| current_user());
    view! {
        // A plain string, read once: leptos_meta reads a reactive title after the render, and
        // under load its signal was sometimes gone by then (a panic that cut the page off).
        <Title text=t_string!(i18n, profile_title).to_string() />
        <section class="profile">
            <h1>{t!(i18n, profile_title)}</h1>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    me.get()
                        .map(|result| match result {
                            Ok(Some(me)) => {
                                let teams = me.teams.clone();
                                view! {
                                    <dl class="profile-facts">
                                        <dt>{t!(i18n, profile_email)}</dt>
                                        <dd>{me.user.email.to_string()}</dd>
                                        <dt>{t!(i18n, profile_role)}</dt>
                                        <dd><RoleText user=me.clone() /></dd>
                                        <dt>{t!(i18n, profile_teams)}</dt>
                                        <dd>
                                            {if teams.is_empty() {
                                                view! { <span>{t!(i18n, profile_no_teams)}</span> }.into_any()
                                            } else {
                                                view! {
                                                    <ul class="team-list">
                                                        {teams
                                                            .into_iter()
                                                            .map(|team| {
                                                                let role = move || match team.role {
                                                                    TeamRole::Member => t_string!(i18n, team_role_member),
                                                                    TeamRole::Admin => t_string!(i18n, team_role_admin),
                                                                };
                                                                view! {
                                                                    <li>{team.team_name} " (" {role} ")"</li>
                                                                }
                                                            })
                                                            .collect_view()}
                                                    </ul>
                                                }
                                                    .into_any()
                                            }}
                                        </dd>
                                    </dl>
                                }
                                    .into_any()
                            }
                            Ok(None) => view! { <ErrorPanel error=crate::error::AppError::Unauthorized /> }.into_any(),
                            Err(error) => view! { <ErrorPanel error /> }.into_any(),
                        })
                }}
            </Transition>
            <TimeZoneSetting />
            <ApiTokens />
        </section>
    }
}

/// The zone the calendar and the reservations show times in: the browser's, or one chosen here.
#[cfg_attr(feature = "hydrate", island(lazy))]
#[cfg_attr(not(feature = "hydrate"), island)]
fn TimeZoneSetting() -> impl IntoView {
    let i18n = use_i18n();
    let save = ServerAction::<SetTimeZone>::new();
    let choice = Resource::new(move || save.version().get(), |_| get_time_zone());
    view! {
        <section class="time-zone" aria-labelledby="zone-title">
            <h2 id="zone-title">{t!(i18n, zone_title)}</h2>
            <p class="lede">{t!(i18n, zone_intro)}</p>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    choice
                        .get()
                        .map(|result| match result {
                            Ok(choice) => {
                                let current = choice.current.clone().unwrap_or_default();
                                Either::Left(view! {
                                    <ActionForm action=save attr:class="zone-form">
                                        <label for="time-zone">{t!(i18n, zone_label)}</label>
                                        <select id="time-zone" name="time_zone">
                                            <option value="" selected=current.is_empty()>
                                                {t!(i18n, zone_browser)}
                                            </option>
                                            {choice
                                                .zones
                                                .into_iter()
                                                .map(|zone| {
                                                    let selected = zone == current;
                                                    view! {
                                                        <option value=zone.clone() selected=selected>
                                                            {zone.clone()}
                                                        </option>
                                                    }
                                                })
                                                .collect_view()}
                                        </select>
                                        <button type="submit" class="button-primary">{t!(i18n, zone_save)}</button>
                                    </ActionForm>
                                })
                            }
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
            {move || {
                save.value()
                    .get()
                    .map(|result| match result {
                        Ok(Some(zone)) => {
                            EitherOf3::A(view! {
                                <p class="saved" role="status">
                                    {t!(i18n, zone_saved, zone = move || zone.clone())}
                                </p>
                            })
                        }
                        Ok(None) => {
                            EitherOf3::B(view! { <p class="saved" role="status">{t!(i18n, zone_saved_browser)}</p> })
                        }
                        Err(error) => EitherOf3::C(view! { <ErrorPanel error /> }),
                    })
            }}
        </section>
    }
}

/// The token list with its create and revoke forms.
#[cfg_attr(feature = "hydrate", island(lazy))]
#[cfg_attr(not(feature = "hydrate"), island)]
fn ApiTokens() -> impl IntoView {
    let i18n = use_i18n();
    let create = ServerAction::<CreateApiToken>::new();
    let revoke = ServerAction::<RevokeApiToken>::new();
    let tokens = Resource::new(
        move || (create.version().get(), revoke.version().get()),
        |_| list_api_tokens(),
    );
    let created = move || create.value().get();
    // Effects run only in the browser: true once the page is hydrated (tests wait for it).
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    view! {
        <section class="tokens" aria-labelledby="tokens-title">
            <h2 id="tokens-title">{t!(i18n, tokens_title)}</h2>
            <p class="lede">{t!(i18n, tokens_intro)}</p>
            <ActionForm
                action=create
                attr:class="token-form"
                attr:data-hydrated=move || hydrated.get().to_string()
            >
                <label for="token-name">{t!(i18n, tokens_name)}</label>
                <input
                    id="token-name"
                    name="name"
                    required
                    maxlength="100"
                    autocomplete="off"
                    placeholder=move || t_string!(i18n, tokens_name_hint).to_string()
                />
                <label for="token-scope">{t!(i18n, tokens_scope)}</label>
                <select id="token-scope" name="scope">
                    <option value="write" selected>{t!(i18n, tokens_scope_write)}</option>
                    <option value="read">{t!(i18n, tokens_scope_read)}</option>
                </select>
                <label for="token-expires">{t!(i18n, tokens_expires_days)}</label>
                <input
                    id="token-expires"
                    name="expires_days"
                    type="number"
                    min="1"
                    max=MAX_EXPIRY_DAYS
                    step="1"
                    inputmode="numeric"
                    placeholder=move || t_string!(i18n, tokens_expires_days_hint).to_string()
                />
                <button type="submit" class="button-primary">{t!(i18n, tokens_create)}</button>
            </ActionForm>
            {move || {
                created()
                    .map(|result| match result {
                        Ok(created) => {
                            let name = created.info.name.clone();
                            Either::Left(view! {
                                <div class="token-created" role="status">
                                    <p class="token-created-title">
                                        {t!(i18n, tokens_created_title, name = move || name.clone())}
                                    </p>
                                    <code class="token-secret">{created.token}</code>
                                    <p class="hint">{t!(i18n, tokens_created_once)}</p>
                                </div>
                            })
                        }
                        Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                    })
            }}
            {move || {
                revoke
                    .value()
                    .get()
                    .and_then(Result::err)
                    .map(|error| view! { <ErrorPanel error /> })
            }}
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    tokens
                        .get()
                        .map(|result| match result {
                            Ok(list) if list.is_empty() => {
                                EitherOf3::A(view! { <p class="empty">{t!(i18n, tokens_none)}</p> })
                            }
                            Ok(list) => EitherOf3::B(view! { <TokenTable list revoke /> }),
                            Err(error) => EitherOf3::C(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

#[component]
fn TokenTable(list: Vec<ApiTokenInfo>, revoke: ServerAction<RevokeApiToken>) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <div class="table-scroll">
            <table class="token-table">
                <thead>
                    <tr>
                        <th scope="col">{t!(i18n, col_token_name)}</th>
                        <th scope="col">{t!(i18n, col_created)}</th>
                        <th scope="col">{t!(i18n, col_last_used)}</th>
                        <th scope="col">{t!(i18n, col_token_scope)}</th>
                        <th scope="col">{t!(i18n, col_token_expires)}</th>
                        <th scope="col"><span class="visually-hidden">{t!(i18n, tokens_revoke)}</span></th>
                    </tr>
                </thead>
                <tbody>
                    {list
                        .into_iter()
                        .map(|token| {
                            let created = token.created_at;
                            let last_used = token.last_used_at;
                            let expires = token.expires_at;
                            let expired = token.expired;
                            let scope = token.scope;
                            let label_name = token.name.clone();
                            view! {
                                <tr>
                                    <td>{token.name.clone()}</td>
                                    <td>{move || date_text(i18n, created)}</td>
                                    <td>
                                        {match last_used {
                                            Some(date) => Either::Left(move || date_text(i18n, date)),
                                            None => Either::Right(t!(i18n, tokens_never_used)),
                                        }}
                                    </td>
                                    <td>
                                        {move || match scope {
                                            TokenScope::Read => t_string!(i18n, tokens_scope_read),
                                            TokenScope::Write => t_string!(i18n, tokens_scope_write),
                                        }}
                                    </td>
                                    <td>
                                        {match expires {
                                            Some(date) if expired => {
                                                EitherOf3::A(move || {
                                                    let date = date_text(i18n, date);
                                                    t_string!(i18n, tokens_expired_on, date = date).to_string()
                                                })
                                            }
                                            Some(date) => EitherOf3::B(move || date_text(i18n, date)),
                                            None => EitherOf3::C(t!(i18n, tokens_never_expires)),
                                        }}
                                    </td>
                                    <td>
                                        <ActionForm action=revoke>
                                            <input type="hidden" name="id" value=token.id />
                                            <button
                                                type="submit"
                                                class="button-secondary"
                                                aria-label=move || {
                                                    let name = label_name.clone();
                                                    t_string!(i18n, tokens_revoke_label, name = name).to_string()
                                                }
                                            >
                                                {t!(i18n, tokens_revoke)}
                                            </button>
                                        </ActionForm>
                                    </td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
}
