//! Batch-affine levels of the G1 bucket sums (kernels/ec/affine_sums.cuh).
//!
//! Each level pairs the points of every bucket and adds each pair in affine coordinates,
//! the denominators of a block's pairs inverted together: about 6 field products per
//! addition against the 10 of the mixed XYZZ addition that `msm_chunk_sum` makes. What
//! the last level leaves of each bucket (about a 2^-levels share of the entries) goes
//! straight into the bucket reduction's running sums ([`reduce_leftover`],
//! kernels/ec/leftover.cuh).

use std::collections::HashMap;

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, CudaSlice, CudaView, CudaViewMut, DriverError, PushKernelArg};
use filprove_groth16::ProveError;

use crate::gpu::{blocks, cfg, Gpu};
use crate::msm::{bucket_sums, scan_u32, Curve, SumInput};

/// Bytes of one G1 affine point and of one Fq element on the device.
const POINT_BYTES: usize = 96;
const FQ_BYTES: usize = 48;
/// Scratch bytes per output slot of a level round: a prefix product, two input indices
/// and a case byte.
const SLOT_BYTES: usize = FQ_BYTES + 2 * 4 + 1;
/// Upper bound on the level kernel's resident threads (132 SMs x 1,024), for the scratch
/// bound.
const MAX_THREADS: usize = 132 * 1024;
/// Name of the level kernel.
const LEVEL: &str = "g1_msm_affine_level";

/// Dynamic shared memory of the level kernel for blocks of `threads` (`AFF_STAGE_BYTES`
/// in affine_sums.cuh: two buffers of 15 16-byte pieces per thread).
fn stage_bytes(threads: u32) -> u32 {
    2 * 15 * threads * 16
}

/// The level kernel's block size: its launch bound (`AFF_THREADS` in affine_sums.cuh).
fn level_threads(f: &CudaFunction) -> Result<u32, DriverError> {
    Ok(f.max_threads_per_block()?.max(32) as u32)
}

/// Allows the level kernel its dynamic shared memory (at module load, `Gpu::new`).
pub(crate) fn prepare(funcs: &HashMap<String, CudaFunction>) -> Result<(), DriverError> {
    if let Some(f) = funcs.get(LEVEL) {
        f.set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            stage_bytes(level_threads(f)?) as i32,
        )?;
    }
    Ok(())
}

/// How the MSMs run: the batch-affine levels of the G1 bucket sums, the leftover
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
    /// ([`reduce_leftover`]); the others sum it into XYZZ buckets first.
    pub leftover: LeftoverReduce,
    /// Smallest MSM (entries) whose windows are scattered one at a time through bins
    /// (kernels/bin_scatter.cuh); `usize::MAX`: none.
    pub binned_min: usize,
}

/// When a window group with levels reduces straight from their leftover points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeftoverReduce {
    /// When its buckets fill the GPU ([`leftover_segments`]): the H MSM's groups.
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

    /// Default slots per thread and round.
    pub const SLOTS: u32 = 128;

    /// The production setting: 5 levels from 2^23 entries (window groups, or the ones of a
    /// split MSM), at most 128 slots per thread and round, the leftover reduced straight
    /// where its buckets fill the GPU, binned scatter from 2^22 entries. On the H200 the
    /// 2^27 G1 MSM takes 966.6 ms with 4 levels and 961.3 ms with 5; the split 2^27 MSM of
    /// the Filecoin mix 72.8 ms without levels, 64.2 ms with them for its ones (2^25
    /// threshold) and 60.1 ms for its window groups too (2^23). Slots at 4 levels with one
    /// fixed count per level: 705-727 ms for 128 / 96 / 64, 730 for 256
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

/// Upper bound on the points one level leaves from at most `m` points in `nb` buckets:
/// sum of ceil(m_b / 2) <= (m + number of odd buckets) / 2.
pub fn halved(m: usize, nb: usize) -> usize {
    (m + nb.min(m)).div_ceil(2)
}

