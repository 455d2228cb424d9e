//! PoRep (seal commit phase 2): circuits and public inputs from a C1 output, as
//! `seal_commit_phase2` builds them.

use std::any::Any;
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use bellperson::SynthesisError;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{
    as_safe_commitment, parameters::setup_params, DefaultPieceDomain, DefaultPieceHasher,
    DefaultTreeHasher, MerkleTreeTrait, PoRepConfig,
};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, SealCommitPhase2Output, VanillaSealProof};
use filecoin_proofs_api::{RegisteredAggregationProof, RegisteredSealProof};
use filprove_groth16::keygen::R1csAssembly;
use filprove_groth16::parts::{self, PartsError};
use filprove_groth16::sink::GadgetCircuit;
use filprove_groth16::{cancel, recycle, Bls12, Fr, ProvingAssignment};
use rayon::prelude::*;
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::{compound_proof::CompoundProof, proof::ProofScheme};
use storage_proofs_porep::stacked::{
    self, generate_replica_id, Challenges, StackedCircuit, StackedCompound, StackedDrg,
};

use super::porep_twin::{ChallengeHashes, ChallengeWitness, Head, NativeHashes, TwinCircuit};
use super::{
    contain_panic, no_panic, synth_err, synthesize_circuit, synthesize_guarded, with_tree,
    CircuitShape, Partition, SynthesisPath,
};

/// What the twin's SHA-256 parts go through in production.
type ProductionHashes = NativeHashes;
use crate::error::FilecoinError;

type RawProof<Tree> = stacked::Proof<Tree, DefaultPieceHasher>;
type PubInputs = stacked::PublicInputs<
    <DefaultTreeHasher as Hasher>::Domain,
    <DefaultPieceHasher as Hasher>::Domain,
>;

/// The sector size a C1 output's vanilla proofs are typed for.
fn vanilla_sector_size(v: &VanillaSealProof) -> u64 {
    match v {
        VanillaSealProof::StackedDrg2KiBV1(_) => 2 << 10,
        VanillaSealProof::StackedDrg8MiBV1(_) => 8 << 20,
        VanillaSealProof::StackedDrg512MiBV1(_) => 512 << 20,
        VanillaSealProof::StackedDrg32GiBV1(_) => 32 << 30,
        VanillaSealProof::StackedDrg64GiBV1(_) => 64 << 30,
    }
}

/// Borrows the typed vanilla proofs (no copy; filecoin-proofs-api's own conversion clones).
fn raw_proofs<Tree: 'static + MerkleTreeTrait>(
    v: &VanillaSealProof,
) -> Result<&[Vec<RawProof<Tree>>], FilecoinError> {
    let any: &dyn Any = match v {
        VanillaSealProof::StackedDrg2KiBV1(p) => p,
        VanillaSealProof::StackedDrg8MiBV1(p) => p,
        VanillaSealProof::StackedDrg512MiBV1(p) => p,
        VanillaSealProof::StackedDrg32GiBV1(p) => p,
        VanillaSealProof::StackedDrg64GiBV1(p) => p,
    };
    any.downcast_ref::<Vec<Vec<RawProof<Tree>>>>()
        .map(Vec::as_slice)
        .ok_or_else(|| {
            FilecoinError::RegisteredProofMismatch(
                "vanilla proofs have the wrong tree shape".into(),
            )
        })
}

/// The PoRep config of a seal proof (for non-interactive PoRep: its own partition and
/// challenge counts, the same circuit).
fn config(registered: RegisteredSealProof) -> Result<PoRepConfig, FilecoinError> {
    Ok(registered.as_v1_config())
}

fn public_inputs(c1: &SealCommitPhase1Output) -> Result<PubInputs, FilecoinError> {
    let bad =
        |what: &'static str, message: String| FilecoinError::InvalidCommitment { what, message };
    if c1.comm_d == [0; 32] {
        return Err(bad("comm_d", "all zero".into()));
    }
    if c1.comm_r == [0; 32] {
        return Err(bad("comm_r", "all zero".into()));
    }
    if c1.seed == [0; 32] {
        return Err(bad("seed", "all zero".into()));
    }
    let comm_r =
        as_safe_commitment(&c1.comm_r, "comm_r").map_err(|e| bad("comm_r", format!("{e:#}")))?;
    let comm_d = DefaultPieceDomain::try_from_bytes(&c1.comm_d)
        .map_err(|e| bad("comm_d", format!("{e:#}")))?;
    Ok(stacked::PublicInputs {
        replica_id: c1.replica_id,
        tau: Some(stacked::Tau { comm_d, comm_r }),
        k: None,
        seed: Some(c1.seed),
    })
}

