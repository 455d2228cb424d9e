//! Virtual sectors: valid proof inputs of any sector size, 32 GiB and 64 GiB included,
//! without sealing (docs/virtual-sectors.md).
//!
//! Sealing a 32 GiB sector takes hours and hundreds of GiB; proving needs none of it. The
//! proofs open a few hundred nodes of a sector, and their challenges do not depend on the
//! trees' contents (interactive PoRep: replica id and seed; PoSt: randomness and sector
//! ids). A virtual sector gives every node that no proof opens one default value per tree,
//! keeps the opened nodes and their paths, and draws every free value from a seeded
//! function, so that filecoin-proofs' own vanilla verifiers and the circuits accept the
//! result. [`make`] writes the same request files as [`crate::fixtures::make`].

mod porep;
mod post;
mod tree;
pub(crate) mod update;

use std::path::Path;

use filprove_groth16::progress::{NoProgress, Progress, ProgressUnit};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

use crate::error::FilecoinError;
use crate::fixtures::{FixtureSet, FIXTURE_MINER_ID, FIXTURE_SECTOR_NUMBER};
use crate::kinds::{self, ProofKind};
use crate::request::{prover_id_from_miner_id, ProofRequest};

/// One virtual sector's identity and chain randomness, all from one seed.
#[derive(Clone, Debug)]
pub(crate) struct VirtualSector {
    pub sector_size: u64,
    pub miner_id: u64,
    pub sector_number: u64,
    /// Seed of every value the proofs leave free.
    pub seed: u64,
    pub ticket: [u8; 32],
    /// The interactive-PoRep seed (chain randomness after pre-commit).
    pub seed_bytes: [u8; 32],
}

impl VirtualSector {
    pub(crate) fn new(sector_size: u64, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Self {
            sector_size,
            miner_id: FIXTURE_MINER_ID,
            sector_number: FIXTURE_SECTOR_NUMBER,
            seed,
            ticket: fr_safe(rng.gen()),
            seed_bytes: fr_safe(rng.gen()),
        }
    }

    pub(crate) fn prover_id(&self) -> [u8; 32] {
        prover_id_from_miner_id(self.miner_id)
    }

    pub(crate) fn seal_proof(
        &self,
    ) -> Result<filecoin_proofs_api::RegisteredSealProof, FilecoinError> {
        kinds::seal_proof_for_size(self.sector_size)
            .ok_or_else(|| FilecoinError::Unsupported(format!("sector size {}", self.sector_size)))
    }
}

/// 32 bytes with the top two bits cleared: a canonical field element in either hash
/// domain (as filecoin-proofs' `bytes_into_fr_repr_safe`).
pub(crate) fn fr_safe(mut bytes: [u8; 32]) -> [u8; 32] {
    bytes[31] &= 0x3f;
    bytes
}

/// The seeded function every free value comes from: SHA-256 of a tag, the seed and `words`.
pub(crate) fn prf(seed: u64, tag: &[u8], words: &[u64]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"filprove virtual sector");
    h.update((tag.len() as u64).to_le_bytes());
    h.update(tag);
    h.update(seed.to_le_bytes());
    for w in words {
        h.update(w.to_le_bytes());
    }
    h.finalize().into()
}

/// Makes the requests of `kinds` for a virtual sector of `sector_size` (any published size)
/// and writes them into `out_dir` under the names [`crate::fixtures::make`] uses
/// (`porep.request.json`, `porep-c1.json`, `porep-c1-wrapped.json`,
/// `winning-post.request.json`, `window-post.request.json`, `snap.request.json`). Every
/// request is validated (filecoin-proofs' vanilla verifiers) before it is written.
/// SnapDeals updates the virtual sector with zero data (docs/virtual-sectors.md).
pub fn make(
    out_dir: &Path,
    sector_size: u64,
    kinds: &[ProofKind],
    seed: u64,
) -> Result<FixtureSet, FilecoinError> {
    make_reporting(out_dir, sector_size, kinds, seed, &NoProgress)
}

/// [`make`], counting each request written in `progress`.
pub fn make_reporting(
    out_dir: &Path,
    sector_size: u64,
    kinds: &[ProofKind],
    seed: u64,
    progress: &dyn Progress,
) -> Result<FixtureSet, FilecoinError> {
    let sector = VirtualSector::new(sector_size, seed);
    sector.seal_proof()?;
    let mut set = FixtureSet::create(out_dir, sector_size)?;
    progress.phase(
        "writing inputs",
        Some(kinds.len() as u64),
        ProgressUnit::Items("kinds"),
    );
    for &kind in kinds {
        match kind {
            ProofKind::PoRep => {
                let c1 = porep::c1(&sector)?;
                set.put_porep(c1, sector.sector_number, sector.miner_id)?;
            }
            ProofKind::WinningPoSt | ProofKind::WindowPoSt => {
                let req: ProofRequest = post::request(&sector, kind)?;
                set.put(kind, &req)?;
            }
            ProofKind::SnapDeals => set.put(kind, &update::request(&sector)?)?,
        }
        progress.advance(1);
    }
    Ok(set)
}

/// The C1 output of a virtual sector, as JSON would carry it (for tests and benchmarks).
pub fn porep_c1(
    sector_size: u64,
    seed: u64,
) -> Result<filecoin_proofs_api::seal::SealCommitPhase1Output, FilecoinError> {
    porep::c1(&VirtualSector::new(sector_size, seed))
}
