//! The simulated source: plausible, varying values for the demo fleet and for machines without
//! NVML. Everything it produces is reported as `simulated`, and the pages and API say so.

use super::source::{SourceError, TelemetrySource};
use berth_app::domain::telemetry::{
    GpuInfo, GpuProcess, GpuSample, Readings, ReportedEvent, SourceKind,
};
use chrono::{DateTime, Timelike, Utc};
use rand::Rng;
use std::time::Duration;

/// One simulated GPU: a load that drifts between jobs and idle spells.
#[derive(Debug, Clone)]
struct SimGpu {
    info: GpuInfo,
    /// Current load, 0–1.
    load: f64,
    /// Load it drifts towards.
    target: f64,
    /// PID of the simulated job.
    pid: u32,
    power_limit_w: f64,
}

/// Simulated GPUs.
#[derive(Debug)]
pub struct SimulatedSource {
    gpus: Vec<SimGpu>,
}

/// A plausible power limit for a model name.
fn power_limit_w(model: &str) -> f64 {
    let model = model.to_ascii_uppercase();
    if model.contains("H200") || model.contains("H100") {
        700.0
    } else if model.contains("A100") {
        400.0
    } else if model.contains("L40") {
        350.0
    } else {
        230.0
    }
}

impl SimulatedSource {
    /// Simulates these GPUs.
    pub fn new(gpus: Vec<GpuInfo>) -> Self {
        let mut rng = rand::rng();
        Self {
            gpus: gpus
                .into_iter()
                .map(|info| {
                    let load = rng.random_range(0.0..1.0);
                    SimGpu {
                        power_limit_w: power_limit_w(&info.name),
                        info,
                        load,
                        target: load,
                        pid: rng.random_range(2_000..60_000),
                    }
                })
                .collect(),
        }
    }

    /// Eight GPUs of one model, for `berth agent --simulate` on a machine without NVML.
    pub fn demo_host(hostname: &str) -> Self {
        let gpus = (0..8)
            .map(|index| GpuInfo {
                uuid: format!("GPU-sim-{hostname}-{index}"),
                name: "NVIDIA H100 80GB HBM3 (simulated)".into(),
                pci_bus_id: Some(format!("00000000:{:02X}:00.0", 0x17 + index)),
                memory_total_mib: 81_559,
                device_index: index,
                minor_number: Some(index),
            })
            .collect();
        Self::new(gpus)
    }
}

impl TelemetrySource for SimulatedSource {
    fn kind(&self) -> SourceKind {
        SourceKind::Simulated
    }

    fn driver_version(&self) -> Option<String> {
        None
    }

    fn gpus(&mut self) -> Result<Vec<GpuInfo>, SourceError> {
        Ok(self.gpus.iter().map(|g| g.info.clone()).collect())
    }

    fn sample(&mut self, at: DateTime<Utc>) -> Result<Vec<GpuSample>, SourceError> {
        let mut rng = rand::rng();
        // Busier in the working day (UTC), quieter at night.
        let hour = f64::from(at.hour()) + f64::from(at.minute()) / 60.0;
        let daytime = 0.5
            + 0.5
                * ((hour - 9.0) / 24.0 * std::f64::consts::TAU)
                    .cos()
                    .max(-0.6);
        Ok(self
            .gpus
            .iter_mut()
            .map(|gpu| {
                if rng.random_bool(0.02) {
                    // A job starts or ends.
                    gpu.target = if rng.random_bool(0.35 + 0.5 * daytime) {
                        rng.random_range(0.55..1.0)
                    } else {
                        rng.random_range(0.0..0.08)
                    };
                    gpu.pid = rng.random_range(2_000..60_000);
                }
                let noise: f64 = rng.random_range(-0.04..0.04);
                gpu.load = (gpu.load + (gpu.target - gpu.load) * 0.25 + noise).clamp(0.0, 1.0);
                let load = gpu.load;
                let total = gpu.info.memory_total_mib as f64;
                let memory_used = if load > 0.1 {
                    total * (0.35 + 0.55 * load)
                } else {
                    3.0
                };
                let power_w = 0.1 * gpu.power_limit_w + load * 0.85 * gpu.power_limit_w;
                let busy = load > 0.1;
                GpuSample {
                    uuid: gpu.info.uuid.clone(),
                    at,
                    readings: Readings {
                        gpu_util: Some((load * 100.0).round() as u8),
                        mem_util: Some((load * 55.0).round() as u8),
                        memory_used_mib: Some(memory_used as u64),
                        temperature_c: Some(
                            (33.0 + load * 42.0 + rng.random_range(-1.0..1.0)) as i16,
                        ),
                        power_mw: Some((power_w * 1000.0) as u32),
                        power_limit_mw: Some((gpu.power_limit_w * 1000.0) as u32),
                        sm_clock_mhz: Some(if busy {
                            1_755 + (load * 225.0) as u32
                        } else {
                            345
                        }),
                        throttle_reasons: Some(if busy { 0 } else { 0x1 }),
                        ecc_corrected: Some(0),
                        ecc_uncorrected: Some(0),
                    },
                    processes: if busy {
                        vec![GpuProcess {
                            pid: gpu.pid,
                            used_memory_mib: Some((memory_used - 3.0) as u64),
                        }]
                    } else {
                        vec![]
                    },
                }
            })
            .collect())
    }

    fn wait_event(&mut self, timeout: Duration) -> Option<ReportedEvent> {
        std::thread::sleep(timeout);
        None
    }
}
