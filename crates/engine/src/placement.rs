//! Which device proves what: each device's policy (urgent work only, the circuits it
//! proves), its health (failures in a row, quarantine), and the rule a prover worker
//! follows when it picks a synthesized partition.
//!
//! A device takes a partition when it is usable (not quarantined), its policy accepts the
//! job (an urgent-only device takes HIGH and CRITICAL work alone: PoSt; a device with a
//! circuit list takes those circuits alone, so their parameters are loaded on it and
//! nowhere else), and the job's retry does not avoid it, unless no other usable device
//! that accepts the job is left.

use std::sync::{Mutex, MutexGuard};

use crate::job::Priority;
use crate::tracker::JobEntry;
use crate::EngineError;

/// What one device is used for (by position in the engine's device list).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DevicePolicy {
    /// Takes only HIGH and CRITICAL work (WinningPoSt, WindowPoSt): a PoSt never waits
    /// behind PoRep partitions on this device.
    pub urgent_only: bool,
    /// Circuit ids (`porep-32g`, `wpost-32g`, ...) this device proves; empty: any.
    pub circuits: Vec<String>,
}

impl DevicePolicy {
    /// True when this policy lets the device prove a job of `priority` and `circuit_id`.
    pub fn accepts(&self, priority: Priority, circuit_id: &str) -> bool {
        (!self.urgent_only || priority >= Priority::High)
            && (self.circuits.is_empty() || self.circuits.iter().any(|c| c == circuit_id))
    }
}

/// A device's health as status reports show it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceHealth {
    /// Why the device is out of rotation (`None`: it is usable).
    pub quarantined: Option<String>,
    /// Failed proofs since its last success (or since it was brought back).
    pub consecutive_failures: u32,
    /// Failed proofs since start.
    pub failures: u64,
    /// Times it was taken out of rotation since start.
    pub quarantines: u64,
}

/// The devices' policies and health, shared by the scheduler and the workers.
pub(crate) struct Placement {
    policies: Vec<DevicePolicy>,
    /// One lock for all: taking a device out looks at the others.
    health: Mutex<Vec<DeviceHealth>>,
    /// Failures in a row that quarantine a device; 0: never.
    quarantine_after: u32,
}

impl Placement {
    /// `devices` devices; `policies` by position (missing ones: any work).
    pub fn new(devices: usize, policies: &[DevicePolicy], quarantine_after: u32) -> Self {
        Self {
            policies: (0..devices)
                .map(|d| policies.get(d).cloned().unwrap_or_default())
                .collect(),
            health: Mutex::new(vec![DeviceHealth::default(); devices]),
            quarantine_after,
        }
    }

    fn all(&self) -> MutexGuard<'_, Vec<DeviceHealth>> {
        self.health.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Device `d`'s policy.
    pub fn policy(&self, d: usize) -> &DevicePolicy {
        &self.policies[d]
    }

    /// Device `d`'s health now.
    pub fn health(&self, d: usize) -> DeviceHealth {
        self.all()[d].clone()
    }

    /// True when device `d` is in rotation.
    pub fn usable(&self, d: usize) -> bool {
        self.all()[d].quarantined.is_none()
    }

    /// Devices in rotation.
    pub fn usable_count(&self) -> usize {
        self.all()
            .iter()
            .filter(|h| h.quarantined.is_none())
            .count()
    }

    /// True when some device's policy accepts a job of `priority` and `circuit_id`
    /// (healthy or not: a quarantined device may come back).
    pub fn any_accepts(&self, priority: Priority, circuit_id: &str) -> bool {
        self.policies
            .iter()
            .any(|p| p.accepts(priority, circuit_id))
    }

    fn serves(&self, d: usize, job: &JobEntry) -> bool {
        self.usable(d) && self.policies[d].accepts(job.priority, &job.circuit_id)
    }

    /// True when device `d` should prove a partition of `job` now.
    pub fn takes(&self, d: usize, job: &JobEntry) -> bool {
        if !self.serves(d, job) {
            return false;
        }
        !job.avoids(d)
            || !(0..self.policies.len()).any(|o| o != d && self.serves(o, job) && !job.avoids(o))
    }

    /// Records a proof device `d` made: its failures in a row start again.
    pub fn record_success(&self, d: usize) {
        self.all()[d].consecutive_failures = 0;
    }

