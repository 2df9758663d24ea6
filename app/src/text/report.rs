//! Report texts the server writes itself (CSV downloads have no page around them).

use crate::backend::state::AppState;
use crate::i18n::*;
use crate::text::language::{for_request, in_request_language};

/// What personal bookings are called in a report by team, in the language of a request with
/// `headers`.
pub fn personal_label(headers: &http::HeaderMap, state: &AppState) -> String {
    for_request(headers, state, || {
        in_request_language(|i18n| t_string!(i18n, report_personal).to_string())
    })
}
