//! The GPU's own view of a run: a background sampler that reads each visible GPU through
//! NVML every interval and logs one `gpu_sample` event per GPU (target
//! `filprove::timeline`, level DEBUG), which `filprove timeline` lays under the engine's
//! own events.
//!
//! NVML (`libnvidia-ml.so.1`) is loaded at run time: on a machine without it
//! [`GpuSampler::start`] logs once that NVML is unavailable and returns `None`. Devices
//! follow `CUDA_VISIBLE_DEVICES` (indices or UUIDs), so a sample's `device` is the CUDA
//! ordinal the engine calls `cuda:<device>`. The latest sample of each device is also kept
//! for Prometheus ([`GpuGauges`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nvml_wrapper::enum_wrappers::device::{Clock, EccCounter, MemoryError, PcieUtilCounter};
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
    let mut next = Instant::now();
    loop {
        let (sample, failed) = read(&device, ordinal);
        if !failed.is_empty() && !unsupported_said {
            unsupported_said = true;
            tracing::warn!(device = ordinal, metrics = ?failed, "NVML: metrics unavailable on this GPU, logged as 0");
        }
        log(&sample);
        latest()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(ordinal, sample);
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

/// The uncorrectable ECC errors of CUDA device `ordinal` in its latest sample (`None`
/// while no sampler reads it).
pub fn ecc_uncorrected(ordinal: u64) -> Option<u64> {
    latest()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&ordinal)
        .map(|s| s.ecc_uncorrected)
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
        let specs: [(&str, &str, SampleValue); 8] = [
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
