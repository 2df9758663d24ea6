//! The team page's quota, rules and approvals sections: this week's use against the quota per
//! GPU model, the team's booking rules, bookings waiting for approval and idle bookings, each
//! with its plain form for those who manage the team; the quota form for platform admins only,
//! since quotas are theirs to set (server-rendered, no island).

use crate::api::teams::{ApproveBooking, RejectBooking, SetTeamQuota, SetTeamRules};
use crate::components::table::{Column, DataTable, PostButton};
use crate::domain::quota::{
    IDLE_UTIL_PERCENT, IdleBooking, Priority, QuotaUse, TeamPolicy, TeamRules, gpus_text,
};
use crate::domain::reservation::Reservation;
use crate::domain::time_text::date_minute;
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use crate::text::format::{MoneyText, hours_text};
use leptos::either::Either;
use leptos::prelude::*;
use leptos::server_fn::ServerFn;

/// A priority class's name in the current language.
pub fn priority_text(i18n: leptos_i18n::I18nContext<Locale>, priority: Priority) -> &'static str {
    match priority {
        Priority::Production => t_string!(i18n, priority_production),
        Priority::Training => t_string!(i18n, priority_training),
        Priority::Development => t_string!(i18n, priority_development),
        Priority::Batch => t_string!(i18n, priority_batch),
    }
}

/// What a booking holds, in one line: "node-a · 2 × H100" ("¼ × " for shares).
pub(crate) fn holding(r: &Reservation) -> String {
    let share = match r.share.quarters() {
        1 => "¼ × ",
        2 => "½ × ",
        _ => "",
    };
    format!("{} · {share}{} × {}", r.node_name, r.gpu_ids.len(), r.model)
}

/// GPU-minutes (of quarter-minutes) as the page shows GPU time.
fn gpu_time(i18n: leptos_i18n::I18nContext<Locale>, quarter_minutes: i64) -> String {
    hours_text(i18n, quarter_minutes / 4)
}

/// The sections.
#[component]
pub fn TeamRulesView(
    rules: TeamRules,
    manage: bool,
    team_id: i64,
    zone: ZoneOffsets,
    week_start: chrono::DateTime<chrono::Utc>,
    currency: crate::domain::money::Currency,
    /// The viewer is a platform admin (who alone may make production the default).
    platform_admin: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    let TeamRules {
        policy,
        quotas,
        models,
        pending,
        idle,
    } = rules;
    let monday = week_start.format("%Y-%m-%d").to_string();
    // Quotas are set by platform admins only; a team admin sees them and is told who sets them.
    let quota_view = manage.then(|| {
        if platform_admin {
            Either::Left(view! { <QuotaForm models team_id /> })
        } else {
            Either::Right(view! {
                <p class="hint team-quota-note">{t!(i18n, team_quota_platform_only)}</p>
            })
        }
    });
    let manage_view = manage.then(|| {
        view! {
            {quota_view}
            <PolicyForm policy team_id platform_admin />
            <Pending pending team_id zone=zone.clone() currency />
            <Idle idle zone />
        }
    });
    view! {
        <h2>{t!(i18n, team_week, monday = monday)}</h2>
        <QuotaTable quotas />
        <p class="hint team-policy" data-burst=policy.allow_burst.to_string() data-priority=policy.default_priority.as_str()>
            {if policy.allow_burst { t_string!(i18n, team_rules_burst_on) } else { t_string!(i18n, team_rules_burst_off) }}
            " "
            {t!(i18n, team_rules_priority, priority = priority_text(i18n, policy.default_priority))}
            " "
            {policy.approval_over_gpu_hours.map(|hours| t_string!(i18n, team_rules_approval, hours = hours, expiry = policy.approval_expiry_hours).to_string())}
        </p>
        {manage_view}
    }
}

