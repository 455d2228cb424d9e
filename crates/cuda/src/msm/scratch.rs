//! Device memory an MSM needs beyond its bases and scalars (the VRAM plan's MSM term).

use super::{
    group_windows, list_chunk_len, reduce_segments, window_bits, windows, Curve, Digits, MsmTuning,
    MAX_CHUNKS, MAX_LEFTOVER_SEGMENTS,
};

/// Device bytes an MSM over `n` points needs beyond its bases and scalars (the larger of a
/// plain and a split MSM), with the production tuning.
pub fn scratch_bytes<C: Curve>(n: usize) -> usize {
    scratch_with::<C>(n, 1)
}

/// [`scratch_bytes`] of a folded MSM over `n` scalars (msm_folded: 2n entries per group).
pub fn folded_scratch_bytes<C: Curve>(n: usize) -> usize {
    scratch_with::<C>(n, 2)
}

/// [`scratch_bytes`] with `fold` windows per group of buckets (1 or 2).
fn scratch_with<C: Curve>(n: usize, fold: usize) -> usize {
    let n = n.max(1);
    let c = window_bits(n);
    let w = windows(c).div_ceil(fold as u32);
    let sums = MsmTuning::PRODUCTION;
    let binned = sums.binned_for(n) || fold > 1;
    let g = if binned {
        1
    } else {
        group_windows(n, w) as usize
    };
    let (x, b) = (C::XYZZ_BYTES, 1usize << (c - 1));
    let nb = g * b;
    let entries = g * fold * n;
    // Chunks: at most one per 8 entries (the shortest chunk), at most MAX_CHUNKS.
    let chunks = entries.div_ceil(8).min(MAX_CHUNKS) + 1;
    let segs = reduce_segments(c, C::REDUCE_THREADS) as usize;
    let group = 4 * (nb + 1) * 4 + (nb / 1024 + 2) * 4 + entries * 4 + 2 * chunks * x;
    let bins = if binned {
        Digits::binned_bytes(fold * n, b)
    } else {
        0
    };
    let all = w as usize * b * x + w as usize * segs * x;
    let lists = 2 * n * 4 + 2 * (n.div_ceil(list_chunk_len(n) as usize) + 2) * x;
    let canon = Digits::canon_bytes(n, binned);
    // With levels reduced from their leftovers: the heavy buckets' sums and the
    // reduction's partial sums too.
    let reduce = if C::LEFTOVER_REDUCE && sums.levels_for(entries) > 0 {
        nb * x + w as usize * MAX_LEFTOVER_SEGMENTS as usize * x
    } else {
        0
    };
    let affine = sums.scratch_bytes::<C>(entries, nb) + reduce;
    w as usize * x + x + all + group + bins + lists + canon + affine
}
