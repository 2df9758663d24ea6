//! The NVML source: `libnvidia-ml` loaded at run time through `nvml-wrapper`, so Berth builds
//! and runs on machines without a GPU. Values a GPU does not support are left out (`None`).

use super::source::{SourceError, TelemetrySource};
use berth_app::domain::telemetry::{
    EventKind, GpuInfo, GpuProcess, GpuSample, Readings, ReportedEvent, SourceKind,
};
use chrono::{DateTime, Utc};
use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{Clock, EccCounter, MemoryError, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{EventSet, Nvml};
use std::path::Path;
use std::time::Duration;

const MIB: u64 = 1024 * 1024;

/// Reads GPUs through NVML.
pub struct NvmlSource {
    nvml: &'static Nvml,
    events: Option<EventSet<'static>>,
    driver_version: Option<String>,
}

impl std::fmt::Debug for NvmlSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvmlSource")
            .field("driver_version", &self.driver_version)
            .finish_non_exhaustive()
    }
}

impl NvmlSource {
    /// Loads NVML (`lib`, or the system's `libnvidia-ml.so.1`) and registers for XID events on
    /// every GPU that supports them.
    pub fn open(lib: Option<&Path>) -> Result<Self, SourceError> {
        let nvml = match lib {
            Some(path) => Nvml::builder().lib_path(path.as_os_str()).init(),
            None => Nvml::init(),
        }
        .map_err(|err| SourceError(format!("cannot load NVML: {err}")))?;
        // The agent keeps NVML for the life of the process, and an event set borrows it.
        let nvml: &'static Nvml = Box::leak(Box::new(nvml));
        let events = match register_xid_events(nvml) {
            Ok(set) => set,
            Err(err) => {
                tracing::warn!(error = %err, "XID events unavailable; reading values only");
                None
            }
        };
        Ok(Self {
            driver_version: nvml.sys_driver_version().ok(),
            nvml,
            events,
        })
    }
}

fn register_xid_events(nvml: &'static Nvml) -> Result<Option<EventSet<'static>>, NvmlError> {
    let mut set = nvml.create_event_set()?;
    let mut registered = 0;
    for index in 0..nvml.device_count()? {
        let device = nvml.device_by_index(index)?;
        let supported = device
            .supported_event_types()
            .unwrap_or(EventTypes::empty());
        if supported.contains(EventTypes::CRITICAL_XID_ERROR) {
            set = device
                .register_events(EventTypes::CRITICAL_XID_ERROR, set)
                .map_err(|err| err.error)?;
            registered += 1;
        }
    }
    Ok((registered > 0).then_some(set))
}

fn optional<T>(result: Result<T, NvmlError>) -> Option<T> {
    result.ok()
}

impl TelemetrySource for NvmlSource {
    fn kind(&self) -> SourceKind {
        SourceKind::Nvml
    }

    fn driver_version(&self) -> Option<String> {
        self.driver_version.clone()
    }

    fn gpus(&mut self) -> Result<Vec<GpuInfo>, SourceError> {
        let err = |e: NvmlError| SourceError(e.to_string());
        let mut gpus = Vec::new();
        for index in 0..self.nvml.device_count().map_err(err)? {
            let device = self.nvml.device_by_index(index).map_err(err)?;
            gpus.push(GpuInfo {
                uuid: device.uuid().map_err(err)?,
                name: device.name().map_err(err)?,
                pci_bus_id: device.pci_info().ok().map(|pci| pci.bus_id),
                memory_total_mib: device.memory_info().map_err(err)?.total / MIB,
                device_index: index,
                minor_number: device.minor_number().ok(),
            });
        }
        Ok(gpus)
    }

    fn sample(&mut self, at: DateTime<Utc>) -> Result<Vec<GpuSample>, SourceError> {
        let err = |e: NvmlError| SourceError(e.to_string());
        let mut samples = Vec::new();
        for index in 0..self.nvml.device_count().map_err(err)? {
            let device = self.nvml.device_by_index(index).map_err(err)?;
            let utilization = device.utilization_rates().ok();
            let processes = device
                .running_compute_processes()
                .unwrap_or_default()
                .into_iter()
                .map(|p| GpuProcess {
                    pid: p.pid,
                    used_memory_mib: match p.used_gpu_memory {
                        UsedGpuMemory::Used(bytes) => Some(bytes / MIB),
                        UsedGpuMemory::Unavailable => None,
                    },
                })
                .collect();
            samples.push(GpuSample {
                uuid: device.uuid().map_err(err)?,
                at,
                readings: Readings {
                    gpu_util: utilization.as_ref().and_then(|u| u8::try_from(u.gpu).ok()),
                    mem_util: utilization
                        .as_ref()
                        .and_then(|u| u8::try_from(u.memory).ok()),
                    memory_used_mib: optional(device.memory_info()).map(|m| m.used / MIB),
                    temperature_c: optional(device.temperature(TemperatureSensor::Gpu))
                        .and_then(|t| i16::try_from(t).ok()),
                    power_mw: optional(device.power_usage()),
                    power_limit_mw: optional(device.enforced_power_limit()),
                    sm_clock_mhz: optional(device.clock_info(Clock::SM)),
                    throttle_reasons: optional(device.current_throttle_reasons()).map(|r| r.bits()),
                    ecc_corrected: optional(
                        device.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile),
                    ),
                    ecc_uncorrected: optional(
                        device.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile),
                    ),
                },
                processes,
            });
        }
        Ok(samples)
    }

    fn wait_event(&mut self, timeout: Duration) -> Option<ReportedEvent> {
        let Some(set) = &self.events else {
            std::thread::sleep(timeout);
            return None;
        };
        let millis = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
        match set.wait(millis) {
            Ok(data) if data.event_type.contains(EventTypes::CRITICAL_XID_ERROR) => {
                Some(ReportedEvent {
                    uuid: data.device.uuid().ok()?,
                    at: Utc::now(),
                    kind: EventKind::Xid,
                    code: match data.event_data {
                        Some(XidError::Value(code)) => i64::try_from(code).ok(),
                        _ => None,
                    },
                })
            }
            Ok(_) | Err(NvmlError::Timeout) => None,
            Err(err) => {
                tracing::warn!(error = %err, "waiting for NVML events");
                std::thread::sleep(timeout);
                None
            }
        }
    }
}
