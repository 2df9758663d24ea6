//! Dates and times as the interface writes them (`2026-12-03 14:30`, `14:30`, the value of a
//! `datetime-local` input). Plain formatting rather than chrono's `format`: its pattern
//! interpreter is sizeable in the browser's WASM, and these few shapes are all Berth needs.

use chrono::{Datelike, NaiveDateTime, Timelike};

/// `YYYY-MM-DD HH:MM`.
pub fn date_minute(at: NaiveDateTime) -> String {
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        at.year(),
        at.month(),
        at.day(),
        at.hour(),
        at.minute()
    )
}

/// `YYYY-MM-DDTHH:MM`, the value of a `datetime-local` input.
pub fn input_value(at: NaiveDateTime) -> String {
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}",
        at.year(),
        at.month(),
        at.day(),
        at.hour(),
        at.minute()
    )
}

/// `HH:MM`.
pub fn hour_minute(at: NaiveDateTime) -> String {
    format!("{:02}:{:02}", at.hour(), at.minute())
}

/// `HH:MM:SS`.
pub fn hour_minute_second(at: NaiveDateTime) -> String {
    format!("{:02}:{:02}:{:02}", at.hour(), at.minute(), at.second())
}

/// `YYYY-MM-DD HH:MM:SS`.
pub fn date_second(at: NaiveDateTime) -> String {
    format!("{} {}", &date_minute(at)[..10], hour_minute_second(at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(y, mo, d)
            .and_then(|date| date.and_hms_opt(h, mi, s))
            .expect("valid")
    }

    #[test]
    fn shapes_match_chrono_patterns() {
        for t in [
            at(2026, 1, 2, 3, 4, 5),
            at(999, 12, 31, 23, 59, 59),
            at(2026, 11, 30, 0, 0, 0),
        ] {
            assert_eq!(date_minute(t), t.format("%Y-%m-%d %H:%M").to_string());
            assert_eq!(input_value(t), t.format("%Y-%m-%dT%H:%M").to_string());
            assert_eq!(hour_minute(t), t.format("%H:%M").to_string());
            assert_eq!(hour_minute_second(t), t.format("%H:%M:%S").to_string());
            assert_eq!(date_second(t), t.format("%Y-%m-%d %H:%M:%S").to_string());
        }
    }
}
