//! `/reports`: cost reports for a period in the viewer's time zone, grouped by team, user, GPU
//! model or node, with a daily chart (reserved GPU-hours stacked by group, utilization line),
//! the table under it and its CSV. `/reports/fleet`: the fleet's capacity, reservations and use
//! per day and the most idle bookings (platform admins). Rendered on the server only (no
//! island): the charts are SVG in the page, legible without JavaScript, and the layout prints.

use crate::api::reports::{FleetPage, ReportPage, get_fleet_report, get_report_page};
use crate::components::error::ErrorPanel;
use crate::domain::bars::{BarChart, BarFrame, DayStack, bar_chart, day_label};
use crate::domain::money::{Currency, Money};
use crate::domain::numbers::format_decimal;
use crate::domain::report::{GroupBy, GroupLabel, ReportQuery, Scope, Totals};
use crate::domain::time_text::date_minute;
use crate::i18n::*;
use crate::text::format::{date_text, money_string, with_number_style};
use chrono::NaiveDate;
use leptos::either::Either;
use leptos::prelude::*;
use leptos_i18n::I18nContext;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// The query string of the current page, as a report query.
fn current_query() -> ReportQuery {
    use_query_map().with_untracked(|q| ReportQuery {
        period: q.get("period"),
        from: q.get("from"),
        to: q.get("to"),
        group_by: q.get("group_by"),
        scope: q.get("scope"),
    })
}

/// `query` as URL parameters (empty ones left out).
fn query_string(query: &ReportQuery) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (name, value) in [
        ("period", &query.period),
        ("from", &query.from),
        ("to", &query.to),
        ("group_by", &query.group_by),
        ("scope", &query.scope),
    ] {
        if let Some(value) = value.as_deref().filter(|v| !v.trim().is_empty()) {
            out.append_pair(name, value);
        }
    }
    out.finish()
}

fn number(i18n: I18nContext<Locale>, value: f64, decimals: usize) -> String {
    with_number_style(i18n, |style| format_decimal(value, decimals, style))
}

fn percent_text(i18n: I18nContext<Locale>, value: Option<f64>) -> String {
    match value {
        Some(value) => {
            t_string!(i18n, report_percent_value, percent = number(i18n, value, 1)).to_string()
        }
        None => "—".to_owned(),
    }
}

fn day_text(i18n: I18nContext<Locale>, day: NaiveDate) -> String {
    date_text(i18n, day.and_time(chrono::NaiveTime::MIN).and_utc())
}

#[expect(clippy::cast_possible_truncation, reason = "money in a report")]
fn per_hour_text(i18n: I18nContext<Locale>, value: Option<f64>, currency: &Currency) -> String {
    value.map_or_else(
        || "—".to_owned(),
        |minor| money_string(i18n, Money::from_minor(minor.round() as i64), currency),
    )
}

fn group_by_text(i18n: I18nContext<Locale>, by: GroupBy) -> String {
    match by {
        GroupBy::Team => t_string!(i18n, report_by_team),
        GroupBy::User => t_string!(i18n, report_by_user),
        GroupBy::Model => t_string!(i18n, report_by_model),
        GroupBy::Node => t_string!(i18n, report_by_node),
    }
    .to_string()
}

fn label_text(i18n: I18nContext<Locale>, label: &GroupLabel) -> String {
    match label {
        GroupLabel::Name(name) => name.clone(),
        GroupLabel::Personal => t_string!(i18n, report_personal).to_string(),
        GroupLabel::Others => t_string!(i18n, report_others).to_string(),
    }
}

/// The cost report page.
#[component]
pub fn ReportsPage() -> impl IntoView {
    let i18n = use_i18n();
    let query = current_query();
    let data = Resource::new(
        {
            let query = query.clone();
            move || query.clone()
        },
        get_report_page,
    );
    view! {
        <Title text=t_string!(i18n, report_title).to_string() />
        <section class="reports">
            <h1>{t!(i18n, report_title)}</h1>
            <p class="lede">{t!(i18n, report_intro)}</p>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {
                    let query = query.clone();
                    move || {
                        let query = query.clone();
                        data.get()
                            .map(move |result| match result {
                                Ok(data) => Either::Left(view! { <ReportView data query /> }),
                                Err(error) => Either::Right(view! {
                                    <ReportForm query scopes=vec![(Scope::Mine, None)] />
                                    <ErrorPanel error />
                                }),
                            })
                    }
                }
            </Transition>
        </section>
    }
}

