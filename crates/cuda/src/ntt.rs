//! NTT driver over device-resident Fr vectors, and the H polynomial of Groth16.
//!
//! Semantics match bellperson's `EvaluationDomain`: size m = 2^lg, omega the 2^lg-th root
//! of unity derived from `Fr::ROOT_OF_UNITY`, coset generator `Fr::MULTIPLICATIVE_GENERATOR`.

use cudarc::driver::{CudaSlice, LaunchArgs, PushKernelArg};
use ff::{Field, PrimeField};
use filprove_groth16::{Fr, ProveError};

use crate::field::DevFr;
use crate::gpu::{blocks, cfg, Gpu};
use crate::work::Work;

/// log2 of the elements one block of the stage kernels transforms (`NTT_BLOCK_LG` in
/// ntt.cu).
const BLOCK_LG: u32 = 10;
/// log2 of the elements each thread of the stage kernels holds (`NTT_RADIX_LG`).
const RADIX_LG: u32 = 2;
/// Threads per block of the strided passes (`NTT_THREADS`).
const THREADS: u32 = 1 << (BLOCK_LG - RADIX_LG);
const FR_BYTES: usize = 32;
/// Most stages per strided shared-memory pass.
const STRIDED_LG: u32 = 6;
/// Dynamic shared memory of a strided block (its 2^BLOCK_LG elements).
const STRIDED_SMEM: usize = (1 << BLOCK_LG) * FR_BYTES;
/// The strided kernels.
const STRIDED_FNS: [&str; 2] = ["ntt_strided_dit", "ntt_strided_dif"];

/// How the strided kernels were built, for benchmark logs: per kernel its registers and
/// resident blocks per SM at the launch shape.
pub fn strided_kernel_info(gpu: &Gpu) -> Result<String, ProveError> {
    let mut out = Vec::new();
    for name in STRIDED_FNS {
        let f = gpu.func(name)?;
        let regs = f.num_regs().map_err(|e| gpu.err("cuFuncGetAttribute", e))?;
        let blocks = f
            .occupancy_max_active_blocks_per_multiprocessor(THREADS, STRIDED_SMEM, None)
            .map_err(|e| gpu.err("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
        out.push(format!("{name}: {regs} registers, {blocks} blocks/SM"));
    }
    Ok(out.join("; "))
}

/// Direction and coset of a transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NttKind {
    /// Evaluations on the subgroup from coefficients.
    Forward,
    /// Coefficients from evaluations on the subgroup (includes 1/n).
    Inverse,
    /// Evaluations on the coset g*H from coefficients.
    CosetForward,
    /// Coefficients from evaluations on the coset g*H.
    CosetInverse,
}

/// The 2^lg-th root of unity bellperson uses.
pub fn omega(lg: u32) -> Fr {
    let mut w = Fr::ROOT_OF_UNITY;
    for _ in lg..Fr::S {
        w = w.square();
    }
    w
}

/// log2 of the low table of a coset scaling (see [`Powers`]).
const LO_BITS: u32 = 12;

/// c * g^i for i < 2^lg as two device tables: lo[k] = g^k (k < 2^LO_BITS) and
/// hi[k] = c * g^(k 2^LO_BITS); the kernels multiply them per element (`scale_at`).
struct Powers {
    lo: CudaSlice<u8>,
    hi: CudaSlice<u8>,
}

/// A pointwise product taken by a transform's first load (ntt.cu, ntt_block's PW): the
/// value loaded times `times`, or with `into` the value unchanged and `into` = value *
/// times. H's products ride on the transforms this way instead of passes of their own.
#[derive(Default)]
struct FirstLoad<'a> {
    times: Option<&'a CudaSlice<u8>>,
    into: Option<&'a mut CudaSlice<u8>>,
}

/// Device pointer 0 for an absent vector.
static NULL: u64 = 0;

