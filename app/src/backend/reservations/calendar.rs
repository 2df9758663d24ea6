//! What the calendar and the availability view read: each GPU's busy blocks from the viewer's
//! point of view (their own bookings in detail, others' only as "booked"), in the viewer's days.

use super::input::{invalid, window_error};
use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::state::AppState;
use crate::backend::viewer;
use crate::domain::problem::Problem;
use crate::domain::reservation::{BlockKind, BusyBlock, GpuAvailability};
use crate::domain::schedule::{Window, slot_ceil};
use crate::error::AppError;
use chrono::{DateTime, TimeDelta, Utc};

/// The idempotency key the calendar page's booking form carries, chosen by the server before the
/// render (a request extension) so that a cached copy of the page can be sent with a fresh key in
/// its place (see the server's page cache).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageFormKey(pub String);

impl PageFormKey {
    /// A new random key.
    pub fn new() -> Self {
        Self(uuid::Uuid::new_v4().to_string())
    }
}

impl Default for PageFormKey {
    fn default() -> Self {
        Self::new()
    }
}

/// The page's form key: the one the request carries, or a new one.
fn page_form_key() -> String {
    leptos::prelude::use_context::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<PageFormKey>().cloned())
        .unwrap_or_default()
        .0
}

/// Longest range the availability view reads at once.
pub const MAX_AVAILABILITY_DAYS: i64 = 62;

/// Busy blocks per GPU in `[from, to)` (optionally one model), from the viewer's point of view:
/// their own bookings in detail, others' only as "booked".
pub async fn availability(
    state: &AppState,
    actor: &Actor,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    model: Option<&str>,
) -> Result<Vec<GpuAvailability>, AppError> {
    if to <= from {
        return Err(invalid("to", Problem::ToNotAfterFrom));
    }
    if to - from > TimeDelta::days(MAX_AVAILABILITY_DAYS) {
        return Err(invalid(
            "to",
            Problem::TooLong {
                days: MAX_AVAILABILITY_DAYS,
            },
        ));
    }
    let range = Window::new(crate::domain::schedule::slot_floor(from), slot_ceil(to))
        .map_err(window_error)?;
    let (inventory, all_guarantees, teams) = tokio::try_join!(
        db::inventory::list_matching_gpus(&state.db, model, None),
        db::quotas::all_guarantees(&state.db),
        actor.memberships(&state.db),
    )?;
    let Shown {
        ids: gpus,
        models,
        guarantees,
    } = shown(&inventory, all_guarantees);
    let mut busy = busy_blocks(state, actor, &teams, &range, &gpus, &models, &guarantees).await?;
    Ok(gpus
        .into_iter()
        .map(|gpu_id| GpuAvailability {
            gpu_id,
            busy: busy.remove(&gpu_id).unwrap_or_default(),
        })
        .collect())
}

