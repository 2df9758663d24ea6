//! The agent inside `berth serve` and the telemetry job.
//!
//! - Demo nodes get a simulated source each (their GPUs are the demo fleet's; values are
//!   labelled simulated everywhere).
//! - With NVML present (or required), this host is registered as a node named after its host
//!   name and read through NVML, like a separate `berth agent` would.
//!
//! Several replicas of the portal run with the same settings: each part is run by the replica
//! that holds its lease in the database (`leader_leases`), the demo fleet by one replica, each
//! host's GPUs by one replica on that host. When that replica stops, it gives the lease up and
//! another takes the work over at its next renewal; when it dies, once the lease runs out.

use super::nvml::NvmlSource;
use super::simulated::SimulatedSource;
use super::transport::LocalTransport;
use super::{AgentOptions, RunningAgent};
use crate::configuration::{LocalAgentMode, LocalAgentSettings};
use berth_app::backend::clock::Clock;
use berth_app::backend::db::telemetry as store;
use berth_app::backend::state::TelemetrySettings;
use berth_app::backend::telemetry;
use berth_app::domain::telemetry::GpuInfo;
use sea_orm::DatabaseConnection;
use std::sync::Arc;

/// The work of the agent inside `berth serve`, each part run by one replica at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Role {
    /// Reading this host's GPUs through NVML (one replica per host).
    Host(String),
    /// Simulating the demo fleet (one replica of the portal).
    Demo,
}

impl Role {
    /// The name of its lease.
    fn lease(&self) -> String {
        match self {
            Self::Host(hostname) => format!("local-agent:host:{hostname}"),
            Self::Demo => "local-agent:demo".to_owned(),
        }
    }
}

