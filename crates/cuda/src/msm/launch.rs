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
    // SAFETY (all three): signatures as in scalars.cu; buffers hold n and nblocks u32.
    unsafe {
        s.launch_builder(gpu.func("scan_blocks")?)
            .arg(input)
            .arg(&mut *out)
            .arg(&n32)
            .arg(&mut sums)
            .launch(cfg(nblocks, 1024, 0))
    }
    .map_err(launch_err(gpu, "scan_blocks"))?;
    unsafe {
        s.launch_builder(gpu.func("scan_sums")?)
            .arg(&mut sums)
            .arg(&nb32)
            .launch(cfg(1, 1024, 0))
    }
    .map_err(launch_err(gpu, "scan_sums"))?;
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