/// What occupies each of `gpus` during `range`, by start, as the viewer (a member of `teams`)
/// may see it.
async fn busy_blocks(
    state: &AppState,
    actor: &Actor,
    teams: &[crate::domain::team::TeamMembership],
    range: &Window,
    gpus: &[i64],
    models: &std::collections::HashMap<i64, String>,
    guarantees: &[(crate::domain::calendar::ModelGuarantees, Vec<(i64, u32)>)],
) -> Result<std::collections::HashMap<i64, Vec<BusyBlock>>, AppError> {
    let mut busy: std::collections::HashMap<i64, Vec<BusyBlock>> =
        gpus.iter().map(|id| (*id, Vec::new())).collect();
    let (holds, maintenance) = tokio::try_join!(
        db::reservations::holds_on(&state.db, gpus, range),
        db::reservations::maintenance_overlapping(&state.db, gpus, range),
    )?;
    let borrowing = borrowing_holds(&holds, models, guarantees);
    let shared = |hold: &db::reservations::Hold| {
        let model = models.get(&hold.gpu_id);
        !hold.preemptible
            && !guarantees.iter().any(|(g, _)| {
                Some(&g.model) == model && hold.team_id.is_some_and(|t| g.teams.contains(&t))
            })
    };
    // Teammates' bookings for a shared team show who booked them; others stay anonymous.
    let teammate_of = |hold: &db::reservations::Hold| {
        hold.team_id.and_then(|team| {
            teams
                .iter()
                .find(|t| t.team_id == team)
                .map(|t| t.team_name.clone())
        })
    };
    let mut teammates: Vec<i64> = holds
        .iter()
        .filter(|hold| hold.owner_id != actor.user.id && teammate_of(hold).is_some())
        .map(|hold| hold.owner_id)
        .collect();
    teammates.sort_unstable();
    teammates.dedup();
    let names = db::users::names_of(&state.db, &teammates).await?;
    for hold in holds {
        let mine = hold.owner_id == actor.user.id;
        let team = if mine { None } else { teammate_of(&hold) };
        if let Some(blocks) = busy.get_mut(&hold.gpu_id) {
            blocks.push(BusyBlock {
                start: hold.window.start(),
                end: hold.window.end(),
                quarters: hold.quarters,
                kind: match (mine, &team) {
                    (true, _) => BlockKind::Mine,
                    (false, Some(_)) => BlockKind::Team,
                    (false, None) => BlockKind::Booked,
                },
                reservation_id: mine.then_some(hold.reservation_id),
                who: team.map(|team| {
                    let name = names.get(&hold.owner_id).cloned().unwrap_or_default();
                    format!("{name} · {team}")
                }),
                borrowing: borrowing.contains(&hold.reservation_id),
                shared: shared(&hold),
            });
        }
    }
    for (gpu_id, window, _) in maintenance {
        if let Some(blocks) = busy.get_mut(&gpu_id) {
            blocks.push(BusyBlock {
                start: window.start(),
                end: window.end(),
                quarters: crate::domain::schedule::WHOLE_GPU,
                kind: BlockKind::Maintenance,
                reservation_id: None,
                who: None,
                borrowing: false,
                shared: false,
            });
        }
    }
    for blocks in busy.values_mut() {
        blocks.sort_by_key(|b| (b.start, b.end));
    }
    Ok(busy)
}

/// The GPUs a view shows, and what the guarantee rule needs of them.
struct Shown {
    /// Their ids.
    ids: Vec<i64>,
    /// The model of each (retired ones left out: the fleet of each model shown).
    models: std::collections::HashMap<i64, String>,
    /// The guarantees on those models.
    guarantees: Vec<(crate::domain::calendar::ModelGuarantees, Vec<(i64, u32)>)>,
}

/// The GPUs of `inventory` and, of `all` the guarantees, those on their models.
fn shown(
    inventory: &[crate::domain::inventory::NodeInventory],
    all: std::collections::HashMap<String, Vec<(i64, u32)>>,
) -> Shown {
    let gpus = || inventory.iter().flat_map(|node| node.gpus.iter());
    let models: std::collections::HashMap<i64, String> = gpus()
        .filter(|gpu| gpu.status != crate::domain::gpu::GpuStatus::Retired)
        .map(|gpu| (gpu.id, gpu.model.clone()))
        .collect();
    let guarantees = shown_guarantees(&models, all);
    Shown {
        ids: gpus().map(|gpu| gpu.id).collect(),
        models,
        guarantees,
    }
}

/// The guarantees on the models shown (`models`: the shown GPUs' models, retired ones left out;
/// the calendar shows every GPU of a model it shows), as the panel reads them and with each
/// team's guaranteed GPUs.
fn shown_guarantees(
    models: &std::collections::HashMap<i64, String>,
    all: std::collections::HashMap<String, Vec<(i64, u32)>>,
) -> Vec<(crate::domain::calendar::ModelGuarantees, Vec<(i64, u32)>)> {
    let mut shown: Vec<_> = all
        .into_iter()
        .filter_map(|(model, teams)| {
            let fleet_gpus = models.values().filter(|m| **m == model).count();
            let guarantees = crate::domain::quota::Guarantees {
                fleet_gpus: u32::try_from(fleet_gpus).unwrap_or(u32::MAX),
                teams: teams.clone(),
            };
            (fleet_gpus > 0).then(|| {
                (
                    crate::domain::calendar::ModelGuarantees {
                        model,
                        unguaranteed_gpus: guarantees.unguaranteed_gpus(),
                        teams: teams.iter().map(|(team, _)| *team).collect(),
                        shared: Vec::new(),
                    },
                    teams,
                )
            })
        })
        .collect();
    shown.sort_by(|a, b| a.0.model.cmp(&b.0.model));
    shown
}

