//! `/incidents/{id}`: one incident as both sides see it — where it stands and by when it gets an
//! answer, the diagnosis with the facts it cites, the SLA's reading, the GPUs' telemetry over the
//! window as aligned charts, one timeline of everything that happened, the messages, and the
//! forms (a reply; the admins' steps; the reporter's one reopening). `/incidents` lists them.
//! Rendered on the server (no island); the forms are plain posts.

use crate::api::incidents::{
    IncidentPage, IncidentReply, IncidentStep, IncidentsPage, OpenIncident, get_incident_page,
    get_incidents_page,
};
use crate::components::error::{ErrorPanel, form_outcome};
use crate::components::telemetry::{ChartRange, TelemetryChart};
use crate::domain::chart::ValueRange;
use crate::domain::diagnosis::{Cause, Hypothesis};
use crate::domain::evidence::{EvidenceReport, GpuTrack, IncidentView};
use crate::domain::incident::IncidentState;
use crate::domain::money::{Currency, Money};
use crate::domain::telemetry::{Metric, in_gib};
use crate::domain::time_text::{date_minute, date_second};
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use crate::text::format::money_string;
use crate::text::incident::{
    action_text, cause_name, fact_text, loss_name, source_name, state_name, trigger_name,
};
use chrono::{DateTime, Utc};
use leptos::either::Either;
use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

/// "Report a problem": two clicks from a booking or a GPU — the button opens the form (what was
/// seen, optional), the second sends it and goes to the new incident with its evidence.
#[component]
pub fn ReportProblem(
    /// The booking.
    #[prop(optional)]
    reservation_id: Option<i64>,
    /// Or the GPU (the caller's booking on it is found).
    #[prop(optional)]
    gpu_id: Option<i64>,
    /// The page to come back to with a refusal.
    back: String,
) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <details class="report-problem">
            <summary class="button">{t!(i18n, incident_report_problem)}</summary>
            <form method="post" action=OpenIncident::PATH class="report-problem-form">
                {reservation_id.map(|id| view! { <input type="hidden" name="reservation_id" value=id.to_string() /> })}
                {gpu_id.map(|id| view! { <input type="hidden" name="gpu_id" value=id.to_string() /> })}
                <input type="hidden" name="back" value=back />
                <label class="field">
                    {t!(i18n, incident_what_you_saw)}
                    <textarea name="report" rows="3" maxlength="4000"
                        placeholder=move || t_string!(i18n, incident_what_you_saw_hint).to_string()></textarea>
                </label>
                <p class="hint">{t!(i18n, incident_open_hint)}</p>
                <button type="submit" class="button-primary">{t!(i18n, incident_open)}</button>
            </form>
        </details>
    }
}

/// Incident `page` as one HTML file that opens anywhere, offline: `css` inlined, the charts as
/// inline SVG, no script, no form; in the language of the request (`parts`).
#[cfg(feature = "ssr")]
pub fn export_html(page: IncidentPage, css: &str, parts: http::request::Parts) -> String {
    crate::text::language::detached(|| {
        provide_context(parts);
        crate::text::language::in_request_language(|i18n| export_document(page, css, i18n))
    })
}

/// [`export_html`]'s document, with the request's translations.
#[cfg(feature = "ssr")]
fn export_document(
    page: IncidentPage,
    css: &str,
    i18n: leptos_i18n::I18nContext<Locale>,
) -> String {
    let lang = i18n.get_locale_untracked().as_str().to_owned();
    let id = page.report.incident.id;
    let title = t_string!(i18n, incident_title, id = id).to_string();
    let body = view! {
        <main class="incident-page incident-export-page">
            <p class="hint">"Berth"</p>
            <IncidentBody page gpu=None export=true />
        </main>
    }
    .to_html();
    format!(
        "<!DOCTYPE html>\n<html lang=\"{lang}\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{title}</title><style>{css}\n.incident-export.hidden{{display:none}}</style>\
             </head><body>{body}</body></html>\n"
    )
}

