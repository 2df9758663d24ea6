//! What a message says. The words are written in the text layer, which knows the languages; the
//! services that send messages (e-mail, webhooks, calendar feeds) ask for them through
//! [`NoticeWords`], held in the state, and never import the text layer.

use crate::domain::money::Currency;
use crate::domain::notify::{EventKind, Notice};
use crate::domain::zone::ZoneOffsets;

/// An e-mail's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailText {
    /// Subject line.
    pub subject: String,
    /// The plain-text body.
    pub text: String,
    /// The HTML body (a whole document).
    pub html: String,
}

/// Where an e-mail's links go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailLinks {
    /// What the notice is about (the reservations page, the wallet, the inbox).
    pub open: String,
    /// The recipient's notification settings.
    pub settings: String,
}

/// The words of notices, in the reader's language (`language`: a stored locale code such as
/// `pt-BR`; unknown or none: the default language).
pub trait NoticeWords: Send + Sync {
    /// The e-mail that tells a notice of `kind`, times in `zone`.
    fn email(
        &self,
        language: Option<&str>,
        kind: EventKind,
        notice: &Notice,
        zone: &ZoneOffsets,
        currency: &Currency,
        links: &EmailLinks,
    ) -> EmailText;

    /// A notice as one line of text (a webhook's `text`).
    fn line(
        &self,
        language: Option<&str>,
        kind: EventKind,
        notice: &Notice,
        zone: &ZoneOffsets,
        currency: &Currency,
    ) -> String;

    /// A notice as a message for the holder's terminals on a node, with `link` to the
    /// reservation's page.
    fn terminal(
        &self,
        language: Option<&str>,
        kind: EventKind,
        notice: &Notice,
        zone: &ZoneOffsets,
        currency: &Currency,
        link: &str,
    ) -> String;

    /// What a calendar entry for a reservation is called ("2× H100 on gpu-node-1").
    fn calendar_summary(
        &self,
        language: Option<&str>,
        gpus: u32,
        model: &str,
        node: &str,
    ) -> String;
}
