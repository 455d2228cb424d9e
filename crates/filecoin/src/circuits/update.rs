//! SnapDeals (empty sector update): circuits and public inputs from bincode partition proofs,
//! as `generate_empty_sector_update_proof_with_vanilla` builds them.

use std::panic::{catch_unwind, AssertUnwindSafe};

use filecoin_hashers::Domain as _;
use filecoin_proofs::{DefaultPieceDomain, MerkleTreeTrait, SectorUpdateConfig, TreeRHasher};
use filecoin_proofs_api::RegisteredUpdateProof;
use filprove_groth16::parts::{self, PartsError};
use filprove_groth16::{cancel, recycle, Fr, ProvingAssignment};
use storage_proofs_core::{
    compound_proof::CompoundProof, parameter_cache::CacheableParameters, proof::ProofScheme,
};
use storage_proofs_update::{
    constants::TreeRDomain, EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound,
    PartitionProof, PublicInputs, PublicParams,
};

use super::update_parts::{Sha256Witness, UpdateParts};
use super::{
    decode_vanilla, no_panic, synth_err, synthesize_circuit, with_tree, CircuitShape, Partition,
    SynthesisPath,
};
use crate::error::FilecoinError;

/// The inputs of one SnapDeals proof.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UpdateInputs<'a> {
    pub registered: RegisteredUpdateProof,
    pub comm_r_old: [u8; 32],
    pub comm_r_new: [u8; 32],
    pub comm_d_new: [u8; 32],
    pub vanilla_proofs: &'a [Vec<u8>],
}

fn comm(what: &'static str, bytes: &[u8; 32]) -> Result<TreeRDomain, FilecoinError> {
    if *bytes == [0; 32] {
        return Err(FilecoinError::InvalidCommitment {
            what,
            message: "all zero".into(),
        });
    }
    TreeRDomain::try_from_bytes(bytes).map_err(|e| FilecoinError::InvalidCommitment {
        what,
        message: format!("{e:#}"),
    })
}

fn public(inp: &UpdateInputs<'_>) -> Result<(PublicParams, PublicInputs), FilecoinError> {
    let config = SectorUpdateConfig::from_porep_config(&inp.registered.as_v1_config());
    let comm_d_new = DefaultPieceDomain::try_from_bytes(&inp.comm_d_new).map_err(|e| {
        FilecoinError::InvalidCommitment {
            what: "comm_d_new",
            message: format!("{e:#}"),
        }
    })?;
    let pub_inputs = PublicInputs {
        k: usize::from(config.update_partitions),
        comm_r_old: comm("comm_r_old", &inp.comm_r_old)?,
        comm_d_new,
        comm_r_new: comm("comm_r_new", &inp.comm_r_new)?,
        h: config.h,
    };
    Ok((
        PublicParams::from_sector_size(u64::from(config.sector_size)),
        pub_inputs,
    ))
}

fn decode<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    inp: &UpdateInputs<'_>,
    pub_params: &PublicParams,
) -> Result<Vec<PartitionProof<Tree>>, FilecoinError> {
    let n = inp.vanilla_proofs.len();
    if n != pub_params.partition_count {
        return Err(FilecoinError::WrongVanillaProofCount {
            got: n,
            expected: pub_params.partition_count.to_string(),
        });
    }
    inp.vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, b)| decode_vanilla(b, i))
        .collect()
}

/// Checks the commitments and the partition proofs (decode, count, vanilla verification).
pub(crate) fn validate(inp: &UpdateInputs<'_>) -> Result<(), FilecoinError> {
    fn inner<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        inp: &UpdateInputs<'_>,
    ) -> Result<(), FilecoinError> {
        let (pub_params, pub_inputs) = public(inp)?;
        let proofs = decode::<Tree>(inp, &pub_params)?;
        let ok =
            EmptySectorUpdate::<Tree>::verify_all_partitions(&pub_params, &pub_inputs, &proofs)
                .map_err(FilecoinError::fp)?;
        if !ok {
            return Err(FilecoinError::InvalidRequest(
                "the update partition proofs do not verify against the commitments".into(),
            ));
        }
        Ok(())
    }
    no_panic("update vanilla proofs", || {
        with_tree!(u64::from(inp.registered.sector_size()), inner, inp)
    })
}

