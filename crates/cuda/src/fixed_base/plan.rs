//! The fixed-base plan: window choice, table sizes, the small host tables the device
//! table is made from, and the device and pinned memory of a [`super::GpuFixedBase`].

use filprove_groth16::ProveError;
use rayon::prelude::*;

use crate::msm::{Curve, G1, G2};

/// Points per thread of the to-affine and table kernels (`FB_BATCH` in fixed_base.cu).
pub const BATCH: usize = 32;
/// Widest window accepted (the table index and the digit extraction allow up to 31).
pub const MAX_WINDOW: u32 = 24;
/// Narrowest window.
pub const MIN_WINDOW: u32 = 2;
/// Device bytes per G1 point of chunk capacity in one slot (32 scalar + 192 XYZZ + 96
/// affine; a G2 chunk holds half as many points of 32 + 384 + 192).
pub const SLOT_DEVICE_BYTES_PER_POINT: u64 = 320;
/// Pinned host bytes per G1 point of chunk capacity in one slot (32 in + 96 out).
pub const SLOT_PINNED_BYTES_PER_POINT: u64 = 128;
/// Device memory left free beside the plan (driver, module images, fragmentation).
pub const DEVICE_RESERVE: u64 = 512 << 20;

/// Tuning of [`GpuFixedBase`](crate::GpuFixedBase).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixedBaseOptions {
    /// G1 window bits (2..=24); `None`: [`choose_window`] for the announced point count.
    pub g1_window: Option<u32>,
    /// G2 window bits; `None`: chosen as for G1.
    pub g2_window: Option<u32>,
    /// Most device bytes one automatically chosen table may take (6 GiB: room for both
    /// tables of porep-32g at `w = 22`, 2.25 + 4.5 GiB).
    pub max_table_bytes: u64,
    /// G1 points per chunk (G2 chunks have half as many); 2^22 by default.
    pub chunk_points: usize,
    /// Buffer sets in flight (at least 2); 3 by default.
    pub slots: usize,
}

impl Default for FixedBaseOptions {
    fn default() -> Self {
        Self {
            g1_window: None,
            g2_window: None,
            max_table_bytes: 6 << 30,
            chunk_points: 1 << 22,
            slots: 3,
        }
    }
}

impl FixedBaseOptions {
    /// Checks the values (windows in range, chunk of 2 to 2^31 points, 2 to 8 slots).
    pub fn validate(&self) -> Result<(), ProveError> {
        for w in [self.g1_window, self.g2_window].into_iter().flatten() {
            if !(MIN_WINDOW..=MAX_WINDOW).contains(&w) {
                return Err(ProveError::Invalid(format!(
                    "fixed-base window of {w} bits: {MIN_WINDOW} to {MAX_WINDOW} allowed"
                )));
            }
        }
        if !(2..=1 << 31).contains(&self.chunk_points) {
            return Err(ProveError::Invalid(format!(
                "fixed-base chunk of {} points: 2 to 2^31 allowed",
                self.chunk_points
            )));
        }
        if !(2..=8).contains(&self.slots) {
            return Err(ProveError::Invalid(format!(
                "{} fixed-base slots: 2 to 8 allowed",
                self.slots
            )));
        }
        Ok(())
    }
}

/// Rows of a table of `w`-bit windows: enough that a canonical scalar (below 2^255)
/// never carries out of the top row.
pub fn rows(w: u32) -> u32 {
    256u32.div_ceil(w)
}

/// Device bytes of a table of `w`-bit windows for points of `affine_bytes`.
pub fn table_bytes(w: u32, affine_bytes: usize) -> u64 {
    u64::from(rows(w)) * (1u64 << (w - 1)) * affine_bytes as u64
}

/// The window for about `n` multiplications whose table takes at most `cap` bytes:
/// the one minimising `rows * (n + 2^(w-1))` (additions plus table entries). The
/// narrowest window (tiny) is taken when none fits.
pub fn choose_window(n: usize, affine_bytes: usize, cap: u64) -> u32 {
    (MIN_WINDOW..=MAX_WINDOW)
        .filter(|&w| w == MIN_WINDOW || table_bytes(w, affine_bytes) <= cap)
        .min_by_key(|&w| u128::from(rows(w)) * (n.max(1) as u128 + (1u128 << (w - 1))))
        .unwrap_or(MIN_WINDOW)
}

/// Where a table entry comes from: `j = a + b 2^lo`, `lo = (w - 1) / 2`.
pub fn split_bits(w: u32) -> u32 {
    (w - 1) / 2
}