impl<'a> FirstLoad<'a> {
    /// `data *= times` on the first load; both hold at least 2^plan.lg Fr.
    fn times(plan: &NttPlan, times: &'a CudaSlice<u8>) -> Result<Self, ProveError> {
        plan.check(times)?;
        Ok(Self {
            times: Some(times),
            into: None,
        })
    }

    /// `into = data * times` on the first load, data unchanged; all hold at least
    /// 2^plan.lg Fr.
    fn product_into(
        plan: &NttPlan,
        times: &'a CudaSlice<u8>,
        into: &'a mut CudaSlice<u8>,
    ) -> Result<Self, ProveError> {
        plan.check(times)?;
        plan.check(into)?;
        Ok(Self {
            times: Some(times),
            into: Some(into),
        })
    }

    /// This one, leaving none in its place (the later launches' loads take none).
    fn take(&mut self) -> Self {
        std::mem::take(self)
    }

    /// The product's work on top of its launch's: one Fr product per element, `times`
    /// read and `into` written.
    fn work(&self, lg: u32) -> Work {
        match (self.times, &self.into) {
            (None, _) => Work::default(),
            (Some(_), into) => pointwise_work(lg, 1.0, 1.0 + into.is_some() as u8 as f64),
        }
    }

    /// The kernel's last two arguments (pw, pw_out; null when absent).
    fn push<'l>(self, b: &mut LaunchArgs<'l>)
    where
        'a: 'l,
    {
        match self.times {
            Some(t) => b.arg(t),
            None => b.arg(&NULL),
        };
        match self.into {
            Some(o) => b.arg(o),
            None => b.arg(&NULL),
        };
    }
}

/// H's last step on the last store of c's inverse transform (ntt.cu, ntt_block's FIN):
/// value number v of the transform, x, is not stored; `out[v] = a[brev(v)] - k x` is.
struct Finish<'a> {
    a: &'a CudaSlice<u8>,
    out: &'a mut CudaSlice<u8>,
    k: DevFr,
}

/// Device Fr zero: an absent [`Finish`]'s k.
static ZERO: DevFr = DevFr([0; 4]);

impl<'a> Finish<'a> {
    /// The last step's work on top of its launch's: a read of a and one product per element.
    fn work(this: &Option<Self>, lg: u32) -> Work {
        match this {
            Some(_) => pointwise_work(lg, 1.0, 1.0),
            None => Work::default(),
        }
    }

    /// The kernel's last three arguments (a, out, k; null and zero when absent).
    fn push<'l>(this: &'l mut Option<Self>, b: &mut LaunchArgs<'l>)
    where
        'a: 'l,
    {
        match this {
            Some(f) => b.arg(f.a).arg(&mut *f.out).arg(&f.k),
            None => b.arg(&NULL).arg(&NULL).arg(&ZERO),
        };
    }
}

/// Twiddles and coset scalings for one domain size, kept on the device.
pub struct NttPlan {
    lg: u32,
    twiddles: CudaSlice<u8>,
    /// g^i (before a coset transform).
    coset: Powers,
    /// g^-i / n (after an inverse coset transform).
    coset_inv: Powers,
    /// g^i / n (between an inverse and a coset transform: [`NttPlan::to_coset`]).
    shift: Powers,
    /// g^-i / (n Z), Z = g^n - 1 (H's last step: [`compute_h_in_place`]).
    h_scale: Powers,
    /// 1 / (n Z), the same step's factor of c.
    h_c: Fr,
}

/// Entries of an [`NttPlan`]'s twiddle table for 2^lg: omega^i for i <= 2^lg / 2.
pub fn twiddle_count(lg: u32) -> usize {
    (1usize << lg) / 2 + 1
}

/// Device bytes of an [`NttPlan`]'s four scaling tables for 2^lg.
pub fn scale_table_bytes(lg: u32) -> u64 {
    let lo_bits = LO_BITS.min(lg);
    4 * ((1u64 << lo_bits) + (1u64 << (lg - lo_bits))) * FR_BYTES as u64
}

