//! The node agent: reads a [`TelemetrySource`] on a thread of its own and pushes what it reads
//! to the portal through a [`Transport`].
//!
//! - The inventory is registered at start and re-synced every [`AgentOptions::inventory_every`]
//!   (new GPUs appear, vanished ones get flagged on the portal).
//! - Samples are taken every [`AgentOptions::interval`]; XID events and throttle changes are
//!   sent at once.
//! - While the portal is unreachable, reports wait in a bounded buffer (oldest samples dropped
//!   first when it is full) and delivery is retried with exponential backoff; when the portal is
//!   back the buffer is sent oldest first.

pub mod access;
pub mod local;
pub mod nvml;
pub mod prepare;
pub mod simulated;
pub mod source;
pub mod transport;
pub mod workspace;

use berth_app::domain::telemetry::{
    AccessEvent, EventKind, GpuSample, Registration, Report, ReportedEvent, throttle_changed,
};
use source::TelemetrySource;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use transport::{PushError, Transport};

/// How an agent behaves.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Time between samples.
    pub interval: Duration,
    /// Time between inventory re-syncs.
    pub inventory_every: Duration,
    /// Most samples kept while the portal is unreachable.
    pub max_buffered_samples: usize,
    /// Most samples per report.
    pub batch_samples: usize,
    /// First retry delay; doubles up to `max_backoff`.
    pub min_backoff: Duration,
    /// Longest retry delay.
    pub max_backoff: Duration,
    /// The host's name as registered.
    pub hostname: String,
}

impl Default for AgentOptions {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(5),
            inventory_every: Duration::from_secs(60),
            max_buffered_samples: 100_000,
            batch_samples: 2_000,
            min_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            hostname: gethostname::gethostname().to_string_lossy().into_owned(),
        }
    }
}

/// What the reading thread hands to the pusher.
#[derive(Debug)]
enum Reading {
    Inventory(Registration),
    Samples(Vec<GpuSample>),
    Event(ReportedEvent),
    Access(AccessEvent),
    Environment(berth_app::domain::profile::PrepReport),
}

/// Why an agent stopped.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The token was refused before anything was delivered.
    #[error(
        "the portal refused the node token ({0}); check --token, or issue a new one with `berth node add NAME`"
    )]
    Unauthorized(String),
    /// The source failed at start.
    #[error("{0}")]
    Source(String),
}

/// A running agent; stops when dropped or when [`RunningAgent::stop`] is called.
#[derive(Debug)]
pub struct RunningAgent {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Result<(), AgentError>>,
    /// The lease keeper and the schedule poller, when access is enforced.
    helpers: Vec<tokio::task::JoinHandle<()>>,
}

impl RunningAgent {
    /// Stops reading, delivers what it can within a moment, and waits for the pusher.
    pub async fn stop(self) -> Result<(), AgentError> {
        for helper in &self.helpers {
            helper.abort();
        }
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap_or(Ok(()))
    }

    /// Runs until `shutdown` completes (then stops as [`RunningAgent::stop`] does) or the
    /// agent ends by itself (a refused token).
    pub async fn run_until(
        mut self,
        shutdown: impl std::future::Future<Output = ()>,
    ) -> Result<(), AgentError> {
        tokio::select! {
            ended = &mut self.task => ended.unwrap_or(Ok(())),
            () = shutdown => self.stop().await,
        }
    }
}

/// Starts an agent: a reading thread for `source` and a pushing task for `transport`.
pub fn start(
    source: Box<dyn TelemetrySource>,
    transport: Arc<dyn Transport>,
    options: AgentOptions,
) -> RunningAgent {
    start_with_access(source, transport, options, None)
}

/// Enforcing leases: the keeper's options, who the processes are, and the clock it reads.
pub struct Enforcement {
    /// Directories, grace time, margins.
    pub options: access::AccessOptions,
    /// The host's processes and users.
    pub processes: Box<dyn access::Processes>,
    /// The time.
    pub clock: Arc<dyn berth_app::backend::clock::Clock>,
    /// Prepare bookings' environment profiles ahead of their start.
    pub prepare: Option<prepare::PrepareOptions>,
    /// Restore holders' workspaces before their leases open and save them after they close.
    pub workspaces: Option<workspace::MoverOptions>,
}

