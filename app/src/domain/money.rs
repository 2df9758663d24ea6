//! Money as integer minor units of one configured currency (cents for USD). Never floats.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An ISO 4217 currency as Berth displays it: its code, a symbol and the number of minor-unit
/// digits (2 for USD and BRL, 0 for JPY).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Currency {
    code: String,
    symbol: String,
    exponent: u8,
}

/// Why a currency could not be accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CurrencyError {
    /// Not three ASCII letters.
    #[error("currency code `{0}` is not three letters (ISO 4217, e.g. USD)")]
    Malformed(String),
    /// More minor-unit digits than Berth supports.
    #[error("currency `{code}` has {exponent} decimal places; at most 4 are supported")]
    TooManyDecimals {
        /// The code as given.
        code: String,
        /// Its number of decimals.
        exponent: u8,
    },
}

impl Currency {
    /// Builds a currency from its ISO code (upper-cased), display symbol and decimal places.
    pub fn new(code: &str, symbol: &str, exponent: u8) -> Result<Self, CurrencyError> {
        let code = code.trim().to_ascii_uppercase();
        if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(CurrencyError::Malformed(code));
        }
        if exponent > 4 {
            return Err(CurrencyError::TooManyDecimals { code, exponent });
        }
        let symbol = if symbol.trim().is_empty() {
            code.clone()
        } else {
            symbol.trim().to_owned()
        };
        Ok(Self {
            code,
            symbol,
            exponent,
        })
    }

    /// The ISO 4217 code, e.g. `USD`.
    pub fn code(&self) -> &str {
        &self.code
    }

    /// The symbol shown before amounts, e.g. `$`.
    pub fn symbol(&self) -> &str {
        &self.symbol
    }

    /// Number of minor-unit digits.
    pub fn exponent(&self) -> u8 {
        self.exponent
    }
}

/// An amount in minor units of the portal's currency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Money(i64);

impl Money {
    /// Zero.
    pub const ZERO: Money = Money(0);

    /// An amount of `minor` units (cents for USD).
    pub const fn from_minor(minor: i64) -> Self {
        Self(minor)
    }

    /// The amount in minor units.
    pub const fn minor(self) -> i64 {
        self.0
    }

    /// Sum of two amounts, `None` on overflow.
    pub fn checked_add(self, other: Money) -> Option<Money> {
        self.0.checked_add(other.0).map(Money)
    }

    /// The amount as a plain decimal string in major units with exactly the currency's decimal
    /// places, e.g. `1234.50` (for CSV files and APIs; the UI formats per locale).
    pub fn to_decimal_string(self, currency: &Currency) -> String {
        DecimalAmount::new(self, currency).to_string()
    }

    /// Reads a positive amount typed in major units: digits, then optionally `.` or `,` and at
    /// most the currency's decimal places (`100`, `100.5`, `1234,56`). Thousands separators,
    /// signs and other text are refused, so nothing is guessed.
    pub fn parse_decimal(raw: &str, currency: &Currency) -> Option<Money> {
        let raw = raw.trim();
        let (whole, fraction) = match raw.find(['.', ',']) {
            Some(at) => (&raw[..at], &raw[at + 1..]),
            None => (raw, ""),
        };
        let exponent = usize::from(currency.exponent());
        if whole.is_empty()
            || !whole.bytes().all(|b| b.is_ascii_digit())
            || !fraction.bytes().all(|b| b.is_ascii_digit())
            || fraction.len() > exponent
            || (raw.len() > whole.len() && fraction.is_empty())
        {
            return None;
        }
        let scale = 10_i64.checked_pow(u32::from(currency.exponent()))?;
        let padded = format!("{fraction:0<exponent$}");
        let fraction: i64 = if padded.is_empty() {
            0
        } else {
            padded.parse().ok()?
        };
        whole
            .parse::<i64>()
            .ok()?
            .checked_mul(scale)?
            .checked_add(fraction)
            .map(Money)
    }
}

/// An amount split into sign, whole part and fraction digits for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecimalAmount {
    negative: bool,
    whole: u64,
    fraction: u64,
    exponent: u8,
}

