//! Locale-aware display of money, memory, hours and dates. The symbols come from the translation
//! files (`decimal_separator`, `group_separator`, `month_N`, `date_medium`), the digit placing from
//! `domain::numbers`; each follows an in-place language switch.

use crate::domain::gpu::GpuMemory;
use crate::domain::money::{Currency, DecimalAmount, Money};
use crate::domain::numbers::{NumberStyle, format_amount, format_hours, group_digits};
use crate::i18n::*;
use chrono::{DateTime, Datelike, Utc};
use leptos::prelude::*;
use leptos_i18n::I18nContext;

/// Runs `f` with the current language's number style.
pub fn with_number_style<R>(i18n: I18nContext<Locale>, f: impl FnOnce(NumberStyle<'_>) -> R) -> R {
    let decimal = t_string!(i18n, decimal_separator).to_string();
    let group = t_string!(i18n, group_separator).to_string();
    f(NumberStyle {
        decimal: &decimal,
        group: &group,
    })
}

/// An amount with its currency symbol, digits grouped for the current language.
#[component]
pub fn MoneyText(amount: Money, currency: Currency) -> impl IntoView {
    let i18n = use_i18n();
    move || money_string(i18n, amount, &currency)
}

/// `amount` with its currency symbol, digits grouped for the current language, as text.
pub fn money_string(i18n: I18nContext<Locale>, amount: Money, currency: &Currency) -> String {
    let decimal = DecimalAmount::new(amount, currency);
    let symbol = currency.symbol().to_owned();
    let amount = with_number_style(i18n, |style| format_amount(decimal, style));
    t_string!(i18n, money, symbol, amount).to_string()
}

/// A price per hour.
#[component]
pub fn HourlyPrice(amount: Money, currency: Currency) -> impl IntoView {
    let i18n = use_i18n();
    t!(
        i18n,
        per_hour,
        price = move || view! { <MoneyText amount currency=currency.clone() /> }
    )
}

/// GPU memory as the vendor labels it ("80 GB").
#[component]
pub fn MemoryText(memory: GpuMemory) -> impl IntoView {
    let i18n = use_i18n();
    let gb = memory.marketing_gb();
    move || {
        let gb = with_number_style(i18n, |style| group_digits(gb, style));
        t_string!(i18n, memory_gb, gb = gb).to_string()
    }
}

/// A length of time in hours ("1.5 h").
pub fn hours_text(i18n: I18nContext<Locale>, minutes: i64) -> String {
    let hours = with_number_style(i18n, |style| format_hours(minutes, style));
    t_string!(i18n, panel_hours, hours = hours).to_string()
}

/// The calendar date of a UTC instant in the current language ("Nov 30, 2026",
/// "30 de nov. de 2026").
pub fn date_text(i18n: I18nContext<Locale>, at: DateTime<Utc>) -> String {
    let day = at.date_naive();
    let month = match day.month() {
        1 => t_string!(i18n, month_1),
        2 => t_string!(i18n, month_2),
        3 => t_string!(i18n, month_3),
        4 => t_string!(i18n, month_4),
        5 => t_string!(i18n, month_5),
        6 => t_string!(i18n, month_6),
        7 => t_string!(i18n, month_7),
        8 => t_string!(i18n, month_8),
        9 => t_string!(i18n, month_9),
        10 => t_string!(i18n, month_10),
        11 => t_string!(i18n, month_11),
        _ => t_string!(i18n, month_12),
    }
    .to_string();
    t_string!(
        i18n,
        date_medium,
        month = month,
        day = day.day(),
        year = day.year()
    )
    .to_string()
}

/// Whether `count` takes the singular form in the reader's language (negative counts do not).
pub fn plural_one<N: TryInto<u64>>(i18n: I18nContext<Locale>, count: N) -> bool {
    count.try_into().is_ok_and(|n| {
        crate::domain::numbers::plural_is_one(i18n.get_locale_untracked() == Locale::pt_BR, n)
    })
}

/// `count` with its digits grouped for the reader's language ("10,000", "10.000").
pub fn count_text<N: TryInto<u64> + std::fmt::Display + Copy>(
    i18n: I18nContext<Locale>,
    count: N,
) -> String {
    match count.try_into() {
        Ok(whole) => with_number_style(i18n, |style| group_digits(whole, style)),
        Err(_) => count.to_string(),
    }
}

/// A counted text: the `$singular` key when `$count` takes the singular form in the reader's
/// language (see [`plural_one`]), else `$plural`; both interpolate `count`, its digits grouped.
macro_rules! t_count {
    ($i18n:expr, $count:expr, $singular:ident, $plural:ident) => {{
        let count = $count;
        let shown = $crate::text::format::count_text($i18n, count);
        if $crate::text::format::plural_one($i18n, count) {
            t_string!($i18n, $singular, count = shown).to_string()
        } else {
            t_string!($i18n, $plural, count = shown).to_string()
        }
    }};
}
pub(crate) use t_count;
