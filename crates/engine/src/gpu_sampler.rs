//! The GPU's own view of a run: a background sampler that reads each visible GPU through
//! NVML every interval and logs one `gpu_sample` event per GPU (target
//! `filprove::timeline`, level DEBUG), which `filprove timeline` lays under the engine's
//! own events.
//!
//! NVML (`libnvidia-ml.so.1`) is loaded at run time: on a machine without it
//! [`GpuSampler::start`] logs once that NVML is unavailable and returns `None`. Devices
//! follow `CUDA_VISIBLE_DEVICES` (indices or UUIDs), so a sample's `device` is the CUDA
//! ordinal the engine calls `cuda:<device>`. The latest sample of each device is also kept
//! for Prometheus ([`GpuGauges`]) and for the device health checks after each proof.
//!
//! Each sampler thread also listens for the device's critical Xid events (NVML's event
//! set, drained without waiting at every sample): every Xid is logged; those that mean the
//! device itself is at fault ([`DEVICE_FAULT_XIDS`]) are counted in the sample, and the
//! engine takes a device that reports one out of rotation.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{Clock, EccCounter, MemoryError, PcieUtilCounter};
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::event::EventSet;
use nvml_wrapper::{Device, Nvml};
use prometheus::GaugeVec;

/// Log target of the samples (shared with the engine's timeline events).
pub const TARGET: &str = "filprove::timeline";

/// One reading of one GPU. Metrics the device does not support read 0.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuSample {
    /// CUDA ordinal (position in `CUDA_VISIBLE_DEVICES`, else NVML index).
    pub device: u64,
    /// Microseconds since the UNIX epoch.
    pub t_us: u64,
    /// Percent of the last NVML period in which a kernel ran.
    pub sm_util: u32,
    /// Percent of the last NVML period in which device memory was read or written.
    pub mem_util: u32,
    /// Board power, watts.
    pub power_w: f64,
    /// PCIe throughput device -> host, MB/s (NVML's 20 ms counter).
    pub pcie_tx_mbps: f64,
    /// PCIe throughput host -> device, MB/s.
    pub pcie_rx_mbps: f64,
    /// Device memory in use, MiB.
    pub mem_used_mib: u64,
    /// SM clock, MHz.
    pub sm_clock_mhz: u32,
    /// Uncorrectable ECC errors since the driver loaded (NVML's volatile count; 0 on a
    /// GPU without ECC).
    pub ecc_uncorrected: u64,
    /// Xid events of [`DEVICE_FAULT_XIDS`] since the sampler started.
    pub fault_xids: u64,
    /// The latest Xid event of any kind since the sampler started (0: none).
    pub last_xid: u64,
}

/// Xid codes that mean the device itself is at fault and must be reset, drained or
/// serviced before it is trusted again (NVIDIA's Xid catalog, resolution "reset GPU" or
/// worse): 46 GPU stopped processing, 48 double-bit ECC error, 62 internal
/// micro-controller halt, 63 and 64 ECC page retirement or row remapping (pending or
/// failed), 74 NVLink error, 79 fallen off the bus, 92 high single-bit ECC error rate, 94
/// and 95 contained and uncontained ECC errors, 119 and 120 GSP timeout and error, 140
/// unrecovered ECC error, 154 recovery action changed (reset or reboot required). Other
/// Xids (13, 31, 43, 45, ...) are usually raised by the application that ran and are only
/// logged.
pub const DEVICE_FAULT_XIDS: [u64; 14] =
    [46, 48, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140, 154];

/// Whether Xid `code` means the device is at fault ([`DEVICE_FAULT_XIDS`]).
pub fn is_device_fault_xid(code: u64) -> bool {
    DEVICE_FAULT_XIDS.contains(&code)
}

type Latest = Mutex<BTreeMap<u64, GpuSample>>;

/// The latest sample of every device of every running sampler (for `/metrics`).
fn latest() -> &'static Latest {
    static LATEST: OnceLock<Latest> = OnceLock::new();
    LATEST.get_or_init(Default::default)
}

struct Stop {
    stopped: Mutex<bool>,
    wake: Condvar,
}

