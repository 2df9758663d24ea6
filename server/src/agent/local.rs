//! The agent inside `berth serve` and the telemetry job.
//!
//! - Demo nodes get a simulated source each (their GPUs are the demo fleet's; values are
//!   labelled simulated everywhere).
//! - With NVML present (or required), this host is registered as a node named after its host
//!   name and read through NVML, like a separate `berth agent` would.

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

/// Starts the local agents the settings ask for. Fails only when NVML is required and absent.
pub async fn start(
    db: &DatabaseConnection,
    settings: &TelemetrySettings,
    local: &LocalAgentSettings,
) -> Result<Vec<RunningAgent>, String> {
    let mut agents = Vec::new();
    if local.mode == LocalAgentMode::Off {
        return Ok(agents);
    }
    let options = AgentOptions {
        interval: local.interval,
        ..AgentOptions::default()
    };
    if matches!(local.mode, LocalAgentMode::Auto | LocalAgentMode::Nvml) {
        match NvmlSource::open(local.nvml_library.as_deref()) {
            Ok(source) => {
                let name = options.hostname.clone();
                // The operator runs `berth serve` on this host: its own GPUs are accepted.
                let node_id =
                    store::find_or_create_node(db, &name, &name, Some(true), chrono::Utc::now())
                        .await
                        .map_err(|err| format!("cannot add this host as a node: {err}"))?;
                tracing::info!(node.name = %name, "reading this host's GPUs through NVML");
                agents.push(super::start(
                    Box::new(source),
                    Arc::new(LocalTransport {
                        db: db.clone(),
                        settings: settings.clone(),
                        node_id,
                        sync_inventory: true,
                    }),
                    options.clone(),
                ));
            }
            Err(err) if local.mode == LocalAgentMode::Nvml => {
                return Err(format!("local_agent = nvml: {err}"));
            }
            Err(err) => tracing::info!(reason = %err, "no NVML on this host"),
        }
    }
    let demo = store::demo_gpus(db)
        .await
        .map_err(|err| format!("cannot read the demo fleet: {err}"))?;
    let demo_nodes = demo.len();
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
    if demo_nodes > 0 {
        tracing::info!(
            demo.nodes = demo_nodes,
            "simulating telemetry for the demo nodes"
        );
    }
    Ok(agents)
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
