//! `/reservations/{id}`: one reservation on its node — where it stands (upcoming, preparing,
//! ready, ending soon, ended), how to connect, its GPUs' latest values, the holder's choice at
//! the end, and what the node's agent did and saw.

use crate::api::node_access::{
    ReservationAccessPage, SetKeepRunning, StillUsing, get_reservation_access,
};
use crate::components::access_events::AccessEventTable;
use crate::components::error::ErrorPanel;
use crate::domain::lease::LeaseState;
use crate::domain::profile::PrepState;
use crate::domain::reclaim::IdleAction;
use crate::domain::time_text::date_minute;
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use leptos::either::Either;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

/// The reservation page.
#[component]
pub fn ReservationPage() -> impl IntoView {
    let i18n = use_i18n();
    let params = use_params_map();
    let id = move || {
        params
            .read()
            .get("id")
            .and_then(|raw| raw.parse::<i64>().ok())
            .unwrap_or(0)
    };
    view! {
        <Title text=t_string!(i18n, reservation_page_title).to_string() />
        <section class="reservation-page">
            <p class="back"><a href="/reservations">{t!(i18n, reservation_back)}</a></p>
            {move || {
                let error = use_query_map().with_untracked(|q| q.get("error"));
                crate::components::error::form_outcome(None, error)
            }}
            <ReservationAccessView id=id() />
            <BookingCard id=id() />
            <crate::pages::incident::ReportProblem
                reservation_id=id()
                back=format!("/reservations/{}", id())
            />
        </section>
    }
}

/// The page's body (an island: the keep-running choice and a refresh work in place).
#[cfg_attr(feature = "hydrate", island(lazy))]
#[cfg_attr(not(feature = "hydrate"), island)]
fn ReservationAccessView(id: i64) -> impl IntoView {
    let i18n = use_i18n();
    let keep = ServerAction::<SetKeepRunning>::new();
    let still = ServerAction::<StillUsing>::new();
    // The GPUs' values and the agent's events, fresh every ten seconds while the page is open.
    let tick = crate::components::telemetry::use_poll(std::time::Duration::from_secs(10));
    let page = Resource::new(
        move || (keep.version().get(), still.version().get(), tick.get()),
        move |_| get_reservation_access(id),
    );
    view! {
        <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
            {move || {
                page.get()
                    .map(|result| match result {
                        Ok(page) => Either::Left(view! { <AccessBody page keep still /> }),
                        Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                    })
            }}
        </Transition>
        {move || keep.value().get().and_then(Result::err).map(|error| view! { <ErrorPanel error /> })}
        {move || still.value().get().and_then(Result::err).map(|error| view! { <ErrorPanel error /> })}
    }
}

fn state_text(i18n: leptos_i18n::I18nContext<Locale>, state: LeaseState) -> String {
    match state {
        LeaseState::Upcoming => t_string!(i18n, lease_upcoming),
        LeaseState::Preparing => t_string!(i18n, lease_preparing),
        LeaseState::Ready => t_string!(i18n, lease_ready),
        LeaseState::EndingSoon => t_string!(i18n, lease_ending_soon),
        LeaseState::Ended => t_string!(i18n, lease_ended),
        LeaseState::Cancelled => t_string!(i18n, lease_cancelled),
    }
    .to_string()
}

