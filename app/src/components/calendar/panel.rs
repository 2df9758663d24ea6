//! The side panel: the selected window with GPU, share and price before booking; the conflict
//! and its suggestion when a booking loses; and "find a slot". Without JavaScript its booking
//! form posts to the `book_form` server function; with it, the panel calls `book_reservation`.

use super::{Selection, local_date_time};
use crate::api::reservations::{BookForm, BookReservation, FindSlots};
use crate::components::error::ErrorPanel;
use crate::domain::calendar::{CalendarView, PanelText};
use crate::domain::money::Money;
use crate::domain::payment::ChargeMode;
use crate::domain::reservation::SlotOffer;
use crate::domain::schedule::{Share, Window, price_minor};
use crate::error::AppError;
use crate::i18n::*;
use crate::text::format::{MoneyText, money_string};
use chrono::{DateTime, TimeDelta, Utc};
use leptos::either::{Either, EitherOf3, EitherOf4};
use leptos::prelude::*;
use leptos::server_fn::ServerFn;

/// The page's idempotency key: a booking sent twice books once, and the page reloads (with a new
/// key) after a booking succeeds. A refused booking records nothing, so the key stays usable.
fn form_key(view: StoredValue<CalendarView>) -> String {
    view.with_value(|v| v.payment.form_key.clone())
}

/// A panel text, translated on the server.
fn text(view: StoredValue<CalendarView>, key: PanelText) -> String {
    view.with_value(|v| v.texts.get(key))
}

fn share_value(share: Share) -> &'static str {
    match share {
        Share::Whole => "1",
        Share::Half => "0.5",
        Share::Quarter => "0.25",
    }
}

