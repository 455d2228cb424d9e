//! Fast Groth16 parameter generation (for tests, CI and local networks: whoever runs it
//! knows the toxic waste).
//!
//! [`generate_parameters_with`] produces exactly the parameters bellperson's
//! `groth16::generate_parameters` produces for the same circuit and toxic waste with the
//! standard generators of G1 and G2 (byte-identical files), but faster:
//! - the R1CS is captured compactly ([`R1csAssembly`]) instead of one `Vec` per variable;
//! - the Lagrange basis at tau is computed directly with batch inversions instead of an
//!   inverse FFT;
//! - the QAP polynomials are evaluated in parallel without sorting the matrices;
//! - every point is a fixed-base multiplication of a generator ([`FixedBaseMul`]: on the
//!   CPU, [`CpuFixedBase`]'s precomputed signed window tables, mixed additions only, points
//!   normalised to affine in batches with one inversion per chunk where bellperson
//!   normalises each point with its own inversion; `filprove-cuda` has a GPU one). The
//!   `*_using` entry points take the implementation, the others use the CPU.
//!
//! What is computed (m = domain size, the next power of two of the constraint count):
//! h_i = tau^i (tau^m - 1) / delta for i < m - 1; for each variable, A/B/C polynomials at
//! tau from the Lagrange basis; a and b (G1, G2) for the variables whose A (B) value is
//! non-zero, inputs first; ic = (beta A + alpha B + C) / gamma for inputs and
//! l = (beta A + alpha B + C) / delta for aux variables (an aux variable with l = 0 is
//! unconstrained and an error, as in bellperson).

mod domain;
mod fixed_base;
mod r1cs;
mod r1cs_check;
mod r1cs_parts;

use std::time::Instant;

use bellperson::Circuit;
use ff::Field;
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;

use crate::error::ParamsError;
use crate::progress::{NoProgress, Progress, ProgressUnit};
use crate::{Fr, G1Projective, G2Projective, Srs, VerifyingKey};

pub use fixed_base::{CpuFixedBase, FixedBaseMul};
pub use r1cs::R1csAssembly;
pub use r1cs_check::{R1csCheckError, RowEvaluations};

/// The secret scalars of a Groth16 setup. Whoever knows them can forge proofs: use
/// generated parameters for tests and private networks only.
#[derive(Clone, PartialEq, Eq)]
pub struct ToxicWaste {
    /// The QAP evaluation point.
    pub tau: Fr,
    /// alpha.
    pub alpha: Fr,
    /// beta.
    pub beta: Fr,
    /// gamma (divides the ic points).
    pub gamma: Fr,
    /// delta (divides h and l).
    pub delta: Fr,
}

impl std::fmt::Debug for ToxicWaste {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToxicWaste { .. }")
    }
}

impl ToxicWaste {
    /// Draws alpha, beta, gamma, delta and tau from `rng`, in that order (the order of
    /// bellperson's `generate_random_parameters` after its random generators).
    pub fn random<R: RngCore>(rng: &mut R) -> Self {
        let alpha = Fr::random(&mut *rng);
        let beta = Fr::random(&mut *rng);
        let gamma = Fr::random(&mut *rng);
        let delta = Fr::random(&mut *rng);
        let tau = Fr::random(&mut *rng);
        Self {
            tau,
            alpha,
            beta,
            gamma,
            delta,
        }
    }
}

/// Generates parameters for `circuit` with toxic waste drawn from `rng`
/// ([`ToxicWaste::random`]), on the CPU.
pub fn generate_parameters<C: Circuit<Fr>, R: RngCore>(
    circuit: C,
    rng: &mut R,
) -> Result<Srs, ParamsError> {
    generate_parameters_with(circuit, &ToxicWaste::random(rng))
}

/// Generates parameters for `circuit` from the given toxic waste, on the CPU: the same
/// parameters as bellperson's `generate_parameters(circuit, G1::generator(),
/// G2::generator(), alpha, beta, gamma, delta, tau)`.
pub fn generate_parameters_with<C: Circuit<Fr>>(
    circuit: C,
    toxic: &ToxicWaste,
) -> Result<Srs, ParamsError> {
    generate_parameters_using(circuit, toxic, &CpuFixedBase::new())
}

/// [`generate_parameters_with`] with the fixed-base multiplications done by `fb` (the
/// result does not depend on it). The captured R1CS is freed before the multiplications.
pub fn generate_parameters_using<C: Circuit<Fr>>(
    circuit: C,
    toxic: &ToxicWaste,
    fb: &dyn FixedBaseMul,
) -> Result<Srs, ParamsError> {
    let t = Instant::now();
    let r1cs = R1csAssembly::synthesize(circuit)?;
    generate_from_captured(r1cs, t.elapsed(), toxic, fb)
}