/// The local agents of this replica, run while it holds their leases.
pub struct LocalAgents {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl LocalAgents {
    /// Stops the agents this replica runs and gives their leases up, so that another replica
    /// takes them over at once.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

/// Starts the local agents the settings ask for, each only while this replica (`replica`)
/// holds its lease in the database: every replica runs with the same settings, and one of them
/// simulates the demo fleet (and one per host reads that host's GPUs). Fails only when NVML is
/// required and absent.
pub async fn start(
    db: &DatabaseConnection,
    settings: &TelemetrySettings,
    local: &LocalAgentSettings,
    replica: &str,
) -> Result<LocalAgents, String> {
    let idle = LocalAgents {
        stop: None,
        task: None,
    };
    if local.mode == LocalAgentMode::Off {
        return Ok(idle);
    }
    let options = AgentOptions {
        interval: local.interval,
        ..AgentOptions::default()
    };
    let mut roles = Vec::new();
    if matches!(local.mode, LocalAgentMode::Auto | LocalAgentMode::Nvml) {
        match NvmlSource::open(local.nvml_library.as_deref()) {
            Ok(_) => roles.push(Role::Host(options.hostname.clone())),
            Err(err) if local.mode == LocalAgentMode::Nvml => {
                return Err(format!("local_agent = nvml: {err}"));
            }
            Err(err) => tracing::info!(reason = %err, "no NVML on this host"),
        }
    }
    let demo_nodes = store::demo_gpus(db)
        .await
        .map_err(|err| format!("cannot read the demo fleet: {err}"))?
        .len();
    if demo_nodes > 0 {
        roles.push(Role::Demo);
    }
    if roles.is_empty() {
        return Ok(idle);
    }
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(supervise(
        db.clone(),
        settings.clone(),
        local.clone(),
        options,
        replica.to_owned(),
        roles,
        stopped,
    ));
    Ok(LocalAgents {
        stop: Some(stop),
        task: Some(task),
    })
}

/// Holds (or waits for) each role's lease, renewing it every third of its length; runs a role's
/// agents while the lease is this replica's and stops them when it is lost (a replica whose
/// database went away stops once its hold has run out, as another may have taken over).
async fn supervise(
    db: DatabaseConnection,
    settings: TelemetrySettings,
    local: LocalAgentSettings,
    options: AgentOptions,
    replica: String,
    roles: Vec<Role>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let lease = chrono::TimeDelta::from_std(local.lease).unwrap_or(chrono::TimeDelta::seconds(15));
    let mut running: Vec<(Role, Vec<RunningAgent>, chrono::DateTime<chrono::Utc>)> = Vec::new();
    loop {
        for role in &roles {
            let now = chrono::Utc::now();
            let held = berth_app::backend::db::leases::hold(
                &db,
                &role.lease(),
                &replica,
                now,
                now + lease,
            )
            .await;
            let at = running.iter().position(|(r, _, _)| r == role);
            match (held, at) {
                (Ok(true), Some(at)) => running[at].2 = now + lease,
                (Ok(true), None) => {
                    match start_role(&db, &settings, &local, &options, role).await {
                        Ok(agents) => {
                            tracing::info!(lease = %role.lease(), "this replica runs it");
                            running.push((role.clone(), agents, now + lease));
                        }
                        Err(err) => {
                            tracing::warn!(lease = %role.lease(), error = %err, "cannot start it");
                            let _ = berth_app::backend::db::leases::release(
                                &db,
                                &role.lease(),
                                &replica,
                            )
                            .await;
                        }
                    }
                }
                (Ok(false), Some(at)) => {
                    tracing::info!(lease = %role.lease(), "another replica took it over");
                    stop_all(running.remove(at).1).await;
                }
                (Err(err), Some(at)) if running[at].2 <= now => {
                    tracing::warn!(lease = %role.lease(), error = %err, "hold ran out; stopping");
                    stop_all(running.remove(at).1).await;
                }
                (Err(err), _) => {
                    tracing::warn!(lease = %role.lease(), error = %err, "cannot renew the hold");
                }
                (Ok(false), None) => {}
            }
        }
        tokio::select! {
            _ = &mut stopped => break,
            () = tokio::time::sleep(local.lease / 3) => {}
        }
    }
    for (role, agents, _) in running {
        stop_all(agents).await;
        if let Err(err) =
            berth_app::backend::db::leases::release(&db, &role.lease(), &replica).await
        {
            tracing::warn!(lease = %role.lease(), error = %err, "cannot give the hold up");
        }
    }
}

async fn stop_all(agents: Vec<RunningAgent>) {
    for agent in agents {
        let _ = agent.stop().await;
    }
}

/// Starts the agents of `role`.
async fn start_role(
    db: &DatabaseConnection,
    settings: &TelemetrySettings,
    local: &LocalAgentSettings,
    options: &AgentOptions,
    role: &Role,
) -> Result<Vec<RunningAgent>, String> {
    match role {
        Role::Host(name) => {
            let source = NvmlSource::open(local.nvml_library.as_deref())
                .map_err(|err| format!("NVML: {err}"))?;
            // The operator runs `berth serve` on this host: its own GPUs are accepted.
            let node_id =
                store::find_or_create_node(db, name, name, Some(true), chrono::Utc::now())
                    .await
                    .map_err(|err| format!("cannot add this host as a node: {err}"))?;
            tracing::info!(node.name = %name, "reading this host's GPUs through NVML");
            Ok(vec![super::start(
                Box::new(source),
                Arc::new(LocalTransport {
                    db: db.clone(),
                    settings: settings.clone(),
                    node_id,
                    sync_inventory: true,
                }),
                options.clone(),
            )])
        }
        Role::Demo => {
            let demo = store::demo_gpus(db)
                .await
                .map_err(|err| format!("cannot read the demo fleet: {err}"))?;
            let mut agents = Vec::with_capacity(demo.len());
            for (node_id, hostname, gpus) in demo {
                let gpus = gpus
                    .into_iter()
                    .enumerate()
                    .map(|(index, (uuid, name, memory))| GpuInfo {
                        uuid,
                        name,
                        pci_bus_id: None,
                        memory_total_mib: u64::try_from(memory).unwrap_or(1),
                        device_index: u32::try_from(index).unwrap_or(0),
                        minor_number: None,
                    })
                    .collect();
                agents.push(super::start(
                    Box::new(SimulatedSource::new(gpus)),
                    Arc::new(LocalTransport {
                        db: db.clone(),
                        settings: settings.clone(),
                        node_id,
                        sync_inventory: false,
                    }),
                    AgentOptions {
                        hostname,
                        ..options.clone()
                    },
                ));
            }
            tracing::info!(
                demo.nodes = agents.len(),
                "simulating telemetry for the demo nodes"
            );
            Ok(agents)
        }
    }
}

/// Runs the rollup-and-prune job every `every` on `clock` until the task is aborted.
pub fn spawn_job(
    db: DatabaseConnection,
    settings: TelemetrySettings,
    every: std::time::Duration,
    clock: Arc<dyn Clock>,
    metrics: Arc<berth_app::backend::metrics::PortalMetrics>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // The first run after one interval: a portal that just started has nothing to roll up.
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let started = std::time::Instant::now();
            let result = telemetry::run_maintenance(&db, &settings, clock.now()).await;
            metrics.job_run(
                "telemetry_rollup",
                result.is_ok(),
                started.elapsed().as_secs_f64(),
            );
            match result {
                Ok(outcome) => tracing::debug!(?outcome, "telemetry rolled up and pruned"),
                Err(err) => tracing::warn!(error = %err, "telemetry rollup failed"),
            }
            // Platform admins hear about agents gone silent.
            match telemetry::tell_silent_nodes(&db, settings.incident_first_response, clock.now())
                .await
            {
                Ok(0) => {}
                Ok(told) => tracing::warn!(nodes = told, "node agents went silent"),
                Err(err) => tracing::warn!(error = %err, "checking for silent agents failed"),
            }
        }
    })
}
