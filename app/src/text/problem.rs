//! Problems (why a request was refused) and charge modes in the reader's language.

use crate::domain::problem::{Problem, list_ids};
use crate::i18n::*;
use crate::text::format::plural_one;
#[cfg(feature = "ssr")]
use leptos::prelude::*;

/// `problem` in the current language.
pub fn problem_text(i18n: leptos_i18n::I18nContext<Locale>, problem: &Problem) -> String {
    match problem.clone() {
        Problem::EndNotAfterStart => t_string!(i18n, problem_end_not_after_start).to_string(),
        Problem::OffGrid { .. } => t_string!(i18n, problem_off_grid).to_string(),
        Problem::TooShort { minutes } => t_string!(i18n, problem_too_short, minutes).to_string(),
        Problem::TooLong { days } => t_string!(i18n, problem_too_long, days).to_string(),
        Problem::InThePast => t_string!(i18n, problem_in_the_past).to_string(),
        Problem::TooFarAhead { days } => t_string!(i18n, problem_too_far_ahead, days).to_string(),
        Problem::BeyondHorizon { weeks } => {
            t_string!(i18n, problem_beyond_horizon, weeks).to_string()
        }
        Problem::AlreadyOver => t_string!(i18n, problem_already_over).to_string(),
        Problem::NotATime { raw } => t_string!(i18n, problem_not_a_time, raw).to_string(),
        Problem::NotADateTime { raw } => t_string!(i18n, problem_not_a_date_time, raw).to_string(),
        Problem::NotADate { raw } => t_string!(i18n, problem_not_a_date, raw).to_string(),
        Problem::DateOutOfRange {
            first_year,
            last_year,
        } => t_string!(i18n, problem_date_out_of_range, first_year, last_year).to_string(),
        Problem::NoSuchLocalTime { raw, zone } => {
            t_string!(i18n, problem_no_such_local_time, raw, zone).to_string()
        }
        Problem::UnknownZone { raw } => t_string!(i18n, problem_unknown_zone, raw).to_string(),
        Problem::UnknownNoticeKind { raw } => {
            t_string!(i18n, problem_unknown_notice_kind, raw).to_string()
        }
        Problem::UnknownDeliveryStatus { raw } => {
            t_string!(i18n, problem_unknown_delivery_status, raw).to_string()
        }
        Problem::BadWebhookUrl { raw } => t_string!(i18n, problem_bad_webhook_url, raw).to_string(),
        Problem::BadLogin { raw } => t_string!(i18n, problem_bad_login, raw).to_string(),
        Problem::ReservedLogin { raw } => t_string!(i18n, problem_reserved_login, raw).to_string(),
        Problem::LoginTaken { raw } => t_string!(i18n, problem_login_taken, raw).to_string(),
        Problem::BadSshKey => t_string!(i18n, problem_bad_ssh_key).to_string(),
        Problem::WeakSshKey { bits, min } => {
            t_string!(i18n, problem_weak_ssh_key, bits, min).to_string()
        }
        Problem::SshKeyTwice => t_string!(i18n, problem_ssh_key_twice).to_string(),
        Problem::BadVariable { raw } => t_string!(i18n, problem_bad_variable, raw).to_string(),
        Problem::ReservedVariable { name } => {
            t_string!(i18n, problem_reserved_variable, name).to_string()
        }
        Problem::ProfileTwice { raw } => t_string!(i18n, problem_profile_twice, raw).to_string(),
        Problem::BadPythonVersion { raw } => {
            t_string!(i18n, problem_bad_python_version, raw).to_string()
        }
        Problem::BadRequirement { raw } => {
            t_string!(i18n, problem_bad_requirement, raw).to_string()
        }
        Problem::BadDotfilePath { raw } => {
            t_string!(i18n, problem_bad_dotfile_path, raw).to_string()
        }
        Problem::ProfileTooLarge { max_kib } => {
            t_string!(i18n, problem_profile_too_large, max_kib).to_string()
        }
        Problem::ProfileName { max } => t_string!(i18n, problem_profile_name, max).to_string(),
        Problem::BadManifest { detail } => {
            t_string!(i18n, problem_bad_manifest, detail).to_string()
        }
        Problem::WorkspaceOverQuota { mib, quota_mib } => {
            t_string!(i18n, problem_workspace_over_quota, mib, quota_mib).to_string()
        }
        Problem::ChunkMismatch { hash } => {
            t_string!(i18n, problem_chunk_mismatch, hash).to_string()
        }
        Problem::WorkspaceSavePending { reservation } => {
            t_string!(i18n, problem_workspace_save_pending, reservation).to_string()
        }
        Problem::ChunkMissing { hash } => t_string!(i18n, problem_chunk_missing, hash).to_string(),
        Problem::UnknownIntruderPolicy { raw } => {
            t_string!(i18n, problem_unknown_intruder_policy, raw).to_string()
        }
        Problem::BadShare => t_string!(i18n, problem_bad_share).to_string(),
        Problem::NotShareable { gpu } => t_string!(i18n, problem_not_shareable, gpu).to_string(),
        Problem::NoGpu => t_string!(i18n, problem_no_gpu).to_string(),
        Problem::GpuTwice => t_string!(i18n, problem_gpu_twice).to_string(),
        Problem::TooManyGpus { max } => t_string!(i18n, problem_too_many_gpus, max).to_string(),
        Problem::NoSuchGpu { id } => t_string!(i18n, problem_no_such_gpu, id).to_string(),
        Problem::MixedGpus => t_string!(i18n, problem_mixed_gpus).to_string(),
        Problem::GpusOrModel => t_string!(i18n, problem_gpus_or_model).to_string(),
        Problem::NoModel => t_string!(i18n, problem_no_model).to_string(),
        Problem::NoGpuOfModel { model } => {
            t_string!(i18n, problem_no_gpu_of_model, model).to_string()
        }
        Problem::CountRange { max } => t_string!(i18n, problem_count_range, max).to_string(),
        Problem::BadLength { days } => t_string!(i18n, problem_bad_length, days).to_string(),
        Problem::ToNotAfterFrom => t_string!(i18n, problem_to_not_after_from).to_string(),
        Problem::Reason { max } => t_string!(i18n, problem_reason, max).to_string(),
        Problem::IncidentStep { state, .. } => {
            let state = crate::domain::incident::IncidentState::parse(state.as_str()).map_or_else(
                || state.clone(),
                |s| crate::text::incident::state_name(i18n, s),
            );
            t_string!(i18n, problem_incident_step, state).to_string()
        }
        Problem::NotInDiagnosis => t_string!(i18n, problem_not_in_diagnosis).to_string(),
        Problem::AlreadyReopened => t_string!(i18n, problem_already_reopened).to_string(),
        Problem::TextLength { max } => t_string!(i18n, problem_text_length, max).to_string(),
        Problem::TooLongText { max } => t_string!(i18n, problem_too_long_text, max).to_string(),
        Problem::ControlCharacters => t_string!(i18n, problem_control_characters).to_string(),
        Problem::InTheFuture => t_string!(i18n, problem_in_the_future).to_string(),
        Problem::GpuOfAnotherNode { uuid } => {
            t_string!(i18n, problem_gpu_of_another_node, uuid).to_string()
        }
        Problem::IncidentTarget => t_string!(i18n, problem_incident_target).to_string(),
        Problem::CardsOff => t_string!(i18n, problem_cards_off).to_string(),
        Problem::CardPersonalOnly => t_string!(i18n, problem_card_personal_only).to_string(),
        Problem::NothingDue { id } => t_string!(i18n, problem_nothing_due, id).to_string(),
        Problem::TopUpAmount { min, max } => {
            t_string!(i18n, problem_top_up_amount, min, max).to_string()
        }
        Problem::CardRefused { reason } => {
            t_string!(i18n, problem_card_refused, reason).to_string()
        }
        Problem::CardSetupUnfinished { status } => {
            t_string!(i18n, problem_card_setup_unfinished, status).to_string()
        }
        Problem::WebhookSignature { why } => {
            t_string!(i18n, problem_webhook_signature, why).to_string()
        }
        Problem::NoBookingOnGpu => t_string!(i18n, problem_no_booking_on_gpu).to_string(),
        Problem::OutsideBooking => t_string!(i18n, problem_outside_booking).to_string(),
        Problem::Name { max } => t_string!(i18n, problem_name, max).to_string(),
        Problem::NoTarget => t_string!(i18n, problem_no_target).to_string(),
        Problem::UnknownAccount { raw } => {
            t_string!(i18n, problem_unknown_account, raw).to_string()
        }
        Problem::Unreadable { detail } => t_string!(i18n, problem_unreadable, detail).to_string(),
        Problem::GpuUnavailable { gpu, status } => {
            let status = match status.as_str() {
                "maintenance" => t_string!(i18n, status_maintenance).to_string(),
                "retired" => t_string!(i18n, status_retired).to_string(),
                "missing" => t_string!(i18n, status_missing).to_string(),
                "pending" => t_string!(i18n, status_pending).to_string(),
                _ => status,
            }
            .to_lowercase();
            t_string!(i18n, problem_gpu_unavailable, gpu, status).to_string()
        }
        Problem::FullyBooked => t_string!(i18n, problem_fully_booked).to_string(),
        Problem::AlreadyCancelled { id } => {
            t_string!(i18n, problem_already_cancelled, id).to_string()
        }
        Problem::AlreadyStarted { id } => t_string!(i18n, problem_already_started, id).to_string(),
        Problem::NotRunning { id } => t_string!(i18n, problem_not_running, id).to_string(),
        Problem::AlreadySnoozed { id } => t_string!(i18n, problem_already_snoozed, id).to_string(),
        Problem::WatchSpan => t_string!(i18n, problem_watch_span).to_string(),
        Problem::TooManyWatches { max } => {
            t_string!(i18n, problem_too_many_watches, max).to_string()
        }
        Problem::WatchClosed { id } => t_string!(i18n, problem_watch_closed, id).to_string(),
        Problem::NoWindowHeld { id } => t_string!(i18n, problem_no_window_held, id).to_string(),
        Problem::WindowTaken => t_string!(i18n, problem_window_taken).to_string(),
        Problem::HeldForWatchers { until } => {
            let until = crate::domain::time_text::date_minute(until.naive_utc());
            t_string!(i18n, problem_held_for_watchers, until).to_string()
        }
        Problem::StartEarlyNotPreemptible => {
            t_string!(i18n, problem_start_early_not_preemptible).to_string()
        }
        Problem::MemoryFilter { max } => t_string!(i18n, problem_memory_filter, max).to_string(),
        Problem::IdleThreshold => t_string!(i18n, problem_idle_threshold).to_string(),
        Problem::IdleWindow => t_string!(i18n, problem_idle_window).to_string(),
        Problem::IdleWarnings => t_string!(i18n, problem_idle_warnings).to_string(),
        Problem::IdleRefund => t_string!(i18n, problem_idle_refund).to_string(),
        Problem::IdleExemptions => t_string!(i18n, problem_idle_exemptions).to_string(),
        Problem::MaintenanceOver { id } => {
            t_string!(i18n, problem_maintenance_over, id).to_string()
        }
        Problem::OutOfRange { min, max } => {
            t_string!(i18n, problem_out_of_range, min, max).to_string()
        }
        Problem::TooMany { max } => t_string!(i18n, problem_too_many, max).to_string(),
        Problem::BadUuid => t_string!(i18n, problem_bad_uuid).to_string(),
        Problem::BadCursor => t_string!(i18n, problem_bad_cursor).to_string(),
        Problem::OutsideWindow { hours } => {
            t_string!(i18n, problem_outside_window, hours).to_string()
        }
        Problem::BadEventKind => t_string!(i18n, problem_bad_event_kind).to_string(),
        Problem::UnregisteredGpu { uuid } => {
            t_string!(i18n, problem_unregistered_gpu, uuid).to_string()
        }
        Problem::RangeTooLong { days } => t_string!(i18n, problem_range_too_long, days).to_string(),
        Problem::NotOneOf { allowed } => t_string!(i18n, problem_not_one_of, allowed).to_string(),
        Problem::NotAnEmail { raw } => t_string!(i18n, problem_not_an_email, raw).to_string(),
        Problem::BadIdempotencyKey { max } => {
            t_string!(i18n, problem_bad_idempotency_key, max).to_string()
        }
        Problem::IdempotencyKeyReused => {
            t_string!(i18n, problem_idempotency_key_reused).to_string()
        }
        Problem::NotAnAmount { raw, decimals } => {
            t_string!(i18n, problem_not_an_amount, raw, decimals).to_string()
        }
        Problem::ZeroAmount => t_string!(i18n, problem_zero_amount).to_string(),
        Problem::NotMinorUnits { raw } => t_string!(i18n, problem_not_minor_units, raw).to_string(),
        Problem::InsufficientFunds {
            missing_minor,
            missing,
        } => {
            let missing = local_amount(i18n, missing_minor).unwrap_or(missing);
            t_string!(i18n, problem_insufficient_funds, missing).to_string()
        }
        Problem::UnknownChargeMode { raw } => {
            t_string!(i18n, problem_unknown_charge_mode, raw).to_string()
        }
        Problem::ChargeModeNotAllowed { mode } => {
            let mode = charge_mode_text(i18n, &mode);
            t_string!(i18n, problem_charge_mode_not_allowed, mode).to_string()
        }
        Problem::UnknownTeamRole { raw } => {
            t_string!(i18n, problem_unknown_team_role, raw).to_string()
        }
        Problem::AlreadyMember { email } => {
            t_string!(i18n, problem_already_member, email).to_string()
        }
        Problem::AlreadyInvited { email } => {
            t_string!(i18n, problem_already_invited, email).to_string()
        }
        Problem::LastAdmin => t_string!(i18n, problem_last_admin).to_string(),
        Problem::OverBudget {
            spent_minor,
            limit_minor,
            price_minor,
            spent,
            limit,
            price,
        } => {
            let spent = local_amount(i18n, spent_minor).unwrap_or(spent);
            let limit = local_amount(i18n, limit_minor).unwrap_or(limit);
            let price = local_amount(i18n, price_minor).unwrap_or(price);
            t_string!(i18n, problem_over_budget, spent, limit, price).to_string()
        }
        Problem::PriorityNotAllowed { asked, most } => {
            t_string!(i18n, problem_priority_not_allowed, asked, most).to_string()
        }
        Problem::OverQuotaGpus {
            model,
            used,
            asked,
            limit,
        } => t_string!(i18n, problem_over_quota_gpus, model, used, asked, limit).to_string(),
        Problem::OverQuotaHours {
            model,
            used,
            asked,
            limit,
        } => t_string!(i18n, problem_over_quota_hours, model, used, asked, limit).to_string(),
        Problem::NotAwaitingApproval { id } => {
            t_string!(i18n, problem_not_awaiting_approval, id).to_string()
        }
        Problem::TeamNameTaken { name } => {
            t_string!(i18n, problem_team_name_taken, name).to_string()
        }
        Problem::ReservationsInTheWay { ids } => {
            let count = ids.len();
            let ids = list_ids(&ids);
            if plural_one(i18n, count) {
                t_string!(i18n, problem_reservations_in_the_way_singular, ids).to_string()
            } else {
                t_string!(i18n, problem_reservations_in_the_way_plural, ids).to_string()
            }
        }
    }
}

