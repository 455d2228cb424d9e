//! The engine's proving devices: one per backend, each with its kernel lock, its
//! contenders and what it is doing, and their status (health and policy from
//! [`crate::placement`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use filprove_groth16::Backend;

use crate::placement::Placement;
use crate::status::DeviceStatus;

/// One proving device and its kernel lock.
pub(crate) struct Device {
    pub name: String,
    pub backend: Arc<dyn Backend>,
    /// Held only around the backend's prove call (the kernel region).
    pub kernel_lock: Mutex<()>,
    /// Prover workers with a partition in hand for this device, from staging until they
    /// release the kernel lock (a region is running or about to start).
    contending: AtomicUsize,
    pub current: Mutex<Option<(String, &'static str)>>,
    pub busy: Mutex<Duration>,
    /// The CUDA ordinal of a GPU backend (its name starts `cuda:<ordinal> `), whose
    /// NVML samples are read for faults.
    cuda_ordinal: Option<u64>,
    /// The fault counts of the sample read at the last check.
    faults_seen: Mutex<FaultCounts>,
}

/// What the last check saw of a GPU's NVML fault counts.
#[derive(Default)]
struct FaultCounts {
    /// Uncorrectable ECC errors (NVML counts them since the driver loaded, so the first
    /// check only takes the count in).
    ecc: Option<u64>,
    /// Xid events of a device fault (counted from the sampler's start: every one is new).
    xids: u64,
}

/// Counts a prover worker in [`Device`]'s contenders while it lives.
pub(crate) struct Contender<'a>(&'a AtomicUsize);

impl Drop for Contender<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Device {
    /// Counts the caller as a contender for the kernel lock until the guard drops.
    pub fn contend(&self) -> Contender<'_> {
        self.contending.fetch_add(1, Ordering::SeqCst);
        Contender(&self.contending)
    }

    /// True when a prover worker of this device is staging or proving.
    pub fn contended(&self) -> bool {
        self.contending.load(Ordering::SeqCst) > 0
    }

    pub fn set_current(&self, job: Option<(String, &'static str)>) {
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = job;
    }
    pub fn add_busy(&self, d: Duration) {
        *self.busy.lock().unwrap_or_else(|p| p.into_inner()) += d;
    }

    /// A fault NVML reported for this GPU since the last call: uncorrectable ECC errors
    /// (the first call only takes their count in) or Xid events of a device fault
    /// ([`crate::gpu_sampler::DEVICE_FAULT_XIDS`]). `None` when nothing new came, without
    /// a GPU sampler, or for a backend that is not a GPU.
    pub fn new_fault(&self) -> Option<String> {
        let now = self
            .cuda_ordinal
            .and_then(crate::gpu_sampler::latest_sample)?;
        let mut seen = self.faults_seen.lock().unwrap_or_else(|p| p.into_inner());
        let ecc = seen
            .ecc
            .map_or(0, |before| now.ecc_uncorrected.saturating_sub(before));
        let xids = now.fault_xids.saturating_sub(seen.xids);
        *seen = FaultCounts {
            ecc: Some(now.ecc_uncorrected),
            xids: now.fault_xids,
        };
        let ecc = (ecc > 0).then(|| format!("{ecc} uncorrectable ECC error(s)"));
        let xids = (xids > 0).then(|| {
            format!(
                "{xids} Xid event(s) of a device fault (the latest Xid {})",
                now.last_xid
            )
        });
        let what: Vec<String> = ecc.into_iter().chain(xids).collect();
        (!what.is_empty()).then(|| format!("NVML reported {}", what.join(" and ")))
    }
}

/// The devices of `backends`, in order. Names are the backends' own; when two backends
/// share a name (several CPU backends), each gets its position appended (`cpu:0`,
/// `cpu:1`), so that metrics and status tell them apart.
pub(crate) fn devices(backends: Vec<Arc<dyn Backend>>) -> Vec<Device> {
    let names: Vec<String> = backends.iter().map(|b| b.name()).collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for n in &names {
        *counts.entry(n.as_str()).or_default() += 1;
    }
    let unique: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            if counts[n.as_str()] > 1 {
                format!("{n}:{i}")
            } else {
                n.clone()
            }
        })
        .collect();
    backends
        .into_iter()
        .zip(unique)
        .map(|(backend, name)| Device {
            cuda_ordinal: cuda_ordinal(&name),
            faults_seen: Mutex::new(FaultCounts::default()),
            name,
            backend,
            kernel_lock: Mutex::new(()),
            contending: AtomicUsize::new(0),
            current: Mutex::new(None),
            busy: Mutex::new(Duration::ZERO),
        })
        .collect()
}

/// The CUDA ordinal in a GPU backend's name ("cuda:<ordinal> <device name>").
fn cuda_ordinal(name: &str) -> Option<u64> {
    name.strip_prefix("cuda:")?.split(' ').next()?.parse().ok()
}

/// The status of every device.
pub(crate) fn statuses(devices: &[Device], placement: &Placement) -> Vec<DeviceStatus> {
    devices
        .iter()
        .enumerate()
        .map(|(i, d)| DeviceStatus {
            ordinal: i as u32,
            name: d.name.clone(),
            current_job: d.current.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            busy: *d.busy.lock().unwrap_or_else(|p| p.into_inner()),
            memory: d.backend.device_memory(),
            health: placement.health(i),
            policy: placement.policy(i).clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::cuda_ordinal;

    #[test]
    fn a_gpu_backend_s_name_gives_its_ordinal() {
        assert_eq!(cuda_ordinal("cuda:3 NVIDIA H200"), Some(3));
        assert_eq!(cuda_ordinal("cuda:0"), Some(0));
        assert_eq!(cuda_ordinal("cpu"), None);
        assert_eq!(cuda_ordinal("cpu:1"), None);
        assert_eq!(cuda_ordinal("cuda:x NVIDIA"), None);
    }
}