/// The circuit and public inputs of partition `k`, synthesized along `path`: in order,
/// or with its challenges in parallel ([`UpdateParts`]: tree D's SHA-256 through the
/// gadgets along `Gadgets`, natively along `Twin`).
pub(crate) fn synthesize(
    inp: &UpdateInputs<'_>,
    k: usize,
    path: SynthesisPath,
) -> Result<Partition, FilecoinError> {
    with_tree!(
        u64::from(inp.registered.sector_size()),
        synthesize_inner,
        inp,
        k,
        path
    )
}

fn synthesize_inner<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    inp: &UpdateInputs<'_>,
    k: usize,
    path: SynthesisPath,
) -> Result<Partition, FilecoinError> {
    let (circuit, public_inputs) = circuit_of::<Tree>(inp, k)?;
    let assignment = match path {
        SynthesisPath::InOrder => synthesize_circuit(circuit, k)?,
        SynthesisPath::Gadgets => {
            let key = format!("update {:?}", inp.registered);
            parted(&key, k, UpdateParts::new(circuit, Sha256Witness::Gadgets))?
        }
        SynthesisPath::Twin => {
            let key = format!("update {:?} twin", inp.registered);
            parted(&key, k, UpdateParts::new(circuit, Sha256Witness::Native))?
        }
    };
    Ok(Partition {
        assignment,
        public_inputs,
    })
}

/// The upstream circuit of partition `k` (as filecoin-proofs builds it) and its public
/// inputs.
fn circuit_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    inp: &UpdateInputs<'_>,
    k: usize,
) -> Result<(EmptySectorUpdateCircuit<Tree>, Vec<Fr>), FilecoinError> {
    let (pub_params, pub_inputs) = public(inp)?;
    let n = inp.vanilla_proofs.len();
    let bytes = inp
        .vanilla_proofs
        .get(k)
        .ok_or(FilecoinError::PartitionOutOfRange {
            partition: k,
            partitions: n,
        })?;
    let vanilla: PartitionProof<Tree> = decode_vanilla(bytes, k)?;
    let circuit = no_panic("update circuit", || {
        <EmptySectorUpdateCompound<Tree> as CompoundProof<_, _>>::circuit(
            &pub_inputs,
            (),
            &vanilla,
            &pub_params,
            Some(k),
        )
        .map_err(|e| synth_err(k, e))
    })?;
    let public_inputs = public_inputs_of::<Tree>(&pub_inputs, &pub_params, k)?;
    Ok((circuit, public_inputs))
}

/// Partition `k` with its challenges in parallel; when they fail (other than by
/// cancellation) or do not fit, in order through the upstream circuit instead, logged and
/// counted ([`super::twin_fallbacks`]).
fn parted<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    key: &str,
    k: usize,
    circuit: UpdateParts<Tree>,
) -> Result<ProvingAssignment, FilecoinError> {
    let r = catch_unwind(AssertUnwindSafe(|| {
        parts::synthesize_shared_head(key, &circuit)
    }));
    let (why, shell) = match r {
        Ok(Ok(assignment)) => return Ok(assignment),
        Ok(Err(PartsError::Circuit(e))) if cancel::is_cancellation(&e) => {
            return Err(synth_err(k, e))
        }
        Ok(Err(PartsError::Misfit { why, shell })) => (format!("do not fit: {why}"), Some(*shell)),
        Ok(Err(PartsError::Circuit(e))) => (format!("failed: {e}"), None),
        Err(panic) => (super::panic_message(&panic), None),
    };
    super::porep::count_fallback();
    log::warn!("SnapDeals partition {k}: synthesized in order (its challenges {why})");
    let (r, _) = recycle::with_shell(shell, || synthesize_circuit(circuit.into_circuit(), k));
    r
}

fn public_inputs_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pub_inputs: &PublicInputs,
    pub_params: &PublicParams,
    k: usize,
) -> Result<Vec<Fr>, FilecoinError> {
    EmptySectorUpdateCompound::<Tree>::generate_public_inputs(pub_inputs, pub_params, Some(k))
        .map_err(|e| synth_err(k, e))
}

/// Public inputs of every partition.
pub(crate) fn all_public_inputs(inp: &UpdateInputs<'_>) -> Result<Vec<Vec<Fr>>, FilecoinError> {
    fn inner<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        inp: &UpdateInputs<'_>,
    ) -> Result<Vec<Vec<Fr>>, FilecoinError> {
        let (pub_params, pub_inputs) = public(inp)?;
        (0..pub_params.partition_count)
            .map(|k| public_inputs_of::<Tree>(&pub_inputs, &pub_params, k))
            .collect()
    }
    with_tree!(u64::from(inp.registered.sector_size()), inner, inp)
}

