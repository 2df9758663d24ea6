//! The money ledger's rules: double entry (every transaction's entries sum to zero), accounts
//! (a wallet per user; the platform's revenue and the external funding account that top-ups
//! and grants come from), and what a credit grant or deduction may be.

use crate::domain::money::{Currency, Money};
use crate::domain::problem::Problem;
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// Longest reason recorded with a credit grant or deduction.
pub const MAX_REASON_CHARS: usize = 500;

/// Largest single grant or deduction, in minor units (ten million in the currency's major unit
/// for two decimals): a bound that catches a mistyped amount, far above any real top-up.
pub const MAX_CREDIT_MINOR: i64 = 1_000_000_000;

/// An account of the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Account {
    /// A user's prepaid credits; never negative.
    Wallet(i64),
    /// A team's prepaid credits, which pay its members' team bookings; never negative.
    TeamWallet(i64),
    /// What the platform has earned.
    Revenue,
    /// The outside world: money enters through it (top-ups, grants) and leaves through it
    /// (deductions). Its balance is minus everything ever put in.
    Funding,
}

impl Account {
    /// The kind as stored (`wallet`, `team_wallet`, `revenue`, `funding`).
    pub fn kind(self) -> &'static str {
        match self {
            Account::Wallet(_) => "wallet",
            Account::TeamWallet(_) => "team_wallet",
            Account::Revenue => "revenue",
            Account::Funding => "funding",
        }
    }

    /// The owning user of a wallet.
    pub fn user_id(self) -> Option<i64> {
        match self {
            Account::Wallet(user) => Some(user),
            Account::TeamWallet(_) | Account::Revenue | Account::Funding => None,
        }
    }

    /// The owning team of a team wallet.
    pub fn team_id(self) -> Option<i64> {
        match self {
            Account::TeamWallet(team) => Some(team),
            Account::Wallet(_) | Account::Revenue | Account::Funding => None,
        }
    }

    /// Whether the balance must stay at or above zero.
    pub fn may_not_go_negative(self) -> bool {
        matches!(self, Account::Wallet(_) | Account::TeamWallet(_))
    }
}

/// What a transaction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransactionKind {
    /// Credits added to a wallet by a platform admin (a payment received by invoice, a gift).
    Grant,
    /// Credits taken from a wallet by a platform admin.
    Deduct,
    /// A reservation paid from a wallet.
    Charge,
    /// Money returned to a wallet for a cancelled reservation.
    Refund,
    /// An SLA credit: the price of minutes a reserved GPU was unavailable through no fault of
    /// its holder, paid into the wallet that paid the booking (one per incident).
    SlaCredit,
}

impl TransactionKind {
    /// As stored and sent (`grant`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            TransactionKind::Grant => "grant",
            TransactionKind::Deduct => "deduct",
            TransactionKind::Charge => "charge",
            TransactionKind::Refund => "refund",
            TransactionKind::SlaCredit => "sla_credit",
        }
    }

    /// From the stored text.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "grant" => Some(TransactionKind::Grant),
            "deduct" => Some(TransactionKind::Deduct),
            "charge" => Some(TransactionKind::Charge),
            "refund" => Some(TransactionKind::Refund),
            "sla_credit" => Some(TransactionKind::SlaCredit),
            _ => None,
        }
    }
}

/// A reason Berth writes itself on a transaction, kept as data (`ledger_transactions.
/// reason_code`) so each wallet owner reads it in their language; the stored `reason` holds
/// its English words for the JSON API and exports. Reasons people type are kept as typed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum BerthReason {
    /// Credits given to a demo account.
    DemoCredits,
    /// A card payment for a booking, by its PaymentIntent.
    CardPayment {
        /// The booking paid.
        reservation: i64,
        /// Stripe's PaymentIntent id.
        intent: String,
    },
    /// A top-up paid by card, by its PaymentIntent.
    CardTopUp {
        /// Stripe's PaymentIntent id.
        intent: String,
    },
    /// A booking's refund sent back to the card it was paid with.
    CardRefund {
        /// The card, as shown (`Visa ···· 4242`).
        card: String,
        /// The booking refunded.
        reservation: i64,
    },
    /// A refund to a card that Stripe refused, put back into the wallet.
    CardRefundRefused {
        /// The card, as shown.
        card: String,
        /// Stripe's words.
        why: String,
    },
    /// An SLA credit for an incident.
    SlaCredit {
        /// The incident.
        incident: i64,
    },
}