/// The period, grouping and scope form (a plain GET form: works without JavaScript).
#[component]
fn ReportForm(query: ReportQuery, scopes: Vec<(Scope, Option<String>)>) -> impl IntoView {
    let i18n = use_i18n();
    let group_by = GroupBy::parse(query.group_by.as_deref()).unwrap_or(GroupBy::Team);
    let groupings = GroupBy::ALL
        .into_iter()
        .map(|by| {
            view! {
                <option value=by.as_str() selected=by == group_by>{group_by_text(i18n, by)}</option>
            }
        })
        .collect_view();
    let scope = Scope::parse(query.scope.as_deref()).unwrap_or(Scope::Mine);
    let scope_choice = (scopes.len() > 1).then(|| {
        let options = scopes
            .into_iter()
            .map(|(choice, name)| {
                let text = match choice {
                    Scope::Mine => t_string!(i18n, report_scope_me).to_string(),
                    Scope::All => t_string!(i18n, report_scope_all).to_string(),
                    Scope::Team(_) => {
                        t_string!(i18n, report_scope_team, name = name.unwrap_or_default())
                            .to_string()
                    }
                };
                view! {
                    <option value=choice.as_param() selected=choice == scope>{text}</option>
                }
            })
            .collect_view();
        view! {
            <label>
                {t!(i18n, report_scope)}
                <select name="scope">{options}</select>
            </label>
        }
    });
    view! {
        <form class="report-form" method="get" action="/reports">
            <PeriodFields query=query.clone() />
            <label>
                {t!(i18n, report_group_by)}
                <select name="group_by">{groupings}</select>
            </label>
            {scope_choice}
            <button type="submit">{t!(i18n, report_show)}</button>
        </form>
    }
}

#[component]
fn ReportView(data: ReportPage, query: ReportQuery) -> impl IntoView {
    let i18n = use_i18n();
    let ReportPage {
        report,
        scopes,
        fleet,
    } = data;
    let currency = report.currency.clone();
    let period = &report.period;
    let covers = t_string!(
        i18n,
        report_covers,
        first = day_text(i18n, period.first_day),
        last = day_text(i18n, period.last_day()),
        zone = period.zone.clone()
    )
    .to_string();
    let csv = format!("/api/v1/reports/usage?{}&format=csv", query_string(&query));
    let fleet_link = fleet.then(|| {
        let mut fleet_query = query.clone();
        fleet_query.group_by = None;
        fleet_query.scope = None;
        let href = format!("/reports/fleet?{}", query_string(&fleet_query));
        view! { <p class="report-fleet-link"><a href=href>{t!(i18n, report_fleet_link)}</a></p> }
    });
    let idle_note = t_string!(
        i18n,
        report_idle_note,
        percent = number(i18n, report.idle_threshold, 0)
    )
    .to_string();
    let body = if report.rows.is_empty() {
        Either::Left(view! { <p class="empty">{t!(i18n, report_empty)}</p> })
    } else {
        let chart = view! { <UsageChart report=report.clone() /> };
        let table = view! { <UsageTable report=report.clone() /> };
        Either::Right(view! {
            {chart}
            {table}
        })
    };
    view! {
        <ReportForm query=query.clone() scopes />
        <p class="report-period">{covers}</p>
        {fleet_link}
        <Summary totals=report.totals.clone() currency=currency.clone() />
        {body}
        <p class="report-note">{idle_note}</p>
        <p class="report-actions">
            <a class="button" href=csv download="">{t!(i18n, report_download_csv)}</a>
        </p>
    }
}

