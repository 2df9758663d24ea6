//! `/admin/fleet`: running the fleet from one page (platform admins). Prices per GPU model,
//! each GPU's price, sharing and retirement, and every team with its quotas and rules. Nodes
//! join through their agent's token (the nodes page) and maintenance windows are set on the
//! maintenance page; both are linked. Rendered on the server only (no island); every form posts
//! to its own server function (`api::fleet`), which comes back here with `done=` (a
//! [`FleetDone`]) or `error=`.

use crate::api::fleet::{
    ChangeGpu, ClearIdlePolicy, FleetPage as FleetData, RetireGpu, SetIdlePolicy, SetModelPrice,
    SetNodePolicy, get_fleet_page,
};
use crate::api::forms::{FleetDone, Outcome};
use crate::components::error::{ErrorPanel, form_outcome};
use crate::components::table::{Column, DataTable, PostButton};
use crate::domain::gpu::GpuStatus;
use crate::domain::lease::IntruderPolicy;
use crate::domain::money::{Currency, Money};
use crate::domain::quota::Priority;
use crate::domain::reclaim::{IdleAction, IdlePolicy, Policies, warnings_text};
use crate::i18n::*;
use crate::pages::team_rules::priority_text;
use crate::text::format::MoneyText;
use leptos::either::Either;
use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// The fleet page.
#[component]
pub fn FleetPage() -> impl IntoView {
    let i18n = use_i18n();
    let (done, error) = use_query_map().with_untracked(|q| (q.get("done"), q.get("error")));
    let data = Resource::new(|| (), |()| get_fleet_page());
    let done = done.map(|done| {
        match FleetDone::from_query(&done) {
            Some(FleetDone::Price) => t_string!(i18n, fleet_done_price),
            Some(FleetDone::Gpu) => t_string!(i18n, fleet_done_gpu),
            Some(FleetDone::Retired) => t_string!(i18n, fleet_done_retired),
            Some(FleetDone::NodePolicy) => t_string!(i18n, fleet_done_node_policy),
            Some(FleetDone::IdlePolicy) => t_string!(i18n, fleet_done_idle_policy),
            Some(FleetDone::IdlePolicyCleared) => t_string!(i18n, fleet_done_idle_policy_cleared),
            None => t_string!(i18n, team_done_saved),
        }
        .to_string()
    });
    let flash = form_outcome(done, error);
    view! {
        <Title text=t_string!(i18n, fleet_admin_title).to_string() />
        <section class="fleet">
            <h1>{t!(i18n, fleet_admin_title)}</h1>
            <p class="lede">
                {t!(i18n, fleet_intro)}
                " "
                <a href="/admin/nodes">{t!(i18n, fleet_add_node)}</a>
                " · "
                <a href="/admin/maintenance">{t!(i18n, fleet_maintenance)}</a>
            </p>
            {flash}
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    data.get()
                        .map(|result| match result {
                            Ok(data) => Either::Left(view! { <FleetView data /> }),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

fn price_input(price: Money, currency: &Currency) -> String {
    price.to_decimal_string(currency)
}

#[component]
fn FleetView(data: FleetData) -> impl IntoView {
    let i18n = use_i18n();
    let FleetData {
        nodes,
        models,
        teams,
        currency,
        policies,
        idle,
    } = data;
    let team_names: Vec<(i64, String)> = teams.iter().map(|t| (t.id, t.name.clone())).collect();
    let idle_section = view! { <IdlePolicies idle teams=team_names /> };
    let policy_rows = policies
        .into_iter()
        .map(|node| {
            let field = format!("intruders-{}", node.node_id);
            let options = IntruderPolicy::ALL
                .into_iter()
                .map(|policy| {
                    let label = match policy {
                        IntruderPolicy::Off => t_string!(i18n, fleet_intruders_off),
                        IntruderPolicy::Report => t_string!(i18n, fleet_intruders_report),
                        IntruderPolicy::Terminate => t_string!(i18n, fleet_intruders_terminate),
                    };
                    view! { <option value=policy.as_str() selected=policy == node.intruders>{label}</option> }
                })
                .collect_view();
            view! {
                <tr data-node-policy=node.node_id>
                    <td>{node.name}</td>
                    <td>
                        <form method="post" action=SetNodePolicy::PATH class="inline-form">
                            <input type="hidden" name="node_id" value=node.node_id />
                            <label class="sr-only" for=field.clone()>{t!(i18n, fleet_col_intruders)}</label>
                            <select id=field name="intruders">{options}</select>
                            <label class="inline-check">
                                <input type="checkbox" name="protect_idle" value="on" checked=node.protect_idle />
                                {t!(i18n, fleet_protect_idle)}
                            </label>
                            <button type="submit">{t!(i18n, fleet_save_policy)}</button>
                        </form>
                    </td>
                </tr>
            }
        })
        .collect_view();
    let code = currency.code().to_owned();
    let model_rows = models
        .into_iter()
        .map(|(model, count, low, high)| {
            let label = model.clone();
            let row_model = model.clone();
            let current = if low == high {
                Either::Left(view! { <MoneyText amount=Money::from_minor(low) currency=currency.clone() /> })
            } else {
                Either::Right(view! {
                    <MoneyText amount=Money::from_minor(low) currency=currency.clone() />
                    " – "
                    <MoneyText amount=Money::from_minor(high) currency=currency.clone() />
                })
            };
            let value = price_input(Money::from_minor(high), &currency);
            let field = format!("price-{model}");
            view! {
                <tr data-model=row_model>
                    <td>{label}</td>
                    <td class="num">{count}</td>
                    <td class="num">{current}</td>
                    <td>
                        <form method="post" action=SetModelPrice::PATH class="inline-form">
                            <input type="hidden" name="model" value=model />
                            <label class="sr-only" for=field.clone()>{t!(i18n, fleet_new_price, currency = code.clone())}</label>
                            <input type="text" id=field name="price" inputmode="decimal" value=value size="8" required />
                            <button type="submit">{t!(i18n, fleet_set_price)}</button>
                        </form>
                    </td>
                </tr>
            }
        })
        .collect_view();
    let gpu_rows = nodes
        .into_iter()
        .flat_map(|node| {
            let name = node.name.clone();
            node.gpus.into_iter().map(move |gpu| (name.clone(), gpu))
        })
        .map(|(node, gpu)| {
            let retired = gpu.status == GpuStatus::Retired;
            let status = match gpu.status {
                GpuStatus::Active => t_string!(i18n, status_active),
                GpuStatus::Maintenance => t_string!(i18n, status_maintenance),
                GpuStatus::Retired => t_string!(i18n, status_retired),
            };
            let value = price_input(gpu.hourly_price, &currency);
            let price_field = format!("gpu-price-{}", gpu.id);
            let controls = (!retired).then(|| {
                view! {
                    <form method="post" action=ChangeGpu::PATH class="inline-form">
                        <input type="hidden" name="gpu_id" value=gpu.id />
                        <label class="sr-only" for=price_field.clone()>{t!(i18n, fleet_new_price, currency = code.clone())}</label>
                        <input type="text" id=price_field name="price" inputmode="decimal" value=value size="8" required />
                        <label class="inline-check">
                            <input type="checkbox" name="shareable" value="on" checked=gpu.shareable />
                            {t!(i18n, fleet_shareable)}
                        </label>
                        <button type="submit">{t!(i18n, fleet_save_gpu)}</button>
                    </form>
                    // Confirmed in a second step that needs no script (the Content Security
                    // Policy allows no inline handlers such as `onsubmit="return confirm(…)"`).
                    <details class="confirm">
                        <summary class="button-danger">{t!(i18n, fleet_retire)}</summary>
                        <p>{t!(i18n, fleet_retire_confirm)}</p>
                        <PostButton action=RetireGpu::PATH fields=vec![("gpu_id", gpu.id.to_string())] danger=true>
                            {t!(i18n, fleet_retire)}
                        </PostButton>
                    </details>
                }
            });
            view! {
                <tr data-gpu=gpu.id data-status=format!("{:?}", gpu.status).to_lowercase()>
                    <td><a href=format!("/gpus/{}", gpu.id)>{format!("{node} #{}", gpu.device_index)}</a></td>
                    <td>{gpu.model}</td>
                    <td>{status}</td>
                    <td class="num"><MoneyText amount=gpu.hourly_price currency=currency.clone() /></td>
                    <td>{if gpu.shareable { "½ ¼" } else { "—" }}</td>
                    <td class="team-controls">{controls}</td>
                </tr>
            }
        })
        .collect_view();
    let team_rows = teams
        .into_iter()
        .map(|team| {
            let quotas = if team.quotas.is_empty() {
                t_string!(i18n, team_quota_none).to_string()
            } else {
                team.quotas
                    .iter()
                    .map(|(model, q)| match q.weekly_gpu_hours {
                        Some(hours) => t_string!(
                            i18n,
                            fleet_quota_weekly,
                            model = model.clone(),
                            gpus = q.guaranteed_gpus,
                            hours
                        )
                        .to_string(),
                        None => format!("{model}: {} GPU", q.guaranteed_gpus),
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            let approval = team
                .policy
                .approval_over_gpu_hours
                .map_or_else(|| "—".to_owned(), |h| format!("> {h} h"));
            view! {
                <tr data-team=team.id>
                    <td><a href=format!("/teams/{}", team.id)>{team.name}</a></td>
                    <td>{quotas}</td>
                    <td>{priority_text(i18n, team.policy.default_priority)}</td>
                    <td>{if team.policy.allow_burst { t_string!(i18n, fleet_yes) } else { t_string!(i18n, fleet_no) }}</td>
                    <td>{approval}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h2>{t!(i18n, fleet_models)}</h2>
        <p class="hint">{t!(i18n, fleet_price_hint)}</p>
        <DataTable class="teams-table fleet-models" columns=vec![
            Column::text(t_string!(i18n, team_col_model)),
            Column::num(t_string!(i18n, fleet_col_gpus)),
            Column::num(t_string!(i18n, fleet_col_price)),
            Column::text(t_string!(i18n, fleet_new_price, currency = code.clone()).to_string()),
        ]>{model_rows}</DataTable>
        <h2>{t!(i18n, fleet_gpus)}</h2>
        <p class="hint">{t!(i18n, fleet_retire_hint)}</p>
        <DataTable class="teams-table fleet-gpus" columns=vec![
            Column::text(t_string!(i18n, panel_gpu)),
            Column::text(t_string!(i18n, team_col_model)),
            Column::text(t_string!(i18n, col_status)),
            Column::num(t_string!(i18n, fleet_col_price)),
            Column::text(t_string!(i18n, fleet_shareable)),
            Column::actions(t_string!(i18n, team_col_actions)),
        ]>{gpu_rows}</DataTable>
        <h2>{t!(i18n, fleet_node_access)}</h2>
        <p class="hint">{t!(i18n, fleet_node_access_hint)}</p>
        <DataTable class="teams-table fleet-node-policy" columns=vec![
            Column::text(t_string!(i18n, nodes_col_name)),
            Column::text(t_string!(i18n, fleet_col_intruders)),
        ]>{policy_rows}</DataTable>
        {idle_section}
        <h2>{t!(i18n, fleet_teams)}</h2>
        <DataTable class="teams-table fleet-teams" columns=vec![
            Column::text(t_string!(i18n, team_col_name)),
            Column::text(t_string!(i18n, fleet_col_quotas)),
            Column::text(t_string!(i18n, team_rules_default_priority)),
            Column::text(t_string!(i18n, fleet_col_burst)),
            Column::text(t_string!(i18n, fleet_col_approval)),
        ]>{team_rows}</DataTable>
    }
}

fn action_text(i18n: leptos_i18n::I18nContext<Locale>, action: IdleAction) -> String {
    match action {
        IdleAction::Off => t_string!(i18n, fleet_idle_action_off),
        IdleAction::Warn => t_string!(i18n, fleet_idle_action_warn),
        IdleAction::Release => t_string!(i18n, fleet_idle_action_release),
    }
    .to_string()
}

/// The idle policies: the platform's default and the teams' overrides, and the form that sets
/// either (filled in with the platform's values).
#[component]
fn IdlePolicies(idle: Policies, teams: Vec<(i64, String)>) -> impl IntoView {
    let i18n = use_i18n();
    let row = move |scope: String, team: Option<i64>, policy: &IdlePolicy| {
        let exempt_classes = policy
            .exempt_priorities
            .iter()
            .map(|p| priority_text(i18n, *p))
            .collect::<Vec<_>>()
            .join(", ");
        let exempt = t_string!(
            i18n,
            fleet_idle_exempt_value,
            gpus = policy.exempt_max_gpus,
            hours = policy.exempt_max_hours
        )
        .to_string();
        // No bookings are small enough when either limit is 0.
        let sized = policy.exempt_max_gpus > 0 && policy.exempt_max_hours > 0;
        let exempt = match (sized, exempt_classes.is_empty()) {
            (true, true) => exempt,
            (true, false) => format!("{exempt}; {exempt_classes}"),
            (false, false) => exempt_classes,
            (false, true) => "—".to_owned(),
        };
        let warnings = if policy.warnings.is_empty() {
            "—".to_owned()
        } else {
            format!("{} min", warnings_text(&policy.warnings))
        };
        let clear = team.map(|team| {
            view! {
                <PostButton action=ClearIdlePolicy::PATH fields=vec![("team_id", team.to_string())]>
                    {t!(i18n, fleet_idle_clear)}
                </PostButton>
            }
        });
        view! {
            <tr data-idle-scope=team.map_or_else(|| "platform".to_owned(), |t| t.to_string())>
                <td>{scope}</td>
                <td>{action_text(i18n, policy.action)}</td>
                <td class="num">{format!("< {} %", policy.threshold_percent)}</td>
                <td class="num">{format!("{} min", policy.window_minutes)}</td>
                <td>{warnings}</td>
                <td>{exempt}</td>
                <td class="num">{format!("{} %", policy.refund_percent)}</td>
                <td class="team-controls">{clear}</td>
            </tr>
        }
    };
    let platform = idle.platform.clone();
    let mut rows = vec![
        row(
            t_string!(i18n, fleet_idle_platform).to_string(),
            None,
            &platform,
        )
        .into_any(),
    ];
    for (team, name, policy) in &idle.teams {
        rows.push(row(name.clone(), Some(*team), policy).into_any());
    }
    let scopes = teams
        .into_iter()
        .map(|(id, name)| view! { <option value=id>{name}</option> })
        .collect_view();
    let actions = IdleAction::ALL
        .into_iter()
        .map(|action| {
            view! { <option value=action.as_str() selected=action == platform.action>{action_text(i18n, action)}</option> }
        })
        .collect_view();
    let classes = Priority::ALL
        .into_iter()
        .map(|priority| {
            let name = format!("exempt_{}", priority.as_str());
            view! {
                <label>
                    <input type="checkbox" name=name value="on" checked=platform.exempt_priorities.contains(&priority) />
                    {priority_text(i18n, priority)}
                </label>
            }
        })
        .collect_view();
    view! {
        <h2 id="idle-reclaim">{t!(i18n, fleet_idle_title)}</h2>
        <p class="hint">{t!(i18n, fleet_idle_hint)}</p>
        <DataTable class="teams-table fleet-idle" columns=vec![
            Column::text(t_string!(i18n, fleet_idle_col_scope)),
            Column::text(t_string!(i18n, fleet_idle_col_action)),
            Column::num(t_string!(i18n, fleet_idle_col_threshold)),
            Column::num(t_string!(i18n, fleet_idle_col_window)),
            Column::text(t_string!(i18n, fleet_idle_col_warnings)),
            Column::text(t_string!(i18n, fleet_idle_col_exempt)),
            Column::num(t_string!(i18n, fleet_idle_col_refund)),
            Column::actions(t_string!(i18n, team_col_actions)),
        ]>{rows}</DataTable>
        <h3>{t!(i18n, fleet_idle_set)}</h3>
        <form method="post" action=SetIdlePolicy::PATH class="team-form idle-policy-form">
            <label class="field">
                {t!(i18n, fleet_idle_col_scope)}
                <select name="team">
                    <option value="">{t!(i18n, fleet_idle_platform)}</option>
                    {scopes}
                </select>
            </label>
            <label class="field">
                {t!(i18n, fleet_idle_col_action)}
                <select name="action">{actions}</select>
            </label>
            <label class="field">
                {t!(i18n, fleet_idle_threshold_label)}
                <input type="number" name="threshold_percent" min="1" max="100" required value=platform.threshold_percent />
            </label>
            <label class="field">
                {t!(i18n, fleet_idle_window_label)}
                <input type="number" name="window_minutes" min="15" max="10080" required value=platform.window_minutes />
            </label>
            <label class="field">
                {t!(i18n, fleet_idle_warnings_label)}
                <input type="text" name="warnings" value=warnings_text(&platform.warnings) placeholder="60, 105" />
            </label>
            <label class="field">
                {t!(i18n, fleet_idle_exempt_gpus_label)}
                <input type="number" name="exempt_max_gpus" min="0" max="1024" required value=platform.exempt_max_gpus />
            </label>
            <label class="field">
                {t!(i18n, fleet_idle_exempt_hours_label)}
                <input type="number" name="exempt_max_hours" min="0" max="8760" required value=platform.exempt_max_hours />
            </label>
            <label class="field">
                {t!(i18n, fleet_idle_refund_label)}
                <input type="number" name="refund_percent" min="0" max="100" required value=platform.refund_percent />
            </label>
            <fieldset>
                <legend>{t!(i18n, fleet_idle_exempt_classes)}</legend>
                {classes}
            </fieldset>
            <div><button type="submit" class="button-primary">{t!(i18n, fleet_idle_save)}</button></div>
        </form>
    }
}
