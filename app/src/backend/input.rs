//! Reading the fields people type into the plain forms: one reader per kind of field, so every
//! form that asks for a number or an amount refuses the same input with the same problem.

use crate::domain::money::{Currency, Money};
use crate::domain::problem::Problem;
use crate::error::AppError;

/// A whole number typed in `field`; `None` when left empty.
pub fn whole_number(field: &str, raw: Option<&str>) -> Result<Option<i64>, AppError> {
    match raw.map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => text.parse::<i64>().map(Some).map_err(|_| {
            AppError::invalid(
                field,
                Problem::Unreadable {
                    detail: format!("`{text}` is not a whole number"),
                },
            )
        }),
    }
}

/// A whole number the form must send in `field`.
pub fn required_number(field: &str, raw: &str) -> Result<i64, AppError> {
    whole_number(field, Some(required(field, Some(raw))?)).map(Option::unwrap_or_default)
}

/// An amount of money typed in `field` in the currency's major units (`12.50` or `12,50`), in
/// minor units; refused unless `accept` holds for it.
pub fn amount(
    field: &str,
    raw: &str,
    currency: &Currency,
    accept: impl Fn(i64) -> bool,
) -> Result<i64, AppError> {
    Money::parse_decimal(raw.trim(), currency)
        .map(|amount| amount.minor())
        .filter(|minor| accept(*minor))
        .ok_or_else(|| {
            AppError::invalid(
                field,
                Problem::NotAnAmount {
                    raw: raw.to_owned(),
                    decimals: currency.exponent(),
                },
            )
        })
}

/// A field the form must send.
pub fn required<'a>(field: &str, raw: Option<&'a str>) -> Result<&'a str, AppError> {
    raw.map(str::trim)
        .filter(|text| !text.is_empty())
        .ok_or_else(|| {
            AppError::invalid(
                field,
                Problem::Unreadable {
                    detail: format!("{field} is missing"),
                },
            )
        })
}

/// The `limit` and `cursor` of a request for a page of list `kind`; a problem names the
/// parameter at fault.
pub fn page(
    kind: crate::domain::paging::ListKind,
    limit: Option<i64>,
    cursor: Option<&str>,
) -> Result<crate::domain::paging::PageRequest, AppError> {
    crate::domain::paging::PageRequest::parse(kind, limit, cursor)
        .map_err(|(field, problem)| AppError::invalid(field, problem))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_whole_or_empty() {
        assert_eq!(whole_number("n", None).unwrap(), None);
        assert_eq!(whole_number("n", Some("  ")).unwrap(), None);
        assert_eq!(whole_number("n", Some(" 42 ")).unwrap(), Some(42));
        let refused = whole_number("n", Some("4.5")).unwrap_err();
        assert!(matches!(refused, AppError::Validation { field, .. } if field == "n"));
        assert_eq!(required_number("gpu_id", " 7 ").unwrap(), 7);
        assert!(required_number("gpu_id", "").is_err());
        assert!(required_number("gpu_id", "seven").is_err());
    }

    #[test]
    fn amounts_are_refused_unless_accepted() {
        let usd = Currency::new("USD", "$", 2).unwrap();
        assert_eq!(amount("amount", "12,50", &usd, |m| m > 0).unwrap(), 1250);
        assert!(amount("amount", "-3", &usd, |m| m > 0).is_err());
        assert!(amount("amount", "12.345", &usd, |_| true).is_err());
        assert!(amount("amount", "abc", &usd, |_| true).is_err());
    }

    #[test]
    fn required_fields_are_not_blank() {
        assert_eq!(required("model", Some(" A100 ")).unwrap(), "A100");
        assert!(required("model", Some(" ")).is_err());
        assert!(required("model", None).is_err());
    }
}