/// Checks a C1 output against the registered proof, the prover id and the sector number, and
/// verifies its vanilla proofs (cheap next to proving; catches corrupt inputs early).
pub(crate) fn validate(
    c1: &SealCommitPhase1Output,
    prover_id: &[u8; 32],
    sector_number: u64,
) -> Result<(), FilecoinError> {
    let registered = c1.registered_proof;
    config(registered)?;
    let size = u64::from(registered.sector_size());
    let got = vanilla_sector_size(&c1.vanilla_proofs);
    if got != size {
        return Err(FilecoinError::WrongSectorSize {
            registered: format!("{registered:?}"),
            expected: size,
            got,
        });
    }
    no_panic("C1 vanilla proofs", || {
        with_tree!(size, validate_inner, c1, prover_id, sector_number)
    })
}

fn validate_inner<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
    c1: &SealCommitPhase1Output,
    prover_id: &[u8; 32],
    sector_number: u64,
) -> Result<(), FilecoinError> {
    let config = config(c1.registered_proof)?;
    let proofs = raw_proofs::<Tree>(&c1.vanilla_proofs)?;
    let setup = setup_params(&config).map_err(FilecoinError::fp)?;
    let partitions = usize::from(config.partitions);
    if proofs.len() != partitions {
        return Err(FilecoinError::WrongVanillaProofCount {
            got: proofs.len(),
            expected: format!("{partitions} partitions"),
        });
    }
    let per_partition = setup.challenges.num_challenges_per_partition();
    if let Some(p) = proofs.iter().find(|p| p.len() != per_partition) {
        return Err(FilecoinError::WrongVanillaProofCount {
            got: p.len(),
            expected: format!("{per_partition} challenge proofs per partition"),
        });
    }
    let pub_inputs = public_inputs(c1)?;
    let replica_id = generate_replica_id::<DefaultTreeHasher, _>(
        prover_id,
        sector_number,
        &c1.ticket,
        c1.comm_d,
        &config.porep_id,
    );
    if replica_id != c1.replica_id {
        return Err(FilecoinError::InvalidRequest(
            "the C1 replica_id does not match the miner id, sector number and ticket".into(),
        ));
    }
    let pub_params =
        StackedDrg::<Tree, DefaultPieceHasher>::setup(&setup).map_err(FilecoinError::fp)?;
    let ok = StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(
        &pub_params,
        &pub_inputs,
        proofs,
    )
    .map_err(FilecoinError::fp)?;
    if !ok {
        return Err(FilecoinError::InvalidRequest(
            "the C1 vanilla proofs do not verify".into(),
        ));
    }
    // The vanilla verifier checks only that the data (tree D) and replica (tree R) paths
    // address the challenged node; the circuit checks their hashes. Recompute them here so
    // that a corrupt path is refused now, not after the partition's proving.
    let paths_hold = proofs
        .par_iter()
        .flatten()
        .all(|p| p.comm_d_proofs.verify() && p.comm_r_last_proof.verify());
    if !paths_hold {
        return Err(FilecoinError::InvalidRequest(
            "a C1 data or replica Merkle path does not hash to its root".into(),
        ));
    }
    Ok(())
}

/// Circuit and public inputs of partition `k`, synthesized along `path`.
pub(crate) fn synthesize(
    c1: &SealCommitPhase1Output,
    k: usize,
    path: SynthesisPath,
) -> Result<Partition, FilecoinError> {
    with_tree!(
        u64::from(c1.registered_proof.sector_size()),
        synthesize_inner,
        c1,
        k,
        path
    )
}

/// Partitions the twin could not synthesize (synthesized by the gadget path instead).
static TWIN_FALLBACKS: AtomicU64 = AtomicU64::new(0);

