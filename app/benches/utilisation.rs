//! Does idle reclaim raise fleet utilisation? A synthetic month for a 64-GPU fleet and 40 users
//! whose bookings follow the patterns reported by GPU owners (long bookings; bursts of training
//! at ~100 %; days of debugging at 0 %; cancellations), simulated minute by minute twice on the
//! same trace: once with reclaim off, once with the default idle policy. The policy's decisions
//! come from the portal's own rules (`berth_app::domain::reclaim`: per-minute telemetry →
//! `gpu_state` → `booking_state` → `due`).
//!
//! Run: `cargo bench -p berth-app --bench utilisation` (no portal, no database). Options:
//! `--seed N` (default 7), `--days N` (default 30).
//!
//! Model: each user works through projects one after another. A project books N GPUs (1, 2, 4
//! or 8) for the length of its plan, a sequence of phases: training (the GPUs at 85–100 %) and
//! debugging (0–3 %). Users book from now when N GPUs are free; otherwise they watch (wait in
//! order; a smaller request may go ahead of a larger one that does not fit). A reclaimed user
//! keeps debugging without GPUs and watches again for the rest of the plan when the next training
//! phase begins. Some projects are abandoned after their first training phase (the booking is
//! cancelled then). Utilisation = GPU-minutes of work done / GPU-minutes in the month.

use berth_app::domain::quota::Priority;
use berth_app::domain::reclaim::{
    Due, IdleAction, IdleBooking, IdlePolicy, Measured, Minute, Told, booking_state, due, gpu_state,
};
use berth_app::domain::schedule::Window;
use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;

const GPUS: usize = 64;
const USERS: usize = 40;
/// How often the policy looks (the portal's job runs every few minutes; Princeton samples every
/// 15).
const CHECK_EVERY: i64 = 5;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Train(i64),
    Debug(i64),
}

impl Phase {
    fn minutes(self) -> i64 {
        match self {
            Phase::Train(m) | Phase::Debug(m) => m,
        }
    }
}

#[derive(Debug, Clone)]
struct Project {
    gpus: usize,
    phases: Vec<Phase>,
    /// Abandoned (the booking cancelled) after the first training phase.
    abandon: bool,
    /// Minutes the user thinks before filing it.
    think: i64,
}

fn trace(seed: u64, per_user: usize) -> Vec<Vec<Project>> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..USERS)
        .map(|_| {
            (0..per_user)
                .map(|_| {
                    let gpus = match rng.random_range(0..100) {
                        0..20 => 1,
                        20..45 => 2,
                        45..80 => 4,
                        _ => 8,
                    };
                    let long = rng.random_bool(0.7);
                    let target = if long {
                        rng.random_range(3 * 24 * 60..=14 * 24 * 60)
                    } else {
                        rng.random_range(2 * 60..=8 * 60)
                    };
                    let mut phases = Vec::new();
                    let mut total = 0;
                    while total < target {
                        let train = if long {
                            rng.random_range(2 * 60..=12 * 60)
                        } else {
                            rng.random_range(60..=3 * 60)
                        };
                        let debug = if long {
                            rng.random_range(4 * 60..=36 * 60)
                        } else {
                            rng.random_range(30..=2 * 60)
                        };
                        phases.push(Phase::Train(train));
                        phases.push(Phase::Debug(debug));
                        total += train + debug;
                    }
                    // Bookings are whole quarter hours: the last debugging phase fills it up.
                    let rounded = (total + 14) / 15 * 15;
                    if let Some(Phase::Debug(last)) = phases.last_mut() {
                        *last += rounded - total;
                    }
                    Project {
                        gpus,
                        phases,
                        abandon: rng.random_bool(0.12),
                        think: rng.random_range(0..=24 * 60),
                    }
                })
                .collect()
        })
        .collect()
}

/// One user's progress.
#[derive(Debug, Clone)]
enum UserState {
    /// Thinking until this minute before filing project `project`.
    Thinking { until: i64 },
    /// Waiting for GPUs since this minute, to run phases from `phase` on.
    Watching { since: i64, phase: usize },
    /// Holding a booking (index into `bookings`), in phase `phase` (started at `phase_start`).
    Holding {
        booking: usize,
        phase: usize,
        phase_start: i64,
    },
    /// Reclaimed: debugging without GPUs, phase `phase` until `until`.
    Offline { phase: usize, until: i64 },
    /// No more projects.
    Done,
}

#[derive(Debug, Clone)]
struct Booking {
    user: usize,
    gpus: Vec<usize>,
    start: i64,
    end: i64,
    /// Per GPU: the last minutes of telemetry (enough for the policy's window).
    telemetry: Vec<VecDeque<Minute>>,
    told: Told,
    live: bool,
    /// Reclaimed: the GPUs come back at this minute.
    release_at: Option<i64>,
}

#[derive(Debug, Default, Clone)]
struct Outcome {
    work_gpu_minutes: i64,
    held_gpu_minutes: i64,
    idle_held_gpu_minutes: i64,
    reclaimed: u32,
    warnings: u32,
    waits: Vec<i64>,
    projects_done: u32,
}

