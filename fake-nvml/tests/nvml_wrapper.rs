//! Loads the built fake library through the real nvml-wrapper and checks that every value the
//! configuration file sets reads back exactly, and that XID events arrive once and in order.

use nvml_wrapper::Nvml;
use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{Clock, EccCounter, MemoryError, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const MIB: u64 = 1024 * 1024;
const UUID_0: &str = "GPU-11111111-2222-3333-4444-555555555555";
const UUID_1: &str = "GPU-66666666-7777-8888-9999-000000000000";

/// The crate is also an rlib, so cargo builds it (cdylib included) as this test's dependency and
/// leaves `libnvidia_ml.so` in `target/<profile>/deps/`, next to this test's executable.
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let path = exe.with_file_name("libnvidia_ml.so");
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

fn config() -> Value {
    json!({
        "driver_version": "550.54.15",
        "devices": [
            {
                "uuid": UUID_0,
                "name": "NVIDIA H100 80GB HBM3",
                "pci_bus_id": "00000000:17:00.0",
                "memory_total_mib": 81559,
                "memory_used_mib": 1024,
                "gpu_util": 87,
                "mem_util": 40,
                "temperature_c": 61,
                "power_mw": 312000,
                "power_limit_mw": 700000,
                "sm_clock_mhz": 1980,
                "throttle_reasons": 0x4,
                "ecc_corrected": 3,
                "ecc_uncorrected": 1,
                "processes": [
                    {"pid": 4242, "used_memory_mib": 1000},
                    {"pid": 4343, "used_memory_mib": null}
                ],
                "xid_events": [79]
            },
            {
                "uuid": UUID_1,
                "name": "NVIDIA A100-SXM4-40GB",
                "memory_total_mib": 40960,
                "memory_used_mib": 0,
                "gpu_util": 0,
                "mem_util": 0,
                "temperature_c": null,
                "power_mw": 55000,
                "power_limit_mw": 400000,
                "sm_clock_mhz": 210,
                "throttle_reasons": 1,
                "ecc_corrected": 0,
                "ecc_uncorrected": 0
            }
        ]
    })
}

fn write(path: &Path, config: &Value) {
    std::fs::write(path, serde_json::to_vec(config).unwrap()).unwrap();
}

// One test only: the configuration is passed through the process environment.
#[test]
fn nvml_wrapper_reads_the_configured_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nvml.json");
    let mut config = config();
    write(&path, &config);
    // SAFETY: the only test in this binary, and no other thread reads the environment yet.
    unsafe { std::env::set_var("BERTH_FAKE_NVML_CONFIG", &path) };

    let nvml = Nvml::builder()
        .lib_path(library().as_os_str())
        .init()
        .unwrap();
    assert_eq!(nvml.sys_driver_version().unwrap(), "550.54.15");
    assert_eq!(nvml.sys_nvml_version().unwrap(), "12.550.54.15");
    assert_eq!(nvml.sys_cuda_driver_version().unwrap(), 12040);
    assert_eq!(nvml.device_count().unwrap(), 2);
    assert!(matches!(
        nvml.device_by_index(2),
        Err(NvmlError::InvalidArg)
    ));

    let gpu = nvml.device_by_index(0).unwrap();
    assert_eq!(gpu.index().unwrap(), 0);
    assert_eq!(gpu.name().unwrap(), "NVIDIA H100 80GB HBM3");
    assert_eq!(gpu.uuid().unwrap(), UUID_0);
    let pci = gpu.pci_info().unwrap();
    assert_eq!(
        (pci.bus_id.as_str(), pci.domain, pci.bus, pci.device),
        ("00000000:17:00.0", 0, 0x17, 0)
    );
    let memory = gpu.memory_info().unwrap();
    assert_eq!(
        (memory.total, memory.used, memory.free),
        (81559 * MIB, 1024 * MIB, 80535 * MIB)
    );
    let utilization = gpu.utilization_rates().unwrap();
    assert_eq!((utilization.gpu, utilization.memory), (87, 40));
    assert_eq!(gpu.temperature(TemperatureSensor::Gpu).unwrap(), 61);
    assert_eq!(gpu.power_usage().unwrap(), 312_000);
    assert_eq!(gpu.enforced_power_limit().unwrap(), 700_000);
    assert_eq!(gpu.clock_info(Clock::SM).unwrap(), 1980);
    assert_eq!(
        gpu.current_throttle_reasons().unwrap(),
        ThrottleReasons::SW_POWER_CAP
    );
    assert_eq!(
        gpu.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile)
            .unwrap(),
        3
    );
    assert_eq!(
        gpu.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Aggregate)
            .unwrap(),
        1
    );
    assert_eq!(gpu.running_compute_processes_count().unwrap(), 2);
    let processes: Vec<_> = gpu
        .running_compute_processes()
        .unwrap()
        .into_iter()
        .map(|p| (p.pid, p.used_gpu_memory))
        .collect();
    assert_eq!(
        processes,
        [
            (4242, UsedGpuMemory::Used(1000 * MIB)),
            (4343, UsedGpuMemory::Unavailable)
        ]
    );
    assert_eq!(
        gpu.supported_event_types().unwrap(),
        EventTypes::CRITICAL_XID_ERROR
    );

    let other = nvml.device_by_index(1).unwrap();
    assert_eq!(other.uuid().unwrap(), UUID_1);
    assert_eq!(other.pci_info().unwrap().bus_id, "00000000:02:00.0");
    assert_eq!(other.memory_info().unwrap().total, 40960 * MIB);
    assert!(matches!(
        other.temperature(TemperatureSensor::Gpu),
        Err(NvmlError::NotSupported)
    ));
    assert_eq!(other.clock_info(Clock::SM).unwrap(), 210);
    assert_eq!(
        other.current_throttle_reasons().unwrap(),
        ThrottleReasons::GPU_IDLE
    );
    assert!(other.running_compute_processes().unwrap().is_empty());

    // XID events: the configured one, then nothing, then one appended while the process runs.
    let set = nvml.create_event_set().unwrap();
    let set = gpu
        .register_events(EventTypes::CRITICAL_XID_ERROR, set)
        .unwrap();
    let set = other
        .register_events(EventTypes::CRITICAL_XID_ERROR, set)
        .unwrap();
    let event = set.wait(1000).unwrap();
    assert_eq!(event.device.uuid().unwrap(), UUID_0);
    assert_eq!(event.event_type, EventTypes::CRITICAL_XID_ERROR);
    assert_eq!(event.event_data, Some(XidError::Value(79)));
    let started = Instant::now();
    assert!(matches!(set.wait(200), Err(NvmlError::Timeout)));
    assert!(started.elapsed() >= Duration::from_millis(200));

    config["devices"][1]["xid_events"] = json!([48]);
    write(&path, &config);
    let event = set.wait(1000).unwrap();
    assert_eq!(event.device.uuid().unwrap(), UUID_1);
    assert_eq!(event.event_data, Some(XidError::Value(48)));
    assert!(matches!(set.wait(0), Err(NvmlError::Timeout)));

    // A broken file fails data calls rather than serving stale values.
    std::fs::write(&path, "not json").unwrap();
    assert!(matches!(gpu.power_usage(), Err(NvmlError::Unknown)));
}
