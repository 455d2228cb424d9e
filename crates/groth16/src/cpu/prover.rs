//! The CPU Groth16 prover: bellperson 0.27's semantics, our NTT and MSMs.
//!
//! For one assignment with `r`, `s` (the group elements are unique, so the proof is
//! byte-identical to bellperson's `create_proof` with the same `r`, `s`):
//! - `h` = coefficients `0..m-1` of `(A B - C) / Z` (see [`compute_h`]); `H = <srs.h, h>`;
//! - `L = <srs.l, aux>`;
//! - `a = <srs.a, inputs ++ aux dense in A>`, `b1 = <srs.b_g1, ...>`, `b2 = <srs.b_g2, ...>`
//!   (inputs and aux dense in B);
//! - the proof from the five sums and `r`, `s`: [`crate::assemble()`] (shared with every
//!   backend, as is the shape check before it, [`crate::check_shapes`]).

use std::time::{Duration, Instant};

use ff::{Field, PrimeField};
use rayon::prelude::*;

use super::msm::{msm_split_with, msm_with, MsmAffine, MsmEngine};
use super::ntt::{generator_inv, Domain};
use crate::assemble::{assemble, check_shapes, KeyShape, MsmResults};
use crate::backend::{Backend, ProofInput, Randomness};
use crate::density::DensityBits;
use crate::{Fr, Proof, ProveError, ProvingAssignment, Srs};

/// The CPU reference backend (and the fallback where no GPU is available).
///
/// The NTTs, the scalar classification of the split MSMs and the native MSM engine run on
/// the backend's rayon pool; the default MSM engine ([`MsmEngine::Blst`]) runs its bucket
/// method on blst's own pool (one thread per CPU). Choose [`MsmEngine::Native`] with
/// [`CpuBackend::with_msm_engine`] to keep every thread inside the configured pool.
#[derive(Debug, Default)]
pub struct CpuBackend {
    /// A dedicated pool, or `None` to run on the caller's (global) rayon pool.
    pool: Option<rayon::ThreadPool>,
    /// Engine for the full-size scalars of every MSM.
    engine: MsmEngine,
}

impl CpuBackend {
    /// A backend on `threads` dedicated worker threads, or on the global rayon pool when
    /// `None`.
    pub fn new(threads: Option<usize>) -> Result<Self, ProveError> {
        let pool = match threads {
            None => None,
            Some(0) => {
                return Err(ProveError::Invalid(
                    "cpu backend needs at least one thread".into(),
                ))
            }
            Some(t) => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .thread_name(|i| format!("filprove-cpu-{i}"))
                    .build()
                    .map_err(|e| ProveError::Unavailable {
                        backend: "cpu".into(),
                        why: e.to_string(),
                    })?,
            ),
        };
        Ok(Self {
            pool,
            engine: MsmEngine::default(),
        })
    }

    /// A backend on an existing rayon pool.
    pub fn with_pool(pool: rayon::ThreadPool) -> Self {
        Self {
            pool: Some(pool),
            engine: MsmEngine::default(),
        }
    }

    /// The same backend with another MSM engine.
    pub fn with_msm_engine(mut self, engine: MsmEngine) -> Self {
        self.engine = engine;
        self
    }

    /// The MSM engine in use.
    pub fn msm_engine(&self) -> MsmEngine {
        self.engine
    }

    fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(p) => p.install(f),
            None => f(),
        }
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> String {
        "cpu".into()
    }

    fn prove(&self, srs: &Srs, inputs: &[ProofInput<'_>]) -> Result<Vec<Proof>, ProveError> {
        if inputs.is_empty() {
            return Err(ProveError::Invalid("no assignments to prove".into()));
        }
        self.install(|| {
            inputs
                .iter()
                .map(|i| prove_one(srs, i.assignment, i.randomness))
                .collect()
        })
    }
}

