//! Batch-affine levels of the bucket sums, G1 and G2 (kernels/msm/affine_sums.cuh).
//!
//! Each level pairs the points of every bucket and adds each pair in affine coordinates,
//! the denominators of a block's pairs inverted together: about 6 field products per
//! addition against the 10 of the mixed XYZZ addition that `msm_chunk_sum` makes. What
//! the last level leaves of each bucket (about a 2^-levels share of the entries) goes
//! straight into the bucket reduction's running sums (G1's H MSM: leftover.rs,
//! kernels/msm/leftover.cuh) or through the XYZZ chunk sums.

use cudarc::driver::{CudaFunction, CudaSlice, CudaView, DriverError, PushKernelArg};
use filprove_groth16::ProveError;

use crate::gpu::{blocks, cfg, Gpu};
use crate::kernels::AFFINE_LEVELS;
use crate::work::{Work, AFFINE_ADD_FQ};

use super::{scan_u32, Curve, MsmTuning};

/// Bytes of one coordinate (a field element) of a point of `C`.
fn field_bytes<C: Curve>() -> usize {
    C::AFFINE_BYTES / 2
}
/// Scratch bytes per output slot of a level round: a prefix product, two input indices
/// and a case byte.
fn slot_bytes<C: Curve>() -> usize {
    field_bytes::<C>() + 2 * 4 + 1
}
/// Upper bounds on a device's SMs (H200: 132, B200: 148), on the shared memory of one SM
/// (228 KiB on sm_90 and sm_100, less on the others) and on its resident threads, for the
/// scratch bound.
const MAX_SMS: usize = 160;
const MAX_SHARED_PER_SM: usize = 228 << 10;
const MAX_THREADS_PER_SM: usize = 2048;

/// Upper bound on the resident threads of a level kernel whose threads hold `per_thread`
/// bytes of stage in shared memory (G1: 480, at most 486 threads per SM; G2: 960, 243): the
/// scratch is planned for what can run, not for every thread an SM could hold (the H200
/// runs 384 for G1 and 224 for G2). The launch never takes more (`run_levels`).
fn resident_bound(per_thread: u32) -> usize {
    MAX_SMS * (MAX_SHARED_PER_SM / per_thread.max(1) as usize).min(MAX_THREADS_PER_SM)
}

/// [`resident_bound`] of `C`'s level kernel (every thread an SM holds if it is not listed).
fn max_threads<C: Curve>() -> usize {
    level_kernel::<C>().map_or(MAX_SMS * MAX_THREADS_PER_SM, |(_, b)| resident_bound(b))
}

/// The level kernel of `C` and its dynamic shared memory per thread (as much as `Gpu::open`
/// allows it for a block of its launch bound); None if `kernels::AFFINE_LEVELS` lacks it.
fn level_kernel<C: Curve>() -> Option<(String, u32)> {
    let name = format!("{}_msm_affine_level", C::PREFIX);
    let &(_, per_thread) = AFFINE_LEVELS.iter().find(|(n, _)| *n == name)?;
    Some((name, per_thread))
}

/// The level kernel's block size: its launch bound (`AFF_THREADS` in affine_sums.cuh).
fn level_threads(f: &CudaFunction) -> Result<u32, DriverError> {
    Ok(f.max_threads_per_block()?.max(32) as u32)
}

/// Upper bound on the points one level leaves from at most `m` points in `nb` buckets:
/// sum of ceil(m_b / 2) <= (m + number of odd buckets) / 2.
pub(super) fn halved(m: usize, nb: usize) -> usize {
    (m + nb.min(m)).div_ceil(2)
}

impl MsmTuning {
    /// Device bytes the levels need beyond the scattered entries of a window group of at
    /// most `entries` entries in `nb` buckets of points of `C`: two levels' points, two
    /// offset arrays and the scratch (0 when the group runs no levels).
    pub fn scratch_bytes<C: Curve>(&self, entries: usize, nb: usize) -> usize {
        let levels = self.levels_for(entries);
        if levels == 0 {
            return 0;
        }
        let first = halved(entries, nb);
        let second = if levels > 1 { halved(first, nb) } else { 0 };
        (first + second) * C::AFFINE_BYTES
            + 3 * (nb + 1) * 4
            + self.slots.max(1) as usize * max_threads::<C>() * slot_bytes::<C>()
    }
}

/// What the levels leave: `points` in bucket order, `offsets` (nb + 1) per bucket, at
/// most `bound` points (the exact count is `offsets[nb]`, on the device).
pub(super) struct Leftover {
    pub(super) points: CudaSlice<u8>,
    pub(super) offsets: CudaSlice<u32>,
    pub(super) bound: usize,
}

