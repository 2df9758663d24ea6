//! Cost reports as a service: reading a report's parameters, who may see which bookings
//! (everyone their own, team admins their team's, platform admins everything and the fleet
//! view), and resolving the period in the viewer's time zone. The report page, the CSV
//! downloads and `GET /api/v1/reports/…` all come through here.

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::state::AppState;
use crate::backend::viewer::zone_named;
use crate::domain::problem::Problem;
use crate::domain::report::{
    FleetReport, GroupBy, Period, PeriodChoice, PeriodError, ReportQuery, Scope, UsageReport,
    fleet_days, group, grouped_days, top_idle, total,
};
use crate::domain::team::TeamRole;
use crate::domain::user::PlatformRole;
use crate::error::AppError;
use chrono::{DateTime, NaiveTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// How many idle bookings the fleet view lists.
pub const TOP_IDLE: usize = 10;

/// A report's parameters, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportRequest {
    /// The period.
    pub period: PeriodChoice,
    /// The grouping.
    pub group_by: GroupBy,
    /// Whose bookings.
    pub scope: Scope,
}

/// Checks every parameter of `raw`; the first bad one is the error, named.
pub fn parse_query(raw: &ReportQuery) -> Result<ReportRequest, AppError> {
    let period = PeriodChoice::parse(
        raw.period.as_deref(),
        raw.from.as_deref(),
        raw.to.as_deref(),
    )
    .map_err(|err| period_error(err, raw))?;
    let group_by = GroupBy::parse(raw.group_by.as_deref()).ok_or_else(|| {
        AppError::invalid(
            "group_by",
            Problem::NotOneOf {
                allowed: "team, user, model, node".into(),
            },
        )
    })?;
    let scope = Scope::parse(raw.scope.as_deref()).ok_or_else(|| {
        AppError::invalid(
            "scope",
            Problem::NotOneOf {
                allowed: "me, team:ID, all".into(),
            },
        )
    })?;
    Ok(ReportRequest {
        period,
        group_by,
        scope,
    })
}

fn period_error(err: PeriodError, raw: &ReportQuery) -> AppError {
    let text = |value: &Option<String>| value.clone().unwrap_or_default();
    match err {
        PeriodError::HalfRange => {
            let missing = if raw.from.as_deref().is_none_or(|f| f.trim().is_empty()) {
                "from"
            } else {
                "to"
            };
            AppError::invalid(missing, Problem::NotADate { raw: String::new() })
        }
        PeriodError::BadDate => {
            let bad_from = raw.from.as_deref().is_some_and(|f| {
                chrono::NaiveDate::parse_from_str(f.trim().get(..10).unwrap_or(f), "%Y-%m-%d")
                    .is_err()
            });
            if bad_from {
                AppError::invalid(
                    "from",
                    Problem::NotADate {
                        raw: text(&raw.from),
                    },
                )
            } else {
                AppError::invalid("to", Problem::NotADate { raw: text(&raw.to) })
            }
        }
        PeriodError::OutOfRange => {
            let far_from = raw.from.as_deref().is_some_and(|f| {
                chrono::NaiveDate::parse_from_str(f.trim().get(..10).unwrap_or(f), "%Y-%m-%d")
                    .is_ok_and(|day| crate::domain::date_range::check_day(day).is_err())
            });
            let field = if far_from { "from" } else { "to" };
            AppError::invalid(field, crate::domain::date_range::OutOfRange.into())
        }
        PeriodError::Backwards => AppError::invalid("to", Problem::ToNotAfterFrom),
        PeriodError::TooLong => AppError::invalid(
            "to",
            Problem::RangeTooLong {
                days: crate::domain::report::MAX_PERIOD_DAYS,
            },
        ),
        PeriodError::UnknownName => AppError::invalid(
            "period",
            Problem::NotOneOf {
                allowed: "this_month, last_month, this_week, last_week".into(),
            },
        ),
    }
}