/// [`start`], and with `enforcement` the lease keeper: the node's schedule is long-polled from
/// the portal and kept on disk, and leases are opened and closed on the agent's clock.
pub fn start_with_access(
    source: Box<dyn TelemetrySource>,
    transport: Arc<dyn Transport>,
    options: AgentOptions,
    enforcement: Option<Enforcement>,
) -> RunningAgent {
    let stop = Arc::new(AtomicBool::new(false));
    let (sender, receiver) = mpsc::channel(256);
    let (view_tx, view_rx) = tokio::sync::watch::channel(access::NodeView::default());
    let watching = enforcement.is_some();
    let mut helpers = Vec::new();
    if let Some(enforcement) = enforcement {
        let (schedule_tx, schedule_rx) = mpsc::channel(4);
        let (event_tx, mut event_rx) = mpsc::channel::<AccessEvent>(256);
        if let Some(prepare) = enforcement.prepare {
            let forward = sender.clone();
            prepare::spawn(
                prepare,
                enforcement.options.state_dir.clone(),
                enforcement.clock.clone(),
                move |report| forward.blocking_send(Reading::Environment(report)).is_ok(),
            );
        }
        let mut keeper = access::Keeper::new(enforcement.options.clone(), enforcement.processes);
        if let Some(workspaces) = enforcement.workspaces {
            keeper = keeper.with_mover(workspace::Mover::start(
                workspaces,
                &enforcement.options.state_dir,
            ));
        }
        let first_version = keeper.version().map(str::to_owned);
        helpers.push(tokio::spawn(
            access::KeeperTask {
                keeper,
                clock: enforcement.clock,
                view: view_rx,
                schedules: schedule_rx,
                events: event_tx,
            }
            .run(),
        ));
        let forward = sender.clone();
        helpers.push(tokio::spawn(async move {
            while let Some(event) = event_rx.recv().await {
                if forward.send(Reading::Access(event)).await.is_err() {
                    return;
                }
            }
        }));
        helpers.push(tokio::spawn(poll_schedule(
            transport.clone(),
            schedule_tx,
            first_version,
            enforcement.options.poll_wait,
            options.clone(),
        )));
    }
    let reader_stop = stop.clone();
    let reader_options = options.clone();
    std::thread::Builder::new()
        .name("berth-agent-reader".into())
        .spawn(move || {
            let view = watching.then_some(&view_tx);
            read_loop(source, &sender, view, &reader_options, &reader_stop);
        })
        .ok();
    let task = tokio::spawn(push_loop(receiver, transport, options, stop.clone()));
    RunningAgent {
        stop,
        task,
        helpers,
    }
}

/// Long-polls the node's schedule and hands each new one to the keeper; waits with backoff
/// while the portal is unreachable (the keeper goes on with the schedule it has).
async fn poll_schedule(
    transport: Arc<dyn Transport>,
    schedules: mpsc::Sender<berth_app::domain::lease::NodeSchedule>,
    mut version: Option<String>,
    wait: Duration,
    options: AgentOptions,
) {
    let mut backoff = options.min_backoff;
    loop {
        match transport.leases(version.as_deref(), wait).await {
            Ok(schedule) => {
                backoff = options.min_backoff;
                if version.as_deref() != Some(schedule.version.as_str()) {
                    version = Some(schedule.version.clone());
                    if schedules.send(schedule).await.is_err() {
                        return;
                    }
                }
            }
            Err(err) => {
                tracing::warn!(error = %err, retry_in_ms = backoff.as_millis() as u64, "cannot fetch the lease schedule; keeping the one on disk");
                tokio::time::sleep(backoff).await;
                backoff = std::cmp::min(backoff * 2, options.max_backoff);
            }
        }
    }
}

