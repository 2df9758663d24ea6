//! `/profile`: who you are, your teams, the time zone you see times in, where Berth tells you
//! what (inbox, e-mail, per kind of notice), and your personal API tokens (create, list, revoke).

use crate::api::notify::{
    NotificationSettingsPage, SaveNotificationSettings, get_notification_settings,
};
use crate::api::profile::{
    CreateApiToken, CreateCalendarFeed, CreateWebhook, DeleteWebhook, RevokeApiToken,
    RevokeCalendarFeed, SetTimeZone, get_calendar_feeds, get_time_zone, get_webhooks,
    list_api_tokens,
};
use crate::api::session::current_user;
use crate::components::error::{ErrorPanel, form_outcome};
use crate::components::layout::RoleText;
use crate::domain::api_token::{MAX_EXPIRY_DAYS, TokenScope};
use crate::domain::team::TeamRole;
use crate::domain::user::ApiTokenInfo;
use crate::i18n::*;
use crate::text::format::date_text;
use leptos::either::{Either, EitherOf3};
use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

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
            <crate::components::ssh_keys::SshKeys />
            <section class="environment-link" aria-labelledby="environments-title">
                <h2 id="environments-title">{t!(i18n, profiles_title)}</h2>
                <p>{t!(i18n, profiles_intro)} " " <a href="/profiles">{t!(i18n, profiles_manage)}</a></p>
            </section>
            <TimeZoneSetting />
            <NotificationSettings />
            <CalendarFeeds />
            <Webhooks />
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

