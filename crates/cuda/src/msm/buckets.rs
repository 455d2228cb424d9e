//! Bucket sums (chunks over one wave, then the fix-up of the buckets that span chunks)
//! and block reductions of XYZZ points.

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, PushKernelArg};
use filprove_groth16::ProveError;

use crate::gpu::{blocks, cfg, Gpu};
use crate::work::Work;

use super::{chunk_len, launch_err, mixed_adds, xyzz_adds, Curve};

/// What a group's bucket sums (steps 4 and 5 of msm.cuh) read.
pub(super) enum SumInput<'a, 'b> {
    /// The scattered entries: `sorted` indexes the bases (sign in bit 31).
    Scattered(&'a CudaView<'b, u8>, &'a CudaSlice<u32>),
    /// The points the batch-affine levels left, in bucket order.
    Leftover(&'a CudaSlice<u8>),
    /// The same and their bucket offsets, for the heavy buckets alone: the offsets given
    /// to [`bucket_sums`] number the heavy buckets' points (msm/leftover.cuh).
    Heavy(&'a CudaSlice<u8>, &'a CudaSlice<u32>),
}

/// Sums the entries of each of the `nb` buckets (`offsets`, nb + 1 of them; at most
/// `entries` entries) into `buckets` (nb points): chunk sums over one wave of `resident`
/// threads, then the fix-up of the buckets that span chunks (queued).
pub(super) fn bucket_sums<C: Curve>(
    gpu: &Gpu,
    input: SumInput<'_, '_>,
    offsets: &CudaSlice<u32>,
    nb: usize,
    entries: usize,
    resident: usize,
    buckets: &mut CudaViewMut<'_, u8>,
) -> Result<(), ProveError> {
    let s = gpu.stream();
    let x = C::XYZZ_BYTES;
    let t = C::REDUCE_THREADS;
    let l = chunk_len(entries, resident);
    let chunks = entries.div_ceil(l as usize);
    let mut head = gpu.alloc::<u8>(chunks * x)?;
    let mut tail = gpu.alloc::<u8>(chunks * x)?;
    let (nb32, chunks32) = (nb as u32, chunks as u32);
    let name = match input {
        SumInput::Scattered(..) | SumInput::Leftover(_) => "msm_chunk_sum",
        SumInput::Heavy(..) => "msm_leftover_chunk_sum",
    };
    let null = 0u64;
    // SAFETY: argument lists as in msm.cuh's MSM_KERNELS and msm_g1.cu;
    // `offsets` holds nb + 1 words, their last at most `entries`; the scattered entries
    // index points below the bases' length; the leftover points are at least `entries`
    // (msm_entry reads a null index list as the identity), and with heavy offsets their
    // own offsets (nb + 1) are those the heavy offsets count;
    // `buckets` holds nb points, head/tail `chunks`, `heavy` nb words.
    unsafe {
        let mut lb = s.launch_builder(gpu.func(&format!("{}_{name}", C::PREFIX))?);
        match input {
            SumInput::Scattered(bases, sorted) => lb.arg(bases).arg(sorted).arg(offsets).arg(&nb32),
            SumInput::Leftover(points) => lb.arg(points).arg(&null).arg(offsets).arg(&nb32),
            SumInput::Heavy(points, all) => lb.arg(points).arg(all).arg(offsets).arg(&nb32),
        };
        lb.arg(&l)
            .arg(&chunks32)
            .arg(&mut *buckets)
            .arg(&mut head)
            .arg(&mut tail)
            .launch(cfg(blocks(chunks, 128), 128, 0))
    }
    .map_err(launch_err(gpu, name))?;
    // The heavy buckets' points (SumInput::Heavy) are counted on the device only: their
    // additions are left out, the bucket-sized passes before them kept (their counts, the
    // scan of the counts, the chunks' offsets: about 32 bytes per bucket).
    let work = match input {
        SumInput::Heavy(..) => Work::bytes((nb + 1) as f64 * 32.0),
        _ => mixed_adds::<C>(entries as f64),
    };
    gpu.probe("msm_chunk_sum", work)?;
    let mut heavy = gpu.alloc::<u32>(nb)?;
    let mut heavy_count = gpu.zeros::<u32>(1)?;
    // SAFETY: msm_chunk_fixup(const u32* offsets, u32 nb, u32 l, const Xyzz* head, const
    // Xyzz* tail, Xyzz* buckets, u32* heavy, u32* heavy_count) as in msm.cuh, arguments in
    // that order; one thread per bucket below nb: offsets holds nb + 1 words, buckets nb
    // points, head and tail `chunks` points (the chunk indices offsets / l reaches), heavy
    // nb words and heavy_count one, all allocated above or owned by the caller.
    unsafe {
        s.launch_builder(gpu.func(&format!("{}_msm_chunk_fixup", C::PREFIX))?)
            .arg(offsets)
            .arg(&nb32)
            .arg(&l)
            .arg(&head)
            .arg(&tail)
            .arg(&mut *buckets)
            .arg(&mut heavy)
            .arg(&mut heavy_count)
            .launch(cfg(blocks(nb, 128), 128, 0))
    }
    .map_err(launch_err(gpu, "msm_chunk_fixup"))?;
    // Grid-stride over the heavy buckets (their number stays on the device).
    // SAFETY: msm_heavy_fixup(offsets, l, head, tail, buckets, heavy, heavy_count) as in
    // msm.cuh; it reads the heavy_count <= nb bucket indices that msm_chunk_fixup wrote to
    // heavy (each below nb), so it stays within the same buffers as that launch; t
    // threads per block with t XYZZ points of shared memory for the block sums.
    unsafe {
        s.launch_builder(gpu.func(&format!("{}_msm_heavy_fixup", C::PREFIX))?)
            .arg(offsets)
            .arg(&l)
            .arg(&head)
            .arg(&tail)
            .arg(&mut *buckets)
            .arg(&heavy)
            .arg(&heavy_count)
            .launch(cfg(nb.min(1024), t, t * x as u32))
    }
    .map_err(launch_err(gpu, "msm_heavy_fixup"))?;
    // At most one piece of a bucket per chunk edge added into its bucket.
    gpu.probe("msm_chunk_fixup", xyzz_adds::<C>(chunks as f64))?;
    Ok(())
}

/// out[j] = the sum of input[j m .. min((j + 1) m, n)] for j < max(1, ceil(n / m))
/// (`xyzz_reduce`, one block per output; queued).
pub(super) fn sum_runs<C: Curve>(
    gpu: &Gpu,
    input: &CudaSlice<u8>,
    m: u32,
    n: usize,
    out: &mut CudaViewMut<'_, u8>,
) -> Result<(), ProveError> {
    let t = C::REDUCE_THREADS;
    let (grid, n32) = (n.div_ceil(m as usize).max(1), n as u32);
    // SAFETY: xyzz_reduce(in, m, n, out) as in msm.cuh; `input` holds n points, `out`
    // one per block.
    unsafe {
        gpu.stream()
            .launch_builder(gpu.func(&format!("{}_xyzz_reduce", C::PREFIX))?)
            .arg(input)
            .arg(&m)
            .arg(&n32)
            .arg(&mut *out)
            .launch(cfg(grid, t, t * C::XYZZ_BYTES as u32))
    }
    .map_err(launch_err(gpu, "xyzz_reduce"))?;
    Ok(())
}

/// Sums `count` XYZZ points on the device into one (a tree of block reductions).
pub fn reduce_points<C: Curve>(
    gpu: &Gpu,
    mut points: CudaSlice<u8>,
    mut count: usize,
) -> Result<CudaSlice<u8>, ProveError> {
    const PER_BLOCK: u32 = 1024;
    while count > 1 || count == 0 {
        let nblocks = count.div_ceil(PER_BLOCK as usize).max(1);
        let mut out = gpu.alloc::<u8>(nblocks * C::XYZZ_BYTES)?;
        sum_runs::<C>(gpu, &points, PER_BLOCK, count, &mut out.slice_mut(..))?;
        points = out;
        count = nblocks;
    }
    Ok(points)
}