fn minute_at(epoch: DateTime<Utc>, minute: i64) -> DateTime<Utc> {
    epoch + TimeDelta::minutes(minute)
}

fn simulate(trace: &[Vec<Project>], policy: &IdlePolicy, days: i64, seed: u64) -> Outcome {
    let epoch = Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap();
    let horizon = days * 24 * 60;
    let keep = usize::try_from(policy.window_minutes).unwrap_or(120) + 10;
    let mut noise = StdRng::seed_from_u64(seed ^ 0x5eed);
    let mut gpu_holder: Vec<Option<usize>> = vec![None; GPUS];
    let mut bookings: Vec<Booking> = Vec::new();
    let mut next_project = vec![0usize; USERS];
    let mut users: Vec<UserState> = trace
        .iter()
        .map(|projects| UserState::Thinking {
            until: projects[0].think,
        })
        .collect();
    let mut queue: VecDeque<usize> = VecDeque::new();
    let mut out = Outcome::default();

    for now in 0..horizon {
        // 1. Users move on: thinking ends, offline debugging ends (they watch again).
        for user in 0..USERS {
            match users[user].clone() {
                UserState::Thinking { until } if until <= now => {
                    users[user] = UserState::Watching {
                        since: now,
                        phase: 0,
                    };
                    queue.push_back(user);
                }
                UserState::Offline { phase, until } if until <= now => {
                    let project = &trace[user][next_project[user]];
                    if phase + 1 < project.phases.len() {
                        users[user] = UserState::Watching {
                            since: now,
                            phase: phase + 1,
                        };
                        queue.push_back(user);
                    } else {
                        finish(&mut users, &mut next_project, trace, user, now, &mut out);
                    }
                }
                _ => {}
            }
        }

        // 2. Watches served in order, a smaller request going ahead of one that does not fit;
        //    bookings start on the quarter-hour grid, as in the portal.
        let mut still = VecDeque::new();
        let serving = if now % 15 == 0 {
            std::mem::take(&mut queue)
        } else {
            VecDeque::new()
        };
        for user in serving {
            let UserState::Watching { since, phase } = users[user] else {
                continue;
            };
            let project = &trace[user][next_project[user]];
            let free: Vec<usize> = (0..GPUS).filter(|&g| gpu_holder[g].is_none()).collect();
            if free.len() < project.gpus {
                still.push_back(user);
                continue;
            }
            let length: i64 = project.phases[phase..].iter().map(|p| p.minutes()).sum();
            let length = (length + 14) / 15 * 15;
            let gpus: Vec<usize> = free[..project.gpus].to_vec();
            for &g in &gpus {
                gpu_holder[g] = Some(bookings.len());
            }
            bookings.push(Booking {
                user,
                gpus: gpus.clone(),
                start: now,
                end: now + length,
                telemetry: vec![VecDeque::with_capacity(keep); gpus.len()],
                told: Told::default(),
                live: true,
                release_at: None,
            });
            out.waits.push(now - since);
            users[user] = UserState::Holding {
                booking: bookings.len() - 1,
                phase,
                phase_start: now,
            };
        }
        queue.extend(still);

        // 3. Holders work through their phases; the GPUs report a minute of telemetry.
        for user in 0..USERS {
            let UserState::Holding {
                booking,
                mut phase,
                mut phase_start,
            } = users[user]
            else {
                continue;
            };
            let project = &trace[user][next_project[user]];
            if now - phase_start >= project.phases[phase].minutes() {
                let ended = project.phases[phase];
                phase += 1;
                phase_start = now;
                let abandoned = project.abandon && matches!(ended, Phase::Train(_));
                if phase >= project.phases.len() || abandoned {
                    end_booking(&mut bookings[booking], &mut gpu_holder, now);
                    finish(&mut users, &mut next_project, trace, user, now, &mut out);
                    continue;
                }
                users[user] = UserState::Holding {
                    booking,
                    phase,
                    phase_start,
                };
            }
            let training = matches!(project.phases[phase], Phase::Train(_));
            let b = &mut bookings[booking];
            for series in &mut b.telemetry {
                let util = if training {
                    noise.random_range(85.0..=100.0)
                } else {
                    noise.random_range(0.0..3.0)
                };
                if series.len() == keep {
                    series.pop_front();
                }
                series.push_back(Minute {
                    at: minute_at(epoch, now),
                    max_util: util,
                });
                out.held_gpu_minutes += 1;
                if util < policy.threshold() {
                    out.idle_held_gpu_minutes += 1;
                }
                if training {
                    // Work done in this minute, in GPU-minutes at the utilisation reached.
                    out.work_gpu_minutes += 1;
                }
            }
        }

        // 4. The policy looks at every running booking.
        if now % CHECK_EVERY == 0 && policy.action != IdleAction::Off {
            for b in bookings
                .iter_mut()
                .filter(|b| b.live && b.release_at.is_none())
            {
                let at = minute_at(epoch, now);
                let window = Window::new(minute_at(epoch, b.start), minute_at(epoch, b.end))
                    .expect("bookings are whole quarter hours");
                let idle_booking = IdleBooking {
                    window,
                    gpus: u32::try_from(b.gpus.len()).unwrap_or(u32::MAX),
                    priority: Priority::Development,
                };
                let states: Vec<Measured> = b
                    .telemetry
                    .iter()
                    .map(|series| {
                        let minutes: Vec<Minute> = series.iter().copied().collect();
                        gpu_state(&minutes, policy.threshold(), window.start(), at)
                    })
                    .collect();
                match due(policy, &idle_booking, booking_state(&states), b.told, at) {
                    Due::Nothing => {}
                    Due::Warn { number, since, .. } => {
                        out.warnings += 1;
                        b.told = Told {
                            since: Some(since),
                            warnings: number,
                        };
                    }
                    Due::Release { at: release, .. } => {
                        let release_minute = (release - epoch).num_minutes();
                        out.reclaimed += 1;
                        // The holder's access ends at the next slot: the GPUs come back there.
                        let user = b.user;
                        b.end = release_minute;
                        b.release_at = Some(release_minute);
                        if let UserState::Holding {
                            phase, phase_start, ..
                        } = users[user]
                        {
                            let project = &trace[user][next_project[user]];
                            let until = phase_start + project.phases[phase].minutes();
                            users[user] = UserState::Offline { phase, until };
                        }
                    }
                }
            }
        }
        // Reclaimed bookings end at their slot.
        for b in &mut bookings {
            if b.live && b.release_at.is_some_and(|at| at <= now) {
                end_booking(b, &mut gpu_holder, now);
            }
        }
    }
    out
}

