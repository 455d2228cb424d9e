//! Host memory: what the machine (and its cgroup) allows, and the budget that admits
//! partitions only while their memory fits.
//!
//! A partition reserves its estimated bytes before its synthesis starts and keeps them
//! until its proof is made, so a burst of submissions queues instead of running the host
//! out of memory (the most common complaint about C2 and SnapDeals provers).

use std::path::Path;

/// What the host offers, as read from `/proc/meminfo` and the process's cgroup.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostMemory {
    /// `MemTotal` of the machine.
    pub total_bytes: u64,
    /// `MemAvailable` when read.
    pub available_bytes: u64,
    /// The limit of the process's cgroup (v2 `memory.max`, e.g. systemd's `MemoryMax=`, or
    /// v1 `memory.limit_in_bytes`), if any: see [`crate::cgroup`].
    pub cgroup_limit_bytes: Option<u64>,
}

impl HostMemory {
    /// Reads the live values from `/proc/meminfo` and the process's cgroup.
    pub fn detect() -> Self {
        Self::detect_under(Path::new("/"))
    }

    /// Reads `proc/meminfo`, `proc/self/cgroup` and `sys/fs/cgroup` below `root` (`/`
    /// live; a fake tree in tests).
    pub fn detect_under(root: &Path) -> Self {
        let text = std::fs::read_to_string(root.join("proc/meminfo")).unwrap_or_default();
        let (total_bytes, available_bytes) = parse_meminfo(&text);
        Self {
            total_bytes,
            available_bytes,
            cgroup_limit_bytes: crate::cgroup::memory_limit_under(root).map(|l| l.bytes),
        }
    }

    /// The limit the process lives under: the smaller of the machine and the cgroup.
    pub fn effective_limit(&self) -> u64 {
        match self.cgroup_limit_bytes {
            Some(c) if self.total_bytes > 0 => c.min(self.total_bytes),
            Some(c) => c,
            None => self.total_bytes,
        }
    }
}

/// The host budgets the engine runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budgets {
    /// Parameter bytes kept resident.
    pub srs_bytes: u64,
    /// Bytes partitions in flight may reserve.
    pub partitions_bytes: u64,
}

impl Budgets {
    /// The configured budgets, each defaulting for `host`: half its effective limit for
    /// parameters, [`MemoryBudget::default_limit`] for partitions.
    pub fn resolve(host: &HostMemory, partitions: Option<u64>, srs: Option<u64>) -> Self {
        let srs_bytes = srs.unwrap_or(host.effective_limit() / 2);
        Self {
            srs_bytes,
            partitions_bytes: partitions
                .unwrap_or_else(|| MemoryBudget::default_limit(host, srs_bytes)),
        }
    }
}

/// Parses `MemTotal` and `MemAvailable` (kB) into bytes.
fn parse_meminfo(text: &str) -> (u64, u64) {
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .map(|kb| kb * 1024)
            .unwrap_or(0)
    };
    (field("MemTotal:"), field("MemAvailable:"))
}

/// Estimated host bytes of one partition from its shape: the a and b evaluations
/// (2 x 32 B per constraint; the host holds no c, a backend forms c = a*b), the aux
/// witness (32 B per variable) and a margin of 1/8 plus 16 MiB for densities, inputs and
/// allocator slack.
pub fn estimate_partition_bytes(constraints: u64, aux: u64) -> u64 {
    let core = constraints * 2 * 32 + aux * 32;
    core + core / 8 + (16 << 20)
}

/// The partition budget's bookkeeping: how much is reserved against which limit.
/// The scheduler keeps one inside its lock; reservations are taken and given back there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryBudget {
    limit: u64,
    reserved: u64,
}

impl MemoryBudget {
    /// A budget of `limit` bytes, nothing reserved.
    pub fn new(limit: u64) -> Self {
        Self { limit, reserved: 0 }
    }