/// out[i] = c * omega^i for i < len, on the device.
fn powers(gpu: &Gpu, c: Fr, omega: Fr, len: usize) -> Result<CudaSlice<u8>, ProveError> {
    let mut out = gpu.alloc::<u8>(len * FR_BYTES)?;
    let (c, w, len32) = (DevFr::from(c), DevFr::from(omega), len as u32);
    // SAFETY: kernel signature (Fr*, Fr, Fr, u32); the buffer holds `len` Fr.
    unsafe {
        gpu.stream()
            .launch_builder(gpu.func("ntt_powers")?)
            .arg(&mut out)
            .arg(&c)
            .arg(&w)
            .arg(&len32)
            .launch(cfg(blocks(len.div_ceil(32), 256), 256, 0))
    }
    .map_err(|e| gpu.err("ntt_powers", e))?;
    Ok(out)
}

impl Powers {
    fn new(gpu: &Gpu, lg: u32, c: Fr, g: Fr) -> Result<Self, ProveError> {
        let lo_bits = LO_BITS.min(lg);
        let hi_len = 1usize << (lg - lo_bits);
        Ok(Self {
            lo: powers(gpu, Fr::ONE, g, 1 << lo_bits)?,
            hi: powers(gpu, c, g.pow_vartime([1u64 << lo_bits]), hi_len)?,
        })
    }

    /// The whole table c * g^i, i < len <= 2^lg, in one product per entry.
    fn expand(&self, gpu: &Gpu, lg: u32, len: usize) -> Result<CudaSlice<u8>, ProveError> {
        let mut out = gpu.alloc::<u8>(len * FR_BYTES)?;
        let (len32, lo_bits) = (len as u32, LO_BITS.min(lg));
        // SAFETY: ntt_expand(Fr* out, u32 len, const Fr* lo, const Fr* hi, u32 lo_bits) as
        // in ntt.cu; `out` holds len Fr, lo 2^lo_bits and hi 2^(lg - lo_bits), so every
        // index i < len <= 2^lg reads lo[i mod 2^lo_bits] and hi[i >> lo_bits] in range.
        unsafe {
            gpu.stream()
                .launch_builder(gpu.func("ntt_expand")?)
                .arg(&mut out)
                .arg(&len32)
                .arg(&self.lo)
                .arg(&self.hi)
                .arg(&lo_bits)
                .launch(cfg(blocks(len, 256).min(132 * 16), 256, 0))
        }
        .map_err(|e| gpu.err("ntt_expand", e))?;
        Ok(out)
    }
}

impl NttPlan {
    /// Computes the twiddles omega^i, i <= 2^(lg-1), on the device (the last one, -1,
    /// gives the inverse transform's omega^-i = -omega^(n/2-i) for every i < n/2).
    pub fn new(gpu: &Gpu, lg: u32) -> Result<Self, ProveError> {
        if lg > Fr::S {
            return Err(ProveError::Invalid(format!(
                "NTT of size 2^{lg} exceeds the field's 2^{}",
                Fr::S
            )));
        }
        let twiddles =
            Powers::new(gpu, lg, Fr::ONE, omega(lg))?.expand(gpu, lg, twiddle_count(lg))?;
        let g = Fr::MULTIPLICATIVE_GENERATOR;
        let g_inv = g.invert().unwrap_or(Fr::ONE);
        let n_inv = n_inv(lg);
        let h_c = n_inv * coset_z_inv(lg);
        Ok(Self {
            lg,
            twiddles,
            coset: Powers::new(gpu, lg, Fr::ONE, g)?,
            coset_inv: Powers::new(gpu, lg, n_inv, g_inv)?,
            shift: Powers::new(gpu, lg, n_inv, g)?,
            h_scale: Powers::new(gpu, lg, h_c, g_inv)?,
            h_c,
        })
    }

