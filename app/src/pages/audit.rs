//! `/admin/audit`: the audit log for platform admins — who did what, when, to what, with the
//! values before and after — newest first, filtered by action, 100 per page. Rendered on the
//! server only (no island); the filter is a plain GET form.

use crate::api::teams::{AuditPage as AuditData, get_audit_page};
use crate::components::error::ErrorPanel;
use crate::domain::audit::{AuditAction, AuditEntry};
use crate::domain::time_text::date_second;
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use leptos::either::Either;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// An action in the current language.
pub fn audit_action_text(
    i18n: leptos_i18n::I18nContext<Locale>,
    action: AuditAction,
) -> &'static str {
    match action {
        AuditAction::TeamCreate => t_string!(i18n, audit_team_create),
        AuditAction::TeamInvite => t_string!(i18n, audit_team_invite),
        AuditAction::TeamInvitationRevoke => t_string!(i18n, audit_team_invitation_revoke),
        AuditAction::TeamInvitationAccept => t_string!(i18n, audit_team_invitation_accept),
        AuditAction::TeamMemberRemove => t_string!(i18n, audit_team_member_remove),
        AuditAction::TeamMemberRole => t_string!(i18n, audit_team_member_role),
        AuditAction::TeamBudget => t_string!(i18n, audit_team_budget),
        AuditAction::TeamQuota => t_string!(i18n, audit_team_quota),
        AuditAction::TeamRules => t_string!(i18n, audit_team_rules),
        AuditAction::BookingApprove => t_string!(i18n, audit_booking_approve),
        AuditAction::BookingReject => t_string!(i18n, audit_booking_reject),
        AuditAction::CreditsGrant => t_string!(i18n, audit_credits_grant),
        AuditAction::CreditsDeduct => t_string!(i18n, audit_credits_deduct),
        AuditAction::MaintenanceCreate => t_string!(i18n, audit_maintenance_create),
        AuditAction::MaintenanceCancel => t_string!(i18n, audit_maintenance_cancel),
        AuditAction::GpuRetire => t_string!(i18n, audit_gpu_retire),
        AuditAction::GpuPrice => t_string!(i18n, audit_gpu_price),
        AuditAction::NodeTokenIssue => t_string!(i18n, audit_node_token_issue),
        AuditAction::NodeTokenRevoke => t_string!(i18n, audit_node_token_revoke),
        AuditAction::GpuAccept => t_string!(i18n, audit_gpu_accept),
        AuditAction::IdlePolicy => t_string!(i18n, audit_idle_policy),
        AuditAction::IdleSnooze => t_string!(i18n, audit_idle_snooze),
        AuditAction::IdleReclaim => t_string!(i18n, audit_idle_reclaim),
        AuditAction::WatchBooked => t_string!(i18n, audit_watch_booked),
    }
}

/// The kind of thing an entry is about, in the current language.
fn target_text(i18n: leptos_i18n::I18nContext<Locale>, kind: &str) -> String {
    match kind {
        "team" => t_string!(i18n, audit_target_team).to_string(),
        "user" => t_string!(i18n, audit_target_user).to_string(),
        "invitation" => t_string!(i18n, audit_target_invitation).to_string(),
        "gpu" => t_string!(i18n, audit_target_gpu).to_string(),
        "maintenance" => t_string!(i18n, audit_target_maintenance).to_string(),
        "node" => t_string!(i18n, audit_target_node).to_string(),
        "reservation" => t_string!(i18n, audit_target_reservation).to_string(),
        "model" => t_string!(i18n, audit_target_model).to_string(),
        "idle_policy" => t_string!(i18n, audit_target_idle_policy).to_string(),
        "watch" => t_string!(i18n, audit_target_watch).to_string(),
        other => other.to_owned(),
    }
}

/// The audit page.
#[component]
pub fn AuditPage() -> impl IntoView {
    let i18n = use_i18n();
    let (action, before_id) = use_query_map().with_untracked(|q| {
        (
            q.get("action"),
            q.get("before_id").and_then(|raw| raw.parse::<i64>().ok()),
        )
    });
    let data = Resource::new(
        move || (action.clone(), before_id),
        |(action, before_id)| get_audit_page(action, before_id),
    );
    view! {
        <Title text=t_string!(i18n, audit_title).to_string() />
        <section class="audit">
            <h1>{t!(i18n, audit_title)}</h1>
            <p class="lede">{t!(i18n, audit_intro)}</p>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    data.get()
                        .map(|result| match result {
                            Ok(data) => Either::Left(view! { <AuditView data /> }),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

#[component]
fn AuditView(data: AuditData) -> impl IntoView {
    let i18n = use_i18n();
    let AuditData {
        entries,
        action,
        older,
        zone,
    } = data;
    let options = AuditAction::ALL
        .into_iter()
        .map(|item| {
            view! {
                <option value=item.as_str() selected=action == Some(item)>
                    {audit_action_text(i18n, item)}
                </option>
            }
        })
        .collect_view();
    let older_link = older.map(|id| {
        let href = match action {
            Some(action) => format!("/admin/audit?action={}&before_id={id}", action.as_str()),
            None => format!("/admin/audit?before_id={id}"),
        };
        view! { <p class="pager"><a href=href>{t!(i18n, audit_older)}</a></p> }
    });
    let zone_name = zone.name.clone();
    view! {
        <form class="audit-filter" method="get" action="/admin/audit">
            <label class="field">{t!(i18n, audit_col_action)}
                <select name="action">
                    <option value="">{t!(i18n, audit_all_actions)}</option>
                    {options}
                </select>
            </label>
            <button type="submit">{t!(i18n, audit_filter)}</button>
        </form>
        <p class="hint">{t!(i18n, times_in_zone, zone = move || zone_name.clone())}</p>
        {if entries.is_empty() {
            Either::Left(view! { <p class="empty">{t!(i18n, audit_none)}</p> })
        } else {
            Either::Right(view! { <AuditTable entries zone /> })
        }}
        {older_link}
    }
}

/// Audit entries as a table: when, who, what, to what, before → after.
#[component]
pub fn AuditTable(entries: Vec<AuditEntry>, zone: ZoneOffsets) -> impl IntoView {
    let i18n = use_i18n();
    let rows = entries
        .into_iter()
        .map(|entry| {
            let who = entry
                .actor
                .map(|(_, name)| name)
                .unwrap_or_else(|| t_string!(i18n, audit_system).to_owned());
            view! {
                <tr data-audit=entry.id data-action=entry.action.as_str()>
                    <td><time datetime=entry.at.to_rfc3339()>{date_second(zone.local(entry.at))}</time></td>
                    <td>{who}</td>
                    <td>{audit_action_text(i18n, entry.action)}</td>
                    <td>{format!("{} {}", target_text(i18n, &entry.target_kind), entry.target_id)}</td>
                    <td><code class="audit-values">{entry.before.unwrap_or_default()}</code></td>
                    <td><code class="audit-values">{entry.after.unwrap_or_default()}</code></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-scroll">
            <table class="audit-table">
                <thead>
                    <tr>
                        <th scope="col">{t!(i18n, audit_col_at)}</th>
                        <th scope="col">{t!(i18n, audit_col_actor)}</th>
                        <th scope="col">{t!(i18n, audit_col_action)}</th>
                        <th scope="col">{t!(i18n, audit_col_target)}</th>
                        <th scope="col">{t!(i18n, audit_col_before)}</th>
                        <th scope="col">{t!(i18n, audit_col_after)}</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
}
