//! `/teams/{id}`: a team's page. Members see who belongs; team admins (and platform admins) run
//! the team from it: invite by e-mail, withdraw invitations, change roles, remove members, and
//! read the team's recent audit entries. Rendered on the server only (no island); every form
//! posts to its own server function (`api::teams`), which comes back here with `done=` (a
//! [`TeamDone`]) or `error=`.

use crate::api::forms::{Outcome, TeamDone};
use crate::api::teams::{
    AddTeamCredits, InviteMember, RemoveMember, RevokeInvitation, SetMemberRole, SetTeamBudget,
    TeamPage as TeamData, get_team_page,
};
use crate::components::error::{ErrorPanel, form_outcome};
use crate::components::table::{Column, DataTable, PostButton};
use crate::domain::team::{TeamAccess, TeamRole};
use crate::domain::time_text::date_minute;
use crate::domain::zone::ZoneOffsets;
use crate::error::AppError;
use crate::i18n::*;
use crate::pages::audit::AuditTable;
use crate::pages::team_rules::TeamRulesView;
use leptos::either::Either;
use leptos::prelude::*;
use leptos::server_fn::ServerFn;
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
    let done = done.map(|done| {
        match TeamDone::from_query(&done) {
            Some(TeamDone::Invited) => t_string!(i18n, team_done_invited),
            Some(TeamDone::Revoked) => t_string!(i18n, team_done_revoked),
            Some(TeamDone::Role) => t_string!(i18n, team_done_role),
            Some(TeamDone::Removed) => t_string!(i18n, team_done_removed),
            Some(TeamDone::Created) => t_string!(i18n, team_done_created),
            Some(TeamDone::Budget) => t_string!(i18n, team_done_budget),
            Some(TeamDone::Credits) => t_string!(i18n, team_done_credits),
            Some(TeamDone::Quota) => t_string!(i18n, team_done_quota),
            Some(TeamDone::Rules) => t_string!(i18n, team_done_rules),
            Some(TeamDone::Approved) => t_string!(i18n, team_done_approved),
            Some(TeamDone::Rejected) => t_string!(i18n, team_done_rejected),
            None => t_string!(i18n, team_done_saved),
        }
        .to_string()
    });
    let flash = form_outcome(done, error);
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

