//! Pippenger's bucket method over the windows of the scalars, group of windows by group.

use cudarc::driver::{CudaSlice, CudaView, PushKernelArg};
use filprove_groth16::ProveError;

use crate::gpu::{cfg, Gpu};

use super::{
    bucket_sums, group_windows, launch_err, leftover_segments, reduce_leftover, reduce_segments,
    run_levels, sum_runs, window_bits, windows, xyzz_adds, Curve, DeviceMsm, Digits, MsmTuning,
    Scattered, SumInput,
};

/// Pippenger over `n` entries: scalars[i] with bases[i] for i < n, or, with `list`,
/// scalars[list[i]] with bases[list[i]]. Folded (`fold` = 2, no list), bases[n + i] is
/// 2^fold_shift(n) bases[i] and each group of buckets takes two windows (msm_folded).
pub(super) fn pippenger<C: Curve>(
    gpu: &Gpu,
    bases: &CudaView<'_, u8>,
    scalars: &CudaView<'_, u8>,
    n: usize,
    list: Option<&CudaSlice<u32>>,
    affine: &MsmTuning,
    fold: u32,
) -> Result<DeviceMsm, ProveError> {
    let p = C::PREFIX;
    let k = |name: &str| format!("{p}_{name}");
    let s = gpu.stream();
    let x = C::XYZZ_BYTES;
    // A folded group holds twice the entries per bucket: one more batch-affine level
    // leaves as few of them per bucket (2^27 points: 805 against 811 ms on the H200).
    let folded_tuning;
    let affine = if fold > 1 && affine.levels > 0 {
        folded_tuning = MsmTuning {
            levels: affine.levels + 1,
            ..*affine
        };
        &folded_tuning
    } else {
        affine
    };
    let c = window_bits(n);
    // Windows after folding: a folded MSM has half as many, each over 2n entries.
    let w = windows(c).div_ceil(fold.max(1));
    let entries = fold.max(1) as usize * n;
    let b = 1usize << (c - 1);
    // The large and the folded MSMs scatter through bins, one window per group.
    let binned = affine.binned_for(n) || fold > 1;
    let g = if binned { 1 } else { group_windows(n, w) };
    let t = C::REDUCE_THREADS;
    let shared = t * x as u32;
    let segs = reduce_segments(c, t);
    let mut window_sums = gpu.alloc::<u8>(w as usize * x)?;
    // Windows [0, wa) are in groups that run the batch-affine levels and fill the GPU
    // with their buckets (only the last group can be smaller): they are reduced from
    // what the levels leave, group by group (reduce_leftover), into
    // `leftover_partial`; the others go through XYZZ buckets.
    let has_levels = |w0: u32| affine.levels_for(((w0 + g).min(w) - w0) as usize * entries) > 0;
    let mut lsegs = 0;
    let mut wa = 0;
    for w0 in (0..w).step_by(g as usize) {
        let w1 = (w0 + g).min(w);
        let segs = if has_levels(w0) {
            leftover_segments::<C>(gpu, w1 - w0, c, affine.leftover)?
        } else {
            None
        };
        match segs {
            Some(segs) if lsegs == 0 || segs == lsegs => {
                lsegs = segs;
                wa = w1;
            }
            _ => break,
        }
    }
    let mut leftover_partial = gpu.alloc::<u8>(wa as usize * lsegs as usize * x)?;
    // The heavy buckets' sums of a group (reduce_leftover).
    let mut heavy_sums = gpu.alloc::<u8>(if wa > 0 { g as usize * b * x } else { 0 })?;
    // The other windows' buckets (zero = the identity), reduced together after the last
    // group.
    let plain = (w - wa) as usize;
    let mut all_buckets = gpu.zeros::<u8>(plain * b * x)?;
    let resident = gpu.resident_threads(&k("msm_chunk_sum"), 128)?;
    // The scalars as integers, converted once for every digit pass.
    let digits = Digits::new(gpu, p, scalars, list, n, c, binned, fold)?;
    // Soundness of every launch below (their SAFETY comments refer here): argument lists
    // match msm.cuh's MSM_KERNELS; buffer sizes are as allocated here (buckets nb, head/tail `chunks`, partial gw*segs, window sums
    // w); the scatter (scatter.rs) gives nb + 1 offsets and their entries.
    //
    // The digits of every group after the first are counted by the scatter of the group
    // before it (one pass over the scalars fewer per group).
    let mut counted: Option<CudaSlice<u32>> = None;
    for w0 in (0..w).step_by(g as usize) {
        let w1 = (w0 + g).min(w);
        let gw = (w1 - w0) as usize;
        let nb = gw * b;
        let Scattered { offsets, sorted } = if binned {
            digits.binned(w0, &mut counted)?
        } else {
            // The next group's end (w1 after the last group).
            digits.direct(w0, w1, (w1 + g).min(w), &mut counted)?
        };
        let left = if has_levels(w0) {
            let left = run_levels::<C>(gpu, bases, &sorted, &offsets, nb, gw * entries, affine)?;
            Some(left)
        } else {
            None
        };
        if let Some(left) = left.as_ref().filter(|_| w0 < wa) {
            drop(sorted);
            let range = w0 as usize * lsegs as usize * x..w1 as usize * lsegs as usize * x;
            reduce_leftover::<C>(
                gpu,
                left,
                nb,
                (c, lsegs),
                resident,
                &mut heavy_sums,
                &mut leftover_partial.slice_mut(range),
            )?;
            continue;
        }
        // The chunk sums take the scattered entries, or what the batch-affine levels
        // leave of them.
        let range = (w0 - wa) as usize * b * x..(w1 - wa) as usize * b * x;
        let (input, offsets, entries) = match &left {
            Some(l) => (SumInput::Leftover(&l.points), &l.offsets, l.bound),
            None => (SumInput::Scattered(bases, &sorted), &offsets, gw * entries),
        };
        bucket_sums::<C>(
            gpu,
            input,
            offsets,
            nb,
            entries,
            resident,
            &mut all_buckets.slice_mut(range),
        )?;
    }
    drop(heavy_sums);
    drop(digits);
    if wa > 0 {
        let parts = wa as usize * lsegs as usize;
        let mut sums = window_sums.slice_mut(..wa as usize * x);
        sum_runs::<C>(gpu, &leftover_partial, lsegs, parts, &mut sums)?;
    }
    drop(leftover_partial);
    if plain > 0 {
        // One reduction over the windows: enough threads to fill the GPU (per window,
        // 2^19 buckets at 32 per thread are a quarter of a wave).
        let parts = plain * segs as usize;
        let mut partial = gpu.alloc::<u8>(parts * x)?;
        // SAFETY: msm_bucket_reduce(const Xyzz* buckets, u32 c, u32 S, Xyzz* partial) as in
        // msm.cuh's MSM_KERNELS, arguments in that order. all_buckets holds b XYZZ buckets
        // for each of the `plain` windows, the 2^(c-1) a block of window w reads; the grid
        // is `parts` = plain * segs blocks of t threads with t XYZZ points (`shared`) of
        // shared memory for the block sum, and block i writes partial[i] only, which was
        // just allocated with `parts` points. Both buffers are dropped only after the
        // reads sum_runs queues on the same stream.
        unsafe {
            s.launch_builder(gpu.func(&k("msm_bucket_reduce"))?)
                .arg(&all_buckets)
                .arg(&c)
                .arg(&segs)
                .arg(&mut partial)
                .launch(cfg(parts, t, shared))
        }
        .map_err(launch_err(gpu, "msm_bucket_reduce"))?;
        sum_runs::<C>(
            gpu,
            &partial,
            segs,
            parts,
            &mut window_sums.slice_mut(wa as usize * x..),
        )?;
    }
    drop(all_buckets);
    // Two XYZZ additions per bucket (the running sum and the sum of running sums), and one
    // per partial sum of a leftover reduction's segments.
    let parts = wa as usize * lsegs as usize;
    gpu.probe(
        "msm_bucket_reduce",
        xyzz_adds::<C>((2 * plain * b + parts) as f64),
    )?;
    Ok(DeviceMsm {
        sums: Some(window_sums),
        windows: w,
        c,
        extra: None,
    })
}
