//! What is wrong with a request, as data: the API writes it in English (`message`) with a stable
//! `code`; the pages show it in the reader's language through the translation files.

use serde::{Deserialize, Serialize};

/// A reason a request was refused (invalid input, or a clash with the current state).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum Problem {
    /// The end is not after the start.
    #[error("the end must be after the start")]
    EndNotAfterStart,
    /// A time is not on a quarter hour.
    #[error("{field} must be on a quarter hour (:00, :15, :30 or :45)")]
    OffGrid {
        /// `start` or `end`.
        field: String,
    },
    /// Shorter than one slot.
    #[error("a booking lasts at least {minutes} minutes")]
    TooShort {
        /// The minimum.
        minutes: i64,
    },
    /// Longer than allowed.
    #[error("at most {days} days long")]
    TooLong {
        /// The limit.
        days: i64,
    },
    /// Starts before the current slot.
    #[error("the start is in the past")]
    InThePast,
    /// Starts further ahead than allowed.
    #[error("at most {days} days ahead")]
    TooFarAhead {
        /// The limit.
        days: i64,
    },
    /// Starts beyond the booking horizon.
    #[error("bookings open at most {weeks} weeks ahead")]
    BeyondHorizon {
        /// The horizon.
        weeks: i64,
    },
    /// Already over.
    #[error("the window is already over")]
    AlreadyOver,
    /// Not an RFC 3339 timestamp.
    #[error("`{raw}` is not a time such as 2026-12-01T09:00:00Z")]
    NotATime {
        /// What was sent.
        raw: String,
    },
    /// Not a local date and time (`2026-12-01T09:00`).
    #[error("`{raw}` is not a date and time")]
    NotADateTime {
        /// What was sent.
        raw: String,
    },
    /// Not a date (`2026-12-01`).
    #[error("`{raw}` is not a date such as 2026-12-01")]
    NotADate {
        /// What was sent.
        raw: String,
    },
    /// A date or time outside the years Berth accepts.
    #[error("dates must lie in the years {first_year} to {last_year}")]
    DateOutOfRange {
        /// The first accepted year.
        first_year: i32,
        /// The last accepted year.
        last_year: i32,
    },
    /// A local time skipped by a clock change.
    #[error("{raw} does not exist in {zone} (clock change)")]
    NoSuchLocalTime {
        /// What was sent.
        raw: String,
        /// The zone.
        zone: String,
    },
    /// Not a time-zone name.
    #[error("`{raw}` is not a time zone name such as America/Sao_Paulo")]
    UnknownZone {
        /// What was sent.
        raw: String,
    },
    /// Not a kind of notice.
    #[error("`{raw}` is not a kind of notice")]
    UnknownNoticeKind {
        /// What was sent.
        raw: String,
    },
    /// Not a delivery status.
    #[error("`{raw}` is not a delivery status (queued, sent or failed)")]
    UnknownDeliveryStatus {
        /// What was sent.
        raw: String,
    },
    /// A webhook address Berth will not call: not http(s), or a private or local host.
    #[error("`{raw}` cannot receive webhooks: use a public http:// or https:// address")]
    BadWebhookUrl {
        /// What was sent.
        raw: String,
    },
    /// Not a login name.
    #[error(
        "`{raw}` is not a login name: 1 to 32 lower-case letters, digits, _ or -, starting with a letter or _"
    )]
    BadLogin {
        /// What was sent.
        raw: String,
    },
    /// A system account's name.
    #[error("`{raw}` is a system account's name on the nodes")]
    ReservedLogin {
        /// What was sent.
        raw: String,
    },
    /// Another user's login.
    #[error("`{raw}` is already another user's login")]
    LoginTaken {
        /// What was sent.
        raw: String,
    },
    /// Not an SSH public key.
    #[error(
        "not an SSH public key: paste one line such as `ssh-ed25519 AAAA… you@laptop` (the .pub file)"
    )]
    BadSshKey,
    /// An RSA key shorter than allowed.
    #[error("RSA keys need at least {min} bits (this one has {bits}); an ed25519 key is better")]
    WeakSshKey {
        /// Its size.
        bits: usize,
        /// The minimum.
        min: usize,
    },
    /// The same key twice.
    #[error("this key is already on your profile")]
    SshKeyTwice,
    /// Not a `NAME=value` line.
    #[error(
        "`{raw}` is not NAME=value: a name of letters, digits and _ (not starting with a digit) and a one-line value"
    )]
    BadVariable {
        /// What was sent.
        raw: String,
    },
    /// A variable Berth sets on the node.
    #[error("`{name}` is set by Berth on the node; a profile cannot set it")]
    ReservedVariable {
        /// Its name.
        name: String,
    },
    /// A name or path given twice in one profile.
    #[error("`{raw}` appears twice in the profile")]
    ProfileTwice {
        /// Which.
        raw: String,
    },
    /// Not a Python version.
    #[error("`{raw}` is not a Python version such as 3.11")]
    BadPythonVersion {
        /// What was sent.
        raw: String,
    },
    /// A requirements line that cannot be one.
    #[error("`{raw}` cannot be a line of a requirements list (one line, at most 1024 characters)")]
    BadRequirement {
        /// What was sent.
        raw: String,
    },
    /// A dotfile path outside the home directory.
    #[error(
        "`{raw}` cannot be a dotfile: give a path inside the home directory, such as .bashrc.d/tools.sh, without `..`"
    )]
    BadDotfilePath {
        /// What was sent.
        raw: String,
    },
    /// A profile over the size limit (or with a NUL byte).
    #[error("a profile holds at most {max_kib} KiB of text in all")]
    ProfileTooLarge {
        /// The limit.
        max_kib: usize,
    },
    /// A profile name out of bounds.
    #[error("a profile's name is 1 to {max} characters")]
    ProfileName {
        /// The limit.
        max: usize,
    },
    /// A workspace manifest that cannot be stored.
    #[error("the workspace manifest cannot be stored: {detail}")]
    BadManifest {
        /// What is wrong.
        detail: String,
    },
    /// A workspace over the user's quota.
    #[error(
        "the workspace holds {mib} MiB, more than the quota of {quota_mib} MiB: remove files from it (or ask an admin for a larger quota); it was not saved"
    )]
    WorkspaceOverQuota {
        /// Its size.
        mib: u64,
        /// The quota.
        quota_mib: u64,
    },
    /// The holder's lease that just ended is still being saved.
    #[error("the workspace of reservation {reservation} is still being saved; try again shortly")]
    WorkspaceSavePending {
        /// The reservation whose save is awaited.
        reservation: i64,
    },
    /// An uploaded chunk whose bytes do not match its name.
    #[error("the chunk's bytes do not match its hash {hash}")]
    ChunkMismatch {
        /// The hash it was sent under.
        hash: String,
    },
    /// A manifest naming a chunk the store does not hold.
    #[error("the workspace store holds no chunk {hash}: upload it first")]
    ChunkMissing {
        /// Which.
        hash: String,
    },
    /// Not an intruder policy.
    #[error("`{raw}` is not an intruder policy (off, report or terminate)")]
    UnknownIntruderPolicy {
        /// What was sent.
        raw: String,
    },
    /// Not one of the shares.
    #[error("the share must be 1, 0.5 or 0.25 of a GPU")]
    BadShare,
    /// A fraction of a GPU that is not shareable.
    #[error("{gpu} is not shareable: book it whole")]
    NotShareable {
        /// The GPU.
        gpu: String,
    },
    /// No GPU chosen.
    #[error("choose at least one GPU")]
    NoGpu,
    /// The same GPU twice.
    #[error("a GPU is named twice")]
    GpuTwice,
    /// Too many GPUs at once.
    #[error("at most {max} GPUs at a time")]
    TooManyGpus {
        /// The limit.
        max: usize,
    },
    /// No such GPU.
    #[error("there is no GPU with id {id}")]
    NoSuchGpu {
        /// The id sent.
        id: i64,
    },
    /// GPUs of different nodes or models in one reservation.
    #[error("the GPUs of one reservation must be of one model on one node")]
    MixedGpus,
    /// Both or neither of `gpu_ids` and `model`.
    #[error("give either gpu_ids, or model (and count), but not both")]
    GpusOrModel,
    /// No model named.
    #[error("name a GPU model")]
    NoModel,
    /// No bookable GPU of the model.
    #[error("no bookable GPU of model `{model}` (shareable, if a share is asked)")]
    NoGpuOfModel {
        /// The model.
        model: String,
    },
    /// A count out of range.
    #[error("between 1 and {max} GPUs")]
    CountRange {
        /// The limit.
        max: usize,
    },
    /// A length that is not whole quarter hours within the limit.
    #[error("the length must be a multiple of a quarter hour, at most {days} days")]
    BadLength {
        /// The limit.
        days: i64,
    },
    /// `to` not after `from`.
    #[error("`to` must be after `from`")]
    ToNotAfterFrom,
    /// A reason of the wrong length.
    #[error("give a reason of 1 to {max} characters")]
    Reason {
        /// The limit.
        max: usize,
    },
    /// A name of the wrong length.
    #[error("a name needs 1 to {max} characters")]
    Name {
        /// The limit.
        max: usize,
    },
    /// No GPU or node chosen for maintenance.
    #[error("choose a GPU or a node")]
    NoTarget,
    /// Not one of the demo accounts.
    #[error("unknown demo account `{raw}`: use user, team_admin or platform_admin")]
    UnknownAccount {
        /// What was sent.
        raw: String,
    },
    /// A body or query that could not be read.
    #[error("the request could not be read: {detail}")]
    Unreadable {
        /// The parser's words.
        detail: String,
    },
    /// The GPU cannot be booked in its state.
    #[error("{gpu} cannot be booked: it is {status}")]
    GpuUnavailable {
        /// The GPU.
        gpu: String,
        /// `maintenance` or `retired`.
        status: String,
    },
    /// The database's capacity guard refused.
    #[error("the GPU is fully booked for part of this window")]
    FullyBooked,
    /// Cancelled already.
    #[error("reservation {id} is already cancelled")]
    AlreadyCancelled {
        /// The reservation.
        id: i64,
    },
    /// Started already.
    #[error("reservation {id} has already started and can no longer be cancelled")]
    AlreadyStarted {
        /// The reservation.
        id: i64,
    },
    /// The reservation is not running now.
    #[error("reservation {id} is not running now")]
    NotRunning {
        /// The reservation.
        id: i64,
    },
    /// "I'm still using it" was said already for this booking.
    #[error(
        "you already said you are still using reservation {id}; the idle policy counts from then"
    )]
    AlreadySnoozed {
        /// The reservation.
        id: i64,
    },
    /// The time between a watch's `from` and `to` cannot hold its length (any more).
    #[error("the time between from and to is shorter than the length asked for")]
    WatchSpan,
    /// Too many watches watching at once.
    #[error("you have {max} watches watching already; stop one first")]
    TooManyWatches {
        /// The limit.
        max: usize,
    },
    /// The watch is no longer watching.
    #[error("watch {id} is no longer watching")]
    WatchClosed {
        /// The watch.
        id: i64,
    },
    /// The watch holds no window now.
    #[error("watch {id} holds no window now (the hold ended); it goes on watching")]
    NoWindowHeld {
        /// The watch.
        id: i64,
    },
    /// Another watcher booked the held window first.
    #[error("another watcher booked this window first; your watch goes on watching")]
    WindowTaken,
    /// The window is held for people who watch for it.
    #[error("this window is held for people watching for it until {until}")]
    HeldForWatchers {
        /// The hold's end.
        until: chrono::DateTime<chrono::Utc>,
    },
    /// Only a preemptible (batch or burst) booking may start early into freed windows.
    #[error(
        "only batch and burst bookings may start early when their GPUs free up; book at batch priority, or leave start early off"
    )]
    StartEarlyNotPreemptible,
    /// A memory filter that is not a whole number of GiB up to `max`.
    #[error("the memory filter must be a whole number of GiB, at most {max}")]
    MemoryFilter {
        /// The most it takes.
        max: u32,
    },
    /// An idle threshold outside 1–100 %.
    #[error("the idle threshold must be between 1 and 100 %")]
    IdleThreshold,
    /// An idle window outside 15 minutes – a week.
    #[error("the idle window must be between 15 and 10080 minutes (a week)")]
    IdleWindow,
    /// Warnings not ascending minutes before the window.
    #[error("warnings must be at most 5 ascending numbers of minutes, each before the idle window")]
    IdleWarnings,
    /// A refund outside 0–100 %.
    #[error("the refund must be between 0 and 100 %")]
    IdleRefund,
    /// Exemption limits out of range.
    #[error("exemptions must be at most 1024 GPUs and 8760 hours")]
    IdleExemptions,
    /// Maintenance over already.
    #[error("maintenance window {id} is already over")]
    MaintenanceOver {
        /// The window.
        id: i64,
    },
    /// A number outside its range.
    #[error("must be between {min} and {max}")]
    OutOfRange {
        /// Smallest allowed.
        min: i64,
        /// Largest allowed.
        max: i64,
    },
    /// A list that is too long.
    #[error("at most {max} items")]
    TooMany {
        /// The limit.
        max: usize,
    },
    /// A paging cursor that is not one this list gave out.
    #[error("not a cursor of this list: start again from the first page")]
    BadCursor,
    /// Not a GPU UUID.
    #[error("not a GPU UUID (letters, digits and - _ : . only, at most 96)")]
    BadUuid,
    /// A time outside the accepted window.
    #[error("the time must lie within the last {hours} hours and not in the future")]
    OutsideWindow {
        /// The window.
        hours: i64,
    },
    /// An event kind agents may not send.
    #[error("agents report only `xid` and `throttle` events")]
    BadEventKind,
    /// A GPU the node has not registered.
    #[error("no GPU {uuid} is registered for this node; register it first")]
    UnregisteredGpu {
        /// The UUID sent.
        uuid: String,
    },
    /// An incident step its state does not allow.
    #[error("an incident that is {state} cannot take the step `{step}`")]
    IncidentStep {
        /// Where it stands.
        state: String,
        /// The step asked for.
        step: String,
    },
    /// A diagnosed cause that is not among the diagnosis' hypotheses.
    #[error("choose a cause from the diagnosis, or write one")]
    NotInDiagnosis,
    /// An incident reopened before.
    #[error("an incident can be reopened only once")]
    AlreadyReopened,
    /// Text that is empty or too long.
    #[error("write 1 to {max} characters")]
    TextLength {
        /// The limit.
        max: usize,
    },
    /// Text that is too long.
    #[error("at most {max} characters")]
    TooLongText {
        /// The limit.
        max: usize,
    },
    /// Control characters in text.
    #[error("control characters are not allowed")]
    ControlCharacters,
    /// A GPU another node registered (two agents on one host, or a host moved without
    /// retiring its node).
    #[error(
        "GPU {uuid} is registered to another node: run one agent per host, or retire the old node"
    )]
    GpuOfAnotherNode {
        /// The UUID sent.
        uuid: String,
    },
    /// An incident needs a reservation or a GPU.
    #[error("name the reservation or the GPU the incident is about")]
    IncidentTarget,
    /// Card payments are not set up on this portal (`payments = manual`).
    #[error("card payments are not enabled on this portal")]
    CardsOff,
    /// A card pays personal bookings only (a team's are paid from its wallet).
    #[error("a card pays personal bookings only; a team's bookings are paid from its wallet")]
    CardPersonalOnly,
    /// The booking has nothing left to pay by card.
    #[error("reservation {id} has no payment due")]
    NothingDue {
        /// The reservation.
        id: i64,
    },
    /// A top-up outside the portal's limits.
    #[error("a top-up is between {min} and {max}")]
    TopUpAmount {
        /// The smallest, formatted.
        min: String,
        /// The largest, formatted.
        max: String,
    },
    /// Stripe refused the card or the payment.
    #[error("the card was refused: {reason}")]
    CardRefused {
        /// Stripe's reason.
        reason: String,
    },
    /// A card setup that Stripe has not completed.
    #[error("the card was not saved: Stripe reports it as {status}")]
    CardSetupUnfinished {
        /// Stripe's status of the SetupIntent.
        status: String,
    },
    /// A webhook whose `Stripe-Signature` does not verify.
    #[error("the webhook's signature does not verify ({why})")]
    WebhookSignature {
        /// `malformed`, `stale` or `bad_signature`.
        why: String,
    },
    /// A user opening an incident on a GPU they had no booking on.
    #[error("you had no booking on this GPU in that window")]
    NoBookingOnGpu,
    /// A holder's incident window with nothing of it within their booking (an hour either side).
    #[error("that window is outside your booking (its time, and an hour either side)")]
    OutsideBooking,
    /// A time after now where only the past makes sense.
    #[error("this time is in the future")]
    InTheFuture,
    /// A time range that is too long.
    #[error("the range may span at most {days} days")]
    RangeTooLong {
        /// The limit.
        days: i64,
    },
    /// Not an e-mail address.
    #[error("`{raw}` is not an e-mail address")]
    NotAnEmail {
        /// What was sent.
        raw: String,
    },
    /// An `Idempotency-Key` that is empty, too long or not visible ASCII.
    #[error("an idempotency key is 1 to {max} visible ASCII characters")]
    BadIdempotencyKey {
        /// The limit.
        max: usize,
    },
    /// An `Idempotency-Key` used before for a different request.
    #[error("this idempotency key was used for a different request; use a new key")]
    IdempotencyKeyReused,
    /// Not an amount as typed in a form.
    #[error(
        "`{raw}` is not an amount such as 100.50 (more than zero, at most {decimals} decimals)"
    )]
    NotAnAmount {
        /// What was sent.
        raw: String,
        /// The currency's decimal places.
        decimals: u8,
    },
    /// An amount of money that must not be zero.
    #[error("the amount must not be zero")]
    ZeroAmount,
    /// Not a whole number of minor units.
    #[error("`{raw}` is not a whole number of minor units (cents), e.g. 10000")]
    NotMinorUnits {
        /// What was sent.
        raw: String,
    },
    /// A wallet cannot pay.
    #[error("not enough credits: {missing} more needed")]
    InsufficientFunds {
        /// How much is missing, in minor units.
        missing_minor: i64,
        /// The same as a decimal amount with the currency code (`12.50 USD`).
        missing: String,
    },
    /// Reservations hold the GPUs during a requested maintenance window.
    #[error("{}", in_the_way(.ids))]
    ReservationsInTheWay {
        /// The reservations.
        ids: Vec<i64>,
    },
    /// Not a charge mode.
    #[error("`{raw}` is not a charge mode (at_booking or before_start)")]
    UnknownChargeMode {
        /// What was sent.
        raw: String,
    },
    /// A charge mode this portal does not offer.
    #[error("this portal does not offer the charge mode {mode}")]
    ChargeModeNotAllowed {
        /// The mode asked for.
        mode: String,
    },
    /// Not a team role.
    #[error("`{raw}` is not a team role (member or admin)")]
    UnknownTeamRole {
        /// What was sent.
        raw: String,
    },
    /// Invited someone who is a member already.
    #[error("{email} is already a member of this team")]
    AlreadyMember {
        /// The address.
        email: String,
    },
    /// Invited an address twice.
    #[error("{email} is already invited to this team")]
    AlreadyInvited {
        /// The address.
        email: String,
    },
    /// A team booking over the team's monthly budget.
    #[error(
        "this booking ({price}) would take the team over its monthly budget: {spent} of {limit} already booked this month"
    )]
    OverBudget {
        /// Booked this month before this booking, minor units.
        spent_minor: i64,
        /// The budget, minor units.
        limit_minor: i64,
        /// This booking's price, minor units.
        price_minor: i64,
        /// The same as text in the currency.
        spent: String,
        /// The same as text in the currency.
        limit: String,
        /// The same as text in the currency.
        price: String,
    },
    /// A booking above the priority its team (or a personal booking) may use.
    #[error("this booking may have at most priority {most}, not {asked}")]
    PriorityNotAllowed {
        /// What was asked.
        asked: String,
        /// The most allowed.
        most: String,
    },
    /// A team booking beyond its quota of GPUs at the same instant.
    #[error(
        "the team's quota for {model} is {limit} GPUs at once: {used} are booked then and this booking needs {asked}"
    )]
    OverQuotaGpus {
        /// The GPU model.
        model: String,
        /// GPUs booked at the peak, without this booking.
        used: String,
        /// GPUs this booking adds.
        asked: String,
        /// The quota.
        limit: u32,
    },
    /// A team booking beyond its weekly GPU-hour quota.
    #[error(
        "the team's weekly quota for {model} is {limit} GPU-hours: {used} are booked that week and this booking needs {asked}"
    )]
    OverQuotaHours {
        /// The GPU model.
        model: String,
        /// GPU-hours booked that week, without this booking.
        used: String,
        /// GPU-hours this booking adds.
        asked: String,
        /// The quota.
        limit: u32,
    },
    /// Approving or rejecting a booking that no longer waits for approval.
    #[error("reservation #{id} is not waiting for approval")]
    NotAwaitingApproval {
        /// The reservation.
        id: i64,
    },
    /// The change would leave the team without an admin.
    #[error("a team keeps at least one admin: make someone else admin first")]
    LastAdmin,
    /// A team name in use.
    #[error("there is already a team named {name}")]
    TeamNameTaken {
        /// The name.
        name: String,
    },
    /// Not one of the accepted values.
    #[error("use one of: {allowed}")]
    NotOneOf {
        /// The accepted values, comma-separated.
        allowed: String,
    },
}

fn in_the_way(ids: &[i64]) -> String {
    if ids.len() == 1 {
        format!(
            "reservation {} holds these GPUs during the window; cancel it first",
            list_ids(ids)
        )
    } else {
        format!(
            "reservations {} hold these GPUs during the window; cancel them first",
            list_ids(ids)
        )
    }
}

/// `#1, #2`.
pub fn list_ids(ids: &[i64]) -> String {
    ids.iter()
        .map(|id| format!("#{id}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Problem {
    /// The stable code the API sends (`end_not_after_start`).
    pub fn code(&self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|value| {
                value
                    .get("code")
                    .and_then(|c| c.as_str().map(str::to_owned))
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_text_and_codes() {
        let problem = Problem::ReservationsInTheWay { ids: vec![3, 7] };
        assert_eq!(
            problem.to_string(),
            "reservations #3, #7 hold these GPUs during the window; cancel them first"
        );
        assert_eq!(problem.code(), "reservations_in_the_way");
        assert_eq!(
            Problem::ReservationsInTheWay { ids: vec![3] }.to_string(),
            "reservation #3 holds these GPUs during the window; cancel it first"
        );
        assert_eq!(Problem::EndNotAfterStart.code(), "end_not_after_start");
    }
}
