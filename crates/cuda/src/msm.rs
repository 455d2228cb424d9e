//! Pippenger MSM driver (kernels in kernels/ec/msm.cuh), generic over G1 and G2, and the
//! split MSM for witnesses that are mostly 0 and 1.
//!
//! All launches go to one stream; the only host synchronisation is reading the result.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, PushKernelArg};
use filprove_groth16::ProveError;
use group::Group as _;

use crate::field::{self, Limbs};
use crate::gpu::{blocks, cfg, Gpu};
use crate::msm_affine::{self, AffineSums};
use crate::msm_scatter::{Digits, Scattered};

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
    /// Whether the bucket sums have batch-affine levels (crate::msm_affine; G1 only).
    const AFFINE_SUMS: bool;
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
    const AFFINE_SUMS: bool = true;
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
    const AFFINE_SUMS: bool = false;
    type Affine = G2Affine;
    type Projective = G2Projective;
    fn from_xyzz(bytes: &[u8]) -> G2Projective {
        field::g2_from_xyzz(bytes)
    }
}

/// Narrowest and widest window in use. Eight bits keep at least 128 buckets per window
/// (one reduction block); 22 bits is the cheapest width for 2^27 points (below), and
/// wider windows would not fit the bucket counters of a window in L2.
pub const MIN_WINDOW: u32 = 8;
/// See [`MIN_WINDOW`].
pub const MAX_WINDOW: u32 = 22;

/// Window bits for `n` scalars: the width that minimises the estimated work, one mixed
/// addition per point and window plus [`bucket_cost`] mixed additions' worth per bucket for
/// the scatter, chunk fix-up and running-sum reduction. 2^27 points: c = 22 (12 windows);
/// 2^20: 16. Any width is safe: the bucket sum is balanced per chunk of sorted points, so
/// a sparse top window or a heavy bucket does not serialise it.
pub fn window_bits(n: usize) -> u32 {
    let per_bucket = bucket_cost();
    let cost = |c: u32| {
        f64::from(windows(c)) * (n.max(1) as f64 + per_bucket * f64::from(1u32 << (c - 1)))
    };
    (MIN_WINDOW..=MAX_WINDOW)
        .min_by(|&a, &b| cost(a).total_cmp(&cost(b)))
        .unwrap_or(16)
}

