//! The page frame: header with navigation and language switch, and footer.

use crate::api::session::current_user;
use crate::domain::sign_in::{HighestRole, SignedInUser};
use crate::i18n::*;
use crate::text::format::t_count;
use leptos::prelude::*;
use leptos_router::hooks::use_location;

/// Site header: name, navigation and the language switch.
#[component]
pub fn Header() -> impl IntoView {
    let i18n = use_i18n();
    let location = use_location();
    let current = move |path: &'static str| (location.pathname.get() == path).then_some("page");
    let user = Resource::new(|| (), |()| current_user());
    let is_admin = move || {
        user.get()
            .and_then(Result::ok)
            .flatten()
            .is_some_and(|me| me.highest_role() == HighestRole::PlatformAdmin)
    };
    view! {
        <a class="skip-link" href="#main">{t!(i18n, skip_to_content)}</a>
        <header class="site-header">
            <a class="brand" href="/">
                <span class="brand-mark" aria-hidden="true">"▚"</span>
                <span class="brand-name">{t!(i18n, app_name)}</span>
                <span class="brand-tagline">{t!(i18n, tagline)}</span>
            </a>
            <nav class="site-nav" aria-label=move || t_string!(i18n, nav_label)>
                <a href="/" aria-current=move || current("/")>{t!(i18n, nav_gpus)}</a>
                <a href="/calendar" aria-current=move || current("/calendar")>{t!(i18n, nav_calendar)}</a>
                <a href="/reservations" aria-current=move || current("/reservations")>{t!(i18n, nav_reservations)}</a>
                <a href="/watches" aria-current=move || current("/watches")>{t!(i18n, nav_watches)}</a>
                <a href="/incidents" aria-current=move || current("/incidents")>{t!(i18n, nav_incidents)}</a>
                <a href="/wallet" aria-current=move || current("/wallet")>{t!(i18n, nav_wallet)}</a>
                <a href="/teams" aria-current=move || current("/teams")>{t!(i18n, nav_teams)}</a>
                <a href="/reports" aria-current=move || current("/reports")>{t!(i18n, nav_reports)}</a>
                <a href="/profile" aria-current=move || current("/profile")>{t!(i18n, nav_profile)}</a>
                <Transition fallback=|| ()>
                    {move || {
                        is_admin()
                            .then(|| {
                                view! {
                                    <a href="/admin/fleet" aria-current=move || current("/admin/fleet")>
                                        {t!(i18n, nav_fleet)}
                                    </a>
                                    <a
                                        href="/admin/maintenance"
                                        aria-current=move || current("/admin/maintenance")
                                    >
                                        {t!(i18n, nav_maintenance)}
                                    </a>
                                    <a href="/admin/nodes" aria-current=move || current("/admin/nodes")>
                                        {t!(i18n, nav_nodes)}
                                    </a>
                                    <a href="/admin/credits" aria-current=move || current("/admin/credits")>
                                        {t!(i18n, nav_credits)}
                                    </a>
                                    <a href="/admin/payments" aria-current=move || current("/admin/payments")>
                                        {t!(i18n, nav_payments)}
                                    </a>
                                    <a href="/admin/audit" aria-current=move || current("/admin/audit")>
                                        {t!(i18n, nav_audit)}
                                    </a>
                                    <a
                                        href="/admin/deliveries"
                                        aria-current=move || current("/admin/deliveries")
                                    >
                                        {t!(i18n, nav_deliveries)}
                                    </a>
                                }
                            })
                    }}
                </Transition>
            </nav>
            <LanguageSwitch />
            <UserMenu user />
        </header>
        <Transition fallback=|| ()>
            {move || {
                let (displaced, waiting) = user
                    .get()
                    .and_then(Result::ok)
                    .flatten()
                    .map_or((0, 0), |me| (me.displaced, me.approvals_waiting));
                view! {
                    {(displaced > 0).then(|| view! {
                        <div class="payment-due-banner displaced-banner" role="alert">
                            {t_count!(i18n, displaced, displaced_banner_singular, displaced_banner_plural)}
                            " "
                            <a href="/reservations">{t!(i18n, displaced_banner_link)}</a>
                        </div>
                    })}
                    {(waiting > 0).then(|| view! {
                        <div class="approvals-banner" role="status">
                            {t_count!(i18n, waiting, approvals_banner_singular, approvals_banner_plural)}
                            " "
                            <a href="/teams">{t!(i18n, approvals_banner_link)}</a>
                        </div>
                    })}
                }
            }}
        </Transition>
        <Transition fallback=|| ()>
            {move || {
                let due = user.get().and_then(Result::ok).flatten().map_or(0, |me| me.payments_due);
                (due > 0)
                    .then(|| {
                        view! {
                            <div class="payment-due-banner" role="alert">
                                <strong>{t!(i18n, payment_due_title)}</strong>
                                " "
                                {t_count!(i18n, due, payment_due_banner_singular, payment_due_banner_plural)}
                                " "
                                <a href="/wallet">{t!(i18n, payment_due_link)}</a>
                            </div>
                        }
                    })
            }}
        </Transition>
    }
}

