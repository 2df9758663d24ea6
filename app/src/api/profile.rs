//! The signed-in user's settings: personal API tokens and time zone.

use crate::domain::user::{ApiTokenInfo, CreatedApiToken, TimeZoneChoice};
use crate::error::AppError;
use leptos::prelude::*;

/// The caller's live API tokens, newest first.
#[server(endpoint = "list_api_tokens")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn list_api_tokens() -> Result<Vec<ApiTokenInfo>, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        crate::backend::profile::tokens(&call.state, &call.actor, call.now).await
    })
    .await
}

/// Creates a token for the caller; the secret is in the answer and nowhere else. `scope` is
/// `write` (default) or `read`; `expires_days` is empty (never) or 1 to 3650. Only a signed-in
/// session may create tokens, never a token.
#[server(endpoint = "create_api_token")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn create_api_token(
    name: String,
    scope: Option<String>,
    expires_days: Option<String>,
) -> Result<CreatedApiToken, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        crate::backend::profile::create_token(
            &call.state,
            &call.actor,
            &name,
            scope.as_deref().unwrap_or(""),
            expires_days.as_deref().unwrap_or(""),
            call.now,
        )
        .await
    })
    .await
}

/// Revokes one of the caller's tokens; a token of someone else is "not found".
#[server(endpoint = "revoke_api_token")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all, fields(api_token.id = id)))]
pub async fn revoke_api_token(id: i64) -> Result<(), AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        crate::backend::profile::revoke_token(&call.state, &call.actor, id, call.now).await
    })
    .await
}

/// The caller's time-zone setting and the zones to choose from.
#[server(endpoint = "get_time_zone")]
pub async fn get_time_zone() -> Result<TimeZoneChoice, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move { Ok(crate::backend::profile::time_zone_choice(&call.actor)) })
        .await
}

/// Sets the zone the caller sees times in: an IANA name, or empty for the browser's.
#[server(endpoint = "set_time_zone")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn set_time_zone(time_zone: String) -> Result<Option<String>, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        crate::backend::profile::set_time_zone(&call.state, &call.actor, &time_zone, call.now).await
    })
    .await
}

/// The profile page's calendar section: the caller's feeds and the teams they may make one for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CalendarFeedsPage {
    /// Feeds made, own first.
    pub feeds: Vec<crate::domain::notify::CalendarFeedInfo>,
    /// Teams the caller manages, by id and name.
    pub teams: Vec<(i64, String)>,
}

/// The caller's calendar feeds.
#[server(endpoint = "get_calendar_feeds")]
pub async fn get_calendar_feeds() -> Result<CalendarFeedsPage, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        let feeds = crate::backend::calendar_feeds::feeds(&call.state, &call.actor).await?;
        let teams = crate::backend::calendar_feeds::managed_teams(&call.state, &call.actor).await?;
        Ok(CalendarFeedsPage { feeds, teams })
    })
    .await
}

/// Makes (or replaces) a calendar feed of the caller's bookings (`team` empty) or of a team they
/// manage; answers the whole address, shown this once.
#[server(endpoint = "create_calendar_feed")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn create_calendar_feed(#[server(default)] team: String) -> Result<String, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        let team = crate::backend::input::whole_number("team", Some(&team))?;
        let path = crate::backend::calendar_feeds::create(&call.state, &call.actor, team, call.now)
            .await?;
        let base = match call.state.portal.public_url.clone() {
            Some(base) => base,
            None => {
                let host = leptos::prelude::use_context::<http::request::Parts>()
                    .and_then(|parts| {
                        parts
                            .headers
                            .get(http::header::HOST)
                            .and_then(|host| host.to_str().ok().map(str::to_owned))
                    })
                    .unwrap_or_else(|| "localhost".to_owned());
                format!("http://{host}")
            }
        };
        Ok(format!("{base}{path}"))
    })
    .await
}

/// Revokes the caller's calendar feed of their bookings (`team` empty) or of a team.
#[server(endpoint = "revoke_calendar_feed")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn revoke_calendar_feed(#[server(default)] team: String) -> Result<(), AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        let team = crate::backend::input::whole_number("team", Some(&team))?;
        crate::backend::calendar_feeds::revoke(&call.state, &call.actor, team).await
    })
    .await
}

/// The profile page's webhooks section: the caller's webhooks and the teams they may add one for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WebhooksPage {
    /// Their webhooks.
    pub hooks: Vec<crate::domain::notify::WebhookInfo>,
    /// Teams the caller manages, by id and name.
    pub teams: Vec<(i64, String)>,
}

/// The caller's webhooks and those of the teams they are an admin of.
#[server(endpoint = "get_webhooks")]
pub async fn get_webhooks() -> Result<WebhooksPage, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        let hooks = crate::backend::webhooks::list(&call.state, &call.actor).await?;
        let teams = crate::backend::calendar_feeds::managed_teams(&call.state, &call.actor).await?;
        Ok(WebhooksPage { hooks, teams })
    })
    .await
}

/// Adds a webhook at `url` for the caller's notices (`team` empty) or a managed team's; answers
/// its signing secret, shown this once.
#[server(endpoint = "create_webhook")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn create_webhook(
    url: String,
    #[server(default)] team: String,
) -> Result<crate::domain::notify::CreatedWebhook, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        let team = crate::backend::input::whole_number("team", Some(&team))?;
        crate::backend::webhooks::create(&call.state, &call.actor, &url, team, call.now).await
    })
    .await
}

/// Removes one of the caller's webhooks, or one of a team's they manage; another's is "not
/// found".
#[server(endpoint = "delete_webhook")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all, fields(webhook.id = id)))]
pub async fn delete_webhook(id: i64) -> Result<(), AppError> {
    use crate::api::context::signed_in;
    signed_in(
        |call| async move { crate::backend::webhooks::delete(&call.state, &call.actor, id).await },
    )
    .await
}
