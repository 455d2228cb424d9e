//! Pippenger MSM driver (kernels in kernels/ec/msm.cuh), generic over G1 and G2, and the
//! split MSM for witnesses that are mostly 0 and 1.
//!
//! All launches go to one stream; the only host synchronisation is reading the result.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use cudarc::driver::{CudaSlice, CudaStream, CudaView, PushKernelArg};
use filprove_groth16::ProveError;

use crate::field::{self, Limbs};
use crate::gpu::{blocks, cfg, Gpu};

/// A curve group the MSM kernels are instantiated for.
pub trait Curve {
    /// Kernel name prefix ("g1", "g2").
    const PREFIX: &'static str;
    /// Bytes of one affine point on the device (blst layout).
    const AFFINE_BYTES: usize;
    /// Bytes of one XYZZ accumulator.
    const XYZZ_BYTES: usize;
    /// Threads per block for the reductions (bounded by registers and shared memory).
    const REDUCE_THREADS: u32;
    /// Host affine type.
    type Affine: Limbs;
    /// Host projective type.
    type Projective: group::Group;
    /// Converts one downloaded XYZZ point.
    fn from_xyzz(bytes: &[u8]) -> Self::Projective;
}

/// BLS12-381 G1.
pub struct G1;
/// BLS12-381 G2.
pub struct G2;

impl Curve for G1 {
    const PREFIX: &'static str = "g1";
    const AFFINE_BYTES: usize = 96;
    const XYZZ_BYTES: usize = 192;
    const REDUCE_THREADS: u32 = 128;
    type Affine = G1Affine;
    type Projective = G1Projective;
    fn from_xyzz(bytes: &[u8]) -> G1Projective {
        field::g1_from_xyzz(bytes)
    }
}

impl Curve for G2 {
    const PREFIX: &'static str = "g2";
    const AFFINE_BYTES: usize = 192;
    const XYZZ_BYTES: usize = 384;
    const REDUCE_THREADS: u32 = 64;
    type Affine = G2Affine;
    type Projective = G2Projective;
    fn from_xyzz(bytes: &[u8]) -> G2Projective {
        field::g2_from_xyzz(bytes)
    }
}

/// Window bits for `n` scalars: 8 or 16, the widths whose top window (bits 248..255 or
/// 240..255 of a 255-bit scalar) is as full as the others. Other widths leave the top window
/// only a few distinct digits, so a handful of buckets get n/8 points each and the bucket
/// sum serialises on them (measured: c = 14 at 2^20 took 16 s instead of milliseconds).
pub fn window_bits(n: usize) -> u32 {
    if n >= 1 << 15 {
        16
    } else {
        8
    }
}

/// Blocks per window in the bucket reduction: enough that each thread takes about 32
/// buckets.
fn reduce_segments(c: u32, threads: u32) -> u32 {
    ((1u32 << (c - 1)) / (threads * 32)).max(1)
}

/// Windows of `c` bits covering a 255-bit scalar with signed digits (one spare carry).
pub fn windows(c: u32) -> u32 {
    256u32.div_ceil(c)
}

/// Device bytes an MSM over `n` points needs beyond its bases and scalars.
pub fn scratch_bytes<C: Curve>(n: usize) -> usize {
    let c = window_bits(n);
    let (w, b) = (windows(c) as usize, 1usize << (c - 1));
    let nb = w * b;
    w * n.max(1) * 4 + 3 * (nb + 1) * 4 + (nb / 1024 + 2) * 4 + (nb + 3 * w + 1030) * C::XYZZ_BYTES
}

fn launch_err<'a>(
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

/// sum_i scalars[i] * bases[i] over the first `n` of each, left on the device as one XYZZ
/// point. With `split`, the points whose scalar is exactly 1 are summed by a tree
/// reduction and only the other non-zero scalars go through Pippenger.
pub fn msm<C: Curve>(
    gpu: &Gpu,
    bases: &CudaSlice<u8>,
    scalars: &CudaSlice<u8>,
    n: usize,
    split: bool,
) -> Result<CudaSlice<u8>, ProveError> {
    msm_view::<C>(gpu, &bases.as_view(), &scalars.as_view(), n, split)
}