/// How many partitions this process meant to synthesize along [`SynthesisPath::Twin`] but
/// synthesized another way, because the fast path failed or did not fit (each is also
/// logged as a warning): PoRep and PoSt partitions the circuit twins left to the upstream
/// gadgets, SnapDeals partitions whose challenges could not run in parallel and were synthesized in
/// order. Zero in a healthy process.
pub fn twin_fallbacks() -> u64 {
    TWIN_FALLBACKS.load(Ordering::Relaxed)
}

/// Counts one partition in [`twin_fallbacks`].
pub(super) fn count_fallback() {
    TWIN_FALLBACKS.fetch_add(1, Ordering::Relaxed);
}

/// Seal proofs whose twin parts did not fit the upstream shape: the twin is not tried for
/// them again in this process (a misfit is a property of the circuit, not of the input).
pub(super) fn twin_misfits() -> &'static Mutex<HashSet<String>> {
    static SET: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    SET.get_or_init(Default::default)
}

fn synthesize_inner<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
    c1: &SealCommitPhase1Output,
    k: usize,
    path: SynthesisPath,
) -> Result<Partition, FilecoinError> {
    synthesize_partition::<Tree, ProductionHashes>(c1, k, path)
}

/// [`synthesize`], the twin's SHA-256 parts through `Hs`.
pub(super) fn synthesize_partition<Tree, Hs>(
    c1: &SealCommitPhase1Output,
    k: usize,
    path: SynthesisPath,
) -> Result<Partition, FilecoinError>
where
    Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>,
    Hs: ChallengeHashes,
{
    let config = config(c1.registered_proof)?;
    let proofs = raw_proofs::<Tree>(&c1.vanilla_proofs)?;
    let vanilla = proofs.get(k).ok_or(FilecoinError::PartitionOutOfRange {
        partition: k,
        partitions: proofs.len(),
    })?;
    let setup = setup_params(&config).map_err(FilecoinError::fp)?;
    let pub_params =
        StackedDrg::<Tree, DefaultPieceHasher>::setup(&setup).map_err(FilecoinError::fp)?;
    let pub_inputs = public_inputs(c1)?;
    // The circuit of some of the partition's challenges (all of them: the partition's).
    let circuit = |challenges: &Vec<RawProof<Tree>>| {
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::circuit(
            &pub_inputs,
            (),
            challenges,
            &pub_params,
            Some(k),
        )
    };
    // Built up front on every path: it checks that every challenge carries the same
    // comm_c and comm_r_last, which the one-challenge circuits cannot, so a corrupt input
    // is a typed error here rather than a misfit of the parts.
    let whole = circuit(vanilla).map_err(|e| synth_err(k, e))?;
    let public_inputs = StackedCompound::<Tree, DefaultPieceHasher>::generate_public_inputs(
        &pub_inputs,
        &pub_params,
        Some(k),
    )
    .map_err(|e| synth_err(k, e))?;
    let one_challenge = |j: usize| {
        circuit(&vec![vanilla[j].clone()]).map_err(|e| {
            SynthesisError::IoError(std::io::Error::other(format!(
                "the circuit of challenge {j}: {e:#}"
            )))
        })
    };
    // The challenges in parallel: the circuit of one challenge is the partition's head
    // (replica id, commitments, comm_r = H(comm_c, comm_r_last)) and that challenge's
    // proof, in the namespace "challenge_0" (docs/architecture.md, "Synthesis").
    let key = format!("porep {:?}", c1.registered_proof);
    let gadgets = |whole, shell: Option<ProvingAssignment>| {
        let (r, _) = recycle::with_shell(shell, || {
            synthesize_guarded(k, || {
                parts::synthesize_parts(&key, vanilla.len(), "challenge_0", one_challenge, || {
                    Ok(whole)
                })
            })
        });
        r
    };
    let assignment = match path {
        SynthesisPath::InOrder => synthesize_circuit(whole, k)?,
        SynthesisPath::Gadgets => gadgets(whole, None)?,
        SynthesisPath::Twin => match twin::<Tree, Hs>(&key, k, vanilla, &pub_inputs, || {
            one_challenge(0)
        }) {
            Ok(assignment) => assignment,
            Err(TwinFailure::Error(e)) => return Err(e),
            Err(TwinFailure::Fallback(why, shell)) => {
                count_fallback();
                log::warn!("PoRep partition {k}: synthesized through the upstream gadgets ({why})");
                gadgets(whole, shell.map(|s| *s))?
            }
        },
    };
    Ok(Partition {
        assignment,
        public_inputs,
    })
}