/// A running sampler: one thread per GPU (NVML's PCIe counters take 20 ms each, so
/// devices are read in parallel). Stops, and joins its threads, on drop.
pub struct GpuSampler {
    stop: Arc<Stop>,
    threads: Vec<JoinHandle<()>>,
    ordinals: Vec<u64>,
}

impl GpuSampler {
    /// Starts sampling every `interval`; `None` when the interval is zero, NVML cannot be
    /// loaded or no GPU is visible (each said once in the log). Never panics.
    pub fn start(interval: Duration) -> Option<GpuSampler> {
        if interval.is_zero() {
            return None;
        }
        let nvml = match Nvml::init() {
            Ok(n) => Arc::new(n),
            Err(e) => {
                tracing::info!(error = %e, "NVML unavailable: no GPU samples");
                return None;
            }
        };
        let devices = match visible_devices(&nvml) {
            Ok(d) if !d.is_empty() => d,
            Ok(_) => {
                tracing::info!("NVML: no visible GPU, no GPU samples");
                return None;
            }
            Err(e) => {
                tracing::info!(error = %e, "NVML: cannot list GPUs, no GPU samples");
                return None;
            }
        };
        let stop = Arc::new(Stop {
            stopped: Mutex::new(false),
            wake: Condvar::new(),
        });
        let mut threads = Vec::new();
        let mut ordinals = Vec::new();
        for (ordinal, index) in devices {
            let (nvml, stop) = (nvml.clone(), stop.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("gpu-sampler-{ordinal}"))
                .spawn(move || sample_loop(&nvml, ordinal, index, interval, &stop));
            match spawned {
                Ok(t) => {
                    threads.push(t);
                    ordinals.push(ordinal);
                }
                Err(e) => {
                    tracing::warn!(device = ordinal, error = %e, "cannot start a GPU sampler thread")
                }
            }
        }
        if threads.is_empty() {
            return None;
        }
        tracing::info!(
            devices = ?ordinals,
            interval_ms = interval.as_millis() as u64,
            "sampling GPUs through NVML (gpu_sample events at DEBUG, target filprove::timeline)"
        );
        Some(GpuSampler {
            stop,
            threads,
            ordinals,
        })
    }

    /// The CUDA ordinals being sampled.
    pub fn devices(&self) -> &[u64] {
        &self.ordinals
    }

    /// The latest sample of each sampled device.
    pub fn latest(&self) -> Vec<GpuSample> {
        let l = latest().lock().unwrap_or_else(|p| p.into_inner());
        self.ordinals
            .iter()
            .filter_map(|o| l.get(o).copied())
            .collect()
    }
}

impl Drop for GpuSampler {
    fn drop(&mut self) {
        *self.stop.stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.stop.wake.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let mut l = latest().lock().unwrap_or_else(|p| p.into_inner());
        for o in &self.ordinals {
            l.remove(o);
        }
    }
}

/// (CUDA ordinal, NVML index) of each visible device, following `CUDA_VISIBLE_DEVICES`
/// the way CUDA does: indices or UUID prefixes, up to the first entry that names nothing.
pub(crate) fn visible_devices(
    nvml: &Nvml,
) -> Result<Vec<(u64, u32)>, nvml_wrapper::error::NvmlError> {
    let count = nvml.device_count()?;
    let Ok(list) = std::env::var("CUDA_VISIBLE_DEVICES") else {
        return Ok((0..count).map(|i| (i as u64, i)).collect());
    };
    let uuids: Vec<String> = (0..count)
        .map(|i| {
            nvml.device_by_index(i)
                .and_then(|d| d.uuid())
                .unwrap_or_default()
        })
        .collect();
    let mut out = Vec::new();
    for entry in list.split(',').map(str::trim) {
        let index = match entry.parse::<u32>() {
            Ok(i) if i < count => Some(i),
            Ok(_) => None,
            Err(_) if entry.starts_with("GPU-") => uuids
                .iter()
                .position(|u| !u.is_empty() && u.starts_with(entry))
                .map(|i| i as u32),
            Err(_) => None,
        };
        match index {
            Some(i) => out.push((out.len() as u64, i)),
            None => break,
        }
    }
    Ok(out)
}