/// The booking panel.
#[component]
pub fn BookingPanel(
    view: StoredValue<CalendarView>,
    selection: RwSignal<Option<Selection>>,
    book: ServerAction<BookReservation>,
    /// Where the plain form returns to: this calendar's address.
    return_to: String,
    /// Outcome of the plain form's last post (`?booked=ID`).
    booked: Option<String>,
    /// Or its refusal, as JSON (`?error=…`).
    error: Option<String>,
) -> impl IntoView {
    let i18n = use_i18n();
    let share = RwSignal::new(Share::Whole);
    let charge = RwSignal::new(view.with_value(|v| {
        v.payment
            .modes
            .first()
            .copied()
            .unwrap_or(ChargeMode::AtBooking)
    }));
    // The offers (after a clash, or found) book with the same payment and team choice.
    provide_context(charge);
    let payer = Payer(RwSignal::new(None));
    provide_context(payer);
    let profile = ProfilePick(RwSignal::new(
        view.with_value(|v| v.payment.default_profile),
    ));
    provide_context(profile);
    let flexible = Flexible(RwSignal::new(false));
    provide_context(flexible);
    let card = CardPick(RwSignal::new(None));
    provide_context(card);
    let key = move || form_key(view);
    let cell = view.with_value(|v| TimeDelta::minutes(v.span.cell_minutes()));
    let gpu_of = move |gpu_id: i64| {
        view.with_value(|v| {
            v.nodes.iter().find_map(|node| {
                node.gpus
                    .iter()
                    .find(|g| g.gpu.id == gpu_id)
                    .map(|g| (node.name.clone(), g.gpu.clone()))
            })
        })
    };
    let chosen = move || {
        selection.get().and_then(|s| {
            let (start, end) = s.window(cell);
            gpu_of(s.gpu_id).map(|(node, gpu)| (s, node, gpu, start, end))
        })
    };
    let local_input = move |at: DateTime<Utc>| {
        view.with_value(|v| crate::domain::time_text::input_value(local_date_time(v, at)))
    };
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        if let Some((_, _, gpu, start, end)) = chosen() {
            ev.prevent_default();
            let share = if gpu.shareable {
                share.get_untracked()
            } else {
                Share::Whole
            };
            book.dispatch(BookReservation {
                gpu_ids: vec![gpu.id],
                share: share_value(share).to_owned(),
                start: start.to_rfc3339(),
                end: end.to_rfc3339(),
                charge: Some(charge.get_untracked().as_str().to_owned()),
                idempotency_key: Some(key()),
                team_id: payer.0.get_untracked(),
                profile: Some(profile.0.get_untracked().unwrap_or(0)),
                flexible: flexible.0.get_untracked(),
                card: card.0.get_untracked(),
            });
        }
    };
    let currency = StoredValue::new(view.with_value(|v| v.currency.clone()));
    let summary = move || {
        chosen().map(|(_, node, gpu, start, end)| {
            let (from, to) = view.with_value(|v| {
                (crate::domain::time_text::date_minute(local_date_time(v, start)), crate::domain::time_text::date_minute(local_date_time(v, end)))
            });
            let minutes = (end - start).num_minutes();
            let quarters = if gpu.shareable { share.get().quarters() } else { 4 };
            let price = Window::new(start, end)
                .map(|w| price_minor(gpu.hourly_price.minor(), quarters, &w))
                .unwrap_or(0);
            let currency = currency.get_value();
            let shareable = gpu.shareable;
            let gpu_model = gpu.model.clone();
            view! {
                <dl class="panel-facts">
                    <dt>{text(view, PanelText::Gpu)}</dt>
                    <dd>{format!("{node} #{} · {}", gpu.device_index, gpu.model)}</dd>
                    <dt>{text(view, PanelText::Window)}</dt>
                    <dd>{format!("{from} – {to}")}</dd>
                    <dt>{text(view, PanelText::Length)}</dt>
                    <dd>{move || crate::text::format::hours_text(i18n, minutes)}</dd>
                    <dt>{text(view, PanelText::Share)}</dt>
                    <dd>
                        {if shareable {
                            Either::Left(view! {
                                <select name="share" aria-label=text(view, PanelText::Share)
                                    on:change=move |ev| share.set(Share::parse(&event_target_value(&ev)).unwrap_or(Share::Whole))>
                                    <option value="1" selected=move || share.get() == Share::Whole>{text(view, PanelText::Whole)}</option>
                                    <option value="0.5" selected=move || share.get() == Share::Half>{text(view, PanelText::Half)}</option>
                                    <option value="0.25" selected=move || share.get() == Share::Quarter>{text(view, PanelText::Quarter)}</option>
                                </select>
                            })
                        } else {
                            Either::Right(view! { <span>{text(view, PanelText::Whole)}<input type="hidden" name="share" value="1" /></span> })
                        }}
                    </dd>
                    <dt>{text(view, PanelText::Price)}</dt>
                    <dd class="panel-price"><MoneyText amount=Money::from_minor(price) currency=currency.clone() /></dd>
                    <PayerChoice view payer />
                    <ProfileChoice view profile />
                    <ChargeChoice view charge />
                    <CardChoice view card payer />
                    <BalanceAfter view payer card price=Money::from_minor(price) currency />
                </dl>
                <FlexibleChoice view flexible />
                {move || {
                    let window = Window::new(start, end).ok()?;
                    let borrow = !flexible.0.get()
                        && view.with_value(|v| v.would_borrow(&gpu_model, payer.0.get(), &window, quarters));
                    borrow.then(|| view! {
                        <p class="panel-borrow" role="note">{text(view, PanelText::WouldBorrow)}</p>
                    })
                }}
            }
        })
    };
    let flash = move || {
        if let Some(id) = booked.clone() {
            Some(EitherOf4::A(
                view! { <p class="notice notice-ok" role="status">{text(view, PanelText::BookedId).replace("{id}", &id)}</p> },
            ))
        } else {
            // From the plain form (the `book_form` server function): the error as JSON data.
            error
                .clone()
                .map(|raw| match serde_json::from_str::<AppError>(&raw) {
                    Ok(AppError::Clash(clash)) => {
                        EitherOf4::B(view! { <ClashPanel clash=*clash view book /> })
                    }
                    Ok(error) => EitherOf4::C(view! { <ErrorPanel error /> }),
                    Err(_) => EitherOf4::D(
                        view! { <div class="error-panel" role="alert"><p>{raw}</p></div> },
                    ),
                })
        }
    };
    let outcome = move || {
        book.value().get().map(|result| match result {
            Ok(id) => {
                // Paid by card: its page follows the payment (and asks for the bank's
                // authentication when needed).
                let by_card = card.0.get_untracked().is_some();
                EitherOf3::A(view! {
                    <p class="notice notice-ok" role="status">
                        {text(view, PanelText::BookedId).replace("{id}", &id.to_string())}
                        {by_card.then(|| view! {
                            " "
                            <a href=format!("/reservations/{id}") class="card-follow">{text(view, PanelText::CardFollow)}</a>
                        })}
                    </p>
                })
            }
            Err(AppError::Clash(clash)) => EitherOf3::B(view! { <ClashPanel clash=*clash view book /> }),
            Err(error) => EitherOf3::C(view! { <ErrorPanel error /> }),
        })
    };
    view! {
        <aside class="calendar-side">
            <section class="panel" aria-labelledby="panel-title">
                <h2 id="panel-title">{text(view, PanelText::Title)}</h2>
                {flash}
                <form class="booking-form" method="post" action=BookForm::PATH on:submit=on_submit>
                    <input type="hidden" name="return_to" value=return_to />
                    <input type="hidden" name="idempotency_key" value=key />
                    {move || match chosen() {
                        // Type-erased: the server renders these deep views with boxed futures
                        // rather than one nested future on the stack.
                        Some((_, _, gpu, start, end)) => view! {
                            <input type="hidden" name="gpu_id" value=gpu.id />
                            <input type="hidden" name="start" value=local_input(start) />
                            <input type="hidden" name="end" value=local_input(end) />
                            {summary}
                        }.into_any(),
                        None => view! {
                            <NoJsFields view />
                            <PayerChoice view payer as_field=true />
                            <ProfileChoice view profile as_field=true />
                            <ChargeChoice view charge as_field=true />
                            <CardChoice view card payer as_field=true />
                            <FlexibleChoice view flexible />
                        }.into_any(),
                    }}
                    <button type="submit" class="button-primary" disabled=move || book.pending().get()>
                        {text(view, PanelText::Book)}
                    </button>
                </form>
                {outcome}
            </section>
            <FindSlot view book />
        </aside>
    }
}

