//! How the MSMs run: batch-affine levels, leftover reduction and binned scatter, kept
//! per device.

use crate::gpu::Gpu;

/// How the MSMs run: the batch-affine levels of the bucket sums, the leftover
/// reduction and the binned scatter. Every setting gives the same sums; production uses
/// the default ([`MsmTuning::default`]), tests and `gpu_bench` others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsmTuning {
    /// Levels for a window group of at least `min_entries` scattered entries (0: none).
    pub levels: u32,
    /// Smallest window group (scattered entries) the levels run for.
    pub min_entries: usize,
    /// Output slots per thread and round: one inversion per block of threads and round.
    pub slots: u32,
    /// Which groups with levels reduce straight from what the levels leave
    /// (leftover.rs); the others sum it into XYZZ buckets first.
    pub leftover: LeftoverReduce,
    /// Smallest MSM (entries) whose windows are scattered one at a time through bins
    /// (kernels/msm/bin_scatter.cuh); `usize::MAX`: none.
    pub binned_min: usize,
}

/// When a window group with levels reduces straight from their leftover points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeftoverReduce {
    /// When its buckets fill the GPU (leftover.rs): the H MSM's groups.
    Auto,
    /// Every group with levels (tests: the heavy-bucket path at small sizes).
    Always,
    /// None (A/B runs).
    Never,
}

impl Default for MsmTuning {
    fn default() -> Self {
        Self::PRODUCTION
    }
}

impl MsmTuning {
    /// No levels: every entry goes through the XYZZ chunk sums.
    pub const OFF: Self = Self {
        levels: 0,
        min_entries: usize::MAX,
        slots: Self::SLOTS,
        leftover: LeftoverReduce::Auto,
        binned_min: Self::BINNED_MIN,
    };

    /// Default [`MsmTuning::binned_min`]: MSMs whose sorted entries of one window (4 bytes
    /// each) no longer fit a third of the H200's 50 MB L2. There the 2^27 G1 MSM took
    /// 883 ms binned against 934 direct, its scatter 76 ms against 128.
    pub const BINNED_MIN: usize = 1 << 22;

    /// Default slots per thread and round: on the H200 the 2^27 G1 MSM's levels take
    /// 723.9 / 711.7 / 705.1 / 696.1 / 693.1 / 690.8 / 689.7 ms at 96 / 128 / 160 / 192 /
    /// 224 / 256 / 320 slots (2026-12-04, one device call; each 32 more slots cost
    /// 32 x 57 bytes of scratch per resident thread).
    pub const SLOTS: u32 = 256;

    /// The production setting: 5 levels from 2^23 entries (window groups, or the ones of a
    /// split MSM), at most [`Self::SLOTS`] slots per thread and round, the leftover reduced
    /// straight where its buckets fill the GPU, binned scatter from 2^22 entries. On the
    /// H200 the 2^27 G1 MSM takes 966.6 ms with 4 levels and 961.3 ms with 5; the split
    /// 2^27 MSM of the Filecoin mix 72.8 ms without levels, 64.2 ms with them for its ones
    /// (2^25 threshold) and 60.1 ms for its window groups too (2^23)
    /// (docs/decisions/003-batch-affine-msm-levels.md).
    pub const PRODUCTION: Self = Self {
        levels: 5,
        min_entries: 1 << 23,
        slots: Self::SLOTS,
        leftover: LeftoverReduce::Auto,
        binned_min: Self::BINNED_MIN,
    };

    /// Whether an MSM of `n` entries is scattered through bins.
    pub fn binned_for(&self, n: usize) -> bool {
        n >= self.binned_min
    }

    /// Levels for a window group of `entries` scattered entries.
    pub fn levels_for(&self, entries: usize) -> u32 {
        if entries >= self.min_entries.max(1) {
            self.levels
        } else {
            0
        }
    }
}

impl Gpu {
    /// This device with MSMs run as `tuning` says.
    pub fn with_msm_tuning(self, tuning: MsmTuning) -> Self {
        self.with_setting(tuning)
    }

    /// How this device's MSMs run ([`MsmTuning::PRODUCTION`] unless set).
    pub fn msm_tuning(&self) -> MsmTuning {
        self.setting::<MsmTuning>()
            .copied()
            .unwrap_or(MsmTuning::PRODUCTION)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_start_at_the_threshold() {
        let a = MsmTuning {
            levels: 3,
            min_entries: 100,
            slots: 8,
            leftover: LeftoverReduce::Auto,
            binned_min: 100,
        };
        assert_eq!(a.levels_for(99), 0);
        assert!(!a.binned_for(99) && a.binned_for(100));
        assert_eq!(a.levels_for(100), 3);
        assert_eq!(MsmTuning::OFF.levels_for(usize::MAX - 1), 0);
    }
}
