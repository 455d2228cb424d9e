//! The split MSM for witnesses that are mostly 0 and 1: the scalars are classified on the
//! device, the bases whose scalar is 1 are summed directly and only the other non-zero
//! scalars go through Pippenger.

use cudarc::driver::{CudaSlice, CudaView, PushKernelArg};
use filprove_groth16::ProveError;

use crate::gpu::{blocks, cfg, Gpu};
use crate::work::Work;

use super::{
    launch_err, list_chunk_len, mixed_adds, pippenger, reduce_points, run_levels, Curve, DeviceMsm,
    MsmTuning,
};

/// Threads per block of the classification: one atomic per block and class.
const CLASSIFY_THREADS: u32 = 512;

/// The split MSM of `n` > 0 entries (sizes checked by the caller).
pub(super) fn split_msm<C: Curve>(
    gpu: &Gpu,
    bases: &CudaView<'_, u8>,
    scalars: &CudaView<'_, u8>,
    n: usize,
    affine: &MsmTuning,
) -> Result<DeviceMsm, ProveError> {
    let s = gpu.stream();
    let mut counts = gpu.zeros::<u32>(2)?;
    let mut ones = gpu.alloc::<u32>(n)?;
    let mut others = gpu.alloc::<u32>(n)?;
    let n32 = n as u32;
    // SAFETY: classify_scalars(const Fr*, u32, u32*, u32*, u32*) as in msm_scalars.cu; the
    // lists hold n entries, counts 2.
    unsafe {
        s.launch_builder(gpu.func("classify_scalars")?)
            .arg(scalars)
            .arg(&n32)
            .arg(&mut counts)
            .arg(&mut ones)
            .arg(&mut others)
            .launch(cfg(blocks(n, CLASSIFY_THREADS), CLASSIFY_THREADS, 0))
    }
    .map_err(launch_err(gpu, "classify_scalars"))?;
    // Each scalar read, its index written to one of the lists.
    gpu.probe("classify", Work::bytes(n as f64 * 36.0))?;
    let [n_ones, n_others] = gpu.read_counts(&counts)?;
    let (n_ones, n_others) = (n_ones as usize, n_others as usize);
    if n_ones > n || n_others > n - n_ones {
        return Err(gpu.fault(format!(
            "classification of {n} scalars gave {n_ones} ones and {n_others} others"
        )));
    }
    let ones_sum = if n_ones > 0 {
        Some(ones_sum::<C>(gpu, bases, &ones, &counts, n_ones, affine)?)
    } else {
        None
    };
    drop(ones);
    if n_others == 0 {
        let mut r = DeviceMsm::identity();
        r.extra = ones_sum;
        return Ok(r);
    }
    let mut r = pippenger::<C>(gpu, bases, scalars, n_others, Some(&others), affine, 1)?;
    r.extra = ones_sum;
    Ok(r)
}

/// Sum of bases[ones[i]] for the `n` indices of the ones (one XYZZ point on the device;
/// `counts[0]` holds n on the device). With the batch-affine levels (from
/// `affine.min_entries` ones) the list is first one bucket of those levels, and what they
/// leave is summed.
fn ones_sum<C: Curve>(
    gpu: &Gpu,
    bases: &CudaView<'_, u8>,
    ones: &CudaSlice<u32>,
    counts: &CudaSlice<u32>,
    n: usize,
    affine: &MsmTuning,
) -> Result<CudaSlice<u8>, ProveError> {
    if affine.levels_for(n) == 0 {
        let r = list_sum::<C>(gpu, bases, Some(ones), n, None)?;
        gpu.probe("msm_ones_sum", mixed_adds::<C>(n as f64))?;
        return Ok(r);
    }
    // One bucket: offsets [0, n], n copied from the classification's count.
    let mut offsets = gpu.zeros::<u32>(2)?;
    gpu.stream()
        .memcpy_dtod(&counts.slice(0..1), &mut offsets.slice_mut(1..2))
        .map_err(launch_err(gpu, "copy the ones' count"))?;
    let left = run_levels::<C>(gpu, bases, ones, &offsets, 1, n, affine)?;
    let count = left.offsets.slice(1..2);
    let r = list_sum::<C>(gpu, &left.points.as_view(), None, left.bound, Some(&count))?;
    gpu.probe("msm_ones_sum", mixed_adds::<C>(left.bound as f64))?;
    Ok(r)
}

/// Sum of bases[list[i]] (bases[i] without a list) for i below n, or below the device
/// count `n_dev` when it is smaller (one XYZZ point on the device).
fn list_sum<C: Curve>(
    gpu: &Gpu,
    bases: &CudaView<'_, u8>,
    list: Option<&CudaSlice<u32>>,
    n: usize,
    n_dev: Option<&CudaView<'_, u32>>,
) -> Result<CudaSlice<u8>, ProveError> {
    let l = list_chunk_len(n);
    let chunks = n.div_ceil(l as usize).max(1);
    let mut partial = gpu.alloc::<u8>(chunks * C::XYZZ_BYTES)?;
    let (n32, chunks32, null) = (n as u32, chunks as u32, 0u64);
    // SAFETY: signature as in msm.cuh; `list` holds n indices below the bases' length, or
    // without it the bases hold n points; `n_dev` is one word; partial `chunks` points.
    unsafe {
        let mut lb = gpu
            .stream()
            .launch_builder(gpu.func(&format!("{}_msm_list_sum", C::PREFIX))?);
        lb.arg(bases);
        match list {
            Some(l) => lb.arg(l),
            None => lb.arg(&null),
        };
        lb.arg(&n32);
        match n_dev {
            Some(d) => lb.arg(d),
            None => lb.arg(&null),
        };
        lb.arg(&l)
            .arg(&chunks32)
            .arg(&mut partial)
            .launch(cfg(blocks(chunks, 128), 128, 0))
    }
    .map_err(launch_err(gpu, "msm_list_sum"))?;
    reduce_points::<C>(gpu, partial, chunks)
}