/// The values of a partition's head, as storage-proofs' compound proof takes them (the
/// commitments of trees R and C from the first challenge; the whole circuit, built first,
/// checked that every challenge carries the same).
fn twin_head<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
    pub_inputs: &PubInputs,
    first: &RawProof<Tree>,
) -> Head {
    let tau = pub_inputs.tau.as_ref();
    Head {
        replica_id: pub_inputs.replica_id.into(),
        comm_d: tau.map(|t| t.comm_d.into()).unwrap_or_default(),
        comm_r: tau.map(|t| t.comm_r.into()).unwrap_or_default(),
        comm_r_last: first.comm_r_last().into(),
        comm_c: first.comm_c().into(),
    }
}

/// Whether `twin_key`'s twin misfitted before in this process.
pub(super) fn twin_refused(twin_key: &str) -> bool {
    twin_misfits()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .contains(twin_key)
}

/// What a twin's parted synthesis of `partition` gave (its panic caught): the assignment,
/// a cancellation to return as it is, or a fallback to the gadgets (a misfit remembered
/// for `twin_key`, with the assignment being filled).
pub(super) fn twin_outcome(
    twin: std::thread::Result<Result<ProvingAssignment, PartsError>>,
    partition: usize,
    twin_key: String,
) -> Result<ProvingAssignment, TwinFailure> {
    match twin {
        Ok(Ok(assignment)) => Ok(assignment),
        Ok(Err(PartsError::Circuit(e))) if cancel::is_cancellation(&e) => {
            Err(TwinFailure::Error(FilecoinError::SynthesisFailed {
                partition,
                message: e.to_string(),
            }))
        }
        Ok(Err(PartsError::Misfit { why, shell })) => {
            twin_misfits()
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(twin_key);
            Err(TwinFailure::Fallback(
                format!("the circuit twin does not fit: {why}"),
                Some(shell),
            ))
        }
        Ok(Err(PartsError::Circuit(e))) => Err(TwinFailure::Fallback(
            format!("the circuit twin failed: {e}"),
            None,
        )),
        Err(panic) => Err(TwinFailure::Fallback(
            format!("the circuit twin {}", super::panic_message(&panic)),
            None,
        )),
    }
}

/// Why the twin did not give a partition.
pub(super) enum TwinFailure {
    /// An error to return as it is (a cancellation).
    Error(FilecoinError),
    /// The gadget path is to synthesize the partition instead: why, and the assignment
    /// to fill.
    Fallback(String, Option<Box<ProvingAssignment>>),
}

/// Partition `k` through the circuit twin: the head and each challenge's twin in parallel,
/// held to the shape of the upstream circuit of one challenge (`upstream_part_0`, which
/// gives the shape and challenge 0 when the seal proof's shape is not known yet).
fn twin<Tree, Hs>(
    key: &str,
    k: usize,
    vanilla: &[RawProof<Tree>],
    pub_inputs: &PubInputs,
    upstream_part_0: impl FnOnce() -> Result<StackedCircuit<Tree, DefaultPieceHasher>, SynthesisError>,
) -> Result<ProvingAssignment, TwinFailure>
where
    Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>,
    Hs: ChallengeHashes,
{
    // The shape is the upstream circuit's (one key for both paths); a misfit is the twin's.
    let twin_key = format!("{key} {}", std::any::type_name::<Hs>());
    if twin_refused(&twin_key) {
        let why = "the circuit twin did not fit this seal proof".to_string();
        return Err(TwinFailure::Fallback(why, None));
    }
    let first = vanilla
        .first()
        .ok_or_else(|| TwinFailure::Fallback("no challenges".into(), None))?;
    let head = twin_head(pub_inputs, first);
    let twin = catch_unwind(AssertUnwindSafe(|| {
        parts::try_synthesize_parts(
            key,
            vanilla.len(),
            "challenge_0",
            || upstream_part_0().map(GadgetCircuit),
            |j| {
                let challenge = ChallengeWitness::new(&vanilla[j])?;
                Ok(TwinCircuit::<Tree, Hs>::new(head, vec![challenge]))
            },
        )
    }));
    twin_outcome(twin, k, twin_key)
}

