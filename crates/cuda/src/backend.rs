//! [`CudaBackend`]: Groth16 proving on one GPU, bellperson-compatible (same proof bytes as
//! the CPU backend for the same r and s).
//!
//! Per proof: H = (a*b - c)/Z by NTTs on the device, then the H MSM on it; the aux witness
//! is uploaded once and the A / B scalar vectors are gathered from it on the device by the
//! density bitmaps; L, A and B (G1, G2) are split MSMs. Device memory is planned before
//! any allocation and freed when the proof is done.

use std::sync::Mutex;

use cudarc::driver::{CudaSlice, PushKernelArg};
use filprove_groth16::density::DensityBits;
use filprove_groth16::{
    Backend, Fr, G1Projective, G2Projective, Proof, ProofInput, ProveError, ProvingAssignment, Srs,
};
use group::Curve as _;

use crate::field::bytes_of;
use crate::gpu::{blocks, cfg, Gpu};
use crate::msm::{self, Curve, G1, G2};
use crate::ntt;

/// The GPU prover on one device.
pub struct CudaBackend {
    gpu: Gpu,
    // One proof at a time per device: its memory plan assumes the whole free memory.
    lock: Mutex<()>,
}

impl CudaBackend {
    /// Opens GPU `ordinal`; fails with [`ProveError::Unavailable`] (and the reason) when
    /// the build has no kernels, there is no driver or no such device.
    pub fn new(ordinal: usize) -> Result<Self, ProveError> {
        Ok(Self {
            gpu: Gpu::open(ordinal)?,
            lock: Mutex::new(()),
        })
    }

    /// The device handle (for tests and benchmarks).
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    fn prove_one(&self, srs: &Srs, input: &ProofInput<'_>) -> Result<Proof, ProveError> {
        let gpu = &self.gpu;
        let asg = input.assignment;
        let lg = check_shapes(srs, asg)?;
        let m = 1usize << lg;
        gpu.ensure_free(plan_bytes(srs, asg, lg))?;

        // H: NTTs, then the MSM over the first m - 1 coefficients, all on the device.
        let h_coeffs = ntt::compute_h(gpu, &asg.a, &asg.b, &asg.c)?;
        let h_bases = msm::upload_bases::<G1>(gpu, &srs.h[..m - 1])?;
        let h = msm::msm::<G1>(gpu, &h_bases, &h_coeffs, m - 1, false)?;
        drop((h_bases, h_coeffs));

        let aux = gpu.upload(bytes_of(&asg.aux_assignment))?;
        let l_bases = msm::upload_bases::<G1>(gpu, &srs.l)?;
        let l = msm::msm::<G1>(gpu, &l_bases, &aux, srs.l.len(), true)?;
        drop(l_bases);

        let inputs = &asg.input_assignment;
        let a_scalars = gather(
            gpu,
            &aux,
            asg.aux_assignment.len(),
            &asg.a_aux_density,
            inputs,
        )?;
        let a_bases = msm::upload_bases::<G1>(gpu, &srs.a)?;
        let a = msm::msm::<G1>(gpu, &a_bases, &a_scalars, srs.a.len(), true)?;
        drop((a_bases, a_scalars));

        let b_inputs: Vec<Fr> = asg
            .b_input_density
            .iter_ones()
            .filter_map(|i| inputs.get(i).copied())
            .collect();
        let b_scalars = gather(
            gpu,
            &aux,
            asg.aux_assignment.len(),
            &asg.b_aux_density,
            &b_inputs,
        )?;
        drop(aux);
        let b1_bases = msm::upload_bases::<G1>(gpu, &srs.b_g1)?;
        let b1 = msm::msm::<G1>(gpu, &b1_bases, &b_scalars, srs.b_g1.len(), true)?;
        drop(b1_bases);
        let b2_bases = msm::upload_bases::<G2>(gpu, &srs.b_g2)?;
        let b2 = msm::msm::<G2>(gpu, &b2_bases, &b_scalars, srs.b_g2.len(), true)?;
        drop((b2_bases, b_scalars));

        let h: G1Projective = msm::download_point::<G1>(gpu, &h)?;
        let l: G1Projective = msm::download_point::<G1>(gpu, &l)?;
        let a: G1Projective = msm::download_point::<G1>(gpu, &a)?;
        let b1: G1Projective = msm::download_point::<G1>(gpu, &b1)?;
        let b2: G2Projective = msm::download_point::<G2>(gpu, &b2)?;
        Ok(assemble(srs, input, h, l, a, b1, b2))
    }
}

/// Combines the five MSM results with the verifying key and r, s (bellperson's formulas).
pub fn assemble(
    srs: &Srs,
    input: &ProofInput<'_>,
    h: G1Projective,
    l: G1Projective,
    a: G1Projective,
    b1: G1Projective,
    b2: G2Projective,
) -> Proof {
    let vk = &srs.vk;
    let (r, s) = (input.randomness.r, input.randomness.s);
    let g_a = a + vk.alpha_g1 + vk.delta_g1 * r;
    let g_b = b2 + vk.beta_g2 + vk.delta_g2 * s;
    let b1_full = b1 + vk.beta_g1 + vk.delta_g1 * s;
    let g_c = g_a * s + b1_full * r - vk.delta_g1 * (r * s) + h + l;
    Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    }
}

