//! `/signin`: the ways to sign in that this server offers, and why the last attempt failed.

use crate::api::session::list_sign_in_methods;
use crate::components::error::ErrorPanel;
use crate::domain::sign_in::SignInFailure;
use crate::i18n::*;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// The sign-in page. `?return_to=/path` says where to go afterwards; `?error=code` says why the
/// last sign-in through an identity provider failed.
#[component]
pub fn SignInPage() -> impl IntoView {
    let i18n = use_i18n();
    let query = use_query_map();
    let requested = StoredValue::new(requested_return_to());
    let return_to = move || {
        requested.with_value(|raw| crate::domain::return_to::local_path_or_home(raw.as_deref()))
    };
    let failure = move || {
        query
            .read()
            .get("error")
            .and_then(|code| SignInFailure::from_code(&code))
    };
    let options = Resource::new(|| (), |()| list_sign_in_methods());
    view! {
        // A plain string, read once: leptos_meta reads a reactive title after the render, and
        // under load its signal was sometimes gone by then (a panic that cut the page off).
        <Title text=t_string!(i18n, sign_in_title).to_string() />
        <section class="sign-in">
            <h1>{t!(i18n, sign_in_title)}</h1>
            {move || failure().map(|failure| view! { <SignInFailurePanel failure /> })}
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    options
                        .get()
                        .map(|result| match result {
                            Ok(options) if options.providers.is_empty() && !options.dev_sign_in => {
                                view! { <p class="empty">{t!(i18n, sign_in_no_provider)}</p> }.into_any()
                            }
                            Ok(options) => {
                                let providers = (!options.providers.is_empty())
                                    .then(|| {
                                        view! {
                                            <p class="lede">{t!(i18n, sign_in_providers_note)}</p>
                                            <ul class="sign-in-providers">
                                                {options
                                                    .providers
                                                    .into_iter()
                                                    .map(|provider| {
                                                        let href = move || {
                                                            format!(
                                                                "/auth/oidc/{}/start?return_to={}",
                                                                provider.id,
                                                                encode_query_value(&return_to()),
                                                            )
                                                        };
                                                        let label = provider.label.clone();
                                                        view! {
                                                            <li>
                                                                <a class="button-primary" href=href>
                                                                    {t!(i18n, sign_in_with, provider = move || label.clone())}
                                                                </a>
                                                            </li>
                                                        }
                                                    })
                                                    .collect_view()}
                                            </ul>
                                        }
                                    });
                                let dev = options
                                    .dev_sign_in
                                    .then(|| {
                                        view! {
                                            <h2>{t!(i18n, sign_in_dev_heading)}</h2>
                                            <p class="lede">{t!(i18n, dev_sign_in_note)}</p>
                                            <form class="sign-in-choices" method="post" action="/auth/dev">
                                                <input type="hidden" name="return_to" value=return_to />
                                                <button type="submit" name="role" value="user" class="button-primary">
                                                    {t!(i18n, sign_in_as_demo_user)}
                                                </button>
                                                <button type="submit" name="role" value="team_admin" class="button-secondary">
                                                    {t!(i18n, sign_in_as_demo_team_admin)}
                                                </button>
                                                <button type="submit" name="role" value="platform_admin" class="button-secondary">
                                                    {t!(i18n, sign_in_as_demo_admin)}
                                                </button>
                                            </form>
                                        }
                                    });
                                view! { {providers} {dev} }.into_any()
                            }
                            Err(error) => view! { <ErrorPanel error /> }.into_any(),
                        })
                }}
            </Transition>
        </section>
    }
}

/// Why the last sign-in failed, in the user's language.
#[component]
fn SignInFailurePanel(failure: SignInFailure) -> impl IntoView {
    let i18n = use_i18n();
    let message = move || {
        match failure {
            SignInFailure::UnknownProvider => t_string!(i18n, sign_in_error_unknown_provider),
            SignInFailure::ProviderUnavailable => {
                t_string!(i18n, sign_in_error_provider_unavailable)
            }
            SignInFailure::ProviderDenied => t_string!(i18n, sign_in_error_provider_denied),
            SignInFailure::StateMissing => t_string!(i18n, sign_in_error_state_missing),
            SignInFailure::StateMismatch => t_string!(i18n, sign_in_error_state_mismatch),
            SignInFailure::NoSignInInProgress => {
                t_string!(i18n, sign_in_error_no_sign_in_in_progress)
            }
            SignInFailure::CodeMissing => t_string!(i18n, sign_in_error_code_missing),
            SignInFailure::CodeRejected => t_string!(i18n, sign_in_error_code_rejected),
            SignInFailure::IdTokenMissing => t_string!(i18n, sign_in_error_id_token_missing),
            SignInFailure::IdTokenAudience => t_string!(i18n, sign_in_error_id_token_audience),
            SignInFailure::IdTokenIssuer => t_string!(i18n, sign_in_error_id_token_issuer),
            SignInFailure::IdTokenExpired => t_string!(i18n, sign_in_error_id_token_expired),
            SignInFailure::IdTokenSignature => t_string!(i18n, sign_in_error_id_token_signature),
            SignInFailure::IdTokenNonce => t_string!(i18n, sign_in_error_id_token_nonce),
            SignInFailure::IdTokenInvalid => t_string!(i18n, sign_in_error_id_token_invalid),
            SignInFailure::EmailMissing => t_string!(i18n, sign_in_error_email_missing),
            SignInFailure::AccountConflict => t_string!(i18n, sign_in_error_account_conflict),
        }
        .to_string()
    };
    view! {
        <div class="error-panel" role="alert" data-error=failure.code()>
            <h2>{t!(i18n, sign_in_failed_title)}</h2>
            <p>{message}</p>
            <p class="hint">{t!(i18n, sign_in_try_again)}</p>
        </div>
    }
}

/// Encodes a query-string value (paths with `?` and `&` survive the round trip).
fn encode_query_value(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// The `return_to` this page was asked for, decoded once from the request's own query. (The
/// router's query map decodes a value twice: a `%20` or `%26` inside the nested address would come
/// back as a space or an `&` and change where the visitor lands.) The page renders on the server
/// only; in the browser there is no request and no value.
fn requested_return_to() -> Option<String> {
    #[cfg(feature = "ssr")]
    {
        let parts = use_context::<http::request::Parts>()?;
        form_urlencoded::parse(parts.uri.query()?.as_bytes())
            .find(|(key, _)| key == "return_to")
            .map(|(_, value)| value.into_owned())
    }
    #[cfg(not(feature = "ssr"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::encode_query_value;

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(
            encode_query_value("/a?b=1&c=é"),
            "%2Fa%3Fb%3D1%26c%3D%C3%A9"
        );
    }
}