/// The period's totals as key figures.
#[component]
fn Summary(totals: Totals, currency: Currency) -> impl IntoView {
    let i18n = use_i18n();
    let hours = |value: f64| {
        t_string!(i18n, report_hours_value, hours = number(i18n, value, 1)).to_string()
    };
    view! {
        <dl class="report-summary">
            <div>
                <dt>{t!(i18n, report_net)}</dt>
                <dd>{money_string(i18n, Money::from_minor(totals.net_minor()), &currency)}</dd>
            </div>
            <div>
                <dt>{t!(i18n, report_reserved_hours)}</dt>
                <dd>{hours(totals.reserved_hours())}</dd>
            </div>
            <div>
                <dt>{t!(i18n, report_avg_util)}</dt>
                <dd>{percent_text(i18n, totals.average_utilization())}</dd>
            </div>
            <div>
                <dt>{t!(i18n, report_idle_hours)}</dt>
                <dd>{hours(totals.idle_hours())}</dd>
            </div>
            <div>
                <dt>{t!(i18n, report_cost_per_used_hour)}</dt>
                <dd>{per_hour_text(i18n, totals.cost_per_used_hour_minor(), &currency)}</dd>
            </div>
            <div>
                <dt>{t!(i18n, report_reclaimed_hours)}</dt>
                <dd>
                    {hours(totals.reclaimed_hours())}
                    <small>
                        " "
                        {t!(
                            i18n,
                            report_reclaimed_detail,
                            count = totals.reclaimed,
                            refund = money_string(i18n, Money::from_minor(totals.reclaim_refund_minor), &currency)
                        )}
                    </small>
                </dd>
            </div>
            <div>
                <dt>{t!(i18n, report_sla_credits)}</dt>
                <dd data-sla-credits=totals.sla_credit_minor>{money_string(i18n, Money::from_minor(totals.sla_credit_minor), &currency)}</dd>
            </div>
            <div>
                <dt>{t!(i18n, report_watches_served)}</dt>
                <dd>{totals.watches_served}</dd>
            </div>
        </dl>
    }
}

/// The grouped rows and the total.
#[component]
fn UsageTable(report: crate::domain::report::UsageReport) -> impl IntoView {
    let i18n = use_i18n();
    let currency = report.currency.clone();
    let line = move |name: String, totals: &Totals, currency: &Currency| {
        let money = |minor: i64| money_string(i18n, Money::from_minor(minor), currency);
        view! {
            <th scope="row">{name}</th>
            <td class="num">{totals.bookings}</td>
            <td class="num">{number(i18n, totals.reserved_hours(), 1)}</td>
            <td class="num">{money(totals.charged_minor)}</td>
            <td class="num">{money(totals.refunded_minor)}</td>
            <td class="num">{money(totals.net_minor())}</td>
            <td class="num">{percent_text(i18n, totals.average_utilization())}</td>
            <td class="num">{number(i18n, totals.used_hours(), 1)}</td>
            <td class="num">{number(i18n, totals.idle_hours(), 1)}</td>
            <td class="num">{number(i18n, totals.unmeasured_hours(), 1)}</td>
            <td class="num">{per_hour_text(i18n, totals.cost_per_used_hour_minor(), currency)}</td>
            <td class="num">{number(i18n, totals.reclaimed_hours(), 1)}</td>
            <td class="num">{money(totals.reclaim_refund_minor)}</td>
            <td class="num">{totals.watches_served}</td>
        }
    };
    let rows = report
        .rows
        .iter()
        .map(|row| view! { <tr>{line(label_text(i18n, &row.label), &row.totals, &currency)}</tr> })
        .collect_view();
    let total = line(
        t_string!(i18n, report_total).to_string(),
        &report.totals,
        &currency,
    );
    view! {
        <div class="table-scroll">
            <table class="report-table">
                <thead>
                    <tr>
                        <th scope="col">{group_by_text(i18n, report.group_by)}</th>
                        <th scope="col" class="num">{t!(i18n, report_bookings)}</th>
                        <th scope="col" class="num">{t!(i18n, report_reserved_hours)}</th>
                        <th scope="col" class="num">{t!(i18n, report_charged)}</th>
                        <th scope="col" class="num">{t!(i18n, report_refunds)}</th>
                        <th scope="col" class="num">{t!(i18n, report_net)}</th>
                        <th scope="col" class="num">{t!(i18n, report_avg_util)}</th>
                        <th scope="col" class="num">{t!(i18n, report_used_hours)}</th>
                        <th scope="col" class="num">{t!(i18n, report_idle_hours)}</th>
                        <th scope="col" class="num">{t!(i18n, report_unmeasured_hours)}</th>
                        <th scope="col" class="num">{t!(i18n, report_cost_per_used_hour)}</th>
                        <th scope="col" class="num">{t!(i18n, report_reclaimed_hours)}</th>
                        <th scope="col" class="num">{t!(i18n, report_reclaim_refunds)}</th>
                        <th scope="col" class="num">{t!(i18n, report_watches_served)}</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
                <tfoot>
                    <tr>{total}</tr>
                </tfoot>
            </table>
        </div>
    }
}

