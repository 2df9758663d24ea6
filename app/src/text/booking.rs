//! Booking texts the server puts together in the reader's language, so that the browser's
//! WebAssembly carries no translation code for them: the booking panel, the note after a team
//! booking, and how each reservation is paid.

use crate::backend::reservations::BookingNote;
use crate::domain::money::{Currency, Money};
use crate::domain::reservation::Reservation;
use crate::i18n::*;
use crate::text::format::{hours_text, money_string};
use crate::text::language::in_request_language;
use chrono::{DateTime, Utc};

/// The booking panel's texts in the request's language.
pub fn panel_texts(lead_minutes: i64) -> crate::domain::calendar::PanelTexts {
    use crate::domain::calendar::{PanelText, PanelTexts};
    use crate::i18n::*;
    in_request_language(|i18n| {
        let lead = hours_text(i18n, lead_minutes);
        let text = |key: PanelText| match key {
            PanelText::Title => t_string!(i18n, panel_title).to_string(),
            PanelText::Gpu => t_string!(i18n, panel_gpu).to_string(),
            PanelText::Window => t_string!(i18n, panel_window).to_string(),
            PanelText::Length => t_string!(i18n, panel_length).to_string(),
            PanelText::Share => t_string!(i18n, panel_share).to_string(),
            PanelText::Whole => t_string!(i18n, share_whole).to_string(),
            PanelText::Half => t_string!(i18n, share_half).to_string(),
            PanelText::Quarter => t_string!(i18n, share_quarter).to_string(),
            PanelText::Price => t_string!(i18n, panel_price).to_string(),
            PanelText::Book => t_string!(i18n, panel_book).to_string(),
            PanelText::Hint => t_string!(i18n, panel_hint).to_string(),
            PanelText::Start => t_string!(i18n, panel_start).to_string(),
            PanelText::End => t_string!(i18n, panel_end).to_string(),
            PanelText::OfferBook => t_string!(i18n, offer_book).to_string(),
            PanelText::FindTitle => t_string!(i18n, find_title).to_string(),
            PanelText::FindIntro => t_string!(i18n, find_intro).to_string(),
            PanelText::FindCount => t_string!(i18n, find_count).to_string(),
            PanelText::FindHours => t_string!(i18n, find_hours).to_string(),
            PanelText::FindSubmit => t_string!(i18n, find_submit).to_string(),
            PanelText::FindNone => t_string!(i18n, find_none).to_string(),
            PanelText::Model => t_string!(i18n, filter_model).to_string(),
            PanelText::ClashTitle => t_string!(i18n, clash_title).to_string(),
            PanelText::ClashSuggestion => t_string!(i18n, clash_suggestion).to_string(),
            PanelText::ClashNoSuggestion => t_string!(i18n, clash_no_suggestion).to_string(),
            PanelText::Payment => t_string!(i18n, panel_payment).to_string(),
            PanelText::PayNow => t_string!(i18n, panel_pay_now).to_string(),
            PanelText::PayLater => {
                t_string!(i18n, panel_pay_later, lead = lead.as_str()).to_string()
            }
            PanelText::BalanceAfter => t_string!(i18n, panel_balance_after).to_string(),
            PanelText::Short => t_string!(i18n, panel_short, missing = "{missing}").to_string(),
            PanelText::Wallet => t_string!(i18n, nav_wallet).to_string(),
            PanelText::BookedId => t_string!(i18n, panel_booked_id, id = "{id}").to_string(),
            PanelText::ClashBody => {
                t_string!(i18n, clash_body, what = "{what}", at = "{at}").to_string()
            }
            PanelText::BookFor => t_string!(i18n, panel_book_for).to_string(),
            PanelText::Personal => t_string!(i18n, panel_personal).to_string(),
            PanelText::Environment => t_string!(i18n, panel_environment).to_string(),
            PanelText::NoProfile => t_string!(i18n, panel_no_profile).to_string(),
            PanelText::Flexible => t_string!(i18n, panel_flexible).to_string(),
            PanelText::FlexibleHint => t_string!(i18n, panel_flexible_hint).to_string(),
            PanelText::WouldBorrow => t_string!(i18n, panel_would_borrow).to_string(),
            PanelText::PayWith => t_string!(i18n, panel_pay_with).to_string(),
            PanelText::Credits => t_string!(i18n, panel_credits).to_string(),
            PanelText::CardFollow => t_string!(i18n, panel_card_follow).to_string(),
        };
        PanelTexts(PanelText::ALL.into_iter().map(text).collect())
    })
}

/// "Follow its card payment", in the request's language.
pub fn card_follow_text() -> String {
    in_request_language(|i18n| t_string!(i18n, panel_card_follow).to_string())
}

