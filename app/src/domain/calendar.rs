//! The availability calendar as a view model: a range of days in the viewer's time zone, the
//! GPUs grouped by node with their busy blocks, and where on a row each block and instant goes.
//! Time-zone rules are resolved on the server; the browser gets the offsets that apply in the
//! range, so it can show and enter local times without a time-zone database.

use crate::domain::inventory::GpuListing;
use crate::domain::money::Currency;
use crate::domain::reservation::BusyBlock;
use crate::domain::schedule::{WHOLE_GPU, Window};
use crate::domain::zone::ZoneOffsets;
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

/// The most memory the calendar's "at least" filter takes, in GiB.
pub const MAX_MEMORY_FILTER_GIB: u32 = 4096;

/// Reads the calendar's "at least this much memory" filter (GiB): empty or 0 is none; anything
/// else must be a whole number up to `MAX_MEMORY_FILTER_GIB`.
pub fn parse_min_memory(raw: &str) -> Result<Option<u32>, crate::domain::problem::Problem> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    match raw.parse::<u32>() {
        Ok(gib) if gib <= MAX_MEMORY_FILTER_GIB => Ok(Some(gib).filter(|gib| *gib > 0)),
        _ => Err(crate::domain::problem::Problem::MemoryFilter {
            max: MAX_MEMORY_FILTER_GIB,
        }),
    }
}

/// Day or week.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Span {
    /// One day, in quarter hours.
    Day,
    /// Seven days, in hours.
    #[default]
    Week,
}

impl Span {
    /// Days shown.
    pub fn days(self) -> i64 {
        match self {
            Span::Day => 1,
            Span::Week => 7,
        }
    }

    /// Minutes per selectable cell.
    pub fn cell_minutes(self) -> i64 {
        match self {
            Span::Day => 15,
            Span::Week => 60,
        }
    }

    /// Reads `day` or `week` (default week).
    pub fn parse(raw: Option<&str>) -> Self {
        match raw {
            Some("day") => Span::Day,
            _ => Span::Week,
        }
    }

    /// The URL value.
    pub fn as_str(self) -> &'static str {
        match self {
            Span::Day => "day",
            Span::Week => "week",
        }
    }
}

/// One day column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayColumn {
    /// The local date.
    pub date: NaiveDate,
    /// Local midnight, as an instant.
    pub start: DateTime<Utc>,
    /// Next local midnight.
    pub end: DateTime<Utc>,
}

/// A busy block with the quarter lane it is drawn in (0 at the top).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacedBlock {
    /// The block.
    pub block: BusyBlock,
    /// First quarter lane.
    pub lane: u8,
    /// A booking running now on a GPU whose utilization is below the idle threshold.
    #[serde(default)]
    pub idle: bool,
}

/// One GPU row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalendarGpu {
    /// The GPU.
    pub gpu: GpuListing,
    /// What occupies it in the range.
    pub blocks: Vec<PlacedBlock>,
    /// Its utilization now, percent (none: no recent report).
    #[serde(default)]
    pub util_now: Option<u8>,
}

/// A GPU's utilization now: its latest reading when it is at most [`crate::domain::reclaim::MAX_GAP`]
/// old (an older one says nothing about now).
pub fn util_now(reading: Option<(DateTime<Utc>, Option<u8>)>, now: DateTime<Utc>) -> Option<u8> {
    let (at, util) = reading?;
    (now - at <= crate::domain::reclaim::MAX_GAP && at <= now + crate::domain::reclaim::MAX_GAP)
        .then_some(util)
        .flatten()
}

/// Whether `block` is a booking running at `now` on a GPU whose utilization now is below
/// `threshold` percent.
pub fn idle_now(
    block: &crate::domain::reservation::BusyBlock,
    util_now: Option<u8>,
    threshold: u8,
    now: DateTime<Utc>,
) -> bool {
    block.reservation_id.is_some()
        && block.start <= now
        && now < block.end
        && util_now.is_some_and(|util| util < threshold)
}

/// Whether a booking running now is idle now: every one of its GPUs measured now (`utils`) and
/// below `threshold` percent. A GPU without a reading now is never called idle.
pub fn all_idle_now(utils: &[Option<u8>], threshold: u8) -> bool {
    !utils.is_empty()
        && utils
            .iter()
            .all(|util| util.is_some_and(|util| util < threshold))
}

/// A node with its GPU rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalendarNode {
    /// Node id.
    pub id: i64,
    /// Node name.
    pub name: String,
    /// Demo data.
    pub is_demo: bool,
    /// Its GPUs (after filters).
    pub gpus: Vec<CalendarGpu>,
}