/// The small host tables the device adds into the table of `w`-bit windows: row `k` of
/// the first holds `a 2^(w k) G` for `a < 2^lo`, row `k` of the second `b 2^(lo + w k) G`
/// for `b <= 2^(w-1-lo)` (index 0 of both: the identity). Rows are concatenated.
pub fn small_tables<P>(w: u32) -> (Vec<P::AffineRepr>, Vec<P::AffineRepr>)
where
    P: group::Curve + Send + Sync,
    P::AffineRepr: Send + Sync + Copy,
{
    let lo = split_bits(w);
    let (na, nb) = (1usize << lo, (1usize << (w - 1 - lo)) + 1);
    let mut bases = Vec::with_capacity(rows(w) as usize);
    let mut b = P::generator();
    for _ in 0..rows(w) {
        bases.push(b);
        for _ in 0..w {
            b = b.double();
        }
    }
    let run = |step: P, count: usize| -> Vec<P> {
        let mut v = Vec::with_capacity(count);
        let mut acc = P::identity();
        for _ in 0..count {
            v.push(acc);
            acc += &step;
        }
        v
    };
    let rows_proj: Vec<(Vec<P>, Vec<P>)> = bases
        .par_iter()
        .map(|base| {
            let mut step = *base;
            for _ in 0..lo {
                step = step.double();
            }
            (run(*base, na), run(step, nb))
        })
        .collect();
    let normalize = |v: Vec<P>| -> Vec<P::AffineRepr> {
        let mut out = vec![P::identity().to_affine(); v.len()];
        out.par_chunks_mut(1024)
            .zip(v.par_chunks(1024))
            .for_each(|(o, p)| P::batch_normalize(p, o));
        out
    };
    let (a, b): (Vec<Vec<P>>, Vec<Vec<P>>) = rows_proj.into_iter().unzip();
    (
        normalize(a.into_iter().flatten().collect()),
        normalize(b.into_iter().flatten().collect()),
    )
}

/// Device and pinned host bytes of one [`GpuFixedBase`](crate::GpuFixedBase)'s plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedBasePlan {
    /// G1 window bits.
    pub g1_window: u32,
    /// G2 window bits.
    pub g2_window: u32,
    /// Device bytes of the G1 table.
    pub g1_table_bytes: u64,
    /// Device bytes of the G2 table.
    pub g2_table_bytes: u64,
    /// Device bytes of the chunk buffers (all slots).
    pub buffer_bytes: u64,
    /// Pinned host bytes (all slots).
    pub pinned_bytes: u64,
}

impl FixedBasePlan {
    /// Device bytes in all.
    pub fn device_bytes(&self) -> u64 {
        self.g1_table_bytes + self.g2_table_bytes + self.buffer_bytes
    }
}

/// The plan for `g1_points` G1 and `g2_points` G2 multiplications on a device with
/// `free` bytes free: buffers first, then the G1 table, then the G2 table, each window
/// [`choose_window`]'s under the cap and what is left (less [`DEVICE_RESERVE`]). An
/// explicit window is taken as is; [`GpuFixedBase`](crate::GpuFixedBase) fails with
/// [`ProveError::DeviceOutOfMemory`] when the result does not fit.
pub fn plan(
    opts: &FixedBaseOptions,
    g1_points: usize,
    g2_points: usize,
    free: u64,
) -> FixedBasePlan {
    let buffer_bytes = opts.slots as u64 * opts.chunk_points as u64 * SLOT_DEVICE_BYTES_PER_POINT;
    let pinned_bytes = opts.slots as u64 * opts.chunk_points as u64 * SLOT_PINNED_BYTES_PER_POINT;
    let mut left = free.saturating_sub(DEVICE_RESERVE + buffer_bytes);
    let mut pick = |explicit: Option<u32>, n: usize, ab: usize| {
        let w = explicit.unwrap_or_else(|| choose_window(n, ab, opts.max_table_bytes.min(left)));
        let bytes = table_bytes(w, ab);
        left = left.saturating_sub(bytes);
        (w, bytes)
    };
    let (g1_window, g1_table_bytes) = pick(opts.g1_window, g1_points, G1::AFFINE_BYTES);
    let (g2_window, g2_table_bytes) = pick(opts.g2_window, g2_points, G2::AFFINE_BYTES);
    FixedBasePlan {
        g1_window,
        g2_window,
        g1_table_bytes,
        g2_table_bytes,
        buffer_bytes,
        pinned_bytes,
    }
}