/// A charge mode's name (`at_booking`, `before_start`) in the current language.
pub fn charge_mode_text(i18n: leptos_i18n::I18nContext<Locale>, mode: &str) -> String {
    match crate::domain::payment::ChargeMode::parse(mode) {
        Some(crate::domain::payment::ChargeMode::AtBooking) => {
            t_string!(i18n, charge_mode_at_booking).to_string()
        }
        Some(crate::domain::payment::ChargeMode::BeforeStart) => {
            t_string!(i18n, charge_mode_before_start).to_string()
        }
        None => mode.to_owned(),
    }
}

/// `minor` units of the portal's currency written for the current language (`R$ 12,50`), when
/// the portal's settings are at hand (on the server).
#[cfg(feature = "ssr")]
fn local_amount(i18n: leptos_i18n::I18nContext<Locale>, minor: i64) -> Option<String> {
    use crate::domain::money::{DecimalAmount, Money};
    use crate::text::format::with_number_style;
    let state = use_context::<crate::backend::state::AppState>()?;
    let currency = &state.portal.currency;
    let decimal = DecimalAmount::new(Money::from_minor(minor), currency);
    let amount = with_number_style(i18n, |style| {
        crate::domain::numbers::format_amount(decimal, style)
    });
    let symbol = currency.symbol().to_owned();
    Some(t_string!(i18n, money, symbol, amount).to_string())
}

#[cfg(not(feature = "ssr"))]
fn local_amount(_: leptos_i18n::I18nContext<Locale>, _: i64) -> Option<String> {
    None
}