/// An SVG bar chart with its axes, legend and utilization line. `series`: each stacked series'
/// CSS class and legend text, bottom first.
#[component]
fn DailyChart(
    title: String,
    chart: BarChart,
    series: Vec<(String, String)>,
    line_label: String,
) -> impl IntoView {
    let i18n = use_i18n();
    let frame = chart.frame;
    let (left, right, top, bottom) = (
        frame.plot_left(),
        frame.plot_right(),
        frame.plot_top(),
        frame.plot_bottom(),
    );
    let grid = chart
        .value_ticks
        .iter()
        .map(|tick| {
            view! {
                <line class="grid" x1=left x2=right y1=tick.y y2=tick.y />
                <text class="tick" x=left - 6.0 y=tick.y + 4.0 text-anchor="end">{tick.label.clone()}</text>
            }
        })
        .collect_view();
    let percent_ticks = chart
        .percent_ticks
        .iter()
        .map(|tick| {
            view! {
                <text class="tick" x=right + 6.0 y=tick.y + 4.0 text-anchor="start">{tick.label.clone()}</text>
            }
        })
        .collect_view();
    let bars = chart
        .bars
        .iter()
        .map(|bar| {
            let segments = bar
                .segments
                .iter()
                .map(|segment| {
                    let class = series
                        .get(segment.series)
                        .map(|s| s.0.clone())
                        .unwrap_or_default();
                    let tip = format!(
                        "{} · {}: {}",
                        bar.day,
                        series.get(segment.series).map(|s| s.1.clone()).unwrap_or_default(),
                        number(i18n, segment.value, 1)
                    );
                    view! {
                        <rect class=format!("bar {class}") x=bar.x y=segment.y width=bar.width height=segment.height>
                            <title>{tip}</title>
                        </rect>
                    }
                })
                .collect_view();
            let label = bar.labelled.then(|| {
                view! {
                    <text class="tick" x=bar.x + bar.width / 2.0 y=bottom + 16.0 text-anchor="middle">
                        {day_label(bar.day)}
                    </text>
                }
            });
            view! { <g>{segments}{label}</g> }
        })
        .collect_view();
    let points = chart
        .points
        .iter()
        .map(|(x, y, percent)| {
            view! {
                <circle class="util-point" cx=*x cy=*y r="3">
                    <title>{percent_text(i18n, Some(*percent))}</title>
                </circle>
            }
        })
        .collect_view();
    let legend = series
        .iter()
        .map(|(class, text)| {
            view! {
                <li><span class=format!("swatch {class}") aria-hidden="true"></span>{text.clone()}</li>
            }
        })
        .collect_view();
    let hours_axis = t_string!(i18n, report_chart_hours_axis).to_string();
    let util_axis = t_string!(i18n, report_chart_util_axis).to_string();
    let view_box = format!("0 0 {} {}", frame.width, frame.height);
    let middle = (top + bottom) / 2.0;
    view! {
        <figure class="report-chart">
            <figcaption>{title.clone()}</figcaption>
            <svg viewBox=view_box role="img" aria-label=title preserveAspectRatio="xMidYMid meet">
                {grid}
                <line class="axis" x1=left x2=right y1=bottom y2=bottom />
                <line class="axis" x1=left x2=left y1=top y2=bottom />
                <line class="axis" x1=right x2=right y1=top y2=bottom />
                {bars}
                <path class="util-line" d=chart.line.clone() fill="none" />
                {points}
                {percent_ticks}
                <text class="axis-label" x="14" y=middle text-anchor="middle"
                    transform=format!("rotate(-90 14 {middle})")>{hours_axis}</text>
                <text class="axis-label" x=frame.width - 10.0 y=middle text-anchor="middle"
                    transform=format!("rotate(90 {} {middle})", frame.width - 10.0)>{util_axis}</text>
            </svg>
            <ul class="legend">
                {legend}
                <li><span class="swatch util-swatch" aria-hidden="true"></span>{line_label}</li>
            </ul>
        </figure>
    }
}

/// Reserved GPU-hours per day stacked by group, with the utilization line.
#[component]
fn UsageChart(report: crate::domain::report::UsageReport) -> impl IntoView {
    let i18n = use_i18n();
    let grouped = &report.chart;
    let days: Vec<DayStack> = grouped
        .days
        .iter()
        .map(|day| DayStack {
            day: day.day,
            values: day.hours.clone(),
            utilization: day.utilization,
        })
        .collect();
    let series = grouped
        .groups
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let class = if *label == GroupLabel::Others {
                "series-others".to_owned()
            } else {
                format!("series-{i}")
            };
            (class, label_text(i18n, label))
        })
        .collect();
    view! {
        <DailyChart
            title=t_string!(i18n, report_chart_title).to_string()
            chart=bar_chart(&days, BarFrame::default())
            series
            line_label=t_string!(i18n, report_chart_util_line).to_string()
        />
    }
}