impl BerthReason {
    /// Its English words, as stored in `reason`.
    pub fn english(&self) -> String {
        match self {
            BerthReason::DemoCredits => "Demo credits".to_owned(),
            BerthReason::CardPayment {
                reservation,
                intent,
            } => format!("Card payment for reservation #{reservation} ({intent})"),
            BerthReason::CardTopUp { intent } => format!("Card top-up ({intent})"),
            BerthReason::CardRefund { card, reservation } => {
                format!("Refund to {card} for reservation #{reservation}")
            }
            BerthReason::CardRefundRefused { card, why } => {
                format!("Refund to {card} refused by Stripe: {why}")
            }
            BerthReason::SlaCredit { incident } => format!("SLA credit, incident #{incident}"),
        }
    }

    /// As stored in `reason_code`.
    pub fn code(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// From a stored `reason_code` (None: unreadable, the English words stand).
    pub fn from_code(raw: &str) -> Option<Self> {
        serde_json::from_str(raw).ok()
    }
}

/// Why a set of entries is not a valid transaction (a bug in the caller, never user input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PostingError {
    /// Fewer than two entries.
    #[error("a transaction needs at least two entries")]
    TooFewEntries,
    /// An entry of zero.
    #[error("an entry of zero")]
    ZeroEntry,
    /// One account twice.
    #[error("an account appears twice")]
    AccountTwice,
    /// The entries do not sum to zero (or overflow).
    #[error("the entries sum to {0:?}, not zero")]
    Unbalanced(Option<i64>),
}

/// The entries of one transaction: at least two, none zero, each account once, summing to zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posting {
    entries: Vec<(Account, Money)>,
}

impl Posting {
    /// Checks the double-entry rules.
    pub fn new(entries: Vec<(Account, Money)>) -> Result<Self, PostingError> {
        if entries.len() < 2 {
            return Err(PostingError::TooFewEntries);
        }
        if entries.iter().any(|(_, amount)| *amount == Money::ZERO) {
            return Err(PostingError::ZeroEntry);
        }
        let mut accounts: Vec<Account> = entries.iter().map(|(account, _)| *account).collect();
        accounts.sort_unstable();
        accounts.dedup();
        if accounts.len() != entries.len() {
            return Err(PostingError::AccountTwice);
        }
        let sum = entries
            .iter()
            .try_fold(Money::ZERO, |sum, (_, amount)| sum.checked_add(*amount));
        match sum {
            Some(Money::ZERO) => Ok(Self { entries }),
            other => Err(PostingError::Unbalanced(other.map(Money::minor))),
        }
    }

    /// A transfer of `amount` (positive) from `from` to `to`.
    pub fn transfer(from: Account, to: Account, amount: Money) -> Result<Self, PostingError> {
        let minus = amount
            .minor()
            .checked_neg()
            .ok_or(PostingError::Unbalanced(None))?;
        Self::new(vec![(from, Money::from_minor(minus)), (to, amount)])
    }

    /// The entries, in the order given.
    pub fn entries(&self) -> &[(Account, Money)] {
        &self.entries
    }
}

/// A validated grant (positive) or deduction (negative) of credits for one user's wallet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreditChange {
    amount: Money,
    reason: String,
}

