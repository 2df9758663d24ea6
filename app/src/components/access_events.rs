//! What node agents did and saw about access to GPUs (opened, closed, processes stopped,
//! unauthorized use, over-share), as a table: on a reservation's page and on a GPU's page.

use crate::domain::telemetry::{AccessKind, GpuAccessEvent};
use crate::domain::time_text::date_minute;
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use leptos::prelude::*;
use leptos_i18n::I18nContext;

/// One event in words.
pub fn event_text(i18n: I18nContext<Locale>, event: &GpuAccessEvent) -> String {
    let user = event.user.clone().unwrap_or_default();
    let pid = event.pid.unwrap_or_default();
    match event.kind {
        AccessKind::Granted => t_string!(i18n, access_granted, user).to_string(),
        AccessKind::Revoked => t_string!(i18n, access_revoked, user).to_string(),
        AccessKind::Terminated => t_string!(i18n, access_terminated, user, pid).to_string(),
        AccessKind::Killed => t_string!(i18n, access_killed, user, pid).to_string(),
        AccessKind::Unauthorized => t_string!(i18n, access_unauthorized, user, pid).to_string(),
        AccessKind::OverShare => {
            let memory = event.memory_mib.unwrap_or_default();
            t_string!(i18n, access_over_share, user, pid, memory).to_string()
        }
    }
}

/// The events, newest first, times in `zone`; unauthorized use and over-share stand out.
#[component]
pub fn AccessEventTable(events: Vec<GpuAccessEvent>, zone: ZoneOffsets) -> impl IntoView {
    let i18n = use_i18n();
    let empty = events.is_empty();
    let rows = events
        .iter()
        .map(|event| {
            let alarm = matches!(event.kind, AccessKind::Unauthorized | AccessKind::OverShare);
            view! {
                <tr class:access-alarm=alarm data-kind=event.kind.as_str()>
                    <td><time datetime=event.at.to_rfc3339()>{date_minute(zone.local(event.at))}</time></td>
                    <td><code>{event.uuid.clone()}</code></td>
                    <td>{event_text(i18n, event)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        {empty.then(|| view! { <p class="empty">{t!(i18n, reservation_events_none)}</p> })}
        <div class="table-scroll" hidden=empty>
            <table class="token-table access-events">
                <thead>
                    <tr>
                        <th scope="col">{t!(i18n, reservation_event_at)}</th>
                        <th scope="col">"GPU"</th>
                        <th scope="col">{t!(i18n, reservation_event_what)}</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
}
