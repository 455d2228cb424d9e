//! The GPU backend's options. The operator's knobs (device-memory budget, MSM batch,
//! registration budget, step timings) come from the daemon's `[cuda]` configuration; the
//! transfer switches exist so that `synthetic-bench` can turn each fast behaviour back
//! into the naive one and measure its gain (docs/transfer-discipline.md).

use crate::msm::MsmTuning;
use crate::stage::HostPath;

/// How the backend moves data and runs its MSMs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaOptions {
    /// Stage each partition before the kernel lock on the copy stream (else upload inside
    /// the kernel region, on the compute stream).
    pub prestage: bool,
    /// How staged bytes leave the host.
    pub host_path: HostPath,
    /// Keep parameters in device memory when the plan allows (else stream them per MSM
    /// batch).
    pub resident_srs: bool,
    /// Keep resident H bases folded (2^132 multiples beside them, 12 GiB more for a 32 GiB
    /// PoRep; the H MSM ~40 ms faster) when the plan allows.
    pub fold_h: bool,
    /// Download and wait after every MSM batch (naive).
    pub sync_per_batch: bool,
    /// Largest MSM batch in points (0: as large as the plan allows).
    pub max_batch: u64,
    /// Partitions staged at once per device (the engine's GPU workers per device).
    pub staging_slots: u64,
    /// Device bytes the backend may use (None: what was free at start, less a margin); a
    /// budget also simulates a smaller GPU.
    pub vram_budget: Option<u64>,
    /// With `host_path` register, when a partition's vectors not page-locked yet (the
    /// first ones of a process) are registered.
    pub register_at: RegisterAt,
    /// With `register_at` auto, the host time a region spends at most registering fresh
    /// host memory behind its queued kernels, in ms (0: none; the region's kernels slow
    /// down beside it: 750 ms slowed the H MSM by 5-12 ms, 300 ms by 0-1 ms).
    pub register_budget_ms: u64,
    /// How the MSMs run (production: [`MsmTuning::PRODUCTION`]).
    pub msm: MsmTuning,
    /// Time every kernel step of each proof with CUDA events and log the sums (a little
    /// slower: the events sit between the kernels).
    pub step_timings: bool,
}

/// When host vectors are registered in place ([`CudaOptions::register_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterAt {
    /// While staging: the driver is held for the whole registration (~0.45 s per GB of
    /// freshly written memory), the partition's proof waits for it and a region running
    /// then slows down.
    Staging,
    /// Inside the partition's own kernel regions, once the H MSM is queued: staging sends
    /// what is not page-locked yet through the bounce buffers, and the region registers
    /// piece by piece while its queued kernels hide the driver time, until the compute
    /// stream runs dry (what is left goes in a later region of the same, refilled,
    /// assignment).
    Region,
    /// As `Region`, for at most [`CudaOptions::register_budget_ms`] per region (0.3 s by
    /// default: 0.75 s slowed the H MSM beside it by 5-12 ms, 0.3 s by 0-1 ms).
    Auto,
}

impl RegisterAt {
    /// The name used in switches and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            RegisterAt::Staging => "staging",
            RegisterAt::Region => "region",
            RegisterAt::Auto => "auto",
        }
    }
}

impl Default for CudaOptions {
    fn default() -> Self {
        Self {
            prestage: true,
            host_path: HostPath::Register,
            resident_srs: true,
            fold_h: true,
            sync_per_batch: false,
            max_batch: 0,
            staging_slots: 2,
            vram_budget: None,
            register_at: RegisterAt::Auto,
            register_budget_ms: 300,
            msm: MsmTuning::PRODUCTION,
            step_timings: false,
        }
    }
}

impl CudaOptions {
    /// The naive behaviour of every switch at once: pageable uploads inside the kernel
    /// region, parameters streamed, a host sync after every MSM batch.
    pub fn naive() -> Self {
        Self {
            prestage: false,
            host_path: HostPath::Pageable,
            resident_srs: false,
            sync_per_batch: true,
            ..Self::default()
        }
    }

    /// One line for logs.
    pub fn describe(&self) -> String {
        format!(
            "prestage={} host_path={} register_at={} register_budget_ms={} resident_srs={} fold_h={} sync_per_batch={} max_batch={} staging_slots={} vram_budget={} step_timings={}",
            self.prestage,
            self.host_path.as_str(),
            self.register_at.as_str(),
            self.register_budget_ms,
            self.resident_srs,
            self.fold_h,
            self.sync_per_batch,
            self.max_batch,
            self.staging_slots,
            self.vram_budget
                .map(|b| format!("{:.1}GiB", b as f64 / (1u64 << 30) as f64))
                .unwrap_or_else(|| "auto".into()),
            self.step_timings
        )
    }
}

/// "123", "24GiB", "512MiB", "1.5GiB" -> bytes.
pub fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = [
        ("GiB", 1u64 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
        ("B", 1),
    ]
    .iter()
    .find_map(|(suf, m)| s.strip_suffix(suf).map(|n| (n.trim(), *m)))
    .unwrap_or((s, 1));
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some((v * mult as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_parse() {
        assert_eq!(parse_bytes("24GiB"), Some(24 << 30));
        assert_eq!(parse_bytes("1.5GiB"), Some(3 << 29));
        assert_eq!(parse_bytes("512MiB"), Some(512 << 20));
        assert_eq!(parse_bytes("123"), Some(123));
        assert_eq!(parse_bytes("-1"), None);
        assert_eq!(parse_bytes("lots"), None);
    }

    #[test]
    fn naive_turns_every_transfer_switch_off_and_keeps_the_rest() {
        let (n, d) = (CudaOptions::naive(), CudaOptions::default());
        assert!(!n.prestage && !n.resident_srs && n.sync_per_batch);
        assert_eq!(n.host_path, HostPath::Pageable);
        assert_eq!(
            (n.msm, n.register_at, n.staging_slots),
            (d.msm, d.register_at, d.staging_slots)
        );
        assert!(d.describe().contains("step_timings=false"));
    }
}