    /// Evaluations on the subgroup -> evaluations on the coset g*H, in place: an inverse
    /// transform, one scaling by g^i / n, a forward transform (one pass fewer than
    /// `Inverse` then `CosetForward`).
    /// With the strided passes (the default) no bit reversal runs: the inverse transform
    /// decimates in frequency (natural in, bit-reversed out) and its last launch scales the
    /// values it stores (indexed through the reversal), and the forward transform decimates
    /// in time from bit-reversed input.
    pub fn to_coset(&self, gpu: &Gpu, data: &mut CudaSlice<u8>) -> Result<(), ProveError> {
        self.to_coset_after(gpu, data, FirstLoad::default())
    }

    /// [`NttPlan::to_coset`] whose first load takes `first`'s pointwise product.
    fn to_coset_after(
        &self,
        gpu: &Gpu,
        data: &mut CudaSlice<u8>,
        first: FirstLoad<'_>,
    ) -> Result<(), ProveError> {
        self.check(data)?;
        self.stages(gpu, data, true, true, Some(&self.shift), first, None)?;
        self.stages(gpu, data, false, false, None, FirstLoad::default(), None)
    }

    fn check(&self, data: &CudaSlice<u8>) -> Result<(), ProveError> {
        let n = 1usize << self.lg;
        if data.len() < n * FR_BYTES {
            return Err(ProveError::Invalid(format!(
                "NTT buffer of {} bytes for 2^{}",
                data.len(),
                self.lg
            )));
        }
        Ok(())
    }

    /// log2 of the domain size.
    pub fn lg(&self) -> u32 {
        self.lg
    }

    /// Transforms `data` (2^lg Fr, Montgomery form) in place; queued on the stream.
    pub fn run(
        &self,
        gpu: &Gpu,
        data: &mut CudaSlice<u8>,
        kind: NttKind,
    ) -> Result<(), ProveError> {
        self.check(data)?;
        if self.lg == 0 {
            // A domain of one element: only the scalings apply.
            return match kind {
                NttKind::Forward => Ok(()),
                NttKind::Inverse => self.scale_const(gpu, data, n_inv(0)),
                NttKind::CosetForward => self.scale(gpu, data, &self.coset, false),
                NttKind::CosetInverse => self.scale(gpu, data, &self.coset_inv, false),
            };
        }
        // The scalings ride on the bit reversal: by the source index before a forward
        // transform, by the destination index after an inverse one.
        match kind {
            NttKind::Forward => {
                self.bitrev(gpu, data, None)?;
                self.stages(gpu, data, false, false, None, FirstLoad::default(), None)
            }
            NttKind::Inverse => {
                self.bitrev(gpu, data, None)?;
                self.stages(gpu, data, true, false, None, FirstLoad::default(), None)?;
                self.scale_const(gpu, data, n_inv(self.lg))
            }
            NttKind::CosetForward => {
                self.bitrev(gpu, data, Some((&self.coset, true)))?;
                self.stages(gpu, data, false, false, None, FirstLoad::default(), None)
            }
            NttKind::CosetInverse => {
                self.stages(gpu, data, true, true, None, FirstLoad::default(), None)?;
                self.bitrev(gpu, data, Some((&self.coset_inv, false)))
            }
        }
    }