impl CreditChange {
    /// Checks an amount in minor units (not zero, at most [`MAX_CREDIT_MINOR`] either way) and a
    /// reason (1 to [`MAX_REASON_CHARS`] characters after trimming). Errors name the field.
    pub fn parse(amount_minor: i64, reason: &str) -> Result<Self, (&'static str, Problem)> {
        if amount_minor == 0 {
            return Err(("amount_minor", Problem::ZeroAmount));
        }
        if !(-MAX_CREDIT_MINOR..=MAX_CREDIT_MINOR).contains(&amount_minor) {
            return Err((
                "amount_minor",
                Problem::OutOfRange {
                    min: -MAX_CREDIT_MINOR,
                    max: MAX_CREDIT_MINOR,
                },
            ));
        }
        let reason = reason.trim();
        if reason.is_empty() || reason.chars().count() > MAX_REASON_CHARS {
            return Err((
                "reason",
                Problem::Reason {
                    max: MAX_REASON_CHARS,
                },
            ));
        }
        Ok(Self {
            amount: Money::from_minor(amount_minor),
            reason: reason.to_owned(),
        })
    }

    /// Positive for a grant, negative for a deduction.
    pub fn amount(&self) -> Money {
        self.amount
    }

    /// Why.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// A grant or a deduction.
    pub fn kind(&self) -> TransactionKind {
        if self.amount.minor() > 0 {
            TransactionKind::Grant
        } else {
            TransactionKind::Deduct
        }
    }

    /// The entries for `wallet` (a user's or a team's): from the funding account for a grant,
    /// back to it for a deduction.
    pub fn posting(&self, wallet: Account) -> Posting {
        let result = if self.amount.minor() > 0 {
            Posting::transfer(Account::Funding, wallet, self.amount)
        } else {
            Posting::transfer(
                wallet,
                Account::Funding,
                Money::from_minor(-self.amount.minor()),
            )
        };
        // The amount is bounded and not zero, so the transfer is always valid.
        result.unwrap_or_else(|err| unreachable!("a checked credit change is balanced: {err}"))
    }
}

/// What a cancelled reservation gets back (a setting): the whole price when cancelled at least
/// `full_before` ahead of the start, `partial_percent` of it when at least `partial_before`
/// ahead, nothing later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundPolicy {
    /// Full refund this long or more before the start (default 24 h).
    pub full_before: TimeDelta,
    /// Partial refund this long or more before the start (default 2 h).
    pub partial_before: TimeDelta,
    /// The partial refund, in percent of the price (default 50).
    pub partial_percent: u8,
}

impl Default for RefundPolicy {
    fn default() -> Self {
        Self {
            full_before: TimeDelta::hours(24),
            partial_before: TimeDelta::hours(2),
            partial_percent: 50,
        }
    }
}

impl RefundPolicy {
    /// The refund of `paid` for a cancellation at `at` of a reservation starting at `start`,
    /// rounded down to a whole minor unit.
    pub fn refund(&self, paid: Money, start: DateTime<Utc>, at: DateTime<Utc>) -> Money {
        let ahead = start - at;
        if paid.minor() <= 0 {
            Money::ZERO
        } else if ahead >= self.full_before {
            paid
        } else if ahead >= self.partial_before {
            let percent = i128::from(self.partial_percent.min(100));
            // i128: price × percent cannot overflow.
            Money::from_minor(i64::try_from(i128::from(paid.minor()) * percent / 100).unwrap_or(0))
        } else {
            Money::ZERO
        }
    }
}

/// One movement of a wallet, as its owner sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalletEntry {
    /// The transaction.
    pub transaction_id: i64,
    /// When (UTC).
    pub at: DateTime<Utc>,
    /// What kind.
    pub kind: TransactionKind,
    /// Into the wallet (positive) or out of it (negative).
    pub amount: Money,
    /// The wallet's balance right after.
    pub balance_after: Money,
    /// The reason recorded (English words where Berth wrote it).
    pub reason: String,
    /// The reason as data where Berth wrote it, shown in the viewer's language.
    #[serde(default)]
    pub berth_reason: Option<BerthReason>,
    /// The reservation it paid for or refunded, if any.
    pub reservation_id: Option<i64>,
}