/// Where each kind of notice goes: a plain form (no island) that works without JavaScript.
#[component]
fn NotificationSettings() -> impl IntoView {
    let i18n = use_i18n();
    let (done, error) = use_query_map().with_untracked(|q| (q.get("done"), q.get("error")));
    let flash = form_outcome(
        (done.as_deref() == Some("notifications"))
            .then(|| t_string!(i18n, notify_settings_saved).to_string()),
        error,
    );
    let data = Resource::new(|| (), |()| get_notification_settings());
    view! {
        <section class="notify-settings" id="notifications" aria-labelledby="notify-settings-title">
            <h2 id="notify-settings-title">{t!(i18n, notify_settings_title)}</h2>
            <p class="lede">{t!(i18n, notify_settings_intro)}</p>
            {flash}
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    data.get()
                        .map(|result| match result {
                            Ok(page) => Either::Left(view! { <NotificationSettingsForm page /> }),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

#[component]
fn NotificationSettingsForm(page: NotificationSettingsPage) -> impl IntoView {
    let i18n = use_i18n();
    let email_available = page.email_available;
    let rows = page
        .rows
        .into_iter()
        .map(|row| {
            let kind = row.kind.as_str();
            let (inbox_id, email_id) = (format!("inbox-{kind}"), format!("email-{kind}"));
            view! {
                <tr>
                    <th scope="row">{row.title.clone()}</th>
                    <td>
                        <input
                            type="checkbox"
                            id=inbox_id.clone()
                            name="inbox[]"
                            value=kind
                            checked=row.choice.inbox
                            aria-label=format!("{} · {}", row.title, t_string!(i18n, notify_settings_inbox))
                        />
                    </td>
                    <td>
                        <input
                            type="checkbox"
                            id=email_id.clone()
                            name="email[]"
                            value=kind
                            checked=row.choice.email
                            aria-label=format!("{} · {}", row.title, t_string!(i18n, notify_settings_email))
                        />
                    </td>
                    <td>
                        <input
                            type="checkbox"
                            id=format!("webhook-{kind}")
                            name="webhook[]"
                            value=kind
                            checked=row.choice.webhook
                            aria-label=format!("{} · {}", row.title, t_string!(i18n, notify_settings_webhook))
                        />
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <form method="post" action=SaveNotificationSettings::PATH class="notify-settings-form">
            <table class="notify-settings-table">
                <thead>
                    <tr>
                        <th scope="col">{t!(i18n, notify_settings_kind)}</th>
                        <th scope="col">{t!(i18n, notify_settings_inbox)}</th>
                        <th scope="col">{t!(i18n, notify_settings_email)}</th>
                        <th scope="col">{t!(i18n, notify_settings_webhook)}</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
            {(!email_available)
                .then(|| view! { <p class="hint">{t!(i18n, notify_settings_no_email)}</p> })}
            <button type="submit" class="button-primary">{t!(i18n, notify_settings_save)}</button>
        </form>
    }
}

/// Calendar feeds: a secret address of the user's (or a managed team's) bookings that calendar
/// programs subscribe to, shown once when made; made again or turned off here.
#[cfg_attr(feature = "hydrate", island(lazy))]
#[cfg_attr(not(feature = "hydrate"), island)]
fn CalendarFeeds() -> impl IntoView {
    let i18n = use_i18n();
    let create = ServerAction::<CreateCalendarFeed>::new();
    let revoke = ServerAction::<RevokeCalendarFeed>::new();
    let page = Resource::new(
        move || (create.version().get(), revoke.version().get()),
        |_| get_calendar_feeds(),
    );
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    view! {
        <section class="calendar-feeds" id="calendar-feeds" aria-labelledby="feeds-title">
            <h2 id="feeds-title">{t!(i18n, feeds_title)}</h2>
            <p class="lede">{t!(i18n, feeds_intro)}</p>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    page.get()
                        .map(|result| match result {
                            Ok(page) => {
                                let teams = page.teams.clone();
                                let empty = page.feeds.is_empty();
                                let rows = page
                                    .feeds
                                    .into_iter()
                                    .map(|feed| {
                                        let created = feed.created_at;
                                        let team_id = feed.team.as_ref().map(|(id, _)| id.to_string()).unwrap_or_default();
                                        let team_name = feed.team.map(|(_, name)| name);
                                        let label = move || scope_text(i18n, team_name.clone());
                                        view! {
                                            <tr>
                                                <td>{label}</td>
                                                <td>{move || date_text(i18n, created)}</td>
                                                <td>
                                                    <ActionForm action=revoke>
                                                        <input type="hidden" name="team" value=team_id />
                                                        <button type="submit" class="button-secondary">
                                                            {t!(i18n, feeds_revoke)}
                                                        </button>
                                                    </ActionForm>
                                                </td>
                                            </tr>
                                        }
                                    })
                                    .collect_view();
                                Either::Left(view! {
                                    <ActionForm
                                        action=create
                                        attr:class="feed-form"
                                        attr:data-hydrated=move || hydrated.get().to_string()
                                    >
                                        <label for="feed-team">{t!(i18n, feeds_for)}</label>
                                        <ScopeSelect id="feed-team" teams />
                                        <button type="submit" class="button-primary">{t!(i18n, feeds_create)}</button>
                                    </ActionForm>
                                    {empty.then(|| view! { <p class="empty">{t!(i18n, feeds_none)}</p> })}
                                    <table class="token-table feed-table" hidden=empty>
                                        <thead>
                                            <tr>
                                                <th scope="col">{t!(i18n, feeds_col_bookings)}</th>
                                                <th scope="col">{t!(i18n, col_created)}</th>
                                                <th scope="col"><span class="visually-hidden">{t!(i18n, feeds_revoke)}</span></th>
                                            </tr>
                                        </thead>
                                        <tbody>{rows}</tbody>
                                    </table>
                                })
                            }
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
            {move || {
                create
                    .value()
                    .get()
                    .map(|result| match result {
                        Ok(address) => Either::Left(view! {
                            <div class="token-created" role="status">
                                <p class="token-created-title">{t!(i18n, feeds_created_title)}</p>
                                <code class="token-secret feed-address">{address}</code>
                                <p class="hint">{t!(i18n, feeds_created_once)}</p>
                            </div>
                        }),
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
        </section>
    }
}

/// Webhooks: URLs that receive the user's (or a managed team's) notices as signed JSON; the
/// signing secret is shown once, when one is added.
#[cfg_attr(feature = "hydrate", island(lazy))]
#[cfg_attr(not(feature = "hydrate"), island)]
fn Webhooks() -> impl IntoView {
    let i18n = use_i18n();
    let create = ServerAction::<CreateWebhook>::new();
    let delete = ServerAction::<DeleteWebhook>::new();
    let page = Resource::new(
        move || (create.version().get(), delete.version().get()),
        |_| get_webhooks(),
    );
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    view! {
        <section class="calendar-feeds webhooks" id="webhooks" aria-labelledby="webhooks-title">
            <h2 id="webhooks-title">{t!(i18n, webhooks_title)}</h2>
            <p class="lede">{t!(i18n, webhooks_intro)}</p>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    page.get()
                        .map(|result| match result {
                            Ok(page) => {
                                let teams = page.teams.clone();
                                let empty = page.hooks.is_empty();
                                let rows = page
                                    .hooks
                                    .into_iter()
                                    .map(|hook| {
                                        let url = hook.url.clone();
                                        let label_url = hook.url.clone();
                                        let team_name = hook.team.map(|(_, name)| name);
                                        let scope = move || scope_text(i18n, team_name.clone());
                                        let (active, failures) = (hook.active, hook.failures);
                                        let state = move || {
                                            if !active {
                                                t_string!(i18n, webhooks_disabled).to_string()
                                            } else if failures > 0 {
                                                t_string!(i18n, webhooks_failing, count = failures).to_string()
                                            } else {
                                                t_string!(i18n, webhooks_active).to_string()
                                            }
                                        };
                                        let error = hook
                                            .last_error
                                            .map(|error| view! { <span class="delivery-error">{error}</span> });
                                        let maker = hook.maker.map(|name| view! {
                                            " "
                                            <span class="hint webhook-maker">
                                                {move || t_string!(i18n, webhooks_made_by, name = name.clone()).to_string()}
                                            </span>
                                        });
                                        view! {
                                            <tr data-active=active.to_string()>
                                                <td class="webhook-url">{url}</td>
                                                <td>{scope}{maker}</td>
                                                <td class="delivery-detail">{state} {error}</td>
                                                <td>
                                                    <ActionForm action=delete>
                                                        <input type="hidden" name="id" value=hook.id />
                                                        <button
                                                            type="submit"
                                                            class="button-secondary"
                                                            aria-label=move || t_string!(i18n, webhooks_delete_label, url = label_url.clone()).to_string()
                                                        >
                                                            {t!(i18n, webhooks_delete)}
                                                        </button>
                                                    </ActionForm>
                                                </td>
                                            </tr>
                                        }
                                    })
                                    .collect_view();
                                Either::Left(view! {
                                    <ActionForm
                                        action=create
                                        attr:class="feed-form webhook-form"
                                        attr:data-hydrated=move || hydrated.get().to_string()
                                    >
                                        <label for="webhook-url">{t!(i18n, webhooks_url)}</label>
                                        <input id="webhook-url" name="url" type="url" required maxlength="2048" autocomplete="off" />
                                        <label for="webhook-team">{t!(i18n, webhooks_for)}</label>
                                        <ScopeSelect id="webhook-team" teams />
                                        <button type="submit" class="button-primary">{t!(i18n, webhooks_create)}</button>
                                    </ActionForm>
                                    {empty.then(|| view! { <p class="empty">{t!(i18n, webhooks_none)}</p> })}
                                    <table class="token-table feed-table" hidden=empty>
                                        <thead>
                                            <tr>
                                                <th scope="col">{t!(i18n, webhooks_col_url)}</th>
                                                <th scope="col">{t!(i18n, webhooks_col_for)}</th>
                                                <th scope="col">{t!(i18n, webhooks_col_state)}</th>
                                                <th scope="col"><span class="visually-hidden">{t!(i18n, webhooks_delete)}</span></th>
                                            </tr>
                                        </thead>
                                        <tbody>{rows}</tbody>
                                    </table>
                                })
                            }
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
            {move || {
                create
                    .value()
                    .get()
                    .map(|result| match result {
                        Ok(created) => Either::Left(view! {
                            <div class="token-created" role="status">
                                <p class="token-created-title">{t!(i18n, webhooks_created_title)}</p>
                                <code class="token-secret webhook-secret">{created.secret}</code>
                                <p class="hint">{t!(i18n, webhooks_created_once)}</p>
                            </div>
                        }),
                        Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                    })
            }}
            {move || {
                delete
                    .value()
                    .get()
                    .and_then(Result::err)
                    .map(|error| view! { <ErrorPanel error /> })
            }}
        </section>
    }
}

/// Whose bookings or notices a feed or a webhook carries: the user's own, or a managed team's.
#[component]
fn ScopeSelect(id: &'static str, teams: Vec<(i64, String)>) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <select id=id name="team">
            <option value="">{t!(i18n, feeds_mine)}</option>
            {teams
                .into_iter()
                .map(|(id, name)| {
                    let label = move || scope_text(i18n, Some(name.clone()));
                    view! { <option value=id.to_string()>{label}</option> }
                })
                .collect_view()}
        </select>
    }
}

/// "My bookings", or "Team <name>".
fn scope_text(i18n: leptos_i18n::I18nContext<Locale>, team: Option<String>) -> String {
    match team {
        Some(team) => t_string!(i18n, feeds_team, team = team).to_string(),
        None => t_string!(i18n, feeds_mine).to_string(),
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
