//! What the plain forms come back with. The server-rendered pages (teams, fleet, credits, the
//! calendar without JavaScript) post their forms to server functions, one per command; each
//! answers `303 See Other` back to its page with what was done (`done=`, a typed outcome below)
//! or the refusal (`error=`, the error as JSON, already in the reader's language). A request
//! without the right to act gets its status instead (401, 403; 404 for a team the caller does not
//! belong to), like every server function.

use serde::{Deserialize, Serialize};

/// What a team page form did, carried back to the page as `done=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TeamDone {
    Invited,
    Revoked,
    Role,
    Removed,
    Created,
    Budget,
    Credits,
    Quota,
    Rules,
    Approved,
    Rejected,
}

/// What a fleet page form did, carried back to the page as `done=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FleetDone {
    Price,
    Gpu,
    Retired,
    NodePolicy,
    IdlePolicy,
    IdlePolicyCleared,
}

/// An outcome's word in a page address, and back.
pub trait Outcome: Sized + Copy + Serialize + for<'de> Deserialize<'de> {
    /// The word in the address (`invited`).
    fn query_word(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    /// The outcome a page address names; `None` for a word no form sends.
    fn from_query(word: &str) -> Option<Self> {
        serde_json::from_value(serde_json::Value::String(word.to_owned())).ok()
    }
}

impl Outcome for TeamDone {}
impl Outcome for FleetDone {}

/// Sends the form back to `page`: with `name=value` when it worked, else with `error=`, the
/// error explained in the reader's language. Refusals for who is asking (401, 403) are not sent
/// back: the caller sees that status, and nothing was changed.
#[cfg(feature = "ssr")]
pub(crate) fn back_to(
    page: &str,
    outcome: Result<(&str, String), crate::error::AppError>,
) -> Result<(), crate::error::AppError> {
    use crate::error::AppError;
    match outcome {
        Ok((name, value)) => {
            let separator = if page.contains('?') { '&' } else { '?' };
            go_to(&format!("{page}{separator}{name}={}", encoded(&value)));
            Ok(())
        }
        Err(error @ (AppError::Unauthorized | AppError::Forbidden)) => {
            crate::api::context::answer(Err(error))
        }
        Err(error) => {
            back_with_error(page, error);
            Ok(())
        }
    }
}

/// Sends the form back to `page` with `error=`, explained in the reader's language.
#[cfg(feature = "ssr")]
pub(crate) fn back_with_error(page: &str, error: crate::error::AppError) {
    let error = crate::text::language::explained(error);
    let data = serde_json::to_string(&error).unwrap_or_else(|_| error.to_string());
    let separator = if page.contains('?') { '&' } else { '?' };
    go_to(&format!("{page}{separator}error={}", encoded(&data)));
}

#[cfg(feature = "ssr")]
fn encoded(raw: &str) -> String {
    form_urlencoded::byte_serialize(raw.as_bytes()).collect()
}

/// Answers the form with `303 See Other` to `target`.
#[cfg(feature = "ssr")]
pub(crate) fn go_to(target: &str) {
    leptos_axum::redirect(target);
    if let Some(response) = leptos::prelude::use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(http::StatusCode::SEE_OTHER);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_read_back_from_their_word() {
        for done in [
            TeamDone::Invited,
            TeamDone::Revoked,
            TeamDone::Role,
            TeamDone::Removed,
            TeamDone::Created,
            TeamDone::Budget,
            TeamDone::Credits,
            TeamDone::Quota,
            TeamDone::Rules,
            TeamDone::Approved,
            TeamDone::Rejected,
        ] {
            assert_eq!(TeamDone::from_query(&done.query_word()), Some(done));
        }
        assert_eq!(TeamDone::Invited.query_word(), "invited");
        assert_eq!(FleetDone::Retired.query_word(), "retired");
        assert_eq!(FleetDone::from_query("gpu"), Some(FleetDone::Gpu));
        assert_eq!(TeamDone::from_query("<script>"), None);
    }
}