impl MsmTuning {
    /// Device bytes the levels need beyond the scattered entries of a window group of at
    /// most `entries` entries in `nb` buckets: two levels' points, two offset arrays and
    /// the scratch (0 when the group runs no levels).
    pub fn scratch_bytes(&self, entries: usize, nb: usize) -> usize {
        let levels = self.levels_for(entries);
        if levels == 0 {
            return 0;
        }
        let first = halved(entries, nb);
        let second = if levels > 1 { halved(first, nb) } else { 0 };
        (first + second) * POINT_BYTES
            + 3 * (nb + 1) * 4
            + self.slots.max(1) as usize * MAX_THREADS * SLOT_BYTES
    }
}

/// What the levels leave: `points` in bucket order, `offsets` (nb + 1) per bucket, at
/// most `bound` points (the exact count is `offsets[nb]`, on the device).
pub struct Leftover {
    pub points: CudaSlice<u8>,
    pub offsets: CudaSlice<u32>,
    pub bound: usize,
}

/// Runs the levels `sums` gives a group of `entries` (at least 1 level) over the scattered
/// entries `sorted` (indices into `bases`, sign in bit 31) with bucket `offsets` (nb + 1),
/// at most `entries` of them. Everything is queued on the compute stream.
pub fn run_levels(
    gpu: &Gpu,
    bases: &CudaView<'_, u8>,
    sorted: &CudaSlice<u32>,
    offsets: &CudaSlice<u32>,
    nb: usize,
    entries: usize,
    sums: &MsmTuning,
) -> Result<Leftover, ProveError> {
    let levels = sums.levels_for(entries);
    let s = gpu.stream();
    let level_fn = gpu.func(LEVEL)?;
    let halve_fn = gpu.func("g1_msm_affine_halve")?;
    let block = level_threads(level_fn).map_err(|e| gpu.err(LEVEL, e))?;
    let stage = stage_bytes(block);
    let grid = (gpu.resident_threads_with(LEVEL, block, stage)? / block as usize)
        .clamp(1, MAX_THREADS / block as usize);
    let slots = sums.slots.max(1);
    let entries_per_array = slots as usize * grid * block as usize;
    let mut pre = gpu.alloc::<u8>(entries_per_array * FQ_BYTES)?;
    let mut src_a = gpu.alloc::<u32>(entries_per_array)?;
    let mut src_b = gpu.alloc::<u32>(entries_per_array)?;
    let mut kind = gpu.alloc::<u8>(entries_per_array)?;
    let nb32 = nb as u32;
    let null = 0u64;
    let mut cur: Option<Leftover> = None;
    let mut bound = entries;
    for _ in 0..levels.max(1) {
        let in_off = cur.as_ref().map_or(offsets, |c| &c.offsets);
        let mut counts = gpu.alloc::<u32>(nb + 1)?;
        // SAFETY: msm_affine_halve(const u32* off, u32 nb, u32* counts) as in
        // affine_sums.cuh; `in_off` and `counts` hold nb + 1 words.
        unsafe {
            s.launch_builder(halve_fn)
                .arg(in_off)
                .arg(&nb32)
                .arg(&mut counts)
                .launch(cfg(blocks(nb + 1, 256), 256, 0))
        }
        .map_err(|e| gpu.err("g1_msm_affine_halve", e))?;
        let mut out_off = gpu.alloc::<u32>(nb + 1)?;
        scan_u32(gpu, &counts, &mut out_off, nb + 1)?;
        drop(counts);
        let next = halved(bound, nb);
        let mut out = gpu.alloc::<u8>(next.max(1) * POINT_BYTES)?;
        // SAFETY: msm_affine_level(pts, sorted, in_off, out_off, nb, out, pre, src_a,
        // src_b, kind, slots) as in msm_g1.cu, blocks of its launch bound with their
        // dynamic shared memory (allowed at module load, `prepare`). The first level reads `bases` through `sorted` (at most
        // `entries` indices below the bases' length), later ones the previous level's
        // points (`bound` of them, `in_off[nb]` used); `out` holds `next` >= out_off[nb]
        // points; the scratch holds `slots` entries per thread of `grid` blocks.
        unsafe {
            let mut lb = s.launch_builder(level_fn);
            match &cur {
                Some(c) => lb.arg(&c.points).arg(&null),
                None => lb.arg(bases).arg(sorted),
            };
            lb.arg(in_off)
                .arg(&out_off)
                .arg(&nb32)
                .arg(&mut out)
                .arg(&mut pre)
                .arg(&mut src_a)
                .arg(&mut src_b)
                .arg(&mut kind)
                .arg(&slots)
                .launch(cfg(grid, block, stage))
        }
        .map_err(|e| gpu.err("g1_msm_affine_level", e))?;
        cur = Some(Leftover {
            points: out,
            offsets: out_off,
            bound: next,
        });
        bound = next;
    }
    gpu.probe("msm_affine_levels")?;
    cur.ok_or_else(|| gpu.fault("no batch-affine level ran".into()))
}