/// [`msm`] over views (a batch of a longer vector). Every buffer it allocates is used and
/// freed in the compute stream's order, so a later batch never reuses bucket memory an
/// earlier batch's kernels may still read.
pub fn msm_view<C: Curve>(
    gpu: &Gpu,
    bases: &CudaView<'_, u8>,
    scalars: &CudaView<'_, u8>,
    n: usize,
    split: bool,
) -> Result<CudaSlice<u8>, ProveError> {
    if bases.len() < n * C::AFFINE_BYTES || scalars.len() < n * 32 {
        return Err(ProveError::Invalid(format!(
            "MSM of {n} with {} base / {} scalar bytes",
            bases.len(),
            scalars.len()
        )));
    }
    let p = C::PREFIX;
    let k = |name: &str| format!("{p}_{name}");
    let s = gpu.stream();
    let mut out = gpu.zeros::<u8>(C::XYZZ_BYTES)?;
    if n == 0 {
        return Ok(out); // ZZ = 0: the identity
    }
    let c = window_bits(n);
    let w = windows(c);
    let nb = (w as usize) << (c - 1);
    let (n32, skip) = (n as u32, split as u32);
    let grid_n = blocks(n, 256);

    let mut counts = gpu.zeros::<u32>(nb + 1)?;
    // SAFETY (every launch below): argument lists match msm.cuh's MSM_KERNELS; buffer sizes
    // are as allocated here (counts/offsets nb+1, sorted w*n, buckets nb, sums w).
    unsafe {
        s.launch_builder(gpu.func(&k("msm_count"))?)
            .arg(scalars)
            .arg(&n32)
            .arg(&c)
            .arg(&w)
            .arg(&skip)
            .arg(&mut counts)
            .launch(cfg(grid_n, 256, 0))
    }
    .map_err(launch_err(gpu, "msm_count"))?;
    let mut offsets = gpu.alloc::<u32>(nb + 1)?;
    scan_u32(gpu, &counts, &mut offsets, nb + 1)?;
    s.memcpy_dtod(&offsets, &mut counts)
        .map_err(launch_err(gpu, "copy offsets"))?;
    let mut sorted = gpu.alloc::<u32>(w as usize * n)?;
    unsafe {
        s.launch_builder(gpu.func(&k("msm_scatter"))?)
            .arg(scalars)
            .arg(&n32)
            .arg(&c)
            .arg(&w)
            .arg(&skip)
            .arg(&mut counts)
            .arg(&mut sorted)
            .launch(cfg(grid_n, 256, 0))
    }
    .map_err(launch_err(gpu, "msm_scatter"))?;
    drop(counts);
    let mut buckets = gpu.alloc::<u8>(nb * C::XYZZ_BYTES)?;
    let nb32 = nb as u32;
    unsafe {
        s.launch_builder(gpu.func(&k("msm_bucket_sum"))?)
            .arg(bases)
            .arg(&sorted)
            .arg(&offsets)
            .arg(&nb32)
            .arg(&mut buckets)
            .launch(cfg(blocks(nb, 128), 128, 0))
    }
    .map_err(launch_err(gpu, "msm_bucket_sum"))?;
    drop((sorted, offsets));
    let t = C::REDUCE_THREADS;
    let shared = t * C::XYZZ_BYTES as u32;
    let segs = reduce_segments(c, t);
    let mut partial = gpu.alloc::<u8>((w * segs) as usize * C::XYZZ_BYTES)?;
    unsafe {
        s.launch_builder(gpu.func(&k("msm_bucket_reduce"))?)
            .arg(&buckets)
            .arg(&c)
            .arg(&segs)
            .arg(&mut partial)
            .launch(cfg((w * segs) as usize, t, shared))
    }
    .map_err(launch_err(gpu, "msm_bucket_reduce"))?;
    let mut sums = gpu.alloc::<u8>(w as usize * C::XYZZ_BYTES)?;
    unsafe {
        s.launch_builder(gpu.func(&k("xyzz_reduce"))?)
            .arg(&partial)
            .arg(&segs)
            .arg(&mut sums)
            .launch(cfg(w as usize, t, shared))
    }
    .map_err(launch_err(gpu, "xyzz_reduce"))?;
    drop(buckets);

    let ones = if split {
        Some(ones_sum::<C>(gpu, bases, scalars, n)?)
    } else {
        None
    };
    let combine = gpu.func(&k("msm_combine"))?;
    let null = 0u64;
    let mut lb = s.launch_builder(combine);
    lb.arg(&sums).arg(&w).arg(&c);
    match &ones {
        Some(o) => lb.arg(o),
        None => lb.arg(&null),
    };
    lb.arg(&mut out);
    unsafe { lb.launch(cfg(1, 1, 0)) }.map_err(launch_err(gpu, "msm_combine"))?;
    Ok(out)
}

