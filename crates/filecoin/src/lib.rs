//! Filecoin proof kinds for filprove: from Curio / lotus inputs (C1 output, bincode vanilla
//! proofs) to verified proof bytes, exactly as filecoin-proofs(-api) 19.1 returns them.
//!
//! - [`kinds`]: [`ProofKind`], registered proofs and [`CircuitSpec`] (one Groth16 circuit:
//!   names, sizes, parameter file paths);
//! - [`request`]: [`ProofRequest`], validated inputs; per-partition synthesis into a
//!   [`filprove_groth16::ProvingAssignment`] plus the verifier's public inputs; assembly and
//!   verification with filecoin-proofs' own verifiers;
//! - [`bounds`]: every number and size of a request checked against its registered proof
//!   before anything is allocated from it; [`excerpt`]: the short, escaped excerpts of
//!   inputs that error messages quote;
//! - [`c1`] and [`json`]: input formats (C1 JSON and its wrapper; the request file);
//! - [`params`]: parameter directory, network manifest, parameter generation for test sizes;
//! - [`prove()`]: the whole path with any [`filprove_groth16::Backend`], verified;
//! - [`fixtures`]: seal small sectors locally and write request files for every kind;
//!   [`shared_fixtures`]: one fixture directory shared by several processes (the tests);
//! - [`native`]: native (gadget-free) twins of the SHA-256 parts of PoRep synthesis
//!   (labels, tree D inclusion);
//! - [`virtual_sector`]: valid inputs of any sector size (32 GiB and 64 GiB included)
//!   without sealing.

pub mod bounds;
pub mod c1;
pub mod circuits;
pub mod error;
pub mod excerpt;
pub mod fixtures;
pub mod json;
pub mod kinds;
pub mod native;
pub mod params;
mod prove;
pub mod request;
pub mod shared_fixtures;
pub mod virtual_sector;

pub use circuits::profile::{ConstraintProfile, FamilyCount, GadgetFamily};
pub use circuits::{twin_fallbacks, CircuitShape, Partition, SynthesisPath};
pub use error::FilecoinError;
pub use kinds::{CircuitSpec, ProofKind, RegisteredProof};
pub use params::{
    network_manifest, parameter_cache_dir, GeneratedParams, Generator, InMemoryParams,
};
pub use prove::{prove, prove_with_randomness};
pub use request::{prover_id_from_miner_id, ProofRequest, RequestBody};

pub use filecoin_proofs_api::seal::SealCommitPhase1Output;
pub use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

#[cfg(test)]
mod tests {
    /// Requests are shared between synthesis threads and the engine's workers.
    #[test]
    fn request_types_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<crate::ProofRequest>();
        check::<crate::Partition>();
        check::<crate::CircuitSpec>();
        check::<crate::FilecoinError>();
    }
}
