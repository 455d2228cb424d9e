//! NTT driver over device-resident Fr vectors, and the H polynomial of Groth16.
//!
//! Semantics match bellperson's `EvaluationDomain`: size m = 2^lg, omega the 2^lg-th root
//! of unity derived from `Fr::ROOT_OF_UNITY`, coset generator `Fr::MULTIPLICATIVE_GENERATOR`.

use cudarc::driver::{CudaSlice, PushKernelArg};
use ff::{Field, PrimeField};
use filprove_groth16::{Fr, ProveError};

use crate::field::DevFr;
use crate::gpu::{blocks, cfg, Gpu};

/// log2 of the elements one shared-memory block transforms (`SH_LG` in ntt.cu).
const SH_LG: u32 = 10;
const FR_BYTES: usize = 32;
/// Stages per strided shared-memory pass, and groups per block (`STRIDED_G` in ntt.cu).
const STRIDED_LG: u32 = 6;
const STRIDED_G: usize = 16;

/// Whether the upper stages run as strided shared-memory passes (default) or one global
/// radix-2 pass per stage (`FILPROVE_NTT_RADIX2=1`, kept for comparison).
fn strided_enabled() -> bool {
    std::env::var("FILPROVE_NTT_RADIX2").as_deref() != Ok("1")
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

/// Twiddles for one domain size, kept on the device.
pub struct NttPlan {
    lg: u32,
    twiddles: CudaSlice<u8>,
}

impl NttPlan {
    /// Computes omega^i, i < 2^(lg-1), on the device.
    pub fn new(gpu: &Gpu, lg: u32) -> Result<Self, ProveError> {
        if lg > Fr::S {
            return Err(ProveError::Invalid(format!(
                "NTT of size 2^{lg} exceeds the field's 2^{}",
                Fr::S
            )));
        }
        let half = if lg == 0 { 1 } else { 1usize << (lg - 1) };
        let mut twiddles = gpu.alloc::<u8>(half * FR_BYTES)?;
        let w = DevFr::from(omega(lg));
        let half32 = half as u32;
        let f = gpu.func("ntt_twiddles")?;
        // SAFETY: kernel signature (Fr*, Fr, u32); the buffer holds `half` Fr.
        unsafe {
            gpu.stream()
                .launch_builder(f)
                .arg(&mut twiddles)
                .arg(&w)
                .arg(&half32)
                .launch(cfg(blocks(half.div_ceil(32), 256), 256, 0))
        }
        .map_err(|e| gpu.err("ntt_twiddles", e))?;
        Ok(Self { lg, twiddles })
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
        let n = 1usize << self.lg;
        if data.len() < n * FR_BYTES {
            return Err(ProveError::Invalid(format!(
                "NTT buffer of {} bytes for 2^{}",
                data.len(),
                self.lg
            )));
        }
        let g = Fr::MULTIPLICATIVE_GENERATOR;
        match kind {
            NttKind::Forward => self.core(gpu, data, false),
            NttKind::Inverse => {
                self.core(gpu, data, true)?;
                self.scale_powers(gpu, data, n_inv(self.lg), Fr::ONE)
            }
            NttKind::CosetForward => {
                self.scale_powers(gpu, data, Fr::ONE, g)?;
                self.core(gpu, data, false)
            }
            NttKind::CosetInverse => {
                self.core(gpu, data, true)?;
                self.scale_powers(gpu, data, n_inv(self.lg), g.invert().unwrap_or(Fr::ONE))
            }
        }
    }

    fn core(&self, gpu: &Gpu, data: &mut CudaSlice<u8>, inverse: bool) -> Result<(), ProveError> {
        let lg = self.lg;
        if lg == 0 {
            return Ok(());
        }
        let n = 1usize << lg;
        let inv = inverse as u32;
        let s = gpu.stream();
        let grid = blocks(n / 2, 256).min(132 * 32);
        // SAFETY (all launches): signatures as in ntt.cu; `data` holds n Fr, the twiddle
        // table n/2 Fr; every index stays below n.
        unsafe {
            s.launch_builder(gpu.func("ntt_bitrev")?)
                .arg(&mut *data)
                .arg(&lg)
                .launch(cfg(grid, 256, 0))
        }
        .map_err(|e| gpu.err("ntt_bitrev", e))?;
        let k = lg.min(SH_LG);
        let bsize = 1usize << k;
        let threads = (bsize / 2).clamp(1, 512) as u32;
        unsafe {
            s.launch_builder(gpu.func("ntt_shared_stages")?)
                .arg(&mut *data)
                .arg(&self.twiddles)
                .arg(&lg)
                .arg(&inv)
                .launch(cfg(n / bsize, threads, (bsize * FR_BYTES) as u32))
        }
        .map_err(|e| gpu.err("ntt_shared_stages", e))?;
        if strided_enabled() {
            // The remaining stages, up to STRIDED_LG at a time, in shared memory.
            let mut s0 = k;
            while s0 < lg {
                let kk = STRIDED_LG.min(lg - s0);
                let e = STRIDED_G << kk;
                unsafe {
                    s.launch_builder(gpu.func("ntt_strided_stages")?)
                        .arg(&mut *data)
                        .arg(&self.twiddles)
                        .arg(&lg)
                        .arg(&s0)
                        .arg(&kk)
                        .arg(&inv)
                        .launch(cfg(n / e, (e / 2) as u32, (e * FR_BYTES) as u32))
                }
                .map_err(|e| gpu.err("ntt_strided_stages", e))?;
                s0 += kk;
            }
            return Ok(());
        }
        for st in k..lg {
            unsafe {
                s.launch_builder(gpu.func("ntt_stage")?)
                    .arg(&mut *data)
                    .arg(&self.twiddles)
                    .arg(&lg)
                    .arg(&st)
                    .arg(&inv)
                    .launch(cfg(grid, 256, 0))
            }
            .map_err(|e| gpu.err("ntt_stage", e))?;
        }
        Ok(())
    }

    fn scale_powers(
        &self,
        gpu: &Gpu,
        data: &mut CudaSlice<u8>,
        c: Fr,
        g: Fr,
    ) -> Result<(), ProveError> {
        let n = 1usize << self.lg;
        let n32 = n as u32;
        let (c, g) = (DevFr::from(c), DevFr::from(g));
        // SAFETY: signature (Fr*, u32, Fr, Fr); data holds n Fr.
        unsafe {
            gpu.stream()
                .launch_builder(gpu.func("ntt_scale_powers")?)
                .arg(&mut *data)
                .arg(&n32)
                .arg(&c)
                .arg(&g)
                .launch(cfg(blocks(n.div_ceil(32), 256), 256, 0))
        }
        .map(|_| ())
        .map_err(|e| gpu.err("ntt_scale_powers", e))
    }
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

/// H = (a*b - c) / Z as bellperson computes it: returns the device vector of 2^lg Fr
/// whose first 2^lg - 1 entries are h's coefficients.
pub fn compute_h(gpu: &Gpu, a: &[Fr], b: &[Fr], c: &[Fr]) -> Result<CudaSlice<u8>, ProveError> {
    let len = a.len().max(b.len()).max(c.len()).max(1);
    let lg = len.next_power_of_two().trailing_zeros();
    let plan = NttPlan::new(gpu, lg)?;
    let mut da = upload_padded(gpu, a, lg)?;
    let mut db = upload_padded(gpu, b, lg)?;
    let mut dc = upload_padded(gpu, c, lg)?;
    compute_h_in_place(gpu, &plan, [&mut da, &mut db, &mut dc])?;
    Ok(da)
}

/// H on device-resident, zero-padded a, b, c of 2^lg Fr each: afterwards `a` holds h's
/// coefficients and `b`, `c` hold scratch. Queued on the compute stream.
pub fn compute_h_in_place(
    gpu: &Gpu,
    plan: &NttPlan,
    [da, db, dc]: [&mut CudaSlice<u8>; 3],
) -> Result<(), ProveError> {
    let lg = plan.lg();
    for d in [&mut *da, &mut *db, &mut *dc] {
        plan.run(gpu, d, NttKind::Inverse)?;
        plan.run(gpu, d, NttKind::CosetForward)?;
    }
    let n = 1usize << lg;
    // Z(x) = x^n - 1 is the constant g^n - 1 on the coset.
    let zinv = (Fr::MULTIPLICATIVE_GENERATOR.pow_vartime([n as u64]) - Fr::ONE)
        .invert()
        .unwrap_or(Fr::ZERO);
    let (n32, zinv) = (n as u32, DevFr::from(zinv));
    // SAFETY: signature (Fr*, const Fr*, const Fr*, u32, Fr); all three hold n Fr.
    unsafe {
        gpu.stream()
            .launch_builder(gpu.func("h_pointwise")?)
            .arg(&mut *da)
            .arg(&*db)
            .arg(&*dc)
            .arg(&n32)
            .arg(&zinv)
            .launch(cfg(blocks(n, 256).min(132 * 32), 256, 0))
    }
    .map_err(|e| gpu.err("h_pointwise", e))?;
    plan.run(gpu, da, NttKind::CosetInverse)
}