    /// The default budget for a host: 80 % of its effective limit, less `other_bytes`
    /// (the parameter cache), and never below 1 GiB.
    pub fn default_limit(host: &HostMemory, other_bytes: u64) -> u64 {
        let limit = host.effective_limit();
        (limit / 10 * 8).saturating_sub(other_bytes).max(1 << 30)
    }

    /// The limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes reserved now.
    pub fn reserved(&self) -> u64 {
        self.reserved
    }

    /// True when `bytes` can be reserved now. (The engine rejects a job whose partition
    /// exceeds the whole limit at submission, so nothing waits forever.)
    pub fn fits(&self, bytes: u64) -> bool {
        self.reserved + bytes <= self.limit
    }

    /// Reserves `bytes` if they fit; returns whether it did.
    pub fn try_reserve(&mut self, bytes: u64) -> bool {
        if self.fits(bytes) {
            self.reserved += bytes;
            true
        } else {
            false
        }
    }

    /// True when `bytes` would fit within the limit plus `extra`.
    pub fn fits_over(&self, bytes: u64, extra: u64) -> bool {
        self.reserved + bytes <= self.limit.saturating_add(extra)
    }

    /// Reserves `bytes` if they fit beside `held` bytes kept outside any reservation (idle
    /// reused buffers), within the limit plus `extra` (the headroom urgent work may use);
    /// returns whether it did.
    pub fn try_reserve_over(&mut self, bytes: u64, held: u64, extra: u64) -> bool {
        if self.reserved + held + bytes <= self.limit.saturating_add(extra) {
            self.reserved += bytes;
            true
        } else {
            false
        }
    }

    /// Gives back `bytes`.
    pub fn release(&mut self, bytes: u64) {
        self.reserved = self.reserved.saturating_sub(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_meminfo_and_the_process_s_cgroup() {
        let root = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let path = root.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            "proc/meminfo",
            "MemTotal:       24000000 kB\nMemFree: 1 kB\nMemAvailable:   20000000 kB\n",
        );
        write("proc/self/cgroup", "0::/system.slice/filprove.service\n");
        let service = "sys/fs/cgroup/system.slice/filprove.service/memory.max";
        write(service, "8589934592\n");
        let h = HostMemory::detect_under(root.path());
        assert_eq!(h.total_bytes, 24_000_000 * 1024);
        assert_eq!(h.available_bytes, 20_000_000 * 1024);
        assert_eq!(h.cgroup_limit_bytes, Some(8 << 30));
        assert_eq!(h.effective_limit(), 8 << 30);

        write(service, "max\n");
        let h = HostMemory::detect_under(root.path());
        assert_eq!(h.cgroup_limit_bytes, None);
        assert_eq!(h.effective_limit(), 24_000_000 * 1024);
    }

    #[test]
    fn live_host_has_memory() {
        let h = HostMemory::detect();
        assert!(h.effective_limit() > 0);
    }

    #[test]
    fn budget_admits_until_full() {
        let mut b = MemoryBudget::new(100);
        assert!(b.try_reserve(60));
        assert!(!b.try_reserve(50));
        assert!(b.try_reserve(40));
        assert!(!b.try_reserve(1));
        b.release(100);
        assert!(!b.try_reserve(150));
        assert_eq!(b.reserved(), 0);
    }

    #[test]
    fn estimate_follows_shape() {
        // 32 GiB PoRep partition: about 7.8 GiB a and b + 3.9 GiB aux, plus margin.
        let e = estimate_partition_bytes(130_278_541, 130_169_893);
        assert!(e > 12 << 30 && e < 14 << 30, "{e}");
        // One more constraint costs its a and b, one more variable its value.
        let base = estimate_partition_bytes(1 << 20, 1 << 20);
        assert_eq!(
            estimate_partition_bytes((1 << 20) + 8, 1 << 20) - base,
            8 * 64 * 9 / 8
        );
        assert_eq!(
            estimate_partition_bytes(1 << 20, (1 << 20) + 8) - base,
            8 * 32 * 9 / 8
        );
    }
}
