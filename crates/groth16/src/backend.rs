//! The prover interface every backend (CPU, CUDA) implements.

use crate::{Fr, Proof, ProveError, ProvingAssignment, Srs};

/// The blinding factors of one proof. Random in production; fixed in tests, where
/// equal inputs must give byte-identical proofs on every backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Randomness {
    /// r (blinds A).
    pub r: Fr,
    /// s (blinds B).
    pub s: Fr,
}

impl Randomness {
    /// Fresh random r and s.
    pub fn random<R: rand_core::RngCore>(rng: &mut R) -> Self {
        use ff::Field;
        Self {
            r: Fr::random(&mut *rng),
            s: Fr::random(&mut *rng),
        }
    }
}

/// One proof to make: a finished assignment and its blinding factors.
#[derive(Clone, Copy, Debug)]
pub struct ProofInput<'a> {
    /// The captured witness (see [`ProvingAssignment::synthesize`]).
    pub assignment: &'a ProvingAssignment,
    /// r and s.
    pub randomness: Randomness,
}

/// A Groth16 prover. Backends are values chosen at run time.
pub trait Backend: Send + Sync {
    /// Short name for logs ("cpu", "cuda:0 NVIDIA H200").
    fn name(&self) -> String;

    /// Proves each input against `srs`, in order. All inputs must be of the circuit `srs`
    /// was made for.
    fn prove(&self, srs: &Srs, inputs: &[ProofInput<'_>]) -> Result<Vec<Proof>, ProveError>;
}
