//! `/admin/payments`: platform admins see the reservations whose payment is due — who, when it
//! starts, when it is released if still unpaid, and the owner's balance. Rendered on the server
//! only (no island).

use crate::api::ledger::{PaymentsPage as PaymentsData, get_payments_page};
use crate::components::error::ErrorPanel;
use crate::domain::money::Money;
use crate::domain::time_text::date_minute;
use crate::i18n::*;
use crate::text::format::MoneyText;
use leptos::either::Either;
use leptos::prelude::*;
use leptos_meta::Title;

/// The payments page.
#[component]
pub fn PaymentsPage() -> impl IntoView {
    let i18n = use_i18n();
    let data = Resource::new(|| (), |()| get_payments_page());
    view! {
        // A plain string, read once (see the wallet page).
        <Title text=t_string!(i18n, payments_title).to_string() />
        <section class="payments">
            <h1>{t!(i18n, payments_title)}</h1>
            <p class="lede">{t!(i18n, payments_intro)}</p>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    data.get()
                        .map(|result| match result {
                            Ok(data) => Either::Left(view! { <PaymentsView data /> }),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

#[component]
fn PaymentsView(data: PaymentsData) -> impl IntoView {
    let i18n = use_i18n();
    let PaymentsData {
        due,
        currency,
        zone,
    } = data;
    if due.is_empty() {
        return Either::Left(view! { <p class="empty">{t!(i18n, payments_none)}</p> });
    }
    let zone_name = zone.name.clone();
    let rows = due
        .into_iter()
        .map(|item| {
            let r = item.reservation;
            let short = item.balance.minor() < r.price_minor;
            view! {
                <tr data-reservation=r.id>
                    <td>{r.id}</td>
                    <td>{r.owner_name.clone()}</td>
                    <td>{format!("{} · {} × {}", r.node_name, r.gpu_ids.len(), r.model)}</td>
                    <td><time datetime=r.window.start().to_rfc3339()>{date_minute(zone.local(r.window.start()))}</time></td>
                    <td><time datetime=item.release_at.to_rfc3339()>{date_minute(zone.local(item.release_at))}</time></td>
                    <td class="num"><MoneyText amount=Money::from_minor(r.price_minor) currency=currency.clone() /></td>
                    <td class="num" class:negative=short><MoneyText amount=item.balance currency=currency.clone() /></td>
                </tr>
            }
        })
        .collect_view();
    Either::Right(view! {
        <p class="hint">{t!(i18n, times_in_zone, zone = move || zone_name.clone())}</p>
        <div class="table-scroll">
            <table class="payments-table">
                <thead>
                    <tr>
                        <th scope="col">"#"</th>
                        <th scope="col">{t!(i18n, payments_col_owner)}</th>
                        <th scope="col">{t!(i18n, panel_gpu)}</th>
                        <th scope="col">{t!(i18n, payments_col_start)}</th>
                        <th scope="col">{t!(i18n, payments_col_release)}</th>
                        <th scope="col" class="num">{t!(i18n, payments_col_price)}</th>
                        <th scope="col" class="num">{t!(i18n, payments_col_balance)}</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    })
}
