//! `/inbox`: what Berth has told the signed-in user, newest first, unread ones marked; each can
//! be marked read, or all at once. Rendered on the server only (no island); the forms work
//! without JavaScript.

use crate::api::notify::{
    InboxEntry, InboxPage as InboxData, MarkAllNoticesRead, MarkNoticeRead, get_inbox_page,
};
use crate::components::error::{ErrorPanel, form_outcome};
use crate::components::table::PostButton;
use crate::domain::time_text::date_minute;
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use leptos::either::Either;
use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// The inbox page.
#[component]
pub fn InboxPage() -> impl IntoView {
    let i18n = use_i18n();
    let (error, cursor) = use_query_map().with_untracked(|q| {
        (
            q.get("error"),
            q.get("cursor").filter(|cursor| !cursor.is_empty()),
        )
    });
    let on_later_page = cursor.is_some();
    let data = Resource::new(|| (), move |()| get_inbox_page(cursor.clone()));
    let flash = form_outcome(None, error);
    view! {
        // A plain string, read once (see the credits page).
        <Title text=t_string!(i18n, inbox_title).to_string() />
        <section class="inbox">
            <h1>{t!(i18n, inbox_title)}</h1>
            <p class="lede">{t!(i18n, inbox_intro)}</p>
            {flash}
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    data.get()
                        .map(|result| match result {
                            Ok(data) => Either::Left(view! { <InboxView data on_later_page /> }),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

#[component]
fn InboxView(data: InboxData, on_later_page: bool) -> impl IntoView {
    let i18n = use_i18n();
    let InboxData {
        items,
        next,
        unread,
        zone,
    } = data;
    if items.is_empty() && !on_later_page {
        return Either::Left(view! { <p class="empty">{t!(i18n, inbox_none)}</p> });
    }
    let zone_name = zone.name.clone();
    let list = items
        .into_iter()
        .map(|entry| view! { <Notice entry zone=zone.clone() /> })
        .collect_view();
    Either::Right(view! {
        <div class="inbox-bar">
            <p class="hint">
                {t!(i18n, inbox_unread, count = unread)}
                " · "
                {t!(i18n, times_in_zone, zone = move || zone_name.clone())}
            </p>
            {(unread > 0)
                .then(|| {
                    view! {
                        <PostButton action=MarkAllNoticesRead::PATH fields=Vec::new()>
                            {t!(i18n, inbox_mark_all)}
                        </PostButton>
                    }
                })}
        </div>
        <ol class="inbox-list">{list}</ol>
        <crate::components::table::PageLinks next on_later_page base="/inbox" />
    })
}

#[component]
fn Notice(entry: InboxEntry, zone: ZoneOffsets) -> impl IntoView {
    let i18n = use_i18n();
    let InboxEntry { item, title, lines } = entry;
    let unread = !item.read;
    let about_reservation = item.notice.reservation.is_some();
    let about_watch = item.notice.watch.is_some();
    let lines = lines
        .into_iter()
        .map(|line| view! { <p>{line}</p> })
        .collect_view();
    view! {
        <li class="notice" class:unread=unread data-kind=item.kind.as_str() data-notice=item.id>
            <div class="notice-head">
                <strong class="notice-title">{title}</strong>
                {unread.then(|| view! { <span class="notice-new">{t!(i18n, inbox_new)}</span> })}
                <time datetime=item.occurred_at.to_rfc3339()>
                    {date_minute(zone.local(item.occurred_at))}
                </time>
            </div>
            <div class="notice-body">{lines}</div>
            <div class="notice-actions">
                {about_reservation
                    .then(|| {
                        view! {
                            <a href="/reservations">{t!(i18n, inbox_reservations_link)}</a>
                        }
                    })}
                {about_watch
                    .then(|| view! { <a href="/watches">{t!(i18n, inbox_watches_link)}</a> })}
                {unread
                    .then(|| {
                        view! {
                            <PostButton
                                action=MarkNoticeRead::PATH
                                fields=vec![("id", item.id.to_string())]
                            >
                                {t!(i18n, inbox_mark_read)}
                            </PostButton>
                        }
                    })}
            </div>
        </li>
    }
}
