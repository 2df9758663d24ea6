//! When a reservation is paid: at booking, or by the payment job a set time before it starts
//! (and released if still unpaid shortly before the start).

use crate::domain::problem::Problem;
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// When a booking is charged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(sea_orm::EnumIter, sea_orm::DeriveActiveEnum))]
#[cfg_attr(
    feature = "ssr",
    sea_orm(rs_type = "String", db_type = "Text", rename_all = "snake_case")
)]
pub enum ChargeMode {
    /// In the transaction that creates the reservation.
    AtBooking,
    /// By the payment job, `lead` before the start.
    BeforeStart,
}

impl ChargeMode {
    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            ChargeMode::AtBooking => "at_booking",
            ChargeMode::BeforeStart => "before_start",
        }
    }

    /// From the stored or sent text.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "at_booking" => Some(ChargeMode::AtBooking),
            "before_start" => Some(ChargeMode::BeforeStart),
            _ => None,
        }
    }
}

/// How long the payment job leaves a booking to its card payment (for the bank's
/// authentication, and for Stripe's confirmation) before it treats it as any booking whose
/// payment is due: paid from credits if they arrive, released at the release time.
pub const CARD_GRACE: TimeDelta = TimeDelta::minutes(15);

/// The charge modes a portal offers and their timing (settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChargePolicy {
    /// Whether bookings may be charged at once.
    pub at_booking: bool,
    /// Whether bookings may be charged before their start.
    pub before_start: bool,
    /// The mode of a booking that names none (one of the allowed ones).
    pub default: ChargeMode,
    /// How long before the start the payment job charges (default 2 h).
    pub lead: TimeDelta,
    /// How long before the start a reservation still unpaid is released (default 15 min).
    pub release_before: TimeDelta,
}

impl Default for ChargePolicy {
    fn default() -> Self {
        Self {
            at_booking: true,
            before_start: true,
            default: ChargeMode::AtBooking,
            lead: TimeDelta::hours(2),
            release_before: TimeDelta::minutes(15),
        }
    }
}

/// How a booking will be paid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChargePlan {
    /// Charged in the booking's transaction.
    Now,
    /// Charged by the payment job at this time.
    At(DateTime<Utc>),
}

impl ChargePolicy {
    /// Whether `mode` is offered.
    pub fn allows(&self, mode: ChargeMode) -> bool {
        match mode {
            ChargeMode::AtBooking => self.at_booking,
            ChargeMode::BeforeStart => self.before_start,
        }
    }

    /// The modes offered, the default first.
    pub fn offered(&self) -> Vec<ChargeMode> {
        let mut modes = vec![self.default];
        for mode in [ChargeMode::AtBooking, ChargeMode::BeforeStart] {
            if mode != self.default && self.allows(mode) {
                modes.push(mode);
            }
        }
        modes
    }

    /// The mode of a booking that asks for `requested` (or none).
    pub fn mode(&self, requested: Option<ChargeMode>) -> Result<ChargeMode, Problem> {
        match requested {
            None => Ok(self.default),
            Some(mode) if self.allows(mode) => Ok(mode),
            Some(mode) => Err(Problem::ChargeModeNotAllowed {
                mode: mode.as_str().to_owned(),
            }),
        }
    }

    /// When a booking in `mode` starting at `start`, made at `now`, is charged. A booking made
    /// within the lead time is charged at once whatever the mode: its charge is already due.
    pub fn plan(&self, mode: ChargeMode, start: DateTime<Utc>, now: DateTime<Utc>) -> ChargePlan {
        match mode {
            ChargeMode::AtBooking => ChargePlan::Now,
            ChargeMode::BeforeStart => {
                let at = start - self.lead;
                if at <= now {
                    ChargePlan::Now
                } else {
                    ChargePlan::At(at)
                }
            }
        }
    }

    /// When a reservation starting at `start` that is still unpaid is released.
    pub fn release_at(&self, start: DateTime<Utc>) -> DateTime<Utc> {
        start - self.release_before
    }
}

