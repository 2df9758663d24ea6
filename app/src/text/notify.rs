//! A notice put into words: its title and lines, in the reader's language, with times in the
//! reader's zone and amounts in the portal's currency.

use crate::domain::money::{Currency, Money};
use crate::domain::notify::{EventKind, Notice};
use crate::domain::reservation::ReleaseReason;
use crate::domain::schedule::Share;
use crate::domain::time_text::date_minute;
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use crate::text::format::money_string;
use chrono::{DateTime, Utc};
use leptos_i18n::I18nContext;

/// The title of a notice of `kind`.
pub fn title(i18n: I18nContext<Locale>, kind: EventKind) -> String {
    match kind {
        EventKind::BookingConfirmed => t_string!(i18n, notice_booking_confirmed),
        EventKind::BookingCancelled => t_string!(i18n, notice_booking_cancelled),
        EventKind::BookingReleased => t_string!(i18n, notice_booking_released),
        EventKind::Displaced => t_string!(i18n, notice_displaced),
        EventKind::StartingSoon => t_string!(i18n, notice_starting_soon),
        EventKind::EndingSoon => t_string!(i18n, notice_ending_soon),
        EventKind::PaymentCharged => t_string!(i18n, notice_payment_charged),
        EventKind::PaymentDue => t_string!(i18n, notice_payment_due),
        EventKind::ApprovalRequested => t_string!(i18n, notice_approval_requested),
        EventKind::ApprovalApproved => t_string!(i18n, notice_approval_approved),
        EventKind::ApprovalRejected => t_string!(i18n, notice_approval_rejected),
        EventKind::ApprovalExpired => t_string!(i18n, notice_approval_expired),
        EventKind::CreditsAdded => t_string!(i18n, notice_credits_added),
        EventKind::WebhookDisabled => t_string!(i18n, notice_webhook_disabled),
        EventKind::BudgetWarning => t_string!(i18n, notice_budget_warning),
        EventKind::BudgetReached => t_string!(i18n, notice_budget_reached),
        EventKind::GpuProblem => t_string!(i18n, notice_gpu_problem),
        EventKind::NodeSilent => t_string!(i18n, notice_node_silent),
        EventKind::LeaseReady => t_string!(i18n, notice_lease_ready),
        EventKind::LeaseEnded => t_string!(i18n, notice_lease_ended),
        EventKind::EnvironmentFailed => t_string!(i18n, notice_environment_failed),
        EventKind::WorkspaceNotSaved => t_string!(i18n, notice_workspace_not_saved),
        EventKind::BookingMoved => t_string!(i18n, notice_booking_moved),
        EventKind::IdleWarning => t_string!(i18n, notice_idle_warning),
        EventKind::WatchOffer => t_string!(i18n, notice_watch_offer),
        EventKind::StartedEarly => t_string!(i18n, notice_started_early),
        EventKind::Incident => t_string!(i18n, notice_incident),
        EventKind::Receipt => t_string!(i18n, notice_receipt),
        EventKind::PaymentMismatch => t_string!(i18n, notice_payment_mismatch),
    }
    .to_string()
}