/// The H polynomial's coefficients: `(A(x) B(x) - C(x)) / Z(x)` over the smallest
/// radix-2 domain holding every constraint, first `m - 1` coefficients (bellperson's
/// `execute_fft`, done with three inverse DIF / coset DIT transforms, one inverse DIF and
/// one permutation).
///
/// The C evaluations are formed here as `c_i = a_i * b_i` (the assignment holds no c;
/// the CUDA backend forms them the same way). This is exact for a satisfying witness:
/// every constraint holds, so `(A w)_i (B w)_i = (C w)_i` on each of its rows, the input
/// constraints `input_i * 0 = 0` included (b = 0 there, and so is c). The padding rows
/// beyond the constraints are 0 in a, b and c alike. So the c below is the one bellperson
/// evaluates, and H, the proof and its bytes are bellperson's. For a witness that does not
/// satisfy its constraints, `C(x)` here is not the circuit's: H is then not a quotient of
/// the circuit's polynomials and the proof fails verification, as bellperson's would.
pub fn compute_h(pa: &ProvingAssignment) -> Result<Vec<Fr>, ProveError> {
    let n = pa.a.len();
    if pa.b.len() != n {
        return Err(ProveError::ShapeMismatch {
            what: "a/b evaluation lengths",
            params: n,
            circuit: pa.b.len(),
        });
    }
    let domain = Domain::cached(super::ntt::log2_ceil(n))?;
    let m = domain.size();
    let padded = |v: &[Fr]| {
        let mut out = Vec::with_capacity(m);
        out.extend_from_slice(v);
        out.resize(m, Fr::ZERO);
        out
    };
    let g = Fr::MULTIPLICATIVE_GENERATOR;
    let to_coset = |v: &mut Vec<Fr>| -> Result<(), ProveError> {
        domain.ifft_natural_to_bitrev_unscaled(v)?;
        domain.distribute_powers_bitrev(v, g, domain.size_inv())?;
        domain.fft_bitrev_to_natural(v)
    };
    let (mut a, mut b) = (padded(&pa.a), padded(&pa.b));
    let mut c: Vec<Fr> = a
        .par_iter()
        .zip(b.par_iter())
        .map(|(a, b)| *a * b)
        .collect();
    to_coset(&mut a)?;
    to_coset(&mut b)?;
    to_coset(&mut c)?;
    let z_inv = Option::<Fr>::from(domain.z_on_coset().invert())
        .ok_or_else(|| ProveError::Invalid("vanishing polynomial is zero on the coset".into()))?;
    a.par_iter_mut()
        .zip(b.par_iter())
        .zip(c.par_iter())
        .for_each(|((a, b), c)| {
            *a = (*a * b - c) * z_inv;
        });
    drop(c);
    domain.ifft_natural_to_bitrev_unscaled(&mut a)?;
    domain.distribute_powers_bitrev(&mut a, generator_inv(), domain.size_inv())?;
    // Back to natural order, into b's buffer; drop the top coefficient (it is zero).
    let bits = domain.log_size();
    b.par_iter_mut()
        .enumerate()
        .for_each(|(i, out)| *out = a[super::ntt::bitrev(i, bits)]);
    drop(a);
    b.truncate(m - 1);
    Ok(b)
}

/// Per-phase wall times of one proof (phases overlap: they run concurrently).
#[derive(Clone, Copy, Debug, Default)]
pub struct PhaseTimes {
    /// H polynomial (NTTs).
    pub fft: Duration,
    /// H MSM.
    pub h_msm: Duration,
    /// L MSM.
    pub l_msm: Duration,
    /// A MSMs (inputs and aux).
    pub a_msm: Duration,
    /// B in G1.
    pub b_g1_msm: Duration,
    /// B in G2.
    pub b_g2_msm: Duration,
    /// Whole proof.
    pub total: Duration,
}

fn timed<R>(f: impl FnOnce() -> R) -> (R, Duration) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed())
}