/// A card saved at the payment provider, as its holder sees it (never its number).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedCard {
    /// Berth's id.
    pub id: i64,
    /// `visa`, `mastercard`, …
    pub brand: String,
    /// The last four digits.
    pub last4: String,
    /// Expiry month.
    pub exp_month: i32,
    /// Expiry year.
    pub exp_year: i32,
    /// Saved.
    pub created_at: DateTime<Utc>,
}

impl SavedCard {
    /// `Visa ···· 4242`.
    pub fn label(&self) -> String {
        card_label(&self.brand, &self.last4)
    }
}

/// A card as people name it: the brand as printed on cards, and the last four digits.
pub fn card_label(brand: &str, last4: &str) -> String {
    let name = match brand {
        "amex" => "American Express",
        "diners" => "Diners Club",
        "discover" => "Discover",
        "jcb" => "JCB",
        "mastercard" => "Mastercard",
        "unionpay" => "UnionPay",
        "visa" => "Visa",
        "elo" => "Elo",
        "hipercard" => "Hipercard",
        other => other,
    };
    format!("{name} ···· {last4}")
}

/// What the page needs to save a card with Stripe.js: the SetupIntent's secret and the keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardSetup {
    /// Stripe's SetupIntent (`seti_…`), sent back once the page confirmed it.
    pub setup_intent_id: String,
    /// Given to Stripe.js.
    pub client_secret: String,
    /// The publishable key.
    pub publishable_key: String,
    /// Where Stripe.js is loaded from.
    pub js_url: String,
}

/// A payment by card, as its payer sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardPayment {
    /// Berth's id.
    pub id: i64,
    /// `top_up` or `booking`.
    pub purpose: String,
    /// The booking it pays.
    #[serde(default)]
    pub reservation_id: Option<i64>,
    /// Minor units.
    pub amount_minor: i64,
    /// ISO code.
    pub currency: String,
    /// The card (`visa ···· 4242`).
    pub card: String,
    /// `pending`, `requires_action`, `succeeded`, `failed`.
    pub status: String,
    /// Why it failed.
    pub failure: Option<String>,
    /// For `requires_action`: the secret Stripe.js authenticates it with.
    pub client_secret: Option<String>,
    /// Stripe's reference (`pi_…`), once Stripe answered.
    #[serde(default)]
    pub reference: Option<String>,
    /// The ledger transaction that booked it.
    pub transaction_id: Option<i64>,
    /// Asked.
    pub created_at: DateTime<Utc>,
    /// Confirmed or failed.
    pub settled_at: Option<DateTime<Utc>>,
}

/// A refund sent back to the card that paid a booking, as its payer sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardRefund {
    /// Berth's id.
    pub id: i64,
    /// The card payment refunded.
    pub payment_id: i64,
    /// The booking refunded.
    pub reservation_id: Option<i64>,
    /// Minor units.
    pub amount_minor: i64,
    /// The card (`Visa ···· 4242`).
    pub card: String,
    /// `pending` (booked, on its way to Stripe), `succeeded` (Stripe refunded it), `failed`
    /// (Stripe refused: the amount went back to credits).
    pub status: String,
    /// Why Stripe refused it.
    pub failure: Option<String>,
    /// Stripe's reference (`re_…`).
    pub reference: Option<String>,
    /// Booked.
    pub created_at: DateTime<Utc>,
    /// Sent or given up.
    pub settled_at: Option<DateTime<Utc>>,
}

/// Where a refund of a booking paid by card goes (setting `refund_to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefundTo {
    /// Back to the card, through Stripe.
    #[default]
    Card,
    /// To the wallet's credits.
    Credits,
}

impl RefundTo {
    /// As stored and configured.
    pub fn as_str(self) -> &'static str {
        match self {
            RefundTo::Card => "card",
            RefundTo::Credits => "credits",
        }
    }

    /// From the setting's text.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim() {
            "card" => Some(RefundTo::Card),
            "credits" => Some(RefundTo::Credits),
            _ => None,
        }
    }
}

