//! The prover interface every backend (CPU, CUDA) implements.

use std::any::Any;
use std::marker::PhantomData;
use std::time::Instant;

use crate::report::ProveReport;
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

/// What a backend prepared for one assignment before its kernel region (for the GPU:
/// host memory pinned and uploads queued on a copy stream). It borrows the assignment, so
/// it cannot outlive it; dropping it unused releases what it holds.
pub struct Staged<'a> {
    inner: Box<dyn Any + Send>,
    report: ProveReport,
    _assignment: PhantomData<&'a ProvingAssignment>,
}

impl<'a> Staged<'a> {
    /// Wraps backend-specific staging state. The state may point into `_assignment`'s
    /// memory (hence the borrow) but must not hold references.
    pub fn new(
        _assignment: &'a ProvingAssignment,
        inner: Box<dyn Any + Send>,
        report: ProveReport,
    ) -> Self {
        Self {
            inner,
            report,
            _assignment: PhantomData,
        }
    }

    /// The backend's state and what staging cost.
    pub fn into_parts(self) -> (Box<dyn Any + Send>, ProveReport) {
        (self.inner, self.report)
    }
}

/// A Groth16 prover. Backends are values chosen at run time.
pub trait Backend: Send + Sync {
    /// Short name for logs ("cpu", "cuda:0 NVIDIA H200").
    fn name(&self) -> String;

    /// Proves each input against `srs`, in order. All inputs must be of the circuit `srs`
    /// was made for.
    fn prove(&self, srs: &Srs, inputs: &[ProofInput<'_>]) -> Result<Vec<Proof>, ProveError>;

    /// Work for one assignment that can run before the kernel region: a GPU backend pins
    /// the host vectors and starts their upload on a copy stream. `None` when the backend
    /// has nothing to prepare (the default) or chose to upload inside the region (the
    /// report then says why). Never required: [`Backend::prove_staged`] accepts `None`.
    fn stage<'a>(
        &self,
        _srs: &Srs,
        _assignment: &'a ProvingAssignment,
    ) -> Result<Option<Staged<'a>>, ProveError> {
        Ok(None)
    }

    /// Proves one input, using what [`Backend::stage`] prepared for it, and reports the
    /// cost. The default proves with [`Backend::prove`] and reports one `prove` phase.
    fn prove_staged(
        &self,
        srs: &Srs,
        input: ProofInput<'_>,
        staged: Option<Staged<'_>>,
    ) -> Result<(Proof, ProveReport), ProveError> {
        let mut report = staged.map(|s| s.into_parts().1).unwrap_or_default();
        let t = Instant::now();
        let proof = self
            .prove(srs, &[input])?
            .pop()
            .ok_or_else(|| ProveError::Invalid("backend returned no proof".into()))?;
        report.add_phase("prove", t.elapsed());
        Ok((proof, report))
    }

    /// Frees what finished proofs still hold (a GPU backend: the partition's device
    /// buffers and host registrations, whose release takes host time). Callers that
    /// share a kernel lock call it after releasing the lock; the default has nothing to
    /// free.
    fn release_finished(&self) {}

    /// Drops any device copy of `srs` the backend keeps (the SRS manager evicted it).
    fn evict(&self, _srs: &Srs) {}

    /// Copies `srs`'s proving sections into the backend's own memory now, as its first proof
    /// with them would (a GPU backend: device memory), so that a preload leaves the first
    /// proof nothing to upload and the host copy can be released at once
    /// ([`Backend::hold_parameters`]). `Ok(false)` when the backend keeps no copy of its own
    /// (the CPU, the default) or has no room for one now.
    fn load_parameters(&self, _srs: &Srs) -> Result<bool, ProveError> {
        Ok(false)
    }

    /// Keeps this backend's copy of `full`'s proving sections for good (never evicted to
    /// make room; only [`Backend::evict`] drops it) and, from now on, proves with it when
    /// given `vk_only` (the same set without its sections, [`Srs::verifying_key_only`]).
    /// False, with nothing changed, when the backend needs the host's sections: the CPU
    /// (the default), or a device that does not hold the set yet. The caller releases the
    /// host's sections only when every device said true.
    fn hold_parameters(&self, _full: &Srs, _vk_only: &Srs) -> bool {
        false
    }

    /// (free, total) device memory in bytes, for status reports; `None` on the CPU.
    fn device_memory(&self) -> Option<(u64, u64)> {
        None
    }
}
