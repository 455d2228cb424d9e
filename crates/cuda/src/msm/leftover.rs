//! The bucket reduction straight from what the batch-affine levels leave
//! (kernels/msm/leftover.cuh): the heavy buckets summed first, balanced over the GPU, the
//! others added one by one into the running sums.

use cudarc::driver::{CudaSlice, CudaViewMut, PushKernelArg};
use filprove_groth16::ProveError;

use crate::gpu::{blocks, cfg, Gpu};

use super::{
    bucket_sums, mixed_adds, scan_u32, xyzz_adds, Curve, Leftover, LeftoverReduce, SumInput,
};

/// buckets then costs at most 3 to 4 times the typical one.
const LEFTOVER_LIGHT: u32 = 8;

/// Upper bound on the leftover reduction's blocks per window.
pub(super) const MAX_LEFTOVER_SEGMENTS: u32 = 4096;

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
pub(super) fn leftover_segments<C: Curve>(
    gpu: &Gpu,
    group_windows: u32,
    c: u32,
    mode: LeftoverReduce,
) -> Result<Option<u32>, ProveError> {
    if mode == LeftoverReduce::Never || !C::LEFTOVER_REDUCE {
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
pub(super) fn reduce_leftover<C: Curve>(
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
    // At most every leftover point added into its bucket, then two XYZZ additions per
    // bucket for the running sums.
    let work = mixed_adds::<C>(left.bound as f64) + xyzz_adds::<C>(2.0 * nb as f64);
    gpu.probe("msm_leftover_reduce", work)?;
    Ok(())
}