/// The reservations among `holds` that borrow capacity guaranteed to a team, model by model.
fn borrowing_holds(
    holds: &[db::reservations::Hold],
    models: &std::collections::HashMap<i64, String>,
    guarantees: &[(crate::domain::calendar::ModelGuarantees, Vec<(i64, u32)>)],
) -> std::collections::BTreeSet<i64> {
    use crate::domain::quota::{Guarantees, ModelHold, borrowing};
    let mut found = std::collections::BTreeSet::new();
    for (shown, teams) in guarantees {
        let model = &shown.model;
        let of_model = |gpu: &i64| models.get(gpu).is_some_and(|m| m == model);
        let fleet_gpus = models.keys().filter(|gpu| of_model(gpu)).count();
        let model_holds: Vec<ModelHold> = holds
            .iter()
            .filter(|hold| of_model(&hold.gpu_id))
            .map(db::reservations::Hold::model_hold)
            .collect();
        let guarantees = Guarantees {
            fleet_gpus: u32::try_from(fleet_gpus).unwrap_or(u32::MAX),
            teams: teams.clone(),
        };
        found.extend(borrowing(&model_holds, &guarantees, None));
    }
    found
}

/// What the calendar page asks for.
#[derive(Debug, Clone, Default)]
pub struct CalendarQuery {
    /// First local day (default today).
    pub start: Option<chrono::NaiveDate>,
    /// Day or week.
    pub span: crate::domain::calendar::Span,
    /// Only this model.
    pub model: Option<String>,
    /// Only GPUs with at least this much memory.
    pub min_memory_gib: Option<u32>,
    /// IANA time zone of the viewer (default UTC).
    pub zone: Option<String>,
}

/// The calendar for `actor`.
#[tracing::instrument(skip_all)]
pub async fn calendar(
    state: &AppState,
    actor: &Actor,
    query: &CalendarQuery,
    now: DateTime<Utc>,
) -> Result<crate::domain::calendar::CalendarView, AppError> {
    use crate::domain::calendar::{
        CalendarGpu, CalendarNode, CalendarView, DayColumn, PlacedBlock, assign_lanes,
    };
    use chrono::TimeZone;
    let zone: chrono_tz::Tz = query
        .zone
        .as_deref()
        .and_then(|name| name.parse().ok())
        .unwrap_or(chrono_tz::UTC);
    let today = now.with_timezone(&zone).date_naive();
    let first = query.start.unwrap_or(today);
    let midnight = |date: chrono::NaiveDate| -> DateTime<Utc> {
        zone.from_local_datetime(&date.and_hms_opt(0, 0, 0).unwrap_or_default())
            .earliest()
            .map_or_else(
                || date.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc(),
                |at| at.with_timezone(&Utc),
            )
    };
    let days: Vec<DayColumn> = (0..query.span.days())
        .map(|offset| {
            let date = first + TimeDelta::days(offset);
            DayColumn {
                date,
                start: midnight(date),
                end: midnight(date + TimeDelta::days(1)),
            }
        })
        .collect();
    let range = Window::new(days[0].start, days[days.len() - 1].end).map_err(window_error)?;
    // Independent reads on pooled connections at once (each `try_join!` here saves round trips
    // to the database on the page's path; the week view of issue 29 is a few milliseconds of
    // them on PostgreSQL).
    let (inventory, all_guarantees, teams) = tokio::try_join!(
        db::inventory::list_matching_gpus(
            &state.db,
            query.model.as_deref(),
            query.min_memory_gib.map(|gib| i64::from(gib) * 1024),
        ),
        db::quotas::all_guarantees(&state.db),
        actor.memberships(&state.db),
    )?;
    let Shown {
        ids: shown_ids,
        models: shown_models,
        guarantees,
    } = shown(&inventory, all_guarantees);
    let (mut busy, models, live, policies, payment) = tokio::try_join!(
        busy_blocks(
            state,
            actor,
            &teams,
            &range,
            &shown_ids,
            &shown_models,
            &guarantees
        ),
        async {
            db::inventory::list_models(&state.db)
                .await
                .map_err(AppError::from)
        },
        async {
            db::telemetry::live_utilization(&state.db, &shown_ids)
                .await
                .map_err(AppError::from)
        },
        async {
            crate::backend::reclaim::policies(&state.db)
                .await
                .map_err(AppError::from)
        },
        booking_payment(state, &actor.user, &teams),
    )?;
    let threshold = policies.platform.threshold_percent;
    let nodes = inventory
        .into_iter()
        .map(|node| CalendarNode {
            id: node.id,
            name: node.name,
            is_demo: node.is_demo,
            gpus: node
                .gpus
                .into_iter()
                .map(|gpu| {
                    let blocks = busy.remove(&gpu.id).unwrap_or_default();
                    let lanes = assign_lanes(&blocks);
                    let util = crate::domain::calendar::util_now(live.get(&gpu.id).copied(), now);
                    CalendarGpu {
                        gpu,
                        blocks: blocks
                            .into_iter()
                            .zip(lanes)
                            .map(|(block, lane)| PlacedBlock {
                                idle: crate::domain::calendar::idle_now(
                                    &block, util, threshold, now,
                                ),
                                block,
                                lane,
                            })
                            .collect(),
                        util_now: util,
                    }
                })
                .collect(),
        })
        .collect();
    let mut view = CalendarView {
        span: query.span,
        zone: viewer::zone_offsets(zone, range.start(), range.end()),
        zone_chosen: actor.user.time_zone.is_some(),
        previous: first - TimeDelta::days(query.span.days()),
        next: first + TimeDelta::days(query.span.days()),
        today,
        range,
        days,
        now,
        nodes,
        models,
        currency: state.portal.currency.clone(),
        payment,
        texts: crate::domain::calendar::PanelTexts::default(),
        guarantees: guarantees.into_iter().map(|(shown, _)| shown).collect(),
    };
    view.gather_shared();
    Ok(view)
}

