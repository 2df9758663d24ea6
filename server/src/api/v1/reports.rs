//! Cost reports in the JSON API and as CSV downloads (the report page links here):
//! `GET /api/v1/reports/usage?period=|from=&to=&group_by=&scope=&format=json|csv` and
//! `GET /api/v1/reports/fleet?period=|from=&to=&table=days|idle&format=json|csv`.
//!
//! Amounts are decimal strings in the portal's currency (and integer minor units in JSON), hours
//! decimal GPU-hours, dates ISO 8601. CSV is RFC 4180 (comma, CRLF, quotes doubled), UTF-8; a
//! name a spreadsheet would run as a formula starts with `'` (see `csv_export`).

use crate::api::v1::csv_export;
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::reports;
use berth_app::backend::state::AppState;
use berth_app::backend::viewer::{parse_zone_choice, viewer_zone};
use berth_app::domain::money::{Currency, Money};
use berth_app::domain::problem::Problem;
use berth_app::domain::report::{
    BookingFact, FleetDay, FleetReport, GroupLabel, ReportQuery, ReportRow, Totals, UsageReport,
};
use berth_app::error::AppError;
use serde::{Deserialize, Serialize};

/// The query of both report endpoints.
#[derive(Debug, Default, Deserialize)]
pub struct ReportParams {
    period: Option<String>,
    from: Option<String>,
    to: Option<String>,
    group_by: Option<String>,
    scope: Option<String>,
    /// `json` (default) or `csv`.
    format: Option<String>,
    /// The fleet's CSV: `days` (default) or `idle`.
    table: Option<String>,
    /// An IANA time zone for the period (default: the profile's, else the browser's, else UTC).
    tz: Option<String>,
}

impl ReportParams {
    fn raw(&self) -> ReportQuery {
        ReportQuery {
            period: self.period.clone(),
            from: self.from.clone(),
            to: self.to.clone(),
            group_by: self.group_by.clone(),
            scope: self.scope.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Csv,
}

fn format_of(raw: Option<&str>) -> Result<Format, AppError> {
    match raw.map(str::trim) {
        None | Some("" | "json") => Ok(Format::Json),
        Some("csv") => Ok(Format::Csv),
        Some(_) => Err(AppError::invalid(
            "format",
            Problem::NotOneOf {
                allowed: "json, csv".into(),
            },
        )),
    }
}

fn params(query: Result<Query<ReportParams>, QueryRejection>) -> Result<ReportParams, AppError> {
    query.map(|Query(q)| q).map_err(|rejection| {
        AppError::invalid(
            "query",
            Problem::Unreadable {
                detail: rejection.body_text(),
            },
        )
    })
}

/// The zone the period is read in: `tz` when given (checked), else the viewer's.
fn zone(
    params: &ReportParams,
    actor: &Actor,
    headers: &HeaderMap,
) -> Result<Option<String>, AppError> {
    match params
        .tz
        .as_deref()
        .map(str::trim)
        .filter(|tz| !tz.is_empty())
    {
        Some(tz) => parse_zone_choice(tz)
            .map_err(|_| AppError::invalid("tz", Problem::UnknownZone { raw: tz.to_owned() })),
        None => Ok(viewer_zone(actor, headers)),
    }
}

/// `GET /api/v1/reports/usage`.
pub async fn usage(
    State(state): State<AppState>,
    actor: Actor,
    headers: HeaderMap,
    query: Result<Query<ReportParams>, QueryRejection>,
) -> Result<Response, AppError> {
    let explain = |err| berth_app::text::language::explained_for(err, &headers, &state);
    let params = params(query).map_err(explain)?;
    let format = format_of(params.format.as_deref()).map_err(explain)?;
    let request = reports::parse_query(&params.raw()).map_err(explain)?;
    let zone = zone(&params, &actor, &headers).map_err(explain)?;
    let report = reports::usage_report(&state, &actor, zone.as_deref(), request, state.now())
        .await
        .map_err(explain)?;
    let personal = berth_app::text::report::personal_label(&headers, &state);
    match format {
        Format::Json => Ok(Json(api_usage(&report, &personal)).into_response()),
        Format::Csv => {
            let name = format!(
                "berth-usage-{}-{}-by-{}.csv",
                report.period.first_day,
                report.period.last_day(),
                report.group_by.as_str()
            );
            csv_response(&name, usage_csv(&report, &personal))
        }
    }
}

/// `GET /api/v1/reports/fleet` (platform admins).
pub async fn fleet(
    State(state): State<AppState>,
    actor: Actor,
    headers: HeaderMap,
    query: Result<Query<ReportParams>, QueryRejection>,
) -> Result<Response, AppError> {
    let explain = |err| berth_app::text::language::explained_for(err, &headers, &state);
    let params = params(query).map_err(explain)?;
    let format = format_of(params.format.as_deref()).map_err(explain)?;
    // The same parameters and checks as the usage report's (the fleet view uses the period).
    let choice = reports::parse_query(&params.raw()).map_err(explain)?.period;
    let idle_table = match params.table.as_deref().map(str::trim) {
        None | Some("" | "days") => false,
        Some("idle") => true,
        Some(_) => {
            return Err(explain(AppError::invalid(
                "table",
                Problem::NotOneOf {
                    allowed: "days, idle".into(),
                },
            )));
        }
    };
    let zone = zone(&params, &actor, &headers).map_err(explain)?;
    let report = reports::fleet_report(&state, &actor, zone.as_deref(), choice, state.now())
        .await
        .map_err(explain)?;
    let currency = state.portal.currency.clone();
    match format {
        Format::Json => Ok(Json(api_fleet(&report, &currency)).into_response()),
        Format::Csv => {
            let (table, body) = if idle_table {
                ("idle", idle_csv(&report.top_idle, &currency))
            } else {
                ("days", fleet_csv(&report.days))
            };
            let name = format!(
                "berth-fleet-{table}-{}-{}.csv",
                report.period.first_day,
                report.period.last_day()
            );
            csv_response(&name, body)
        }
    }
}

fn csv_response(name: &str, body: Result<String, csv::Error>) -> Result<Response, AppError> {
    let body = body.map_err(AppError::internal)?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        body,
    )
        .into_response())
}

