//! The watches page's read and its forms: make a watch, stop one, book the window held for one.

use crate::domain::watch::Watch;
use crate::domain::zone::ZoneOffsets;
use crate::error::AppError;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// What the watches page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchesPage {
    /// The caller's watches, newest first.
    pub watches: Vec<Watch>,
    /// The fleet's GPU models.
    pub models: Vec<String>,
    /// The caller's teams (a watch may book for one).
    pub teams: Vec<(i64, String)>,
    /// The caller's zone over the times shown.
    pub zone: ZoneOffsets,
    /// Now (holds count down from it).
    pub now: chrono::DateTime<chrono::Utc>,
    /// The portal's currency.
    pub currency: crate::domain::money::Currency,
}

/// The signed-in user's watches.
#[server(endpoint = "get_watches_page")]
pub async fn get_watches_page() -> Result<WatchesPage, AppError> {
    use crate::api::context::signed_in;
    use crate::backend::watches;
    signed_in(|call| async move {
        let watches = watches::mine(&call.state, &call.actor).await?;
        let (models, teams) = watches::choices(&call.state, &call.actor).await?;
        let from = watches.iter().map(|w| w.from).min().unwrap_or(call.now);
        let to = watches
            .iter()
            .map(|w| w.to)
            .max()
            .unwrap_or(call.now)
            .max(call.now + chrono::TimeDelta::weeks(9));
        Ok(WatchesPage {
            zone: call.zone_over(from.min(call.now), to),
            now: call.now,
            currency: call.state.portal.currency.clone(),
            watches,
            models,
            teams,
        })
    })
    .await
}

/// What a watches page form did, as `done=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchDone {
    /// A watch was made.
    Watching,
    /// A watch was stopped.
    Stopped,
    /// A held window was booked.
    Booked,
}

impl crate::api::forms::Outcome for WatchDone {}

#[cfg(feature = "ssr")]
async fn watch_form<Fut>(
    done: WatchDone,
    command: impl FnOnce(crate::api::context::Call) -> Fut,
) -> Result<(), AppError>
where
    Fut: Future<Output = Result<(), AppError>>,
{
    use crate::api::forms::{Outcome, back_to};
    let call = crate::api::context::signed_in(|call| async move { Ok(call) }).await?;
    let result = command(call).await;
    back_to("/watches", result.map(|()| ("done", done.query_word())))
}

/// Makes a watch (the form's times are local to the caller's zone).
#[server(endpoint = "forms/watch")]
pub async fn create_watch(
    model: String,
    count: String,
    share: String,
    hours: String,
    from: String,
    to: String,
    #[server(default)] team: String,
) -> Result<(), AppError> {
    use crate::backend::input::whole_number;
    use crate::backend::reservations::{ShareInput, local_to_rfc3339};
    use crate::backend::watches::{WatchForm, create};
    watch_form(WatchDone::Watching, |call| async move {
        let zone = call.zone();
        let count = whole_number("count", Some(&count))?
            .map(|n| {
                u32::try_from(n).map_err(|_| {
                    AppError::invalid(
                        "count",
                        crate::domain::problem::Problem::CountRange {
                            max: crate::domain::watch::MAX_WATCH_GPUS as usize,
                        },
                    )
                })
            })
            .transpose()?;
        let hours = hours.trim().replace(',', ".").parse::<f64>().map_err(|_| {
            AppError::invalid(
                "hours",
                crate::domain::problem::Problem::BadLength {
                    days: call.state.portal.booking.max_length.num_days(),
                },
            )
        })?;
        let form = WatchForm {
            model,
            count,
            share: Some(ShareInput::Text(share)),
            hours,
            from: local_to_rfc3339(zone.as_deref(), "from", &from)?,
            to: local_to_rfc3339(zone.as_deref(), "to", &to)?,
            team_id: whole_number("team", Some(&team))?,
        };
        create(&call.state, &call.actor, &form).await.map(drop)
    })
    .await
}

/// Stops watch `id`.
#[server(endpoint = "forms/watch_stop")]
pub async fn stop_watch(id: i64) -> Result<(), AppError> {
    watch_form(WatchDone::Stopped, |call| async move {
        crate::backend::watches::cancel(&call.state, &call.actor, id)
            .await
            .map(drop)
    })
    .await
}

/// Books the window held for watch `id` (the one click its notice leads to).
#[server(endpoint = "forms/watch_book")]
pub async fn book_watch(id: i64) -> Result<(), AppError> {
    watch_form(WatchDone::Booked, |call| async move {
        crate::backend::watches::book(&call.state, &call.actor, id)
            .await
            .map(drop)
    })
    .await
}