/// The viewer's balance, what unpaid reservations hold, and the charge modes, for a member of
/// `memberships`: one round of reads at once (the default profile comes with the viewer).
async fn booking_payment(
    state: &AppState,
    viewer: &crate::domain::user::UserSummary,
    memberships: &[crate::domain::team::TeamMembership],
) -> Result<crate::domain::calendar::BookingPayment, AppError> {
    let user_id = viewer.id;
    let team_ids: Vec<i64> = memberships.iter().map(|m| m.team_id).collect();
    let (balance, unpaid, cards, profiles, team_money) = tokio::try_join!(
        db::ledger::wallet_balance(&state.db, user_id),
        db::payments::unpaid_of(&state.db, user_id),
        async {
            // Saved cards pay personal bookings when card payments are on.
            match state.stripe {
                Some(_) => db::card_payments::cards_of(&state.db, user_id).await,
                None => Ok(Vec::new()),
            }
        },
        db::env_profiles::visible_to(&state.db, user_id, &team_ids),
        async {
            let mut money = Vec::with_capacity(memberships.len());
            for team in memberships {
                money.push(tokio::try_join!(
                    db::ledger::account_balance(
                        &state.db,
                        crate::domain::ledger::Account::TeamWallet(team.team_id)
                    ),
                    db::payments::unpaid_of_team(&state.db, team.team_id),
                )?);
            }
            Ok::<_, sea_orm::DbErr>(money)
        },
    )?;
    let profiles = profiles
        .into_iter()
        .map(|p| (p.id, p.name))
        .collect::<Vec<_>>();
    let default_profile = viewer
        .default_profile_id
        .filter(|id| profiles.iter().any(|(p, _)| p == id));
    let teams = memberships
        .iter()
        .zip(team_money)
        .map(|(team, (balance, unpaid))| {
            let available = balance.minor() - db::payments::held(&unpaid).minor();
            (team.team_id, team.team_name.clone(), available)
        })
        .collect();
    let cards = cards
        .iter()
        .map(|c| (c.id, crate::domain::payment::card_label(&c.brand, &c.last4)))
        .collect();
    Ok(crate::domain::calendar::BookingPayment {
        balance,
        on_hold: db::payments::held(&unpaid),
        modes: state.portal.charge.offered(),
        form_key: page_form_key(),
        teams,
        profiles,
        default_profile,
        cards,
    })
}
