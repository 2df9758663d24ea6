//! An incident in words: its states, what opened it, the diagnosis' causes, facts and actions,
//! and the SLA's causes, in the reader's language with times in the reader's zone.

use crate::domain::diagnosis::{Action, Cause, Fact};
use crate::domain::incident::{IncidentState, LossCause, Source, Trigger};
use crate::domain::time_text::date_second;
use crate::domain::zone::ZoneOffsets;
use crate::i18n::*;
use leptos_i18n::I18nContext;

/// The name of `state`.
pub fn state_name(i18n: I18nContext<Locale>, state: IncidentState) -> String {
    match state {
        IncidentState::Open => t_string!(i18n, incident_state_open),
        IncidentState::Acknowledged => t_string!(i18n, incident_state_acknowledged),
        IncidentState::Diagnosed => t_string!(i18n, incident_state_diagnosed),
        IncidentState::Resolved => t_string!(i18n, incident_state_resolved),
        IncidentState::Rejected => t_string!(i18n, incident_state_rejected),
    }
    .to_string()
}

/// What made Berth open an incident.
pub fn trigger_name(i18n: I18nContext<Locale>, trigger: Trigger) -> String {
    match trigger {
        Trigger::Xid79 => t_string!(i18n, incident_trigger_xid_79),
        Trigger::GpuGone => t_string!(i18n, incident_trigger_gpu_gone),
        Trigger::NodeSilent => t_string!(i18n, incident_trigger_node_silent),
    }
    .to_string()
}

/// Who opened an incident.
pub fn source_name(i18n: I18nContext<Locale>, source: Source) -> String {
    match source {
        Source::User => t_string!(i18n, incident_source_user),
        Source::Admin => t_string!(i18n, incident_source_admin),
        Source::Agent => t_string!(i18n, incident_source_agent),
    }
    .to_string()
}

/// A hypothesis' cause.
pub fn cause_name(i18n: I18nContext<Locale>, cause: Cause) -> String {
    match cause {
        Cause::FellOffBus => t_string!(i18n, cause_fell_off_bus),
        Cause::GpuGone => t_string!(i18n, cause_gpu_gone),
        Cause::DoubleBitEcc => t_string!(i18n, cause_double_bit_ecc),
        Cause::NeedsReset => t_string!(i18n, cause_needs_reset),
        Cause::NvLink => t_string!(i18n, cause_nv_link),
        Cause::DriverRecovery => t_string!(i18n, cause_driver_recovery),
        Cause::AgentSilent => t_string!(i18n, cause_agent_silent),
        Cause::Thermal => t_string!(i18n, cause_thermal),
        Cause::Power => t_string!(i18n, cause_power),
        Cause::EccRising => t_string!(i18n, cause_ecc_rising),
        Cause::MemoryExhausted => t_string!(i18n, cause_memory_exhausted),
        Cause::SharedGpu => t_string!(i18n, cause_shared_gpu),
        Cause::Application => t_string!(i18n, cause_application),
        Cause::AdminChange => t_string!(i18n, cause_admin_change),
        Cause::UnknownXid => t_string!(i18n, cause_unknown_xid),
    }
    .to_string()
}

/// What a hypothesis recommends.
pub fn action_text(i18n: I18nContext<Locale>, action: Action) -> String {
    match action {
        Action::RebootHost => t_string!(i18n, action_reboot_host),
        Action::ResetGpu => t_string!(i18n, action_reset_gpu),
        Action::ServiceGpu => t_string!(i18n, action_service_gpu),
        Action::CheckNvLink => t_string!(i18n, action_check_nv_link),
        Action::FollowDriverAction => t_string!(i18n, action_follow_driver_action),
        Action::CheckNode => t_string!(i18n, action_check_node),
        Action::CheckCooling => t_string!(i18n, action_check_cooling),
        Action::CheckPower => t_string!(i18n, action_check_power),
        Action::ReduceMemory => t_string!(i18n, action_reduce_memory),
        Action::BookWholeGpu => t_string!(i18n, action_book_whole_gpu),
        Action::RestartApplication => t_string!(i18n, action_restart_application),
        Action::ReviewChange => t_string!(i18n, action_review_change),
        Action::LookUpXid => t_string!(i18n, action_look_up_xid),
    }
    .to_string()
}

/// A fact a hypothesis cites.
pub fn fact_text(i18n: I18nContext<Locale>, fact: &Fact, zone: &ZoneOffsets) -> String {
    let at = |when: chrono::DateTime<chrono::Utc>| date_second(zone.local(when));
    match fact {
        Fact::Xid {
            gpu,
            at: when,
            code,
        } => {
            let (gpu, when, code) = (gpu.clone(), at(*when), *code);
            t_string!(i18n, fact_xid, gpu, code, at = when).to_string()
        }
        Fact::Throttled {
            gpu,
            reasons,
            minutes,
            from,
            to,
            max_temperature_c,
            min_sm_clock_mhz,
        } => {
            let (gpu, reasons, minutes) = (gpu.clone(), reasons.join(", "), *minutes);
            let (from, to) = (at(*from), at(*to));
            let mut text =
                t_string!(i18n, fact_throttled, gpu, reasons, minutes, from, to).to_string();
            if let Some(temperature) = max_temperature_c {
                let temperature = *temperature;
                text.push(' ');
                text.push_str(&t_string!(i18n, fact_throttled_temperature, temperature));
            }
            if let Some(clock) = min_sm_clock_mhz {
                let clock = *clock;
                text.push(' ');
                text.push_str(&t_string!(i18n, fact_throttled_clock, clock));
            }
            text
        }
        Fact::EccRose {
            gpu,
            corrected,
            uncorrected,
        } => {
            let (gpu, corrected, uncorrected) = (gpu.clone(), *corrected, *uncorrected);
            t_string!(i18n, fact_ecc_rose, gpu, corrected, uncorrected).to_string()
        }
        Fact::AgentSilent { from, to } => {
            let (from, to) = (at(*from), at(*to));
            t_string!(i18n, fact_agent_silent, from, to).to_string()
        }
        Fact::MemoryFull {
            gpu,
            at: when,
            used_mib,
            total_mib,
        } => {
            let (gpu, when, used, total) = (gpu.clone(), at(*when), *used_mib, *total_mib);
            t_string!(i18n, fact_memory_full, gpu, used, total, at = when).to_string()
        }
        Fact::SharedWith {
            gpu,
            quarters,
            minutes,
        } => {
            let (gpu, quarters, minutes) = (gpu.clone(), *quarters, *minutes);
            t_string!(i18n, fact_shared_with, gpu, quarters, minutes).to_string()
        }
        Fact::AdminChange {
            at: when,
            action,
            target,
        } => {
            let (when, action, target) = (at(*when), action.clone(), target.clone());
            t_string!(i18n, fact_admin_change, action, target, at = when).to_string()
        }
        Fact::GpuGone { gpu, at: when } => {
            let (gpu, when) = (gpu.clone(), at(*when));
            t_string!(i18n, fact_gpu_gone, gpu, at = when).to_string()
        }
    }
}

/// Why a GPU was unavailable, for the SLA.
pub fn loss_name(i18n: I18nContext<Locale>, cause: LossCause) -> String {
    match cause {
        LossCause::FellOffBus => t_string!(i18n, loss_fell_off_bus),
        LossCause::GpuGone => t_string!(i18n, loss_gpu_gone),
        LossCause::NodeSilent => t_string!(i18n, loss_node_silent),
        LossCause::Maintenance => t_string!(i18n, loss_maintenance),
        LossCause::Throttled => t_string!(i18n, loss_throttled),
    }
    .to_string()
}