/// The incident page.
#[component]
pub fn IncidentDetailPage() -> impl IntoView {
    let i18n = use_i18n();
    let id = use_params_map().with_untracked(|p| {
        p.get("id")
            .and_then(|raw| raw.parse::<i64>().ok())
            .unwrap_or(0)
    });
    let (done, error, gpu) = use_query_map().with_untracked(|q| {
        (
            q.get("done"),
            q.get("error"),
            q.get("gpu").and_then(|raw| raw.parse::<i64>().ok()),
        )
    });
    let flash = form_outcome(
        done.map(|_| t_string!(i18n, incident_done).to_string()),
        error,
    );
    let data = Resource::new(move || id, get_incident_page);
    view! {
        <Title text=t_string!(i18n, incident_title, id = id).to_string() />
        <section class="incident-page">
            <p class="back"><a href="/incidents">{t!(i18n, incident_back)}</a></p>
            {flash}
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    data.get()
                        .map(|result| match result {
                            Ok(page) => Either::Left(view! { <IncidentBody page gpu export=false /> }.into_any()),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

fn state_badge(i18n: leptos_i18n::I18nContext<Locale>, state: IncidentState) -> impl IntoView {
    view! {
        <span class=format!("badge incident-state incident-state-{}", state.as_str()) data-state=state.as_str()>
            {state_name(i18n, state)}
        </span>
    }
}

#[component]
fn IncidentBody(page: IncidentPage, gpu: Option<i64>, export: bool) -> impl IntoView {
    let i18n = use_i18n();
    let IncidentPage {
        report,
        zone,
        admin,
        reporter,
        currency,
    } = page;
    let incident = report.incident.clone();
    let id = incident.id;
    let at = |when: DateTime<Utc>| date_minute(zone.local(when));
    let window = format!("{} – {}", at(incident.from), at(incident.to));
    let opened = match (&incident.opened_by, incident.trigger) {
        (_, Some(trigger)) => t_string!(
            i18n,
            incident_opened_by_berth,
            why = trigger_name(i18n, trigger)
        )
        .to_string(),
        (Some(name), None) => {
            let who = format!("{name} ({})", source_name(i18n, incident.source));
            t_string!(i18n, incident_opened_by, who = who).to_string()
        }
        (None, None) => source_name(i18n, incident.source),
    };
    let booking = incident.reservation.clone().map(|b| {
        let text = format!(
            "#{} · {} × {} · {} – {}",
            b.id,
            b.gpus.len(),
            b.model,
            at(b.start),
            at(b.end)
        );
        view! { <a href=format!("/reservations/{}", b.id)>{text}</a> }
    });
    let response = match incident.first_response_at {
        Some(when) => t_string!(i18n, incident_answered_at, at = at(when)).to_string(),
        None => t_string!(
            i18n,
            incident_answer_due,
            at = at(incident.first_response_due)
        )
        .to_string(),
    };
    let overdue = incident.first_response_overdue;
    let cause = stated_cause(i18n, &incident);
    let credit = incident.credit.map(|c| {
        let amount = money_string(i18n, Money::from_minor(c.minor), &currency);
        t_string!(
            i18n,
            incident_credit_paid,
            amount = amount,
            minutes = c.gpu_minutes,
            at = at(c.at)
        )
        .to_string()
    });
    let report_text = (!incident.report.is_empty()).then(|| {
        let text = incident.report.clone();
        view! {
            <figure class="incident-report">
                <figcaption>{t!(i18n, incident_what_was_seen)}</figcaption>
                <blockquote>{text}</blockquote>
            </figure>
        }
    });
    let zone_name = zone.name.clone();
    let hypotheses: Vec<Cause> = report
        .diagnosis
        .hypotheses
        .iter()
        .map(|h| h.cause)
        .collect();
    let closed = incident.state.closed();
    let can_reopen = reporter && closed && !incident.reopened && !export;
    view! {
        <header class="incident-head">
            <h1>{t!(i18n, incident_title, id = id)}</h1>
            {state_badge(i18n, incident.state)}
            {overdue.then(|| view! { <span class="badge badge-missing">{t!(i18n, incident_overdue)}</span> })}
        </header>
        <dl class="incident-facts">
            <div><dt>{t!(i18n, incident_opened)}</dt><dd>{opened}" · "{at(incident.opened_at)}</dd></div>
            {booking.map(|link| view! { <div><dt>{t!(i18n, incident_booking)}</dt><dd>{link}</dd></div> })}
            <div>
                <dt>{t!(i18n, incident_window)}</dt>
                <dd>{window}{incident.to_now.then(|| view! { " "<span class="hint">{t!(i18n, incident_to_now)}</span> })}</dd>
            </div>
            <div><dt>{t!(i18n, incident_first_response)}</dt><dd>{response}</dd></div>
            {cause.map(|text| view! { <div><dt>{t!(i18n, incident_cause)}</dt><dd data-cause>{text}</dd></div> })}
            {credit.map(|text| view! { <div><dt>{t!(i18n, incident_credit)}</dt><dd data-credit>{text}</dd></div> })}
        </dl>
        {report_text}
        {export.then(|| view! {
            <p class="hint incident-exported">{t!(i18n, incident_exported_at, at = at(report.generated_at))}</p>
        })}
        <p class="incident-export" class:hidden=export>
            {t!(i18n, incident_export)}" "
            <a href=format!("/incidents/{id}/export.html") download=format!("berth-incident-{id}.html")>{t!(i18n, incident_export_html)}</a>
            " · "
            <a href=format!("/api/v1/incidents/{id}/export.json")>{t!(i18n, incident_export_json)}</a>
        </p>
        <Diagnosis report=report.clone() zone=zone.clone() />
        <Availability report=report.clone() zone=zone.clone() currency=currency.clone() />
        <Charts report=report.clone() zone=zone.clone() gpu all=export />
        <Timeline report=report.clone() zone=zone.clone() />
        <p class="hint">{t!(i18n, times_in_zone, zone = move || zone_name.clone())}</p>
        <Messages report=report.clone() zone=zone.clone() />
        {(!export).then(|| view! { <section class="incident-section" aria-labelledby="reply-heading">
            <h2 id="reply-heading">{t!(i18n, incident_reply_title)}</h2>
            <form method="post" action=IncidentReply::PATH class="incident-form">
                <input type="hidden" name="id" value=id.to_string() />
                <label class="field">
                    {t!(i18n, incident_reply_label)}
                    <textarea name="body" rows="3" maxlength="4000" required></textarea>
                </label>
                <button type="submit">{t!(i18n, incident_reply_send)}</button>
            </form>
        </section> })}
        {(admin && !closed && !export).then(|| view! { <AdminSteps id state=incident.state hypotheses=hypotheses.clone() /> })}
        {can_reopen.then(|| view! {
            <section class="incident-section" aria-labelledby="reopen-heading">
                <h2 id="reopen-heading">{t!(i18n, incident_reopen_title)}</h2>
                <form method="post" action=IncidentStep::PATH class="incident-form">
                    <input type="hidden" name="id" value=id.to_string() />
                    <input type="hidden" name="step" value="reopen" />
                    <label class="field">
                        {t!(i18n, incident_reopen_label)}
                        <textarea name="note" rows="3" maxlength="4000" required></textarea>
                    </label>
                    <p class="hint">{t!(i18n, incident_reopen_hint)}</p>
                    <button type="submit">{t!(i18n, incident_reopen)}</button>
                </form>
            </section>
        })}
    }
    .into_any()
}

fn stated_cause(i18n: leptos_i18n::I18nContext<Locale>, incident: &IncidentView) -> Option<String> {
    match (incident.cause, &incident.cause_text) {
        (Some(cause), Some(text)) => Some(format!("{} — {text}", cause_name(i18n, cause))),
        (Some(cause), None) => Some(cause_name(i18n, cause)),
        (None, Some(text)) => Some(text.clone()),
        (None, None) => None,
    }
}

#[component]
fn Diagnosis(report: EvidenceReport, zone: ZoneOffsets) -> impl IntoView {
    let i18n = use_i18n();
    let diagnosis = report.diagnosis;
    let checked = diagnosis.checked.clone();
    let body = if diagnosis.hypotheses.is_empty() {
        Either::Left(view! {
            <p class="diagnosis-none" data-no-fault>{t!(i18n, incident_no_fault)}</p>
        })
    } else {
        let items = diagnosis
            .hypotheses
            .into_iter()
            .map(|h: Hypothesis| {
                let facts = h
                    .facts
                    .iter()
                    .map(|fact| view! { <li>{fact_text(i18n, fact, &zone)}</li> })
                    .collect_view();
                view! {
                    <li class="hypothesis" data-cause=h.cause.as_str()>
                        <h3>{cause_name(i18n, h.cause)}</h3>
                        <p class="hypothesis-action"><strong>{t!(i18n, incident_what_to_do)}</strong>" "{action_text(i18n, h.action)}</p>
                        <p class="hypothesis-facts-title">{t!(i18n, incident_because)}</p>
                        <ul class="hypothesis-facts">{facts}</ul>
                    </li>
                }
            })
            .collect_view();
        Either::Right(view! { <ol class="hypotheses">{items}</ol> })
    };
    view! {
        <section class="incident-section incident-diagnosis" aria-labelledby="diagnosis-heading">
            <h2 id="diagnosis-heading">{t!(i18n, incident_diagnosis)}</h2>
            {body}
            <p class="hint">
                {t!(i18n, incident_checked, gpus = checked.gpus, samples = checked.samples, xids = checked.xids, changes = checked.admin_changes)}
            </p>
        </section>
    }
}

#[component]
fn Availability(report: EvidenceReport, zone: ZoneOffsets, currency: Currency) -> impl IntoView {
    let i18n = use_i18n();
    let availability = report.availability;
    let credited = report.incident.credit.is_some();
    let amount = money_string(
        i18n,
        Money::from_minor(availability.credit_minor),
        &currency,
    );
    let minutes = availability.lost_gpu_minutes;
    let percent = availability.percent;
    let summary = if credited {
        t_string!(
            i18n,
            incident_sla_paid,
            minutes = minutes,
            amount = amount.clone()
        )
        .to_string()
    } else if minutes > 0 {
        t_string!(
            i18n,
            incident_sla_due,
            minutes = minutes,
            amount = amount.clone(),
            percent = percent
        )
        .to_string()
    } else {
        t_string!(i18n, incident_sla_none).to_string()
    };
    let rows = availability
        .lost
        .iter()
        .map(|span| {
            view! {
                <tr>
                    <td>{span.gpu.clone()}</td>
                    <td>{loss_name(i18n, span.cause)}</td>
                    <td>{date_second(zone.local(span.from))}</td>
                    <td>{date_second(zone.local(span.to))}</td>
                    <td class="num">{(span.to - span.from).num_minutes()}</td>
                </tr>
            }
        })
        .collect_view();
    let has_rows = !availability.lost.is_empty();
    view! {
        <section class="incident-section incident-sla" aria-labelledby="sla-heading">
            <h2 id="sla-heading">{t!(i18n, incident_sla)}</h2>
            <p data-lost-minutes=minutes>{summary}</p>
            {has_rows.then(|| view! {
                <div class="table-scroll">
                    <table>
                        <thead><tr>
                            <th scope="col">{t!(i18n, incident_col_gpu)}</th>
                            <th scope="col">{t!(i18n, incident_col_why)}</th>
                            <th scope="col">{t!(i18n, incident_col_from)}</th>
                            <th scope="col">{t!(i18n, incident_col_to)}</th>
                            <th scope="col" class="num">{t!(i18n, incident_col_minutes)}</th>
                        </tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
            })}
        </section>
    }
}

/// Five charts for one GPU over the same window, stacked so their times line up.
#[component]
fn Charts(report: EvidenceReport, zone: ZoneOffsets, gpu: Option<i64>, all: bool) -> impl IntoView {
    let i18n = use_i18n();
    let id = report.incident.id;
    let (from, to) = (report.incident.from, report.incident.to);
    let chosen = gpu
        .and_then(|g| report.gpus.iter().position(|t| t.id == g))
        .unwrap_or(0);
    if all {
        let sections = report
            .gpus
            .iter()
            .map(|track| gpu_charts(i18n, track, from, to, &zone))
            .collect_view();
        return view! {
            <section class="incident-section incident-charts" aria-labelledby="charts-heading">
                <h2 id="charts-heading">{t!(i18n, incident_telemetry_all)}</h2>
                {sections}
            </section>
        }
        .into_any();
    }
    let picker = (report.gpus.len() > 1).then(|| {
        let links = report
            .gpus
            .iter()
            .enumerate()
            .map(|(i, track)| {
                let current = (i == chosen).then_some("page");
                view! { <a href=format!("/incidents/{id}?gpu={}", track.id) aria-current=current>{track.label.clone()}</a> }
            })
            .collect_view();
        view! { <nav class="incident-gpus" aria-label=move || t_string!(i18n, incident_gpus).to_string()>{links}</nav> }
    });
    let charts = report
        .gpus
        .get(chosen)
        .map(|track| gpu_charts(i18n, track, from, to, &zone));
    let label = report
        .gpus
        .get(chosen)
        .map(|t| t.label.clone())
        .unwrap_or_default();
    view! {
        <section class="incident-section incident-charts" aria-labelledby="charts-heading">
            <h2 id="charts-heading">{t!(i18n, incident_telemetry, gpu = label)}</h2>
            {picker}
            {charts}
        </section>
    }
    .into_any()
}

/// The five charts of one GPU over `[from, to]`, stacked so their times line up.
fn gpu_charts(
    i18n: leptos_i18n::I18nContext<Locale>,
    track: &GpuTrack,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    zone: &ZoneOffsets,
) -> AnyView {
    let total_gib = track.memory_mib as f64 / 1024.0;
    let series = &track.series;
    let charts = [
        (Metric::GpuUtil, series.chart(Metric::GpuUtil), ValueRange::Fixed { min: 0.0, max: 100.0 }),
        (Metric::MemoryUsed, in_gib(series.chart(Metric::MemoryUsed)), ValueRange::Fixed { min: 0.0, max: total_gib }),
        (Metric::Temperature, series.chart(Metric::Temperature), ValueRange::Auto),
        (Metric::Power, series.chart(Metric::Power), ValueRange::FromZero { at_least: 0.0 }),
        (Metric::SmClock, series.chart(Metric::SmClock), ValueRange::FromZero { at_least: 0.0 }),
    ]
    .into_iter()
    .map(|(metric, points, range)| {
        view! { <TelemetryChart metric window=ChartRange::Incident points from to range zone=zone.clone() /> }
    })
    .collect_view();
    let label = track.label.clone();
    view! {
        <div class="chart-stack" data-gpu=track.id aria-label=move || t_string!(i18n, incident_telemetry, gpu = label.clone()).to_string()>
            {charts}
        </div>
    }
    .into_any()
}

/// One line of the timeline.
struct Line {
    at: DateTime<Utc>,
    kind: &'static str,
    what: String,
    text: String,
}

fn timeline_lines(
    i18n: leptos_i18n::I18nContext<Locale>,
    report: &EvidenceReport,
    zone: &ZoneOffsets,
) -> Vec<Line> {
    let at = |when: DateTime<Utc>| date_second(zone.local(when));
    let mut lines = Vec::new();
    for gpu in &report.gpus {
        for event in &gpu.events {
            let (kind, text) = match (event.kind.as_str(), event.code) {
                ("xid", Some(code)) => (
                    "xid",
                    t_string!(i18n, timeline_xid, gpu = gpu.label.clone(), code = code).to_string(),
                ),
                ("throttle", Some(mask)) => {
                    let names = crate::domain::telemetry::throttle_reason_names(
                        u64::try_from(mask).unwrap_or(0),
                    );
                    let text = if names.is_empty() {
                        t_string!(i18n, timeline_throttle_over, gpu = gpu.label.clone()).to_string()
                    } else {
                        t_string!(
                            i18n,
                            timeline_throttle,
                            gpu = gpu.label.clone(),
                            reasons = names.join(", ")
                        )
                        .to_string()
                    };
                    ("throttle", text)
                }
                (other, _) => ("gpu", format!("{} — {other}", gpu.label)),
            };
            lines.push(Line {
                at: event.at,
                kind,
                what: t_string!(i18n, timeline_kind_gpu).to_string(),
                text,
            });
        }
    }
    for node in &report.nodes {
        for gap in &node.gaps {
            lines.push(Line {
                at: gap.from,
                kind: "gap",
                what: t_string!(i18n, timeline_kind_agent).to_string(),
                text: t_string!(
                    i18n,
                    timeline_gap,
                    node = node.name.clone(),
                    to = at(gap.to)
                )
                .to_string(),
            });
        }
        for driver in &node.drivers {
            let version = driver.version.clone().unwrap_or_else(|| "—".to_owned());
            lines.push(Line {
                at: driver.from,
                kind: "driver",
                what: t_string!(i18n, timeline_kind_agent).to_string(),
                text: t_string!(
                    i18n,
                    timeline_driver,
                    node = node.name.clone(),
                    version = version,
                    source = driver.source.clone()
                )
                .to_string(),
            });
        }
    }
    for access in &report.access {
        let who = access.user.clone().unwrap_or_default();
        let whose = if access.this_booking {
            t_string!(i18n, timeline_this_booking).to_string()
        } else {
            t_string!(i18n, timeline_other).to_string()
        };
        lines.push(Line {
            at: access.at,
            kind: "access",
            what: t_string!(i18n, timeline_kind_lease).to_string(),
            text: format!("{} · {} · {} {}", access.gpu, access.kind, whose, who)
                .trim()
                .to_owned(),
        });
    }
    for m in &report.maintenance {
        lines.push(Line {
            at: m.created_at,
            kind: "maintenance",
            what: t_string!(i18n, timeline_kind_admin).to_string(),
            text: t_string!(
                i18n,
                timeline_maintenance,
                gpu = m.gpu.clone(),
                from = at(m.from),
                to = at(m.to),
                reason = m.reason.clone()
            )
            .to_string(),
        });
    }
    for change in &report.admin_changes {
        lines.push(Line {
            at: change.at,
            kind: "admin",
            what: t_string!(i18n, timeline_kind_admin).to_string(),
            text: format!("{} — {}", change.action, change.target),
        });
    }
    for span in &report.availability.lost {
        lines.push(Line {
            at: span.from,
            kind: "lost",
            what: t_string!(i18n, timeline_kind_sla).to_string(),
            text: t_string!(
                i18n,
                timeline_lost,
                gpu = span.gpu.clone(),
                why = loss_name(i18n, span.cause),
                to = at(span.to)
            )
            .to_string(),
        });
    }
    lines.push(Line {
        at: report.incident.opened_at,
        kind: "opened",
        what: t_string!(i18n, timeline_kind_incident).to_string(),
        text: t_string!(i18n, timeline_opened).to_string(),
    });
    for message in &report.messages {
        if let Some(state) = message.state {
            lines.push(Line {
                at: message.at,
                kind: "state",
                what: t_string!(i18n, timeline_kind_incident).to_string(),
                text: t_string!(
                    i18n,
                    timeline_state,
                    state = state_name(i18n, state),
                    who = message.author.clone().unwrap_or_default()
                )
                .to_string(),
            });
        }
    }
    lines.sort_by_key(|line| line.at);
    lines
}

#[component]
fn Timeline(report: EvidenceReport, zone: ZoneOffsets) -> impl IntoView {
    let i18n = use_i18n();
    let rows = timeline_lines(i18n, &report, &zone)
        .into_iter()
        .map(|line| {
            view! {
                <tr data-kind=line.kind>
                    <td><time datetime=line.at.to_rfc3339()>{date_second(zone.local(line.at))}</time></td>
                    <td><span class=format!("timeline-kind timeline-{}", line.kind)>{line.what}</span></td>
                    <td>{line.text}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="incident-section incident-timeline" aria-labelledby="timeline-heading">
            <h2 id="timeline-heading">{t!(i18n, incident_timeline)}</h2>
            <div class="table-scroll">
                <table class="timeline-table">
                    <thead><tr>
                        <th scope="col">{t!(i18n, incident_col_when)}</th>
                        <th scope="col">{t!(i18n, incident_col_source)}</th>
                        <th scope="col">{t!(i18n, incident_col_what)}</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </section>
    }
    .into_any()
}

#[component]
fn Messages(report: EvidenceReport, zone: ZoneOffsets) -> impl IntoView {
    let i18n = use_i18n();
    let empty = report.messages.is_empty();
    let items = report
        .messages
        .into_iter()
        .map(|m| {
            let who = m.author.clone().unwrap_or_else(|| "Berth".to_owned());
            let state = m.state.map(|s| view! { " "<span class=format!("badge incident-state incident-state-{}", s.as_str())>{state_name(i18n, s)}</span> });
            // A step taken with a cause from the diagnosis and no note carries the cause's code.
            let body = match (m.state, crate::domain::diagnosis::Cause::parse(&m.body)) {
                (Some(_), Some(cause)) => cause_name(i18n, cause),
                _ => m.body.clone(),
            };
            view! {
                <li class="incident-message" class:from-admin=m.by_admin>
                    <p class="message-head"><strong>{who}</strong>{state}" · "<time datetime=m.at.to_rfc3339()>{date_minute(zone.local(m.at))}</time></p>
                    {(!body.is_empty()).then(|| view! { <p class="message-body">{body}</p> })}
                </li>
            }
        })
        .collect_view();
    view! {
        <section class="incident-section" aria-labelledby="messages-heading">
            <h2 id="messages-heading">{t!(i18n, incident_messages)}</h2>
            {if empty {
                Either::Left(view! { <p class="empty">{t!(i18n, incident_no_messages)}</p> })
            } else {
                Either::Right(view! { <ol class="incident-messages">{items}</ol> })
            }}
        </section>
    }
}

#[component]
fn AdminSteps(id: i64, state: IncidentState, hypotheses: Vec<Cause>) -> impl IntoView {
    let i18n = use_i18n();
    let steps = [
        ("acknowledge", state == IncidentState::Open),
        (
            "diagnose",
            matches!(state, IncidentState::Open | IncidentState::Acknowledged),
        ),
        ("resolve", true),
        ("reject", true),
    ]
    .into_iter()
    .filter(|(_, allowed)| *allowed)
    .map(|(step, _)| {
        let label = match step {
            "acknowledge" => t_string!(i18n, incident_step_acknowledge),
            "diagnose" => t_string!(i18n, incident_step_diagnose),
            "resolve" => t_string!(i18n, incident_step_resolve),
            _ => t_string!(i18n, incident_step_reject),
        };
        view! { <option value=step>{label}</option> }
    })
    .collect_view();
    let causes = hypotheses
        .into_iter()
        .map(|cause| view! { <option value=cause.as_str()>{cause_name(i18n, cause)}</option> })
        .collect_view();
    view! {
        <section class="incident-section incident-admin" aria-labelledby="steps-heading">
            <h2 id="steps-heading">{t!(i18n, incident_steps_title)}</h2>
            <form method="post" action=IncidentStep::PATH class="incident-form">
                <input type="hidden" name="id" value=id.to_string() />
                <label class="field">{t!(i18n, incident_step_label)}
                    <select name="step">{steps}</select>
                </label>
                <label class="field">{t!(i18n, incident_cause_label)}
                    <select name="cause">
                        <option value="">{t!(i18n, incident_cause_written)}</option>
                        {causes}
                    </select>
                </label>
                <label class="field">{t!(i18n, incident_note_label)}
                    <textarea name="note" rows="3" maxlength="4000"></textarea>
                </label>
                <p class="hint">{t!(i18n, incident_steps_hint)}</p>
                <button type="submit" class="button-primary">{t!(i18n, incident_step_send)}</button>
            </form>
        </section>
    }
}

/// `/incidents`: the incidents the reader may see.
#[component]
pub fn IncidentsPage() -> impl IntoView {
    let i18n = use_i18n();
    let (error, cursor) = use_query_map().with_untracked(|q| {
        (
            q.get("error"),
            q.get("cursor").filter(|cursor| !cursor.is_empty()),
        )
    });
    let flash = form_outcome(None, error);
    let on_later_page = cursor.is_some();
    let data = Resource::new(|| (), move |()| get_incidents_page(cursor.clone()));
    view! {
        <Title text=t_string!(i18n, incidents_title).to_string() />
        <section class="incidents-page">
            <h1>{t!(i18n, incidents_title)}</h1>
            <p class="lede">{t!(i18n, incidents_intro)}</p>
            {flash}
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, loading)}</p> }>
                {move || {
                    data.get()
                        .map(|result| match result {
                            Ok(page) => Either::Left(view! { <IncidentList page on_later_page /> }),
                            Err(error) => Either::Right(view! { <ErrorPanel error /> }),
                        })
                }}
            </Transition>
        </section>
    }
}

#[component]
fn IncidentList(page: IncidentsPage, on_later_page: bool) -> impl IntoView {
    let i18n = use_i18n();
    let IncidentsPage {
        incidents,
        next,
        zone,
        currency,
    } = page;
    if incidents.is_empty() && !on_later_page {
        return Either::Left(view! { <p class="empty">{t!(i18n, incidents_none)}</p> });
    }
    let rows = incidents
        .into_iter()
        .map(|incident| {
            let what = match (incident.trigger, incident.report.is_empty()) {
                (Some(trigger), _) => trigger_name(i18n, trigger),
                (None, false) => incident.report.chars().take(80).collect(),
                (None, true) => "—".to_owned(),
            };
            let booking = incident
                .reservation
                .as_ref()
                .map(|b| format!("#{} · {}", b.id, b.model))
                .unwrap_or_default();
            let credit = incident
                .credit
                .map(|c| money_string(i18n, Money::from_minor(c.minor), &currency))
                .unwrap_or_default();
            view! {
                <tr data-incident=incident.id>
                    <td><a href=format!("/incidents/{}", incident.id)>{format!("#{}", incident.id)}</a></td>
                    <td>{state_badge(i18n, incident.state)}</td>
                    <td>{date_minute(zone.local(incident.opened_at))}</td>
                    <td>{booking}</td>
                    <td>{what}</td>
                    <td class="num">{credit}</td>
                </tr>
            }
        })
        .collect_view();
    Either::Right(view! {
        <div class="table-scroll">
            <table class="incidents-table">
                <thead><tr>
                    <th scope="col">{t!(i18n, incidents_col_id)}</th>
                    <th scope="col">{t!(i18n, incidents_col_state)}</th>
                    <th scope="col">{t!(i18n, incidents_col_opened)}</th>
                    <th scope="col">{t!(i18n, incident_booking)}</th>
                    <th scope="col">{t!(i18n, incidents_col_what)}</th>
                    <th scope="col" class="num">{t!(i18n, incident_credit)}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
        <crate::components::table::PageLinks next on_later_page base="/incidents" />
    })
}
