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
    /// NVML samples are read for ECC errors.
    cuda_ordinal: Option<u64>,
    /// Uncorrectable ECC errors seen at the last check.
    ecc_seen: Mutex<Option<u64>>,
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

    /// Uncorrectable ECC errors NVML reported for this GPU since the last call (the
    /// first call only takes the count in); 0 without a GPU sampler or without ECC.
    pub fn new_ecc_errors(&self) -> u64 {
        let Some(now) = self
            .cuda_ordinal
            .and_then(crate::gpu_sampler::ecc_uncorrected)
        else {
            return 0;
        };
        let mut seen = self.ecc_seen.lock().unwrap_or_else(|p| p.into_inner());
        let new = seen.map_or(0, |before| now.saturating_sub(before));
        *seen = Some(now);
        new
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
            ecc_seen: Mutex::new(None),
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