/// `note` in the request's language; amounts in `currency`.
pub fn booking_note(note: &BookingNote, currency: &Currency) -> String {
    in_request_language(|i18n| match note {
        BookingNote::AwaitingApproval { until, zone } => {
            let when = crate::domain::time_text::date_minute(zone.local(*until));
            let zone = zone.name.clone();
            t_string!(i18n, booking_awaiting_approval, when, zone).to_string()
        }
        BookingNote::BudgetWarning {
            spent_minor,
            limit_minor,
            month,
        } => {
            let amount = |minor: i64| money_string(i18n, Money::from_minor(minor), currency);
            let (spent, limit) = (amount(*spent_minor), amount(*limit_minor));
            let month = month.clone();
            t_string!(i18n, booking_budget_warning, spent, limit, month).to_string()
        }
        BookingNote::PaidByCard { card, .. } => {
            let card = card.clone();
            t_string!(i18n, booking_paid_by_card, card).to_string()
        }
    })
}

/// What needs saying about how each reservation is paid, in the request's language: when a
/// pending one is charged, until when a due one can still be paid, why Berth released one.
pub fn payment_notes(
    list: &[Reservation],
    zone: &crate::domain::zone::ZoneOffsets,
    charge: &crate::domain::payment::ChargePolicy,
) -> Vec<(i64, String)> {
    use crate::domain::reservation::{PaymentStatus, ReleaseReason, ReservationStatus};
    use crate::i18n::*;
    let at = |when: DateTime<Utc>| crate::domain::time_text::date_minute(zone.local(when));
    // An offered window: its node, and when.
    let offered = |offer: &crate::domain::reservation::SlotOffer| {
        let when = format!("{} – {}", at(offer.window.start()), at(offer.window.end()));
        (offer.node_name.clone(), when)
    };
    in_request_language(|i18n| {
        list.iter()
            .filter_map(|r| {
                let note = match (r.released, r.status, r.payment_status) {
                    (Some(ReleaseReason::Unpaid), ..) => {
                        t_string!(i18n, reservations_released_unpaid).to_string()
                    }
                    (Some(ReleaseReason::Maintenance), ..) => {
                        t_string!(i18n, reservations_released_maintenance).to_string()
                    }
                    (Some(ReleaseReason::Retired), ..) => {
                        t_string!(i18n, reservations_released_retired).to_string()
                    }
                    (Some(ReleaseReason::Preempted), ..) => match r.displaced_offer.as_ref() {
                        Some(offer) => {
                            let (node, when) = offered(offer);
                            t_string!(i18n, reservations_released_preempted_offer, node, when)
                                .to_string()
                        }
                        None => t_string!(i18n, reservations_released_preempted).to_string(),
                    },
                    (Some(ReleaseReason::Rejected), ..) => {
                        t_string!(i18n, reservations_released_rejected).to_string()
                    }
                    (Some(ReleaseReason::ApprovalExpired), ..) => {
                        t_string!(i18n, reservations_released_approval_expired).to_string()
                    }
                    (Some(ReleaseReason::Idle), ..) => {
                        t_string!(i18n, reservations_released_idle).to_string()
                    }
                    (Some(ReleaseReason::GpuFailed), ..) => match r.displaced_offer.as_ref() {
                        Some(offer) => {
                            let (node, when) = offered(offer);
                            t_string!(i18n, reservations_released_gpu_failed_offer, node, when)
                                .to_string()
                        }
                        None => t_string!(i18n, reservations_released_gpu_failed).to_string(),
                    },
                    _ if r.moved_to.is_some() => {
                        let id = r.moved_to?;
                        t_string!(i18n, reservations_moved_to, id).to_string()
                    }
                    _ if r.moved_from.is_some() => {
                        let (id, cause) = r.moved_from?;
                        let cause = crate::text::failover::failure_cause(i18n, cause);
                        t_string!(i18n, reservations_moved_from, id, cause).to_string()
                    }
                    (None, ReservationStatus::Confirmed, PaymentStatus::AwaitingApproval) => {
                        let when = at(r.approval_expires_at?);
                        t_string!(i18n, reservations_awaiting_approval, when).to_string()
                    }
                    (None, ReservationStatus::Confirmed | ReservationStatus::Active, _)
                        if r.preemptible =>
                    {
                        t_string!(i18n, reservations_preemptible).to_string()
                    }
                    (None, ReservationStatus::Confirmed, PaymentStatus::Pending) => {
                        let when = at(r.charge_at?);
                        t_string!(i18n, reservations_charged_at, when).to_string()
                    }
                    (None, ReservationStatus::Confirmed, PaymentStatus::Due) => {
                        let when = at(charge.release_at(r.window.start()));
                        t_string!(i18n, reservations_payment_due, when).to_string()
                    }
                    _ => return None,
                };
                Some((r.id, note))
            })
            .collect()
    })
}