/// Mixed additions' worth of work per bucket in [`window_bits`]'s model: 4, or
/// `FILPROVE_MSM_BUCKET_COST` read once per process (A/B runs of the window choice; every
/// width is correct).
/// Measured on the H200 (docs/decisions/004-msm-bucket-sums-and-windows.md): at 2^27, c =
/// 22 against c = 20 saves 83 ms of point additions and spends 68 ms more on scatter,
/// fix-up and reduction for its 3.7x as many buckets (G1 MSM 1,274 against 1,289 ms; G2
/// split 2^25 68 against 72.5 ms). With the products inlined the reduction had cost three
/// times as much, and the value was 12 (c = 20).
fn bucket_cost() -> f64 {
    static COST: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *COST.get_or_init(|| {
        std::env::var("FILPROVE_MSM_BUCKET_COST")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
            .unwrap_or(4.0)
    })
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

/// Windows handled per group: all of them for small MSMs, one at a time from 2^24 points
/// (so a group's bucket counters stay in L2 and its sorted entries take n words).
fn group_windows(n: usize, w: u32) -> u32 {
    ((1usize << 24) / n.max(1)).clamp(1, w as usize) as u32
}

/// Sorted entries per bucket-sum thread: the entries spread over exactly one wave of
/// resident threads (measured: 1.94-2.6 waves of 1024-entry chunks lost ~15 % to the
/// partial last wave), at least 8. Long chunks also leave most buckets inside one chunk,
/// so the fix-up has little to add.
fn chunk_len(entries: usize, resident: usize) -> u32 {
    entries
        .div_ceil(resident.clamp(1, MAX_CHUNKS))
        .max(entries.div_ceil(MAX_CHUNKS))
        .max(8) as u32
}

/// Upper bound on bucket-sum threads (and head/tail pairs) of one group.
const MAX_CHUNKS: usize = 1 << 19;

/// Points per thread when summing an index list (the scalars equal to 1).
fn list_chunk_len(n: usize) -> u32 {
    (n / 65536).clamp(4, 256) as u32
}

/// Device bytes an MSM over `n` points needs beyond its bases and scalars (the larger of a
/// plain and a split MSM).
pub fn scratch_bytes<C: Curve>(n: usize) -> usize {
    let n = n.max(1);
    let c = window_bits(n);
    let w = windows(c);
    let sums = AffineSums::from_env();
    let binned = sums.binned_for(n);
    let g = if binned {
        1
    } else {
        group_windows(n, w) as usize
    };
    let (x, b) = (C::XYZZ_BYTES, 1usize << (c - 1));
    let nb = g * b;
    // Chunks: at most one per 8 entries (the shortest chunk), at most MAX_CHUNKS.
    let chunks = (g * n).div_ceil(8).min(MAX_CHUNKS) + 1;
    let segs = reduce_segments(c, C::REDUCE_THREADS) as usize;
    let group = 4 * (nb + 1) * 4 + (nb / 1024 + 2) * 4 + g * n * 4 + 2 * chunks * x;
    let bins = if binned {
        Digits::binned_bytes(n, b)
    } else {
        0
    };
    let all = w as usize * b * x + w as usize * segs * x;
    let lists = 2 * n * 4 + 2 * (n.div_ceil(list_chunk_len(n) as usize) + 2) * x;
    let canon = Digits::canon_bytes(n, binned);
    let affine = if C::AFFINE_SUMS {
        let entries = g * n;
        // With levels: the heavy buckets' sums and the reduction's partial sums too.
        let reduce = if sums.levels_for(entries) > 0 {
            nb * x + w as usize * msm_affine::MAX_LEFTOVER_SEGMENTS as usize * x
        } else {
            0
        };
        sums.scratch_bytes(entries, nb) + reduce
    } else {
        0
    };
    w as usize * x + x + all + group + bins + lists + canon + affine
}

pub(crate) fn launch_err<'a>(
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

/// An MSM result left on the device: the window sums of Pippenger (combined by Horner's
/// rule on the host after the proof's one download: 255 doublings take ~0.1 ms there and
/// ~8 ms on one GPU thread) and an extra point to add (the sum of the bases whose scalar
/// is 1).
pub struct DeviceMsm {
    sums: Option<CudaSlice<u8>>,
    windows: u32,
    c: u32,
    extra: Option<CudaSlice<u8>>,
}

impl DeviceMsm {
    fn identity() -> Self {
        Self {
            sums: None,
            windows: 0,
            c: 0,
            extra: None,
        }
    }

    /// Device-to-host bytes of [`DeviceMsm::download`].
    pub fn bytes<C: Curve>(&self) -> usize {
        (self.windows as usize + usize::from(self.extra.is_some())) * C::XYZZ_BYTES
    }

    /// Waits for the stream, reads the window sums and combines them.
    pub fn download<C: Curve>(&self, gpu: &Gpu) -> Result<C::Projective, ProveError> {
        let x = C::XYZZ_BYTES;
        let mut r = <C::Projective as group::Group>::identity();
        if let Some(sums) = &self.sums {
            let mut host = vec![0u8; self.windows as usize * x];
            gpu.stream()
                .memcpy_dtoh(&sums.slice(0..host.len()), &mut host)
                .map_err(launch_err(gpu, "download window sums"))?;
            gpu.sync()?;
            for w in host.chunks_exact(x).rev() {
                for _ in 0..self.c {
                    r = r.double();
                }
                r += C::from_xyzz(w);
            }
        }
        if let Some(e) = &self.extra {
            r += download_point::<C>(gpu, e)?;
        }
        Ok(r)
    }
}

/// sum_i scalars[i] * bases[i] over the first `n` of each, left on the device. With `split`, the scalars are classified on the device first: the points whose
/// scalar is 1 are summed directly and only the other non-zero scalars go through
/// Pippenger.
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
    msm_view_with::<C>(gpu, bases, scalars, n, split, &AffineSums::from_env())
}