/// The saved card that pays the booking (None: credits).
#[derive(Clone, Copy)]
struct CardPick(RwSignal<Option<i64>>);

/// Credits or a saved card: a choice when the viewer has saved cards and books for themselves.
#[component]
fn CardChoice(
    view: StoredValue<CalendarView>,
    card: CardPick,
    payer: Payer,
    /// A labelled form field rather than a fact of the summary.
    #[prop(optional)]
    as_field: bool,
) -> impl IntoView {
    let cards = view.with_value(|v| v.payment.cards.clone());
    if cards.is_empty() {
        return None;
    }
    let title = text(view, PanelText::PayWith);
    let card = card.0;
    let payer = payer.0;
    let select = view! {
        <select name="card" aria-label=title.clone()
            prop:disabled=move || payer.get().is_some()
            on:change=move |ev| card.set(event_target_value(&ev).parse::<i64>().ok())>
            <option value="" selected=move || card.get().is_none()>{text(view, PanelText::Credits)}</option>
            {cards.into_iter().map(|(id, label)| view! {
                <option value=id selected=move || card.get() == Some(id)>{label}</option>
            }).collect_view()}
        </select>
    };
    // A team's booking is paid from its wallet.
    Effect::new(move |_| {
        if payer.get().is_some() {
            card.set(None);
        }
    });
    Some(if as_field {
        Either::Left(view! { <label class="field panel-card">{title}{select}</label> })
    } else {
        Either::Right(view! {
            <dt>{title}</dt>
            <dd class="panel-card">{select}</dd>
        })
    })
}

/// Who pays: the viewer, or one of their teams (its wallet, within its budget).
#[derive(Clone, Copy)]
struct Payer(RwSignal<Option<i64>>);

/// Personal or for a team: a choice when the viewer belongs to a team.
#[component]
fn PayerChoice(
    view: StoredValue<CalendarView>,
    payer: Payer,
    /// A labelled form field rather than a fact of the summary.
    #[prop(optional)]
    as_field: bool,
) -> impl IntoView {
    let teams = view.with_value(|v| v.payment.teams.clone());
    if teams.is_empty() {
        return None;
    }
    let title = text(view, PanelText::BookFor);
    let payer = payer.0;
    let select = view! {
        <select name="team_id" aria-label=title.clone()
            on:change=move |ev| payer.set(event_target_value(&ev).parse::<i64>().ok())>
            <option value="" selected=move || payer.get().is_none()>{text(view, PanelText::Personal)}</option>
            {teams.into_iter().map(|(id, name, _)| view! {
                <option value=id selected=move || payer.get() == Some(id)>{name}</option>
            }).collect_view()}
        </select>
    };
    Some(if as_field {
        Either::Left(view! { <label class="field panel-payer">{title}{select}</label> })
    } else {
        Either::Right(view! {
            <dt>{title}</dt>
            <dd class="panel-payer">{select}</dd>
        })
    })
}

