//! `/admin/credits`: platform admins grant or deduct a user's credits with a reason, and see
//! users' balances, a page of 100 at a time. A plain form (the
//! `change_credits` server function), rendered on the server only.

use crate::api::ledger::ChangeCredits;
use crate::api::ledger::{CreditsPage as CreditsData, get_credits_page};
use crate::components::error::{ErrorPanel, form_outcome};
use crate::i18n::*;
use crate::text::format::MoneyText;
use leptos::either::Either;
use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// The credits page.
#[component]
pub fn CreditsPage() -> impl IntoView {
    let i18n = use_i18n();
    let (done, error) = use_query_map().with_untracked(|q| (q.get("done"), q.get("error")));
    let cursor = use_query_map()
        .with_untracked(|q| q.get("cursor"))
        .filter(|cursor| !cursor.is_empty());
    let on_later_page = cursor.is_some();
    let data = Resource::new(|| (), move |()| get_credits_page(cursor.clone()));
    let flash = form_outcome(
        done.map(|id| t_string!(i18n, credits_done, id).to_string()),
        error,
    );
    view! {
        // A plain string, read once: leptos_meta reads a reactive title after the render, and
        // under load its signal was sometimes gone by then (a panic that cut the page off).
        <Title text=t_string!(i18n, credits_title).to_string() />
        <section class="credits">
            <h1>{t!(i18n, credits_title)}</h1>
            <p class="lede">{t!(i18n, credits_intro)}</p>
            {flash}
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    data.get()
                        .map(|result| match result {
                            Ok(data) => Either::Left(view! { <CreditsView data on_later_page /> }),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

#[component]
fn CreditsView(data: CreditsData, on_later_page: bool) -> impl IntoView {
    let i18n = use_i18n();
    let CreditsData {
        users,
        next,
        currency,
        form_key,
    } = data;
    let options = users
        .iter()
        .map(|(user, _)| {
            let email = user.email.as_str().to_owned();
            view! { <option value=email.clone()>{user.name.clone()}</option> }
        })
        .collect_view();
    let decimals = usize::from(currency.exponent());
    let example = if decimals == 0 {
        "100".to_owned()
    } else {
        format!("100.{}", "0".repeat(decimals))
    };
    view! {
        <form class="credits-form" method="post" action=ChangeCredits::PATH>
            <input type="hidden" name="idempotency_key" value=form_key />
            // Any user's address; those on this page of balances are suggested.
            <label class="field">{t!(i18n, credits_user)}
                <input type="email" name="email" required maxlength="320" list="credit-users" autocomplete="off" />
                <datalist id="credit-users">{options}</datalist>
            </label>
            <fieldset class="field credits-direction">
                <legend>{t!(i18n, credits_direction)}</legend>
                <label><input type="radio" name="direction" value="grant" checked />" "{t!(i18n, credits_grant)}</label>
                <label><input type="radio" name="direction" value="deduct" />" "{t!(i18n, credits_deduct)}</label>
            </fieldset>
            <label class="field">{t!(i18n, credits_amount, currency = currency.code().to_owned())}
                <input type="text" name="amount" inputmode="decimal" required placeholder=example />
            </label>
            <label class="field credits-reason">{t!(i18n, credits_reason)}
                <input type="text" name="reason" required maxlength="500" />
            </label>
            <button type="submit" class="button-primary">{t!(i18n, credits_submit)}</button>
        </form>
        <h2>{t!(i18n, credits_balances)}</h2>
        <div class="table-scroll">
            <table class="wallet-table">
                <thead>
                    <tr>
                        <th scope="col">{t!(i18n, credits_user)}</th>
                        <th scope="col">{t!(i18n, credits_email)}</th>
                        <th scope="col" class="num">{t!(i18n, wallet_balance)}</th>
                    </tr>
                </thead>
                <tbody>
                    {users
                        .into_iter()
                        .map(|(user, balance)| {
                            view! {
                                <tr data-email=user.email.as_str().to_owned()>
                                    <td>{user.name}</td>
                                    <td>{user.email.as_str().to_owned()}</td>
                                    <td class="num"><MoneyText amount=balance currency=currency.clone() /></td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
        <crate::components::table::PageLinks next on_later_page base="/admin/credits" ascending=true />
    }
}