fn sample_loop(nvml: &Nvml, ordinal: u64, index: u32, interval: Duration, stop: &Stop) {
    let device = match nvml.device_by_index(index) {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(device = ordinal, error = %e, "NVML: cannot open the GPU, no samples");
            return;
        }
    };
    let mut unsupported_said = false;
    let mut xids = XidWatch::new(nvml, &device, ordinal);
    let mut next = Instant::now();
    loop {
        let (mut sample, failed) = read(&device, ordinal);
        if !failed.is_empty() && !unsupported_said {
            unsupported_said = true;
            tracing::warn!(device = ordinal, metrics = ?failed, "NVML: metrics unavailable on this GPU, logged as 0");
        }
        xids.drain();
        sample.fault_xids = xids.faults;
        sample.last_xid = xids.last;
        log(&sample);
        publish(sample);
        next += interval;
        let now = Instant::now();
        if next < now {
            // Reading took longer than the interval: skip the missed ticks.
            next = now;
        }
        let mut stopped = stop.stopped.lock().unwrap_or_else(|p| p.into_inner());
        while !*stopped {
            let now = Instant::now();
            if now >= next {
                break;
            }
            stopped = match stop.wake.wait_timeout(stopped, next - now) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
        if *stopped {
            return;
        }
    }
}

/// A device's critical Xid events: NVML's event set, drained at each sample.
struct XidWatch<'n> {
    set: Option<EventSet<'n>>,
    device: u64,
    /// Events of [`DEVICE_FAULT_XIDS`] so far.
    faults: u64,
    /// The latest Xid code (0: none yet).
    last: u64,
}

impl<'n> XidWatch<'n> {
    /// Registers for `device`'s critical Xid events; without the event (a driver or GPU
    /// that does not offer it) the watch stays empty, said once in the log.
    fn new(nvml: &'n Nvml, device: &Device<'n>, ordinal: u64) -> Self {
        let set = nvml
            .create_event_set()
            .map_err(|e| e.to_string())
            .and_then(|set| {
                device
                    .register_events(EventTypes::CRITICAL_XID_ERROR, set)
                    .map_err(|e| e.to_string())
            });
        let set = match set {
            Ok(set) => Some(set),
            Err(e) => {
                tracing::info!(device = ordinal, error = %e, "NVML: no Xid events from this GPU");
                None
            }
        };
        Self {
            set,
            device: ordinal,
            faults: 0,
            last: 0,
        }
    }

    /// Takes every pending event (none waited for).
    fn drain(&mut self) {
        let mut pending = Vec::new();
        let mut broken = None;
        if let Some(set) = &self.set {
            loop {
                match set.wait(0) {
                    Ok(event) => pending.push(event.event_data),
                    Err(NvmlError::Timeout) => break,
                    Err(e) => {
                        broken = Some(e);
                        break;
                    }
                }
            }
        }
        for data in pending {
            if let Some(code) = self.record(data) {
                tracing::warn!(
                    device = self.device,
                    xid = code,
                    device_fault = is_device_fault_xid(code),
                    "NVML: Xid event"
                );
            }
        }
        if let Some(e) = broken {
            tracing::warn!(device = self.device, error = %e, "NVML: Xid events stop here");
            self.set = None;
        }
    }

    /// Counts one event; its Xid code when it carries one.
    fn record(&mut self, data: Option<XidError>) -> Option<u64> {
        let Some(XidError::Value(code)) = data else {
            return None;
        };
        self.last = code;
        if is_device_fault_xid(code) {
            self.faults += 1;
        }
        Some(code)
    }
}

/// Makes `sample` the latest of its device: what `/metrics` and the device health checks
/// after each proof read. The sampler threads publish every reading; another source of
/// readings (a test, an external monitor) may publish too.
pub fn publish(sample: GpuSample) {
    latest()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(sample.device, sample);
}