/// The blank circuit of a seal proof (for parameter generation and shapes).
pub(crate) fn blank<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredSealProof,
) -> Result<StackedCircuit<Tree, DefaultPieceHasher>, FilecoinError> {
    let setup = setup_params(&registered.as_v1_config()).map_err(FilecoinError::fp)?;
    let pub_params =
        StackedDrg::<Tree, DefaultPieceHasher>::setup(&setup).map_err(FilecoinError::fp)?;
    Ok(
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::blank_circuit(
            &pub_params,
        ),
    )
}

/// The R1CS of a seal proof's circuit for parameter generation: its head and first
/// challenge captured from a one-challenge blank circuit, the other challenges shifted
/// copies of the first ([`R1csAssembly::synthesize_parted`]; 18 per partition at 32 GiB).
pub(crate) fn r1cs(registered: RegisteredSealProof) -> Result<R1csAssembly, FilecoinError> {
    fn inner<Tree: 'static + MerkleTreeTrait>(
        registered: RegisteredSealProof,
    ) -> Result<R1csAssembly, FilecoinError> {
        let setup = setup_params(&registered.as_v1_config()).map_err(FilecoinError::fp)?;
        let pub_params =
            StackedDrg::<Tree, DefaultPieceHasher>::setup(&setup).map_err(FilecoinError::fp)?;
        let challenges = pub_params.challenges.num_challenges_per_partition();
        let one = stacked::PublicParams::<Tree>::new(
            pub_params.graph.clone(),
            Challenges::new_interactive(1),
            pub_params.num_layers,
        );
        let circuit =
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::blank_circuit(&one);
        Ok(R1csAssembly::synthesize_parted(
            circuit,
            challenges,
            "challenge_0",
        )?)
    }
    with_tree!(u64::from(registered.sector_size()), inner, registered)
}

/// Shape of a seal proof's circuit.
pub(crate) fn shape(registered: RegisteredSealProof) -> Result<CircuitShape, FilecoinError> {
    fn inner<Tree: 'static + MerkleTreeTrait>(
        r: RegisteredSealProof,
    ) -> Result<CircuitShape, FilecoinError> {
        super::count_shape(blank::<Tree>(r)?)
    }
    with_tree!(u64::from(registered.sector_size()), inner, registered)
}

/// filecoin-proofs' `verify_seal` (reads the `.vk` from the parameter cache).
pub(crate) fn verify(
    c1: &SealCommitPhase1Output,
    prover_id: [u8; 32],
    sector_number: u64,
    proof: &[u8],
) -> Result<bool, FilecoinError> {
    filecoin_proofs_api::seal::verify_seal(
        c1.registered_proof,
        c1.comm_r,
        c1.comm_d,
        prover_id,
        sector_number.into(),
        c1.ticket,
        c1.seed,
        proof,
    )
    .map_err(FilecoinError::fp)
}

/// How many proofs a SnarkPack aggregate of `n` partition proofs holds: filecoin-proofs
/// pads to the next power of two (at least two) by repeating the last proof.
pub(crate) fn aggregate_target_len(n: usize) -> usize {
    n.max(2).next_power_of_two()
}

/// Writes the SnarkPack SRS for `num_proofs` proofs into storage-proofs' parameter cache
/// with its own generator (`srs_key` with an rng: `setup_fake_srs`, then the cache file).
pub(crate) fn generate_aggregation_srs<R: rand_core::RngCore>(
    rng: &mut R,
    num_proofs: usize,
) -> Result<(), FilecoinError> {
    type Tree = filecoin_proofs::SectorShapeBase;
    let registered = crate::kinds::non_interactive_seal_proof_for_size(2 << 10)
        .ok_or_else(|| FilecoinError::Unsupported("no non-interactive 2 KiB seal proof".into()))?;
    let setup = setup_params(&config(registered)?).map_err(FilecoinError::fp)?;
    let pub_params =
        StackedDrg::<Tree, DefaultPieceHasher>::setup(&setup).map_err(FilecoinError::fp)?;
    contain_panic("SnarkPack SRS generation", FilecoinError::Params, || {
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::srs_key(
            Some(rng),
            &pub_params,
            num_proofs,
        )
        .map(drop)
        .map_err(|e| FilecoinError::Params(format!("SnarkPack SRS: {e:#}")))
    })
}