/// Everything the calendar page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalendarView {
    /// Day or week.
    pub span: Span,
    /// The range shown, local midnight to local midnight.
    pub range: Window,
    /// The days.
    pub days: Vec<DayColumn>,
    /// The viewer's time zone over the range.
    pub zone: ZoneOffsets,
    /// Whether that zone is the one chosen on the profile page (the browser's does not change
    /// it), not the browser's.
    #[serde(default)]
    pub zone_chosen: bool,
    /// Now.
    pub now: DateTime<Utc>,
    /// Rows.
    pub nodes: Vec<CalendarNode>,
    /// Every model in the fleet (for the filter).
    pub models: Vec<String>,
    /// Prices' currency.
    pub currency: Currency,
    /// The local date of the previous and next range, and today.
    pub previous: NaiveDate,
    /// Next range.
    pub next: NaiveDate,
    /// Today, locally.
    pub today: NaiveDate,
    /// What the booking panel needs to show how a booking is paid.
    pub payment: BookingPayment,
    /// The booking panel's texts in the viewer's language, translated on the server so that the
    /// calendar's WebAssembly carries no translations of its own for them.
    pub texts: PanelTexts,
    /// The models shown that teams are guaranteed GPUs of.
    #[serde(default)]
    pub guarantees: Vec<ModelGuarantees>,
}

/// A model some teams are guaranteed GPUs of, as the booking panel needs it to tell whether a
/// booking would borrow guaranteed capacity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelGuarantees {
    /// The model.
    pub model: String,
    /// GPUs of it nobody is guaranteed: what personal bookings and teams without a guarantee
    /// share.
    pub unguaranteed_gpus: u32,
    /// The teams guaranteed some.
    pub teams: Vec<i64>,
    /// The bookings on the shared part of the fleet of the model in the range (the panel has no
    /// blocks).
    #[serde(default)]
    pub shared: Vec<crate::domain::schedule::Occupancy>,
}

impl CalendarView {
    /// Gathers each guaranteed model's shared bookings from the blocks, for the booking panel
    /// (which gets the view without them).
    pub fn gather_shared(&mut self) {
        for rules in &mut self.guarantees {
            rules.shared = self
                .nodes
                .iter()
                .flat_map(|node| node.gpus.iter())
                .filter(|gpu| gpu.gpu.model == rules.model)
                .flat_map(|gpu| gpu.blocks.iter())
                .filter(|placed| placed.block.shared)
                .filter_map(|placed| {
                    Window::new(placed.block.start, placed.block.end)
                        .ok()
                        .map(|window| crate::domain::schedule::Occupancy {
                            window,
                            quarters: placed.block.quarters,
                        })
                })
                .collect();
        }
    }

    /// Whether a non-preemptible booking of `quarters` of one GPU of `model` during `window`,
    /// personal or for `team`, would borrow capacity guaranteed to a team: it is on the shared
    /// part of the fleet (not for a team guaranteed some of the model), and the shared bookings
    /// ([`Self::gather_shared`]) already take every unguaranteed GPU at some instant of it.
    pub fn would_borrow(
        &self,
        model: &str,
        team: Option<i64>,
        window: &Window,
        quarters: u8,
    ) -> bool {
        let Some(rules) = self.guarantees.iter().find(|g| g.model == model) else {
            return false;
        };
        if team.is_some_and(|team| rules.teams.contains(&team)) {
            return false;
        }
        let room = u32::from(WHOLE_GPU) * rules.unguaranteed_gpus;
        crate::domain::schedule::peak_load(&rules.shared, window) + u32::from(quarters) > room
    }
}

/// A text of the booking panel (its translation key in the comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PanelText {
    /// `panel_title`.
    Title,
    /// `panel_gpu`.
    Gpu,
    /// `panel_window`.
    Window,
    /// `panel_length`.
    Length,
    /// `panel_share`.
    Share,
    /// `share_whole`.
    Whole,
    /// `share_half`.
    Half,
    /// `share_quarter`.
    Quarter,
    /// `panel_price`.
    Price,
    /// `panel_book`.
    Book,
    /// `panel_hint`.
    Hint,
    /// `panel_start`.
    Start,
    /// `panel_end`.
    End,
    /// `offer_book`.
    OfferBook,
    /// `find_title`.
    FindTitle,
    /// `find_intro`.
    FindIntro,
    /// `find_count`.
    FindCount,
    /// `find_hours`.
    FindHours,
    /// `find_submit`.
    FindSubmit,
    /// `find_none`.
    FindNone,
    /// `filter_model`.
    Model,
    /// `clash_title`.
    ClashTitle,
    /// `clash_suggestion`.
    ClashSuggestion,
    /// `clash_no_suggestion`.
    ClashNoSuggestion,
    /// `panel_payment`.
    Payment,
    /// `panel_pay_now`.
    PayNow,
    /// `panel_pay_later`.
    PayLater,
    /// `panel_balance_after`.
    BalanceAfter,
    /// `panel_short`.
    Short,
    /// `nav_wallet`.
    Wallet,
    /// `panel_booked_id`.
    BookedId,
    /// `clash_body`.
    ClashBody,
    /// `panel_book_for`.
    BookFor,
    /// `panel_personal`.
    Personal,
    /// `panel_environment`.
    Environment,
    /// `panel_no_profile`.
    NoProfile,
    /// `panel_flexible`.
    Flexible,
    /// `panel_flexible_hint`.
    FlexibleHint,
    /// `panel_would_borrow`.
    WouldBorrow,
    /// `panel_pay_with`.
    PayWith,
    /// `panel_credits`.
    Credits,
    /// `panel_card_follow`.
    CardFollow,
}

