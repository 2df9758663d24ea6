//! `/admin/maintenance`: platform admins take GPUs (or whole nodes) out of booking for a while,
//! see what is under way and upcoming, and end windows early. The forms post without JavaScript
//! too.

use crate::api::maintenance::{
    EndMaintenance, MaintenancePage, NodeChoice, SetMaintenance, get_maintenance_page,
};
use crate::components::error::ErrorPanel;
use crate::domain::maintenance::{BerthMaintenance, MaintenancePhase, MaintenanceWindow};
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use leptos::either::Either;
use leptos::prelude::*;
use leptos_meta::Title;

/// The maintenance page.
#[component]
pub fn MaintenancePage() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        // A plain string, read once: leptos_meta reads a reactive title after the render, and
        // under load its signal was sometimes gone by then (a panic that cut the page off).
        <Title text=t_string!(i18n, maintenance_title).to_string() />
        <MaintenanceBoard />
    }
}

/// The maintenance list and forms, updated in place (an island).
#[cfg_attr(feature = "hydrate", island(lazy))]
#[cfg_attr(not(feature = "hydrate"), island)]
fn MaintenanceBoard() -> impl IntoView {
    let i18n = use_i18n();
    let set = ServerAction::<SetMaintenance>::new();
    let end = ServerAction::<EndMaintenance>::new();
    let zone_known = crate::components::calendar::use_browser_zone();
    let page = Resource::new(
        move || (set.version().get(), end.version().get(), zone_known.get()),
        |_| get_maintenance_page(),
    );
    // Effects run only in the browser: true once the page is hydrated (tests wait for it).
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    view! {
        <section class="maintenance" data-hydrated=move || hydrated.get().to_string()>
            <h1>{t!(i18n, maintenance_title)}</h1>
            <p class="lede">{t!(i18n, maintenance_intro)}</p>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    page.get()
                        .map(|result| match result {
                            Ok(page) => {
                                let MaintenancePage { list, nodes, zone, now } = page;
                                let zone_name = zone.name.clone();
                                let zone = StoredValue::new(zone);
                                Either::Left(view! {
                                    <p class="hint">{t!(i18n, maintenance_zone, zone = move || zone_name.clone())}</p>
                                    <MaintenanceForm nodes set />
                                    <h2>{t!(i18n, maintenance_list_title)}</h2>
                                    <MaintenanceTable list zone now end />
                                })
                            }
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

#[component]
fn MaintenanceForm(nodes: Vec<NodeChoice>, set: ServerAction<SetMaintenance>) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <section class="maintenance-new" aria-labelledby="maintenance-new-title">
            <h2 id="maintenance-new-title">{t!(i18n, maintenance_new)}</h2>
            <ActionForm action=set attr:class="maintenance-form">
                <label for="maintenance-target">{t!(i18n, maintenance_target)}</label>
                <select id="maintenance-target" name="target" required>
                    {nodes
                        .into_iter()
                        .map(|node| {
                            let name = node.name.clone();
                            view! {
                                <optgroup label=node.name.clone()>
                                    <option value=format!("node:{}", node.id)>
                                        {t!(i18n, maintenance_whole_node, node = move || name.clone())}
                                    </option>
                                    {node
                                        .gpus
                                        .into_iter()
                                        .map(|gpu| {
                                            view! {
                                                <option value=format!("gpu:{}", gpu.id)>
                                                    {format!("{} · {}", gpu.label, gpu.model)}
                                                </option>
                                            }
                                        })
                                        .collect_view()}
                                </optgroup>
                            }
                        })
                        .collect_view()}
                </select>
                <label for="maintenance-start">{t!(i18n, maintenance_start)}</label>
                <input id="maintenance-start" name="start" type="datetime-local" step="900" required />
                <label for="maintenance-end">{t!(i18n, maintenance_end)}</label>
                <input id="maintenance-end" name="end" type="datetime-local" step="900" required />
                <label for="maintenance-reason">{t!(i18n, maintenance_reason)}</label>
                <input
                    id="maintenance-reason"
                    name="reason"
                    required
                    maxlength="200"
                    placeholder=move || t_string!(i18n, maintenance_reason_hint).to_string()
                />
                <label class="check maintenance-release">
                    <input type="checkbox" name="release" value="on" />
                    " "
                    {t!(i18n, maintenance_release)}
                </label>
                <button type="submit" class="button-primary">{t!(i18n, maintenance_submit)}</button>
            </ActionForm>
            {move || {
                set.value()
                    .get()
                    .map(|result| match result {
                        Ok(created) => {
                            let gpus = created
                                .iter()
                                .map(|m| m.gpu_label.clone())
                                .collect::<Vec<_>>()
                                .join(", ");
                            Either::Left(view! {
                                <p class="saved" role="status">
                                    {t!(i18n, maintenance_created, gpus = move || gpus.clone())}
                                </p>
                            })
                        }
                        Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                    })
            }}
        </section>
    }
}

#[component]
fn MaintenanceTable(
    list: Vec<MaintenanceWindow>,
    zone: StoredValue<ZoneOffsets>,
    now: chrono::DateTime<chrono::Utc>,
    end: ServerAction<EndMaintenance>,
) -> impl IntoView {
    let i18n = use_i18n();
    let ended = move || {
        end.value().get().map(|result| match result {
            Ok(window) => {
                let id = window.id;
                Either::Left(view! { <p class="saved" role="status">{t!(i18n, maintenance_ended, id = id)}</p> })
            }
            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
        })
    };
    if list.is_empty() {
        return Either::Left(view! {
            {ended}
            <p class="empty">{t!(i18n, maintenance_none)}</p>
        });
    }
    Either::Right(view! {
        {ended}
        <div class="table-scroll">
            <table class="maintenance-table">
                <thead>
                    <tr>
                        <th scope="col">"#"</th>
                        <th scope="col">{t!(i18n, panel_gpu)}</th>
                        <th scope="col">{t!(i18n, panel_window)}</th>
                        <th scope="col">{t!(i18n, maintenance_col_reason)}</th>
                        <th scope="col">{t!(i18n, maintenance_col_set_by)}</th>
                        <th scope="col">{t!(i18n, col_status)}</th>
                        <th scope="col"><span class="visually-hidden">{t!(i18n, maintenance_end_now)}</span></th>
                    </tr>
                </thead>
                <tbody>
                    {list
                        .into_iter()
                        .map(|m| {
                            let phase = m.phase(now);
                            let when = zone.with_value(|zone| {
                                format!(
                                    "{} – {}",
                                    crate::domain::time_text::date_minute(zone.local(m.window.start())),
                                    crate::domain::time_text::date_minute(zone.local(m.window.end()))
                                )
                            });
                            let id = m.id;
                            let phase_text = move || match phase {
                                MaintenancePhase::Upcoming => t_string!(i18n, maintenance_upcoming),
                                MaintenancePhase::Ongoing | MaintenancePhase::Over => {
                                    t_string!(i18n, maintenance_ongoing)
                                }
                            };
                            let button = move || match phase {
                                MaintenancePhase::Upcoming => t_string!(i18n, maintenance_remove),
                                MaintenancePhase::Ongoing | MaintenancePhase::Over => {
                                    t_string!(i18n, maintenance_end_now)
                                }
                            };
                            view! {
                                <tr data-phase=format!("{phase:?}").to_lowercase()>
                                    <td>{id}</td>
                                    <td>{format!("{} · {}", m.gpu_label, m.model)}</td>
                                    <td><time datetime=m.window.start().to_rfc3339()>{when}</time></td>
                                    <td>{reason_words(i18n, &m)}</td>
                                    <td>{set_by(i18n, &m)}</td>
                                    <td>{phase_text}</td>
                                    <td>
                                        <ActionForm action=end>
                                            <input type="hidden" name="id" value=id />
                                            <button
                                                type="submit"
                                                class="button-secondary"
                                                aria-label=move || t_string!(i18n, maintenance_end_label, id = id).to_string()
                                            >
                                                {button}
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
    })
}

/// Why a window was set: Berth's own reason in the reader's language, an admin's as typed.
fn reason_words(i18n: leptos_i18n::I18nContext<Locale>, m: &MaintenanceWindow) -> String {
    match m.berth_reason {
        Some(BerthMaintenance::FellOffBus { xid }) => {
            t_string!(i18n, maintenance_reason_fell_off_bus, xid = xid).to_string()
        }
        None => m.reason.clone(),
    }
}

/// Who set a window: the admin, or Berth itself.
fn set_by(i18n: leptos_i18n::I18nContext<Locale>, m: &MaintenanceWindow) -> String {
    match (&m.created_by, m.berth_reason) {
        (_, Some(_)) => t_string!(i18n, maintenance_set_by_berth).to_string(),
        (Some(name), None) => name.clone(),
        (None, None) => String::new(),
    }
}
