//! The cost report pages' data: a usage report for the viewer (their own bookings, a team's for
//! its admins, everyone's for platform admins) and the fleet view (platform admins).

use crate::domain::calendar::ZoneOffsets;
use crate::domain::report::{FleetReport, ReportQuery, Scope, UsageReport};
use crate::error::AppError;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// What the report page shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportPage {
    /// The report.
    pub report: UsageReport,
    /// The scopes the viewer may choose, with team names.
    pub scopes: Vec<(Scope, Option<String>)>,
    /// Whether the viewer may open the fleet view.
    pub fleet: bool,
}

/// The report for `query` (see `GET /api/v1/reports/usage` for the parameters).
#[server(endpoint = "get_report_page")]
pub async fn get_report_page(query: ReportQuery) -> Result<ReportPage, AppError> {
    use crate::api::reservations::request_zone;
    use crate::domain::user::PlatformRole;
    use crate::server::{auth::actor::require_actor, reports, state};
    state::with_status(
        async {
            let actor = require_actor().await?;
            let state = state::app_state()?;
            let request = reports::parse_query(&query)?;
            let zone_name = request_zone(&actor);
            let report = reports::usage_report(
                &state,
                &actor,
                zone_name.as_deref(),
                request,
                chrono::Utc::now(),
            )
            .await?;
            Ok(ReportPage {
                scopes: reports::scopes_for(&state, &actor).await?,
                fleet: actor.user.role == PlatformRole::PlatformAdmin,
                report,
            })
        }
        .await,
    )
}

/// What the fleet report page shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetPage {
    /// The report.
    pub report: FleetReport,
    /// The viewer's time zone over the period.
    pub zone: ZoneOffsets,
    /// The portal's currency.
    pub currency: crate::domain::money::Currency,
}

/// The fleet view for the period of `query` (platform admins).
#[server(endpoint = "get_fleet_report")]
pub async fn get_fleet_report(query: ReportQuery) -> Result<FleetPage, AppError> {
    use crate::api::reservations::request_zone;
    use crate::server::{auth::actor::require_actor, booking, reports, state};
    state::with_status(
        async {
            let actor = require_actor().await?;
            actor.require_platform_admin()?;
            let state = state::app_state()?;
            let request = reports::parse_query(&query)?;
            let zone_name = request_zone(&actor);
            let report = reports::fleet_report(
                &state,
                &actor,
                zone_name.as_deref(),
                request.period,
                chrono::Utc::now(),
            )
            .await?;
            Ok(FleetPage {
                zone: booking::zone_named(
                    zone_name.as_deref(),
                    report.period.from,
                    report.period.to,
                ),
                currency: state.portal.currency.clone(),
                report,
            })
        }
        .await,
    )
}