    /// In-place bit reversal; with `scale` = (tables, by_source) each value is multiplied
    /// by c * g^i with i its index before (`by_source`) or after the permutation.
    fn bitrev(
        &self,
        gpu: &Gpu,
        data: &mut CudaSlice<u8>,
        scale: Option<(&Powers, bool)>,
    ) -> Result<(), ProveError> {
        let lg = self.lg;
        // A block per 256-element tile pair from 2^8 on, one block below (ntt.cu).
        let c = cfg(if lg >= 8 { 1 << (lg - 8) } else { 1 }, 256, 16 << 10);
        let s = gpu.stream();
        match scale {
            None => {
                // SAFETY: ntt_bitrev(Fr* d, u32 lg) as in ntt.cu; the kernel permutes the
                // 2^lg Fr of data, which the callers checked (`self.check`) holds exactly
                // 2^lg Fr, and data stays borrowed while the launch is queued on the stream.
                unsafe {
                    s.launch_builder(gpu.func("ntt_bitrev")?)
                        .arg(&mut *data)
                        .arg(&lg)
                        .launch(c)
                }
                .map_err(|e| gpu.err("ntt_bitrev", e))?;
                gpu.probe("ntt_bitrev", pass_work(lg, 0.0))
            }
            Some((p, by_source)) => {
                let (lo_bits, by_source) = (LO_BITS.min(lg), by_source as u32);
                // SAFETY: ntt_bitrev_scale(Fr* d, u32 lg, const Fr* lo, const Fr* hi, u32
                // lo_bits, u32 by_source) as in ntt.cu, arguments in that order; data holds
                // 2^lg Fr (checked by the callers) and the plan's power tables p.lo and p.hi
                // hold 2^lo_bits and 2^(lg - lo_bits) Fr, the ranges the kernel indexes.
                unsafe {
                    s.launch_builder(gpu.func("ntt_bitrev_scale")?)
                        .arg(&mut *data)
                        .arg(&lg)
                        .arg(&p.lo)
                        .arg(&p.hi)
                        .arg(&lo_bits)
                        .arg(&by_source)
                        .launch(c)
                }
                .map_err(|e| gpu.err("ntt_bitrev_scale", e))?;
                gpu.probe("ntt_bitrev_scale", pass_work(lg, 2.0))
            }
        }
    }

