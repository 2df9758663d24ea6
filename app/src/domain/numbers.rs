//! Numbers and dates written the way a language writes them. The symbols (decimal and group
//! separators, month abbreviations, date pattern) come from the translation files, so a language
//! is added there; this module only places digits. Berth formats a few kinds of values (money,
//! memory, hours, dates), and doing it here keeps ICU's data for every locale of the world out of
//! the browser bundle.

use crate::domain::money::DecimalAmount;

/// How a language writes numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NumberStyle<'a> {
    /// Between the whole part and the fraction: `.` in English, `,` in Portuguese.
    pub decimal: &'a str,
    /// Between groups of three digits: `,` in English, `.` in Portuguese.
    pub group: &'a str,
}

/// `whole` with its digits grouped by three (`1234567` → `1,234,567`).
pub fn group_digits(whole: u64, style: NumberStyle<'_>) -> String {
    let digits = whole.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 * style.group.len());
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push_str(style.group);
        }
        out.push(digit);
    }
    out
}

/// A money amount with all its decimal places (`-1,234.50`).
pub fn format_amount(amount: DecimalAmount, style: NumberStyle<'_>) -> String {
    let mut out = String::new();
    if amount.is_negative() {
        out.push('-');
    }
    out.push_str(&group_digits(amount.whole(), style));
    if amount.exponent() > 0 {
        out.push_str(style.decimal);
        out.push_str(&format!(
            "{:0width$}",
            amount.fraction(),
            width = usize::from(amount.exponent())
        ));
    }
    out
}

/// A count of minutes as hours with at most two decimals and no trailing zeros (`90` → `1.5`).
pub fn format_hours(minutes: i64, style: NumberStyle<'_>) -> String {
    let negative = minutes < 0;
    let minutes = minutes.unsigned_abs();
    // Hundredths of an hour, rounded half up.
    let hundredths = (minutes * 100 + 30) / 60;
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    out.push_str(&group_digits(hundredths / 100, style));
    let fraction = hundredths % 100;
    if fraction != 0 {
        out.push_str(style.decimal);
        let digits = format!("{fraction:02}");
        out.push_str(digits.trim_end_matches('0'));
    }
    out
}

/// A measured value rounded to `decimals` places (`1234.56`, 1 → `1,234.6`); no minus sign for
/// a value that rounds to zero.
pub fn format_decimal(value: f64, decimals: usize, style: NumberStyle<'_>) -> String {
    if !value.is_finite() {
        return "–".to_owned();
    }
    let decimals = decimals.min(6);
    let scale = 10u64.pow(decimals as u32);
    let scaled = (value.abs() * scale as f64).round() as u64;
    let mut out = String::new();
    if value < 0.0 && scaled != 0 {
        out.push('-');
    }
    out.push_str(&group_digits(scaled / scale, style));
    if decimals > 0 {
        out.push_str(style.decimal);
        out.push_str(&format!("{:0width$}", scaled % scale, width = decimals));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::money::{Currency, Money};

    const EN: NumberStyle<'static> = NumberStyle {
        decimal: ".",
        group: ",",
    };
    const PT: NumberStyle<'static> = NumberStyle {
        decimal: ",",
        group: ".",
    };

    #[test]
    fn digits_group_by_three() {
        assert_eq!(group_digits(0, EN), "0");
        assert_eq!(group_digits(999, EN), "999");
        assert_eq!(group_digits(1000, EN), "1,000");
        assert_eq!(group_digits(1_234_567, PT), "1.234.567");
    }

    #[test]
    fn amounts_keep_every_decimal_place() {
        let usd = Currency::new("USD", "$", 2).unwrap();
        let amount = |minor| DecimalAmount::new(Money::from_minor(minor), &usd);
        assert_eq!(format_amount(amount(123_450), EN), "1,234.50");
        assert_eq!(format_amount(amount(123_450), PT), "1.234,50");
        assert_eq!(format_amount(amount(-5), EN), "-0.05");
        let yen = Currency::new("JPY", "¥", 0).unwrap();
        assert_eq!(
            format_amount(DecimalAmount::new(Money::from_minor(1500), &yen), EN),
            "1,500"
        );
    }

    #[test]
    fn hours_drop_trailing_zeros() {
        assert_eq!(format_hours(60, EN), "1");
        assert_eq!(format_hours(90, PT), "1,5");
        assert_eq!(format_hours(15, EN), "0.25");
        assert_eq!(format_hours(20, EN), "0.33");
        assert_eq!(format_hours(60 * 1500, EN), "1,500");
    }

    #[test]
    fn measured_values_round_to_the_asked_places() {
        assert_eq!(format_decimal(1234.56, 1, EN), "1,234.6");
        assert_eq!(format_decimal(1234.56, 1, PT), "1.234,6");
        assert_eq!(format_decimal(79.64, 0, EN), "80");
        assert_eq!(format_decimal(0.25, 2, PT), "0,25");
        assert_eq!(format_decimal(-0.01, 1, EN), "0.0");
        assert_eq!(format_decimal(-3.5, 1, EN), "-3.5");
    }
}

/// Whether `count` takes the singular ("one") form: CLDR's cardinal rule for English (1) and for
/// Portuguese (0 and 1). Written here rather than taken from ICU's plural data, which the
/// browser's WASM would carry for two rules.
pub fn plural_is_one(portuguese: bool, count: u64) -> bool {
    if portuguese { count <= 1 } else { count == 1 }
}

#[cfg(test)]
mod plural_tests {
    use super::plural_is_one;

    #[test]
    fn english_and_portuguese_cardinal_rules() {
        assert!(!plural_is_one(false, 0));
        assert!(plural_is_one(false, 1));
        assert!(!plural_is_one(false, 2));
        assert!(plural_is_one(true, 0));
        assert!(plural_is_one(true, 1));
        assert!(!plural_is_one(true, 2));
        assert!(!plural_is_one(true, 21));
    }
}
