//! Berth's own reasons on wallet movements in words.

use crate::domain::ledger::BerthReason;
use crate::i18n::*;
use leptos_i18n::I18nContext;

/// `reason` in the reader's language.
pub fn berth_reason(i18n: I18nContext<Locale>, reason: &BerthReason) -> String {
    let card = |label: &str| {
        if label.is_empty() {
            t_string!(i18n, wallet_reason_card_gone).to_string()
        } else {
            label.to_owned()
        }
    };
    match reason {
        BerthReason::DemoCredits => t_string!(i18n, wallet_reason_demo_credits).to_string(),
        BerthReason::CardPayment {
            reservation,
            intent,
        } => t_string!(
            i18n,
            wallet_reason_card_payment,
            reservation = *reservation,
            intent = intent.clone()
        )
        .to_string(),
        BerthReason::CardTopUp { intent } => {
            t_string!(i18n, wallet_reason_card_top_up, intent = intent.clone()).to_string()
        }
        BerthReason::CardRefund { card: label, .. } => {
            t_string!(i18n, wallet_reason_card_refund, card = card(label)).to_string()
        }
        BerthReason::CardRefundRefused { card: label, why } => t_string!(
            i18n,
            wallet_reason_card_refund_refused,
            card = card(label),
            why = why.clone()
        )
        .to_string(),
        BerthReason::SlaCredit { incident } => {
            t_string!(i18n, wallet_reason_sla_credit, incident = *incident).to_string()
        }
    }
}
