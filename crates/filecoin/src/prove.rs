//! From a request to verified proof bytes with any backend.

use std::time::Instant;

use filprove_groth16::{Backend, ProofInput, Randomness, Srs};
use rand_core::RngCore;

use crate::error::FilecoinError;
use crate::request::ProofRequest;

/// Proves `req` with `backend` against `srs`: synthesizes all partitions in parallel (all
/// witnesses are held at once: about 16 GiB per 32 GiB PoRep partition; the engine pipelines
/// partitions itself with [`ProofRequest::synthesize`]), proves them, checks each partition proof against `srs`'s verifying key, assembles the bytes
/// filecoin-proofs-api would return and verifies them with filecoin-proofs' own verifier
/// (the `.vk` in the parameter cache). Returns [`FilecoinError::VerificationFailed`] rather
/// than a proof that does not verify.
pub fn prove(
    req: &ProofRequest,
    backend: &dyn Backend,
    srs: &Srs,
    rng: &mut impl RngCore,
) -> Result<Vec<u8>, FilecoinError> {
    let randomness: Vec<Randomness> = (0..req.num_partitions())
        .map(|_| Randomness::random(&mut *rng))
        .collect();
    prove_with_randomness(req, backend, srs, &randomness)
}

/// [`prove`] with given blinding factors, one per partition (deterministic; for tests and
/// cross-backend comparisons).
pub fn prove_with_randomness(
    req: &ProofRequest,
    backend: &dyn Backend,
    srs: &Srs,
    randomness: &[Randomness],
) -> Result<Vec<u8>, FilecoinError> {
    if randomness.len() != req.num_partitions() {
        return Err(FilecoinError::InvalidRequest(format!(
            "{} randomness values for {} partitions",
            randomness.len(),
            req.num_partitions()
        )));
    }
    let t = Instant::now();
    let partitions = req.synthesize_all()?;
    let synth = t.elapsed();
    let inputs: Vec<ProofInput<'_>> = partitions
        .iter()
        .zip(randomness)
        .map(|(p, &randomness)| ProofInput {
            assignment: &p.assignment,
            randomness,
        })
        .collect();
    let t = Instant::now();
    let proofs = backend.prove(srs, &inputs)?;
    let proving = t.elapsed();
    if proofs.len() != partitions.len() {
        return Err(FilecoinError::VerificationFailed(format!(
            "backend {} returned {} proofs for {} partitions",
            backend.name(),
            proofs.len(),
            partitions.len()
        )));
    }
    for (k, (proof, part)) in proofs.iter().zip(&partitions).enumerate() {
        if !srs.vk.verify(proof, &part.public_inputs) {
            return Err(FilecoinError::VerificationFailed(format!(
                "partition {k} of {} ({}) does not verify against the parameters' verifying key (backend {})",
                req.num_partitions(),
                req.kind(),
                backend.name()
            )));
        }
    }
    drop(partitions);
    let t = Instant::now();
    let bytes = req.assemble(&proofs)?;
    if !req.verify(&bytes)? {
        return Err(FilecoinError::VerificationFailed(format!(
            "{} proof rejected by filecoin-proofs' verifier (backend {}); is the .vk in the parameter cache the one of these parameters?",
            req.kind(),
            backend.name()
        )));
    }
    log::info!(
        "{} {}: {} partition(s), synthesis {:.2?}, proving {:.2?} ({}), verification {:.2?}",
        req.kind(),
        req.circuit().short_name,
        req.num_partitions(),
        synth,
        proving,
        backend.name(),
        t.elapsed()
    );
    Ok(bytes)
}