fn read_loop(
    mut source: Box<dyn TelemetrySource>,
    sender: &mpsc::Sender<Reading>,
    view: Option<&tokio::sync::watch::Sender<access::NodeView>>,
    options: &AgentOptions,
    stop: &AtomicBool,
) {
    let mut next_inventory = Instant::now();
    let mut next_sample = Instant::now();
    let mut throttle: HashMap<String, u64> = HashMap::new();
    // A simulated source invents its PIDs: the keeper must never take them for processes of
    // this host (it would report or signal whoever really has that PID).
    let real_processes = source.kind() != berth_app::domain::telemetry::SourceKind::Simulated;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= next_inventory {
            next_inventory = now + options.inventory_every;
            match source.gpus() {
                Ok(gpus) => {
                    if let Some(view) = view {
                        view.send_modify(|view| {
                            view.minors = gpus
                                .iter()
                                .filter_map(|g| Some((g.uuid.clone(), g.minor_number?)))
                                .collect();
                            view.memory_mib = gpus
                                .iter()
                                .map(|g| (g.uuid.clone(), g.memory_total_mib))
                                .collect();
                            view.inventoried = true;
                        });
                    }
                    let registration = Registration {
                        hostname: options.hostname.clone(),
                        driver_version: source.driver_version(),
                        source: source.kind(),
                        interval_seconds: u32::try_from(options.interval.as_secs().max(1))
                            .unwrap_or(u32::MAX),
                        gpus,
                    };
                    if sender
                        .blocking_send(Reading::Inventory(registration))
                        .is_err()
                    {
                        return;
                    }
                }
                Err(err) => tracing::warn!(error = %err, "reading the GPU inventory"),
            }
        }
        if now >= next_sample {
            next_sample += options.interval;
            if next_sample < now {
                next_sample = now + options.interval;
            }
            match source.sample(chrono::Utc::now()) {
                Ok(samples) => {
                    for sample in &samples {
                        let after = sample.readings.throttle_reasons;
                        let before = throttle.get(&sample.uuid).copied();
                        if throttle_changed(before, after) {
                            let event = ReportedEvent {
                                uuid: sample.uuid.clone(),
                                at: sample.at,
                                kind: EventKind::Throttle,
                                code: after.and_then(|mask| i64::try_from(mask).ok()),
                            };
                            if sender.blocking_send(Reading::Event(event)).is_err() {
                                return;
                            }
                        }
                        if let Some(mask) = after {
                            throttle.insert(sample.uuid.clone(), mask);
                        }
                    }
                    if let Some(view) = view {
                        view.send_modify(|view| {
                            view.processes = samples
                                .iter()
                                .map(|s| {
                                    let processes = if real_processes {
                                        s.processes.clone()
                                    } else {
                                        Vec::new()
                                    };
                                    (s.uuid.clone(), processes)
                                })
                                .collect();
                            view.samples += 1;
                        });
                    }
                    if sender.blocking_send(Reading::Samples(samples)).is_err() {
                        return;
                    }
                }
                Err(err) => tracing::warn!(error = %err, "reading GPU values"),
            }
        }
        // Wait for an event until the next sample is due (in short steps, to notice `stop`).
        let wait = next_sample
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(500));
        if let Some(event) = source.wait_event(wait)
            && sender.blocking_send(Reading::Event(event)).is_err()
        {
            return;
        }
    }
}

/// Reports waiting for delivery, oldest first.
#[derive(Debug, Default)]
struct Buffer {
    samples: VecDeque<GpuSample>,
    events: VecDeque<ReportedEvent>,
    access: VecDeque<AccessEvent>,
    environments: VecDeque<berth_app::domain::profile::PrepReport>,
    dropped: u64,
}

impl Buffer {
    fn push_samples(&mut self, samples: Vec<GpuSample>, max: usize) {
        self.samples.extend(samples);
        while self.samples.len() > max {
            self.samples.pop_front();
            self.dropped += 1;
        }
    }

    fn next_report(&self, batch: usize) -> Report {
        Report {
            samples: self.samples.iter().take(batch).cloned().collect(),
            events: self.events.iter().take(1_000).cloned().collect(),
            access: self.access.iter().take(1_000).cloned().collect(),
            environments: self.environments.iter().take(100).cloned().collect(),
        }
    }

    fn delivered(&mut self, report: &Report) {
        self.samples.drain(..report.samples.len());
        self.events.drain(..report.events.len());
        self.access.drain(..report.access.len());
        self.environments.drain(..report.environments.len());
    }

    fn is_empty(&self) -> bool {
        self.samples.is_empty()
            && self.events.is_empty()
            && self.access.is_empty()
            && self.environments.is_empty()
    }
}