/// The environment profile the node prepares: a choice when the viewer has profiles.
#[derive(Clone, Copy)]
struct ProfilePick(RwSignal<Option<i64>>);

#[component]
fn ProfileChoice(
    view: StoredValue<CalendarView>,
    profile: ProfilePick,
    /// A labelled form field rather than a fact of the summary.
    #[prop(optional)]
    as_field: bool,
) -> impl IntoView {
    let profiles = view.with_value(|v| v.payment.profiles.clone());
    if profiles.is_empty() {
        return None;
    }
    let title = text(view, PanelText::Environment);
    let chosen = profile.0;
    let select = view! {
        <select name="profile" aria-label=title.clone()
            on:change=move |ev| chosen.set(event_target_value(&ev).parse::<i64>().ok().filter(|id| *id > 0))>
            <option value="0" selected=move || chosen.get().is_none()>{text(view, PanelText::NoProfile)}</option>
            {profiles.into_iter().map(|(id, name)| view! {
                <option value=id selected=move || chosen.get() == Some(id)>{name}</option>
            }).collect_view()}
        </select>
    };
    Some(if as_field {
        Either::Left(view! { <label class="field panel-profile">{title}{select}</label> })
    } else {
        Either::Right(view! {
            <dt>{title}</dt>
            <dd class="panel-profile">{select}</dd>
        })
    })
}

/// A flexible batch booking: batch priority (a higher-priority booking may displace it, refunded
/// in full), and it starts early, on the same GPU, if that frees up before its start.
#[derive(Clone, Copy)]
struct Flexible(RwSignal<bool>);

#[component]
fn FlexibleChoice(view: StoredValue<CalendarView>, flexible: Flexible) -> impl IntoView {
    let on = flexible.0;
    view! {
        <label class="check panel-flexible">
            <input type="checkbox" name="flexible" value="on" prop:checked=move || on.get()
                on:change=move |ev| on.set(event_target_checked(&ev)) />
            <span>
                <strong>{text(view, PanelText::Flexible)}</strong>
                <small class="hint">{text(view, PanelText::FlexibleHint)}</small>
            </span>
        </label>
    }
}

/// How the booking is paid: a choice when the portal offers both modes. (Its texts, like the
/// balance's, come translated from the server.)
#[component]
fn ChargeChoice(
    view: StoredValue<CalendarView>,
    charge: RwSignal<ChargeMode>,
    /// A labelled form field (the form without a selection) rather than a fact of the summary.
    #[prop(optional)]
    as_field: bool,
) -> impl IntoView {
    let modes = view.with_value(|v| v.payment.modes.clone());
    let title = text(view, PanelText::Payment);
    let label = move |mode: ChargeMode| match mode {
        ChargeMode::AtBooking => text(view, PanelText::PayNow),
        ChargeMode::BeforeStart => text(view, PanelText::PayLater),
    };
    let choice = if modes.len() > 1 {
        Either::Left(view! {
            <select name="charge" aria-label=title.clone()
                on:change=move |ev| charge.set(ChargeMode::parse(&event_target_value(&ev)).unwrap_or(ChargeMode::AtBooking))>
                {modes.into_iter().map(|mode| view! {
                    <option value=mode.as_str() selected=move || charge.get() == mode>{label(mode)}</option>
                }).collect_view()}
            </select>
        })
    } else {
        let mode = modes.first().copied().unwrap_or(ChargeMode::AtBooking);
        Either::Right(
            view! { <span>{label(mode)}<input type="hidden" name="charge" value=mode.as_str() /></span> },
        )
    };
    if as_field {
        Either::Left(view! { <label class="field panel-charge">{title}{choice}</label> })
    } else {
        Either::Right(view! {
            <dt>{title}</dt>
            <dd class="panel-charge">{choice}</dd>
        })
    }
}