/// Leftover points up to which a bucket's points are added one by one in the reduction;
/// larger buckets are summed first, balanced over the GPU (ec/leftover.cuh). Random
/// scalars leave 2 or 3 per bucket at 2^27 points and 5 levels; a thread's run of 64
/// buckets then costs at most 3 to 4 times the typical one.
pub const LEFTOVER_LIGHT: u32 = 8;

/// Upper bound on the leftover reduction's blocks per window.
pub const MAX_LEFTOVER_SEGMENTS: u32 = 4096;

/// Threads per block of the leftover reduction (a power of two: its shared-memory tree).
const LEFTOVER_THREADS: u32 = 128;

/// Blocks per window of the leftover reduction for a group of `group_windows` windows of
/// 2^(c-1) buckets, or None when `mode` says no or (Auto) the group is too small for it:
/// its threads take at least 32 buckets each (each ends with a scalar multiplication of
/// ~20 doublings by its first bucket's index) and must then fill at least half of the GPU
/// (a wave of the reduction at most). 2^27 points: 256 blocks, 64 buckets per thread. The split MSMs' groups
/// (2^17 buckets, 6 windows: 96 blocks) are better off through XYZZ buckets and one
/// reduction over all windows (G1 split 2^27: 60.4 against 67.9 ms,
/// docs/decisions/003-batch-affine-msm-levels.md).
pub(crate) fn leftover_segments<C: Curve>(
    gpu: &Gpu,
    group_windows: u32,
    c: u32,
    mode: LeftoverReduce,
) -> Result<Option<u32>, ProveError> {
    if mode == LeftoverReduce::Never {
        return Ok(None);
    }
    let name = format!("{}_msm_leftover_reduce", C::PREFIX);
    let shared = LEFTOVER_THREADS * C::XYZZ_BYTES as u32;
    let wave =
        gpu.resident_threads_with(&name, LEFTOVER_THREADS, shared)? / LEFTOVER_THREADS as usize;
    let gw = group_windows.max(1) as usize;
    let spread = ((1usize << (c - 1)) / (LEFTOVER_THREADS as usize * 32)).max(1);
    if mode == LeftoverReduce::Auto && 2 * gw * spread < wave {
        return Ok(None);
    }
    let segs = (wave / gw).clamp(1, spread.min(MAX_LEFTOVER_SEGMENTS as usize));
    Ok(Some(1 << segs.ilog2()))
}

