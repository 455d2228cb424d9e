//! Window widths and launch sizes of the Pippenger MSM, from the number of points.

/// Narrowest and widest window in use. Eight bits keep at least 128 buckets per window
/// (one reduction block); 22 bits is the cheapest width for 2^27 points (below), and
/// wider windows would not fit the bucket counters of a window in L2.
pub const MIN_WINDOW: u32 = 8;
/// See [`MIN_WINDOW`].
pub const MAX_WINDOW: u32 = 22;

/// Window bits for `n` scalars: the width that minimises the estimated work, one mixed
/// addition per point and window plus `BUCKET_COST` mixed additions' worth per bucket for
/// the scatter, chunk fix-up and running-sum reduction. 2^27 points: c = 22 (12 windows);
/// 2^20: 16. Any width is safe: the bucket sum is balanced per chunk of sorted points, so
/// a sparse top window or a heavy bucket does not serialise it.
pub fn window_bits(n: usize) -> u32 {
    let per_bucket = BUCKET_COST;
    let cost = |c: u32| {
        f64::from(windows(c)) * (n.max(1) as f64 + per_bucket * f64::from(1u32 << (c - 1)))
    };
    (MIN_WINDOW..=MAX_WINDOW)
        .min_by(|&a, &b| cost(a).total_cmp(&cost(b)))
        .unwrap_or(16)
}

/// Mixed additions' worth of work per bucket in [`window_bits`]'s model. Measured on the
/// H200: at 2^27, c = 22 against c = 20 saves 83 ms of point additions and spends 68 ms
/// more on scatter, fix-up and reduction for its 3.7x as many buckets (G1 MSM 1,274
/// against 1,289 ms; G2 split 2^25 68 against 72.5 ms).
const BUCKET_COST: f64 = 4.0;

/// Blocks per window in the bucket reduction: enough that each thread takes about 32
/// buckets.
pub(super) fn reduce_segments(c: u32, threads: u32) -> u32 {
    ((1u32 << (c - 1)) / (threads * 32)).max(1)
}

/// Windows of `c` bits covering a 255-bit scalar with signed digits (one spare carry).
pub fn windows(c: u32) -> u32 {
    256u32.div_ceil(c)
}

/// Windows handled per group: all of them for small MSMs, one at a time from 2^24 points
/// (so a group's bucket counters stay in L2 and its sorted entries take n words).
pub(super) fn group_windows(n: usize, w: u32) -> u32 {
    ((1usize << 24) / n.max(1)).clamp(1, w as usize) as u32
}

/// Sorted entries per bucket-sum thread: the entries spread over exactly one wave of
/// resident threads (measured: 1.94-2.6 waves of 1024-entry chunks lost ~15 % to the
/// partial last wave), at least 8. Long chunks also leave most buckets inside one chunk,
/// so the fix-up has little to add.
pub(super) fn chunk_len(entries: usize, resident: usize) -> u32 {
    entries
        .div_ceil(resident.clamp(1, MAX_CHUNKS))
        .max(entries.div_ceil(MAX_CHUNKS))
        .max(8) as u32
}

/// Upper bound on bucket-sum threads (and head/tail pairs) of one group.
pub(super) const MAX_CHUNKS: usize = 1 << 19;

/// Points per thread when summing an index list (the scalars equal to 1).
pub(super) fn list_chunk_len(n: usize) -> u32 {
    (n / 65536).clamp(4, 256) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msm::{Curve, G1, G2};

    /// Every window width in use covers a 255-bit scalar plus the signed digits' carry
    /// without a spare window, the widths grow with n (22 bits at 2^27), and the
    /// reduction segments tile the buckets.
    #[test]
    fn windows_cover_scalars_and_segments_tile() {
        let mut prev = MIN_WINDOW;
        for lg in 0..=32u32 {
            let c = window_bits(1usize << lg);
            assert!((MIN_WINDOW..=MAX_WINDOW).contains(&c), "c = {c}");
            assert!(c >= prev, "window shrank at 2^{lg}");
            prev = c;
            assert!(
                c * windows(c) >= 256 && c * (windows(c) - 1) < 256,
                "c = {c}"
            );
            // Folded, the upper half's windows start where the lower half's end.
            let shift = crate::msm::fold_shift(1 << lg);
            assert!(
                shift.is_multiple_of(c) && 2 * shift >= c * windows(c),
                "c = {c}"
            );
            assert!(group_windows(1 << lg, windows(c)) >= 1);
            for resident in [1, 1000, 67_584, 1 << 22] {
                // Entries of a group stay below 2^31 (n < 2^31, G n <= max(n, 2^24)).
                let e = 1usize << lg.min(30);
                let l = chunk_len(e, resident) as usize;
                assert!(l >= 8 && e.div_ceil(l) <= MAX_CHUNKS, "2^{lg}, {resident}");
            }
            for t in [G1::REDUCE_THREADS, G2::REDUCE_THREADS] {
                let b = 1u32 << (c - 1);
                let s = reduce_segments(c, t);
                assert_eq!(b % (t * s), 0, "c = {c}, T = {t}, S = {s}");
                assert!(b / (t * s) >= 1);
            }
        }
        assert_eq!(window_bits(1 << 27), 22);
        assert_eq!(windows(22), 12);
        // A folded MSM's second bases carry 2^(c ceil(w / 2)): 2^132 for H at 2^27.
        assert_eq!(crate::msm::fold_shift((1 << 27) - 1), 132);
        assert_eq!(window_bits(1 << 20), 16);
        assert_eq!(window_bits(1), MIN_WINDOW);
    }
}
