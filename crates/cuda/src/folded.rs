//! The folded H bases: H's n points followed by 2^s times each, s = [`fold_shift`]`(n)`
//! (132 for 2^27 points: half of the MSM's twelve 22-bit windows). With them the H MSM
//! folds two windows into each group of buckets ([`crate::msm::msm_folded`]): the same
//! additions, but the per-window passes (leftover reduction, scans, counts) run for six
//! windows instead of twelve. On the H200 the 2^27 G1 MSM took 809 instead of 841 ms for
//! 12 GiB more of resident parameters (docs/decisions/018-folded-h-bases.md).
//!
//! The second half is made on the device when the parameters become resident: s
//! doublings per point (XYZZ), then to affine form by fixed_base.cu's g1_fb_affine.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, PushKernelArg};
use filprove_groth16::ProveError;

use crate::fixed_base::BATCH;
use crate::gpu::{blocks, cfg, Gpu};
use crate::msm::{Curve, G1};

pub use crate::msm::fold_shift;

/// Points doubled per launch: an XYZZ scratch of 0.8 GB, which the memory plan does not
/// count (it lives only while a parameter set becomes resident) and the budget's margin
/// (2 GiB and 2 % of the device) absorbs.
const CHUNK: usize = 1 << 22;

/// Threads per block of g1_fb_shift and g1_fb_affine.
const THREADS: u32 = 128;

/// A new buffer of 2n points: `bases[0..n]` (G1 affine, device layout), then 2^fold_shift(n)
/// times each; queued on `stream`.
pub fn fold_copy(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    bases: &CudaSlice<u8>,
    n: usize,
) -> Result<CudaSlice<u8>, ProveError> {
    let ab = G1::AFFINE_BYTES;
    if bases.len() < n * ab {
        return Err(ProveError::Invalid(format!(
            "folding {n} bases from {} bytes",
            bases.len()
        )));
    }
    let mut folded = gpu.alloc_on::<u8>(stream, 2 * n * ab)?;
    stream
        .memcpy_dtod(&bases.slice(0..n * ab), &mut folded.slice_mut(0..n * ab))
        .map_err(|e| gpu.err("copy of the bases to fold", e))?;
    fill_second_half(gpu, stream, &mut folded, n)?;
    Ok(folded)
}

/// Fills `bases[n..2n]` (G1 affine, device layout) with 2^fold_shift(n) times
/// `bases[0..n]`, queued on `stream`.
pub fn fill_second_half(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    bases: &mut CudaSlice<u8>,
    n: usize,
) -> Result<(), ProveError> {
    fill_second_half_in(gpu, stream, bases, n, CHUNK)
}

/// [`fill_second_half`] in launches of `chunk` points (tests: several chunks at small n).
pub fn fill_second_half_in(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    bases: &mut CudaSlice<u8>,
    n: usize,
    chunk: usize,
) -> Result<(), ProveError> {
    let ab = G1::AFFINE_BYTES;
    let shift = fold_shift(n);
    let chunk = chunk.max(1);
    if bases.len() < 2 * n * ab || n >= 1 << 31 {
        return Err(ProveError::Invalid(format!(
            "folding {n} bases in {} bytes",
            bases.len()
        )));
    }
    if n == 0 {
        return Ok(());
    }
    let mut xyzz = gpu.alloc_on::<u8>(stream, chunk.min(n) * G1::XYZZ_BYTES)?;
    for lo in (0..n).step_by(chunk) {
        let len = chunk.min(n - lo);
        let len32 = len as u32;
        let src = bases.slice(lo * ab..(lo + len) * ab);
        // SAFETY: g1_fb_shift(const G1A* in, u32 n, u32 k, G1X* out) as in fixed_base.cu;
        // `src` holds len affine points and `xyzz` room for len <= chunk XYZZ points; one
        // thread per point.
        unsafe {
            stream
                .launch_builder(gpu.func("g1_fb_shift")?)
                .arg(&src)
                .arg(&len32)
                .arg(&shift)
                .arg(&mut xyzz)
                .launch(cfg(blocks(len, THREADS), THREADS, 0))
        }
        .map_err(|e| gpu.err("g1_fb_shift", e))?;
        let mut dst = bases.slice_mut((n + lo) * ab..(n + lo + len) * ab);
        // SAFETY: g1_fb_affine(const G1X* in, u32 n, G1A* out) as in fixed_base.cu; `xyzz`
        // holds the len points written above and `dst` room for len affine points (the
        // second half, disjoint from `src`); the grid has at least len / BATCH threads,
        // each taking BATCH points at a stride of the grid.
        unsafe {
            stream
                .launch_builder(gpu.func("g1_fb_affine")?)
                .arg(&xyzz)
                .arg(&len32)
                .arg(&mut dst)
                .launch(cfg(blocks(len.div_ceil(BATCH), THREADS), THREADS, 0))
        }
        .map_err(|e| gpu.err("g1_fb_affine", e))?;
    }
    // The scratch is freed in the stream's order, after the last conversion.
    drop(xyzz);
    Ok(())
}