    /// The butterfly stages without a bit reversal: decimation in time (`dif` false) reads
    /// bit-reversed input and writes natural order; decimation in frequency reads natural
    /// order and writes bit-reversed output. The last launch reduces the values below p
    /// (the launches before it leave them below 2p). With `scale` (decimation in frequency
    /// only, whose last launch is the shared-memory kernel) that launch scales the values it
    /// stores, value number i of the output by c * g^i. The first launch's loads take
    /// `first`'s pointwise product; with `finish` (decimation in frequency, unscaled) the
    /// last launch stores H's last step instead of the values.
    #[allow(clippy::too_many_arguments)]
    fn stages(
        &self,
        gpu: &Gpu,
        data: &mut CudaSlice<u8>,
        inverse: bool,
        dif: bool,
        scale: Option<&Powers>,
        mut first: FirstLoad<'_>,
        finish: Option<Finish<'_>>,
    ) -> Result<(), ProveError> {
        let lg = self.lg;
        if lg == 0 && first.times.is_none() && scale.is_none() && finish.is_none() {
            // One element, unscaled: nothing to do.
            return Ok(());
        }
        if (scale.is_some() || finish.is_some()) && !dif {
            return Err(ProveError::Invalid(
                "a scaled or finishing transform decimates in frequency".into(),
            ));
        }
        if let Some(f) = &finish {
            if scale.is_some() {
                return Err(ProveError::Invalid("H's last step is unscaled".into()));
            }
            self.check(f.a)?;
            self.check(f.out)?;
        }
        let n = 1usize << lg;
        let inv = inverse as u32;
        let s = gpu.stream();
        // Soundness of every launch below (their SAFETY comments refer here): signatures
        // as in ntt.cu; `data` holds n Fr (`self.check` by the callers), the twiddle table
        // n/2 + 1 Fr, the scaling tables 2^lo_bits and 2^(lg - lo_bits), `first`'s and
        // `finish`'s vectors n Fr each (checked by `FirstLoad`'s constructors and above);
        // every index stays below n; each launch asks for the shared memory its kernel
        // stages (bsize Fr for the shared-memory stages, STRIDED_SMEM bytes for the
        // strided ones).
        let passes = strided_passes(lg);
        let k = passes.first().map_or(lg, |p| p.0);
        let (shared_fn, strided_fn) = if dif {
            ("ntt_shared_dif", "ntt_strided_dif")
        } else {
            ("ntt_shared_dit", "ntt_strided_dit")
        };
        let shared = |data: &mut CudaSlice<u8>,
                      k: u32,
                      last: u32,
                      first: FirstLoad<'_>,
                      mut finish: Option<Finish<'_>>| {
            let (bsize, null, lo_bits) = (1usize << k, 0u64, LO_BITS.min(lg));
            let extra = first.work(lg) + Finish::work(&finish, lg);
            let threads = (bsize >> k.min(RADIX_LG)) as u32;
            let mut b = s.launch_builder(gpu.func(shared_fn)?);
            b.arg(&mut *data)
                .arg(&self.twiddles)
                .arg(&lg)
                .arg(&k)
                .arg(&inv)
                .arg(&last);
            match scale {
                Some(p) => b.arg(&p.lo).arg(&p.hi),
                None => b.arg(&null).arg(&null),
            };
            b.arg(&lo_bits);
            first.push(&mut b);
            Finish::push(&mut finish, &mut b);
            // SAFETY: as stated at the top of this function; the n / bsize blocks each stage
            // bsize Fr of data in shared memory; a null table means no scaling.
            unsafe { b.launch(cfg(n / bsize, threads, (bsize * FR_BYTES) as u32)) }
                .map_err(|e| gpu.err("ntt_shared_stages", e))?;
            let scaled = if scale.is_some() { 2.0 } else { 0.0 };
            gpu.probe(
                "ntt_shared_stages",
                pass_work(lg, f64::from(k) / 2.0 + scaled) + extra,
            )
        };
        // The remaining stages, 3 to 6 at a time, in shared memory: after the first k stages
        // in time, before them (in reverse) in frequency.
        if !dif {
            shared(data, k, passes.is_empty() as u32, first.take(), None)?;
        }
        let order: Vec<_> = if dif {
            passes.iter().rev().collect()
        } else {
            passes.iter().collect()
        };
        for (i, &&(s0, kk)) in order.iter().enumerate() {
            let last = (!dif && i + 1 == order.len()) as u32;
            let e = 1usize << BLOCK_LG;
            let first = first.take();
            let extra = first.work(lg);
            let mut b = s.launch_builder(gpu.func(strided_fn)?);
            b.arg(&mut *data)
                .arg(&self.twiddles)
                .arg(&lg)
                .arg(&s0)
                .arg(&kk)
                .arg(&inv)
                .arg(&last);
            first.push(&mut b);
            // SAFETY: as stated at the top of this function: the n / 2^BLOCK_LG blocks each
            // take 2^BLOCK_LG indices of data below n, reading the n/2 + 1 twiddles.
            unsafe { b.launch(cfg(n / e, THREADS, STRIDED_SMEM as u32)) }
                .map_err(|e| gpu.err("ntt_strided_stages", e))?;
            gpu.probe(
                "ntt_strided_stages",
                pass_work(lg, f64::from(kk) / 2.0) + extra,
            )?;
        }
        if dif {
            shared(data, k, 1, first.take(), finish)?;
        }
        Ok(())
    }

    /// data[p] *= c * g^i from the tables of `p`: i = p, or the bit reversal of p when the
    /// data is in bit-reversed order (`brev`).
    fn scale(
        &self,
        gpu: &Gpu,
        data: &mut CudaSlice<u8>,
        p: &Powers,
        brev: bool,
    ) -> Result<(), ProveError> {
        let n = 1usize << self.lg;
        let (n32, lo_bits) = (n as u32, LO_BITS.min(self.lg));
        let brev_lg = if brev { self.lg } else { 0 };
        // SAFETY: signature (Fr*, u32, const Fr*, const Fr*, u32); data holds n Fr, the
        // tables 2^lo_bits and 2^(lg - lo_bits).
        unsafe {
            gpu.stream()
                .launch_builder(gpu.func("ntt_scale_table")?)
                .arg(&mut *data)
                .arg(&n32)
                .arg(&p.lo)
                .arg(&p.hi)
                .arg(&lo_bits)
                .arg(&brev_lg)
                .launch(cfg(blocks(n, 256).min(132 * 32), 256, 0))
        }
        .map_err(|e| gpu.err("ntt_scale_table", e))?;
        gpu.probe("ntt_scale", pass_work(self.lg, 2.0))
    }

    /// data[i] *= c.
    fn scale_const(&self, gpu: &Gpu, data: &mut CudaSlice<u8>, c: Fr) -> Result<(), ProveError> {
        let n = 1usize << self.lg;
        let (n32, c) = (n as u32, DevFr::from(c));
        // SAFETY: signature (Fr*, u32, Fr); data holds n Fr.
        unsafe {
            gpu.stream()
                .launch_builder(gpu.func("ntt_scale_const")?)
                .arg(&mut *data)
                .arg(&n32)
                .arg(&c)
                .launch(cfg(blocks(n, 256).min(132 * 32), 256, 0))
        }
        .map_err(|e| gpu.err("ntt_scale_const", e))?;
        gpu.probe("ntt_scale", pass_work(self.lg, 1.0))
    }
}