/// Hours with two decimals.
fn hours(value: f64) -> String {
    format!("{value:.2}")
}

/// A percentage with one decimal, or empty.
fn percent(value: Option<f64>) -> String {
    value.map(|v| format!("{v:.1}")).unwrap_or_default()
}

/// A per-hour cost in minor units as a decimal amount (rounded to the currency's minor unit).
#[expect(clippy::cast_possible_truncation, reason = "money in a report")]
fn per_hour(value: Option<f64>, currency: &Currency) -> Option<String> {
    value.map(|minor| Money::from_minor(minor.round() as i64).to_decimal_string(currency))
}

fn label(label: &GroupLabel, personal: &str) -> String {
    match label {
        GroupLabel::Name(name) => name.clone(),
        GroupLabel::Personal => personal.to_owned(),
        GroupLabel::Others => String::new(),
    }
}

/// A report's totals in the API.
#[derive(Debug, Serialize)]
struct ApiTotals {
    bookings: u32,
    reserved_gpu_hours: f64,
    charged: String,
    charged_minor: i64,
    refunds: String,
    refunds_minor: i64,
    net_spend: String,
    net_spend_minor: i64,
    avg_utilization_percent: Option<f64>,
    used_gpu_hours: f64,
    idle_gpu_hours: f64,
    unmeasured_gpu_hours: f64,
    cost_per_used_gpu_hour: Option<String>,
    reclaimed_bookings: u32,
    reclaimed_gpu_hours: f64,
    reclaim_refunds: String,
    sla_credits: String,
    sla_credits_minor: i64,
    watches_served: u32,
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

fn api_totals(totals: &Totals, currency: &Currency) -> ApiTotals {
    let money = |minor: i64| Money::from_minor(minor).to_decimal_string(currency);
    ApiTotals {
        bookings: totals.bookings,
        reserved_gpu_hours: round2(totals.reserved_hours()),
        charged: money(totals.charged_minor),
        charged_minor: totals.charged_minor,
        refunds: money(totals.refunded_minor),
        refunds_minor: totals.refunded_minor,
        net_spend: money(totals.net_minor()),
        net_spend_minor: totals.net_minor(),
        avg_utilization_percent: totals
            .average_utilization()
            .map(|v| (v * 10.0).round() / 10.0),
        used_gpu_hours: round2(totals.used_hours()),
        idle_gpu_hours: round2(totals.idle_hours()),
        unmeasured_gpu_hours: round2(totals.unmeasured_hours()),
        cost_per_used_gpu_hour: per_hour(totals.cost_per_used_hour_minor(), currency),
        reclaimed_bookings: totals.reclaimed,
        reclaimed_gpu_hours: round2(totals.reclaimed_hours()),
        reclaim_refunds: money(totals.reclaim_refund_minor),
        sla_credits: money(totals.sla_credit_minor),
        sla_credits_minor: totals.sla_credit_minor,
        watches_served: totals.watches_served,
    }
}

#[derive(Debug, Serialize)]
struct ApiPeriod {
    /// First local day.
    from: String,
    /// Last local day, included.
    to: String,
    /// The instants the period starts and ends (UTC).
    from_utc: String,
    to_utc: String,
    time_zone: String,
}

fn api_period(period: &berth_app::domain::report::Period) -> ApiPeriod {
    let utc =
        |at: chrono::DateTime<chrono::Utc>| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    ApiPeriod {
        from: period.first_day.to_string(),
        to: period.last_day().to_string(),
        from_utc: utc(period.from),
        to_utc: utc(period.to),
        time_zone: period.zone.clone(),
    }
}

#[derive(Debug, Serialize)]
struct ApiRow {
    key: String,
    name: String,
    #[serde(flatten)]
    totals: ApiTotals,
}

#[derive(Debug, Serialize)]
struct ApiUsage {
    period: ApiPeriod,
    group_by: &'static str,
    scope: String,
    currency: String,
    idle_threshold_percent: f64,
    rows: Vec<ApiRow>,
    totals: ApiTotals,
    /// Reserved GPU-hours per local day (bookings split over the days they cover) and the
    /// average utilization of the bookings held that day.
    days: Vec<ApiUsageDay>,
}

#[derive(Debug, Serialize)]
struct ApiUsageDay {
    day: String,
    reserved_gpu_hours: f64,
    avg_utilization_percent: Option<f64>,
}

fn api_usage(report: &UsageReport, personal: &str) -> ApiUsage {
    ApiUsage {
        period: api_period(&report.period),
        group_by: report.group_by.as_str(),
        scope: report.scope.as_param(),
        currency: report.currency.code().to_owned(),
        idle_threshold_percent: report.idle_threshold,
        rows: report
            .rows
            .iter()
            .map(|row: &ReportRow| ApiRow {
                key: row.key.clone(),
                name: label(&row.label, personal),
                totals: api_totals(&row.totals, &report.currency),
            })
            .collect(),
        totals: api_totals(&report.totals, &report.currency),
        days: report
            .chart
            .days
            .iter()
            .map(|day| ApiUsageDay {
                day: day.day.to_string(),
                reserved_gpu_hours: round2(day.hours.iter().sum()),
                avg_utilization_percent: day.utilization.map(|v| (v * 10.0).round() / 10.0),
            })
            .collect(),
    }
}

const USAGE_COLUMNS: [&str; 16] = [
    "group_by",
    "key",
    "name",
    "period_from",
    "period_to",
    "bookings",
    "reserved_gpu_hours",
    "charged",
    "refunds",
    "net_spend",
    "currency",
    "avg_utilization_percent",
    "used_gpu_hours",
    "idle_gpu_hours",
    "unmeasured_gpu_hours",
    "cost_per_used_gpu_hour",
];

/// One line per group, then the total (key `total`).
fn usage_csv(report: &UsageReport, personal: &str) -> Result<String, csv::Error> {
    let mut writer = csv_export::writer();
    writer.write_record(USAGE_COLUMNS)?;
    let currency = &report.currency;
    let line = |key: &str, name: String, totals: &Totals| -> Vec<String> {
        let api = api_totals(totals, currency);
        vec![
            report.group_by.as_str().to_owned(),
            key.to_owned(),
            name,
            report.period.first_day.to_string(),
            report.period.last_day().to_string(),
            api.bookings.to_string(),
            hours(totals.reserved_hours()),
            api.charged,
            api.refunds,
            api.net_spend,
            currency.code().to_owned(),
            percent(totals.average_utilization()),
            hours(totals.used_hours()),
            hours(totals.idle_hours()),
            hours(totals.unmeasured_hours()),
            api.cost_per_used_gpu_hour.unwrap_or_default(),
        ]
    };
    for row in &report.rows {
        writer.write_record(line(
            &csv_export::text(&row.key),
            csv_export::text(&label(&row.label, personal)).into_owned(),
            &row.totals,
        ))?;
    }
    writer.write_record(line("total", String::new(), &report.totals))?;
    csv_export::finish(writer)
}

#[derive(Debug, Serialize)]
struct ApiFleetDay {
    day: String,
    capacity_gpu_hours: f64,
    reserved_gpu_hours: f64,
    upcoming_gpu_hours: f64,
    reclaimed_gpu_hours: f64,
    used_gpu_hours: f64,
    avg_utilization_percent: Option<f64>,
}

#[derive(Debug, Serialize)]
struct ApiIdle {
    reservation_id: i64,
    owner: String,
    team: Option<String>,
    model: String,
    node: String,
    start: String,
    end: String,
    reserved_gpu_hours: f64,
    idle_gpu_hours: f64,
    avg_utilization_percent: Option<f64>,
    net_spend: String,
}

#[derive(Debug, Serialize)]
struct ApiFleet {
    period: ApiPeriod,
    idle_threshold_percent: f64,
    days: Vec<ApiFleetDay>,
    top_idle: Vec<ApiIdle>,
}

fn api_fleet_day(day: &FleetDay) -> ApiFleetDay {
    ApiFleetDay {
        day: day.day.to_string(),
        capacity_gpu_hours: round2(day.capacity_hours),
        reserved_gpu_hours: round2(day.reserved_hours),
        upcoming_gpu_hours: round2(day.upcoming_hours),
        reclaimed_gpu_hours: round2(day.reclaimed_hours),
        used_gpu_hours: round2(day.used_hours),
        avg_utilization_percent: day.utilization.map(|v| (v * 10.0).round() / 10.0),
    }
}

fn api_idle(fact: &BookingFact, currency: &Currency) -> ApiIdle {
    let utc =
        |at: chrono::DateTime<chrono::Utc>| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut totals = Totals::default();
    totals.add(fact);
    ApiIdle {
        reservation_id: fact.id,
        owner: fact.owner_name.clone(),
        team: fact.team_name.clone(),
        model: fact.model.clone(),
        node: fact.node.clone(),
        start: utc(fact.start),
        end: utc(fact.held_until),
        reserved_gpu_hours: round2(totals.reserved_hours()),
        idle_gpu_hours: round2(totals.idle_hours()),
        avg_utilization_percent: totals
            .average_utilization()
            .map(|v| (v * 10.0).round() / 10.0),
        net_spend: Money::from_minor(totals.net_minor()).to_decimal_string(currency),
    }
}

fn api_fleet(report: &FleetReport, currency: &Currency) -> ApiFleet {
    ApiFleet {
        period: api_period(&report.period),
        idle_threshold_percent: report.idle_threshold,
        days: report.days.iter().map(api_fleet_day).collect(),
        top_idle: report
            .top_idle
            .iter()
            .map(|f| api_idle(f, currency))
            .collect(),
    }
}

fn fleet_csv(days: &[FleetDay]) -> Result<String, csv::Error> {
    let mut writer = csv_export::writer();
    writer.write_record([
        "day",
        "capacity_gpu_hours",
        "reserved_gpu_hours",
        "used_gpu_hours",
        "avg_utilization_percent",
    ])?;
    for day in days {
        writer.write_record([
            day.day.to_string(),
            hours(day.capacity_hours),
            hours(day.reserved_hours),
            hours(day.used_hours),
            percent(day.utilization),
        ])?;
    }
    csv_export::finish(writer)
}

fn idle_csv(facts: &[BookingFact], currency: &Currency) -> Result<String, csv::Error> {
    let mut writer = csv_export::writer();
    writer.write_record([
        "reservation_id",
        "owner",
        "team",
        "model",
        "node",
        "start",
        "end",
        "reserved_gpu_hours",
        "idle_gpu_hours",
        "avg_utilization_percent",
        "net_spend",
        "currency",
    ])?;
    for fact in facts {
        let idle = api_idle(fact, currency);
        writer.write_record([
            idle.reservation_id.to_string(),
            csv_export::text(&idle.owner).into_owned(),
            csv_export::text(&idle.team.unwrap_or_default()).into_owned(),
            csv_export::text(&idle.model).into_owned(),
            csv_export::text(&idle.node).into_owned(),
            idle.start,
            idle.end,
            hours(idle.reserved_gpu_hours),
            hours(idle.idle_gpu_hours),
            percent(idle.avg_utilization_percent),
            idle.net_spend,
            currency.code().to_owned(),
        ])?;
    }
    csv_export::finish(writer)
}