/// Steps 4-6 of a window group of `nb` buckets (window bits and blocks per window in
/// `(c, segs)`) from what its levels left: the heavy buckets' sums into `heavy` (at least
/// nb points; only the heavy buckets' are written and read; chunks over one wave of
/// `resident` threads), then the running sums, one partial sum per block into `partial`
/// (windows x segs points). Queued.
pub(crate) fn reduce_leftover<C: Curve>(
    gpu: &Gpu,
    left: &Leftover,
    nb: usize,
    (c, segs): (u32, u32),
    resident: usize,
    heavy: &mut CudaSlice<u8>,
    partial: &mut CudaViewMut<'_, u8>,
) -> Result<(), ProveError> {
    let x = C::XYZZ_BYTES;
    let nb32 = nb as u32;
    // The heavy buckets' points, numbered apart (an exclusive scan of their sizes).
    let mut counts = gpu.alloc::<u32>(nb + 1)?;
    let counts_fn = format!("{}_msm_leftover_heavy_counts", C::PREFIX);
    // SAFETY: msm_leftover_heavy_counts(off, nb, light, counts) as in msm_g1.cu; both
    // arrays hold nb + 1 words.
    unsafe {
        gpu.stream()
            .launch_builder(gpu.func(&counts_fn)?)
            .arg(&left.offsets)
            .arg(&nb32)
            .arg(&LEFTOVER_LIGHT)
            .arg(&mut counts)
            .launch(cfg(blocks(nb + 1, 256), 256, 0))
    }
    .map_err(|e| gpu.err(&counts_fn, e))?;
    let mut heavy_off = gpu.alloc::<u32>(nb + 1)?;
    scan_u32(gpu, &counts, &mut heavy_off, nb + 1)?;
    drop(counts);
    let input = SumInput::Heavy(&left.points, &left.offsets);
    bucket_sums::<C>(
        gpu,
        input,
        &heavy_off,
        nb,
        left.bound,
        resident,
        &mut heavy.slice_mut(..nb * x),
    )?;
    let windows = nb >> (c - 1);
    let name = format!("{}_msm_leftover_reduce", C::PREFIX);
    // SAFETY: msm_leftover_reduce(pts, off, heavy, light, c, S, partial) as in msm_g1.cu;
    // `offsets` holds nb + 1 words (nb = windows x 2^(c-1)), the points `bound` >=
    // offsets[nb], `heavy` nb points, `partial` windows x segs; blocks of
    // LEFTOVER_THREADS with their shared-memory tree.
    unsafe {
        gpu.stream()
            .launch_builder(gpu.func(&name)?)
            .arg(&left.points)
            .arg(&left.offsets)
            .arg(&*heavy)
            .arg(&LEFTOVER_LIGHT)
            .arg(&c)
            .arg(&segs)
            .arg(&mut *partial)
            .launch(cfg(
                windows * segs as usize,
                LEFTOVER_THREADS,
                LEFTOVER_THREADS * x as u32,
            ))
    }
    .map_err(|e| gpu.err(&name, e))?;
    gpu.probe("msm_leftover_reduce")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bound holds for every way of spreading m points over nb buckets (brute force
    /// over small cases), and it halves large groups.
    #[test]
    fn halved_bounds_every_spread() {
        fn spreads(m: usize, nb: usize, out: &mut Vec<Vec<usize>>, cur: &mut Vec<usize>) {
            if cur.len() == nb {
                if cur.iter().sum::<usize>() == m {
                    out.push(cur.clone());
                }
                return;
            }
            for k in 0..=m - cur.iter().sum::<usize>() {
                cur.push(k);
                spreads(m, nb, out, cur);
                cur.pop();
            }
        }
        for m in 0..9 {
            for nb in 1..5 {
                let mut all = Vec::new();
                spreads(m, nb, &mut all, &mut Vec::new());
                for s in all {
                    let left: usize = s.iter().map(|k| k.div_ceil(2)).sum();
                    assert!(left <= halved(m, nb), "{s:?}: {left} > {}", halved(m, nb));
                }
            }
        }
        assert_eq!(halved(1 << 27, 1 << 21), (1 << 26) + (1 << 20));
        let on = MsmTuning {
            levels: 4,
            min_entries: 1,
            slots: 128,
            leftover: LeftoverReduce::Auto,
            binned_min: MsmTuning::BINNED_MIN,
        };
        assert!(on.scratch_bytes(1 << 27, 1 << 21) > 9 << 30);
        assert_eq!(MsmTuning::OFF.scratch_bytes(1 << 27, 1 << 21), 0);
    }

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