/// The wallet's balance once this booking and the unpaid ones are charged; a warning and a link
/// to the wallet when it falls short.
#[component]
fn BalanceAfter(
    view: StoredValue<CalendarView>,
    payer: Payer,
    card: CardPick,
    price: Money,
    currency: crate::domain::money::Currency,
) -> impl IntoView {
    let i18n = use_i18n();
    move || {
        // Paid by card: the wallet is not touched.
        if card.0.get().is_some() {
            return None;
        }
        let team = payer.0.get();
        let after = view.with_value(|v| v.payment.balance_after(team, price));
        Some(balance_after_view(view, i18n, after, &currency))
    }
}

fn balance_after_view(
    view: StoredValue<CalendarView>,
    i18n: leptos_i18n::I18nContext<Locale>,
    after: i64,
    currency: &crate::domain::money::Currency,
) -> impl IntoView + use<> {
    let amount = money_string(i18n, Money::from_minor(after), currency);
    let short = (after < 0).then(|| {
        let missing = money_string(i18n, Money::from_minor(-after), currency);
        view! {
            <dd class="panel-short" role="status">
                {text(view, PanelText::Short).replace("{missing}", &missing)}
                " "
                <a href="/wallet">{text(view, PanelText::Wallet)}</a>
            </dd>
        }
    });
    view! {
        <dt>{text(view, PanelText::BalanceAfter)}</dt>
        <dd class="panel-balance-after" class:negative=after < 0 data-balance-after-minor=after>{amount}</dd>
        {short}
    }
}

/// Without a selection (or without JavaScript): choose GPU, times and share by hand.
#[component]
fn NoJsFields(view: StoredValue<CalendarView>) -> impl IntoView {
    let (options, suggested) = view.with_value(|v| {
        let options: Vec<(i64, String)> = v
            .nodes
            .iter()
            .flat_map(|node| {
                node.gpus
                    .iter()
                    .filter(|g| g.gpu.status.is_bookable())
                    .map(move |g| {
                        (
                            g.gpu.id,
                            format!("{} #{} · {}", node.name, g.gpu.device_index, g.gpu.model),
                        )
                    })
            })
            .collect();
        let start = crate::domain::schedule::slot_ceil(v.now.max(v.range.start()));
        let from = crate::domain::time_text::input_value(local_date_time(v, start));
        let to =
            crate::domain::time_text::input_value(local_date_time(v, start + TimeDelta::hours(1)));
        (options, (from, to))
    });
    view! {
        <p class="hint">{text(view, PanelText::Hint)}</p>
        <label class="field">{text(view, PanelText::Gpu)}
            <select name="gpu_id" required>
                {options.into_iter().map(|(id, label)| view! { <option value=id>{label}</option> }).collect_view()}
            </select>
        </label>
        <label class="field">{text(view, PanelText::Start)}
            <input type="datetime-local" name="start" step="900" required value=suggested.0 />
        </label>
        <label class="field">{text(view, PanelText::End)}
            <input type="datetime-local" name="end" step="900" required value=suggested.1 />
        </label>
        <label class="field">{text(view, PanelText::Share)}
            <select name="share">
                <option value="1">{text(view, PanelText::Whole)}</option>
                <option value="0.5">{text(view, PanelText::Half)}</option>
                <option value="0.25">{text(view, PanelText::Quarter)}</option>
            </select>
        </label>
    }
}

/// A lost booking: what clashed, and the nearest window that fits, bookable in one click.
#[component]
fn ClashPanel(
    clash: crate::domain::reservation::Clash,
    view: StoredValue<CalendarView>,
    book: ServerAction<BookReservation>,
) -> impl IntoView {
    let at =
        view.with_value(|v| crate::domain::time_text::date_minute(local_date_time(v, clash.at)));
    let what = clash.what.clone();
    let suggestion = clash
        .suggestion
        .map(|offer| view! { <OfferRow offer view book /> });
    view! {
        <div class="error-panel clash" role="alert">
            <h3>{text(view, PanelText::ClashTitle)}</h3>
            <p>{text(view, PanelText::ClashBody).replace("{what}", &what).replace("{at}", &at)}</p>
            {match suggestion {
                Some(row) => Either::Left(view! { <p>{text(view, PanelText::ClashSuggestion)}</p> <ul class="offers">{row}</ul> }),
                None => Either::Right(view! { <p>{text(view, PanelText::ClashNoSuggestion)}</p> }),
            }}
        </div>
    }
}