impl DecimalAmount {
    /// Splits `money` according to `currency`'s decimal places.
    pub fn new(money: Money, currency: &Currency) -> Self {
        let scale = 10_u64.pow(u32::from(currency.exponent()));
        let abs = money.minor().unsigned_abs();
        Self {
            negative: money.minor() < 0,
            whole: abs / scale,
            fraction: abs % scale,
            exponent: currency.exponent(),
        }
    }

    /// Below zero.
    pub fn is_negative(self) -> bool {
        self.negative
    }

    /// The whole units, without sign.
    pub fn whole(self) -> u64 {
        self.whole
    }

    /// The fraction in minor units, without sign.
    pub fn fraction(self) -> u64 {
        self.fraction
    }

    /// Decimal places.
    pub fn exponent(self) -> u8 {
        self.exponent
    }
}

impl fmt::Display for DecimalAmount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negative {
            f.write_str("-")?;
        }
        write!(f, "{}", self.whole)?;
        if self.exponent > 0 {
            write!(
                f,
                ".{:0width$}",
                self.fraction,
                width = usize::from(self.exponent)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn typed_amounts_are_read_exactly() {
        let usd = super::Currency::new("USD", "$", 2).unwrap();
        let yen = super::Currency::new("JPY", "¥", 0).unwrap();
        let read = |raw: &str, c: &super::Currency| {
            super::Money::parse_decimal(raw, c).map(super::Money::minor)
        };
        assert_eq!(read("100", &usd), Some(10_000));
        assert_eq!(read(" 100.5 ", &usd), Some(10_050));
        assert_eq!(read("1234,56", &usd), Some(123_456));
        assert_eq!(read("0.01", &usd), Some(1));
        assert_eq!(read("1500", &yen), Some(1500));
        for bad in [
            "",
            "1.234",
            "1,000.00",
            "-5",
            "+5",
            "1e3",
            "abc",
            "5.",
            ".5",
            "99999999999999999999",
        ] {
            assert_eq!(read(bad, &usd), None, "{bad}");
        }
        assert_eq!(read("1.5", &yen), None);
    }

    use super::*;
    use proptest::prelude::*;

    fn usd() -> Currency {
        Currency::new("usd", "$", 2).unwrap()
    }

    #[test]
    fn currency_codes_are_upper_cased_and_validated() {
        assert_eq!(usd().code(), "USD");
        assert!(matches!(
            Currency::new("US", "$", 2),
            Err(CurrencyError::Malformed(_))
        ));
        assert!(matches!(
            Currency::new("U$D", "$", 2),
            Err(CurrencyError::Malformed(_))
        ));
        assert!(Currency::new("XYZ", "", 9).is_err());
    }

    #[test]
    fn a_blank_symbol_falls_back_to_the_code() {
        assert_eq!(Currency::new("CHF", " ", 2).unwrap().symbol(), "CHF");
    }

    #[test]
    fn decimal_strings_keep_every_minor_digit() {
        assert_eq!(Money::from_minor(250).to_decimal_string(&usd()), "2.50");
        assert_eq!(Money::from_minor(5).to_decimal_string(&usd()), "0.05");
        assert_eq!(
            Money::from_minor(-123_456).to_decimal_string(&usd()),
            "-1234.56"
        );
        let yen = Currency::new("JPY", "¥", 0).unwrap();
        assert_eq!(Money::from_minor(1200).to_decimal_string(&yen), "1200");
    }

    #[test]
    fn amounts_split_into_sign_whole_and_fraction() {
        let amount = DecimalAmount::new(Money::from_minor(-123_456), &usd());
        assert!(amount.is_negative());
        assert_eq!(
            (amount.whole(), amount.fraction(), amount.exponent()),
            (1234, 56, 2)
        );
    }

    proptest! {
        #[test]
        fn decimal_string_round_trips_to_the_same_minor_units(minor in any::<i64>()) {
            let text = Money::from_minor(minor).to_decimal_string(&usd());
            let digits: String = text.chars().filter(|c| *c != '.').collect();
            prop_assert_eq!(digits.parse::<i128>().unwrap(), i128::from(minor));
            prop_assert_eq!(text.split('.').nth(1).map(str::len), Some(2));
        }

        #[test]
        fn checked_add_never_wraps(a in any::<i64>(), b in any::<i64>()) {
            let sum = Money::from_minor(a).checked_add(Money::from_minor(b));
            prop_assert_eq!(sum.map(Money::minor), a.checked_add(b));
        }
    }
}
