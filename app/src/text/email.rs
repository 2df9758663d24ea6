//! A notice as an e-mail: subject, plain text and HTML in the recipient's language, with times in
//! their zone, a link back to the portal and a footer that leads to their notification settings.

use crate::domain::money::Currency;
use crate::domain::notify::{EventKind, Notice};
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use leptos::prelude::*;
use leptos_i18n::I18nContext;

use crate::backend::words::NoticeWords;
pub use crate::backend::words::{EmailLinks, EmailText};

/// The portal's notice words, in the languages of `locales/` (what the state's
/// [`NoticeWords`] is).
#[derive(Debug, Clone, Copy, Default)]
pub struct Words;

impl Words {
    fn locale(language: Option<&str>) -> Locale {
        language.and_then(locale_named).unwrap_or_default()
    }
}

impl NoticeWords for Words {
    fn email(
        &self,
        language: Option<&str>,
        kind: EventKind,
        notice: &Notice,
        zone: &ZoneOffsets,
        currency: &Currency,
        links: &EmailLinks,
    ) -> EmailText {
        let locale = Self::locale(language);
        in_locale(locale, |i18n| {
            let title = crate::text::notify::title(i18n, kind);
            let mut lines = crate::text::notify::lines(i18n, kind, notice, zone, currency);
            let zone_name = zone.name.clone();
            lines.push(t_string!(i18n, email_times_in, zone = zone_name).to_string());
            let open = t_string!(i18n, email_open).to_string();
            let why = t_string!(i18n, email_footer).to_string();
            let settings = t_string!(i18n, email_settings).to_string();
            let subject = t_string!(i18n, email_subject, title = title.clone()).to_string();
            let mut text = format!("{title}\n\n");
            for line in &lines {
                text.push_str(line);
                text.push('\n');
            }
            text.push_str(&format!(
                "\n{open}: {}\n\n-- \n{why}\n{settings}: {}\n",
                links.open, links.settings
            ));
            let lang = {
                use leptos_i18n::Locale as _;
                locale.as_str()
            };
            let document = view! {
                <html lang=lang>
                <head>
                    <meta charset="utf-8" />
                    <title>{subject.clone()}</title>
                </head>
                <body>
                <div style="font-family: system-ui, sans-serif; color: #1d2733; max-width: 36rem;">
                    <h1 style="font-size: 1.2rem; margin: 0 0 0.75rem;">{title.clone()}</h1>
                    {lines
                        .iter()
                        .map(|line| view! { <p style="margin: 0 0 0.5rem;">{line.clone()}</p> })
                        .collect_view()}
                    <p style="margin: 1rem 0;">
                        <a href=links.open.clone() style="color: #1f5fbf;">{open}</a>
                    </p>
                    <hr style="border: none; border-top: 1px solid #d5dbe3;" />
                    <p style="font-size: 0.85rem; color: #5b6675;">
                        {why}" "<a href=links.settings.clone() style="color: #1f5fbf;">{settings}</a>
                    </p>
                </div>
                </body>
                </html>
            }
            .to_html();
            // Without the hydration markers Leptos leaves between text nodes: no script reads them.
            let html = format!("<!DOCTYPE html>{}", document.replace("<!>", ""));
            EmailText {
                subject,
                text,
                html,
            }
        })
    }

    fn line(
        &self,
        language: Option<&str>,
        kind: EventKind,
        notice: &Notice,
        zone: &ZoneOffsets,
        currency: &Currency,
    ) -> String {
        let locale = Self::locale(language);
        in_locale(locale, |i18n| {
            let title = crate::text::notify::title(i18n, kind);
            let lines = crate::text::notify::lines(i18n, kind, notice, zone, currency);
            if lines.is_empty() {
                title
            } else {
                format!("{title}: {}", lines.join(" "))
            }
        })
    }

    fn terminal(
        &self,
        language: Option<&str>,
        kind: EventKind,
        notice: &Notice,
        zone: &ZoneOffsets,
        currency: &Currency,
        link: &str,
    ) -> String {
        let line = self.line(language, kind, notice, zone, currency);
        in_locale(Self::locale(language), |i18n| {
            let url = link.to_owned();
            format!("Berth — {line}\n{}", t_string!(i18n, terminal_open, url))
        })
    }

    fn calendar_summary(
        &self,
        language: Option<&str>,
        gpus: u32,
        model: &str,
        node: &str,
    ) -> String {
        let locale = Self::locale(language);
        in_locale(locale, |i18n| {
            let (model, node) = (model.to_owned(), node.to_owned());
            t_string!(i18n, ical_summary, gpus, model, node).to_string()
        })
    }
}

/// The locale called `code` (`en`, `pt-BR`), if Berth speaks it.
pub fn locale_named(code: &str) -> Option<Locale> {
    use leptos_i18n::Locale as _;
    Locale::get_all()
        .iter()
        .copied()
        .find(|locale| locale.as_str().eq_ignore_ascii_case(code.trim()))
}

/// Runs `f` with the translations of `locale`, outside any request (a message written by the
/// notification worker for a reader who is not looking).
pub fn in_locale<R>(locale: Locale, f: impl FnOnce(I18nContext<Locale>) -> R) -> R {
    crate::text::language::detached(|| {
        crate::text::language::in_request_language(|i18n| {
            i18n.set_locale_untracked(locale);
            f(i18n)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_outlives_a_request_that_ends_while_it_is_put_together() {
        let _ = any_spawner::Executor::init_futures_executor();
        // A request's root owner, left current on this thread as leptos_axum leaves it.
        let request = Owner::new_root(None);
        let text = in_locale(Locale::pt_BR, |i18n| {
            // The request ends (on another worker thread, in the portal) meanwhile.
            request.cleanup();
            t_string!(i18n, email_open).to_string()
        });
        let english = in_locale(Locale::en, |i18n| t_string!(i18n, email_open).to_string());
        assert!(!text.is_empty());
        assert_ne!(text, english);
        // The thread's owner is put back.
        assert!(Owner::current().is_some_and(|owner| owner == request));
    }
}
