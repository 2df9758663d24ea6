//! Reads what the node agent will read from NVML (issue 6) and prints it, one line per value, so
//! the NVML path can be checked on a real GPU host before the agent exists.
//!
//! ```sh
//! cargo run -p berth-server --example nvml_probe              # the system's libnvidia-ml.so.1
//! cargo run -p berth-server --example nvml_probe -- LIB_PATH  # another library (a fake one)
//! ```
//!
//! A value the GPU or driver does not support prints its NVML error instead; nothing aborts.

use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, EccCounter, MemoryError, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use std::fmt::Debug;
use std::time::Instant;

fn show<T: Debug, E: Debug>(label: &str, value: Result<T, E>) {
    match value {
        Ok(value) => println!("  {label}: {value:?}"),
        Err(err) => println!("  {label}: unavailable ({err:?})"),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let lib = std::env::args_os().nth(1);
    let nvml = match &lib {
        Some(path) => Nvml::builder().lib_path(path).init()?,
        None => Nvml::init()?,
    };
    println!(
        "library: {}",
        lib.as_ref()
            .map_or("libnvidia-ml.so.1 (system)".into(), |p| p.to_string_lossy())
    );
    show("driver version", nvml.sys_driver_version());
    show("NVML version", nvml.sys_nvml_version());
    show("CUDA driver version", nvml.sys_cuda_driver_version());
    let count = nvml.device_count()?;
    println!("devices: {count}");
    for index in 0..count {
        let device = nvml.device_by_index(index)?;
        println!("device {index}:");
        show("name", device.name());
        show("uuid", device.uuid());
        show("pci bus id", device.pci_info().map(|pci| pci.bus_id));
        show(
            "memory total / used (MiB)",
            device
                .memory_info()
                .map(|m| (m.total / (1024 * 1024), m.used / (1024 * 1024))),
        );
        show(
            "utilization gpu / memory (%)",
            device.utilization_rates().map(|u| (u.gpu, u.memory)),
        );
        show(
            "temperature (°C)",
            device.temperature(TemperatureSensor::Gpu),
        );
        show("power draw (mW)", device.power_usage());
        show("power limit (mW)", device.enforced_power_limit());
        show("SM clock (MHz)", device.clock_info(Clock::SM));
        show("throttle reasons", device.current_throttle_reasons());
        show(
            "ECC corrected / uncorrected (volatile)",
            device
                .total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile)
                .and_then(|corrected| {
                    device
                        .total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile)
                        .map(|uncorrected| (corrected, uncorrected))
                }),
        );
        show(
            "compute processes (pid, MiB)",
            device.running_compute_processes().map(|list| {
                list.into_iter()
                    .map(|p| {
                        let used = match p.used_gpu_memory {
                            UsedGpuMemory::Used(bytes) => Some(bytes / (1024 * 1024)),
                            UsedGpuMemory::Unavailable => None,
                        };
                        (p.pid, used)
                    })
                    .collect::<Vec<_>>()
            }),
        );
    }
    println!("read in {} ms", started.elapsed().as_millis());
    Ok(())
}
