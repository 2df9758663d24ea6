//! `/admin/nodes`: platform admins add GPU hosts (nodes) and create the tokens their agents
//! report with, the interface twin of `berth node add NAME`; they see which nodes report, from
//! where, and revoke a node's tokens. The forms post without JavaScript too (the token itself is
//! shown only after hydration, since a plain post cannot carry it back).

use crate::api::nodes::{
    AcceptGpu, AddNodeToken, NodeRow, NodesPage, RevokeNodeTokens, get_nodes_page,
};
use crate::components::error::ErrorPanel;
use crate::components::telemetry::{SourceBadge, now_utc, use_poll};
use crate::domain::inventory::PendingGpu;
use crate::domain::telemetry::LiveNode;
use crate::i18n::*;
use crate::text::format::t_count;
use chrono::{DateTime, TimeDelta, Utc};
use leptos::either::{Either, EitherOf3};
use leptos::prelude::*;
use leptos_i18n::I18nContext;
use leptos_meta::Title;
use std::time::Duration;

/// The nodes page.
#[component]
pub fn NodesAdminPage() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        // A plain string, read once: leptos_meta reads a reactive title after the render, and
        // under load its signal was sometimes gone by then (a panic that cut the page off).
        <Title text=t_string!(i18n, nodes_title).to_string() />
        <NodesBoard />
    }
}