/// Runs the levels `sums` gives a group of `entries` (at least 1 level) over the scattered
/// entries `sorted` (indices into `bases`, sign in bit 31) with bucket `offsets` (nb + 1),
/// at most `entries` of them, points of `C`. Everything is queued on the compute stream.
pub(super) fn run_levels<C: Curve>(
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
    let (level, per_thread) = level_kernel::<C>()
        .ok_or_else(|| gpu.fault(format!("no {} level kernel listed", C::PREFIX)))?;
    let halve = format!("{}_msm_affine_halve", C::PREFIX);
    let level_fn = gpu.func(&level)?;
    let halve_fn = gpu.func(&halve)?;
    let block = level_threads(level_fn).map_err(|e| gpu.err(&level, e))?;
    let stage = per_thread * block;
    let grid = (gpu.resident_threads_with(&level, block, stage)? / block as usize)
        .clamp(1, (resident_bound(per_thread) / block as usize).max(1));
    let slots = sums.slots.max(1);
    let entries_per_array = slots as usize * grid * block as usize;
    let point_bytes = C::AFFINE_BYTES;
    let mut pre = gpu.alloc::<u8>(entries_per_array * field_bytes::<C>())?;
    let mut src_a = gpu.alloc::<u32>(entries_per_array)?;
    let mut src_b = gpu.alloc::<u32>(entries_per_array)?;
    let mut kind = gpu.alloc::<u8>(entries_per_array)?;
    let nb32 = nb as u32;
    let null = 0u64;
    let mut cur: Option<Leftover> = None;
    let mut bound = entries;
    let mut work = Work::NONE;
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
        .map_err(|e| gpu.err(&halve, e))?;
        let mut out_off = gpu.alloc::<u32>(nb + 1)?;
        scan_u32(gpu, &counts, &mut out_off, nb + 1)?;
        drop(counts);
        let next = halved(bound, nb);
        let mut out = gpu.alloc::<u8>(next.max(1) * point_bytes)?;
        // SAFETY: msm_affine_level(pts, sorted, in_off, out_off, nb, out, pre, src_a,
        // src_b, kind, slots) as in msm_g1.cu / msm_g2.cu, points of C, blocks of its
        // launch bound with their dynamic shared memory (allowed at module load,
        // `allow_large_shared`). The first level reads `bases` through `sorted` (at most
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
        .map_err(|e| gpu.err(&level, e))?;
        // About one addition per two input points: two points read, the sum written, a
        // slot's prefix, indices and case written and read back.
        let adds = bound as f64 / 2.0;
        work += Work::fq(adds * AFFINE_ADD_FQ * C::FQ_PER_PRODUCT)
            .and_bytes(adds * (3 * point_bytes + 2 * slot_bytes::<C>()) as f64);
        cur = Some(Leftover {
            points: out,
            offsets: out_off,
            bound: next,
        });
        bound = next;
    }
    gpu.probe("msm_affine_levels", work)?;
    cur.ok_or_else(|| gpu.fault("no batch-affine level ran".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msm::{LeftoverReduce, G1, G2};

    /// Both curves' level kernels are listed with their stage: two buffers of two points
    /// and a prefix per thread.
    #[test]
    fn level_kernels_are_listed() {
        assert_eq!(
            level_kernel::<G1>(),
            Some(("g1_msm_affine_level".into(), 2 * 5 * 48))
        );
        assert_eq!(
            level_kernel::<G2>(),
            Some(("g2_msm_affine_level".into(), 2 * 5 * 96))
        );
    }

    /// The scratch covers every level thread a device of up to MAX_SMS SMs keeps resident
    /// (H200 and B200: 3 blocks of 128 per SM for G1, 7 of 32 for G2), and no more than
    /// their stages allow.
    #[test]
    fn level_scratch_covers_the_resident_threads() {
        assert!(max_threads::<G1>() >= 148 * 384);
        assert!(max_threads::<G2>() >= 148 * 224);
        assert!(max_threads::<G1>() < 132 * 1024);
        assert!(max_threads::<G2>() < max_threads::<G1>());
    }

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
        assert!(on.scratch_bytes::<G1>(1 << 27, 1 << 21) > 9 << 30);
        assert!(
            on.scratch_bytes::<G2>(1 << 25, 1 << 19) > on.scratch_bytes::<G1>(1 << 25, 1 << 19)
        );
        assert_eq!(MsmTuning::OFF.scratch_bytes::<G1>(1 << 27, 1 << 21), 0);
    }
}