/// Non-interactive PoRep: the SnarkPack (V2) aggregate of the partition proofs
/// (`partition_proofs`: 192 bytes each, in partition order), exactly as `seal_commit_phase2`
/// returns it: filecoin-proofs-api's `aggregate_seal_commit_proofs` parses them as bellperson
/// proofs (against the `.vk`), pads them to a power of two, binds the transcript to comm_r
/// alone (sha256; NI challenges do not come from the seed) and aggregates them with the
/// SnarkPack SRS of the parameter cache (`v28-fil-inner-product-v1.srs`).
pub(crate) fn aggregate(
    c1: &SealCommitPhase1Output,
    partition_proofs: &[u8],
) -> Result<Vec<u8>, FilecoinError> {
    contain_panic(
        "SnarkPack aggregation",
        FilecoinError::FilecoinProofs,
        || {
            filecoin_proofs_api::seal::aggregate_seal_commit_proofs(
                c1.registered_proof,
                RegisteredAggregationProof::SnarkPackV2,
                &[c1.comm_r],
                &[c1.seed],
                &[SealCommitPhase2Output {
                    proof: partition_proofs.to_vec(),
                }],
            )
            .map_err(FilecoinError::fp)
        },
    )
}

/// Non-interactive PoRep: checks that `proof` is the canonical encoding of a SnarkPack
/// aggregate of as many proofs as this seal proof aggregates (anything else is `Ok(false)`,
/// as for a proof that does not decode), then runs `verify_seal`, which verifies the
/// aggregate against every partition's public inputs.
pub(crate) fn verify_aggregate(
    c1: &SealCommitPhase1Output,
    prover_id: [u8; 32],
    sector_number: u64,
    proof: &[u8],
) -> Result<bool, FilecoinError> {
    use bellperson::groth16::aggregate::AggregateProof;
    let expected = aggregate_target_len(usize::from(c1.registered_proof.partitions()));
    let well_formed = contain_panic("aggregate proof", FilecoinError::MalformedProof, || {
        let malformed = |e: std::io::Error| FilecoinError::MalformedProof(e.to_string());
        let agg = AggregateProof::<Bls12>::read(proof).map_err(malformed)?;
        if agg.tmipp.gipa.nproofs as usize != expected {
            return Ok(false);
        }
        let mut canonical = Vec::with_capacity(proof.len());
        agg.write(&mut canonical).map_err(malformed)?;
        Ok(canonical == proof)
    });
    if !matches!(well_formed, Ok(true)) {
        return Ok(false);
    }
    contain_panic("verify_seal", FilecoinError::FilecoinProofs, || {
        verify(c1, prover_id, sector_number, proof)
    })
}

/// Public inputs of every partition (for checking partition proofs one by one).
pub(crate) fn all_public_inputs(
    c1: &SealCommitPhase1Output,
) -> Result<Vec<Vec<Fr>>, FilecoinError> {
    fn inner<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
        c1: &SealCommitPhase1Output,
    ) -> Result<Vec<Vec<Fr>>, FilecoinError> {
        let config = config(c1.registered_proof)?;
        let setup = setup_params(&config).map_err(FilecoinError::fp)?;
        let pub_params =
            StackedDrg::<Tree, DefaultPieceHasher>::setup(&setup).map_err(FilecoinError::fp)?;
        let pub_inputs = public_inputs(c1)?;
        (0..usize::from(config.partitions))
            .map(|k| {
                StackedCompound::<Tree, DefaultPieceHasher>::generate_public_inputs(
                    &pub_inputs,
                    &pub_params,
                    Some(k),
                )
                .map_err(FilecoinError::fp)
            })
            .collect()
    }
    with_tree!(u64::from(c1.registered_proof.sector_size()), inner, c1)
}

#[cfg(test)]
mod tests {
    use bellperson::gadgets::boolean::Boolean;
    use bellperson::gadgets::num::AllocatedNum;
    use bellperson::ConstraintSystem;
    use filecoin_proofs::SectorShapeBase as Tree;
    use filprove_groth16::sink::SinkRoot;
    use storage_proofs_core::gadgets::uint64::UInt64;

    use super::super::porep_twin::{PathOptions, UpstreamHashes};
    use super::*;

    fn c1(seed: u64) -> SealCommitPhase1Output {
        crate::virtual_sector::porep_c1(2 << 10, seed).unwrap()
    }

