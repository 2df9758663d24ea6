//! The inbox page's read and its forms: mark one notice read, or every one.

use crate::domain::notify::InboxItem;
use crate::domain::zone::ZoneOffsets;
use crate::error::AppError;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// A notice with its words, in the reader's language.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxEntry {
    /// The notice.
    pub item: InboxItem,
    /// Its title.
    pub title: String,
    /// What it says, line by line.
    pub lines: Vec<String>,
}

/// What the inbox page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxPage {
    /// A page of notices, newest first.
    pub items: Vec<InboxEntry>,
    /// The cursor of the next (older) page, when there is one.
    pub next: Option<String>,
    /// How many are unread.
    pub unread: u32,
    /// The viewer's time zone over the notices' times.
    pub zone: ZoneOffsets,
}

/// A page of the signed-in user's inbox (`cursor`: after an earlier page).
#[server(endpoint = "get_inbox_page")]
pub async fn get_inbox_page(cursor: Option<String>) -> Result<InboxPage, AppError> {
    use crate::api::context::signed_in;
    use crate::backend::notify;
    signed_in(|call| async move {
        let page = crate::backend::input::page(
            crate::domain::paging::ListKind::Inbox,
            None,
            cursor.as_deref(),
        )?;
        let (crate::domain::paging::Page { items, next }, unread) = tokio::try_join!(
            notify::inbox(&call.state, &call.actor, &page),
            notify::unread(&call.state, &call.actor),
        )?;
        // Times named: when each happened, and the windows and deadlines it mentions.
        let times = items.iter().flat_map(|item| {
            let notice = &item.notice;
            [Some(item.occurred_at), notice.until]
                .into_iter()
                .chain(
                    notice
                        .reservation
                        .iter()
                        .flat_map(|r| [Some(r.window.start()), Some(r.window.end())]),
                )
                .chain(notice.offer.iter().map(|offer| Some(offer.window.start())))
                .flatten()
        });
        let (from, to) = times.fold((call.now, call.now), |(from, to), at| {
            (from.min(at), to.max(at))
        });
        let zone = call.zone_over(from, to);
        let currency = call.state.portal.currency.clone();
        let items = crate::text::language::in_request_language(|i18n| {
            items
                .into_iter()
                .map(|item| InboxEntry {
                    title: crate::text::notify::title(i18n, item.kind),
                    lines: crate::text::notify::lines(
                        i18n,
                        item.kind,
                        &item.notice,
                        &zone,
                        &currency,
                    ),
                    item,
                })
                .collect()
        });
        Ok(InboxPage {
            items,
            next,
            unread,
            zone,
        })
    })
    .await
}

/// Marks notice `id` read (the inbox page's form); back to the inbox.
#[server(endpoint = "forms/notice_read")]
pub async fn mark_notice_read(id: i64) -> Result<(), AppError> {
    let call = crate::api::context::signed_in(|call| async move { Ok(call) }).await?;
    let result = crate::backend::notify::mark_read(&call.state, &call.actor, Some(id), call.now)
        .await
        .map(|_| ("done", "read".to_owned()));
    crate::api::forms::back_to("/inbox", result)
}

/// Marks every notice read (the inbox page's form); back to the inbox.
#[server(endpoint = "forms/notices_read")]
pub async fn mark_all_notices_read() -> Result<(), AppError> {
    let call = crate::api::context::signed_in(|call| async move { Ok(call) }).await?;
    let result = crate::backend::notify::mark_read(&call.state, &call.actor, None, call.now)
        .await
        .map(|_| ("done", "read".to_owned()));
    crate::api::forms::back_to("/inbox", result)
}

/// One kind of notice on the profile page: its name in the reader's language and the choice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingRow {
    /// The kind (`booking_confirmed`: the form's value).
    pub kind: crate::domain::notify::EventKind,
    /// Its name.
    pub title: String,
    /// Where the user wants it.
    pub choice: crate::domain::notify::ChannelChoice,
}

/// The profile page's notification section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationSettingsPage {
    /// Every kind, in the order the page lists them.
    pub rows: Vec<SettingRow>,
    /// Whether this portal sends e-mail.
    pub email_available: bool,
}

/// The signed-in user's notification settings (the profile page's section).
#[server(endpoint = "get_notification_settings")]
pub async fn get_notification_settings() -> Result<NotificationSettingsPage, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        let settings = crate::backend::notify::settings(&call.state, &call.actor).await?;
        let rows = crate::text::language::in_request_language(|i18n| {
            settings
                .kinds
                .iter()
                .map(|(kind, choice)| SettingRow {
                    kind: *kind,
                    title: crate::text::notify::title(i18n, *kind),
                    choice: *choice,
                })
                .collect()
        });
        Ok(NotificationSettingsPage {
            rows,
            email_available: settings.email_available,
        })
    })
    .await
}

/// Saves the notification settings (the profile page's form): `inbox[]` and `email[]` name the
/// kinds ticked for each channel; back to the profile page.
#[server(endpoint = "forms/notification_settings")]
pub async fn save_notification_settings(
    #[server(default)] inbox: Vec<String>,
    #[server(default)] email: Vec<String>,
    #[server(default)] webhook: Vec<String>,
) -> Result<(), AppError> {
    let call = crate::api::context::signed_in(|call| async move { Ok(call) }).await?;
    let result = crate::backend::notify::save_settings(
        &call.state,
        &call.actor,
        &inbox,
        &email,
        &webhook,
        call.now,
    )
    .await
    .map(|_| ("done", "notifications".to_owned()));
    crate::api::forms::back_to("/profile", result)
}

/// What the platform admins' deliveries page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveriesPage {
    /// A page of the deliveries of the chosen status, newest first.
    pub rows: Vec<crate::domain::notify::DeliveryRow>,
    /// The cursor of the next (older) page, when there is one.
    pub next: Option<String>,
    /// How many stand where.
    pub counts: crate::domain::notify::DeliveryCounts,
    /// The status shown (`None`: all).
    pub status: Option<crate::domain::notify::DeliveryStatus>,
    /// Whether this portal sends e-mail.
    pub email_available: bool,
    /// The viewer's zone over the times shown.
    pub zone: ZoneOffsets,
}

/// A page of the notification deliveries (platform admins): queued, sent, failed with the
/// reason (`cursor`: after an earlier page).
#[server(endpoint = "get_deliveries_page")]
pub async fn get_deliveries_page(
    status: Option<String>,
    #[server(default)] cursor: Option<String>,
) -> Result<DeliveriesPage, AppError> {
    use crate::api::context::platform_admin;
    platform_admin(|call| async move {
        let (crate::domain::paging::Page { items: rows, next }, counts) =
            crate::backend::notify::deliveries(
                &call.state,
                &call.actor,
                status.as_deref(),
                cursor.as_deref(),
            )
            .await?;
        let times = rows
            .iter()
            .flat_map(|row| [Some(row.created_at), Some(row.next_at), row.sent_at])
            .flatten();
        let (from, to) = times.fold((call.now, call.now), |(from, to), at| {
            (from.min(at), to.max(at))
        });
        Ok(DeliveriesPage {
            rows,
            next,
            counts,
            status: status
                .as_deref()
                .and_then(crate::domain::notify::DeliveryStatus::parse),
            email_available: call.state.mail.is_some(),
            zone: call.zone_over(from, to),
        })
    })
    .await
}