    /// Records a failed proof of device `d`; true when this failure took it out of
    /// rotation. The last device in rotation stays in: it goes on proving (and failing
    /// jobs with their reasons) rather than leave every job waiting; an operator may still
    /// take it out ([`Placement::quarantine`]).
    pub fn record_failure(&self, d: usize, why: &str) -> bool {
        let mut all = self.all();
        let others_usable = all
            .iter()
            .enumerate()
            .any(|(o, h)| o != d && h.quarantined.is_none());
        let h = &mut all[d];
        h.failures += 1;
        h.consecutive_failures += 1;
        if self.quarantine_after > 0
            && others_usable
            && h.quarantined.is_none()
            && h.consecutive_failures >= self.quarantine_after
        {
            h.quarantined = Some(format!(
                "{} failed proofs in a row, the last: {why}",
                h.consecutive_failures
            ));
            h.quarantines += 1;
            return true;
        }
        false
    }

    fn check(&self, d: usize) -> Result<(), EngineError> {
        if d < self.policies.len() {
            Ok(())
        } else {
            Err(EngineError::UnknownDevice(d as u32))
        }
    }

    /// Takes device `d` out of rotation for `why`; true when it was in rotation.
    pub fn quarantine(&self, d: usize, why: &str) -> Result<bool, EngineError> {
        self.check(d)?;
        let mut all = self.all();
        let h = &mut all[d];
        if h.quarantined.is_some() {
            return Ok(false);
        }
        h.quarantined = Some(why.to_string());
        h.quarantines += 1;
        Ok(true)
    }

    /// Brings device `d` back into rotation with its failures in a row cleared; true when
    /// it was out.
    pub fn restore(&self, d: usize) -> Result<bool, EngineError> {
        self.check(d)?;
        let h = &mut self.all()[d];
        h.consecutive_failures = 0;
        Ok(h.quarantined.take().is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_accept_by_priority_and_circuit() {
        let any = DevicePolicy::default();
        assert!(any.accepts(Priority::Low, "porep-32g"));
        let post = DevicePolicy {
            urgent_only: true,
            circuits: vec![],
        };
        assert!(!post.accepts(Priority::Normal, "porep-32g"));
        assert!(post.accepts(Priority::High, "wpost-32g"));
        assert!(post.accepts(Priority::Critical, "winning-32g"));
        let porep = DevicePolicy {
            urgent_only: false,
            circuits: vec!["porep-32g".into()],
        };
        assert!(porep.accepts(Priority::Normal, "porep-32g"));
        assert!(!porep.accepts(Priority::Critical, "winning-32g"));
    }

    #[test]
    fn failures_in_a_row_quarantine_and_restore_clears_them() {
        let p = Placement::new(2, &[], 3);
        assert!(!p.record_failure(0, "x"));
        p.record_success(0);
        assert!(!p.record_failure(0, "x"));
        assert!(!p.record_failure(0, "x"));
        assert!(p.usable(0));
        assert!(p.record_failure(0, "device lost"), "third in a row");
        assert!(!p.usable(0));
        assert!(!p.record_failure(0, "again"), "already out");
        let h = p.health(0);
        assert_eq!(
            (h.failures, h.consecutive_failures, h.quarantines),
            (5, 4, 1)
        );
        assert!(h.quarantined.unwrap().contains("device lost"));
        assert_eq!(p.usable_count(), 1);
        assert_eq!(p.restore(0), Ok(true));
        assert_eq!(p.restore(0), Ok(false));
        assert_eq!(p.health(0).consecutive_failures, 0);
        assert_eq!(p.restore(2), Err(EngineError::UnknownDevice(2)));
        assert_eq!(p.quarantine(1, "operator"), Ok(true));
        assert_eq!(p.quarantine(1, "operator"), Ok(false));
        let never = Placement::new(2, &[], 0);
        for _ in 0..10 {
            assert!(!never.record_failure(0, "x"));
        }
        assert!(never.usable(0));
    }

    #[test]
    fn the_last_device_in_rotation_stays_in_unless_an_operator_takes_it_out() {
        let one = Placement::new(1, &[], 2);
        for _ in 0..5 {
            assert!(!one.record_failure(0, "x"));
        }
        assert!(one.usable(0));
        assert_eq!(one.health(0).consecutive_failures, 5);
        let two = Placement::new(2, &[], 2);
        two.record_failure(0, "x");
        assert!(two.record_failure(0, "x"), "device 1 is left");
        for _ in 0..5 {
            assert!(!two.record_failure(1, "y"), "device 1 is the last");
        }
        assert_eq!(two.usable_count(), 1);
        assert_eq!(two.quarantine(1, "operator"), Ok(true));
        assert_eq!(two.usable_count(), 0);
    }
}