    /// The twin of a whole partition (head and every challenge) synthesized in order,
    /// through either seam, equals storage-proofs' circuit synthesized in order.
    #[test]
    fn the_twin_in_order_equals_the_upstream_circuit() {
        let c1 = c1(5);
        let proofs = raw_proofs::<Tree>(&c1.vanilla_proofs).unwrap();
        let vanilla = &proofs[0];
        let head = twin_head(&public_inputs(&c1).unwrap(), &vanilla[0]);
        let challenges: Vec<_> = vanilla
            .iter()
            .map(ChallengeWitness::new)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(challenges.len(), 2);
        let want = synthesize(&c1, 0, SynthesisPath::InOrder).unwrap();
        let upstream = TwinCircuit::<Tree, UpstreamHashes>::new(head, challenges.clone());
        let native = TwinCircuit::<Tree, NativeHashes>::new(head, challenges);
        for (seam, got) in [
            ("upstream", filprove_groth16::sink::synthesize(upstream)),
            ("native", filprove_groth16::sink::synthesize(native)),
        ] {
            let got = got.unwrap();
            assert_eq!(got.num_constraints(), want.assignment.num_constraints());
            assert!(
                got == want.assignment,
                "the {seam} twin's assignment differs"
            );
        }
    }

    /// A seam that breaks the twin: `EXTRA` adds a constraint after each label (a twin
    /// that does not fit), otherwise tree D's inclusion fails.
    struct Broken<const EXTRA: bool>;

    impl<const EXTRA: bool> ChallengeHashes for Broken<EXTRA> {
        fn create_label<CS>(
            mut cs: CS,
            replica_id: &[Boolean],
            parents: Vec<Vec<Boolean>>,
            layer_index: u32,
            node: &UInt64,
        ) -> Result<AllocatedNum<Fr>, SynthesisError>
        where
            CS: ConstraintSystem<Fr>,
            CS::Root: SinkRoot,
        {
            let ns = cs.namespace(|| "upstream");
            let label = UpstreamHashes::create_label(ns, replica_id, parents, layer_index, node)?;
            if EXTRA {
                let v = label.get_variable();
                cs.enforce(|| "extra", |lc| lc + v, |lc| lc + CS::one(), |lc| lc + v);
            }
            Ok(label)
        }

        fn tree_d_inclusion<CS>(
            cs: CS,
            path: PathOptions,
            root: &AllocatedNum<Fr>,
            leaf: &AllocatedNum<Fr>,
        ) -> Result<(), SynthesisError>
        where
            CS: ConstraintSystem<Fr>,
            CS::Root: SinkRoot,
        {
            if !EXTRA {
                return Err(SynthesisError::Unsatisfiable);
            }
            UpstreamHashes::tree_d_inclusion(cs, path, root, leaf)
        }
    }

    /// A twin that fails or does not fit leaves the partition to the gadget path (the
    /// same assignment), counted; a misfit is remembered for the seam (refused at once
    /// the second time), a failure is not; the production twin is unaffected.
    #[test]
    fn a_broken_twin_falls_back_to_the_gadgets() {
        let c1 = c1(6);
        let want = synthesize(&c1, 0, SynthesisPath::InOrder).unwrap();
        let key = format!("porep {:?}", c1.registered_proof);
        let refused = |hs: &str| {
            let twin_key = format!("{key} {hs}");
            twin_misfits().lock().unwrap().contains(&twin_key)
        };
        let before = twin_fallbacks();
        for _ in 0..2 {
            let got = synthesize_partition::<Tree, Broken<true>>(&c1, 0, SynthesisPath::Twin);
            assert!(got.unwrap().assignment == want.assignment);
            let got = synthesize_partition::<Tree, Broken<false>>(&c1, 0, SynthesisPath::Twin);
            assert!(got.unwrap().assignment == want.assignment);
        }
        // Other tests run alongside (none of them falls back).
        assert!(twin_fallbacks() >= before + 4);
        assert!(refused(std::any::type_name::<Broken<true>>()));
        assert!(!refused(std::any::type_name::<Broken<false>>()));
        let got = synthesize(&c1, 0, SynthesisPath::Twin).unwrap();
        assert!(got.assignment == want.assignment);
        assert!(!refused(std::any::type_name::<ProductionHashes>()));
        assert!(parts::known_shape(&key).is_some());
    }
}