/// The hidden fields that name a team's member.
fn member_fields(team_id: i64, user_id: i64) -> Vec<(&'static str, String)> {
    vec![
        ("team_id", team_id.to_string()),
        ("user_id", user_id.to_string()),
    ]
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
        money,
        currency,
        can_grant,
        form_key,
        upcoming,
        week_start,
        rules,
    } = data;
    let manage = access == TeamAccess::Manage;
    let team_id = roster.id;
    let zone_name = zone.name.clone();
    let members = roster
        .members
        .into_iter()
        .map(|member| {
            let controls = if manage {
                let select_id = format!("role-{}", member.user_id);
                Some(Either::Left(view! {
                        <form method="post" action=SetMemberRole::PATH class="inline-form">
                            <input type="hidden" name="team_id" value=team_id />
                            <input type="hidden" name="user_id" value=member.user_id />
                            <label class="sr-only" for=select_id.clone()>{t!(i18n, team_col_role)}</label>
                            {role_select(i18n, select_id, member.role)}
                            <button type="submit">{t!(i18n, team_change_role)}</button>
                        </form>
                        <PostButton action=RemoveMember::PATH fields=member_fields(team_id, member.user_id) danger=true>
                            {if member.user_id == viewer_id { t_string!(i18n, team_leave) } else { t_string!(i18n, team_remove) }}
                        </PostButton>
                }))
            } else if member.user_id == viewer_id {
                Some(Either::Right(view! {
                        <PostButton action=RemoveMember::PATH fields=member_fields(team_id, member.user_id) danger=true>
                            {t!(i18n, team_leave)}
                        </PostButton>
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
            <Invitations invitations=roster.invitations team_id zone=zone.clone() />
            <h2>{t!(i18n, team_activity)}</h2>
            {if audit.is_empty() {
                Either::Left(view! { <p class="empty">{t!(i18n, audit_none)}</p> })
            } else {
                Either::Right(view! { <AuditTable entries=audit zone=zone.clone() /> })
            }}
        }
    });
    let rules_view = view! {
        <TeamRulesView rules manage team_id zone=zone.clone() week_start currency=currency.clone() platform_admin=can_grant />
    };
    let money_view = view! {
        <TeamMoneyView money currency manage can_grant team_id form_key />
    };
    let activity_view = view! { <TeamUse upcoming zone=zone.clone() /> };
    view! {
        <h1>{roster.name}</h1>
        <p class="hint">
            {t!(i18n, times_in_zone, zone = move || zone_name.clone())}
            {manage.then(|| {
                let href = format!("/reports?scope=team:{}", roster.id);
                view! { " · " <a href=href>{t!(i18n, team_cost_report)}</a> }
            })}
        </p>
        {money_view}
        {rules_view}
        {activity_view}
        <h2>{t!(i18n, team_members)}</h2>
        <DataTable class="team-members" columns=vec![
            Column::text(t_string!(i18n, team_col_name)),
            Column::text(t_string!(i18n, credits_email)),
            Column::text(t_string!(i18n, team_col_role)),
            Column::text(t_string!(i18n, team_col_since)),
            Column::actions(t_string!(i18n, team_col_actions)),
        ]>{members}</DataTable>
        {management}
    }
}

#[component]
fn Invitations(
    invitations: Vec<crate::domain::team::Invitation>,
    team_id: i64,
    zone: ZoneOffsets,
) -> impl IntoView {
    let i18n = use_i18n();
    let list = if invitations.is_empty() {
        Either::Left(view! { <p class="empty">{t!(i18n, team_no_invitations)}</p> })
    } else {
        let rows = invitations
            .into_iter()
            .map(|invitation| {
                view! {
                    <tr data-invitation=invitation.id>
                        <td>{invitation.email}</td>
                        <td>{role_text(i18n, invitation.role)}</td>
                        <td>{invitation.invited_by.unwrap_or_default()}</td>
                        <td><time datetime=invitation.created_at.to_rfc3339()>{date_minute(zone.local(invitation.created_at))}</time></td>
                        <td class="team-controls">
                            <PostButton action=RevokeInvitation::PATH fields=vec![("team_id", team_id.to_string()), ("invitation_id", invitation.id.to_string())]>
                                {t!(i18n, team_revoke)}
                            </PostButton>
                        </td>
                    </tr>
                }
            })
            .collect_view();
        Either::Right(view! {
            <DataTable class="team-invitations" columns=vec![
                Column::text(t_string!(i18n, credits_email)),
                Column::text(t_string!(i18n, team_col_role)),
                Column::text(t_string!(i18n, team_col_invited_by)),
                Column::text(t_string!(i18n, team_col_invited_at)),
                Column::actions(t_string!(i18n, team_col_actions)),
            ]>{rows}</DataTable>
        })
    };
    view! {
        <h2>{t!(i18n, team_invitations)}</h2>
        <p class="hint">{t!(i18n, team_invite_hint)}</p>
        {list}
        <form class="team-form" method="post" action=InviteMember::PATH>
            <input type="hidden" name="team_id" value=team_id />
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

/// The team wallet, this month's bookings against the budget, and (for those who manage the
/// team) the budget form; platform admins also get a form to add credits.
#[component]
fn TeamMoneyView(
    money: crate::domain::team::TeamMoney,
    currency: crate::domain::money::Currency,
    manage: bool,
    can_grant: bool,
    team_id: i64,
    form_key: String,
) -> impl IntoView {
    use crate::domain::team::BudgetMode;
    use crate::text::format::MoneyText;
    let i18n = use_i18n();
    let month = money.month.format("%Y-%m").to_string();
    let limit = money.budget.limit;
    let spent = money.month_spent;
    let available = crate::domain::ledger::Funds {
        balance: money.balance,
        held: money.on_hold,
    }
    .available();
    let percent = limit.map(|limit| {
        if limit.minor() == 0 {
            if spent.minor() > 0 { 100 } else { 0 }
        } else {
            (i128::from(spent.minor()) * 100 / i128::from(limit.minor())).clamp(0, 1_000_000) as i64
        }
    });
    let warn_from = i64::from(money.budget.warn_percent);
    let level = match percent {
        Some(p) if p >= 100 => "over",
        Some(p) if p >= warn_from => "warn",
        _ => "ok",
    };
    let decimals = usize::from(currency.exponent());
    let limit_input = limit
        .map(|limit| limit.to_decimal_string(&currency))
        .unwrap_or_default();
    let example = format!("1000.{}", "0".repeat(decimals));
    let budget_line = match (limit, percent) {
        (Some(limit), Some(percent)) => Either::Left(view! {
            <p class="budget-line" data-level=level>
                <MoneyText amount=spent currency=currency.clone() />
                " / "
                <MoneyText amount=limit currency=currency.clone() />
                {format!(" ({percent} %)")}
            </p>
            <div class="budget-bar" role="img" aria-label=format!("{percent} %")>
                <span class="budget-fill" data-level=level style=format!("width: {}%", percent.min(100))></span>
            </div>
        }),
        _ => Either::Right(view! {
            <p class="budget-line">
                <MoneyText amount=spent currency=currency.clone() />
                " · "
                {t!(i18n, team_no_budget)}
            </p>
        }),
    };
    let mode = money.budget.mode;
    let budget_form = manage.then(|| {
        view! {
            <form class="team-form budget-form" method="post" action=SetTeamBudget::PATH>
                <input type="hidden" name="team_id" value=team_id />
                <label class="field">{t!(i18n, team_budget_amount, currency = currency.code().to_owned())}
                    <input type="text" name="budget" inputmode="decimal" value=limit_input placeholder=example />
                </label>
                <label class="field">{t!(i18n, team_budget_mode)}
                    <select name="mode">
                        <option value="refuse" selected=mode == BudgetMode::Refuse>{t!(i18n, team_budget_refuse)}</option>
                        <option value="warn" selected=mode == BudgetMode::Warn>{t!(i18n, team_budget_warn)}</option>
                    </select>
                </label>
                <label class="field">{t!(i18n, team_budget_warn_percent)}
                    <input type="number" name="warn_percent" min="1" max="100" value=warn_from />
                </label>
                <button type="submit">{t!(i18n, team_budget_save)}</button>
            </form>
            <p class="hint">{t!(i18n, team_budget_hint)}</p>
        }
    });
    let credits_form = can_grant.then(|| {
        view! {
            <form class="team-form" method="post" action=AddTeamCredits::PATH>
                <input type="hidden" name="team_id" value=team_id />
                <input type="hidden" name="idempotency_key" value=form_key />
                <label class="field">{t!(i18n, credits_amount, currency = currency.code().to_owned())}
                    <input type="text" name="amount" inputmode="decimal" required />
                </label>
                <label class="field credits-reason">{t!(i18n, credits_reason)}
                    <input type="text" name="reason" required maxlength="500" />
                </label>
                <button type="submit">{t!(i18n, team_add_credits)}</button>
            </form>
        }
    });
    let due = money.payments_due;
    let due_view = (due > 0).then(|| {
        view! {
            <p class="payment-due team-payment-due" role="alert">
                {crate::text::format::t_count!(i18n, due, team_payment_due_singular, team_payment_due_plural)}
            </p>
        }
    });
    view! {
        <h2>{t!(i18n, team_money)}</h2>
        {due_view}
        <dl class="team-money">
            <dt>{t!(i18n, team_wallet_balance)}</dt>
            <dd data-team-balance-minor=money.balance.minor()><MoneyText amount=money.balance currency=currency.clone() /></dd>
            <dt>{t!(i18n, wallet_on_hold)}</dt>
            <dd data-team-on-hold-minor=money.on_hold.minor()><MoneyText amount=money.on_hold currency=currency.clone() /></dd>
            <dt>{t!(i18n, wallet_available)}</dt>
            <dd class:negative=available.minor() < 0 data-team-available-minor=available.minor()><MoneyText amount=available currency=currency.clone() /></dd>
            <dt>{t!(i18n, team_month_spent, month = month)}</dt>
            <dd data-month-spent-minor=spent.minor()>{budget_line}</dd>
        </dl>
        {budget_form}
        {credits_form}
    }
}

/// The team's bookings of the next two weeks.
#[component]
fn TeamUse(
    upcoming: Vec<crate::domain::reservation::Reservation>,
    zone: ZoneOffsets,
) -> impl IntoView {
    let i18n = use_i18n();
    let upcoming_view = if upcoming.is_empty() {
        Either::Left(view! { <p class="empty">{t!(i18n, team_upcoming_none)}</p> })
    } else {
        let rows = upcoming
            .into_iter()
            .map(|r| {
                let from = date_minute(zone.local(r.window.start()));
                let to = date_minute(zone.local(r.window.end()));
                let what = crate::pages::team_rules::holding(&r);
                view! {
                    <tr data-reservation=r.id>
                        <td><time datetime=r.window.start().to_rfc3339()>{format!("{from} – {to}")}</time></td>
                        <td>{r.owner_name}</td>
                        <td>{what}</td>
                    </tr>
                }
            })
            .collect_view();
        Either::Right(view! {
            <DataTable class="teams-table team-upcoming" columns=vec![
                Column::text(t_string!(i18n, team_col_when)),
                Column::text(t_string!(i18n, team_col_booked_by)),
                Column::text(t_string!(i18n, panel_gpu)),
            ]>{rows}</DataTable>
        })
    };
    view! {
        <h2>{t!(i18n, team_upcoming)}</h2>
        <p class="hint"><a href="/calendar">{t!(i18n, team_upcoming_calendar)}</a></p>
        {upcoming_view}
    }
}
