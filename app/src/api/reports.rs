//! The cost report pages' data: a usage report for the viewer (their own bookings, a team's for
//! its admins, everyone's for platform admins) and the fleet view (platform admins).

use crate::domain::report::{FleetReport, ReportQuery, Scope, UsageReport};
use crate::domain::zone::ZoneOffsets;
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
    use crate::api::context::signed_in;
    use crate::backend::reports;
    use crate::domain::user::PlatformRole;
    signed_in(|call| async move {
        let request = reports::parse_query(&query)?;
        let zone = call.zone();
        let report =
            reports::usage_report(&call.state, &call.actor, zone.as_deref(), request, call.now)
                .await?;
        Ok(ReportPage {
            scopes: reports::scopes_for(&call.state, &call.actor).await?,
            fleet: call.actor.user.role == PlatformRole::PlatformAdmin,
            report,
        })
    })
    .await
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
    use crate::api::context::platform_admin;
    use crate::backend::reports;
    platform_admin(|call| async move {
        let request = reports::parse_query(&query)?;
        let zone = call.zone();
        let report = reports::fleet_report(
            &call.state,
            &call.actor,
            zone.as_deref(),
            request.period,
            call.now,
        )
        .await?;
        Ok(FleetPage {
            zone: call.zone_over(report.period.from, report.period.to),
            currency: call.state.portal.currency.clone(),
            report,
        })
    })
    .await
}