/// Proves one assignment on the current rayon pool; returns the proof and its phase
/// times.
pub fn prove_one_timed(
    engine: MsmEngine,
    srs: &Srs,
    pa: &ProvingAssignment,
    rand: Randomness,
) -> Result<(Proof, PhaseTimes), ProveError> {
    let start = Instant::now();
    check_shapes(&srs.vk, &KeyShape::of(srs), pa)?;
    let inputs = &pa.input_assignment;
    let aux = &pa.aux_assignment;
    let n_inputs = inputs.len();
    let b_inputs = pa.b_input_density.count_ones();
    let mut t = PhaseTimes::default();

    // H (NTTs then its MSM) alongside the witness MSMs; each is parallel on its own,
    // running them together fills the threads during the serial tails.
    let ((h, l), (a, (b1, b2))) = rayon::join(
        || {
            rayon::join(
                || {
                    let (coeffs, dt) = timed(|| compute_h(pa));
                    t.fft = dt;
                    let (h, dt) = timed(|| msm_with(engine, &srs.h, &coeffs?));
                    t.h_msm = dt;
                    h
                },
                || {
                    let (l, dt) = timed(|| msm_split_with(engine, &srs.l, aux, None));
                    t.l_msm = dt;
                    l
                },
            )
        },
        || {
            rayon::join(
                || {
                    let (a, dt) =
                        timed(|| query(engine, &srs.a, n_inputs, pa, None, &pa.a_aux_density));
                    t.a_msm = dt;
                    a
                },
                || {
                    rayon::join(
                        || {
                            let (b1, dt) = timed(|| {
                                let dens = Some(&pa.b_input_density);
                                query(engine, &srs.b_g1, b_inputs, pa, dens, &pa.b_aux_density)
                            });
                            t.b_g1_msm = dt;
                            b1
                        },
                        || {
                            let (b2, dt) = timed(|| {
                                let dens = Some(&pa.b_input_density);
                                query(engine, &srs.b_g2, b_inputs, pa, dens, &pa.b_aux_density)
                            });
                            t.b_g2_msm = dt;
                            b2
                        },
                    )
                },
            )
        },
    );
    let msm = MsmResults {
        h: h?,
        l: l?,
        a: a?,
        b_g1: b1?,
        b_g2: b2?,
    };
    let proof = assemble(&srs.vk, rand, &msm);
    t.total = start.elapsed();
    Ok((proof, t))
}

/// One query (A, B_G1 or B_G2): `bases` = the `n_inputs` input points (inputs selected by
/// `input_density`, all when `None`) then the points of the aux variables set in
/// `aux_density`.
fn query<A: MsmAffine>(
    engine: MsmEngine,
    bases: &[A],
    n_inputs: usize,
    pa: &ProvingAssignment,
    input_density: Option<&DensityBits>,
    aux_density: &DensityBits,
) -> Result<A::Curve, ProveError> {
    // Shapes were checked; split_at cannot fail, but stay panic-free anyway.
    if n_inputs > bases.len() {
        return Err(ProveError::ShapeMismatch {
            what: "query inputs",
            params: bases.len(),
            circuit: n_inputs,
        });
    }
    let (bi, ba) = bases.split_at(n_inputs);
    Ok(
        msm_split_with(engine, bi, &pa.input_assignment, input_density)?
            + msm_split_with(engine, ba, &pa.aux_assignment, Some(aux_density))?,
    )
}

/// Proves one assignment on the current rayon pool with the default MSM engine, logging
/// phase times (debug level).
pub fn prove_one(srs: &Srs, pa: &ProvingAssignment, rand: Randomness) -> Result<Proof, ProveError> {
    prove_one_with(MsmEngine::default(), srs, pa, rand)
}

/// [`prove_one`] with a chosen MSM engine.
pub fn prove_one_with(
    engine: MsmEngine,
    srs: &Srs,
    pa: &ProvingAssignment,
    rand: Randomness,
) -> Result<Proof, ProveError> {
    let (proof, t) = prove_one_timed(engine, srs, pa, rand)?;
    log::debug!(
        "cpu prove ({engine:?} msm): {} constraints, {} aux: fft {:?}, h msm {:?}, l msm {:?}, a {:?}, b_g1 {:?}, b_g2 {:?}, total {:?}",
        pa.a.len(),
        pa.aux_assignment.len(),
        t.fft,
        t.h_msm,
        t.l_msm,
        t.a_msm,
        t.b_g1_msm,
        t.b_g2_msm,
        t.total
    );
    Ok(proof)
}
