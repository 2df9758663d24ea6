//! Server functions of the incident pages: one incident with its evidence, the list, and the
//! plain forms (open, a workflow step, a reply), each answering `303` back to its page.

use crate::domain::evidence::{EvidenceReport, IncidentView};
use crate::domain::money::Currency;
use crate::domain::zone::ZoneOffsets;
use crate::error::AppError;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// What the incident page shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IncidentPage {
    /// The incident, its messages and its evidence.
    pub report: EvidenceReport,
    /// The reader's zone over the window.
    pub zone: ZoneOffsets,
    /// The reader is a platform admin (moves it).
    pub admin: bool,
    /// The reader is its reporter (may reopen it).
    pub reporter: bool,
    /// The portal's currency.
    pub currency: Currency,
}

/// Incident `id` as the caller may see it.
#[server(endpoint = "get_incident_page")]
pub async fn get_incident_page(id: i64) -> Result<IncidentPage, AppError> {
    use crate::api::context::signed_in;
    use crate::domain::user::PlatformRole;
    signed_in(|call| async move {
        let report = crate::backend::incidents::report(&call.state, &call.actor, id).await?;
        let admin = call.actor.user.role == PlatformRole::PlatformAdmin;
        let reporter = report
            .incident
            .reservation
            .as_ref()
            .is_some_and(|b| b.owner_id == call.actor.user.id)
            || report.incident.opened_by_id == Some(call.actor.user.id);
        let from = report.incident.from - chrono::TimeDelta::hours(2);
        let to = report.incident.to.max(call.now) + chrono::TimeDelta::hours(1);
        Ok(IncidentPage {
            zone: call.zone_over(from, to),
            admin,
            reporter,
            currency: call.state.portal.currency.clone(),
            report,
        })
    })
    .await
}

/// What the incidents list shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IncidentsPage {
    /// A page of them, newest first.
    pub incidents: Vec<IncidentView>,
    /// The cursor of the next (older) page, when there is one.
    pub next: Option<String>,
    /// The reader's zone.
    pub zone: ZoneOffsets,
    /// The portal's currency.
    pub currency: Currency,
}

/// A page of the incidents the caller may see (`cursor`: after an earlier page).
#[server(endpoint = "get_incidents_page")]
pub async fn get_incidents_page(cursor: Option<String>) -> Result<IncidentsPage, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        let page = crate::backend::input::page(
            crate::domain::paging::ListKind::Incidents,
            None,
            cursor.as_deref(),
        )?;
        let crate::domain::paging::Page {
            items: incidents,
            next,
        } = crate::backend::incidents::list(&call.state, &call.actor, None, None, &page).await?;
        let from = incidents
            .iter()
            .map(|i| i.opened_at)
            .min()
            .unwrap_or(call.now)
            .min(call.now);
        Ok(IncidentsPage {
            zone: call.zone_over(from, call.now),
            currency: call.state.portal.currency.clone(),
            incidents,
            next,
        })
    })
    .await
}

/// "Report a problem": opens an incident on the caller's booking (or their booking on a GPU) and
/// goes to its page; a refusal goes back to `back` with `error=`.
#[server(endpoint = "forms/open_incident")]
pub async fn open_incident(
    #[server(default)] reservation_id: Option<i64>,
    #[server(default)] gpu_id: Option<i64>,
    #[server(default)] report: String,
    back: String,
) -> Result<(), AppError> {
    use crate::api::forms::{back_with_error, go_to};
    use crate::backend::incidents::{self, OpenRequest};
    let call = crate::api::context::signed_in(|call| async move { Ok(call) }).await?;
    let request = OpenRequest {
        reservation_id,
        gpu_id,
        report,
        from: None,
        to: None,
    };
    // Only back to one of Berth's own pages.
    let back = crate::domain::return_to::local_path_or_home(Some(&back));
    match incidents::open(&call.state, &call.actor, request).await {
        Ok(id) => go_to(&format!("/incidents/{id}")),
        Err(error @ (AppError::Unauthorized | AppError::Forbidden)) => {
            return crate::api::context::answer(Err(error));
        }
        Err(error) => back_with_error(&back, error),
    }
    Ok(())
}

/// A workflow step on incident `id` (`acknowledge`, `diagnose`, `resolve`, `reject`, `reopen`).
#[server(endpoint = "forms/incident_step")]
pub async fn incident_step(
    id: i64,
    step: String,
    #[server(default)] cause: Option<String>,
    #[server(default)] note: String,
) -> Result<(), AppError> {
    use crate::api::forms::back_to;
    use crate::backend::incidents::{self, StepRequest};
    let call = crate::api::context::signed_in(|call| async move { Ok(call) }).await?;
    let request = StepRequest {
        step: step.clone(),
        cause,
        note,
    };
    let result = incidents::take_step(&call.state, &call.actor, id, request).await;
    back_to(
        &format!("/incidents/{id}"),
        result.map(|view| ("done", view.state.as_str().to_owned())),
    )
}

/// A reply on incident `id`.
#[server(endpoint = "forms/incident_reply")]
pub async fn incident_reply(id: i64, body: String) -> Result<(), AppError> {
    use crate::api::forms::back_to;
    let call = crate::api::context::signed_in(|call| async move { Ok(call) }).await?;
    let result = crate::backend::incidents::reply(&call.state, &call.actor, id, &body).await;
    back_to(
        &format!("/incidents/{id}"),
        result.map(|_| ("done", "reply".to_owned())),
    )
}
