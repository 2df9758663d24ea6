//! `/watches`: "tell me when it frees up". The form makes a watch; the table lists the user's
//! watches with the window held for each and its one-click booking. Rendered on the server only
//! (no island); the forms post to `api::watches` and come back here with `done=` or `error=`.

use crate::api::forms::Outcome;
use crate::api::watches::{
    BookWatch, CreateWatch, StopWatch, WatchDone, WatchesPage as WatchesData, get_watches_page,
};
use crate::components::error::{ErrorPanel, form_outcome};
use crate::components::table::{Column, DataTable, PostButton};
use crate::domain::money::{Currency, Money};
use crate::domain::schedule::{Share, slot_ceil};
use crate::domain::time_text::date_minute;
use crate::domain::watch::{OfferOutcome, Watch, WatchState, hours_text};
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use crate::text::format::money_string;
use chrono::{DateTime, TimeDelta, Utc};
use leptos::either::Either;
use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// The watches page.
#[component]
pub fn WatchesPage() -> impl IntoView {
    let i18n = use_i18n();
    let (done, error) = use_query_map().with_untracked(|q| (q.get("done"), q.get("error")));
    let data = Resource::new(|| (), |()| get_watches_page());
    let done = done.map(|done| {
        match WatchDone::from_query(&done) {
            Some(WatchDone::Watching) => t_string!(i18n, watches_done_watching),
            Some(WatchDone::Stopped) => t_string!(i18n, watches_done_stopped),
            Some(WatchDone::Booked) => t_string!(i18n, watches_done_booked),
            None => t_string!(i18n, team_done_saved),
        }
        .to_string()
    });
    let flash = form_outcome(done, error);
    view! {
        <Title text=t_string!(i18n, watches_title).to_string() />
        <section class="watches">
            <h1>{t!(i18n, watches_title)}</h1>
            <p class="lede">{t!(i18n, watches_intro)}</p>
            {flash}
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    data.get()
                        .map(|result| match result {
                            Ok(data) => Either::Left(view! { <WatchesView data /> }),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

fn share_text(i18n: leptos_i18n::I18nContext<Locale>, share: Share) -> String {
    match share {
        Share::Whole => t_string!(i18n, share_whole),
        Share::Half => t_string!(i18n, share_half),
        Share::Quarter => t_string!(i18n, share_quarter),
    }
    .to_string()
}

/// A `datetime-local` value in the viewer's zone.
fn local_input(zone: &ZoneOffsets, at: DateTime<Utc>) -> String {
    zone.local(at).format("%Y-%m-%dT%H:%M").to_string()
}

#[component]
fn WatchesView(data: WatchesData) -> impl IntoView {
    let i18n = use_i18n();
    let WatchesData {
        watches,
        models,
        teams,
        zone,
        now,
        currency,
    } = data;
    let from = slot_ceil(now);
    let to = from + TimeDelta::days(7);
    let model_options = models
        .into_iter()
        .map(|model| view! { <option value=model.clone()>{model.clone()}</option> })
        .collect_view();
    let team_options = teams
        .into_iter()
        .map(|(id, name)| view! { <option value=id>{name}</option> })
        .collect_view();
    let shares = [
        (Share::Whole, "whole"),
        (Share::Half, "half"),
        (Share::Quarter, "quarter"),
    ]
    .into_iter()
    .map(|(share, value)| view! { <option value=value>{share_text(i18n, share)}</option> })
    .collect_view();
    let zone_name = zone.name.clone();
    let list = if watches.is_empty() {
        Either::Left(view! { <p class="empty">{t!(i18n, watches_none)}</p> })
    } else {
        let rows = watches
            .into_iter()
            .map(|watch| view! { <WatchRow watch zone=zone.clone() now currency=currency.clone() /> })
            .collect_view();
        Either::Right(view! {
            <DataTable class="watches-table" columns=vec![
                Column::num(t_string!(i18n, watches_col_id)),
                Column::text(t_string!(i18n, watches_col_what)),
                Column::text(t_string!(i18n, watches_col_between)),
                Column::text(t_string!(i18n, watches_col_state)),
                Column::text(t_string!(i18n, watches_col_window)),
                Column::actions(t_string!(i18n, team_col_actions)),
            ]>{rows}</DataTable>
        })
    };
    view! {
        <h2>{t!(i18n, watches_new)}</h2>
        <form method="post" action=CreateWatch::PATH class="team-form watch-form">
            <label class="field">
                {t!(i18n, watches_model)}
                <select name="model" required>{model_options}</select>
            </label>
            <label class="field">
                {t!(i18n, watches_count)}
                <input type="number" name="count" min="1" max="64" value="1" required />
            </label>
            <label class="field">
                {t!(i18n, watches_share)}
                <select name="share">{shares}</select>
            </label>
            <label class="field">
                {t!(i18n, watches_hours)}
                <input type="number" name="hours" min="0.25" step="0.25" value="4" required />
            </label>
            <label class="field">
                {t!(i18n, watches_from)}
                <input type="datetime-local" name="from" step="900" value=local_input(&zone, from) required />
            </label>
            <label class="field">
                {t!(i18n, watches_to)}
                <input type="datetime-local" name="to" step="900" value=local_input(&zone, to) required />
            </label>
            <label class="field">
                {t!(i18n, watches_for)}
                <select name="team">
                    <option value="">{t!(i18n, watches_personal)}</option>
                    {team_options}
                </select>
            </label>
            <button type="submit">{t!(i18n, watches_submit)}</button>
        </form>
        <p class="hint">{t!(i18n, times_in_zone, zone = move || zone_name.clone())}</p>
        <h2>{t!(i18n, watches_yours)}</h2>
        {list}
    }
}

#[component]
fn WatchRow(
    watch: Watch,
    zone: ZoneOffsets,
    now: DateTime<Utc>,
    currency: Currency,
) -> impl IntoView {
    let i18n = use_i18n();
    let at = |when: DateTime<Utc>| date_minute(zone.local(when));
    let id = watch.id;
    let (count, model) = (watch.count, watch.model.clone());
    let share = share_text(i18n, watch.share);
    let hours = hours_text(watch.length_minutes);
    let what = t_string!(i18n, watches_what, count, model, share, hours).to_string();
    let what = match &watch.team {
        Some((_, team)) => format!("{what} · {team}"),
        None => what,
    };
    let between = format!("{} – {}", at(watch.from), at(watch.to));
    let held = watch
        .offer
        .as_ref()
        .filter(|offer| watch.state == WatchState::Watching && offer.open(now));
    let state = match (watch.state, held) {
        (WatchState::Watching, Some(offer)) => {
            let until = at(offer.hold_until);
            let text = t_string!(i18n, watches_state_held, until).to_string();
            Either::Left(view! { <strong class="watch-held">{text}</strong> })
        }
        (WatchState::Watching, None) => Either::Right(Either::Left(
            view! { <span>{t!(i18n, watches_state_watching)}</span> },
        )),
        (WatchState::Served, _) => {
            let reservation = watch.reservation_id.unwrap_or_default();
            Either::Right(Either::Right(Either::Left(view! {
                <span>
                    {t!(i18n, watches_state_served)}" "
                    <a href=format!("/reservations/{reservation}")>{format!("#{reservation}")}</a>
                </span>
            })))
        }
        (WatchState::Expired, _) => Either::Right(Either::Right(Either::Right(Either::Left(
            view! { <span class="muted">{t!(i18n, watches_state_expired)}</span> },
        )))),
        (WatchState::Cancelled, _) => Either::Right(Either::Right(Either::Right(Either::Right(
            view! { <span class="muted">{t!(i18n, watches_state_cancelled)}</span> },
        )))),
    };
    let window = watch.offer.as_ref().map(|offer| {
        let price = money_string(i18n, Money::from_minor(offer.price_minor), &currency);
        let outcome = match (offer.outcome, offer.open(now)) {
            (None, true) => String::new(),
            (Some(OfferOutcome::Booked), _) => t_string!(i18n, watches_offer_booked).to_string(),
            (Some(OfferOutcome::Lost), _) => t_string!(i18n, watches_offer_lost).to_string(),
            (Some(OfferOutcome::Lapsed) | None, _) => {
                t_string!(i18n, watches_offer_lapsed).to_string()
            }
        };
        let text = format!(
            "{} · {} – {} · {price}",
            offer.node_name,
            at(offer.window.start()),
            at(offer.window.end())
        );
        view! {
            <span>{text}</span>
            {(!outcome.is_empty()).then(|| view! { <span class="muted">" · "{outcome}</span> })}
        }
    });
    let watching = watch.state == WatchState::Watching;
    let book = held.is_some().then(|| {
        view! {
            <PostButton action=BookWatch::PATH fields=vec![("id", id.to_string())]>
                {t!(i18n, watches_book)}
            </PostButton>
        }
    });
    let stop = watching.then(|| {
        view! {
            <PostButton action=StopWatch::PATH fields=vec![("id", id.to_string())] danger=true>
                {t!(i18n, watches_stop)}
            </PostButton>
        }
    });
    view! {
        <tr data-watch=id class:watch-held-row=held.is_some()>
            <td class="num">{format!("#{id}")}</td>
            <td>{what}</td>
            <td>{between}</td>
            <td>{state}</td>
            <td>{window}</td>
            <td class="actions">{book}{stop}</td>
        </tr>
    }
}
