//! A booking's move off a failed GPU in words.

use crate::domain::failover::FailureCause;
use crate::i18n::*;
use leptos_i18n::I18nContext;

/// Why a booking left its GPU, as the end of "node-a #1 …".
pub fn failure_cause(i18n: I18nContext<Locale>, cause: FailureCause) -> String {
    match cause {
        FailureCause::FellOffBus => t_string!(i18n, failover_cause_fell_off_bus),
        FailureCause::Missing => t_string!(i18n, failover_cause_missing),
        FailureCause::Retired => t_string!(i18n, failover_cause_retired),
        FailureCause::Maintenance => t_string!(i18n, failover_cause_maintenance),
    }
    .to_string()
}
