//! E-mail: the mailer the portal sends through (SMTP with lettre; `smtp_url` chooses STARTTLS or
//! TLS), and the message a queued delivery becomes, in its recipient's language and zone.

use crate::backend::calendar_file::{self, CalendarEntry};
use crate::backend::entity::{notification_event, user};
use crate::backend::words::{EmailLinks, NoticeWords};
use crate::domain::money::Currency;
use crate::domain::notify::{EventKind, Notice};
use chrono::{DateTime, Utc};
use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use std::sync::Arc;

/// Why a message did not go out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailError {
    /// Refused for good (a bad address, a 5xx answer): trying again would not help.
    pub permanent: bool,
    /// What the server or the transport said.
    pub reason: String,
}

impl MailError {
    fn permanent(reason: impl Into<String>) -> Self {
        Self {
            permanent: true,
            reason: reason.into(),
        }
    }
}

/// Sends a message (SMTP in the portal; tests may swap it).
#[async_trait::async_trait]
pub trait Mailer: Send + Sync {
    /// Hands `message` to the mail server.
    async fn send(&self, message: Message) -> Result<(), MailError>;
}

/// SMTP through lettre's pooled transport.
pub struct SmtpMailer(AsyncSmtpTransport<Tokio1Executor>);

impl SmtpMailer {
    /// A mailer for `url`: `smtp://host:port` (plain, for a relay on loopback),
    /// `smtp://host:587?tls=required` (STARTTLS) or `smtps://host:465` (TLS), with
    /// `user:password@` when the server wants a login.
    pub fn from_url(url: &str) -> Result<Self, String> {
        let builder =
            AsyncSmtpTransport::<Tokio1Executor>::from_url(url).map_err(|err| err.to_string())?;
        Ok(Self(
            builder
                .timeout(Some(std::time::Duration::from_secs(30)))
                .build(),
        ))
    }
}

#[async_trait::async_trait]
impl Mailer for SmtpMailer {
    async fn send(&self, message: Message) -> Result<(), MailError> {
        self.0
            .send(message)
            .await
            .map(|_| ())
            .map_err(|err| MailError {
                permanent: err.is_permanent(),
                reason: err.to_string(),
            })
    }
}

/// The e-mail channel: how messages go out, from whom, and where their links point.
pub struct MailChannel {
    /// The mailer.
    pub mailer: Arc<dyn Mailer>,
    /// The sender (`mail_from`).
    pub from: Mailbox,
    /// The portal's address, without a trailing slash (`public_url`).
    pub public_url: String,
    /// Its host name (message ids, calendar UIDs).
    host: String,
}

impl std::fmt::Debug for MailChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailChannel")
            .field("from", &self.from)
            .field("public_url", &self.public_url)
            .finish_non_exhaustive()
    }
}

impl MailChannel {
    /// The channel for `smtp_url`, sending as `from` (default `Berth <noreply@host>`), with links
    /// to `public_url`. Nothing is contacted yet.
    pub fn smtp(smtp_url: &str, from: Option<&str>, public_url: &str) -> Result<Self, String> {
        let mailer = SmtpMailer::from_url(smtp_url.trim())
            .map_err(|err| format!("smtp_url (BERTH_SMTP_URL): {err}"))?;
        let public_url = public_url.trim().trim_end_matches('/').to_owned();
        let host = host_of(&public_url);
        let default_from = format!("Berth <noreply@{host}>");
        let from = from
            .map(str::trim)
            .filter(|from| !from.is_empty())
            .unwrap_or(&default_from);
        let from = from.parse().map_err(|err| {
            format!(
                "mail_from (BERTH_MAIL_FROM) `{from}`: {err}; expected an address such as \
                 Berth <berth@example.org>"
            )
        })?;
        Ok(Self {
            mailer: Arc::new(mailer),
            from,
            public_url,
            host,
        })
    }

    /// The portal's host name (message ids, calendar UIDs).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The e-mail that delivers `event` to `recipient` (delivery `delivery_id`).
    pub fn message(
        &self,
        delivery_id: i64,
        event: &notification_event::Model,
        recipient: &user::Model,
        currency: &Currency,
        words: &dyn NoticeWords,
        now: DateTime<Utc>,
    ) -> Result<Message, MailError> {
        let notice: Notice = serde_json::from_str(&event.notice)
            .map_err(|err| MailError::permanent(format!("unreadable notice: {err}")))?;
        let language = recipient.locale.as_deref();
        let times = [Some(event.occurred_at), notice.until]
            .into_iter()
            .chain(
                notice
                    .reservation
                    .iter()
                    .flat_map(|r| [Some(r.window.start()), Some(r.window.end())]),
            )
            .flatten();
        let (from, to) = times.fold((now, now), |(from, to), at| (from.min(at), to.max(at)));
        let zone = crate::backend::viewer::zone_named(recipient.time_zone.as_deref(), from, to);
        let open = match (&notice.reservation, event.kind) {
            (_, EventKind::Incident) => notice.incident.as_ref().map_or_else(
                || "/incidents".to_owned(),
                |i| format!("/incidents/{}", i.id),
            ),
            (_, EventKind::CreditsAdded | EventKind::Receipt) => "/wallet".to_owned(),
            (_, EventKind::PaymentMismatch) => "/admin/payments".to_owned(),
            // The booking's page, where its payment is completed.
            (Some(r), EventKind::PaymentDue) => format!("/reservations/{}", r.id),
            (_, EventKind::WatchOffer) => "/watches".to_owned(),
            (Some(_), _) => "/reservations".to_owned(),
            (None, _) => "/inbox".to_owned(),
        };
        let links = EmailLinks {
            open: format!("{}{open}", self.public_url),
            settings: format!("{}/profile#notifications", self.public_url),
        };
        let text = words.email(language, event.kind, &notice, &zone, currency, &links);
        let to = recipient
            .email
            .parse()
            .map(|address| Mailbox::new(Some(recipient.name.clone()), address))
            .map_err(|err| MailError::permanent(format!("address {}: {err}", recipient.email)))?;
        let body = MultiPart::alternative_plain_html(text.text, text.html);
        let body = match (&notice.reservation, event.kind, notice.until) {
            // A confirmed booking comes with its calendar entry (not one still awaiting approval).
            (Some(reservation), EventKind::BookingConfirmed, None) => {
                let summary = words.calendar_summary(
                    language,
                    reservation.gpus,
                    &reservation.model,
                    &reservation.node,
                );
                let entry = CalendarEntry {
                    reservation,
                    summary,
                    url: links.open.clone(),
                    sequence: 0,
                    cancelled: false,
                    tentative: false,
                };
                let ics = calendar_file::calendar("Berth", self.host(), &[entry], now);
                let content_type =
                    ContentType::parse("text/calendar; charset=utf-8; method=PUBLISH")
                        .map_err(|err| MailError::permanent(err.to_string()))?;
                MultiPart::mixed().multipart(body).singlepart(
                    Attachment::new(format!("berth-reservation-{}.ics", reservation.id))
                        .body(ics, content_type),
                )
            }
            _ => MultiPart::mixed().multipart(body),
        };
        Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(text.subject)
            .message_id(Some(format!("<delivery-{delivery_id}@{}>", self.host())))
            .multipart(body)
            .map_err(|err| MailError::permanent(err.to_string()))
    }
}

/// The host name in `url` (`https://berth.example.org:8443/x` → `berth.example.org`); `berth`
/// when it has none.
pub fn host_of(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_else(|| "berth".to_owned())
}