/// What a notice of `kind` says, line by line.
pub fn lines(
    i18n: I18nContext<Locale>,
    kind: EventKind,
    notice: &Notice,
    zone: &ZoneOffsets,
    currency: &Currency,
) -> Vec<String> {
    let at = |when: DateTime<Utc>| date_minute(zone.local(when));
    let amount = |minor: i64| money_string(i18n, Money::from_minor(minor), currency);
    let mut lines = Vec::new();
    if let Some(r) = &notice.reservation {
        let share = match r.share {
            Share::Whole => t_string!(i18n, share_whole),
            Share::Half => t_string!(i18n, share_half),
            Share::Quarter => t_string!(i18n, share_quarter),
        }
        .to_string();
        let (id, gpus, model, node) = (r.id, r.gpus, r.model.clone(), r.node.clone());
        let (start, end) = (at(r.window.start()), at(r.window.end()));
        lines.push(
            t_string!(
                i18n,
                notice_line_reservation,
                id,
                gpus,
                model,
                share,
                node,
                start,
                end
            )
            .to_string(),
        );
    }
    let until = notice.until.map(at).unwrap_or_default();
    let money = notice.amount_minor.map(amount).unwrap_or_default();
    match kind {
        EventKind::BookingConfirmed if notice.until.is_some() => {
            lines.push(t_string!(i18n, notice_line_awaiting, until).to_string());
        }
        EventKind::ApprovalRequested => {
            let owner = notice
                .reservation
                .as_ref()
                .map(|r| r.owner.clone())
                .unwrap_or_default();
            let team = notice
                .reservation
                .as_ref()
                .and_then(|r| r.team.clone())
                .unwrap_or_default();
            lines.push(t_string!(i18n, notice_line_requested, owner, team, until).to_string());
        }
        EventKind::StartingSoon => {
            if let Some(r) = &notice.reservation {
                let start = at(r.window.start());
                lines.push(t_string!(i18n, notice_line_starting, start).to_string());
            }
        }
        EventKind::EndingSoon => {
            if let Some(r) = &notice.reservation {
                let end = at(r.window.end());
                lines.push(t_string!(i18n, notice_line_ending, end).to_string());
            }
        }
        EventKind::PaymentCharged => {
            lines.push(t_string!(i18n, notice_line_charged, amount = money).to_string());
        }
        EventKind::PaymentDue => {
            lines.push(t_string!(i18n, notice_line_due, amount = money, until).to_string());
        }
        EventKind::CreditsAdded => {
            lines.push(t_string!(i18n, notice_line_credits, amount = money).to_string());
        }
        EventKind::BudgetWarning | EventKind::BudgetReached => {
            let team = notice
                .reservation
                .as_ref()
                .and_then(|r| r.team.clone())
                .unwrap_or_default();
            let limit = notice.limit_minor.map(amount).unwrap_or_default();
            lines.push(t_string!(i18n, notice_line_budget, team, spent = money, limit).to_string());
        }
        EventKind::GpuProblem => match notice.problem.clone() {
            Some(crate::domain::notify::GpuProblem::Xid { gpu, code }) => {
                lines.push(t_string!(i18n, notice_line_xid, gpu, code).to_string());
            }
            Some(crate::domain::notify::GpuProblem::Missing { gpu }) => {
                lines.push(t_string!(i18n, notice_line_gpu_missing, gpu).to_string());
            }
            Some(crate::domain::notify::GpuProblem::Intruder { gpu, user, pid }) => {
                lines.push(t_string!(i18n, notice_line_intruder, gpu, user, pid).to_string());
            }
            None => {}
        },
        EventKind::LeaseReady => {
            let connect = notice.target.clone().unwrap_or_default();
            lines.push(t_string!(i18n, notice_line_lease_ready, connect).to_string());
        }
        EventKind::LeaseEnded => {
            lines.push(t_string!(i18n, notice_line_lease_ended).to_string());
        }
        EventKind::EnvironmentFailed => {
            let profile = notice.target.clone().unwrap_or_default();
            lines.push(t_string!(i18n, notice_line_environment_failed, profile).to_string());
            if let Some(log) = &notice.error {
                lines.push(log.clone());
            }
        }
        EventKind::WorkspaceNotSaved => {
            lines.push(t_string!(i18n, notice_line_workspace_not_saved).to_string());
            if let (Some(mib), Some(quota_mib)) = (notice.amount_minor, notice.limit_minor) {
                lines.push(
                    t_string!(i18n, problem_workspace_over_quota, mib, quota_mib).to_string(),
                );
            } else if let Some(why) = &notice.error {
                lines.push(why.clone());
            }
        }
        EventKind::BookingMoved => {
            if let Some(moved) = &notice.moved {
                let failed = moved.failed.join(", ");
                let cause = crate::text::failover::failure_cause(i18n, moved.cause);
                let from = at(moved.from);
                let was = moved.from_reservation;
                lines
                    .push(t_string!(i18n, notice_line_moved, failed, cause, from, was).to_string());
            }
            let connect = notice.target.clone().unwrap_or_default();
            lines.push(t_string!(i18n, notice_line_moved_connect, connect).to_string());
            if notice.amount_minor.is_some() {
                lines.push(t_string!(i18n, notice_line_moved_refund, amount = money).to_string());
            }
        }
        EventKind::IdleWarning => {
            if let Some(idle) = &notice.idle {
                let (threshold, since) = (idle.threshold_percent, at(idle.since));
                let line = match idle.action {
                    crate::domain::reclaim::IdleAction::Release => {
                        t_string!(i18n, notice_line_idle_release, threshold, since, until)
                            .to_string()
                    }
                    _ => t_string!(i18n, notice_line_idle_warn, threshold, since).to_string(),
                };
                lines.push(line);
            }
        }
        EventKind::WatchOffer => {
            if let Some(offer) = &notice.offer {
                let (gpus, model) = (offer.gpu_ids.len(), offer.model.clone());
                lines
                    .push(t_string!(i18n, notice_line_watch_offer, gpus, model, until).to_string());
            }
        }
        EventKind::StartedEarly => {
            if let (Some(r), Some(was)) = (&notice.reservation, notice.was_start) {
                let (start, was) = (at(r.window.start()), at(was));
                lines.push(t_string!(i18n, notice_line_started_early, start, was).to_string());
            }
        }
        EventKind::Incident => {
            if let Some(incident) = &notice.incident {
                let id = incident.id;
                let state = crate::text::incident::state_name(i18n, incident.state);
                let line = match incident.change {
                    crate::domain::notify::IncidentChange::Opened => match incident.trigger {
                        Some(trigger) => {
                            let why = crate::text::incident::trigger_name(i18n, trigger);
                            t_string!(i18n, notice_line_incident_opened_by_berth, id, why)
                                .to_string()
                        }
                        None => t_string!(i18n, notice_line_incident_opened, id).to_string(),
                    },
                    crate::domain::notify::IncidentChange::Moved => {
                        t_string!(i18n, notice_line_incident_moved, id, state).to_string()
                    }
                    crate::domain::notify::IncidentChange::Reply => {
                        t_string!(i18n, notice_line_incident_reply, id).to_string()
                    }
                    crate::domain::notify::IncidentChange::Credited => t_string!(
                        i18n,
                        notice_line_incident_credited,
                        id,
                        amount = money.clone()
                    )
                    .to_string(),
                };
                lines.push(line);
            }
        }
        EventKind::Receipt => {
            if let Some(receipt) = &notice.receipt {
                let (card, reference) = (receipt.card.clone(), receipt.reference.clone());
                let line = match receipt.what.as_str() {
                    "refund" => t_string!(i18n, notice_line_receipt_refund, amount = money, card),
                    "booking" => {
                        t_string!(i18n, notice_line_receipt_booking, amount = money, card)
                    }
                    _ => t_string!(i18n, notice_line_receipt_top_up, amount = money, card),
                };
                lines.push(line.to_string());
                lines.push(t_string!(i18n, notice_line_receipt_reference, reference).to_string());
            }
        }
        EventKind::PaymentMismatch => {
            let what = notice.target.clone().unwrap_or_default();
            let detail = notice.error.clone().unwrap_or_default();
            lines.push(t_string!(i18n, notice_line_payment_mismatch, what, detail).to_string());
        }
        EventKind::NodeSilent => {
            let node = notice.target.clone().unwrap_or_default();
            lines.push(t_string!(i18n, notice_line_node_silent, node, since = until).to_string());
        }
        EventKind::WebhookDisabled => {
            let url = notice.target.clone().unwrap_or_default();
            let error = notice.error.clone().unwrap_or_default();
            let failures = crate::domain::notify::WEBHOOK_FAILURES_TO_DISABLE;
            lines.push(t_string!(i18n, notice_line_webhook, url, failures, error).to_string());
        }
        EventKind::BookingReleased | EventKind::Displaced | EventKind::ApprovalExpired => {
            let reason = match notice.reason {
                Some(ReleaseReason::Unpaid) => t_string!(i18n, reservations_released_unpaid),
                Some(ReleaseReason::Maintenance) => {
                    t_string!(i18n, reservations_released_maintenance)
                }
                Some(ReleaseReason::Retired) => t_string!(i18n, reservations_released_retired),
                Some(ReleaseReason::Preempted) => {
                    t_string!(i18n, reservations_released_preempted)
                }
                Some(ReleaseReason::Rejected) => t_string!(i18n, reservations_released_rejected),
                Some(ReleaseReason::GpuFailed) => {
                    t_string!(i18n, reservations_released_gpu_failed)
                }
                Some(ReleaseReason::Idle) => t_string!(i18n, reservations_released_idle),
                Some(ReleaseReason::ApprovalExpired) | None => {
                    t_string!(i18n, reservations_released_approval_expired)
                }
            };
            lines.push(reason.to_string());
        }
        EventKind::BookingConfirmed
        | EventKind::BookingCancelled
        | EventKind::ApprovalApproved
        | EventKind::ApprovalRejected => {}
    }
    let refunded = matches!(
        kind,
        EventKind::BookingCancelled | EventKind::BookingReleased | EventKind::Displaced
    );
    if refunded && let Some(refund) = notice.amount_minor {
        let amount = amount(refund);
        lines.push(t_string!(i18n, notice_line_refund, amount).to_string());
    }
    if let Some(offer) = &notice.offer {
        let node = offer.node_name.clone();
        let (start, end) = (at(offer.window.start()), at(offer.window.end()));
        lines.push(t_string!(i18n, notice_line_offer, node, start, end).to_string());
    }
    if let Some(name) = notice.by.clone() {
        lines.push(t_string!(i18n, notice_line_by, name).to_string());
    }
    lines
}
