//! Launch helpers shared by the MSM's steps: driver errors and the exclusive scan.

use cudarc::driver::{CudaSlice, CudaStream, PushKernelArg};
use filprove_groth16::ProveError;

use crate::gpu::{cfg, Gpu};

pub(super) fn launch_err<'a>(
    gpu: &'a Gpu,
    what: &str,
) -> impl Fn(cudarc::driver::DriverError) -> ProveError + 'a {
    let what = what.to_string();
    move |e| gpu.err(&what, e)
}

/// Exclusive scan of `n` u32 from `input` into `out` (queued).
pub fn scan_u32(
    gpu: &Gpu,
    input: &CudaSlice<u32>,
    out: &mut CudaSlice<u32>,
    n: usize,
) -> Result<(), ProveError> {
    let nblocks = n.div_ceil(1024).max(1);
    let mut sums = gpu.alloc::<u32>(nblocks)?;
    let (n32, nb32) = (n as u32, nblocks as u32);
    let s: &CudaStream = gpu.stream();
    // SAFETY: scan_blocks(const u32* in, u32* out, u32 n, u32* sums) as in scalars.cu,
    // arguments in that order. Its nblocks blocks of 1024 threads touch in[i] and out[i]
    // for i < n, and sums[block]; the callers pass input and out of at least n words, and
    // sums was just allocated with nblocks words.
    unsafe {
        s.launch_builder(gpu.func("scan_blocks")?)
            .arg(input)
            .arg(&mut *out)
            .arg(&n32)
            .arg(&mut sums)
            .launch(cfg(nblocks, 1024, 0))
    }
    .map_err(launch_err(gpu, "scan_blocks"))?;
    // SAFETY: scan_sums(u32* sums, u32 nb) scans the nblocks words of sums in one block;
    // sums lives to the end of this function, after the launch that reads it is queued.
    unsafe {
        s.launch_builder(gpu.func("scan_sums")?)
            .arg(&mut sums)
            .arg(&nb32)
            .launch(cfg(1, 1024, 0))
    }
    .map_err(launch_err(gpu, "scan_sums"))?;
    // SAFETY: scan_add(u32* out, u32 n, const u32* sums) adds sums[block] to out[i] for
    // i < n: the same bounds as scan_blocks above; the stream orders the free of sums
    // after this kernel.
    unsafe {
        s.launch_builder(gpu.func("scan_add")?)
            .arg(&mut *out)
            .arg(&n32)
            .arg(&sums)
            .launch(cfg(nblocks, 1024, 0))
    }
    .map_err(launch_err(gpu, "scan_add"))?;
    Ok(())
}