/// The fleet report page (platform admins).
#[component]
pub fn FleetReportPage() -> impl IntoView {
    let i18n = use_i18n();
    let query = current_query();
    let data = Resource::new(
        {
            let query = query.clone();
            move || query.clone()
        },
        get_fleet_report,
    );
    view! {
        <Title text=t_string!(i18n, report_fleet_title).to_string() />
        <section class="reports">
            <h1>{t!(i18n, report_fleet_title)}</h1>
            <p class="lede">
                {t!(i18n, report_fleet_intro)} " "
                <a href=format!("/reports?{}", query_string(&query))>{t!(i18n, report_back)}</a>
            </p>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {
                    let query = query.clone();
                    move || {
                        let query = query.clone();
                        data.get()
                            .map(move |result| match result {
                                Ok(data) => Either::Left(view! { <FleetView data query /> }),
                                Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                            })
                    }
                }
            </Transition>
        </section>
    }
}

#[component]
fn FleetView(data: FleetPage, query: ReportQuery) -> impl IntoView {
    let i18n = use_i18n();
    let FleetPage {
        report,
        zone,
        currency,
    } = data;
    let period = &report.period;
    let covers = t_string!(
        i18n,
        report_range,
        first = day_text(i18n, period.first_day),
        last = day_text(i18n, period.last_day()),
        zone = period.zone.clone()
    )
    .to_string();
    let days: Vec<DayStack> = report
        .days
        .iter()
        .map(|day| {
            // Reserved time still to come is neither used nor unused yet; reclaimed time is free
            // again, shown apart from the rest of the free time.
            let past = (day.reserved_hours - day.upcoming_hours).max(0.0);
            let used = day.used_hours.min(past.max(day.used_hours));
            let unused = (past - day.used_hours).max(0.0);
            let taken = day.reserved_hours.max(used + day.upcoming_hours);
            let reclaimed = day
                .reclaimed_hours
                .min((day.capacity_hours - taken).max(0.0));
            let free = (day.capacity_hours - taken - reclaimed).max(0.0);
            DayStack {
                day: day.day,
                values: vec![used, unused, day.upcoming_hours, reclaimed, free],
                utilization: day.utilization,
            }
        })
        .collect();
    let series = vec![
        (
            "fleet-used".to_owned(),
            t_string!(i18n, report_fleet_used).to_string(),
        ),
        (
            "fleet-unused".to_owned(),
            t_string!(i18n, report_fleet_unused).to_string(),
        ),
        (
            "fleet-upcoming".to_owned(),
            t_string!(i18n, report_fleet_upcoming).to_string(),
        ),
        (
            "fleet-reclaimed".to_owned(),
            t_string!(i18n, report_fleet_reclaimed).to_string(),
        ),
        (
            "fleet-free".to_owned(),
            t_string!(i18n, report_fleet_free).to_string(),
        ),
    ];
    let mut fleet_query = query.clone();
    fleet_query.group_by = None;
    fleet_query.scope = None;
    let params = query_string(&fleet_query);
    let days_csv = format!("/api/v1/reports/fleet?{params}&format=csv&table=days");
    let idle_csv = format!("/api/v1/reports/fleet?{params}&format=csv&table=idle");
    let day_rows = report
        .days
        .iter()
        .map(|day| {
            view! {
                <tr>
                    <th scope="row">{day_text(i18n, day.day)}</th>
                    <td class="num">{number(i18n, day.capacity_hours, 1)}</td>
                    <td class="num">{number(i18n, day.reserved_hours, 1)}</td>
                    <td class="num">{number(i18n, day.used_hours, 1)}</td>
                    <td class="num">{percent_text(i18n, day.utilization)}</td>
                </tr>
            }
        })
        .collect_view();
    let idle = if report.top_idle.is_empty() {
        Either::Left(view! { <p class="empty">{t!(i18n, report_no_idle)}</p> })
    } else {
        let rows = report
            .top_idle
            .iter()
            .map(|fact| {
                let mut totals = Totals::default();
                totals.add(fact);
                let who = match &fact.team_name {
                    Some(team) => format!("{} ({team})", fact.owner_name),
                    None => fact.owner_name.clone(),
                };
                view! {
                    <tr>
                        <td>{format!("#{}", fact.id)}</td>
                        <td>{who}</td>
                        <td>{format!("{} · {}", fact.model, fact.node)}</td>
                        <td>{date_minute(zone.local(fact.start))}</td>
                        <td class="num">{number(i18n, totals.reserved_hours(), 1)}</td>
                        <td class="num">{number(i18n, totals.idle_hours(), 1)}</td>
                        <td class="num">{percent_text(i18n, totals.average_utilization())}</td>
                        <td class="num">{money_string(i18n, Money::from_minor(totals.net_minor()), &currency)}</td>
                    </tr>
                }
            })
            .collect_view();
        Either::Right(view! {
            <div class="table-scroll">
                <table class="report-table">
                    <thead>
                        <tr>
                            <th scope="col">{t!(i18n, report_reservation)}</th>
                            <th scope="col">{t!(i18n, report_owner)}</th>
                            <th scope="col">{t!(i18n, report_by_model)}</th>
                            <th scope="col">{t!(i18n, report_start)}</th>
                            <th scope="col" class="num">{t!(i18n, report_reserved_hours)}</th>
                            <th scope="col" class="num">{t!(i18n, report_idle_hours)}</th>
                            <th scope="col" class="num">{t!(i18n, report_avg_util)}</th>
                            <th scope="col" class="num">{t!(i18n, report_net)}</th>
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        })
    };
    view! {
        <FleetForm query=query.clone() />
        <p class="report-period">{covers}</p>
        <DailyChart
            title=t_string!(i18n, report_fleet_chart_title).to_string()
            chart=bar_chart(&days, BarFrame::default())
            series
            line_label=t_string!(i18n, report_fleet_util_line).to_string()
        />
        <div class="table-scroll">
            <table class="report-table">
                <thead>
                    <tr>
                        <th scope="col">{t!(i18n, report_day)}</th>
                        <th scope="col" class="num">{t!(i18n, report_fleet_capacity)}</th>
                        <th scope="col" class="num">{t!(i18n, report_fleet_reserved)}</th>
                        <th scope="col" class="num">{t!(i18n, report_fleet_used)}</th>
                        <th scope="col" class="num">{t!(i18n, report_avg_util)}</th>
                    </tr>
                </thead>
                <tbody>{day_rows}</tbody>
            </table>
        </div>
        <p class="report-actions">
            <a class="button" href=days_csv download="">{t!(i18n, report_download_csv)}</a>
        </p>
        <h2>{t!(i18n, report_top_idle)}</h2>
        {idle}
        <p class="report-actions">
            <a class="button" href=idle_csv download="">{t!(i18n, report_download_csv)}</a>
        </p>
        <p class="report-note">
            {t!(i18n, report_idle_note, percent = number(i18n, report.idle_threshold, 0))}
        </p>
    }
}