/// filecoin-proofs' `verify_empty_sector_update_proof`.
pub(crate) fn verify(inp: &UpdateInputs<'_>, proof: &[u8]) -> Result<bool, FilecoinError> {
    filecoin_proofs_api::update::verify_empty_sector_update_proof(
        inp.registered,
        proof,
        inp.comm_r_old,
        inp.comm_r_new,
        inp.comm_d_new,
    )
    .map_err(FilecoinError::fp)
}

/// The blank circuit of an update proof.
pub(crate) fn blank<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered: RegisteredUpdateProof,
) -> EmptySectorUpdateCircuit<Tree> {
    let pub_params = PublicParams::from_sector_size(u64::from(registered.sector_size()));
    <EmptySectorUpdateCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&pub_params)
}

/// Shape of an update proof's circuit.
pub(crate) fn shape(registered: RegisteredUpdateProof) -> Result<CircuitShape, FilecoinError> {
    fn inner<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        r: RegisteredUpdateProof,
    ) -> Result<CircuitShape, FilecoinError> {
        super::count_shape(blank::<Tree>(r))
    }
    with_tree!(u64::from(registered.sector_size()), inner, registered)
}

/// The circuit identifier of an update proof. (filecoin-proofs-api's
/// `RegisteredUpdateProof::circuit_identifier` returns the PoRep circuit's; the update
/// prover and verifier use this one.)
pub(crate) fn cache_id(registered: RegisteredUpdateProof) -> Result<String, FilecoinError> {
    fn inner<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        r: RegisteredUpdateProof,
    ) -> Result<String, FilecoinError> {
        let pub_params = PublicParams::from_sector_size(u64::from(r.sector_size()));
        Ok(<EmptySectorUpdateCompound<Tree> as CacheableParameters<
            EmptySectorUpdateCircuit<Tree>,
            PublicParams,
        >>::cache_identifier(&pub_params))
    }
    with_tree!(u64::from(registered.sector_size()), inner, registered)
}

#[cfg(test)]
mod tests {
    use ff::Field;
    use filecoin_proofs::SectorShapeBase as Tree;

    use super::*;
    use crate::virtual_sector::VirtualSector;

    fn circuit(sector_size: u64, k: usize) -> EmptySectorUpdateCircuit<Tree> {
        let sector = VirtualSector::new(sector_size, 31);
        let req = crate::virtual_sector::update::request(&sector).unwrap();
        circuit_of::<Tree>(&req.update_inputs().unwrap(), k)
            .unwrap()
            .0
    }

    /// A partition whose head does not fit the shape learnt for its key (an 8 MiB
    /// partition under a key learnt at 2 KiB) is synthesized in order instead, equal,
    /// counted; the key is refused at once from then on.
    #[test]
    fn a_misfit_falls_back_to_ordered_synthesis() {
        let key = "update: misfit test";
        let small = parted::<Tree>(
            key,
            0,
            UpdateParts::new(circuit(2 << 10, 0), Sha256Witness::Native),
        )
        .unwrap();
        assert!(small == synthesize_circuit(circuit(2 << 10, 0), 0).unwrap());
        assert!(parts::known_shape(key).is_some());
        let want = synthesize_circuit(circuit(8 << 20, 1), 1).unwrap();
        let before = super::super::twin_fallbacks();
        for _ in 0..2 {
            let got = parted::<Tree>(
                key,
                1,
                UpdateParts::new(circuit(8 << 20, 1), Sha256Witness::Native),
            )
            .unwrap();
            assert!(got == want, "the fallback differs from ordered synthesis");
        }
        // Other tests run alongside (none of them falls back).
        assert!(super::super::twin_fallbacks() >= before + 2);
        assert!(parts::misfits(key));
    }

    /// A challenge whose new leaf is not the encoding of its old leaf: refused by its
    /// part, then by the upstream circuit in order, a typed error (and a fallback).
    #[test]
    fn a_bad_challenge_is_a_typed_error() {
        let mut c = circuit(2 << 10, 0);
        c.priv_inputs.challenge_proofs[3].leaf_r_new = Some(Fr::ONE);
        let before = super::super::twin_fallbacks();
        let r = parted::<Tree>(
            "update: bad challenge test",
            0,
            UpdateParts::new(c, Sha256Witness::Native),
        );
        assert!(
            matches!(r, Err(FilecoinError::SynthesisFailed { partition: 0, .. })),
            "{r:?}"
        );
        assert!(super::super::twin_fallbacks() > before);
    }
}