/// Work of one pass over 2^lg Fr (read and written once) with `per` Fr products per
/// element: a butterfly stage is half a product per element, a scaling by a table entry
/// (its low and high parts) two.
fn pass_work(lg: u32, per: f64) -> Work {
    let n = (1u64 << lg) as f64;
    Work::fr(per * n).and_bytes(2.0 * n * FR_BYTES as f64)
}

/// Work of a pointwise pass over 2^lg elements: `per` Fr products and `vectors` vectors of
/// 2^lg Fr read or written.
fn pointwise_work(lg: u32, per: f64, vectors: f64) -> Work {
    let n = (1u64 << lg) as f64;
    Work::fr(per * n).and_bytes(vectors * n * FR_BYTES as f64)
}

/// The strided passes (s0, k) of a 2^lg transform: stages s0 .. s0+k-1 each, in order,
/// above the shared-memory kernel's stages 0 .. s0-1 of the first. The shared kernel takes
/// min(lg, BLOCK_LG) stages, or lg - RADIX_LG when fewer would be left (ntt.cu wants k >=
/// RADIX_LG in a strided pass); the rest goes in as few passes of at most STRIDED_LG stages
/// as possible, balanced (2^27: 10 + 6, 6, 5; 2^23: 10 + 5, 4, 4; 2^11: 8 + 3).
fn strided_passes(lg: u32) -> Vec<(u32, u32)> {
    let mut s0 = lg.min(BLOCK_LG);
    if lg > s0 && lg - s0 < RADIX_LG {
        s0 = lg - RADIX_LG;
    }
    let mut left = (lg - s0).div_ceil(STRIDED_LG);
    let mut out = Vec::new();
    while s0 < lg {
        let k = (lg - s0).div_ceil(left);
        out.push((s0, k));
        s0 += k;
        left -= 1;
    }
    out
}

fn n_inv(lg: u32) -> Fr {
    Fr::from(1u64 << lg).invert().unwrap_or(Fr::ONE)
}

/// Uploads `v` into a new zero-padded device vector of 2^lg Fr.
pub fn upload_padded(gpu: &Gpu, v: &[Fr], lg: u32) -> Result<CudaSlice<u8>, ProveError> {
    let n = 1usize << lg;
    if v.len() > n {
        return Err(ProveError::Invalid(format!(
            "{} values for a domain of 2^{lg}",
            v.len()
        )));
    }
    let mut d = gpu.zeros::<u8>(n * FR_BYTES)?;
    if !v.is_empty() {
        let bytes = crate::field::bytes_of(v);
        let mut head = d.slice_mut(0..bytes.len());
        gpu.stream()
            .memcpy_htod(bytes, &mut head)
            .map_err(|e| gpu.err("upload", e))?;
    }
    Ok(d)
}

