//! `/wallet`: the user's prepaid credits — balance and every movement with the balance after
//! it. Rendered on the server only (no island).

use crate::api::ledger::{CardsPanel, WalletPage as WalletData, get_wallet};
use crate::components::error::ErrorPanel;
use crate::components::table::PageLinks;
use crate::domain::ledger::{BerthReason, TransactionKind, WalletEntry};
use crate::domain::money::{Currency, Money};
use crate::domain::time_text::date_minute;
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use crate::text::format::{MoneyText, money_string};
use leptos::either::Either;
use leptos::prelude::*;
use leptos_meta::Title;

/// The wallet page.
#[component]
pub fn WalletPage() -> impl IntoView {
    let i18n = use_i18n();
    let cursor = leptos_router::hooks::use_query_map()
        .with_untracked(|query| query.get("cursor"))
        .filter(|cursor| !cursor.is_empty());
    let on_later_page = cursor.is_some();
    let data = Resource::new(|| (), move |()| get_wallet(cursor.clone()));
    view! {
        // A plain string, read once: leptos_meta reads a reactive title after the render, and
        // under load its signal was sometimes gone by then (a panic that cut the page off).
        <Title text=t_string!(i18n, wallet_title).to_string() />
        <section class="wallet">
            <h1>{t!(i18n, wallet_title)}</h1>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    data.get()
                        .map(|result| match result {
                            Ok(data) => Either::Left(view! { <WalletView data on_later_page /> }),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

#[component]
fn WalletView(data: WalletData, on_later_page: bool) -> impl IntoView {
    let i18n = use_i18n();
    let WalletData {
        wallet,
        zone,
        cards,
    } = data;
    let currency = wallet.currency.clone();
    let zone_name = zone.name.clone();
    let intro = if cards.is_some() {
        Either::Left(view! { <p class="lede">{t!(i18n, wallet_intro_cards)}</p> })
    } else {
        Either::Right(view! { <p class="lede">{t!(i18n, wallet_intro)}</p> })
    };
    let cards = cards.map(|panel| {
        view! { <CardsSection panel currency=currency.clone() zone=zone.clone() /> }
    });
    view! {
        {intro}
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
        {cards}
        <div class="section-head">
            <h2>{t!(i18n, wallet_history)}</h2>
            {(!wallet.entries.is_empty()).then(|| view! {
                <a class="button-secondary" href="/api/v1/wallet?format=csv&limit=1000" download="berth-wallet.csv">
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
        <PageLinks next=wallet.next on_later_page base="/wallet" />
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
                            let silent = entry.reason.is_empty() && entry.berth_reason.is_none();
                            view! {
                                <tr data-kind=kind.as_str() data-transaction=entry.transaction_id>
                                    <td>
                                        <time datetime=entry.at.to_rfc3339()>
                                            {date_minute(zone.local(entry.at))}
                                        </time>
                                    </td>
                                    <td>{kind_text}</td>
                                    <td>
                                        {reason_words(i18n, entry.reason, entry.berth_reason)}
                                        {entry.reservation_id.map(|id| view! {
                                            {(!silent).then_some(" · ")}
                                            <a href="/reservations">
                                                {move || t_string!(i18n, wallet_reservation_link, id = id).to_string()}
                                            </a>
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

/// Cards through Stripe: the saved cards, a form to add one (the card field is Stripe.js's own
/// frame: the number never reaches Berth), a top-up form, and the payments by card.
/// `/cards.js` does the talking to Stripe.js and to the API; the texts it shows come from
/// here, in the reader's language.
#[component]
fn CardsSection(panel: CardsPanel, currency: Currency, zone: ZoneOffsets) -> impl IntoView {
    let i18n = use_i18n();
    let CardsPanel {
        cards,
        payments,
        refunds,
        js_url,
        publishable_key,
        min_minor,
        max_minor,
    } = panel;
    let min = money_string(i18n, Money::from_minor(min_minor), &currency);
    let max = money_string(i18n, Money::from_minor(max_minor), &currency);
    let step = format!("{}", 10f64.powi(-i32::from(currency.exponent())));
    let has_cards = !cards.is_empty();
    let options = cards
        .iter()
        .map(|card| {
            view! { <option value=card.id>{card.label()}</option> }
        })
        .collect_view();
    let list = cards
        .into_iter()
        .map(|card| {
            let expires = format!("{:02}/{}", card.exp_month, card.exp_year);
            view! {
                <li class="saved-card" data-card=card.id>
                    <span class="card-name">{card.label()}</span>
                    <span class="hint">
                        " · " {t!(i18n, cards_expires, date = move || expires.clone())}
                    </span>
                    <button type="button" class="button-secondary card-remove" data-card=card.id>
                        {t!(i18n, cards_remove)}
                    </button>
                </li>
            }
        })
        .collect_view();
    view! {
        <section
            class="cards"
            id="cards"
            data-js-url=js_url
            data-publishable-key=publishable_key
            data-exponent=currency.exponent()
            data-min-minor=min_minor
            data-max-minor=max_minor
            data-msg-working=t_string!(i18n, cards_working).to_string()
            data-msg-saved=t_string!(i18n, cards_saved).to_string()
            data-msg-save=t_string!(i18n, cards_save).to_string()
            data-msg-paid=t_string!(i18n, cards_paid).to_string()
            data-msg-waiting=t_string!(i18n, cards_waiting).to_string()
            data-msg-failed=t_string!(i18n, cards_failed).to_string()
            data-msg-amount=t_string!(i18n, cards_amount_bad, min = min.clone(), max = max.clone()).to_string()
            data-msg-remove=t_string!(i18n, cards_confirm_remove).to_string()
            data-msg-unavailable=t_string!(i18n, cards_unavailable).to_string()
        >
            <h2>{t!(i18n, cards_title)}</h2>
            <p class="hint">{t!(i18n, cards_intro)}</p>
            <p class="cards-status" role="status" aria-live="polite"></p>
            {if has_cards {
                Either::Left(view! { <ul class="saved-cards">{list}</ul> })
            } else {
                Either::Right(view! { <p class="empty">{t!(i18n, cards_none)}</p> })
            }}
            <div class="card-forms">
                {has_cards.then(|| view! {
                    <form class="top-up-form" novalidate>
                        <h3>{t!(i18n, cards_top_up)}</h3>
                        <label>
                            {t!(i18n, cards_amount)}
                            <input
                                name="amount"
                                type="number"
                                inputmode="decimal"
                                min=format!("{}", min_minor as f64 / 10f64.powi(i32::from(currency.exponent())))
                                max=format!("{}", max_minor as f64 / 10f64.powi(i32::from(currency.exponent())))
                                step=step.clone()
                                required
                            />
                        </label>
                        <label>
                            {t!(i18n, cards_card)}
                            <select name="card">{options}</select>
                        </label>
                        <p class="hint">{t!(i18n, cards_limits, min = min.clone(), max = max.clone())}</p>
                        <button type="submit" class="button-primary">{t!(i18n, cards_pay)}</button>
                    </form>
                })}
                <form class="add-card-form">
                    <h3>{t!(i18n, cards_add)}</h3>
                    <div class="card-element" id="card-element"></div>
                    <button type="submit" class="button-secondary">{t!(i18n, cards_enter)}</button>
                </form>
            </div>
            <Receipts payments refunds currency=currency.clone() zone=zone.clone() />
            <script src="/cards.js" defer></script>
        </section>
    }
}

/// One line of the receipts table: a card charged (a top-up or a booking) or refunded.
struct ReceiptLine {
    at: chrono::DateTime<chrono::Utc>,
    what: ReceiptWhat,
    card: String,
    /// Signed: a refund is negative.
    amount_minor: i64,
    status: String,
    failure: Option<String>,
    reference: Option<String>,
    key: String,
}

#[derive(Clone, Copy)]
enum ReceiptWhat {
    TopUp,
    Booking(i64),
    Refund(Option<i64>),
}

/// Every card charge and refund, newest first: what it was for, the card, the amount, where it
/// stands and Stripe's reference (the e-mailed receipts carry the same).
#[component]
fn Receipts(
    payments: Vec<crate::domain::payment::CardPayment>,
    refunds: Vec<crate::domain::payment::CardRefund>,
    currency: Currency,
    zone: ZoneOffsets,
) -> impl IntoView {
    let i18n = use_i18n();
    let mut lines: Vec<ReceiptLine> = payments
        .into_iter()
        .map(|p| ReceiptLine {
            at: p.created_at,
            what: match p.reservation_id {
                Some(id) => ReceiptWhat::Booking(id),
                None => ReceiptWhat::TopUp,
            },
            card: p.card,
            amount_minor: p.amount_minor,
            status: p.status,
            failure: p.failure,
            reference: p.reference,
            key: format!("p{}", p.id),
        })
        .chain(refunds.into_iter().map(|r| ReceiptLine {
            at: r.created_at,
            what: ReceiptWhat::Refund(r.reservation_id),
            card: r.card,
            amount_minor: -r.amount_minor,
            status: r.status,
            failure: r.failure,
            reference: r.reference,
            key: format!("r{}", r.id),
        }))
        .collect();
    if lines.is_empty() {
        return None;
    }
    lines.sort_by_key(|line| std::cmp::Reverse(line.at));
    let rows = lines
        .into_iter()
        .map(|line| {
            let status = line.status.clone();
            let refund = matches!(line.what, ReceiptWhat::Refund(_));
            let booking = matches!(line.what, ReceiptWhat::Booking(_));
            let status_text = move || match (status.as_str(), refund) {
                ("succeeded", true) => t_string!(i18n, cards_status_refunded).to_string(),
                ("succeeded", false) if booking => t_string!(i18n, cards_status_booking_paid).to_string(),
                ("succeeded", false) => t_string!(i18n, cards_status_succeeded).to_string(),
                ("failed", true) => t_string!(i18n, cards_status_refund_failed).to_string(),
                ("failed", false) => t_string!(i18n, cards_status_failed).to_string(),
                ("requires_action", _) => t_string!(i18n, cards_status_requires_action).to_string(),
                _ => t_string!(i18n, cards_status_pending).to_string(),
            };
            let what = match line.what {
                ReceiptWhat::TopUp => Either::Left(view! { <span>{t!(i18n, cards_for_credits)}</span> }),
                ReceiptWhat::Booking(id) => Either::Right(view! {
                    <a href=format!("/reservations/{id}")>{t!(i18n, cards_for_booking, id)}</a>
                }.into_any()),
                ReceiptWhat::Refund(Some(id)) => Either::Right(view! {
                    <a href=format!("/reservations/{id}")>{t!(i18n, cards_for_refund, id)}</a>
                }.into_any()),
                ReceiptWhat::Refund(None) => Either::Right(view! { <span>{t!(i18n, cards_for_refund_credits)}</span> }.into_any()),
            };
            view! {
                <tr data-receipt=line.key data-status=line.status.clone()>
                    <td>
                        <time datetime=line.at.to_rfc3339()>{date_minute(zone.local(line.at))}</time>
                    </td>
                    <td>{what}</td>
                    <td>{line.card}</td>
                    <td class="num" class:negative=line.amount_minor < 0>
                        <MoneyText amount=Money::from_minor(line.amount_minor) currency=currency.clone() />
                    </td>
                    <td class="receipt-status">
                        {status_text}
                        {line.failure.map(|why| view! { <span class="hint">{format!(" ({why})")}</span> })}
                    </td>
                    <td><code class="reference">{line.reference.unwrap_or_default()}</code></td>
                </tr>
            }
        })
        .collect_view();
    Some(view! {
        <h3>{t!(i18n, cards_receipts)}</h3>
        <p class="hint">{t!(i18n, cards_receipts_hint)}</p>
        <div class="table-scroll">
            <table class="wallet-table card-payments">
                <thead>
                    <tr>
                        <th scope="col">{t!(i18n, wallet_col_when)}</th>
                        <th scope="col">{t!(i18n, cards_col_for)}</th>
                        <th scope="col">{t!(i18n, cards_card)}</th>
                        <th scope="col" class="num">{t!(i18n, wallet_col_amount)}</th>
                        <th scope="col">{t!(i18n, cards_col_status)}</th>
                        <th scope="col">{t!(i18n, cards_col_reference)}</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    })
}

/// A movement's reason: Berth's own in the reader's language, a person's as typed.
fn reason_words(
    i18n: leptos_i18n::I18nContext<Locale>,
    typed: String,
    berth: Option<BerthReason>,
) -> impl IntoView {
    move || match &berth {
        Some(reason) => crate::text::ledger::berth_reason(i18n, reason),
        None => typed.clone(),
    }
}
