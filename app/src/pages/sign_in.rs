//! `/signin`: the ways to sign in that this server offers.

use crate::api::session::list_sign_in_methods;
use crate::components::error::ErrorPanel;
use crate::i18n::*;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// The sign-in page. `?return_to=/path` says where to go afterwards.
#[component]
pub fn SignInPage() -> impl IntoView {
    let i18n = use_i18n();
    let query = use_query_map();
    let return_to = move || {
        query
            .read()
            .get("return_to")
            .filter(|path| path.starts_with('/') && !path.starts_with("//"))
            .unwrap_or_else(|| "/".to_owned())
    };
    let options = Resource::new(|| (), |()| list_sign_in_methods());
    view! {
        <Title text=move || t_string!(i18n, sign_in_title).to_string() />
        <section class="sign-in">
            <h1>{t!(i18n, sign_in_title)}</h1>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    options
                        .get()
                        .map(|result| match result {
                            Ok(options) if options.dev_sign_in => {
                                view! {
                                    <p class="lede">{t!(i18n, dev_sign_in_note)}</p>
                                    <form class="sign-in-choices" method="post" action="/auth/dev">
                                        <input type="hidden" name="return_to" value=return_to />
                                        <button type="submit" name="role" value="user" class="button-primary">
                                            {t!(i18n, sign_in_as_demo_user)}
                                        </button>
                                        <button type="submit" name="role" value="platform_admin" class="button-secondary">
                                            {t!(i18n, sign_in_as_demo_admin)}
                                        </button>
                                    </form>
                                }
                                    .into_any()
                            }
                            Ok(_) => view! { <p class="empty">{t!(i18n, sign_in_no_provider)}</p> }.into_any(),
                            Err(error) => view! { <ErrorPanel error /> }.into_any(),
                        })
                }}
            </Transition>
        </section>
    }
}