/// Use against quota per model.
#[component]
fn QuotaTable(quotas: Vec<QuotaUse>) -> impl IntoView {
    let i18n = use_i18n();
    if quotas.is_empty() {
        return Either::Left(view! { <p class="empty">{t!(i18n, team_week_none)}</p> });
    }
    let rows = quotas
        .into_iter()
        .map(|row| {
            let guaranteed = row.quota.map(|q| q.guaranteed_gpus);
            let weekly = row.quota.and_then(|q| q.weekly_gpu_hours);
            let peak = gpus_text(row.peak_quarters);
            let limit_text = guaranteed.map_or_else(
                || t_string!(i18n, team_quota_none).to_string(),
                |gpus| gpus.to_string(),
            );
            let used_hours = gpu_time(i18n, row.week_quarter_minutes);
            let (hours_cell, level, percent) = match weekly {
                Some(limit) => {
                    let percent = if limit == 0 {
                        if row.week_quarter_minutes > 0 { 100 } else { 0 }
                    } else {
                        row.week_quarter_minutes * 100 / (i64::from(limit) * 240)
                    };
                    let level = if percent >= 100 { "over" } else if percent >= 80 { "warn" } else { "ok" };
                    (format!("{used_hours} / {}", hours_text(i18n, i64::from(limit) * 60)), level, Some(percent))
                }
                None => (used_hours, "ok", None),
            };
            let peak_level = match guaranteed {
                Some(limit) if row.peak_quarters > i64::from(limit) * 4 => "over",
                Some(limit) if row.peak_quarters == i64::from(limit) * 4 && limit > 0 => "warn",
                _ => "ok",
            };
            let model = row.model.clone();
            view! {
                <tr data-model=model data-peak-quarters=row.peak_quarters data-week-quarter-minutes=row.week_quarter_minutes>
                    <td>{row.model}</td>
                    <td class="num">{limit_text}</td>
                    <td class="num" data-level=peak_level>{peak}</td>
                    <td class="num" data-level=level>
                        {hours_cell}
                        {percent.map(|p| view! {
                            <div class="budget-bar quota-bar" role="img" aria-label=format!("{p} %")>
                                <span class="budget-fill" data-level=level style=format!("width: {}%", p.min(100))></span>
                            </div>
                        })}
                    </td>
                    <td class="num">{gpu_time(i18n, row.burst_quarter_minutes)}</td>
                </tr>
            }
        })
        .collect_view();
    Either::Right(view! {
        <DataTable class="teams-table team-quotas" columns=vec![
            Column::text(t_string!(i18n, team_col_model)),
            Column::num(t_string!(i18n, team_col_guaranteed)),
            Column::num(t_string!(i18n, team_col_peak)),
            Column::num(t_string!(i18n, team_col_week_hours)),
            Column::num(t_string!(i18n, team_col_burst)),
        ]>{rows}</DataTable>
    })
}

/// Sets or removes a quota.
#[component]
fn QuotaForm(models: Vec<String>, team_id: i64) -> impl IntoView {
    let i18n = use_i18n();
    let options = models
        .into_iter()
        .map(|model| {
            let label = model.clone();
            view! { <option value=model>{label}</option> }
        })
        .collect_view();
    view! {
        <form class="team-form quota-form" method="post" action=SetTeamQuota::PATH>
            <input type="hidden" name="team_id" value=team_id />
            <label class="field">{t!(i18n, team_col_model)}
                <select name="model" required>{options}</select>
            </label>
            <label class="field">{t!(i18n, team_quota_gpus)}
                <input type="number" name="guaranteed_gpus" min="0" step="1" />
            </label>
            <label class="field">{t!(i18n, team_quota_hours)}
                <input type="number" name="weekly_gpu_hours" min="0" step="1" />
            </label>
            <button type="submit">{t!(i18n, team_quota_save)}</button>
        </form>
        <p class="hint">{t!(i18n, team_quota_hint)}</p>
    }
}

/// The team's booking rules.
#[component]
fn PolicyForm(policy: TeamPolicy, team_id: i64, platform_admin: bool) -> impl IntoView {
    let i18n = use_i18n();
    let options = Priority::ALL
        .into_iter()
        .filter(|p| {
            platform_admin || *p != Priority::Production || policy.default_priority == *p
        })
        .map(|p| {
            view! { <option value=p.as_str() selected=p == policy.default_priority>{priority_text(i18n, p)}</option> }
        })
        .collect_view();
    view! {
        <h2>{t!(i18n, team_rules)}</h2>
        <form class="team-form rules-form" method="post" action=SetTeamRules::PATH>
            <input type="hidden" name="team_id" value=team_id />
            <label class="field checkbox">
                <input type="checkbox" name="allow_burst" value="on" checked=policy.allow_burst />
                {t!(i18n, team_rules_allow_burst)}
            </label>
            <label class="field">{t!(i18n, team_rules_default_priority)}
                <select name="default_priority">{options}</select>
            </label>
            <label class="field">{t!(i18n, team_rules_approval_over)}
                <input type="number" name="approval_over_gpu_hours" min="1" step="1"
                    value=policy.approval_over_gpu_hours.map(|h| h.to_string()).unwrap_or_default() />
            </label>
            <label class="field">{t!(i18n, team_rules_approval_expiry)}
                <input type="number" name="approval_expiry_hours" min="1" max="720" step="1"
                    value=policy.approval_expiry_hours />
            </label>
            <button type="submit">{t!(i18n, team_rules_save)}</button>
        </form>
        <p class="hint">{t!(i18n, team_rules_hint)}</p>
    }
}