/// Device bytes needed by [`compute_h`] for a domain of 2^lg.
pub fn h_bytes(lg: u32) -> usize {
    (3 * (1usize << lg) + (1usize << lg) / 2 + 1) * FR_BYTES
}

/// H = (a*b - c) / Z as bellperson computes it for a satisfying witness (c = a*b on the
/// domain, formed on the device): returns the device vector of 2^lg Fr whose first
/// 2^lg - 1 entries are h's coefficients.
pub fn compute_h(gpu: &Gpu, a: &[Fr], b: &[Fr]) -> Result<CudaSlice<u8>, ProveError> {
    let len = a.len().max(b.len()).max(1);
    let lg = len.next_power_of_two().trailing_zeros();
    let plan = NttPlan::new(gpu, lg)?;
    let mut da = upload_padded(gpu, a, lg)?;
    let mut db = upload_padded(gpu, b, lg)?;
    let mut dc = gpu.zeros::<u8>((1usize << lg) * FR_BYTES)?;
    compute_h_in_place(gpu, &plan, [&mut da, &mut db, &mut dc])?;
    Ok(da)
}

/// H on device-resident, zero-padded a and b of 2^lg Fr each, in six transforms: afterwards
/// `a` holds h's coefficients and `b`, `c` hold scratch (c's contents are not read; the last
/// step writes h into b's buffer, and a and b trade buffers). Queued on the compute stream.
///
/// Every constraint of a satisfying witness has c = a*b, so the C evaluations are formed on
/// the device instead of staged. With Z = g^n - 1 on the coset and the inverse coset
/// transform undoing the coset transform of c,
/// `h = coset_inverse(coset(a) * coset(b)) / Z - inverse(c) / Z`: a and b go to the coset
/// (two transforms each), their product comes back (one), c takes one inverse transform
/// (against three for c's round trip through the coset). No pass runs besides the six
/// transforms: the pointwise products ride on their first loads (`FirstLoad`: c = a*b on
/// a's first, the coset product on its inverse's), the scaling by g^-i / (n Z) on that
/// inverse's last store, and h's subtraction and bit reversal on the last store of c's
/// inverse (`Finish`). For a witness that does not satisfy its constraints this is not
/// bellperson's h (the proof does not verify either way).
pub fn compute_h_in_place(
    gpu: &Gpu,
    plan: &NttPlan,
    [da, db, dc]: [&mut CudaSlice<u8>; 3],
) -> Result<(), ProveError> {
    for d in [&*da, &*db, &*dc] {
        plan.check(d)?;
    }
    // c = a*b (the C evaluations) on the first load of a's inverse transform; a and b go
    // to the coset; their product (on the first load of its inverse transform) comes back
    // scaled by g^-i / (n Z), and c comes back: h = that - c / (n Z), written by the last
    // launch of c's inverse transform (both transforms leave bit-reversed order; the last
    // store writes h in natural order into b's buffer).
    plan.to_coset_after(gpu, da, FirstLoad::product_into(plan, db, dc)?)?;
    plan.to_coset(gpu, db)?;
    let first = FirstLoad::times(plan, db)?;
    plan.stages(gpu, da, true, true, Some(&plan.h_scale), first, None)?;
    let finish = Finish {
        a: da,
        out: db,
        k: DevFr::from(plan.h_c),
    };
    plan.stages(
        gpu,
        dc,
        true,
        true,
        None,
        FirstLoad::default(),
        Some(finish),
    )?;
    // h is in b's buffer: the callers find it in a.
    std::mem::swap(da, db);
    Ok(())
}

/// 1 / Z on the coset g H of 2^lg elements, where Z(x) = x^n - 1 is the constant g^n - 1.
fn coset_z_inv(lg: u32) -> Fr {
    (Fr::MULTIPLICATIVE_GENERATOR.pow_vartime([1u64 << lg]) - Fr::ONE)
        .invert()
        .unwrap_or(Fr::ZERO)
}