impl PanelText {
    /// Every text, in the order [`PanelTexts`] holds them.
    pub const ALL: [PanelText; 42] = [
        PanelText::Title,
        PanelText::Gpu,
        PanelText::Window,
        PanelText::Length,
        PanelText::Share,
        PanelText::Whole,
        PanelText::Half,
        PanelText::Quarter,
        PanelText::Price,
        PanelText::Book,
        PanelText::Hint,
        PanelText::Start,
        PanelText::End,
        PanelText::OfferBook,
        PanelText::FindTitle,
        PanelText::FindIntro,
        PanelText::FindCount,
        PanelText::FindHours,
        PanelText::FindSubmit,
        PanelText::FindNone,
        PanelText::Model,
        PanelText::ClashTitle,
        PanelText::ClashSuggestion,
        PanelText::ClashNoSuggestion,
        PanelText::Payment,
        PanelText::PayNow,
        PanelText::PayLater,
        PanelText::BalanceAfter,
        PanelText::Short,
        PanelText::Wallet,
        PanelText::BookedId,
        PanelText::ClashBody,
        PanelText::BookFor,
        PanelText::Personal,
        PanelText::Environment,
        PanelText::NoProfile,
        PanelText::Flexible,
        PanelText::FlexibleHint,
        PanelText::WouldBorrow,
        PanelText::PayWith,
        PanelText::Credits,
        PanelText::CardFollow,
    ];
}

/// The booking panel's texts, in [`PanelText::ALL`] order. Templates keep `{name}` placeholders
/// (`{id}`, `{what}`, `{at}`, `{missing}`) for the browser to fill in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PanelTexts(pub Vec<String>);

impl PanelTexts {
    /// The text of `key` (empty if missing).
    pub fn get(&self, key: PanelText) -> String {
        self.0.get(key as usize).cloned().unwrap_or_default()
    }
}

/// The viewer's money and the charge modes, for the booking panel's quote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BookingPayment {
    /// The wallet's balance.
    pub balance: crate::domain::money::Money,
    /// Committed to reservations not charged yet.
    pub on_hold: crate::domain::money::Money,
    /// The charge modes offered, the default first.
    pub modes: Vec<crate::domain::payment::ChargeMode>,
    /// A fresh idempotency key for this page's booking form (the page reloads after a booking).
    pub form_key: String,
    /// The viewer's teams, which they may book for: id, name, and what the team's wallet has
    /// left once its unpaid bookings are charged (minor units).
    pub teams: Vec<(i64, String, i64)>,
    /// The environment profiles the viewer may book with (id, name).
    #[serde(default)]
    pub profiles: Vec<(i64, String)>,
    /// The viewer's default profile.
    #[serde(default)]
    pub default_profile: Option<i64>,
    /// The viewer's saved cards, which may pay a personal booking (id, label), when card
    /// payments are on.
    #[serde(default)]
    pub cards: Vec<(i64, String)>,
}

impl BookingPayment {
    /// The balance left once the unpaid reservations and a booking of `price` are charged, in
    /// the viewer's wallet (`team` None) or the team's.
    pub fn balance_after(&self, team: Option<i64>, price: crate::domain::money::Money) -> i64 {
        let available = match team {
            None => self.balance.minor() - self.on_hold.minor(),
            Some(id) => self
                .teams
                .iter()
                .find(|(team_id, _, _)| *team_id == id)
                .map_or(0, |(_, _, available)| *available),
        };
        available - price.minor()
    }
}

impl CalendarView {
    /// The same view without what occupies the GPUs: what the booking panel needs in the
    /// browser (the grid itself is rendered on the server).
    pub fn without_blocks(&self) -> Self {
        let mut view = self.clone();
        for node in &mut view.nodes {
            for gpu in &mut node.gpus {
                gpu.blocks.clear();
            }
        }
        view
    }