/// One reading; the names of the metrics that failed.
fn read(d: &Device<'_>, ordinal: u64) -> (GpuSample, Vec<&'static str>) {
    let mut failed = Vec::new();
    let mut ok = |name: &'static str, r: bool| {
        if !r {
            failed.push(name);
        }
    };
    let util = d.utilization_rates();
    ok("utilization", util.is_ok());
    let power = d.power_usage();
    ok("power", power.is_ok());
    let tx = d.pcie_throughput(PcieUtilCounter::Send);
    ok("pcie_tx", tx.is_ok());
    let rx = d.pcie_throughput(PcieUtilCounter::Receive);
    ok("pcie_rx", rx.is_ok());
    let mem = d.memory_info();
    ok("memory", mem.is_ok());
    let clock = d.clock_info(Clock::SM);
    ok("sm_clock", clock.is_ok());
    // Not listed as failed: most GPUs outside the data centre have no ECC.
    let ecc = d
        .total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile)
        .unwrap_or(0);
    let util = util.ok();
    let sample = GpuSample {
        device: ordinal,
        t_us: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0),
        sm_util: util.as_ref().map_or(0, |u| u.gpu),
        mem_util: util.as_ref().map_or(0, |u| u.memory),
        power_w: power.map_or(0.0, |mw| mw as f64 / 1000.0),
        // NVML reports KB/s.
        pcie_tx_mbps: tx.map_or(0.0, |kb| kb as f64 / 1000.0),
        pcie_rx_mbps: rx.map_or(0.0, |kb| kb as f64 / 1000.0),
        mem_used_mib: mem.map_or(0, |m| m.used >> 20),
        sm_clock_mhz: clock.unwrap_or(0),
        ecc_uncorrected: ecc,
        fault_xids: 0,
        last_xid: 0,
    };
    (sample, failed)
}

/// Logs one sample as the `gpu_sample` event, at DEBUG (one per GPU per interval: record
/// them with `RUST_LOG=info,filprove::timeline=debug`).
pub fn log(s: &GpuSample) {
    tracing::debug!(
        target: "filprove::timeline",
        device = s.device,
        t_us = s.t_us,
        sm_util = s.sm_util,
        mem_util = s.mem_util,
        power_w = s.power_w,
        pcie_tx_mbps = s.pcie_tx_mbps,
        pcie_rx_mbps = s.pcie_rx_mbps,
        mem_used_mib = s.mem_used_mib,
        sm_clock_mhz = s.sm_clock_mhz,
        ecc_uncorrected = s.ecc_uncorrected,
        fault_xids = s.fault_xids,
        last_xid = s.last_xid,
        "gpu_sample"
    );
}

/// The latest sample of every device of every running sampler.
pub fn latest_samples() -> Vec<GpuSample> {
    latest()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .values()
        .copied()
        .collect()
}

/// The latest sample of CUDA device `ordinal` (`None` while no sampler reads it).
pub fn latest_sample(ordinal: u64) -> Option<GpuSample> {
    latest()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&ordinal)
        .copied()
}

/// The latest samples as Prometheus gauges (label `device`), in base units: ratios of
/// time, watts, bytes, bytes per second, hertz. No series while no sampler runs.
pub struct GpuGauges {
    families: Vec<(GaugeVec, SampleValue)>,
}

/// One gauge's value from a sample.
type SampleValue = fn(&GpuSample) -> f64;

impl GpuGauges {
    /// The gauge families, registered in `registry`.
    pub fn new(registry: &prometheus::Registry) -> Result<Self, crate::EngineError> {
        let specs: [(&str, &str, SampleValue); 10] = [
            (
                "filprove_gpu_sm_utilization_ratio",
                "Share of the last NVML period in which a kernel ran on the GPU.",
                |s| f64::from(s.sm_util) / 100.0,
            ),
            (
                "filprove_gpu_memory_utilization_ratio",
                "Share of the last NVML period in which device memory was read or written.",
                |s| f64::from(s.mem_util) / 100.0,
            ),
            ("filprove_gpu_power_watts", "GPU board power (NVML).", |s| {
                s.power_w
            }),
            (
                "filprove_gpu_pcie_tx_bytes_per_second",
                "PCIe throughput device to host (NVML's 20 ms counter).",
                |s| s.pcie_tx_mbps * 1e6,
            ),
            (
                "filprove_gpu_pcie_rx_bytes_per_second",
                "PCIe throughput host to device (NVML's 20 ms counter).",
                |s| s.pcie_rx_mbps * 1e6,
            ),
            (
                "filprove_gpu_memory_used_bytes",
                "Device memory in use (NVML).",
                |s| (s.mem_used_mib << 20) as f64,
            ),
            ("filprove_gpu_sm_clock_hertz", "SM clock (NVML).", |s| {
                f64::from(s.sm_clock_mhz) * 1e6
            }),
            (
                "filprove_gpu_ecc_uncorrected_errors",
                "Uncorrectable ECC errors since the driver loaded (NVML, volatile; 0 without ECC).",
                |s| s.ecc_uncorrected as f64,
            ),
            (
                "filprove_gpu_fault_xids",
                "Xid events that mean the device is at fault (46, 48, 62-64, 74, 79, 92, 94, 95, 119, 120, 140, 154) since the sampler started.",
                |s| s.fault_xids as f64,
            ),
            (
                "filprove_gpu_last_xid",
                "The latest Xid code the device reported since the sampler started (0: none).",
                |s| s.last_xid as f64,
            ),
        ];
        let families = specs
            .into_iter()
            .map(|(name, help, get)| {
                let vec = GaugeVec::new(prometheus::Opts::new(name, help), &["device"])
                    .map_err(|e| crate::EngineError::Internal(format!("metrics: {e}")))?;
                Ok((crate::metrics::register(registry, vec)?, get))
            })
            .collect::<Result<Vec<_>, crate::EngineError>>()?;
        Ok(Self { families })
    }