/// [`msm_view`] with the batch-affine levels given (tests and A/B runs).
pub fn msm_view_with<C: Curve>(
    gpu: &Gpu,
    bases: &CudaView<'_, u8>,
    scalars: &CudaView<'_, u8>,
    n: usize,
    split: bool,
    affine: &AffineSums,
) -> Result<DeviceMsm, ProveError> {
    if bases.len() < n * C::AFFINE_BYTES || scalars.len() < n * 32 || n >= 1 << 31 {
        return Err(ProveError::Invalid(format!(
            "MSM of {n} with {} base / {} scalar bytes",
            bases.len(),
            scalars.len()
        )));
    }
    if n == 0 {
        return Ok(DeviceMsm::identity());
    }
    if !split {
        return pippenger::<C>(gpu, bases, scalars, n, None, affine);
    }
    let s = gpu.stream();
    let mut counts = gpu.zeros::<u32>(2)?;
    let mut ones = gpu.alloc::<u32>(n)?;
    let mut others = gpu.alloc::<u32>(n)?;
    let n32 = n as u32;
    // SAFETY: classify_scalars(const Fr*, u32, u32*, u32*, u32*) as in scalars.cu; the
    // lists hold n entries, counts 2.
    unsafe {
        s.launch_builder(gpu.func("classify_scalars")?)
            .arg(scalars)
            .arg(&n32)
            .arg(&mut counts)
            .arg(&mut ones)
            .arg(&mut others)
            .launch(cfg(blocks(n, 256), 256, 0))
    }
    .map_err(launch_err(gpu, "classify_scalars"))?;
    gpu.probe("classify")?;
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
    let mut r = pippenger::<C>(gpu, bases, scalars, n_others, Some(&others), affine)?;
    r.extra = ones_sum;
    Ok(r)
}