    /// Where `at` falls across the range, 0.0 to 1.0 (clamped).
    pub fn fraction(&self, at: DateTime<Utc>) -> f64 {
        fraction_of(&self.range, at)
    }
}

/// Where `at` falls across `range`, 0.0 to 1.0 (clamped).
#[expect(
    clippy::cast_precision_loss,
    reason = "seconds in a few weeks fit an f64 exactly"
)]
pub fn fraction_of(range: &Window, at: DateTime<Utc>) -> f64 {
    let total = range.length().num_seconds() as f64;
    let offset = (at - range.start()).num_seconds() as f64;
    (offset / total).clamp(0.0, 1.0)
}

/// Assigns each block (sorted by start) the first quarter lanes free during its time, so that
/// fractional bookings that overlap are drawn one above the other. Blocks that cannot get
/// contiguous lanes (fragmentation) are drawn from lane 0.
pub fn assign_lanes(blocks: &[BusyBlock]) -> Vec<u8> {
    let mut placed: Vec<(DateTime<Utc>, DateTime<Utc>, u8, u8)> = Vec::new();
    let mut lanes = Vec::with_capacity(blocks.len());
    for block in blocks {
        let quarters = block.quarters.min(WHOLE_GPU);
        let taken = |lane: u8| {
            placed.iter().any(|(start, end, first, q)| {
                *start < block.end && block.start < *end && lane >= *first && lane < first + q
            })
        };
        let lane = (0..=WHOLE_GPU - quarters)
            .find(|first| (*first..first + quarters).all(|lane| !taken(lane)))
            .unwrap_or(0);
        placed.push((block.start, block.end, lane, quarters));
        lanes.push(lane);
    }
    lanes
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::domain::reservation::BlockKind;
    use crate::domain::zone::OffsetChange;
    use chrono::TimeZone;

    #[test]
    fn the_memory_filter_takes_whole_gib_in_range() {
        assert_eq!(parse_min_memory(""), Ok(None));
        assert_eq!(parse_min_memory(" 0 "), Ok(None));
        assert_eq!(parse_min_memory("40"), Ok(Some(40)));
        assert_eq!(parse_min_memory("4096"), Ok(Some(4096)));
        for bad in ["4097", "99999999999999999999", "-1", "1.5", "forty", "NaN"] {
            assert!(parse_min_memory(bad).is_err(), "{bad}");
        }
    }

    fn at(day: u32, hour: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 10, day, hour, 0, 0).unwrap()
    }

    fn block(from: DateTime<Utc>, to: DateTime<Utc>, quarters: u8) -> BusyBlock {
        BusyBlock {
            start: from,
            end: to,
            quarters,
            kind: BlockKind::Booked,
            reservation_id: None,
            who: None,
            borrowing: false,
            shared: false,
        }
    }

    #[test]
    fn overlapping_shares_get_separate_lanes() {
        let blocks = [
            block(at(1, 10), at(1, 12), 2),
            block(at(1, 11), at(1, 13), 1),
            block(at(1, 11), at(1, 12), 1),
            block(at(1, 12), at(1, 14), 2),
        ];
        assert_eq!(assign_lanes(&blocks), vec![0, 2, 3, 0]);
    }

    /// A zone that moves from UTC-3 to UTC-2 on 2026-10-18 03:00 UTC (a DST start).
    fn zone() -> ZoneOffsets {
        ZoneOffsets {
            name: "Test/Zone".into(),
            changes: vec![
                OffsetChange {
                    at: at(1, 0),
                    offset_seconds: -3 * 3600,
                },
                OffsetChange {
                    at: Utc.with_ymd_and_hms(2026, 10, 18, 3, 0, 0).unwrap(),
                    offset_seconds: -2 * 3600,
                },
            ],
        }
    }

    #[test]
    fn local_times_follow_the_offset_in_effect() {
        let zone = zone();
        let before = Utc.with_ymd_and_hms(2026, 10, 17, 12, 0, 0).unwrap();
        assert_eq!(zone.local(before).to_string(), "2026-10-17 09:00:00");
        let after = Utc.with_ymd_and_hms(2026, 10, 18, 12, 0, 0).unwrap();
        assert_eq!(zone.local(after).to_string(), "2026-10-18 10:00:00");
        assert_eq!(zone.to_utc(zone.local(before)), before);
        assert_eq!(zone.to_utc(zone.local(after)), after);
    }

    #[test]
    fn fractions_run_across_the_range() {
        let range = Window::new(at(1, 0), at(2, 0)).unwrap();
        assert!((fraction_of(&range, at(1, 6)) - 0.25).abs() < 1e-9);
        assert!((fraction_of(&range, at(3, 0)) - 1.0).abs() < 1e-9);
    }
}