#[component]
fn AccessBody(
    page: ReservationAccessPage,
    keep: ServerAction<SetKeepRunning>,
    still: ServerAction<StillUsing>,
) -> impl IntoView {
    let i18n = use_i18n();
    let ReservationAccessPage { access, zone } = page;
    let at = move |zone: &ZoneOffsets, when| date_minute(zone.local(when));
    let id = access.reservation_id;
    let state = access.state;
    let window = format!("{} – {}", at(&zone, access.start), at(&zone, access.end));
    let open = matches!(state, LeaseState::Ready | LeaseState::EndingSoon);
    let future = !matches!(state, LeaseState::Ended | LeaseState::Cancelled);
    let gpus = access
        .gpus
        .iter()
        .map(|gpu| {
            let util = gpu.gpu_util.map_or_else(|| "—".to_owned(), |u| format!("{u} %"));
            let memory = match gpu.memory_used_mib {
                Some(used) => format!("{} / {} GiB", used / 1024, gpu.memory_mib / 1024),
                None => "—".to_owned(),
            };
            let read = gpu.at.map(|t| at(&zone, t)).unwrap_or_default();
            view! {
                <tr>
                    <td><a href=format!("/gpus/{}", gpu.gpu_id)><code>{gpu.uuid.clone()}</code></a></td>
                    <td class="num">{util}</td>
                    <td class="num">{memory}</td>
                    <td>{read}</td>
                </tr>
            }
        })
        .collect_view();
    let events = access.events;
    let events_zone = zone.clone();
    let enforced = access.enforced;
    let environment = access.environment.map(|prep| {
        let state = prep.state;
        let word = match state {
            _ if !enforced => t_string!(i18n, environment_demo),
            PrepState::Waiting => t_string!(i18n, environment_waiting),
            PrepState::Preparing => t_string!(i18n, environment_preparing),
            PrepState::Ready if prep.cached => t_string!(i18n, environment_ready_cached),
            PrepState::Ready => t_string!(i18n, environment_ready),
            PrepState::Failed => t_string!(i18n, environment_failed),
        }
        .to_string();
        let profile = prep.profile;
        let log = (state == PrepState::Failed && !prep.log.is_empty()).then(|| {
            view! { <pre class="build-log"><code>{prep.log.clone()}</code></pre> }
        });
        view! {
            <h2>{t!(i18n, environment_title)}</h2>
            <p class="environment" data-state=state.as_str()>
                <a href=format!("/profiles/{}", profile.profile_id)>{profile.name.clone()}</a>
                " "
                {t!(i18n, environment_version, number = profile.number)}
                " · "
                <span class="badge">{word}</span>
            </p>
            {log}
            {(state == PrepState::Failed).then(|| view! {
                <p class="hint">{t!(i18n, environment_failed_hint)}</p>
            })}
        }
    });
    let keep_running = access.keep_running;
    let moved_to = access.moved_to.map(|to| {
        view! {
            <p class="moved-note">
                {t!(i18n, reservation_moved_to)}
                " "
                <a href=format!("/reservations/{to}")>{format!("#{to}")}</a>
            </p>
        }
    });
    let moved_from = access.moved_from.map(|(from, cause)| {
        let cause = crate::text::failover::failure_cause(i18n, cause);
        view! {
            <p class="moved-note">
                {t!(i18n, reservation_moved_from, cause = cause)}
                " "
                <a href=format!("/reservations/{from}")>{format!("#{from}")}</a>
            </p>
        }
    });
    let early = match access.early_from {
        Some(was) => {
            let was = at(&zone, was);
            Some(view! { <p class="moved-note early-note">{t!(i18n, reservations_started_early, was = was)}</p> }.into_any())
        }
        None if access.start_early && state == LeaseState::Upcoming => Some(
            view! { <p class="hint early-note">{t!(i18n, reservations_may_start_early)}</p> }
                .into_any(),
        ),
        None => None,
    };
    let idle = access.idle.map(|note| {
        let since = at(&zone, note.since);
        let when = at(&zone, note.acts_at);
        let threshold = note.threshold_percent;
        let text = match note.action {
            IdleAction::Release => {
                t_string!(i18n, reservation_idle_release, threshold, since, when).to_string()
            }
            _ => t_string!(i18n, reservation_idle_warn, threshold, since).to_string(),
        };
        view! {
            <div class="idle-banner" role="alert" data-action=note.action.as_str()>
                <p><strong>{t!(i18n, reservation_idle_title)}</strong>" "{text}</p>
                {note.can_snooze.then(|| view! {
                    <ActionForm action=still attr:class="still-using-form">
                        <input type="hidden" name="id" value=id />
                        <button type="submit" class="button-primary">{t!(i18n, reservation_still_using)}</button>
                    </ActionForm>
                    <p class="hint">{t!(i18n, reservation_still_using_hint)}</p>
                })}
            </div>
        }
    });
    let still_using = access.still_using_at.map(|when| {
        let when = at(&zone, when);
        view! { <p class="hint still-using-note">{t!(i18n, reservation_still_using_said, when = when)}</p> }
    });
    let reclaimed = access.reclaimed_until.map(|until| {
        let end = at(&zone, access.end);
        let until = at(&zone, until);
        view! { <p class="moved-note reclaimed-note">{t!(i18n, reservation_reclaimed, end = end, until = until)}</p> }
    });
    view! {
        <h1>{t!(i18n, reservation_heading, id = id)}</h1>
        <p class="lease-state" data-state=format!("{state:?}").to_lowercase()>
            <span class="badge">{state_text(i18n, state)}</span>
            " "
            <time datetime=access.start.to_rfc3339()>{window}</time>
            " · "
            {t!(i18n, reservations_zone, zone = move || zone.name.clone())}
        </p>
        {idle}
        {reclaimed}
        {still_using}
        {moved_from}
        {moved_to}
        {early}
        {(!access.enforced).then(|| view! { <p class="hint demo-note">{t!(i18n, reservation_demo_node)}</p> })}
        <h2>{t!(i18n, reservation_connect)}</h2>
        <pre class="connect-line"><code>{access.connect.clone()}</code></pre>
        <p class="hint">
            {if open { t_string!(i18n, reservation_connect_open) } else { t_string!(i18n, reservation_connect_when) }}
            " "
            <a href="/profile#ssh-keys">{t!(i18n, reservation_keys_link)}</a>
        </p>
        {environment}
        <h2>{t!(i18n, reservation_gpus)}</h2>
        <div class="table-scroll">
            <table class="token-table">
                <thead>
                    <tr>
                        <th scope="col">"UUID"</th>
                        <th scope="col" class="num">{t!(i18n, reservation_util)}</th>
                        <th scope="col" class="num">{t!(i18n, reservation_memory)}</th>
                        <th scope="col">{t!(i18n, reservation_read_at)}</th>
                    </tr>
                </thead>
                <tbody>{gpus}</tbody>
            </table>
        </div>
        {future.then(|| view! {
            <h2>{t!(i18n, reservation_end_title)}</h2>
            <ActionForm action=keep attr:class="keep-form">
                <input type="hidden" name="id" value=id />
                <label>
                    <input type="radio" name="keep" value="false" checked=!keep_running />
                    {t!(i18n, reservation_end_stop)}
                </label>
                <label>
                    <input type="radio" name="keep" value="true" checked=keep_running />
                    {t!(i18n, reservation_end_keep)}
                </label>
                <button type="submit" class="button-secondary">{t!(i18n, reservation_end_save)}</button>
            </ActionForm>
        })}
        <h2>{t!(i18n, reservation_events)}</h2>
        <AccessEventTable events zone=events_zone />
    }
}

