//! Range checks of a request's numbers and sizes against its registered proof, made before
//! anything is allocated or computed from them.
//!
//! A request may only make the prover allocate memory in proportion to its own bytes (plus
//! the fixed size of its circuit): every count is checked against what the registered
//! proof allows, every index against the range the chain allows, every vanilla proof's
//! length against a per-proof limit. [`check_body`] runs first in
//! [`crate::ProofRequest::new`], so the daemon (before queueing) and the client (before
//! sending) refuse the same requests with the same typed errors. The decoded PoSt vanilla
//! proofs' shapes are checked next to their decoding (`circuits::post`), before
//! filecoin-proofs pads them to a whole partition.

use filecoin_proofs::SectorUpdateConfig;
use filecoin_proofs_api::seal::VanillaSealProof;

use crate::error::FilecoinError;
use crate::json::MAX_VANILLA_PROOF_BYTES;
use crate::request::RequestBody;

/// Partitions a WindowPoSt deadline may have (the chain's `MAX_PARTITIONS_PER_DEADLINE`):
/// a WindowPoSt `partition_index` is below it.
pub const MAX_WINDOW_POST_PARTITIONS: u32 = 3000;

/// The largest sector number the chain assigns (`abi.MaxSectorNumber`, 2^63 - 1).
pub const MAX_SECTOR_NUMBER: u64 = i64::MAX as u64;

fn count_err(got: usize, expected: String) -> FilecoinError {
    FilecoinError::WrongVanillaProofCount { got, expected }
}

/// Each vanilla proof of a PoSt or SnapDeals request is at most
/// [`MAX_VANILLA_PROOF_BYTES`] long.
fn check_vanilla_lengths(proofs: &[Vec<u8>]) -> Result<(), FilecoinError> {
    match proofs
        .iter()
        .position(|p| p.len() > MAX_VANILLA_PROOF_BYTES)
    {
        Some(i) => Err(FilecoinError::InputTooLarge {
            what: "a vanilla proof",
            size: proofs[i].len(),
            limit: MAX_VANILLA_PROOF_BYTES,
        }),
        None => Ok(()),
    }
}

/// The partition and per-partition challenge counts of a C1 output's vanilla proofs.
fn seal_vanilla_counts(v: &VanillaSealProof) -> (usize, Option<usize>) {
    fn counts<T>(p: &[Vec<T>]) -> (usize, Option<usize>) {
        let odd = p.iter().map(Vec::len).find(|&n| n != p[0].len());
        (p.len(), odd.or_else(|| p.first().map(Vec::len)))
    }
    match v {
        VanillaSealProof::StackedDrg2KiBV1(p) => counts(p),
        VanillaSealProof::StackedDrg8MiBV1(p) => counts(p),
        VanillaSealProof::StackedDrg512MiBV1(p) => counts(p),
        VanillaSealProof::StackedDrg32GiBV1(p) => counts(p),
        VanillaSealProof::StackedDrg64GiBV1(p) => counts(p),
    }
}

/// Checks every number and size of `body` against its registered proof (see the module
/// documentation). Cheap: nothing is decoded or verified.
pub fn check_body(body: &RequestBody) -> Result<(), FilecoinError> {
    match body {
        RequestBody::PoRep {
            c1, sector_number, ..
        } => {
            if *sector_number > MAX_SECTOR_NUMBER {
                return Err(FilecoinError::InvalidRequest(format!(
                    "sector number {sector_number} is over the chain's limit {MAX_SECTOR_NUMBER}"
                )));
            }
            let config = c1.registered_proof.as_v1_config();
            let partitions = usize::from(config.partitions);
            let (got, per_partition) = seal_vanilla_counts(&c1.vanilla_proofs);
            if got != partitions {
                return Err(count_err(got, format!("{partitions} partitions")));
            }
            let setup =
                filecoin_proofs::parameters::setup_params(&config).map_err(FilecoinError::fp)?;
            let challenges = setup.challenges.num_challenges_per_partition();
            match per_partition {
                Some(n) if n != challenges => Err(count_err(
                    n,
                    format!("{challenges} challenge proofs per partition"),
                )),
                _ => Ok(()),
            }
        }
        RequestBody::WinningPoSt {
            registered,
            vanilla_proofs,
            ..
        } => {
            let sectors = registered.as_v1_config().sector_count;
            if vanilla_proofs.len() != sectors {
                return Err(count_err(vanilla_proofs.len(), sectors.to_string()));
            }
            check_vanilla_lengths(vanilla_proofs)
        }
        RequestBody::WindowPoSt {
            registered,
            partition_index,
            vanilla_proofs,
            ..
        } => {
            let sectors = registered.as_v1_config().sector_count;
            if vanilla_proofs.is_empty() || vanilla_proofs.len() > sectors {
                return Err(count_err(vanilla_proofs.len(), format!("1..={sectors}")));
            }
            if *partition_index >= MAX_WINDOW_POST_PARTITIONS {
                return Err(FilecoinError::InvalidRequest(format!(
                    "partition_index {partition_index} is out of range: a deadline has at most \
                     {MAX_WINDOW_POST_PARTITIONS} partitions"
                )));
            }
            check_vanilla_lengths(vanilla_proofs)
        }
        RequestBody::SnapDeals {
            registered,
            vanilla_proofs,
            ..
        } => {
            let partitions = usize::from(
                SectorUpdateConfig::from_porep_config(&registered.as_v1_config()).update_partitions,
            );
            if vanilla_proofs.len() != partitions {
                return Err(count_err(vanilla_proofs.len(), partitions.to_string()));
            }
            check_vanilla_lengths(vanilla_proofs)
        }
    }
}