/// Resolves `choice` in time zone `zone` (an IANA name; none: UTC) at `now`.
pub fn resolve_period(choice: PeriodChoice, zone: Option<&str>, now: DateTime<Utc>) -> Period {
    let around_now = zone_named(zone, now - TimeDelta::days(1), now + TimeDelta::days(1));
    let today = around_now.local(now).date();
    let (first, end) = choice.days(today);
    let midnight = |day: chrono::NaiveDate| day.and_time(NaiveTime::MIN).and_utc();
    let covering = zone_named(
        zone,
        midnight(first).min(now) - TimeDelta::days(1),
        midnight(end).max(now) + TimeDelta::days(1),
    );
    Period::resolve(choice, now, &covering)
}

/// Succeeds when `actor` may see the bookings of `scope`: their own always, a team's when they
/// manage it (its plain members: 403; outsiders: 404), everyone's for platform admins only.
pub async fn authorize(state: &AppState, actor: &Actor, scope: Scope) -> Result<(), AppError> {
    match scope {
        Scope::Mine => Ok(()),
        Scope::Team(team_id) => {
            crate::backend::team_access::require_manage(&state.db, actor, team_id).await
        }
        Scope::All => actor.require_platform_admin(),
    }
}

/// The scopes `actor` may choose, with a team's name: their own, the teams they manage (every
/// team for platform admins) and, for platform admins, everyone.
pub async fn scopes_for(
    state: &AppState,
    actor: &Actor,
) -> Result<Vec<(Scope, Option<String>)>, AppError> {
    let mut scopes = vec![(Scope::Mine, None)];
    if actor.user.role == PlatformRole::PlatformAdmin {
        for team in db::teams::summaries(&state.db, None).await? {
            scopes.push((Scope::Team(team.id), Some(team.name)));
        }
        scopes.push((Scope::All, None));
    } else {
        for team in actor.memberships(&state.db).await? {
            if team.role == TeamRole::Admin {
                scopes.push((Scope::Team(team.team_id), Some(team.team_name)));
            }
        }
    }
    Ok(scopes)
}

/// The usage report `request` for `actor`, in time zone `zone`.
pub async fn usage_report(
    state: &AppState,
    actor: &Actor,
    zone: Option<&str>,
    request: ReportRequest,
    now: DateTime<Utc>,
) -> Result<UsageReport, AppError> {
    authorize(state, actor, request.scope).await?;
    let period = resolve_period(request.period, zone, now);
    let facts = db::reports::booking_facts(
        &state.db,
        period.from,
        period.to,
        request.scope,
        actor.user.id,
    )
    .await?;
    Ok(UsageReport {
        rows: group(&facts, request.group_by),
        totals: total(&facts),
        chart: grouped_days(&facts, request.group_by, &period),
        period,
        scope: request.scope,
        group_by: request.group_by,
        idle_threshold: state.portal.telemetry.idle_util_percent,
        currency: state.portal.currency.clone(),
    })
}

/// The fleet view over `choice` (platform admins).
pub async fn fleet_report(
    state: &AppState,
    actor: &Actor,
    zone: Option<&str>,
    choice: PeriodChoice,
    now: DateTime<Utc>,
) -> Result<FleetReport, AppError> {
    actor.require_platform_admin()?;
    let period = resolve_period(choice, zone, now);
    let gpus = db::reports::gpu_lives(&state.db).await?;
    let held = db::reports::held_in(&state.db, period.from, period.to).await?;
    let reclaimed = db::reports::reclaimed_in(&state.db, period.from, period.to).await?;
    let hours = db::reports::fleet_hours(&state.db, period.from, period.to).await?;
    let idle = db::reports::most_idle(&state.db, period.from, period.to, TOP_IDLE).await?;
    Ok(FleetReport {
        days: fleet_days(&period, &gpus, &held, &reclaimed, &hours, now),
        top_idle: top_idle(&idle, TOP_IDLE),
        period,
        idle_threshold: state.portal.telemetry.idle_util_percent,
    })
}