/// One offered window with a button that books it.
#[component]
fn OfferRow(
    offer: SlotOffer,
    view: StoredValue<CalendarView>,
    book: ServerAction<BookReservation>,
) -> impl IntoView {
    let (from, to) = view.with_value(|v| {
        (
            crate::domain::time_text::date_minute(local_date_time(v, offer.window.start())),
            crate::domain::time_text::hour_minute(local_date_time(v, offer.window.end())),
        )
    });
    let currency = view.with_value(|v| v.currency.clone());
    let label = format!(
        "{} · {} × {} · {from}–{to}",
        offer.node_name,
        offer.gpu_ids.len(),
        offer.model
    );
    let charge = use_context::<RwSignal<ChargeMode>>();
    let payer = use_context::<Payer>();
    let card = use_context::<CardPick>();
    let on_click = {
        let offer = offer.clone();
        move |_| {
            book.dispatch(BookReservation {
                gpu_ids: offer.gpu_ids.clone(),
                share: share_value(offer.share).to_owned(),
                start: offer.window.start().to_rfc3339(),
                end: offer.window.end().to_rfc3339(),
                charge: charge.map(|charge| charge.get_untracked().as_str().to_owned()),
                idempotency_key: Some(form_key(view)),
                team_id: payer.and_then(|payer| payer.0.get_untracked()),
                profile: use_context::<ProfilePick>().map(|p| p.0.get_untracked().unwrap_or(0)),
                flexible: use_context::<Flexible>().is_some_and(|f| f.0.get_untracked()),
                card: card.and_then(|c| c.0.get_untracked()),
            });
        }
    };
    view! {
        <li class="offer">
            <span class="offer-label">{label}</span>
            <span class="offer-price"><MoneyText amount=Money::from_minor(offer.price_minor) currency /></span>
            <button type="button" class="button-primary" on:click=on_click>{text(view, PanelText::OfferBook)}</button>
        </li>
    }
}

/// "Find a slot": the earliest windows that fit a request, across all GPUs.
#[component]
fn FindSlot(view: StoredValue<CalendarView>, book: ServerAction<BookReservation>) -> impl IntoView {
    let find = ServerAction::<FindSlots>::new();
    let models = view.with_value(|v| v.models.clone());
    // The model the calendar shows first (its filter, usually) is the likeliest question.
    let shown = view.with_value(|v| {
        v.nodes
            .first()
            .and_then(|node| node.gpus.first())
            .map(|gpu| gpu.gpu.model.clone())
    });
    let results = move || {
        find.value().get().map(|result| match result {
            Ok(offers) if offers.is_empty() => EitherOf3::A(view! { <p class="empty">{text(view, PanelText::FindNone)}</p> }),
            Ok(offers) => EitherOf3::B(view! {
                <ul class="offers">
                    {offers.into_iter().map(|offer| view! { <OfferRow offer view book /> }).collect_view()}
                </ul>
            }),
            Err(error) => EitherOf3::C(view! { <ErrorPanel error /> }),
        })
    };
    view! {
        <section class="panel find-slot" aria-labelledby="find-title">
            <h2 id="find-title">{text(view, PanelText::FindTitle)}</h2>
            <p class="hint">{text(view, PanelText::FindIntro)}</p>
            <ActionForm action=find attr:class="find-form">
                <label class="field">{text(view, PanelText::Model)}
                    <select name="model">
                        {models
                            .into_iter()
                            .map(|m| {
                                let selected = shown.as_deref() == Some(m.as_str());
                                view! { <option value=m.clone() selected=selected>{m.clone()}</option> }
                            })
                            .collect_view()}
                    </select>
                </label>
                <div class="field-row">
                    <label class="field">{text(view, PanelText::FindCount)}
                        <input type="number" name="count" min="1" max="64" value="1" />
                    </label>
                    <label class="field">{text(view, PanelText::FindHours)}
                        <input type="number" name="hours" min="0.25" step="0.25" value="4" />
                    </label>
                </div>
                <label class="field">{text(view, PanelText::Share)}
                    <select name="share">
                        <option value="1">{text(view, PanelText::Whole)}</option>
                        <option value="0.5">{text(view, PanelText::Half)}</option>
                        <option value="0.25">{text(view, PanelText::Quarter)}</option>
                    </select>
                </label>
                <button type="submit" class="button-primary">{text(view, PanelText::FindSubmit)}</button>
            </ActionForm>
            {results}
        </section>
    }
}