/// Checks the assignment against the parameters; returns log2 of the domain.
fn check_shapes(srs: &Srs, asg: &ProvingAssignment) -> Result<u32, ProveError> {
    let mismatch = |what, params, circuit| {
        Err(ProveError::ShapeMismatch {
            what,
            params,
            circuit,
        })
    };
    let n_aux = asg.aux_assignment.len();
    let n_in = asg.input_assignment.len();
    if asg.b.len() != asg.a.len() || asg.c.len() != asg.a.len() {
        return Err(ProveError::Invalid("a, b, c have different lengths".into()));
    }
    if asg.a_aux_density.len() < n_aux
        || asg.b_aux_density.len() < n_aux
        || asg.b_input_density.len() < n_in
    {
        return Err(ProveError::Invalid(
            "density bitmaps shorter than the assignment".into(),
        ));
    }
    let lg = asg.log_domain_size();
    let m = 1usize << lg;
    if srs.h.len() < m - 1 {
        return mismatch("h (domain - 1)", srs.h.len(), m - 1);
    }
    if srs.l.len() != n_aux {
        return mismatch("l (aux variables)", srs.l.len(), n_aux);
    }
    let a_len = n_in + asg.a_aux_density.count_ones();
    if srs.a.len() != a_len {
        return mismatch("a (inputs + aux dense in A)", srs.a.len(), a_len);
    }
    let b_len = asg.b_input_density.count_ones() + asg.b_aux_density.count_ones();
    if srs.b_g1.len() != b_len {
        return mismatch("b_g1 (dense in B)", srs.b_g1.len(), b_len);
    }
    if srs.b_g2.len() != b_len {
        return mismatch("b_g2 (dense in B)", srs.b_g2.len(), b_len);
    }
    Ok(lg)
}

/// Peak device bytes of one proof (largest phase, plus slack for the allocator).
fn plan_bytes(srs: &Srs, asg: &ProvingAssignment, lg: u32) -> usize {
    let m = 1usize << lg;
    let fr = 32;
    let aux = asg.aux_assignment.len() * fr;
    let h_phase =
        ntt::h_bytes(lg).max(m * fr + (m - 1) * G1::AFFINE_BYTES + msm::scratch_bytes::<G1>(m));
    let l_phase = aux + srs.l.len() * G1::AFFINE_BYTES + msm::scratch_bytes::<G1>(srs.l.len());
    let a_phase =
        aux + srs.a.len() * (fr + G1::AFFINE_BYTES) + msm::scratch_bytes::<G1>(srs.a.len());
    let b_phase =
        srs.b_g2.len() * (fr + G2::AFFINE_BYTES) + msm::scratch_bytes::<G2>(srs.b_g2.len());
    let b1_phase =
        aux + srs.b_g1.len() * (fr + G1::AFFINE_BYTES) + msm::scratch_bytes::<G1>(srs.b_g1.len());
    let peak = h_phase.max(l_phase).max(a_phase).max(b_phase).max(b1_phase);
    peak + peak / 20 + (64 << 20)
}

/// [prefix..., aux[i] for every set bit i of `density`] as a new device vector.
pub fn gather(
    gpu: &Gpu,
    aux: &CudaSlice<u8>,
    n_aux: usize,
    density: &DensityBits,
    prefix: &[Fr],
) -> Result<CudaSlice<u8>, ProveError> {
    let count = density.count_ones();
    let total = prefix.len() + count;
    let mut out = gpu.alloc::<u8>(total.max(1) * 32)?;
    let s = gpu.stream();
    if !prefix.is_empty() {
        let mut head = out.slice_mut(0..prefix.len() * 32);
        s.memcpy_htod(bytes_of(prefix), &mut head)
            .map_err(|e| gpu.err("upload inputs", e))?;
    }
    let nbits = n_aux.min(density.len());
    if count == 0 || nbits == 0 {
        return Ok(out);
    }
    let words = gpu.upload(density.words())?;
    let nwords = words.len();
    let mut pop = gpu.alloc::<u32>(nwords)?;
    let mut pre = gpu.alloc::<u32>(nwords)?;
    let nw32 = nwords as u32;
    // SAFETY: signatures as in scalars.cu; pop/pre hold nwords u32, out holds total Fr.
    unsafe {
        s.launch_builder(gpu.func("density_popcount")?)
            .arg(&words)
            .arg(&nw32)
            .arg(&mut pop)
            .launch(cfg(blocks(nwords, 256), 256, 0))
    }
    .map_err(|e| gpu.err("density_popcount", e))?;
    msm::scan_u32(gpu, &pop, &mut pre, nwords)?;
    let nbits32 = nbits as u32;
    let mut tail = out.slice_mut(prefix.len() * 32..);
    unsafe {
        s.launch_builder(gpu.func("density_gather")?)
            .arg(aux)
            .arg(&words)
            .arg(&pre)
            .arg(&nbits32)
            .arg(&mut tail)
            .launch(cfg(blocks(nbits, 256), 256, 0))
    }
    .map_err(|e| gpu.err("density_gather", e))?;
    Ok(out)
}

impl Backend for CudaBackend {
    fn name(&self) -> String {
        self.gpu.name().to_string()
    }

    fn prove(&self, srs: &Srs, inputs: &[ProofInput<'_>]) -> Result<Vec<Proof>, ProveError> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.gpu.bind()?;
        inputs.iter().map(|i| self.prove_one(srs, i)).collect()
    }
}

// The density-gathered scalars must line up with the bases; for bits past the aux length
// (never produced by ProvingAssignment) nothing is gathered and the MSM length check fails.
#[allow(dead_code)]
fn _assert_send_sync() {
    fn f<T: Send + Sync>() {}
    f::<CudaBackend>();
}