/// The smallest and largest top-up by card, in minor units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopUpLimits {
    /// Smallest.
    pub min_minor: i64,
    /// Largest.
    pub max_minor: i64,
}

impl Default for TopUpLimits {
    fn default() -> Self {
        Self {
            min_minor: 500,
            max_minor: 1_000_000,
        }
    }
}

impl TopUpLimits {
    /// Whether `amount_minor` may be topped up.
    pub fn allows(self, amount_minor: i64) -> bool {
        (self.min_minor..=self.max_minor).contains(&amount_minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    fn start() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 10, 9, 0, 0).unwrap()
    }

    #[test]
    fn the_default_mode_applies_when_none_is_asked_and_others_must_be_allowed() {
        let only_now = ChargePolicy {
            before_start: false,
            ..ChargePolicy::default()
        };
        assert_eq!(only_now.mode(None), Ok(ChargeMode::AtBooking));
        assert_eq!(
            only_now.mode(Some(ChargeMode::BeforeStart)),
            Err(Problem::ChargeModeNotAllowed {
                mode: "before_start".into()
            })
        );
        assert_eq!(only_now.offered(), vec![ChargeMode::AtBooking]);
        let later_first = ChargePolicy {
            default: ChargeMode::BeforeStart,
            ..ChargePolicy::default()
        };
        assert_eq!(
            later_first.offered(),
            vec![ChargeMode::BeforeStart, ChargeMode::AtBooking]
        );
    }

    #[test]
    fn before_start_is_charged_two_hours_ahead_unless_that_has_passed() {
        let policy = ChargePolicy::default();
        let plan = |now| policy.plan(ChargeMode::BeforeStart, start(), now);
        assert_eq!(
            plan(start() - TimeDelta::days(1)),
            ChargePlan::At(start() - TimeDelta::hours(2))
        );
        assert_eq!(plan(start() - TimeDelta::hours(2)), ChargePlan::Now);
        assert_eq!(plan(start() - TimeDelta::minutes(30)), ChargePlan::Now);
        assert_eq!(
            policy.plan(ChargeMode::AtBooking, start(), start() - TimeDelta::days(3)),
            ChargePlan::Now
        );
        assert_eq!(policy.release_at(start()), start() - TimeDelta::minutes(15));
    }

    #[test]
    fn cards_are_named_as_printed() {
        assert_eq!(card_label("visa", "4242"), "Visa ···· 4242");
        assert_eq!(card_label("amex", "0005"), "American Express ···· 0005");
        assert_eq!(card_label("newbrand", "1111"), "newbrand ···· 1111");
    }

    #[test]
    fn top_ups_stay_within_their_limits() {
        let limits = TopUpLimits::default();
        assert!(limits.allows(500) && limits.allows(1_000_000));
        for amount in [0, -500, 499, 1_000_001, i64::MAX, i64::MIN] {
            assert!(!limits.allows(amount), "{amount}");
        }
    }

    #[test]
    fn modes_round_trip_through_their_text() {
        for mode in [ChargeMode::AtBooking, ChargeMode::BeforeStart] {
            assert_eq!(ChargeMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(ChargeMode::parse("later"), None);
    }

    proptest! {
        /// A planned charge is always in the future and never after the start.
        #[test]
        fn a_planned_charge_lies_between_now_and_the_start(
            ahead_minutes in 0i64..100_000,
            lead_minutes in 0i64..10_000,
        ) {
            let policy = ChargePolicy { lead: TimeDelta::minutes(lead_minutes), ..ChargePolicy::default() };
            let now = start() - TimeDelta::minutes(ahead_minutes);
            match policy.plan(ChargeMode::BeforeStart, start(), now) {
                ChargePlan::Now => prop_assert!(start() - policy.lead <= now),
                ChargePlan::At(at) => prop_assert!(now < at && at <= start()),
            }
        }
    }
}