/// Pippenger over `n` entries: scalars[i] with bases[i] for i < n, or, with `list`,
/// scalars[list[i]] with bases[list[i]].
fn pippenger<C: Curve>(
    gpu: &Gpu,
    bases: &CudaView<'_, u8>,
    scalars: &CudaView<'_, u8>,
    n: usize,
    list: Option<&CudaSlice<u32>>,
    affine: &AffineSums,
) -> Result<DeviceMsm, ProveError> {
    let p = C::PREFIX;
    let k = |name: &str| format!("{p}_{name}");
    let s = gpu.stream();
    let x = C::XYZZ_BYTES;
    let c = window_bits(n);
    let w = windows(c);
    let b = 1usize << (c - 1);
    // The large MSMs scatter through bins, one window per group.
    let bin = affine.bin_scatter_for(n);
    let binned = bin.is_some();
    let g = if binned { 1 } else { group_windows(n, w) };
    let t = C::REDUCE_THREADS;
    let shared = t * x as u32;
    let segs = reduce_segments(c, t);
    let mut window_sums = gpu.alloc::<u8>(w as usize * x)?;
    // Windows [0, wa) are in groups that run the batch-affine levels and fill the GPU
    // with their buckets (only the last group can be smaller): they are reduced from
    // what the levels leave, group by group (msm_affine::reduce_leftover), into
    // `leftover_partial`; the others go through XYZZ buckets.
    let has_levels =
        |w0: u32| C::AFFINE_SUMS && affine.levels_for(((w0 + g).min(w) - w0) as usize * n) > 0;
    let mut lsegs = 0;
    let mut wa = 0;
    for w0 in (0..w).step_by(g as usize) {
        let w1 = (w0 + g).min(w);
        let segs = if has_levels(w0) {
            msm_affine::leftover_segments::<C>(gpu, w1 - w0, c, affine.leftover)?
        } else {
            None
        };
        match segs {
            Some(segs) if lsegs == 0 || segs == lsegs => {
                lsegs = segs;
                wa = w1;
            }
            _ => break,
        }
    }
    let mut leftover_partial = gpu.alloc::<u8>(wa as usize * lsegs as usize * x)?;
    // The heavy buckets' sums of a group (reduce_leftover).
    let mut heavy_sums = gpu.alloc::<u8>(if wa > 0 { g as usize * b * x } else { 0 })?;
    // The other windows' buckets (zero = the identity), reduced together after the last
    // group.
    let plain = (w - wa) as usize;
    let mut all_buckets = gpu.zeros::<u8>(plain * b * x)?;
    let resident = gpu.resident_threads(&k("msm_chunk_sum"), 128)?;
    // The scalars as integers, converted once for every digit pass.
    let digits = Digits::new(gpu, p, scalars, list, n, c, bin)?;
    // SAFETY (every launch below): argument lists match msm.cuh's MSM_KERNELS; buffer sizes
    // are as allocated here (buckets nb, head/tail `chunks`, partial gw*segs, window sums
    // w); the scatter (msm_scatter.rs) gives nb + 1 offsets and their entries.
    //
    // The digits of every group after the first are counted by the scatter of the group
    // before it (one pass over the scalars fewer per group).
    let mut counted: Option<CudaSlice<u32>> = None;
    for w0 in (0..w).step_by(g as usize) {
        let w1 = (w0 + g).min(w);
        let gw = (w1 - w0) as usize;
        let nb = gw * b;
        let Scattered { offsets, sorted } = if binned {
            digits.binned(w0, &mut counted)?
        } else {
            // The next group's end (w1 after the last group).
            digits.direct(w0, w1, (w1 + g).min(w), &mut counted)?
        };
        let left = if has_levels(w0) {
            let left = msm_affine::run_levels(gpu, bases, &sorted, &offsets, nb, gw * n, affine)?;
            Some(left)
        } else {
            None
        };
        if let Some(left) = left.as_ref().filter(|_| w0 < wa) {
            drop(sorted);
            let range = w0 as usize * lsegs as usize * x..w1 as usize * lsegs as usize * x;
            msm_affine::reduce_leftover::<C>(
                gpu,
                left,
                nb,
                (c, lsegs),
                resident,
                &mut heavy_sums,
                &mut leftover_partial.slice_mut(range),
            )?;
            continue;
        }
        // The chunk sums take the scattered entries, or what the batch-affine levels
        // leave of them.
        let range = (w0 - wa) as usize * b * x..(w1 - wa) as usize * b * x;
        let (input, offsets, entries) = match &left {
            Some(l) => (SumInput::Leftover(&l.points), &l.offsets, l.bound),
            None => (SumInput::Scattered(bases, &sorted), &offsets, gw * n),
        };
        bucket_sums::<C>(
            gpu,
            input,
            offsets,
            nb,
            entries,
            resident,
            &mut all_buckets.slice_mut(range),
        )?;
    }
    drop(heavy_sums);
    drop(digits);
    if wa > 0 {
        let parts = wa as usize * lsegs as usize;
        let mut sums = window_sums.slice_mut(..wa as usize * x);
        sum_runs::<C>(gpu, &leftover_partial, lsegs, parts, &mut sums)?;
    }
    drop(leftover_partial);
    if plain > 0 {
        // One reduction over the windows: enough threads to fill the GPU (per window,
        // 2^19 buckets at 32 per thread are a quarter of a wave).
        let parts = plain * segs as usize;
        let mut partial = gpu.alloc::<u8>(parts * x)?;
        unsafe {
            s.launch_builder(gpu.func(&k("msm_bucket_reduce"))?)
                .arg(&all_buckets)
                .arg(&c)
                .arg(&segs)
                .arg(&mut partial)
                .launch(cfg(parts, t, shared))
        }
        .map_err(launch_err(gpu, "msm_bucket_reduce"))?;
        sum_runs::<C>(
            gpu,
            &partial,
            segs,
            parts,
            &mut window_sums.slice_mut(wa as usize * x..),
        )?;
    }
    drop(all_buckets);
    gpu.probe("msm_bucket_reduce")?;
    Ok(DeviceMsm {
        sums: Some(window_sums),
        windows: w,
        c,
        extra: None,
    })
}