/// Switches the interface language: posts to `/locale`, which sets the preference cookie and
/// redirects back to the same page, now rendered in the chosen language (pages are rendered on
/// the server; only their islands run in the browser, so a reload is how every text changes).
#[component]
fn LanguageSwitch() -> impl IntoView {
    let i18n = use_i18n();
    let location = use_location();
    let return_to = move || {
        let path = location.pathname.get();
        let search = location.search.get();
        if search.is_empty() {
            path
        } else {
            format!("{path}?{}", search.trim_start_matches('?'))
        }
    };
    let option = move |locale: Locale, short: &'static str| {
        let label = match locale {
            Locale::en => td_string!(Locale::en, language_en),
            Locale::pt_BR => td_string!(Locale::pt_BR, language_pt_BR),
        };
        view! {
            <button
                type="submit"
                name="locale"
                value=locale.as_str()
                lang=locale.as_str()
                title=label
                aria-label=label
                aria-pressed=move || (i18n.get_locale() == locale).to_string()
            >
                {short}
            </button>
        }
    };
    view! {
        <form class="lang-switch" method="post" action="/locale">
            <span class="lang-label">{t!(i18n, language)}</span>
            <input type="hidden" name="return_to" value=return_to />
            {option(Locale::en, "EN")}
            {option(Locale::pt_BR, "PT-BR")}
        </form>
    }
}

/// Who is signed in, with their role and a sign-out button; or a link to sign in.
#[component]
fn UserMenu(user: Resource<Result<Option<SignedInUser>, crate::error::AppError>>) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <div class="user-menu">
            <Transition fallback=|| ()>
                {move || {
                    user.get()
                        .map(|result| match result {
                            Ok(Some(user)) => {
                                let unread = user.unread;
                                let bell_class = if unread > 0 { "bell has-unread" } else { "bell" };
                                let label = if unread > 0 {
                                    t_string!(i18n, inbox_bell_unread, count = unread).to_string()
                                } else {
                                    t_string!(i18n, inbox_bell).to_string()
                                };
                                view! {
                                    <a class=bell_class href="/inbox" aria-label=label.clone() title=label>
                                        <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false">
                                            <path
                                                fill="currentColor"
                                                d="M12 22a2.5 2.5 0 0 0 2.45-2h-4.9A2.5 2.5 0 0 0 12 22Zm7-6V11a7 7 0 0 0-5.5-6.84V3.5a1.5 1.5 0 0 0-3 0v.66A7 7 0 0 0 5 11v5l-2 2v1h18v-1l-2-2Z"
                                            />
                                        </svg>
                                        {(unread > 0).then(|| view! { <span class="bell-count">{unread}</span> })}
                                    </a>
                                    <span class="user-name" title=move || t_string!(i18n, signed_in_as).to_string()>
                                        {user.user.name.clone()}
                                    </span>
                                    <span class="user-role"><RoleText user /></span>
                                    <form method="post" action="/auth/signout">
                                        <button type="submit" class="button-header">{t!(i18n, sign_out)}</button>
                                    </form>
                                }
                                    .into_any()
                            }
                            _ => view! { <a class="sign-in-link" href="/signin">{t!(i18n, sign_in)}</a> }.into_any(),
                        })
                }}
            </Transition>
        </div>
    }
}

/// The user's most powerful role: platform admin, team admin (of which teams), or user.
#[component]
pub fn RoleText(user: SignedInUser) -> impl IntoView {
    let i18n = use_i18n();
    let role = user.highest_role();
    move || match &role {
        HighestRole::PlatformAdmin => t_string!(i18n, role_platform_admin).to_string(),
        HighestRole::TeamAdmin(teams) => {
            let teams = teams.join(", ");
            t_string!(i18n, role_team_admin, teams = teams).to_string()
        }
        HighestRole::User => t_string!(i18n, role_user).to_string(),
    }
}

/// Site footer.
#[component]
pub fn Footer() -> impl IntoView {
    let i18n = use_i18n();
    view! { <footer class="site-footer">{t!(i18n, footer)}</footer> }
}
