//! A fake NVML (`libnvidia_ml.so`) for tests: it exports the C functions of NVML that Berth reads
//! through [`nvml-wrapper`](https://docs.rs/nvml-wrapper) 0.13 and answers them from a JSON file
//! that the test writes and may rewrite at any time.
//!
//! # Use
//!
//! The crate is both a `cdylib` and an `rlib`. Being an rlib makes cargo build it, shared library
//! included, for any test target that depends on it: its own integration tests, or another
//! crate's tests with `berth-fake-nvml` as a dev-dependency. The library then lies next to the test
//! executable, in `<target dir>/<profile>/deps/libnvidia_ml.so`, so a test finds it with
//! `std::env::current_exe()?.with_file_name("libnvidia_ml.so")`; `cargo build -p berth-fake-nvml`
//! also copies it to `target/debug/libnvidia_ml.so`. Point the environment variable
//! `BERTH_FAKE_NVML_CONFIG` at the JSON file and load the library with
//! `nvml_wrapper::Nvml::builder().lib_path(path).init()`.
//!
//! # Configuration
//!
//! ```json
//! {
//!   "driver_version": "550.54.15",
//!   "cuda_driver_version": 12040,
//!   "devices": [
//!     {
//!       "uuid": "GPU-11111111-2222-3333-4444-555555555555",
//!       "name": "NVIDIA H100 80GB HBM3",
//!       "pci_bus_id": "00000000:17:00.0",
//!       "memory_total_mib": 81559,
//!       "memory_used_mib": 1024,
//!       "gpu_util": 87,
//!       "mem_util": 40,
//!       "temperature_c": 61,
//!       "power_mw": 312000,
//!       "power_limit_mw": 700000,
//!       "sm_clock_mhz": 1980,
//!       "throttle_reasons": 0,
//!       "ecc_corrected": 0,
//!       "ecc_uncorrected": 0,
//!       "processes": [{"pid": 4242, "used_memory_mib": 1000}],
//!       "xid_events": [79]
//!     }
//!   ]
//! }
//! ```
//!
//! Only `devices` and each device's `uuid` and `name` are required; unknown keys are rejected.
//! `driver_version` defaults to `550.54.15` (NVML's version is `12.` + it), `cuda_driver_version`
//! to 12040, `minor_number` to the device index, `pci_bus_id` to `00000000:XX:00.0` with `XX` the device index + 1 in hex,
//! `memory_total_mib` to 81559, and `processes` and `xid_events` to empty. Every other field is a
//! reading: missing or `null`, its call answers `NVML_ERROR_NOT_SUPPORTED` (memory info needs
//! `memory_used_mib`, utilization needs both `gpu_util` and `mem_util`). A process whose
//! `used_memory_mib` is `null` reports NVML's "not available" value. ECC counts are the same for
//! volatile and aggregate counters; the graphics clock reports the SM clock.
//!
//! The file is read afresh on every call, so a running process sees changes. If it cannot be read
//! or parsed, `nvmlInit_v2` and every data call answer `NVML_ERROR_UNKNOWN`.
//!
//! # Events
//!
//! Only XID critical errors (`nvmlEventTypeXidCriticalError`) are reported as supported and
//! delivered; registering other types is accepted but they never occur. Each entry of a device's
//! `xid_events` is delivered once per process (keyed by uuid), in order, by `nvmlEventSetWait_v2`
//! on any set the device is registered with, so appending to the list delivers only the new codes.
//! With nothing to deliver, the wait polls the file every 50 ms until its timeout, then answers
//! `NVML_ERROR_TIMEOUT`.
//!
//! # Safety
//!
//! Every export is an `unsafe extern "C"` function with NVML's contract: pointer arguments are null
//! or valid for the access NVML documents. Device and event-set handles are small integers in
//! pointer clothing, validated on each call; nothing is ever dereferenced through them.

#![allow(non_snake_case, clippy::missing_safety_doc)]

mod config;

use config::{Config, supported};
use nvml_wrapper_sys::bindings::{
    nvmlDevice_t, nvmlEventData_t, nvmlEventSet_t, nvmlEventTypeXidCriticalError, nvmlMemory_t,
    nvmlMemory_v2_t, nvmlPciInfo_t, nvmlProcessInfo_t, nvmlProcessInfo_v2_t,
    nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE as INSUFFICIENT_SIZE,
    nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT as INVALID_ARGUMENT,
    nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED as NOT_SUPPORTED,
    nvmlReturn_enum_NVML_ERROR_TIMEOUT as TIMEOUT,
    nvmlReturn_enum_NVML_ERROR_UNINITIALIZED as UNINITIALIZED,
    nvmlReturn_enum_NVML_ERROR_UNKNOWN as UNKNOWN, nvmlReturn_enum_NVML_SUCCESS as SUCCESS,
    nvmlReturn_t, nvmlUtilization_t,
};
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_uint, c_ulonglong};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The one event type this fake supports.
const XID: u64 = nvmlEventTypeXidCriticalError as u64;
/// How often a waiting `nvmlEventSetWait_v2` re-reads the file.
const POLL: Duration = Duration::from_millis(50);