/// A user's wallet: balance and history, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wallet {
    /// Whose.
    pub user_id: i64,
    /// The balance now.
    pub balance: Money,
    /// The currency.
    pub currency: Currency,
    /// Committed to upcoming reservations that are charged before their start and not charged
    /// yet: the balance this leaves is what can be spent without a later charge failing.
    pub on_hold: Money,
    /// Reservations whose charge failed for want of credits, soonest first.
    pub payments_due: Vec<PaymentDue>,
    /// A page of movements, newest first.
    pub entries: Vec<WalletEntry>,
    /// The cursor of the next (older) page of movements, when there is one.
    #[serde(default)]
    pub next: Option<String>,
}

/// A wallet's money as a booking sees it: the balance, and what its unpaid bookings charged
/// before their start (pending or due) hold of it. What is held is committed: a booking, paid now
/// or later, may only spend what is available, so the payment job's charges do not fail later
/// for want of credits, and a wallet without credits cannot hold GPUs for the booking horizon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Funds {
    /// The wallet's balance.
    pub balance: Money,
    /// The prices of its bookings not charged yet.
    pub held: Money,
}

impl Funds {
    /// What can be spent: the balance less what is held (negative when the balance fell below
    /// the holds, as after a deduction).
    pub fn available(self) -> Money {
        Money::from_minor(self.balance.minor().saturating_sub(self.held.minor()))
    }

    /// How much more a booking of `price` needs, `None` when the available funds cover it.
    pub fn missing_for(self, price: Money) -> Option<Money> {
        let missing = price.minor().saturating_sub(self.available().minor());
        (missing > 0).then(|| Money::from_minor(missing))
    }
}

impl Wallet {
    /// The balance and what is held of it.
    pub fn funds(&self) -> Funds {
        Funds {
            balance: self.balance,
            held: self.on_hold,
        }
    }
}

/// A reservation whose charge failed for want of credits: paid as soon as the wallet holds
/// enough, released at `release_at` if not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentDue {
    /// The reservation.
    pub reservation_id: i64,
    /// Its price.
    pub price: Money,
    /// Its start (UTC).
    pub start: DateTime<Utc>,
    /// When it is released if still unpaid (UTC).
    pub release_at: DateTime<Utc>,
}

/// A reservation whose payment is due, as platform admins see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DuePayment {
    /// The reservation.
    pub reservation: crate::domain::reservation::Reservation,
    /// When it is released if still unpaid (UTC).
    pub release_at: DateTime<Utc>,
    /// The owner's wallet balance now.
    pub balance: Money,
}

