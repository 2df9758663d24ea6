//! `/reservations`: the user's reservations, upcoming and past, with cancel before the start.

use crate::api::reservations::{CancelReservation, list_my_reservations};
use crate::components::error::ErrorPanel;
use crate::domain::money::Currency;
use crate::domain::reservation::{MyReservations, PaymentStatus, Reservation, ReservationStatus};
use crate::domain::schedule::Share;
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use crate::text::format::MoneyText;
use leptos::either::Either;
use leptos::prelude::*;
use leptos_meta::Title;

/// The "My reservations" page.
#[component]
pub fn ReservationsPage() -> impl IntoView {
    let i18n = use_i18n();
    let cursor = leptos_router::hooks::use_query_map()
        .with_untracked(|query| query.get("cursor"))
        .filter(|cursor| !cursor.is_empty());
    view! {
        // A plain string, read once: leptos_meta reads a reactive title after the render, and
        // under load its signal was sometimes gone by then (a panic that cut the page off).
        <Title text=t_string!(i18n, reservations_title).to_string() />
        <section class="reservations">
            <h1>{t!(i18n, reservations_title)}</h1>
            <p class="lede">{t!(i18n, reservations_intro)}</p>
            <ReservationsBoard cursor />
        </section>
    }
}

/// The lists, with cancel buttons that work in place (an island).
#[cfg_attr(feature = "hydrate", island(lazy))]
#[cfg_attr(not(feature = "hydrate"), island)]
fn ReservationsBoard(
    /// Where the page starts (an older page); the newest when absent.
    cursor: Option<String>,
) -> impl IntoView {
    let i18n = use_i18n();
    let cancel = ServerAction::<CancelReservation>::new();
    let zone_known = crate::components::calendar::use_browser_zone();
    let on_later_page = cursor.is_some();
    let list = Resource::new(
        move || (cancel.version().get(), zone_known.get()),
        move |_| list_my_reservations(cursor.clone()),
    );
    view! {
            {move || cancel.value().get().and_then(Result::err).map(|error| view! { <ErrorPanel error /> })}
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    list.get().map(|result| match result {
                        Ok(mine) => {
                            let MyReservations { list: all, zone, currency, refunds_now, payment_notes, idle_now, next } = mine;
                            let payment_notes = StoredValue::new(payment_notes);
                            let idle_now = StoredValue::new(idle_now);
                            let refunds_now = StoredValue::new(refunds_now);
                            let zone_name = zone.name.clone();
                            let zone = StoredValue::new(zone);
                            let (upcoming, past): (Vec<Reservation>, Vec<Reservation>) = all
                                .into_iter()
                                .partition(|r| matches!(r.status, ReservationStatus::Confirmed | ReservationStatus::Active));
                            let mut upcoming = upcoming;
                            upcoming.sort_by_key(|r| r.window.start());
                            Either::Left(view! {
                                <p class="hint">{t!(i18n, reservations_zone, zone = move || zone_name.clone())}</p>
                                <h2>{t!(i18n, reservations_upcoming)}</h2>
                                <ReservationTable list=upcoming currency=currency.clone() zone cancel refunds_now payment_notes idle_now />
                                <h2>{t!(i18n, reservations_past)}</h2>
                                <ReservationTable list=past currency zone cancel refunds_now payment_notes idle_now />
                                <crate::components::table::PageLinks next on_later_page base="/reservations" />
                            })
                        }
                        Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                    })
                }}
            </Transition>
    }
}