/// Writes `value` through `out` unless it is an error or `out` is null.
unsafe fn put<T>(out: *mut T, value: Result<T, nvmlReturn_t>) -> nvmlReturn_t {
    match value {
        Err(code) => code,
        Ok(_) if out.is_null() => INVALID_ARGUMENT,
        Ok(value) => {
            unsafe { out.write(value) };
            SUCCESS
        }
    }
}

/// Copies `value` with its terminating NUL into the caller's `length`-byte buffer.
unsafe fn put_str(
    buf: *mut c_char,
    length: c_uint,
    value: Result<String, nvmlReturn_t>,
) -> nvmlReturn_t {
    let value = match value {
        Ok(value) => value,
        Err(code) => return code,
    };
    if buf.is_null() {
        return INVALID_ARGUMENT;
    }
    if value.len() >= length as usize {
        return INSUFFICIENT_SIZE;
    }
    unsafe {
        std::ptr::copy_nonoverlapping(value.as_ptr().cast::<c_char>(), buf, value.len());
        buf.add(value.len()).write(0);
    }
    SUCCESS
}

/// Copies `value` into a fixed C string field, truncating and NUL-terminating it.
fn fill(field: &mut [c_char], value: &str) {
    let room = field.len() - 1;
    for (dst, src) in field.iter_mut().zip(value.bytes().take(room)) {
        *dst = src as c_char;
    }
}

/// The handle of the device at `index`: index + 1, so that it is never null.
fn handle(index: usize) -> nvmlDevice_t {
    std::ptr::without_provenance_mut(index + 1)
}

/// The index of the device `handle` names in `config`.
fn index_of(handle: nvmlDevice_t, config: &Config) -> Result<usize, nvmlReturn_t> {
    (handle.addr().checked_sub(1))
        .filter(|index| *index < config.devices.len())
        .ok_or(INVALID_ARGUMENT)
}

/// Loads the configuration and reads a value of the device `handle` names.
fn read<T>(
    handle: nvmlDevice_t,
    f: impl FnOnce(usize, &config::Device) -> Result<T, nvmlReturn_t>,
) -> Result<T, nvmlReturn_t> {
    let config = Config::load()?;
    let index = index_of(handle, &config)?;
    f(index, &config.devices[index])
}

