//! The JSON file the fake library serves its values from (see the crate docs for the format).

use nvml_wrapper_sys::bindings::{
    nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED, nvmlReturn_enum_NVML_ERROR_UNKNOWN, nvmlReturn_t,
};
use serde::Deserialize;

/// The environment variable that names the configuration file.
pub const CONFIG_ENV: &str = "BERTH_FAKE_NVML_CONFIG";

/// The whole file: the driver and its GPUs, in index order.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default = "default_driver_version")]
    pub driver_version: String,
    /// CUDA driver version as NVML reports it: 1000 × major + 10 × minor.
    #[serde(default = "default_cuda_driver_version")]
    pub cuda_driver_version: i32,
    pub devices: Vec<Device>,
}

/// One GPU. A reading that is `None` (missing or `null`) answers `NVML_ERROR_NOT_SUPPORTED`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Device {
    pub uuid: String,
    pub name: String,
    /// Defaults to `00000000:XX:00.0` with `XX` the index + 1 in hex.
    pub pci_bus_id: Option<String>,
    #[serde(default = "default_memory_total_mib")]
    pub memory_total_mib: u64,
    pub memory_used_mib: Option<u64>,
    /// The device file's minor number (`/dev/nvidia<minor>`); defaults to the index.
    pub minor_number: Option<u32>,
    pub gpu_util: Option<u32>,
    pub mem_util: Option<u32>,
    pub temperature_c: Option<u32>,
    pub power_mw: Option<u32>,
    pub power_limit_mw: Option<u32>,
    pub sm_clock_mhz: Option<u32>,
    pub throttle_reasons: Option<u64>,
    pub ecc_corrected: Option<u64>,
    pub ecc_uncorrected: Option<u64>,
    #[serde(default)]
    pub processes: Vec<Process>,
    /// XID codes, each delivered once through `nvmlEventSetWait_v2`.
    #[serde(default)]
    pub xid_events: Vec<u64>,
}

/// A compute process; `used_memory_mib: null` reports NVML's "not available".
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Process {
    pub pid: u32,
    pub used_memory_mib: Option<u64>,
}

fn default_driver_version() -> String {
    "550.54.15".into()
}

fn default_cuda_driver_version() -> i32 {
    12040
}

fn default_memory_total_mib() -> u64 {
    81559
}

impl Config {
    /// Reads the file named by [`CONFIG_ENV`] afresh; any failure is `NVML_ERROR_UNKNOWN`.
    pub fn load() -> Result<Self, nvmlReturn_t> {
        let path = std::env::var_os(CONFIG_ENV).ok_or(nvmlReturn_enum_NVML_ERROR_UNKNOWN)?;
        let text = std::fs::read(path).map_err(|_| nvmlReturn_enum_NVML_ERROR_UNKNOWN)?;
        serde_json::from_slice(&text).map_err(|_| nvmlReturn_enum_NVML_ERROR_UNKNOWN)
    }
}

impl Device {
    /// The PCI bus ID, configured or derived from the device's index.
    pub fn pci_bus_id(&self, index: usize) -> String {
        self.pci_bus_id
            .clone()
            .unwrap_or_else(|| format!("00000000:{:02X}:00.0", index + 1))
    }
}

/// Turns a missing reading into `NVML_ERROR_NOT_SUPPORTED`.
pub fn supported<T>(reading: Option<T>) -> Result<T, nvmlReturn_t> {
    reading.ok_or(nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED)
}