/// The nodes, their tokens and the forms, updated in place (an island).
#[cfg_attr(feature = "hydrate", island(lazy))]
#[cfg_attr(not(feature = "hydrate"), island)]
fn NodesBoard() -> impl IntoView {
    let i18n = use_i18n();
    let add = ServerAction::<AddNodeToken>::new();
    let revoke = ServerAction::<RevokeNodeTokens>::new();
    let accept = ServerAction::<AcceptGpu>::new();
    let page = Resource::new(
        move || {
            (
                add.version().get(),
                revoke.version().get(),
                accept.version().get(),
            )
        },
        |_| get_nodes_page(),
    );
    // Refreshes the "12 s ago" texts in the browser.
    let tick = use_poll(Duration::from_secs(5));
    // Effects run only in the browser: true once the page is hydrated (tests wait for it).
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    view! {
        <section class="nodes" data-hydrated=move || hydrated.get().to_string()>
            <h1>{t!(i18n, nodes_title)}</h1>
            <p class="lede">{t!(i18n, nodes_intro)}</p>
            <p class="hint">{t!(i18n, nodes_security)}</p>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    page.get()
                        .map(|result| match result {
                            Ok(page) => {
                                let NodesPage {
                                    nodes,
                                    pending,
                                    portal_url,
                                } = page;
                                Either::Left(view! {
                                    <PendingGpus pending accept />
                                    <AddNodeForm add portal_url />
                                    <h2>{t!(i18n, nodes_list_title)}</h2>
                                    <NodeTable nodes revoke tick />
                                })
                            }
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

/// The name form and, once a token is issued, the token and the agent's command line.
#[component]
fn AddNodeForm(add: ServerAction<AddNodeToken>, portal_url: String) -> impl IntoView {
    let i18n = use_i18n();
    let portal_url = StoredValue::new(portal_url);
    view! {
        <section class="nodes-new" aria-labelledby="nodes-new-title">
            <h2 id="nodes-new-title">{t!(i18n, nodes_add_title)}</h2>
            <ActionForm action=add attr:class="nodes-form">
                <label for="node-name">{t!(i18n, nodes_name)}</label>
                <input
                    id="node-name"
                    name="name"
                    required
                    maxlength="128"
                    autocomplete="off"
                    spellcheck="false"
                    aria-describedby="node-name-hint"
                    placeholder=move || t_string!(i18n, nodes_name_placeholder).to_string()
                />
                <button type="submit" class="button-primary">{t!(i18n, nodes_add_submit)}</button>
                <p id="node-name-hint" class="hint">{t!(i18n, nodes_name_hint)}</p>
            </ActionForm>
            {move || {
                add.value()
                    .get()
                    .map(|result| match result {
                        Ok(issued) => {
                            let name = issued.name.clone();
                            // The token goes in a file: other users of the host can read a
                            // command line.
                            let command = portal_url.with_value(|url| {
                                format!("berth agent --portal {url} --token-file /etc/berth/agent-token")
                            });
                            Either::Left(view! {
                                <div class="token-created node-token" role="status">
                                    <p class="token-created-title">
                                        {t!(i18n, nodes_token_title, name = move || name.clone())}
                                    </p>
                                    <p class="node-token-once">
                                        <strong>{t!(i18n, nodes_token_once)}</strong>
                                    </p>
                                    <code class="token-secret">{issued.token}</code>
                                    <p class="node-command-intro">{t!(i18n, nodes_command_intro)}</p>
                                    <pre class="node-command"><code>{command}</code></pre>
                                    <p class="hint">{t!(i18n, nodes_command_hint)}</p>
                                </div>
                            })
                        }
                        Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                    })
            }}
        </section>
    }
}

/// GPUs agents reported for the first time, each with a button that accepts it into the
/// inventory (until then it is not listed and cannot be booked). Nothing when none waits.
#[component]
fn PendingGpus(pending: Vec<PendingGpu>, accept: ServerAction<AcceptGpu>) -> impl IntoView {
    let i18n = use_i18n();
    let failed = move || {
        accept
            .value()
            .get()
            .and_then(Result::err)
            .map(|error| view! { <ErrorPanel error /> })
    };
    if pending.is_empty() {
        return Either::Left(view! { {failed} });
    }
    Either::Right(view! {
        <section class="nodes-pending" aria-labelledby="nodes-pending-title">
            <h2 id="nodes-pending-title">{t!(i18n, nodes_pending_title)}</h2>
            <p class="hint">{t!(i18n, nodes_pending_hint)}</p>
            {failed}
            <div class="table-scroll">
                <table class="nodes-table nodes-pending-table">
                    <thead>
                        <tr>
                            <th scope="col">{t!(i18n, nodes_col_name)}</th>
                            <th scope="col">{t!(i18n, nodes_pending_col_model)}</th>
                            <th scope="col">{t!(i18n, nodes_pending_col_uuid)}</th>
                            <th scope="col"><span class="visually-hidden">{t!(i18n, nodes_pending_accept)}</span></th>
                        </tr>
                    </thead>
                    <tbody>
                        {pending
                            .into_iter()
                            .map(|gpu| {
                                let label = format!("{} · {}", gpu.node, gpu.uuid);
                                view! {
                                    <tr data-pending-gpu=gpu.id>
                                        <th scope="row">{gpu.node.clone()}</th>
                                        <td>{gpu.model.clone()}</td>
                                        <td class="mono">{gpu.uuid.clone()}</td>
                                        <td>
                                            <ActionForm action=accept>
                                                <input type="hidden" name="id" value=gpu.id />
                                                <button
                                                    type="submit"
                                                    class="button-primary"
                                                    aria-label=move || {
                                                        t_string!(i18n, nodes_pending_accept_label, gpu = label.clone()).to_string()
                                                    }
                                                >
                                                    {t!(i18n, nodes_pending_accept)}
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
        </section>
    })
}

/// Every node with its agent's state and a button that revokes its tokens.
#[component]
fn NodeTable(
    nodes: Vec<NodeRow>,
    revoke: ServerAction<RevokeNodeTokens>,
    tick: ReadSignal<u64>,
) -> impl IntoView {
    let i18n = use_i18n();
    let revoked = move || {
        revoke.value().get().map(|result| match result {
            Ok(0) => EitherOf3::A(
                view! { <p class="saved" role="status">{t!(i18n, nodes_revoked_none)}</p> },
            ),
            Ok(count) => EitherOf3::B(
                view! { <p class="saved" role="status">{move || t_count!(i18n, count, nodes_revoked_singular, nodes_revoked_plural)}</p> },
            ),
            Err(error) => EitherOf3::C(view! { <ErrorPanel error /> }),
        })
    };
    if nodes.is_empty() {
        return Either::Left(view! {
            {revoked}
            <p class="empty">{t!(i18n, nodes_none)}</p>
        });
    }
    Either::Right(view! {
        {revoked}
        <div class="table-scroll">
            <table class="nodes-table">
                <thead>
                    <tr>
                        <th scope="col">{t!(i18n, nodes_col_name)}</th>
                        <th scope="col">{t!(i18n, nodes_col_host)}</th>
                        <th scope="col">{t!(i18n, nodes_col_source)}</th>
                        <th scope="col">{t!(i18n, nodes_col_driver)}</th>
                        <th scope="col">{t!(i18n, nodes_col_last_report)}</th>
                        <th scope="col" class="num">{t!(i18n, nodes_col_gpus)}</th>
                        <th scope="col" class="num">{t!(i18n, nodes_col_tokens)}</th>
                        <th scope="col"><span class="visually-hidden">{t!(i18n, nodes_revoke)}</span></th>
                    </tr>
                </thead>
                <tbody>
                    {nodes
                        .into_iter()
                        .map(|node| {
                            let live = LiveNode {
                                node_id: node.id,
                                source: node.source,
                                stale: node.stale,
                                last_seen: node.last_seen,
                                driver_version: node.driver_version.clone(),
                            };
                            let id = node.id;
                            let label_name = node.name.clone();
                            view! {
                                <tr data-node=node.name.clone() data-stale=node.stale.to_string()>
                                    <th scope="row">
                                        <span class="node-name">{node.name.clone()}</span>
                                        {node
                                            .is_demo
                                            .then(|| view! { <span class="badge badge-demo">{t!(i18n, demo_badge)}</span> })}
                                    </th>
                                    <td class="mono">{node.hostname.clone()}</td>
                                    <td><SourceBadge node=Some(live) /></td>
                                    <td class="mono">{node.driver_version.clone().unwrap_or_else(|| "—".to_owned())}</td>
                                    <td>
                                        <LastReport last_seen=node.last_seen stale=node.stale tick />
                                    </td>
                                    <td class="num">{node.gpus}</td>
                                    <td class="num" data-col="tokens">{node.live_tokens}</td>
                                    <td>
                                        <ActionForm action=revoke>
                                            <input type="hidden" name="id" value=id />
                                            <button
                                                type="submit"
                                                class="button-secondary"
                                                aria-label=move || {
                                                    t_string!(i18n, nodes_revoke_label, name = label_name.clone()).to_string()
                                                }
                                            >
                                                {t!(i18n, nodes_revoke)}
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

/// When a node's agent last reported, relative to now ("12 s ago"), or how long a silent one
/// has been quiet; the exact UTC time is in the tooltip.
#[component]
fn LastReport(
    last_seen: Option<DateTime<Utc>>,
    stale: bool,
    tick: ReadSignal<u64>,
) -> impl IntoView {
    let i18n = use_i18n();
    let Some(seen) = last_seen else {
        return EitherOf3::A(view! { <span class="node-never">{t!(i18n, nodes_never)}</span> });
    };
    let text = move || {
        tick.track();
        let duration = duration_text(i18n, now_utc() - seen);
        if stale {
            t_string!(i18n, nodes_silent_for, duration = duration).to_string()
        } else {
            t_string!(i18n, nodes_seen_ago, duration = duration).to_string()
        }
    };
    let datetime = seen.to_rfc3339();
    let exact = format!(
        "{} UTC",
        crate::domain::time_text::date_second(seen.naive_utc())
    );
    if stale {
        EitherOf3::B(view! {
            <span class="badge badge-stale" title=move || t_string!(i18n, stale_hint).to_string()>
                <span aria-hidden="true">"⚠ "</span>
                <time datetime=datetime title=exact>{text}</time>
            </span>
        })
    } else {
        EitherOf3::C(view! { <time class="node-seen" datetime=datetime title=exact>{text}</time> })
    }
}

/// A length of time in its largest whole unit: "12 s", "5 min", "3 h", "2 days".
fn duration_text(i18n: I18nContext<Locale>, elapsed: TimeDelta) -> String {
    let seconds = elapsed.num_seconds().max(0);
    match seconds {
        0..60 => t_count!(i18n, seconds, nodes_seconds_singular, nodes_seconds_plural),
        60..3_600 => t_count!(
            i18n,
            seconds / 60,
            nodes_minutes_singular,
            nodes_minutes_plural
        ),
        3_600..86_400 => t_count!(
            i18n,
            seconds / 3_600,
            nodes_hours_singular,
            nodes_hours_plural
        ),
        _ => t_count!(
            i18n,
            seconds / 86_400,
            nodes_days_singular,
            nodes_days_plural
        ),
    }
}