    /// Sets the gauges to `samples` (devices without a sample lose their series).
    pub fn update(&self, samples: &[GpuSample]) {
        for (vec, get) in &self.families {
            vec.reset();
            for s in samples {
                vec.with_label_values(&[s.device.to_string().as_str()])
                    .set(get(s));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xid_events_count_device_faults_and_keep_the_latest_code() {
        let mut w = XidWatch {
            set: None,
            device: 0,
            faults: 0,
            last: 0,
        };
        assert_eq!(w.record(None), None);
        assert_eq!(w.record(Some(XidError::Unknown)), None);
        assert_eq!(w.record(Some(XidError::Value(13))), Some(13));
        assert_eq!((w.faults, w.last), (0, 13), "Xid 13 is the application's");
        for code in [79, 48, 13, 95] {
            w.record(Some(XidError::Value(code)));
        }
        assert_eq!((w.faults, w.last), (3, 95));
        assert!(DEVICE_FAULT_XIDS.iter().all(|&c| is_device_fault_xid(c)));
        assert!(![0, 13, 31, 43, 45].iter().any(|&c| is_device_fault_xid(c)));
    }

    #[test]
    fn zero_interval_disables() {
        assert!(GpuSampler::start(Duration::ZERO).is_none());
    }

    #[test]
    fn start_never_panics_and_stops_on_drop() {
        // Without libnvidia-ml this is None (logged once); with it, samples flow until drop.
        if let Some(s) = GpuSampler::start(Duration::from_millis(10)) {
            std::thread::sleep(Duration::from_millis(100));
            assert!(!s.devices().is_empty());
            assert_eq!(s.latest().len(), s.devices().len());
            drop(s);
        }
    }

    #[test]
    fn gauges_are_in_base_units() {
        let registry = prometheus::Registry::new();
        let gauges = GpuGauges::new(&registry).unwrap();
        gauges.update(&[GpuSample {
            device: 1,
            sm_util: 97,
            power_w: 612.5,
            mem_used_mib: 2,
            sm_clock_mhz: 1980,
            pcie_rx_mbps: 25.5,
            ..Default::default()
        }]);
        let families = registry.gather();
        let value = |name: &str| -> f64 {
            let f = families.iter().find(|f| f.name() == name).unwrap();
            let m = &f.get_metric()[0];
            assert_eq!(m.get_label()[0].value(), "1");
            m.get_gauge().get_value()
        };
        assert_eq!(value("filprove_gpu_sm_utilization_ratio"), 0.97);
        assert_eq!(value("filprove_gpu_power_watts"), 612.5);
        assert_eq!(value("filprove_gpu_memory_used_bytes"), (2 << 20) as f64);
        assert_eq!(value("filprove_gpu_sm_clock_hertz"), 1.98e9);
        assert_eq!(value("filprove_gpu_pcie_rx_bytes_per_second"), 25.5e6);
        gauges.update(&[]);
        assert!(registry.gather().is_empty(), "no series without samples");
    }
}