/// The fleet page's period form.
#[component]
fn FleetForm(query: ReportQuery) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <form class="report-form" method="get" action="/reports/fleet">
            <PeriodFields query />
            <button type="submit">{t!(i18n, report_show)}</button>
        </form>
    }
}

/// The period choice and the custom range's dates.
#[component]
fn PeriodFields(query: ReportQuery) -> impl IntoView {
    let i18n = use_i18n();
    let custom = query.period.as_deref() == Some("custom")
        || (query.period.as_deref().is_none_or(str::is_empty)
            && (query.from.is_some() || query.to.is_some()));
    let period = if custom {
        "custom".to_owned()
    } else {
        query.period.clone().unwrap_or_else(|| "this_month".into())
    };
    let periods = [
        ("this_month", t_string!(i18n, report_this_month).to_string()),
        ("last_month", t_string!(i18n, report_last_month).to_string()),
        ("this_week", t_string!(i18n, report_this_week).to_string()),
        ("last_week", t_string!(i18n, report_last_week).to_string()),
        ("custom", t_string!(i18n, report_custom).to_string()),
    ]
    .into_iter()
    .map(|(value, text)| view! { <option value=value selected=period == value>{text}</option> })
    .collect_view();
    view! {
        <label>
            {t!(i18n, report_period)}
            <select name="period">{periods}</select>
        </label>
        <label>
            {t!(i18n, report_from)}
            <input type="date" name="from" value=query.from.clone().unwrap_or_default() />
        </label>
        <label>
            {t!(i18n, report_to)}
            <input type="date" name="to" value=query.to.clone().unwrap_or_default() />
        </label>
    }
}