/// What a group's bucket sums (steps 4 and 5 of msm.cuh) read.
pub(crate) enum SumInput<'a, 'b> {
    /// The scattered entries: `sorted` indexes the bases (sign in bit 31).
    Scattered(&'a CudaView<'b, u8>, &'a CudaSlice<u32>),
    /// The points the batch-affine levels left, in bucket order.
    Leftover(&'a CudaSlice<u8>),
    /// The same and their bucket offsets, for the heavy buckets alone: the offsets given
    /// to [`bucket_sums`] number the heavy buckets' points (ec/leftover.cuh).
    Heavy(&'a CudaSlice<u8>, &'a CudaSlice<u32>),
}

/// Sums the entries of each of the `nb` buckets (`offsets`, nb + 1 of them; at most
/// `entries` entries) into `buckets` (nb points): chunk sums over one wave of `resident`
/// threads, then the fix-up of the buckets that span chunks (queued).
pub(crate) fn bucket_sums<C: Curve>(
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
    // SAFETY (all three): argument lists as in msm.cuh's MSM_KERNELS and msm_g1.cu;
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
    gpu.probe("msm_chunk_sum")?;
    let mut heavy = gpu.alloc::<u32>(nb)?;
    let mut heavy_count = gpu.zeros::<u32>(1)?;
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
    gpu.probe("msm_chunk_fixup")?;
    Ok(())
}

/// out[j] = the sum of input[j m .. min((j + 1) m, n)] for j < max(1, ceil(n / m))
/// (`xyzz_reduce`, one block per output; queued).
fn sum_runs<C: Curve>(
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

/// Sum of bases[ones[i]] for the `n` indices of the ones (one XYZZ point on the device;
/// `counts[0]` holds n on the device). With the batch-affine levels (G1, from
/// `affine.min_entries` ones) the list is first one bucket of those levels, and what they
/// leave is summed.
fn ones_sum<C: Curve>(
    gpu: &Gpu,
    bases: &CudaView<'_, u8>,
    ones: &CudaSlice<u32>,
    counts: &CudaSlice<u32>,
    n: usize,
    affine: &AffineSums,
) -> Result<CudaSlice<u8>, ProveError> {
    if !C::AFFINE_SUMS || affine.levels_for(n) == 0 {
        let r = list_sum::<C>(gpu, bases, Some(ones), n, None)?;
        gpu.probe("msm_ones_sum")?;
        return Ok(r);
    }
    // One bucket: offsets [0, n], n copied from the classification's count.
    let mut offsets = gpu.zeros::<u32>(2)?;
    gpu.stream()
        .memcpy_dtod(&counts.slice(0..1), &mut offsets.slice_mut(1..2))
        .map_err(launch_err(gpu, "copy the ones' count"))?;
    let left = msm_affine::run_levels(gpu, bases, ones, &offsets, 1, n, affine)?;
    let count = left.offsets.slice(1..2);
    let r = list_sum::<C>(gpu, &left.points.as_view(), None, left.bound, Some(&count))?;
    gpu.probe("msm_ones_sum")?;
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

/// Waits for the stream and reads one device XYZZ point.
fn download_point<C: Curve>(gpu: &Gpu, p: &CudaSlice<u8>) -> Result<C::Projective, ProveError> {
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
    msm_host_with::<C>(gpu, bases, scalars, split, &AffineSums::from_env())
}

/// [`msm_host`] with the batch-affine levels given.
pub fn msm_host_with<C: Curve>(
    gpu: &Gpu,
    bases: &[C::Affine],
    scalars: &[filprove_groth16::Fr],
    split: bool,
    affine: &AffineSums,
) -> Result<C::Projective, ProveError> {
    let n = bases.len().min(scalars.len());
    let db = upload_bases::<C>(gpu, &bases[..n])?;
    let ds = gpu.upload(field::bytes_of(&scalars[..n]))?;
    msm_view_with::<C>(gpu, &db.as_view(), &ds.as_view(), n, split, affine)?.download::<C>(gpu)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(window_bits(1 << 20), 16);
        assert_eq!(window_bits(1), MIN_WINDOW);
    }
}
