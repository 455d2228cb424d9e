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
            name,
            backend,
            kernel_lock: Mutex::new(()),
            contending: AtomicUsize::new(0),
            current: Mutex::new(None),
            busy: Mutex::new(Duration::ZERO),
        })
        .collect()
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