const MIB: u64 = 1024 * 1024;

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit_v2() -> nvmlReturn_t {
    Config::load().map_or_else(|code| code, |_| SUCCESS)
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> nvmlReturn_t {
    nvmlInit_v2()
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlShutdown() -> nvmlReturn_t {
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlErrorString(result: nvmlReturn_t) -> *const c_char {
    let text = match result {
        SUCCESS => c"Success",
        UNINITIALIZED => c"Uninitialized",
        INVALID_ARGUMENT => c"Invalid Argument",
        NOT_SUPPORTED => c"Not Supported",
        INSUFFICIENT_SIZE => c"Insufficient Size",
        TIMEOUT => c"Timeout",
        UNKNOWN => c"Unknown Error",
        _ => c"Unknown Error (fake NVML)",
    };
    text.as_ptr()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(
    version: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    unsafe { put_str(version, length, Config::load().map(|c| c.driver_version)) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetNVMLVersion(
    version: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    let value = Config::load().map(|c| format!("12.{}", c.driver_version));
    unsafe { put_str(version, length, value) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion(version: *mut c_int) -> nvmlReturn_t {
    unsafe { put(version, Config::load().map(|c| c.cuda_driver_version)) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion_v2(version: *mut c_int) -> nvmlReturn_t {
    unsafe { nvmlSystemGetCudaDriverVersion(version) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> nvmlReturn_t {
    unsafe { put(count, Config::load().map(|c| c.devices.len() as c_uint)) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(
    index: c_uint,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    let value = Config::load().and_then(|config| {
        let index = index as usize;
        (index < config.devices.len())
            .then(|| handle(index))
            .ok_or(INVALID_ARGUMENT)
    });
    unsafe { put(device, value) }
}

/// Exports device getters `fn(device, out: *mut T)` that write the value `read` computes from the
/// device's index and configuration.
macro_rules! getters {
    ($($name:ident: $ty:ty = |$index:pat_param, $d:pat_param| $value:expr;)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(device: nvmlDevice_t, out: *mut $ty) -> nvmlReturn_t {
            unsafe { put(out, read(device, |$index, $d| $value)) }
        }
    )*};
}

getters! {
    nvmlDeviceGetIndex: c_uint = |index, _| Ok(index as c_uint);
    nvmlDeviceGetPciInfo_v3: nvmlPciInfo_t = |index, d| Ok(pci_info(&d.pci_bus_id(index)));
    nvmlDeviceGetMemoryInfo: nvmlMemory_t = |_, d| {
        let (total, free, used) = memory(d)?;
        Ok(nvmlMemory_t { total, free, used })
    };
    nvmlDeviceGetMemoryInfo_v2: nvmlMemory_v2_t = |_, d| {
        let (total, free, used) = memory(d)?;
        let version = (size_of::<nvmlMemory_v2_t>() | 2 << 24) as c_uint;
        Ok(nvmlMemory_v2_t { version, total, reserved: 0, free, used })
    };
    nvmlDeviceGetUtilizationRates: nvmlUtilization_t = |_, d| {
        Ok(nvmlUtilization_t { gpu: supported(d.gpu_util)?, memory: supported(d.mem_util)? })
    };
    nvmlDeviceGetPowerUsage: c_uint = |_, d| supported(d.power_mw);
    nvmlDeviceGetEnforcedPowerLimit: c_uint = |_, d| supported(d.power_limit_mw);
    nvmlDeviceGetCurrentClocksEventReasons: c_ulonglong = |_, d| supported(d.throttle_reasons);
    nvmlDeviceGetCurrentClocksThrottleReasons: c_ulonglong = |_, d| supported(d.throttle_reasons);
    nvmlDeviceGetSupportedEventTypes: c_ulonglong = |_, _| Ok(XID);
}

/// PCI information for a bus ID of the form `DDDDDDDD:BB:DD.F` (hexadecimal).
fn pci_info(bus_id: &str) -> nvmlPciInfo_t {
    let field = |range| {
        bus_id
            .get(range)
            .and_then(|s| c_uint::from_str_radix(s, 16).ok())
    };
    let mut info = nvmlPciInfo_t {
        busIdLegacy: [0; 16],
        domain: field(0..8).unwrap_or(0),
        bus: field(9..11).unwrap_or(0),
        device: field(12..14).unwrap_or(0),
        pciDeviceId: 0,
        pciSubSystemId: 0,
        busId: [0; 32],
    };
    fill(&mut info.busId, bus_id);
    fill(&mut info.busIdLegacy, bus_id.get(4..).unwrap_or(bus_id));
    info
}

/// Total, free and used memory in bytes.
fn memory(d: &config::Device) -> Result<(u64, u64, u64), nvmlReturn_t> {
    let (total, used) = (d.memory_total_mib, supported(d.memory_used_mib)?);
    Ok((total * MIB, total.saturating_sub(used) * MIB, used * MIB))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetName(
    device: nvmlDevice_t,
    name: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    unsafe { put_str(name, length, read(device, |_, d| Ok(d.name.clone()))) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMinorNumber(
    device: nvmlDevice_t,
    minor: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        put(
            minor,
            read(device, |index, d| {
                Ok(d.minor_number.unwrap_or(index as c_uint))
            }),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUUID(
    device: nvmlDevice_t,
    uuid: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    unsafe { put_str(uuid, length, read(device, |_, d| Ok(d.uuid.clone()))) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTemperature(
    device: nvmlDevice_t,
    sensor: c_uint,
    temp: *mut c_uint,
) -> nvmlReturn_t {
    // Sensor 0 is NVML_TEMPERATURE_GPU, the only one NVML defines.
    let value = read(device, |_, d| match sensor {
        0 => supported(d.temperature_c),
        _ => Err(INVALID_ARGUMENT),
    });
    unsafe { put(temp, value) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetClockInfo(
    device: nvmlDevice_t,
    type_: c_uint,
    clock: *mut c_uint,
) -> nvmlReturn_t {
    // 0 is NVML_CLOCK_GRAPHICS, 1 NVML_CLOCK_SM; memory and video clocks are not modelled.
    let value = read(device, |_, d| match type_ {
        0 | 1 => supported(d.sm_clock_mhz),
        _ => Err(NOT_SUPPORTED),
    });
    unsafe { put(clock, value) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTotalEccErrors(
    device: nvmlDevice_t,
    error_type: c_uint,
    counter_type: c_uint,
    count: *mut c_ulonglong,
) -> nvmlReturn_t {
    // Error type 0 is corrected, 1 uncorrected; counter type 0 volatile, 1 aggregate.
    let value = read(device, |_, d| match (error_type, counter_type) {
        (0, 0 | 1) => supported(d.ecc_corrected),
        (1, 0 | 1) => supported(d.ecc_uncorrected),
        _ => Err(INVALID_ARGUMENT),
    });
    unsafe { put(count, value) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v3(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    if count.is_null() {
        return INVALID_ARGUMENT;
    }
    let list = read(device, |_, d| {
        let info = |p: &config::Process| nvmlProcessInfo_t {
            pid: p.pid,
            usedGpuMemory: p.used_memory_mib.map_or(u64::MAX, |mib| mib * MIB),
            gpuInstanceId: u32::MAX,
            computeInstanceId: u32::MAX,
        };
        Ok(d.processes.iter().map(info).collect::<Vec<_>>())
    });
    let list = match list {
        Ok(list) => list,
        Err(code) => return code,
    };
    // NVML's contract: report the needed count; fill `infos` only when it has room for all.
    let room = unsafe { count.replace(list.len() as c_uint) } as usize;
    if list.is_empty() {
        return SUCCESS;
    }
    if infos.is_null() || room < list.len() {
        return INSUFFICIENT_SIZE;
    }
    unsafe { std::ptr::copy_nonoverlapping(list.as_ptr(), infos, list.len()) };
    SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v2(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_v2_t,
) -> nvmlReturn_t {
    // nvml-wrapper-sys 0.10 gives v2 and v3 the same layout.
    unsafe { nvmlDeviceGetComputeRunningProcesses_v3(device, count, infos) }
}

/// Event sets (by id, with their registered device indices and event masks) and the number of
/// XID codes delivered so far per device uuid.
struct Events {
    next_set: usize,
    sets: BTreeMap<usize, Vec<(usize, u64)>>,
    delivered: BTreeMap<String, usize>,
}

static EVENTS: Mutex<Events> = Mutex::new(Events {
    next_set: 1,
    sets: BTreeMap::new(),
    delivered: BTreeMap::new(),
});

fn events() -> MutexGuard<'static, Events> {
    EVENTS.lock().unwrap_or_else(PoisonError::into_inner)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetCreate(set: *mut nvmlEventSet_t) -> nvmlReturn_t {
    if set.is_null() {
        return INVALID_ARGUMENT;
    }
    let mut events = events();
    let id = events.next_set;
    events.next_set += 1;
    events.sets.insert(id, Vec::new());
    unsafe { put(set, Ok(std::ptr::without_provenance_mut(id))) }
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlEventSetFree(set: nvmlEventSet_t) -> nvmlReturn_t {
    match events().sets.remove(&set.addr()) {
        Some(_) => SUCCESS,
        None => INVALID_ARGUMENT,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlDeviceRegisterEvents(
    device: nvmlDevice_t,
    types: c_ulonglong,
    set: nvmlEventSet_t,
) -> nvmlReturn_t {
    let index = match read(device, |index, _| Ok(index)) {
        Ok(index) => index,
        Err(code) => return code,
    };
    let mut events = events();
    let Some(registered) = events.sets.get_mut(&set.addr()) else {
        return INVALID_ARGUMENT;
    };
    match registered.iter_mut().find(|(i, _)| *i == index) {
        Some((_, mask)) => *mask |= types,
        None => registered.push((index, types)),
    }
    SUCCESS
}

/// Takes the next undelivered XID event of the devices registered with `set`, if any.
fn next_event(set: nvmlEventSet_t) -> Result<Option<nvmlEventData_t>, nvmlReturn_t> {
    let mut events = events();
    let registered = events
        .sets
        .get(&set.addr())
        .ok_or(INVALID_ARGUMENT)?
        .clone();
    let config = Config::load()?;
    for (index, mask) in registered {
        let Some(device) = config.devices.get(index).filter(|_| mask & XID != 0) else {
            continue;
        };
        let delivered = events.delivered.entry(device.uuid.clone()).or_default();
        if let Some(&xid) = device.xid_events.get(*delivered) {
            *delivered += 1;
            return Ok(Some(nvmlEventData_t {
                device: handle(index),
                eventType: XID,
                eventData: xid,
                gpuInstanceId: u32::MAX,
                computeInstanceId: u32::MAX,
            }));
        }
    }
    Ok(None)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetWait_v2(
    set: nvmlEventSet_t,
    data: *mut nvmlEventData_t,
    timeoutms: c_uint,
) -> nvmlReturn_t {
    if data.is_null() {
        return INVALID_ARGUMENT;
    }
    let deadline = Instant::now() + Duration::from_millis(timeoutms.into());
    loop {
        match next_event(set) {
            Ok(Some(event)) => return unsafe { put(data, Ok(event)) },
            Ok(None) => {}
            Err(code) => return code,
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return TIMEOUT;
        }
        std::thread::sleep(left.min(POLL));
    }
}
