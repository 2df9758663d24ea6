//! `/admin/deliveries`: platform admins see what Berth sent outside the portal and what it could
//! not — each e-mail queued, sent or failed with the server's reason, and its tries. Rendered on
//! the server only (no island).

use crate::api::notify::{DeliveriesPage as DeliveriesData, get_deliveries_page};
use crate::components::error::ErrorPanel;
use crate::domain::notify::{DeliveryRow, DeliveryStatus};
use crate::domain::time_text::date_minute;
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use leptos::either::{Either, EitherOf3};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// The deliveries page.
#[component]
pub fn DeliveriesPage() -> impl IntoView {
    let i18n = use_i18n();
    let (status, cursor) = use_query_map().with_untracked(|q| {
        (
            q.get("status"),
            q.get("cursor").filter(|cursor| !cursor.is_empty()),
        )
    });
    let on_later_page = cursor.is_some();
    let data = Resource::new(
        || (),
        move |()| get_deliveries_page(status.clone(), cursor.clone()),
    );
    view! {
        // A plain string, read once (see the wallet page).
        <Title text=t_string!(i18n, deliveries_title).to_string() />
        <section class="deliveries">
            <h1>{t!(i18n, deliveries_title)}</h1>
            <p class="lede">{t!(i18n, deliveries_intro)}</p>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    data.get()
                        .map(|result| match result {
                            Ok(data) => Either::Left(view! { <DeliveriesView data on_later_page /> }),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

#[component]
fn DeliveriesView(data: DeliveriesData, on_later_page: bool) -> impl IntoView {
    let i18n = use_i18n();
    let DeliveriesData {
        rows,
        next,
        counts,
        status,
        email_available,
        zone,
    } = data;
    let filter = |target: Option<DeliveryStatus>, label: String| {
        let href = target.map_or("/admin/deliveries".to_owned(), |s| {
            format!("/admin/deliveries?status={}", s.as_str())
        });
        let current = (target == status).then_some("page");
        view! { <a href=href aria-current=current class="filter-link">{label}</a> }
    };
    let filters = view! {
        <nav class="delivery-filters" aria-label=t_string!(i18n, deliveries_filter).to_string()>
            {filter(None, t_string!(i18n, deliveries_all).to_string())}
            {filter(
                Some(DeliveryStatus::Queued),
                t_string!(i18n, deliveries_queued_count, count = counts.queued).to_string(),
            )}
            {filter(
                Some(DeliveryStatus::Sent),
                t_string!(i18n, deliveries_sent_count, count = counts.sent).to_string(),
            )}
            {filter(
                Some(DeliveryStatus::Failed),
                t_string!(i18n, deliveries_failed_count, count = counts.failed).to_string(),
            )}
        </nav>
    };
    let note =
        (!email_available).then(|| view! { <p class="hint">{t!(i18n, deliveries_no_email)}</p> });
    let base = status.map_or("/admin/deliveries".to_owned(), |s| {
        format!("/admin/deliveries?status={}", s.as_str())
    });
    if rows.is_empty() && !on_later_page {
        return Either::Left(view! {
            {filters}
            {note}
            <p class="empty">{t!(i18n, deliveries_none)}</p>
        });
    }
    let zone_name = zone.name.clone();
    let rows = rows
        .into_iter()
        .map(|row| view! { <Row row zone=zone.clone() /> })
        .collect_view();
    Either::Right(view! {
        {filters}
        {note}
        <p class="hint">{t!(i18n, times_in_zone, zone = move || zone_name.clone())}</p>
        <div class="table-scroll">
            <table class="deliveries-table">
                <thead>
                    <tr>
                        <th scope="col">{t!(i18n, deliveries_col_queued)}</th>
                        <th scope="col">{t!(i18n, deliveries_col_kind)}</th>
                        <th scope="col">{t!(i18n, deliveries_col_recipient)}</th>
                        <th scope="col">{t!(i18n, deliveries_col_status)}</th>
                        <th scope="col" class="num">{t!(i18n, deliveries_col_attempts)}</th>
                        <th scope="col">{t!(i18n, deliveries_col_detail)}</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
        <crate::components::table::PageLinks next on_later_page base />
    })
}

#[component]
fn Row(row: DeliveryRow, zone: ZoneOffsets) -> impl IntoView {
    let i18n = use_i18n();
    let at = |when: chrono::DateTime<chrono::Utc>| {
        view! { <time datetime=when.to_rfc3339()>{date_minute(zone.local(when))}</time> }
    };
    let (status_text, status_class) = match row.status {
        DeliveryStatus::Queued => (
            t_string!(i18n, deliveries_status_queued),
            "badge badge-warn",
        ),
        DeliveryStatus::Sent => (t_string!(i18n, deliveries_status_sent), "badge badge-ok"),
        DeliveryStatus::Failed => (
            t_string!(i18n, deliveries_status_failed),
            "badge badge-danger",
        ),
    };
    let detail = match (row.status, row.sent_at) {
        (DeliveryStatus::Sent, Some(sent)) => EitherOf3::A(view! {
            <span>{t!(i18n, deliveries_sent_at)} " " {at(sent)}</span>
        }),
        (DeliveryStatus::Queued, _) => EitherOf3::B(view! {
            <span>{t!(i18n, deliveries_next_at)} " " {at(row.next_at)}</span>
        }),
        _ => EitherOf3::C(()),
    };
    let error = row
        .last_error
        .clone()
        .map(|reason| view! { <span class="delivery-error">{reason}</span> });
    view! {
        <tr data-delivery=row.id data-status=row.status.as_str()>
            <td>{at(row.created_at)}</td>
            <td><code>{row.kind.as_str()}</code></td>
            <td>{row.recipient.clone()}</td>
            <td><span class=status_class>{status_text.to_string()}</span></td>
            <td class="num">{row.attempts}</td>
            <td class="delivery-detail">{detail} {error}</td>
        </tr>
    }
}