/// Sum of the bases whose scalar is exactly 1 (one XYZZ point on the device).
fn ones_sum<C: Curve>(
    gpu: &Gpu,
    bases: &CudaView<'_, u8>,
    scalars: &CudaView<'_, u8>,
    n: usize,
) -> Result<CudaSlice<u8>, ProveError> {
    let t = C::REDUCE_THREADS;
    let shared = t * C::XYZZ_BYTES as u32;
    let grid = blocks(n, t).min(1024);
    let mut partial = gpu.alloc::<u8>(grid * C::XYZZ_BYTES)?;
    let mut out = gpu.alloc::<u8>(C::XYZZ_BYTES)?;
    let (n32, g32) = (n as u32, grid as u32);
    let s = gpu.stream();
    // SAFETY: signatures as in msm.cuh; partial holds `grid` points.
    unsafe {
        s.launch_builder(gpu.func(&format!("{}_msm_ones_sum", C::PREFIX))?)
            .arg(bases)
            .arg(scalars)
            .arg(&n32)
            .arg(&mut partial)
            .launch(cfg(grid, t, shared))
    }
    .map_err(launch_err(gpu, "msm_ones_sum"))?;
    unsafe {
        s.launch_builder(gpu.func(&format!("{}_xyzz_reduce", C::PREFIX))?)
            .arg(&partial)
            .arg(&g32)
            .arg(&mut out)
            .launch(cfg(1, t, shared))
    }
    .map_err(launch_err(gpu, "xyzz_reduce"))?;
    Ok(out)
}

/// Waits for the stream and reads one device XYZZ point.
pub fn download_point<C: Curve>(gpu: &Gpu, p: &CudaSlice<u8>) -> Result<C::Projective, ProveError> {
    let mut host = vec![0u8; C::XYZZ_BYTES];
    gpu.stream()
        .memcpy_dtoh(p, &mut host)
        .map_err(launch_err(gpu, "download"))?;
    gpu.sync()?;
    Ok(C::from_xyzz(&host))
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
    let n = bases.len().min(scalars.len());
    let db = upload_bases::<C>(gpu, &bases[..n])?;
    let ds = gpu.upload(field::bytes_of(&scalars[..n]))?;
    let r = msm::<C>(gpu, &db, &ds, n, split)?;
    download_point::<C>(gpu, &r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every window width in use leaves the top window as full as the others (c - 1 bits
    /// of a 255-bit scalar plus the carry), and the reduction segments tile the buckets.
    #[test]
    fn windows_are_full_and_segments_tile() {
        for lg in 0..=32u32 {
            let c = window_bits(1usize << lg);
            let top_bits = 255 - c * (windows(c) - 1);
            assert_eq!(top_bits, c - 1, "c = {c}");
            for t in [G1::REDUCE_THREADS, G2::REDUCE_THREADS] {
                let b = 1u32 << (c - 1);
                let s = reduce_segments(c, t);
                assert_eq!(b % (t * s), 0, "c = {c}, T = {t}, S = {s}");
                assert!(b / (t * s) >= 1);
            }
        }
    }
}
