//! The profile's "Access to the nodes": the login Berth uses on every node and the user's SSH
//! public keys (added by pasting a `.pub` line, removed one by one).

use crate::api::node_access::{AddSshKey, DeleteSshKey, get_node_access};
use crate::components::error::ErrorPanel;
use crate::i18n::*;
use leptos::either::Either;
use leptos::prelude::*;

/// Login and keys (an island: adding and removing work in place).
#[cfg_attr(feature = "hydrate", island(lazy))]
#[cfg_attr(not(feature = "hydrate"), island)]
pub fn SshKeys() -> impl IntoView {
    let i18n = use_i18n();
    let add = ServerAction::<AddSshKey>::new();
    let delete = ServerAction::<DeleteSshKey>::new();
    let page = Resource::new(
        move || (add.version().get(), delete.version().get()),
        |_| get_node_access(),
    );
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    // A key added: the form is emptied for the next one (a refusal keeps what was typed).
    let form = NodeRef::<leptos::html::Form>::new();
    Effect::new(move |_| {
        if matches!(add.value().get(), Some(Ok(_)))
            && let Some(form) = form.get_untracked()
        {
            form.reset();
        }
    });
    view! {
        <section class="calendar-feeds ssh-keys" id="ssh-keys" aria-labelledby="ssh-keys-title">
            <h2 id="ssh-keys-title">{t!(i18n, ssh_keys_title)}</h2>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    page.get()
                        .map(|result| match result {
                            Ok(access) => {
                                let login = access.login.clone();
                                let empty = access.keys.is_empty();
                                let rows = access
                                    .keys
                                    .into_iter()
                                    .map(|key| {
                                        let label_name = key.name.clone();
                                        view! {
                                            <tr>
                                                <td>{key.name}</td>
                                                <td>{key.algorithm}</td>
                                                <td><code class="fingerprint">{key.fingerprint}</code></td>
                                                <td>
                                                    <ActionForm action=delete>
                                                        <input type="hidden" name="id" value=key.id />
                                                        <button
                                                            type="submit"
                                                            class="button-secondary"
                                                            aria-label=move || t_string!(i18n, ssh_keys_delete_label, name = label_name.clone()).to_string()
                                                        >
                                                            {t!(i18n, ssh_keys_delete)}
                                                        </button>
                                                    </ActionForm>
                                                </td>
                                            </tr>
                                        }
                                    })
                                    .collect_view();
                                Either::Left(view! {
                                    <p class="lede">
                                        {t!(i18n, ssh_keys_intro, login = move || view! { <code class="node-login">{login.clone()}</code> })}
                                    </p>
                                    <ActionForm
                                        action=add
                                        node_ref=form
                                        attr:class="feed-form ssh-key-form"
                                        attr:data-hydrated=move || hydrated.get().to_string()
                                    >
                                        <label for="ssh-key">{t!(i18n, ssh_keys_key)}</label>
                                        <textarea id="ssh-key" name="key" rows="3" required maxlength="8192" spellcheck="false" placeholder="ssh-ed25519 AAAA… you@laptop"></textarea>
                                        <label for="ssh-key-name">{t!(i18n, ssh_keys_name_field)}</label>
                                        <input id="ssh-key-name" name="name" type="text" maxlength="64" autocomplete="off" />
                                        <button type="submit" class="button-primary">{t!(i18n, ssh_keys_add)}</button>
                                    </ActionForm>
                                    {empty.then(|| view! { <p class="empty">{t!(i18n, ssh_keys_none)}</p> })}
                                    <table class="token-table feed-table" hidden=empty>
                                        <thead>
                                            <tr>
                                                <th scope="col">{t!(i18n, ssh_keys_name)}</th>
                                                <th scope="col">{t!(i18n, ssh_keys_type)}</th>
                                                <th scope="col">{t!(i18n, ssh_keys_fingerprint)}</th>
                                                <th scope="col"><span class="visually-hidden">{t!(i18n, ssh_keys_delete)}</span></th>
                                            </tr>
                                        </thead>
                                        <tbody>{rows}</tbody>
                                    </table>
                                })
                            }
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
            {move || add.value().get().and_then(Result::err).map(|error| view! { <ErrorPanel error /> })}
            {move || delete.value().get().and_then(Result::err).map(|error| view! { <ErrorPanel error /> })}
        </section>
    }
}