/// How a booking is paid by card (when card payments are on and a card has to do with it): the
/// latest card payment, and while its payment is due a form to pay it with a saved card now,
/// which asks for the bank's authentication in Stripe's frame when needed (`/cards.js`).
#[component]
fn BookingCard(id: i64) -> impl IntoView {
    let data = Resource::new(move || id, crate::api::ledger::get_booking_card);
    view! {
        <Transition fallback=|| ()>
            {move || {
                data.get().and_then(Result::ok).flatten().map(|panel| view! { <BookingCardView panel /> })
            }}
        </Transition>
    }
}

#[component]
fn BookingCardView(panel: crate::api::ledger::BookingCardPanel) -> impl IntoView {
    use crate::domain::money::Money;
    use crate::domain::reservation::PaymentStatus;
    use crate::text::format::{MoneyText, money_string};
    let i18n = use_i18n();
    let crate::api::ledger::BookingCardPanel {
        reservation_id,
        payment_status,
        price_minor,
        currency,
        payment,
        cards,
        release_at,
        js_url,
        publishable_key,
    } = panel;
    let status_line = payment.as_ref().map(|p| {
        let card = p.card.clone();
        let why = p.failure.clone().unwrap_or_default();
        let line = match p.status.as_str() {
            "succeeded" => t_string!(i18n, booking_card_paid, card).to_string(),
            "requires_action" => t_string!(i18n, booking_card_authenticate, card).to_string(),
            "failed" => t_string!(i18n, booking_card_failed, card, why).to_string(),
            _ => t_string!(i18n, booking_card_pending, card).to_string(),
        };
        view! { <p class="booking-card-status" data-status=p.status.clone()>{line}</p> }
    });
    let due = matches!(payment_status, PaymentStatus::Due);
    let amount = money_string(i18n, Money::from_minor(price_minor), &currency);
    let due_line = release_at.filter(|_| due).map(|until| {
        view! {
            <p class="notice notice-warn" role="status">
                {t!(i18n, booking_card_due, amount = amount.clone(), until)}
            </p>
        }
    });
    let open_payment = payment
        .as_ref()
        .filter(|p| p.status == "pending")
        .map(|p| p.id);
    let form = (due && !cards.is_empty()).then(|| {
        let options = cards
            .into_iter()
            .map(|(id, label)| view! { <option value=id>{label}</option> })
            .collect_view();
        view! {
            <form class="booking-card-form" data-reservation=reservation_id>
                <label class="field">
                    {t!(i18n, booking_card_with)}
                    <select name="card">{options}</select>
                </label>
                <button type="submit" class="button-primary">
                    {t!(i18n, booking_card_pay)} " " <MoneyText amount=Money::from_minor(price_minor) currency=currency.clone() />
                </button>
            </form>
        }
    });
    let no_cards = (due && form.is_none()).then(|| {
        view! { <p class="hint"><a href="/wallet#cards">{t!(i18n, booking_card_add)}</a></p> }
    });
    view! {
        <section
            class="cards booking-card"
            id="card-payment"
            data-js-url=js_url
            data-publishable-key=publishable_key
            data-reservation=reservation_id
            data-open-payment=open_payment.map(|id| id.to_string()).unwrap_or_default()
            data-msg-working=t_string!(i18n, cards_working).to_string()
            data-msg-paid=t_string!(i18n, cards_paid).to_string()
            data-msg-waiting=t_string!(i18n, cards_waiting).to_string()
            data-msg-failed=t_string!(i18n, cards_failed).to_string()
            data-msg-unavailable=t_string!(i18n, cards_unavailable).to_string()
        >
            <h2>{t!(i18n, booking_card_title)}</h2>
            {status_line}
            {due_line}
            <p class="cards-status" role="status" aria-live="polite"></p>
            {form}
            {no_cards}
            <script src="/cards.js" defer></script>
        </section>
    }
}
