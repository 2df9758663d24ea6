//! `/wallet`: the user's prepaid credits — balance and every movement with the balance after
//! it. Rendered on the server only (no island).

use crate::api::ledger::{WalletPage as WalletData, get_wallet};
use crate::components::error::ErrorPanel;
use crate::domain::ledger::{TransactionKind, WalletEntry};
use crate::domain::money::{Currency, Money};
use crate::domain::time_text::date_minute;
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use crate::text::format::MoneyText;
use leptos::either::Either;
use leptos::prelude::*;
use leptos_meta::Title;

/// The wallet page.
#[component]
pub fn WalletPage() -> impl IntoView {
    let i18n = use_i18n();
    let data = Resource::new(|| (), |()| get_wallet());
    view! {
        // A plain string, read once: leptos_meta reads a reactive title after the render, and
        // under load its signal was sometimes gone by then (a panic that cut the page off).
        <Title text=t_string!(i18n, wallet_title).to_string() />
        <section class="wallet">
            <h1>{t!(i18n, wallet_title)}</h1>
            <p class="lede">{t!(i18n, wallet_intro)}</p>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    data.get()
                        .map(|result| match result {
                            Ok(data) => Either::Left(view! { <WalletView data /> }),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

#[component]
fn WalletView(data: WalletData) -> impl IntoView {
    let i18n = use_i18n();
    let WalletData { wallet, zone } = data;
    let currency = wallet.currency.clone();
    let zone_name = zone.name.clone();
    view! {
        <div class="wallet-balance">
            <span class="wallet-balance-label">{t!(i18n, wallet_balance)}</span>
            <strong class="wallet-balance-amount" data-balance-minor=wallet.balance.minor()>
                <MoneyText amount=wallet.balance currency=currency.clone() />
            </strong>
        </div>
        // Always shown: what bookings paid before their start hold, and what is left to book.
        {
            let available = wallet.funds().available();
            view! {
                <dl class="wallet-hold">
                    <dt>{t!(i18n, wallet_on_hold)}</dt>
                    <dd data-on-hold-minor=wallet.on_hold.minor()>
                        <MoneyText amount=wallet.on_hold currency=currency.clone() />
                    </dd>
                    <dt>{t!(i18n, wallet_available)}</dt>
                    <dd class:negative=available.minor() < 0 data-available-minor=available.minor()>
                        <MoneyText amount=available currency=currency.clone() />
                    </dd>
                </dl>
                <p class="hint">{t!(i18n, wallet_hold_hint)}</p>
            }
        }
        {(!wallet.payments_due.is_empty()).then(|| {
            let items = wallet
                .payments_due
                .iter()
                .map(|due| {
                    let id = due.reservation_id;
                    let start = date_minute(zone.local(due.start));
                    let release = date_minute(zone.local(due.release_at));
                    let price = due.price;
                    let currency = currency.clone();
                    view! {
                        <li data-reservation=id>
                            {t!(
                                i18n,
                                wallet_due_item,
                                id,
                                price = move || view! { <MoneyText amount=price currency=currency.clone() /> },
                                start = move || start.clone(),
                                release = move || release.clone()
                            )}
                        </li>
                    }
                })
                .collect_view();
            view! {
                <section class="payment-due" role="alert">
                    <h2>{t!(i18n, wallet_due_title)}</h2>
                    <p>{t!(i18n, wallet_due_intro)}</p>
                    <ul>{items}</ul>
                </section>
            }
        })}
        <div class="section-head">
            <h2>{t!(i18n, wallet_history)}</h2>
            {(!wallet.entries.is_empty()).then(|| view! {
                <a class="button-secondary" href="/api/v1/wallet?format=csv" download="berth-wallet.csv">
                    {t!(i18n, wallet_csv)}
                </a>
            })}
        </div>
        {if wallet.entries.is_empty() {
            Either::Left(view! { <p class="empty">{t!(i18n, wallet_none)}</p> })
        } else {
            Either::Right(view! {
                <p class="hint">{t!(i18n, times_in_zone, zone = move || zone_name.clone())}</p>
                <EntryTable entries=wallet.entries currency zone />
            })
        }}
    }
}

#[component]
fn EntryTable(entries: Vec<WalletEntry>, currency: Currency, zone: ZoneOffsets) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <div class="table-scroll">
            <table class="wallet-table">
                <thead>
                    <tr>
                        <th scope="col">{t!(i18n, wallet_col_when)}</th>
                        <th scope="col">{t!(i18n, wallet_col_kind)}</th>
                        <th scope="col">{t!(i18n, wallet_col_reason)}</th>
                        <th scope="col" class="num">{t!(i18n, wallet_col_amount)}</th>
                        <th scope="col" class="num">{t!(i18n, wallet_col_balance)}</th>
                    </tr>
                </thead>
                <tbody>
                    {entries
                        .into_iter()
                        .map(|entry| {
                            let kind = entry.kind;
                            let kind_text = move || match kind {
                                TransactionKind::Grant => t_string!(i18n, wallet_kind_grant),
                                TransactionKind::Deduct => t_string!(i18n, wallet_kind_deduct),
                                TransactionKind::Charge => t_string!(i18n, wallet_kind_charge),
                                TransactionKind::Refund => t_string!(i18n, wallet_kind_refund),
                                TransactionKind::SlaCredit => t_string!(i18n, wallet_kind_sla_credit),
                            };
                            let direction = if entry.amount.minor() < 0 { "out" } else { "in" };
                            view! {
                                <tr data-kind=kind.as_str() data-transaction=entry.transaction_id>
                                    <td>
                                        <time datetime=entry.at.to_rfc3339()>
                                            {date_minute(zone.local(entry.at))}
                                        </time>
                                    </td>
                                    <td>{kind_text}</td>
                                    <td>
                                        {entry.reason}
                                        {entry.reservation_id.map(|id| view! {
                                            " "
                                            <a href="/reservations">{format!("#{id}")}</a>
                                        })}
                                    </td>
                                    <td class=format!("num amount-{direction}")>
                                        {if direction == "in" { "+" } else { "−" }}
                                        <MoneyText
                                            amount=Money::from_minor(entry.amount.minor().abs())
                                            currency=currency.clone()
                                        />
                                    </td>
                                    <td class="num">
                                        <MoneyText amount=entry.balance_after currency=currency.clone() />
                                    </td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
}