/// Generates parameters for a captured R1CS that took `capture` to capture (logged), freeing
/// it before the fixed-base multiplications (`fb`).
pub fn generate_from_captured(
    r1cs: R1csAssembly,
    capture: std::time::Duration,
    toxic: &ToxicWaste,
    fb: &dyn FixedBaseMul,
) -> Result<Srs, ParamsError> {
    generate_from_captured_reporting(r1cs, capture, toxic, fb, &NoProgress)
}

/// [`generate_from_captured`], telling `progress` its phases: the QAP evaluation (not
/// counted), then every parameter point made (counted).
pub fn generate_from_captured_reporting(
    r1cs: R1csAssembly,
    capture: std::time::Duration,
    toxic: &ToxicWaste,
    fb: &dyn FixedBaseMul,
    progress: &dyn Progress,
) -> Result<Srs, ParamsError> {
    log::info!(
        "keygen: R1CS capture: {} constraints, {} inputs, {} aux, nnz A/B/C {:?} (not one: {:?}; {} MiB used, {} MiB held) in {:.2?}",
        r1cs.num_constraints(),
        r1cs.num_inputs(),
        r1cs.num_aux(),
        r1cs.nnz(),
        r1cs.stored_coeffs(),
        r1cs.used_bytes() >> 20,
        r1cs.heap_bytes() >> 20,
        capture
    );
    progress.phase(
        "evaluating the QAP at tau",
        None,
        ProgressUnit::Items("points"),
    );
    let scalars = QapScalars::evaluate(&r1cs, toxic)?;
    drop(r1cs);
    scalars.into_srs(toxic, fb, progress)
}

/// Generates parameters for an already captured R1CS, on the CPU (see
/// [`generate_parameters_with`]).
pub fn generate_from_r1cs(r1cs: &R1csAssembly, toxic: &ToxicWaste) -> Result<Srs, ParamsError> {
    generate_from_r1cs_using(r1cs, toxic, &CpuFixedBase::new())
}

/// [`generate_from_r1cs`] with the fixed-base multiplications done by `fb`.
pub fn generate_from_r1cs_using(
    r1cs: &R1csAssembly,
    toxic: &ToxicWaste,
    fb: &dyn FixedBaseMul,
) -> Result<Srs, ParamsError> {
    QapScalars::evaluate(r1cs, toxic)?.into_srs(toxic, fb, &NoProgress)
}

/// (beta A + alpha B + C) * inv for each variable.
fn scaled(at: &[Fr], bt: &[Fr], ct: &[Fr], toxic: &ToxicWaste, inv: Fr) -> Vec<Fr> {
    at.par_iter()
        .zip(bt.par_iter())
        .zip(ct.par_iter())
        .map(|((a, b), c)| (*a * toxic.beta + *b * toxic.alpha + c) * inv)
        .collect()
}

/// The scalars of every parameter point but h (made when needed: they are a geometric
/// sequence).
struct QapScalars {
    /// log2 of the domain.
    exp: u32,
    /// (beta A + alpha B + C) / delta per aux variable.
    l: Vec<Fr>,
    /// (beta A + alpha B + C) / gamma per input.
    ic: Vec<Fr>,
    /// The non-zero A values, inputs first.
    a: Vec<Fr>,
    /// The non-zero B values, inputs first.
    b: Vec<Fr>,
    delta_inv: Fr,
}

impl QapScalars {
    /// The QAP polynomials of every variable at tau, from the Lagrange basis.
    fn evaluate(r1cs: &R1csAssembly, toxic: &ToxicWaste) -> Result<Self, ParamsError> {
        let t0 = Instant::now();
        let gamma_inv = Option::<Fr>::from(toxic.gamma.invert())
            .ok_or_else(|| ParamsError::Generate("gamma is zero".into()))?;
        let delta_inv = Option::<Fr>::from(toxic.delta.invert())
            .ok_or_else(|| ParamsError::Generate("delta is zero".into()))?;
        let (n_in, n_aux) = (r1cs.num_inputs(), r1cs.num_aux());
        let exp = domain::log_domain(r1cs.num_constraints())?;

        let lagrange = domain::lagrange_at(toxic.tau, exp);
        let t_lagrange = t0.elapsed();
        let (at_in, at_aux) = r1cs.a.evaluate(&lagrange, n_in, n_aux);
        let (bt_in, bt_aux) = r1cs.b.evaluate(&lagrange, n_in, n_aux);
        let (ct_in, ct_aux) = r1cs.c.evaluate(&lagrange, n_in, n_aux);
        drop(lagrange);

        let l = scaled(&at_aux, &bt_aux, &ct_aux, toxic, delta_inv);
        drop(ct_aux);
        if let Some(i) = l.par_iter().position_first(|s| bool::from(s.is_zero())) {
            return Err(ParamsError::Generate(format!(
                "aux variable {i} is unconstrained (its l point would be the identity)"
            )));
        }
        let ic = scaled(&at_in, &bt_in, &ct_in, toxic, gamma_inv);
        let nonzero = |inp: &[Fr], aux: &[Fr]| -> Vec<Fr> {
            let mut v: Vec<Fr> = inp
                .iter()
                .copied()
                .filter(|s| !bool::from(s.is_zero()))
                .collect();
            v.par_extend(aux.par_iter().copied().filter(|s| !bool::from(s.is_zero())));
            v
        };
        let a = nonzero(&at_in, &at_aux);
        drop((at_in, at_aux));
        let b = nonzero(&bt_in, &bt_aux);
        drop((bt_in, bt_aux));
        log::info!(
            "keygen: Lagrange basis (2^{exp}) in {t_lagrange:.2?}, QAP at tau in {:.2?}",
            t0.elapsed() - t_lagrange
        );
        Ok(Self {
            exp,
            l,
            ic,
            a,
            b,
            delta_inv,
        })
    }

