//! Locale-aware display of money, memory and dates, through the translation files so that each
//! language formats numbers its own way ("$1,234.50" / "US$ 1.234,50").

use crate::domain::gpu::GpuMemory;
use crate::domain::money::{Currency, DecimalAmount, Money};
use crate::i18n::*;
use chrono::{DateTime, Datelike, Utc};
use leptos::prelude::*;
use leptos_i18n::reexports::fixed_decimal::Decimal;
use leptos_i18n::reexports::icu::datetime::input::Date;

/// An amount with its currency symbol, digits grouped for the current language.
#[component]
pub fn MoneyText(amount: Money, currency: Currency) -> impl IntoView {
    let i18n = use_i18n();
    let (minor, exponent) = DecimalAmount::new(amount, &currency).scaled();
    let symbol = currency.symbol().to_owned();
    let amount = move || {
        let mut decimal = Decimal::from(minor);
        decimal.multiply_pow10(exponent);
        decimal
    };
    t!(i18n, money, symbol = move || symbol.clone(), amount)
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
    t!(i18n, memory_gb, gb = move || gb)
}

/// The calendar date of a UTC instant, as an ICU date for the formatters.
pub fn icu_date(at: DateTime<Utc>) -> Date<leptos_i18n::reexports::icu::calendar::Iso> {
    let day = at.date_naive();
    let month = u8::try_from(day.month()).unwrap_or(1);
    let day_of_month = u8::try_from(day.day()).unwrap_or(1);
    Date::try_new_iso(day.year(), month, day_of_month)
        .unwrap_or_else(|_| Date::try_new_iso(1970, 1, 1).expect("1970-01-01 is a valid date"))
}
