//! What one proof cost: time per phase, bytes moved between host and device, host
//! synchronisations, and why a backend fell back from its fast path. Backends fill it in;
//! the engine logs it as one line per partition and sums it into the metrics.

use std::fmt::Write as _;
use std::time::Duration;

/// Direction of a host/device transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Host to device.
    HostToDevice,
    /// Device to host.
    DeviceToHost,
}

/// One transfer (or a sum of transfers of one kind) in one phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// The phase it belongs to ("stage", "srs", "msm_h", ...).
    pub phase: &'static str,
    /// Host to device or back.
    pub direction: Direction,
    /// Bytes moved.
    pub bytes: u64,
    /// Whether the host side was page-locked (pinned or registered) memory.
    pub pinned: bool,
}

/// Per-proof accounting. Phase times are wall-clock on the host for host phases and
/// device-event intervals for GPU phases; `phases` keeps the order they ran in.
#[derive(Clone, Debug, Default)]
pub struct ProveReport {
    /// Phases in order, with their durations.
    pub phases: Vec<(&'static str, Duration)>,
    /// Transfers, summed per (phase, direction, pinned).
    pub transfers: Vec<Transfer>,
    /// Host synchronisations (the host waited for the device) during the proof.
    pub host_syncs: u32,
    /// Reads of a split MSM's class sizes (8 bytes each, an event wait queued right after
    /// the classification; the GPU idles only for that round trip, not for any result).
    pub count_reads: u32,
    /// Peak device memory the proof's plan reserved (bytes; 0 on the CPU).
    pub peak_device_bytes: u64,
    /// Why the fast path was not taken, where it was not (empty when it was).
    pub fallbacks: Vec<String>,
}

impl ProveReport {
    /// Adds `d` to phase `name` (appended the first time it is seen).
    pub fn add_phase(&mut self, name: &'static str, d: Duration) {
        match self.phases.iter_mut().find(|(n, _)| *n == name) {
            Some((_, t)) => *t += d,
            None => self.phases.push((name, d)),
        }
    }

    /// Counts a transfer (merged with earlier ones of the same phase, direction and kind).
    pub fn add_transfer(
        &mut self,
        phase: &'static str,
        direction: Direction,
        bytes: u64,
        pinned: bool,
    ) {
        if bytes == 0 {
            return;
        }
        match self
            .transfers
            .iter_mut()
            .find(|t| t.phase == phase && t.direction == direction && t.pinned == pinned)
        {
            Some(t) => t.bytes += bytes,
            None => self.transfers.push(Transfer {
                phase,
                direction,
                bytes,
                pinned,
            }),
        }
    }

    /// The duration of phase `name`, if it ran.
    pub fn phase(&self, name: &str) -> Option<Duration> {
        self.phases
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, d)| *d)
    }

    /// Total bytes in `direction`, optionally only pinned (`Some(true)`) or pageable ones.
    pub fn bytes(&self, direction: Direction, pinned: Option<bool>) -> u64 {
        self.transfers
            .iter()
            .filter(|t| t.direction == direction && pinned.is_none_or(|p| t.pinned == p))
            .map(|t| t.bytes)
            .sum()
    }

    /// Appends another report's phases, transfers, syncs and fallbacks to this one.
    pub fn merge(&mut self, other: ProveReport) {
        for (n, d) in other.phases {
            self.add_phase(n, d);
        }
        for t in other.transfers {
            self.add_transfer(t.phase, t.direction, t.bytes, t.pinned);
        }
        self.host_syncs += other.host_syncs;
        self.count_reads += other.count_reads;
        self.peak_device_bytes = self.peak_device_bytes.max(other.peak_device_bytes);
        self.fallbacks.extend(other.fallbacks);
    }

    /// "ntt_h=12.3ms msm_h=45.6ms ..." for logs.
    pub fn phases_summary(&self) -> String {
        let mut s = String::new();
        for (n, d) in &self.phases {
            if !s.is_empty() {
                s.push(' ');
            }
            let _ = write!(s, "{n}={:.1}ms", d.as_secs_f64() * 1e3);
        }
        s
    }

    /// "stage:h2d:pinned=12.9GB ..." for logs.
    pub fn transfers_summary(&self) -> String {
        let mut s = String::new();
        for t in &self.transfers {
            if !s.is_empty() {
                s.push(' ');
            }
            let dir = match t.direction {
                Direction::HostToDevice => "h2d",
                Direction::DeviceToHost => "d2h",
            };
            let kind = if t.pinned { "pinned" } else { "pageable" };
            let _ = write!(s, "{}:{dir}:{kind}={}", t.phase, t.bytes);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_and_transfers_merge_by_key() {
        let mut r = ProveReport::default();
        r.add_phase("a", Duration::from_millis(2));
        r.add_phase("b", Duration::from_millis(3));
        r.add_phase("a", Duration::from_millis(5));
        assert_eq!(r.phases.len(), 2);
        assert_eq!(r.phase("a"), Some(Duration::from_millis(7)));
        r.add_transfer("stage", Direction::HostToDevice, 10, true);
        r.add_transfer("stage", Direction::HostToDevice, 5, true);
        r.add_transfer("stage", Direction::HostToDevice, 7, false);
        r.add_transfer("out", Direction::DeviceToHost, 0, false);
        assert_eq!(r.transfers.len(), 2);
        assert_eq!(r.bytes(Direction::HostToDevice, None), 22);
        assert_eq!(r.bytes(Direction::HostToDevice, Some(true)), 15);
        assert_eq!(r.bytes(Direction::DeviceToHost, None), 0);
        let mut total = ProveReport {
            host_syncs: 1,
            ..Default::default()
        };
        r.host_syncs = 2;
        r.peak_device_bytes = 9;
        total.merge(r);
        assert_eq!(total.host_syncs, 3);
        assert_eq!(total.peak_device_bytes, 9);
        assert_eq!(total.bytes(Direction::HostToDevice, Some(false)), 7);
        assert_eq!(total.phases_summary(), "a=7.0ms b=3.0ms");
        assert!(total.transfers_summary().contains("stage:h2d:pinned=15"));
    }
}