    /// Every point, through `fb`, and the verifying key.
    fn into_srs(
        self,
        toxic: &ToxicWaste,
        fb: &dyn FixedBaseMul,
        progress: &dyn Progress,
    ) -> Result<Srs, ParamsError> {
        let m = 1usize << self.exp;
        let g1_count = (m - 1) + self.l.len() + self.ic.len() + self.a.len() + self.b.len();
        let (t, g2_count) = (Instant::now(), self.b.len());
        let result = fb.prepare(g1_count, g2_count).and_then(|()| {
            log::info!(
                "keygen: fixed-base on {}: prepared for {g1_count} G1 and {g2_count} G2 points in {:.2?}",
                fb.name(),
                t.elapsed()
            );
            progress.phase(
                "parameter points",
                Some((g1_count + g2_count) as u64),
                ProgressUnit::Items("points"),
            );
            self.points(toxic, fb, progress)
        });
        fb.release();
        result
    }

    fn points(
        self,
        toxic: &ToxicWaste,
        fb: &dyn FixedBaseMul,
        progress: &dyn Progress,
    ) -> Result<Srs, ParamsError> {
        /// The points of `scalars` through `f`: a piece at a time when `progress` is shown,
        /// so that it moves (a 32 GiB PoRep's h alone is 2^27 points), else in one call
        /// (each call pays the GPU's setup and transfers: in 2^22-point pieces a 32 GiB
        /// PoRep's points took 44 s on the H200 instead of 9.6 s).
        fn timed<T>(
            what: &str,
            scalars: &[Fr],
            progress: &dyn Progress,
            f: impl Fn(&[Fr]) -> Result<Vec<T>, ParamsError>,
        ) -> Result<Vec<T>, ParamsError> {
            const PIECE: usize = 1 << 24;
            let (t, n) = (Instant::now(), scalars.len());
            let v = if progress.shown() && n > PIECE {
                let mut v = Vec::with_capacity(n);
                for piece in scalars.chunks(PIECE) {
                    v.extend(f(piece)?);
                    progress.advance(piece.len() as u64);
                }
                v
            } else {
                let v = f(scalars)?;
                progress.advance(n as u64);
                v
            };
            if v.len() != n {
                return Err(ParamsError::Generate(format!(
                    "fixed-base multiplication returned {} points for {what}, expected {n}",
                    v.len()
                )));
            }
            let dt = t.elapsed();
            log::info!(
                "keygen: {what}: {n} points in {dt:.2?} ({:.1} M points/s)",
                n as f64 / dt.as_secs_f64().max(1e-9) / 1e6
            );
            Ok(v)
        }
        let Self {
            exp,
            l,
            ic,
            a,
            b,
            delta_inv,
        } = self;
        let m = 1usize << exp;
        // h_i = tau^i t(tau) / delta.
        let mut h_scalars = vec![Fr::ZERO; m - 1];
        let t_tau = toxic.tau.pow_vartime([m as u64]) - Fr::ONE;
        domain::geometric(&mut h_scalars, t_tau * delta_inv, toxic.tau);
        let g1 = |s: &[Fr]| fb.g1(s);
        let h = timed("h (G1)", &h_scalars, progress, g1)?;
        drop(h_scalars);
        let l = timed("l (G1)", &l, progress, g1)?;
        let ic = timed("ic (G1)", &ic, progress, g1)?;
        let a = timed("a (G1)", &a, progress, g1)?;
        let b_g1 = timed("b_g1 (G1)", &b, progress, g1)?;
        let b_g2 = timed("b_g2 (G2)", &b, progress, |s| fb.g2(s))?;
        drop(b);

        let (g1, g2) = (G1Projective::generator(), G2Projective::generator());
        let vk = VerifyingKey {
            alpha_g1: (g1 * toxic.alpha).to_affine(),
            beta_g1: (g1 * toxic.beta).to_affine(),
            beta_g2: (g2 * toxic.beta).to_affine(),
            gamma_g2: (g2 * toxic.gamma).to_affine(),
            delta_g1: (g1 * toxic.delta).to_affine(),
            delta_g2: (g2 * toxic.delta).to_affine(),
            ic,
        };
        Ok(Srs {
            vk,
            h,
            l,
            a,
            b_g1,
            b_g2,
        })
    }
}