/// Bookings waiting for approval, with approve and reject buttons.
#[component]
fn Pending(
    pending: Vec<Reservation>,
    team_id: i64,
    zone: ZoneOffsets,
    currency: crate::domain::money::Currency,
) -> impl IntoView {
    let i18n = use_i18n();
    let body = if pending.is_empty() {
        Either::Left(view! { <p class="empty">{t!(i18n, team_pending_none)}</p> })
    } else {
        let rows = pending
            .into_iter()
            .map(|r| {
                let from = date_minute(zone.local(r.window.start()));
                let to = date_minute(zone.local(r.window.end()));
                let until = r
                    .approval_expires_at
                    .map(|at| date_minute(zone.local(at)))
                    .unwrap_or_default();
                let minutes = r.window.length().num_minutes()
                    * i64::from(r.share.quarters())
                    * i64::try_from(r.gpu_ids.len()).unwrap_or(0)
                    / 4;
                let fields = vec![("team_id", team_id.to_string()), ("reservation_id", r.id.to_string())];
                let what = holding(&r);
                let price = crate::domain::money::Money::from_minor(r.price_minor);
                view! {
                    <tr data-reservation=r.id>
                        <td>{r.owner_name}</td>
                        <td>{what}</td>
                        <td><time datetime=r.window.start().to_rfc3339()>{format!("{from} – {to}")}</time></td>
                        <td class="num">{hours_text(i18n, minutes)}</td>
                        <td class="num"><MoneyText amount=price currency=currency.clone() /></td>
                        <td>{until}</td>
                        <td class="team-controls">
                            <PostButton action=ApproveBooking::PATH fields=fields.clone()>
                                {t!(i18n, team_approve)}
                            </PostButton>
                            <PostButton action=RejectBooking::PATH fields=fields danger=true>
                                {t!(i18n, team_reject)}
                            </PostButton>
                        </td>
                    </tr>
                }
            })
            .collect_view();
        Either::Right(view! {
            <DataTable class="teams-table team-pending" columns=vec![
                Column::text(t_string!(i18n, team_col_booked_by)),
                Column::text(t_string!(i18n, panel_gpu)),
                Column::text(t_string!(i18n, team_col_when)),
                Column::num(t_string!(i18n, team_col_gpu_hours)),
                Column::num(t_string!(i18n, team_col_price)),
                Column::text(t_string!(i18n, team_col_expires)),
                Column::actions(t_string!(i18n, team_col_actions)),
            ]>{rows}</DataTable>
        })
    };
    view! {
        <h2>{t!(i18n, team_pending)}</h2>
        {body}
    }
}

/// Running bookings whose GPUs sit idle.
#[component]
fn Idle(idle: Vec<IdleBooking>, zone: ZoneOffsets) -> impl IntoView {
    let i18n = use_i18n();
    let threshold = format!("{IDLE_UTIL_PERCENT:.0}");
    let body = if idle.is_empty() {
        Either::Left(view! { <p class="empty">{t!(i18n, team_idle_none)}</p> })
    } else {
        let rows = idle
            .into_iter()
            .map(|item| {
                let r = item.reservation;
                let until = date_minute(zone.local(r.window.end()));
                let what = holding(&r);
                view! {
                    <tr data-reservation=r.id>
                        <td>{r.owner_name}</td>
                        <td>{what}</td>
                        <td>{until}</td>
                        <td class="num">{format!("{:.0} %", item.average_util)}</td>
                    </tr>
                }
            })
            .collect_view();
        Either::Right(view! {
            <DataTable class="teams-table team-idle" columns=vec![
                Column::text(t_string!(i18n, team_col_booked_by)),
                Column::text(t_string!(i18n, panel_gpu)),
                Column::text(t_string!(i18n, team_col_until)),
                Column::num(t_string!(i18n, team_col_util)),
            ]>{rows}</DataTable>
        })
    };
    view! {
        <h2>{t!(i18n, team_idle)}</h2>
        <p class="hint">{t!(i18n, team_idle_hint, percent = threshold)}</p>
        {body}
    }
}