fn end_booking(b: &mut Booking, gpu_holder: &mut [Option<usize>], now: i64) {
    if !b.live {
        return;
    }
    b.live = false;
    b.end = b.end.min(now.max(b.start));
    for &g in &b.gpus {
        gpu_holder[g] = None;
    }
}

fn finish(
    users: &mut [UserState],
    next_project: &mut [usize],
    trace: &[Vec<Project>],
    user: usize,
    now: i64,
    out: &mut Outcome,
) {
    out.projects_done += 1;
    next_project[user] += 1;
    users[user] = match trace[user].get(next_project[user]) {
        Some(project) => UserState::Thinking {
            until: now + project.think,
        },
        None => UserState::Done,
    };
}

fn median(values: &mut [i64]) -> i64 {
    if values.is_empty() {
        return 0;
    }
    values.sort_unstable();
    values[values.len() / 2]
}

fn hours(minutes: i64) -> String {
    format!("{:.1} h", minutes as f64 / 60.0)
}

fn main() {
    let mut seed = 7u64;
    let mut days = 30i64;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seed" => seed = args.next().and_then(|v| v.parse().ok()).unwrap_or(seed),
            "--days" => days = args.next().and_then(|v| v.parse().ok()).unwrap_or(days),
            // `cargo bench` passes `--bench`.
            _ => {}
        }
    }
    let trace = trace(seed, 40);
    let off = IdlePolicy {
        action: IdleAction::Off,
        ..IdlePolicy::default()
    };
    let on = IdlePolicy::default();
    let capacity = i64::try_from(GPUS).unwrap_or(64) * days * 24 * 60;
    println!(
        "Utilisation simulation: {GPUS} GPUs, {USERS} users, {days} days, seed {seed}; \
         policy: below {} % for {} min, warnings at {:?} min, refund {} %, exempt ≤ {} GPU and ≤ {} h",
        on.threshold_percent,
        on.window_minutes,
        on.warnings,
        on.refund_percent,
        on.exempt_max_gpus,
        on.exempt_max_hours
    );
    println!();
    println!(
        "| reclaim | utilisation | GPU-hours wasted (reserved, idle) | median wait for a watched window | watches served | projects finished | bookings reclaimed | warnings |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut utilisations = Vec::new();
    for (name, policy) in [("off", &off), ("default policy", &on)] {
        let started = std::time::Instant::now();
        let mut out = simulate(&trace, policy, days, seed);
        let utilisation = out.work_gpu_minutes as f64 / capacity as f64;
        utilisations.push(utilisation);
        let served = out.waits.len();
        println!(
            "| {name} | {:.1} % | {} | {} | {served} | {} | {} | {} |",
            utilisation * 100.0,
            hours(out.idle_held_gpu_minutes),
            hours(median(&mut out.waits)),
            out.projects_done,
            out.reclaimed,
            out.warnings
        );
        eprintln!("  ({name}: simulated in {:.2?})", started.elapsed());
    }
    let ratio = utilisations[1] / utilisations[0].max(f64::EPSILON);
    println!();
    println!(
        "Utilisation with the default policy / without: {ratio:.2}× (target ≥ 1.5×: {})",
        if ratio >= 1.5 { "met" } else { "NOT met" }
    );
}