async fn push_loop(
    mut receiver: mpsc::Receiver<Reading>,
    transport: Arc<dyn Transport>,
    options: AgentOptions,
    stop: Arc<AtomicBool>,
) -> Result<(), AgentError> {
    let mut buffer = Buffer::default();
    let mut registration: Option<Registration> = None;
    let mut registered = false;
    let mut ever_delivered = false;
    let mut backoff = options.min_backoff;
    let mut retry_at: Option<tokio::time::Instant> = None;
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        let message = if stopping {
            receiver.try_recv().ok()
        } else {
            let sleep_until = retry_at
                .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_millis(500));
            tokio::select! {
                message = receiver.recv() => match message {
                    Some(message) => Some(message),
                    None => return Ok(()),
                },
                () = tokio::time::sleep_until(sleep_until) => None,
            }
        };
        let last_round = stopping && message.is_none();
        match message {
            Some(Reading::Inventory(new)) => {
                registered = registered && registration.as_ref() == Some(&new);
                registration = Some(new);
            }
            Some(Reading::Samples(samples)) => {
                buffer.push_samples(samples, options.max_buffered_samples);
            }
            Some(Reading::Event(event)) => buffer.events.push_back(event),
            Some(Reading::Access(event)) => buffer.access.push_back(event),
            Some(Reading::Environment(report)) => buffer.environments.push_back(report),
            None => {}
        }
        if buffer.dropped > 0 {
            tracing::warn!(
                agent.dropped_samples = buffer.dropped,
                "the buffer is full: dropped the oldest samples"
            );
            buffer.dropped = 0;
        }
        if !last_round && retry_at.is_some_and(|at| tokio::time::Instant::now() < at) {
            continue;
        }
        retry_at = None;
        // Deliver: register first, then everything buffered, oldest first.
        let result = async {
            if !registered && let Some(registration) = &registration {
                transport.register(registration).await?;
                registered = true;
            }
            if !registered {
                return Ok(());
            }
            while !buffer.is_empty() {
                let report = buffer.next_report(options.batch_samples);
                match transport.report(&report).await {
                    Ok(()) => buffer.delivered(&report),
                    Err(PushError::Rejected(reason)) => {
                        // Retrying would be refused again: drop it, and register again in case
                        // the portal lost track of a GPU.
                        tracing::error!(%reason, samples = report.samples.len(), "report refused; dropped");
                        buffer.delivered(&report);
                        registered = false;
                        break;
                    }
                    Err(other) => return Err(other),
                }
            }
            Ok::<(), PushError>(())
        }
        .await;
        if last_round {
            // One last attempt on the way out; what it could not deliver is lost.
            return Ok(());
        }
        match result {
            Ok(()) => {
                if registered && !ever_delivered {
                    tracing::info!("agent connected to the portal");
                }
                ever_delivered |= registered;
                backoff = options.min_backoff;
            }
            Err(PushError::Unauthorized(reason)) if !ever_delivered => {
                return Err(AgentError::Unauthorized(reason));
            }
            Err(err) => {
                let jitter = rand::random_range(0.8..1.2);
                let delay = backoff.mul_f64(jitter);
                tracing::warn!(
                    error = %err,
                    retry_in_ms = delay.as_millis() as u64,
                    buffered_samples = buffer.samples.len(),
                    "cannot deliver to the portal; will retry"
                );
                retry_at = Some(tokio::time::Instant::now() + delay);
                backoff = std::cmp::min(backoff * 2, options.max_backoff);
                registered = registered && !matches!(err, PushError::Unauthorized(_));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_app::domain::telemetry::{Readings, validate_report};
    use source::TelemetrySource;

    fn sample(n: i64) -> GpuSample {
        GpuSample {
            uuid: format!("GPU-{n}"),
            at: chrono::DateTime::from_timestamp(n, 0).unwrap(),
            readings: Readings::default(),
            processes: vec![],
        }
    }

    #[test]
    fn the_buffer_is_bounded_and_drops_the_oldest_first() {
        let mut buffer = Buffer::default();
        buffer.push_samples((0..5).map(sample).collect(), 3);
        assert_eq!(buffer.dropped, 2);
        let report = buffer.next_report(2);
        assert_eq!(report.samples, vec![sample(2), sample(3)]);
        buffer.delivered(&report);
        assert_eq!(buffer.next_report(10).samples, vec![sample(4)]);
    }

    #[test]
    fn simulated_values_pass_the_portal_checks_and_vary() {
        let mut source = simulated::SimulatedSource::demo_host("sim-host");
        let gpus = source.gpus().unwrap();
        assert_eq!(gpus.len(), 8);
        let now = chrono::Utc::now();
        let mut utils = std::collections::HashSet::new();
        for step in 0..30 {
            let samples = source
                .sample(now + chrono::Duration::seconds(step))
                .unwrap();
            for s in &samples {
                utils.insert(s.readings.gpu_util);
            }
            let report = Report {
                samples,
                ..Report::default()
            };
            assert_eq!(
                validate_report(
                    &report,
                    now + chrono::Duration::seconds(step),
                    chrono::Duration::hours(24)
                ),
                Ok(())
            );
        }
        assert!(utils.len() > 5, "values vary: {utils:?}");
        assert_eq!(
            source.kind(),
            berth_app::domain::telemetry::SourceKind::Simulated
        );
    }
}