#[component]
fn ReservationTable(
    list: Vec<Reservation>,
    currency: Currency,
    zone: StoredValue<ZoneOffsets>,
    cancel: ServerAction<CancelReservation>,
    refunds_now: StoredValue<Vec<(i64, i64)>>,
    payment_notes: StoredValue<Vec<(i64, String)>>,
    idle_now: StoredValue<Vec<i64>>,
) -> impl IntoView {
    let i18n = use_i18n();
    if list.is_empty() {
        return Either::Left(view! { <p class="empty">{t!(i18n, reservations_none)}</p> });
    }
    Either::Right(view! {
        <div class="table-scroll">
            <table class="reservation-table">
                <thead>
                    <tr>
                        <th scope="col">"#"</th>
                        <th scope="col">{t!(i18n, panel_gpu)}</th>
                        <th scope="col">{t!(i18n, panel_window)}</th>
                        <th scope="col">{t!(i18n, panel_share)}</th>
                        <th scope="col">{t!(i18n, col_status)}</th>
                        <th scope="col" class="num">{t!(i18n, panel_price)}</th>
                        <th scope="col"><span class="visually-hidden">{t!(i18n, reservations_cancel)}</span></th>
                    </tr>
                </thead>
                <tbody>
                    {list
                        .into_iter()
                        .map(|r| {
                            let status = r.status;
                            let status_text = move || match status {
                                ReservationStatus::Confirmed => t_string!(i18n, reservation_confirmed),
                                ReservationStatus::Active => t_string!(i18n, reservation_active),
                                ReservationStatus::Completed => t_string!(i18n, reservation_completed),
                                ReservationStatus::Cancelled => t_string!(i18n, reservation_cancelled),
                            };
                            let share = move || match r.share {
                                Share::Whole => t_string!(i18n, share_whole),
                                Share::Half => t_string!(i18n, share_half),
                                Share::Quarter => t_string!(i18n, share_quarter),
                            };
                            // Each end kept on one line: a narrow column breaks between them,
                            // never inside a date.
                            let (from, until) = zone.with_value(|zone| {
                                (
                                    crate::domain::time_text::date_minute(zone.local(r.window.start())),
                                    crate::domain::time_text::date_minute(zone.local(r.window.end())),
                                )
                            });
                            let id = r.id;
                            let idle = idle_now.with_value(|ids| ids.contains(&id));
                            let early_from = r.early_from.map(|was| {
                                zone.with_value(|zone| crate::domain::time_text::date_minute(zone.local(was)))
                            });
                            let may_start_early = r.start_early && early_from.is_none() && status == ReservationStatus::Confirmed;
                            view! {
                                <tr
                                    data-status=format!("{status:?}").to_lowercase()
                                    data-payment=r.payment_status.as_str()
                                    class:payment-due=r.payment_status == PaymentStatus::Due && status == ReservationStatus::Confirmed
                                >
                                    <td>
                                        <a href=format!("/reservations/{id}") aria-label=move || t_string!(i18n, reservation_open_label, id = id).to_string()>{id}</a>
                                    </td>
                                    <td>{format!("{} · {} × {}", r.node_name, r.gpu_ids.len(), r.model)}</td>
                                    <td>
                                        <time datetime=r.window.start().to_rfc3339()><span class="moment">{from}</span>" – "<span class="moment">{until}</span></time>
                                        {early_from.map(|was| view! {
                                            <span class="early-note">{t!(i18n, reservations_started_early, was = move || was.clone())}</span>
                                        })}
                                        {may_start_early.then(|| view! {
                                            <span class="early-note">{t!(i18n, reservations_may_start_early)}</span>
                                        })}
                                    </td>
                                    <td>{share}</td>
                                    <td>
                                        {status_text}
                                        {idle.then(|| view! {
                                            <a class="idle-tag" href=format!("/reservations/{id}") title=move || t_string!(i18n, reservations_idle_now_hint).to_string()>
                                                {t!(i18n, reservations_idle_now)}
                                            </a>
                                        })}
                                    </td>
                                    <td class="num">
                                        <MoneyText amount=crate::domain::money::Money::from_minor(r.price_minor) currency=currency.clone() />
                                        {payment_notes.with_value(|notes| notes.iter().find(|(rid, _)| *rid == id).map(|(_, note)| note.clone())).map(|note| view! { <span class="payment-note">{note}</span> })}
                                        {(r.refunded_minor > 0).then(|| {
                                            let refunded = crate::domain::money::Money::from_minor(r.refunded_minor);
                                            let currency = currency.clone();
                                            view! {
                                                <span class="refund-note">
                                                    {t!(i18n, reservations_refunded, amount = move || view! { <MoneyText amount=refunded currency=currency.clone() /> })}
                                                </span>
                                            }
                                        })}
                                    </td>
                                    <td class="cancel-cell">
                                        {refunds_now.with_value(|refunds| refunds.iter().find(|(rid, _)| *rid == id).map(|(_, minor)| *minor)).map(|minor| {
                                            let refund = crate::domain::money::Money::from_minor(minor);
                                            let currency = currency.clone();
                                            view! {
                                                <span class="refund-note" data-refund-minor=minor>
                                                    {t!(i18n, reservations_refund_now, amount = move || view! { <MoneyText amount=refund currency=currency.clone() /> })}
                                                </span>
                                            }
                                        })}
                                        {matches!(status, ReservationStatus::Confirmed | ReservationStatus::Active).then(|| view! {
                                            <a
                                                class="add-to-calendar"
                                                href=format!("/api/v1/reservations/{id}/calendar.ics")
                                                download=format!("berth-reservation-{id}.ics")
                                                aria-label=move || t_string!(i18n, add_to_calendar_label, id = id).to_string()
                                            >
                                                {t!(i18n, add_to_calendar)}
                                            </a>
                                        })}
                                        {(status == ReservationStatus::Confirmed).then(|| view! {
                                            <ActionForm action=cancel>
                                                <input type="hidden" name="id" value=id />
                                                <button type="submit" class="button-secondary"
                                                    aria-label=move || t_string!(i18n, reservations_cancel_label, id = id).to_string()>
                                                    {t!(i18n, reservations_cancel)}
                                                </button>
                                            </ActionForm>
                                        })}
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
