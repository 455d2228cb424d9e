//! The multi-scalar multiplication sum_i scalars[i] * bases[i] on the GPU (kernels in
//! kernels/msm/), generic over G1 and G2: Pippenger's bucket method and the split MSM for
//! witnesses that are mostly 0 and 1, in batches with bases resident or streamed.
//!
//! All launches go to one stream; the only host synchronisation is reading the result.
//!
//! The children import from this root only (`super::`), never from each other by path,
//! and from the device layer (gpu, field, kernels, pinned); tests/import_graph.rs checks
//! that they form no circle:
//! - `curve`: the groups ([`G1`], [`G2`]) and their device sizes;
//! - `plan`: window widths and launch sizes from the number of points;
//! - `tuning`: [`MsmTuning`], how the MSMs run;
//! - `launch`: driver errors and the exclusive scan;
//! - `scatter`: step 3, the digits of a window group in bucket order (direct or binned);
//! - `affine`: the batch-affine levels of the bucket sums (G1 and G2);
//! - `buckets`: bucket sums over chunks and block reductions of points;
//! - `leftover`: the bucket reduction straight from what the levels leave;
//! - `pippenger`: the bucket method over every window group;
//! - `split`: the classification into ones and others;
//! - `device_msm`: the result on the device ([`DeviceMsm`]);
//! - `scratch`: device bytes an MSM needs (the VRAM plan's term);
//! - `batch`: MSMs in batches, bases resident or streamed ([`msm_batched`]).

mod affine;
mod batch;
mod buckets;
mod curve;
mod device_msm;
mod launch;
mod leftover;
mod pippenger;
mod plan;
mod scatter;
mod scratch;
mod split;
mod tuning;

use cudarc::driver::{CudaSlice, CudaView};
use filprove_groth16::ProveError;

use crate::field;
use crate::gpu::Gpu;

pub use batch::{msm_batched, Bases, MsmRun, Pending};
use curve::{mixed_adds, xyzz_adds};
pub use curve::{Curve, G1, G2};
pub use device_msm::DeviceMsm;
pub use launch::scan_u32;
pub use plan::{window_bits, windows, MAX_WINDOW, MIN_WINDOW};
pub use scratch::{folded_scratch_bytes, scratch_bytes};
pub use tuning::{LeftoverReduce, MsmTuning};

use affine::{run_levels, Leftover};
use buckets::{bucket_sums, reduce_points, sum_runs, SumInput};
use launch::launch_err;
use leftover::{leftover_segments, reduce_leftover, MAX_LEFTOVER_SEGMENTS};
use pippenger::pippenger;
use plan::{chunk_len, group_windows, list_chunk_len, reduce_segments, MAX_CHUNKS};
use scatter::{Digits, Scattered};

/// `sum_i scalars[i] * bases[i]` over the first `n` of each, left on the device. With
/// `split`, the scalars are classified on the device first: the points whose scalar is 1
/// are summed directly and only the other non-zero scalars go through Pippenger.
pub fn msm<C: Curve>(
    gpu: &Gpu,
    bases: &CudaSlice<u8>,
    scalars: &CudaSlice<u8>,
    n: usize,
    split: bool,
) -> Result<DeviceMsm, ProveError> {
    msm_view::<C>(gpu, &bases.as_view(), &scalars.as_view(), n, split)
}

/// [`msm`] over views (a batch of a longer vector). Every buffer it allocates is used and
/// freed in the compute stream's order, so a later batch never reuses bucket memory an
/// earlier batch's kernels may still read. A split MSM reads the two class sizes back
/// (an event wait on a pinned 8-byte copy, queued right after the classification) to
/// size its window and grids; the GPU idles only for that round trip.
pub fn msm_view<C: Curve>(
    gpu: &Gpu,
    bases: &CudaView<'_, u8>,
    scalars: &CudaView<'_, u8>,
    n: usize,
    split: bool,
) -> Result<DeviceMsm, ProveError> {
    msm_view_with::<C>(gpu, bases, scalars, n, split, &gpu.msm_tuning())
}

