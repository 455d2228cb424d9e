//! Batch-affine levels of the G1 bucket sums (kernels/ec/affine_sums.cuh).
//!
//! Each level pairs the points of every bucket and adds each pair in affine coordinates,
//! the denominators of a block's pairs inverted together: about 6 field products per
//! addition against the 10 of the mixed XYZZ addition that `msm_chunk_sum` makes. After
//! the last level the chunk sums add what is left of each bucket (about a 2^-levels share
//! of the entries).

use std::sync::OnceLock;

use cudarc::driver::{CudaSlice, CudaView, PushKernelArg};
use filprove_groth16::ProveError;

use crate::gpu::{blocks, cfg, Gpu};
use crate::msm::scan_u32;

/// Threads per block of the level kernel (`AFF_THREADS` in affine_sums.cuh).
const THREADS: u32 = 128;
/// Output slots per thread and round the scratch is sized for (`AFF_SLOTS` in
/// affine_sums.cuh, 64, or up to 128 in A/B builds).
const SLOTS: usize = 128;
/// Bytes of one G1 affine point and of one Fq element on the device.
const POINT_BYTES: usize = 96;
const FQ_BYTES: usize = 48;
/// Upper bound on the level kernel's grid (blocks), for the scratch bound.
const MAX_BLOCKS: usize = 132 * 8;

/// How many batch-affine levels an MSM's bucket sums run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AffineSums {
    /// Levels for a window group of at least `min_entries` scattered entries (0: none).
    pub levels: u32,
    /// Smallest window group (scattered entries) the levels run for.
    pub min_entries: usize,
}

impl AffineSums {
    /// No levels: every entry goes through the XYZZ chunk sums.
    pub const OFF: Self = Self {
        levels: 0,
        min_entries: usize::MAX,
    };

    /// The default, or `FILPROVE_MSM_AFFINE_LEVELS` and `FILPROVE_MSM_AFFINE_MIN`, read
    /// once per process (A/B runs; every setting gives the same sums).
    ///
    /// Default: 4 levels from 2^25 entries. On the H200 (docs/benchmarks.md, "Session 9")
    /// the 2^27 G1 MSM (one window of 2^27 entries per group) takes 1,166 ms without
    /// levels and 1,047 / 1,042 / 1,046 ms with 3 / 4 / 5; the split 2^27 MSM of the
    /// Filecoin mix (groups of ~2^24 entries) is 3 ms slower with them (76.3 against 73.2 ms),
    /// so groups that small keep the XYZZ sums alone.
    pub fn from_env() -> Self {
        static SET: OnceLock<AffineSums> = OnceLock::new();
        *SET.get_or_init(|| {
            let get = |k: &str| std::env::var(k).ok().and_then(|v| v.trim().parse().ok());
            Self {
                levels: get("FILPROVE_MSM_AFFINE_LEVELS").map_or(4, |v: u64| v.min(32) as u32),
                min_entries: get("FILPROVE_MSM_AFFINE_MIN").map_or(1 << 25, |v: u64| v as usize),
            }
        })
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

/// Device bytes the levels need beyond the scattered entries, for at most `entries`
/// entries in `nb` buckets: two levels' points, two offset arrays and the scratch.
pub fn scratch_bytes(entries: usize, nb: usize, levels: u32) -> usize {
    if levels == 0 {
        return 0;
    }
    let first = halved(entries, nb);
    let second = if levels > 1 { halved(first, nb) } else { 0 };
    let threads = MAX_BLOCKS * THREADS as usize;
    (first + second) * POINT_BYTES + 3 * (nb + 1) * 4 + SLOTS * threads * (FQ_BYTES + 4 + 1)
}

/// What the levels leave: `points` in bucket order, `offsets` (nb + 1) per bucket, at
/// most `bound` points (the exact count is `offsets[nb]`, on the device).
pub struct Leftover {
    pub points: CudaSlice<u8>,
    pub offsets: CudaSlice<u32>,
    pub bound: usize,
}

/// Runs `levels` (at least 1) levels over the scattered entries `sorted` (indices into
/// `bases`, sign in bit 31) with bucket `offsets` (nb + 1), at most `entries` of them.
/// Everything is queued on the compute stream.
pub fn run_levels(
    gpu: &Gpu,
    bases: &CudaView<'_, u8>,
    sorted: &CudaSlice<u32>,
    offsets: &CudaSlice<u32>,
    nb: usize,
    entries: usize,
    levels: u32,
) -> Result<Leftover, ProveError> {
    let s = gpu.stream();
    let level_fn = gpu.func("g1_msm_affine_level")?;
    let halve_fn = gpu.func("g1_msm_affine_halve")?;
    let grid = (gpu.resident_threads("g1_msm_affine_level", THREADS)? / THREADS as usize)
        .clamp(1, MAX_BLOCKS);
    let threads = grid * THREADS as usize;
    let mut pre = gpu.alloc::<u8>(SLOTS * threads * FQ_BYTES)?;
    let mut src = gpu.alloc::<u32>(SLOTS * threads)?;
    let mut kind = gpu.alloc::<u8>(SLOTS * threads)?;
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
        // SAFETY: msm_affine_level(pts, sorted, in_off, out_off, nb, out, pre, src, kind)
        // as in msm_g1.cu. The first level reads `bases` through `sorted` (at most
        // `entries` indices below the bases' length), later ones the previous level's
        // points (`bound` of them, `in_off[nb]` used); `out` holds `next` >= out_off[nb]
        // points; the scratch holds SLOTS entries per thread of `grid` blocks of THREADS.
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
                .arg(&mut src)
                .arg(&mut kind)
                .launch(cfg(grid, THREADS, 0))
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
        assert!(scratch_bytes(1 << 27, 1 << 21, 4) > 9 << 30);
        assert_eq!(scratch_bytes(1 << 27, 1 << 21, 0), 0);
    }

    #[test]
    fn levels_start_at_the_threshold() {
        let a = AffineSums {
            levels: 3,
            min_entries: 100,
        };
        assert_eq!(a.levels_for(99), 0);
        assert_eq!(a.levels_for(100), 3);
        assert_eq!(AffineSums::OFF.levels_for(usize::MAX - 1), 0);
    }
}
