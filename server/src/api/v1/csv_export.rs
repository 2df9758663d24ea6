//! What every CSV file Berth writes has in common: RFC 4180 line ends, and text cells that a
//! spreadsheet would run as a formula (OWASP's "CSV injection") prefixed with `'`.
//!
//! Only text that people or agents write goes through [`text`] (names, reasons, models, node
//! names); numbers, amounts and dates Berth formats itself are written as they are, so a
//! negative amount such as `-25.50` stays a number.

use std::borrow::Cow;

/// First characters that make a spreadsheet read a cell as a formula.
const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// A text cell made safe to open in a spreadsheet: one that starts with `=`, `+`, `-`, `@`, a
/// tab or a carriage return gets a `'` in front; any other is unchanged.
pub fn text(value: &str) -> Cow<'_, str> {
    if value.starts_with(FORMULA_STARTS) {
        Cow::Owned(format!("'{value}"))
    } else {
        Cow::Borrowed(value)
    }
}

/// A writer into memory with CRLF line ends.
pub fn writer() -> csv::Writer<Vec<u8>> {
    csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::new())
}

/// The text written so far.
pub fn finish(writer: csv::Writer<Vec<u8>>) -> Result<String, csv::Error> {
    let bytes = writer.into_inner().map_err(|err| err.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_a_spreadsheet_would_run_get_a_quote_in_front() {
        for formula in [
            "=HYPERLINK(\"http://x\")",
            "+1",
            "-2+3",
            "@SUM(A1)",
            "\tx",
            "\rx",
        ] {
            assert_eq!(text(formula), format!("'{formula}"));
        }
    }

    #[test]
    fn other_cells_are_left_alone() {
        for plain in ["Ana", "", " =1", "São Paulo", "a=b", "'quoted"] {
            assert!(matches!(text(plain), Cow::Borrowed(_)), "{plain}");
            assert_eq!(text(plain), plain);
        }
    }
}