#[cfg(test)]
mod tests {
    #[test]
    fn berths_reasons_keep_their_data_and_their_english_words() {
        use super::BerthReason;
        let reasons = [
            BerthReason::DemoCredits,
            BerthReason::CardPayment {
                reservation: 12,
                intent: "pi_1".into(),
            },
            BerthReason::CardTopUp {
                intent: "pi_2".into(),
            },
            BerthReason::CardRefund {
                card: "Visa ···· 4242".into(),
                reservation: 12,
            },
            BerthReason::CardRefundRefused {
                card: "Visa ···· 4242".into(),
                why: "card expired".into(),
            },
            BerthReason::SlaCredit { incident: 7 },
        ];
        for reason in reasons {
            assert_eq!(BerthReason::from_code(&reason.code()), Some(reason.clone()));
        }
        assert_eq!(
            BerthReason::from_code(r#"{"what":"sla_credit","incident":7}"#)
                .map(|r| r.english())
                .as_deref(),
            Some("SLA credit, incident #7")
        );
        assert_eq!(BerthReason::from_code("Demo credits"), None);
        assert_eq!(BerthReason::from_code(r#"{"what":"lottery"}"#), None);
    }

    use super::*;
    use proptest::prelude::*;

    fn m(minor: i64) -> Money {
        Money::from_minor(minor)
    }

    #[test]
    fn postings_follow_double_entry() {
        assert!(Posting::new(vec![(Account::Funding, m(-5)), (Account::Wallet(1), m(5))]).is_ok());
        assert_eq!(
            Posting::new(vec![(Account::Funding, m(-5))]),
            Err(PostingError::TooFewEntries)
        );
        assert_eq!(
            Posting::new(vec![(Account::Funding, m(-5)), (Account::Wallet(1), m(4))]),
            Err(PostingError::Unbalanced(Some(-1)))
        );
        assert_eq!(
            Posting::new(vec![(Account::Funding, m(0)), (Account::Wallet(1), m(0))]),
            Err(PostingError::ZeroEntry)
        );
        assert_eq!(
            Posting::new(vec![
                (Account::Wallet(1), m(-5)),
                (Account::Wallet(1), m(5))
            ]),
            Err(PostingError::AccountTwice)
        );
        assert_eq!(
            Posting::new(vec![
                (Account::Funding, m(i64::MAX)),
                (Account::Revenue, m(i64::MAX)),
                (Account::Wallet(1), m(2)),
            ]),
            Err(PostingError::Unbalanced(None)),
            "overflow is not balance"
        );
    }

    #[test]
    fn credit_changes_are_checked() {
        let grant = CreditChange::parse(10_000, "  invoice 2026-114 ").unwrap();
        assert_eq!(grant.kind(), TransactionKind::Grant);
        assert_eq!(grant.reason(), "invoice 2026-114");
        assert_eq!(
            grant.posting(Account::Wallet(7)).entries(),
            &[
                (Account::Funding, m(-10_000)),
                (Account::Wallet(7), m(10_000))
            ]
        );
        let deduct = CreditChange::parse(-250, "correction").unwrap();
        assert_eq!(deduct.kind(), TransactionKind::Deduct);
        assert_eq!(
            deduct.posting(Account::Wallet(7)).entries(),
            &[(Account::Wallet(7), m(-250)), (Account::Funding, m(250))]
        );
        assert_eq!(
            CreditChange::parse(0, "x").unwrap_err(),
            ("amount_minor", Problem::ZeroAmount)
        );
        assert_eq!(
            CreditChange::parse(MAX_CREDIT_MINOR + 1, "x")
                .unwrap_err()
                .0,
            "amount_minor"
        );
        assert_eq!(
            CreditChange::parse(i64::MIN, "x").unwrap_err().0,
            "amount_minor"
        );
        assert_eq!(CreditChange::parse(5, "   ").unwrap_err().0, "reason");
        assert_eq!(
            CreditChange::parse(5, &"é".repeat(MAX_REASON_CHARS + 1))
                .unwrap_err()
                .0,
            "reason"
        );
        assert!(CreditChange::parse(5, &"é".repeat(MAX_REASON_CHARS)).is_ok());
    }

    #[test]
    fn bookings_spend_only_what_holds_leave_available() {
        let funds = |balance, held| Funds {
            balance: Money::from_minor(balance),
            held: Money::from_minor(held),
        };
        // Nothing at all: any price is missing in full.
        assert_eq!(funds(0, 0).available(), Money::ZERO);
        assert_eq!(
            funds(0, 0).missing_for(Money::from_minor(500)),
            Some(Money::from_minor(500))
        );
        // Enough for one booking: it fits exactly; a second one does not.
        assert_eq!(funds(1_000, 0).missing_for(Money::from_minor(1_000)), None);
        assert_eq!(
            funds(1_000, 1_000).missing_for(Money::from_minor(1_000)),
            Some(Money::from_minor(1_000))
        );
        // Part held: the rest is available.
        assert_eq!(funds(1_000, 400).available(), Money::from_minor(600));
        assert_eq!(funds(1_000, 400).missing_for(Money::from_minor(600)), None);
        assert_eq!(
            funds(1_000, 400).missing_for(Money::from_minor(700)),
            Some(Money::from_minor(100))
        );
        // A balance below its holds (a deduction) leaves a negative available amount.
        assert_eq!(funds(100, 400).available(), Money::from_minor(-300));
        assert_eq!(
            funds(100, 400).missing_for(Money::from_minor(1)),
            Some(Money::from_minor(301))
        );
        // A free booking needs nothing.
        assert_eq!(funds(0, 0).missing_for(Money::ZERO), None);
    }

    #[test]
    fn kinds_round_trip() {
        for kind in [
            TransactionKind::Grant,
            TransactionKind::Deduct,
            TransactionKind::Charge,
            TransactionKind::Refund,
        ] {
            assert_eq!(TransactionKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(TransactionKind::parse("gift"), None);
    }

    #[test]
    fn the_default_refund_policy() {
        let policy = RefundPolicy::default();
        let start = DateTime::parse_from_rfc3339("2026-12-10T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let before = |hours: i64, minutes: i64| {
            start - TimeDelta::hours(hours) - TimeDelta::minutes(minutes)
        };
        assert_eq!(policy.refund(m(1001), start, before(24, 0)), m(1001));
        assert_eq!(
            policy.refund(m(1001), start, before(23, 59)),
            m(500),
            "half, rounded down"
        );
        assert_eq!(policy.refund(m(1001), start, before(2, 0)), m(500));
        assert_eq!(policy.refund(m(1001), start, before(1, 59)), m(0));
        assert_eq!(
            policy.refund(m(1001), start, start + TimeDelta::hours(1)),
            m(0),
            "after start"
        );
        assert_eq!(policy.refund(m(0), start, before(48, 0)), m(0));
    }

    proptest! {
        /// A refund is never negative nor more than was paid, and never grows as the start
        /// comes closer.
        #[test]
        fn refunds_are_bounded_and_shrink_towards_the_start(
            paid in 0i64..10_000_000_000,
            percent in 0u8..=100,
            full in 1i64..200,
            partial in 0i64..200,
            earlier in -300i64..300,
            later_by in 0i64..300,
        ) {
            let policy = RefundPolicy {
                full_before: TimeDelta::hours(full.max(partial)),
                partial_before: TimeDelta::hours(partial.min(full)),
                partial_percent: percent,
            };
            let start = DateTime::parse_from_rfc3339("2026-12-10T12:00:00Z").unwrap().with_timezone(&Utc);
            let first = start - TimeDelta::hours(earlier);
            let second = first + TimeDelta::hours(later_by);
            let a = policy.refund(m(paid), start, first);
            let b = policy.refund(m(paid), start, second);
            prop_assert!(a.minor() >= 0 && a.minor() <= paid);
            prop_assert!(b.minor() <= a.minor());
        }

        /// Any accepted posting sums to zero; any set of entries that does not is refused.
        #[test]
        fn accepted_postings_sum_to_zero(
            amounts in proptest::collection::vec(-1_000_000i64..1_000_000, 1..6),
        ) {
            let mut entries: Vec<(Account, Money)> = amounts
                .iter()
                .enumerate()
                .map(|(i, a)| (Account::Wallet(i as i64), m(*a)))
                .collect();
            let rest: i64 = amounts.iter().sum();
            entries.push((Account::Funding, m(-rest)));
            let balanced = Posting::new(entries.clone());
            let sum: i64 = entries.iter().map(|(_, a)| a.minor()).sum();
            prop_assert_eq!(sum, 0);
            prop_assert_eq!(balanced.is_ok(), entries.iter().all(|(_, a)| a.minor() != 0));
            // Nudging any one entry breaks the balance.
            entries[0].1 = m(entries[0].1.minor() + 1);
            prop_assert!(Posting::new(entries).is_err());
        }

        /// A credit change moves exactly its amount into (or out of) the wallet.
        #[test]
        fn credit_changes_move_their_amount(
            amount in -MAX_CREDIT_MINOR..=MAX_CREDIT_MINOR,
            user in 1i64..1000,
        ) {
            prop_assume!(amount != 0);
            let change = CreditChange::parse(amount, "reason").unwrap();
            let posting = change.posting(Account::Wallet(user));
            let wallet: i64 = posting
                .entries()
                .iter()
                .filter(|(account, _)| *account == Account::Wallet(user))
                .map(|(_, a)| a.minor())
                .sum();
            prop_assert_eq!(wallet, amount);
        }
    }
}