/// [`msm_view`] with the batch-affine levels given (tests and A/B runs).
pub fn msm_view_with<C: Curve>(
    gpu: &Gpu,
    bases: &CudaView<'_, u8>,
    scalars: &CudaView<'_, u8>,
    n: usize,
    split: bool,
    affine: &MsmTuning,
) -> Result<DeviceMsm, ProveError> {
    check_sizes::<C>(bases, scalars, n, 1)?;
    if n == 0 {
        return Ok(DeviceMsm::identity());
    }
    if split {
        split::split_msm::<C>(gpu, bases, scalars, n, affine)
    } else {
        pippenger::<C>(gpu, bases, scalars, n, None, affine, 1)
    }
}

/// The power of two that the second half of a folded MSM's bases carries:
/// `bases[n + i] = 2^fold_shift(n) bases[i]`, half of the windows of n scalars, rounded up
/// (132 bits for 2^27: 12 windows of 22 bits).
pub fn fold_shift(n: usize) -> u32 {
    let c = window_bits(n);
    c * windows(c).div_ceil(2)
}

/// `sum_i scalars[i] * bases[i]` over n scalars, with 2n bases of which
/// `bases[n + i] = 2^fold_shift(n) bases[i]`: each bucket group then takes two windows of the scalars
/// (window w with base i, window w + ceil(windows / 2) with base n + i), half as many
/// groups of twice the entries. The additions stay the same; the per-window passes (leftover
/// reduction, scans, counts) run half as often.
pub fn msm_folded<C: Curve>(
    gpu: &Gpu,
    bases: &CudaView<'_, u8>,
    scalars: &CudaView<'_, u8>,
    n: usize,
    affine: &MsmTuning,
) -> Result<DeviceMsm, ProveError> {
    check_sizes::<C>(bases, scalars, n, 2)?;
    if n == 0 {
        return Ok(DeviceMsm::identity());
    }
    pippenger::<C>(gpu, bases, scalars, n, None, affine, 2)
}

/// An MSM of n scalars reads n of them and `fold` n bases; its entries (fold n) index
/// below 2^31.
fn check_sizes<C: Curve>(
    bases: &CudaView<'_, u8>,
    scalars: &CudaView<'_, u8>,
    n: usize,
    fold: usize,
) -> Result<(), ProveError> {
    if bases.len() < fold * n * C::AFFINE_BYTES || scalars.len() < n * 32 || fold * n >= 1 << 31 {
        return Err(ProveError::Invalid(format!(
            "MSM of {n} (bases folded {fold} times) with {} base / {} scalar bytes",
            bases.len(),
            scalars.len()
        )));
    }
    Ok(())
}

/// Uploads affine bases.
pub fn upload_bases<C: Curve>(gpu: &Gpu, bases: &[C::Affine]) -> Result<CudaSlice<u8>, ProveError> {
    gpu.upload(field::bytes_of(bases))
}

/// One-call MSM from host data (for tests and benchmarks): uploads, runs, downloads.
pub fn msm_host<C: Curve>(
    gpu: &Gpu,
    bases: &[C::Affine],
    scalars: &[filprove_groth16::Fr],
    split: bool,
) -> Result<C::Projective, ProveError> {
    msm_host_with::<C>(gpu, bases, scalars, split, &gpu.msm_tuning())
}

/// [`msm_host`] with the batch-affine levels given.
pub fn msm_host_with<C: Curve>(
    gpu: &Gpu,
    bases: &[C::Affine],
    scalars: &[filprove_groth16::Fr],
    split: bool,
    affine: &MsmTuning,
) -> Result<C::Projective, ProveError> {
    let n = bases.len().min(scalars.len());
    let db = upload_bases::<C>(gpu, &bases[..n])?;
    let ds = gpu.upload(field::bytes_of(&scalars[..n]))?;
    msm_view_with::<C>(gpu, &db.as_view(), &ds.as_view(), n, split, affine)?.download::<C>(gpu)
}
