//! WinningPoSt and WindowPoSt (one partition): circuits and public inputs from bincode vanilla
//! proofs, as `generate_winning_post_with_vanilla` and `generate_single_window_post_with_vanilla`
//! build them.

use std::collections::{BTreeMap, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, OnceLock};

use bellperson::groth16;
use filecoin_hashers::Hasher;
use filecoin_proofs::{
    as_safe_commitment, commitment_from_fr,
    parameters::{window_post_setup_params, winning_post_setup_params},
    partition_vanilla_proofs, single_partition_vanilla_proofs, DefaultTreeHasher,
    FallbackPoStSectorProof, MerkleTreeTrait, PoStConfig,
};
use filecoin_proofs_api::{ApiVersion, PoStType, PublicReplicaInfo, RegisteredPoStProof, SectorId};
use filprove_groth16::keygen::R1csAssembly;
use filprove_groth16::parts;
use filprove_groth16::sink::GadgetCircuit;
use filprove_groth16::{recycle, Bls12, Fr, G1Affine, G2Affine, Proof, ProvingAssignment};
use group::prime::PrimeCurveAffine;
use storage_proofs_core::{
    compound_proof::CompoundProof, merkle::MerkleProofTrait, proof::ProofScheme,
};
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector, SectorProof,
};

use super::porep::{count_fallback, twin_outcome, twin_refused, TwinFailure};
use super::post_twin::{
    SectorWitness, SectorsTwin, UpstreamInOrder, UpstreamSector, SECTOR_MARKER,
};
use super::{
    decode_vanilla, no_panic, synth_err, synthesize_circuit, with_tree, CircuitShape, Partition,
    SynthesisPath,
};
use crate::error::FilecoinError;

type Domain = <DefaultTreeHasher as Hasher>::Domain;

/// The inputs of one PoSt proof (Winning, or one Window partition).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PostInputs<'a> {
    pub registered: RegisteredPoStProof,
    pub prover_id: [u8; 32],
    pub randomness: [u8; 32],
    /// Window partition index (0 for Winning).
    pub partition_index: usize,
    pub vanilla_proofs: &'a [Vec<u8>],
}

/// Everything derived from the inputs: parameters, circuit inputs and the verifier's inputs.
struct Prepared<Tree: 'static + MerkleTreeTrait> {
    config: PoStConfig,
    pub_params: fallback::PublicParams,
    /// Public inputs as the prover builds them (its partition's sectors).
    prover_inputs: fallback::PublicInputs<Domain>,
    /// Public inputs as the verifier builds them, and the partition index to take.
    verifier_inputs: fallback::PublicInputs<Domain>,
    verifier_k: usize,
    /// The decoded vanilla proofs, in the request's order.
    proofs: Vec<FallbackPoStSectorProof<Tree>>,
    sectors: Vec<(SectorId, [u8; 32])>,
}

fn safe(what: &'static str, bytes: &[u8; 32]) -> Result<Domain, FilecoinError> {
    as_safe_commitment(bytes, what).map_err(|e| FilecoinError::InvalidCommitment {
        what,
        message: format!("{e:#}"),
    })
}

/// How [`Prepared::partition_proof`] makes the partition proof from the decoded vanilla
/// proofs.
#[derive(Clone, Copy)]
enum Vanilla {
    /// filecoin-proofs assembles the partition proof and verifies it (every path hashed up
    /// to its root): what a request's validation does ([`validate`]).
    Verify,
    /// The partition proof is assembled as filecoin-proofs assembles it, without verifying
    /// it again: for the synthesis of a request, whose vanilla proofs were verified when
    /// it was made ([`crate::ProofRequest::new`]); its public inputs and the verification
    /// of its proof need no partition proof. A 32 GiB WindowPoSt's
    /// verification hashes 234,900 Poseidon nodes: 31 % of the time of a synthesis that
    /// verified, more than the circuit twin's 22 % (docs/benchmarks.md).
    Assemble,
}

fn prepare<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
    inp: &PostInputs<'_>,
) -> Result<Prepared<Tree>, FilecoinError> {
    let config = inp.registered.as_v1_config();
    let randomness = safe("randomness", &inp.randomness)?;
    let prover_id = safe("prover_id", &inp.prover_id)?;
    let n = inp.vanilla_proofs.len();
    let proofs: Vec<FallbackPoStSectorProof<Tree>> = inp
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, b)| decode_vanilla(b, i))
        .collect::<Result<_, _>>()?;
    check_shapes(&config, &proofs)?;
    // filecoin-proofs' vanilla verifier takes comm_r_last from the inclusion proofs; the
    // circuit takes the copy in the sector proof. They must agree.
    for (i, p) in proofs.iter().enumerate() {
        let consistent = p.vanilla_proof.sectors.iter().all(|s| {
            s.inclusion_proofs
                .iter()
                .all(|ip| MerkleProofTrait::root(ip) == s.comm_r_last)
        });
        if !consistent {
            return Err(FilecoinError::BadVanillaProof {
                index: i,
                message: "comm_r_last differs from the inclusion proofs' root".into(),
            });
        }
    }
    let pub_sectors: Vec<PublicSector<Domain>> = proofs
        .iter()
        .map(|p| PublicSector {
            id: p.sector_id,
            comm_r: p.comm_r,
        })
        .collect();
    let sectors = proofs
        .iter()
        .map(|p| (p.sector_id, commitment_from_fr(p.comm_r.into())))
        .collect();
    match config.typ {
        PoStType::Winning => {
            if n != config.sector_count {
                return Err(FilecoinError::WrongVanillaProofCount {
                    got: n,
                    expected: config.sector_count.to_string(),
                });
            }
            let setup = winning_post_setup_params(&config).map_err(FilecoinError::fp)?;
            let pub_params = FallbackPoSt::<Tree>::setup(&setup).map_err(FilecoinError::fp)?;
            let prover_inputs = fallback::PublicInputs {
                randomness,
                prover_id,
                sectors: pub_sectors.clone(),
                k: None,
            };
            // The verifier lists the challenged sectors once per circuit sector slot.
            let verifier_inputs = fallback::PublicInputs {
                sectors: (0..pub_params.sector_count)
                    .flat_map(|_| pub_sectors.clone())
                    .collect(),
                ..prover_inputs.clone()
            };
            Ok(Prepared {
                config,
                pub_params,
                prover_inputs,
                verifier_inputs,
                verifier_k: 0,
                proofs,
                sectors,
            })
        }
        PoStType::Window => {
            if n == 0 || n > config.sector_count {
                return Err(FilecoinError::WrongVanillaProofCount {
                    got: n,
                    expected: format!("1..={}", config.sector_count),
                });
            }
            let setup = window_post_setup_params(&config);
            let pub_params = FallbackPoSt::<Tree>::setup(&setup).map_err(FilecoinError::fp)?;
            let prover_inputs = fallback::PublicInputs {
                randomness,
                prover_id,
                sectors: pub_sectors.clone(),
                k: Some(inp.partition_index),
            };
            // The verifier sees the whole deadline and takes this partition's chunk. From
            // V1_2 on a sector's challenges do not depend on its position in the deadline,
            // so the chunk alone as partition 0 gives the same inputs, with no memory that
            // grows with the index; before, the earlier chunks are filled with
            // placeholders (the index is bounded, crate::bounds).
            let (sectors_seen, verifier_k) = if position_matters(inp.registered) {
                let mut all =
                    vec![pub_sectors[0].clone(); inp.partition_index * pub_params.sector_count];
                all.extend(pub_sectors);
                (all, inp.partition_index)
            } else {
                (pub_sectors, 0)
            };
            let verifier_inputs = fallback::PublicInputs {
                sectors: sectors_seen,
                k: None,
                ..prover_inputs.clone()
            };
            Ok(Prepared {
                config,
                pub_params,
                prover_inputs,
                verifier_inputs,
                verifier_k,
                proofs,
                sectors,
            })
        }
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>> Prepared<Tree> {
    /// The partition proof the circuit takes: verified and assembled by filecoin-proofs, or
    /// assembled as filecoin-proofs assembles it ([`Vanilla`]).
    fn partition_proof(
        &self,
        vanilla: Vanilla,
    ) -> Result<fallback::Proof<Tree::Proof>, FilecoinError> {
        let mismatch = |e: String| {
            FilecoinError::InvalidRequest(format!("vanilla proofs: {}", crate::excerpt::clip(&e)))
        };
        let (config, pub_params, inputs) = (&self.config, &self.pub_params, &self.prover_inputs);
        match (vanilla, &config.typ) {
            (Vanilla::Verify, PoStType::Winning) => {
                partition_vanilla_proofs(config, pub_params, inputs, 1, &self.proofs)
                    .map_err(|e| mismatch(format!("{e:#}")))?
                    .pop()
                    .ok_or_else(|| mismatch("no partition".into()))
            }
            (Vanilla::Verify, PoStType::Window) => {
                single_partition_vanilla_proofs(config, pub_params, inputs, &self.proofs)
                    .map_err(|e| mismatch(format!("{e:#}")))
            }
            (Vanilla::Assemble, PoStType::Winning) => assemble_winning(pub_params, &self.proofs),
            (Vanilla::Assemble, PoStType::Window) => {
                assemble_window(pub_params, &inputs.sectors, &self.proofs)
            }
        }
    }
}

/// Whether a sector's challenges depend on its position in the deadline (API versions
/// before 1.2 derive them from the sector's index there).
fn position_matters(registered: RegisteredPoStProof) -> bool {
    registered.version() != ApiVersion::V1_2_0
}

/// Checks the decoded vanilla proofs' shapes before filecoin-proofs pads them to a whole
/// partition (copying the last sector's proof up to the partition's sector count, so an
/// oversized one would be copied thousands of times): one sector per proof, the
/// registered proof's number of challenges, each path as long as the sector's tree.
fn check_shapes<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    proofs: &[FallbackPoStSectorProof<Tree>],
) -> Result<(), FilecoinError> {
    let leaves = u64::from(config.sector_size) as usize / 32;
    for (index, p) in proofs.iter().enumerate() {
        let bad = |message: String| FilecoinError::BadVanillaProof { index, message };
        let [sector] = p.vanilla_proof.sectors.as_slice() else {
            return Err(bad(format!(
                "{} sector proofs, expected 1",
                p.vanilla_proof.sectors.len()
            )));
        };
        let n = sector.inclusion_proofs.len();
        if n != config.challenge_count {
            return Err(bad(format!(
                "{n} inclusion proofs, expected {}",
                config.challenge_count
            )));
        }
        for ip in &sector.inclusion_proofs {
            let (got, want) = (ip.path().len(), ip.expected_len(leaves));
            if got != want {
                return Err(bad(format!(
                    "an inclusion path of {got} levels, expected {want}"
                )));
            }
        }
    }
    Ok(())
}

/// `single_partition_vanilla_proofs`' WindowPoSt partition proof, without its
/// verification: per public sector (in order) the sector proofs of the first vanilla proof
/// of its id, then the last sector proof repeated up to the partition's sector count.
fn assemble_window<Tree: 'static + MerkleTreeTrait>(
    pub_params: &fallback::PublicParams,
    pub_sectors: &[PublicSector<Domain>],
    proofs: &[FallbackPoStSectorProof<Tree>],
) -> Result<fallback::Proof<Tree::Proof>, FilecoinError> {
    let mut first = HashMap::with_capacity(proofs.len());
    for (i, p) in proofs.iter().enumerate() {
        first.entry(p.sector_id).or_insert(i);
    }
    let mut sectors = Vec::with_capacity(pub_params.sector_count);
    for s in pub_sectors {
        let i = first.get(&s.id).ok_or_else(|| {
            FilecoinError::InvalidRequest(format!("vanilla proofs: no proof of sector {}", s.id))
        })?;
        sectors.extend(proofs[*i].vanilla_proof.sectors.iter().cloned());
    }
    pad_to(&mut sectors, pub_params.sector_count)?;
    Ok(fallback::Proof { sectors })
}

/// `partition_vanilla_proofs`' WinningPoSt partition proof, without its verification: the
/// one sector's inclusion proofs, each a sector proof of its own, the last repeated up to
/// the circuit's sector count.
fn assemble_winning<Tree: 'static + MerkleTreeTrait>(
    pub_params: &fallback::PublicParams,
    proofs: &[FallbackPoStSectorProof<Tree>],
) -> Result<fallback::Proof<Tree::Proof>, FilecoinError> {
    let [proof] = proofs else {
        return Err(FilecoinError::WrongVanillaProofCount {
            got: proofs.len(),
            expected: "1".into(),
        });
    };
    let [sector] = proof.vanilla_proof.sectors.as_slice() else {
        return Err(FilecoinError::BadVanillaProof {
            index: 0,
            message: format!(
                "{} sector proofs, expected 1",
                proof.vanilla_proof.sectors.len()
            ),
        });
    };
    let mut sectors: Vec<_> = sector
        .inclusion_proofs
        .iter()
        .map(|ip| SectorProof {
            inclusion_proofs: vec![ip.clone()],
            comm_c: sector.comm_c,
            comm_r_last: sector.comm_r_last,
        })
        .collect();
    pad_to(&mut sectors, pub_params.sector_count)?;
    Ok(fallback::Proof { sectors })
}

/// Repeats the last sector proof until there are `count` (as filecoin-proofs pads a
/// partition).
fn pad_to<P: Clone>(sectors: &mut Vec<P>, count: usize) -> Result<(), FilecoinError> {
    let last = sectors
        .last()
        .cloned()
        .ok_or_else(|| FilecoinError::InvalidRequest("vanilla proofs: no sector proof".into()))?;
    sectors.resize(count.max(sectors.len()), last);
    Ok(())
}

fn prepare_checked<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
    inp: &PostInputs<'_>,
) -> Result<Prepared<Tree>, FilecoinError> {
    no_panic("PoSt vanilla proofs", || prepare::<Tree>(inp))
}

/// Checks the vanilla proofs (decode, count, and filecoin-proofs' vanilla verification).
pub(crate) fn validate(inp: &PostInputs<'_>) -> Result<(), FilecoinError> {
    fn inner<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
        inp: &PostInputs<'_>,
    ) -> Result<(), FilecoinError> {
        no_panic("PoSt vanilla proofs", || {
            prepare::<Tree>(inp)?
                .partition_proof(Vanilla::Verify)
                .map(drop)
        })
    }
    with_tree!(u64::from(inp.registered.sector_size()), inner, inp)
}

/// The circuit and public inputs of the (single) partition, synthesized along `path`.
pub(crate) fn synthesize(
    inp: &PostInputs<'_>,
    path: SynthesisPath,
) -> Result<Partition, FilecoinError> {
    with_tree!(
        u64::from(inp.registered.sector_size()),
        synthesize_inner,
        inp,
        path
    )
}

fn synthesize_inner<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
    inp: &PostInputs<'_>,
    path: SynthesisPath,
) -> Result<Partition, FilecoinError> {
    let p = prepare_checked::<Tree>(inp)?;
    let partition_proof = p.partition_proof(Vanilla::Assemble)?;
    let circuit = <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::circuit(
        &p.prover_inputs,
        Default::default(),
        &partition_proof,
        &p.pub_params,
        Some(0),
    )
    .map_err(|e| synth_err(0, e))?;
    let public_inputs = verifier_public_inputs(&p)?;
    let assignment = match path {
        SynthesisPath::InOrder => synthesize_circuit(UpstreamInOrder(&circuit.sectors), 0)?,
        // storage-proofs' own: chunks of sectors in parallel, each into a system of its own,
        // appended in order (`ConstraintSystem::extend`).
        SynthesisPath::Gadgets => synthesize_circuit(circuit, 0)?,
        SynthesisPath::Twin => {
            let key = format!("post {:?}", inp.registered);
            match twin(&key, &circuit, &partition_proof) {
                Ok(assignment) => assignment,
                Err(TwinFailure::Error(e)) => return Err(e),
                Err(TwinFailure::Fallback(why, shell)) => {
                    count_fallback();
                    log::warn!("{key}: synthesized through the upstream gadgets ({why})");
                    let (r, _) =
                        recycle::with_shell(shell.map(|s| *s), || synthesize_circuit(circuit, 0));
                    r?
                }
            }
        }
    };
    Ok(Partition {
        assignment,
        public_inputs,
    })
}

/// The partition through the circuit twin: each sector a part, in parallel, held to the
/// shape of the upstream circuit of one sector (counted from sector 0 when `key`'s shape
/// is not known yet).
fn twin<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
    key: &str,
    circuit: &FallbackPoStCircuit<Tree>,
    proof: &fallback::Proof<<Tree as MerkleTreeTrait>::Proof>,
) -> Result<ProvingAssignment, TwinFailure> {
    let twin_key = format!("{key} twin");
    if twin_refused(&twin_key) {
        let why = "the circuit twin did not fit this PoSt".to_string();
        return Err(TwinFailure::Fallback(why, None));
    }
    let sectors = &circuit.sectors;
    if sectors.is_empty() || proof.sectors.len() != sectors.len() {
        let why = format!(
            "{} sectors in the circuit, {} in the proof",
            sectors.len(),
            proof.sectors.len()
        );
        return Err(TwinFailure::Fallback(why, None));
    }
    let twin = catch_unwind(AssertUnwindSafe(|| {
        parts::try_synthesize_parts(
            key,
            sectors.len(),
            SECTOR_MARKER,
            || Ok(GadgetCircuit(UpstreamSector(&sectors[0]))),
            |j| {
                let w = SectorWitness::new(&sectors[j], &proof.sectors[j])?;
                Ok(SectorsTwin::<Tree>::new(vec![w]))
            },
        )
    }));
    twin_outcome(twin, 0, twin_key)
}

fn verifier_public_inputs<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
    p: &Prepared<Tree>,
) -> Result<Vec<Fr>, FilecoinError> {
    FallbackPoStCompound::<Tree>::generate_public_inputs(
        &p.verifier_inputs,
        &p.pub_params,
        Some(p.verifier_k),
    )
    .map_err(|e| synth_err(0, e))
}

/// The verifier's public inputs of the partition.
pub(crate) fn public_inputs(inp: &PostInputs<'_>) -> Result<Vec<Fr>, FilecoinError> {
    fn inner<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
        inp: &PostInputs<'_>,
    ) -> Result<Vec<Fr>, FilecoinError> {
        verifier_public_inputs(&prepare_checked::<Tree>(inp)?)
    }
    with_tree!(u64::from(inp.registered.sector_size()), inner, inp)
}

/// Verifies with filecoin-proofs: `verify_winning_post`; for WindowPoSt
/// `verify_window_post` when the partition verifies as a deadline of its own sectors in
/// order (index 0, or any index from API version 1.2 on, whose challenges do not depend on
/// the index), otherwise the compound proof's per-partition public inputs against the
/// verifying key, read and prepared once per process ([`prepared_window_vk`]).
/// filecoin-proofs keeps its own prepared keys, so either way a verifying key (about
/// 26 k points and a 0.6 GB table at 32 GiB, seconds to prepare) is prepared once.
pub(crate) fn verify(inp: &PostInputs<'_>, proof: &[u8]) -> Result<bool, FilecoinError> {
    with_tree!(
        u64::from(inp.registered.sector_size()),
        verify_inner,
        inp,
        proof
    )
}

fn verify_inner<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
    inp: &PostInputs<'_>,
    proof: &[u8],
) -> Result<bool, FilecoinError> {
    let p = prepare_checked::<Tree>(inp)?;
    let replicas: BTreeMap<SectorId, PublicReplicaInfo> = p
        .sectors
        .iter()
        .map(|(id, comm_r)| (*id, PublicReplicaInfo::new(inp.registered, *comm_r)))
        .collect();
    let in_order = p.sectors.windows(2).all(|w| w[0].0 < w[1].0);
    match p.config.typ {
        PoStType::Winning => filecoin_proofs_api::post::verify_winning_post(
            &inp.randomness,
            proof,
            &replicas,
            inp.prover_id,
        )
        .map_err(FilecoinError::fp),
        PoStType::Window
            if in_order && (inp.partition_index == 0 || !position_matters(inp.registered)) =>
        {
            filecoin_proofs_api::post::verify_window_post(
                &inp.randomness,
                &[(inp.registered, proof)],
                &replicas,
                inp.prover_id,
            )
            .map_err(FilecoinError::fp)
        }
        PoStType::Window => {
            let inputs = verifier_public_inputs(&p)?;
            let pvk = prepared_window_vk::<Tree>(inp.registered, &p.pub_params)?;
            let proof = groth16::Proof::<Bls12>::read(proof)
                .map_err(|e| FilecoinError::MalformedProof(e.to_string()))?;
            groth16::verify_proof(&pvk, &proof, &inputs).map_err(FilecoinError::fp)
        }
    }
}

/// Has filecoin-proofs read and prepare the WindowPoSt verifying key of `registered` in
/// its process-wide cache now, the work a process's first WindowPoSt verification would
/// otherwise do (seconds at 32 GiB: about 26 k points checked, a 0.6 GB table built). It
/// calls `verify_window_post` with one sector and a well-formed proof that does not verify
/// (three generator points): filecoin-proofs fetches the key before it reads the proof, and
/// `Ok(false)` says the key is prepared.
pub(crate) fn prepare_window_verifier(
    registered: RegisteredPoStProof,
) -> Result<(), FilecoinError> {
    let bytes = Proof {
        a: G1Affine::generator(),
        b: G2Affine::generator(),
        c: G1Affine::generator(),
    }
    .to_bytes();
    // Any field elements do: a valid Fr in little-endian bytes.
    let value = [1u8; 32];
    let replicas = BTreeMap::from([(SectorId::from(1), PublicReplicaInfo::new(registered, value))]);
    let verified = no_panic("verify_window_post", || {
        filecoin_proofs_api::post::verify_window_post(
            &value,
            &[(registered, &bytes)],
            &replicas,
            value,
        )
        .map_err(FilecoinError::fp)
    })?;
    if verified {
        return Err(FilecoinError::VerificationFailed(format!(
            "a proof of generator points verified against the {registered:?} key"
        )));
    }
    Ok(())
}

/// The WindowPoSt verifying key of `registered`, read from the parameter cache by
/// storage-proofs and prepared by bellperson on first use, then kept for the process.
fn prepared_window_vk<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
    registered: RegisteredPoStProof,
    pub_params: &fallback::PublicParams,
) -> Result<Arc<groth16::PreparedVerifyingKey<Bls12>>, FilecoinError> {
    type Keys = Mutex<HashMap<RegisteredPoStProof, Arc<groth16::PreparedVerifyingKey<Bls12>>>>;
    static KEYS: OnceLock<Keys> = OnceLock::new();
    let keys = KEYS.get_or_init(Default::default);
    let lock = || keys.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(pvk) = lock().get(&registered) {
        return Ok(pvk.clone());
    }
    // Prepared outside the lock: two first verifications at once prepare it twice.
    let vk =
        <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::verifying_key::<rand::rngs::OsRng>(
            None, pub_params,
        )
        .map_err(FilecoinError::fp)?;
    let pvk = Arc::new(groth16::prepare_verifying_key(&vk));
    Ok(lock().entry(registered).or_insert(pvk).clone())
}

/// The blank circuit of a PoSt proof.
pub(crate) fn blank<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredPoStProof,
) -> Result<FallbackPoStCircuit<Tree>, FilecoinError> {
    blank_of::<Tree>(&setup(registered)?)
}

/// The vanilla setup of a PoSt proof (WinningPoSt's 66 challenges are 66 one-challenge
/// "sectors" of its circuit).
pub(super) fn setup(
    registered: RegisteredPoStProof,
) -> Result<fallback::SetupParams, FilecoinError> {
    let config = registered.as_v1_config();
    Ok(match config.typ {
        PoStType::Winning => winning_post_setup_params(&config).map_err(FilecoinError::fp)?,
        PoStType::Window => window_post_setup_params(&config),
    })
}

fn blank_of<Tree: 'static + MerkleTreeTrait>(
    setup: &fallback::SetupParams,
) -> Result<FallbackPoStCircuit<Tree>, FilecoinError> {
    let pub_params = FallbackPoSt::<Tree>::setup(setup).map_err(FilecoinError::fp)?;
    Ok(<FallbackPoStCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&pub_params))
}

/// Shape of a PoSt proof's circuit.
pub(crate) fn shape(registered: RegisteredPoStProof) -> Result<CircuitShape, FilecoinError> {
    fn inner<Tree: 'static + MerkleTreeTrait>(
        r: RegisteredPoStProof,
    ) -> Result<CircuitShape, FilecoinError> {
        super::count_shape(blank::<Tree>(r)?)
    }
    with_tree!(u64::from(registered.sector_size()), inner, registered)
}

/// The R1CS of a PoSt circuit for parameter generation: one sector's captured, the other
/// sectors shifted copies of it (2,349 sectors in a 32 GiB WindowPoSt partition;
/// [`R1csAssembly::synthesize_parted`]).
pub(crate) fn r1cs(registered: RegisteredPoStProof) -> Result<R1csAssembly, FilecoinError> {
    fn inner<Tree: 'static + MerkleTreeTrait>(
        registered: RegisteredPoStProof,
    ) -> Result<R1csAssembly, FilecoinError> {
        let whole = setup(registered)?;
        let one = fallback::SetupParams {
            sector_count: 1,
            ..whole.clone()
        };
        Ok(R1csAssembly::synthesize_parted(
            blank_of::<Tree>(&one)?,
            whole.sector_count,
            "outer namespace/sector_0",
        )?)
    }
    with_tree!(u64::from(registered.sector_size()), inner, registered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuits::porep::twin_misfits;
    use crate::circuits::twin_fallbacks;
    use crate::kinds::ProofKind;

    /// The partition proof assembled without verification is filecoin-proofs' own, for a
    /// whole WindowPoSt partition, one padded from fewer sectors, one that names a sector
    /// twice (the first proof of an id serves every mention), and a WinningPoSt.
    #[test]
    fn assembled_partition_proofs_equal_filecoin_proofs() {
        fn same<Tree: 'static + MerkleTreeTrait<Hasher = DefaultTreeHasher>>(
            inp: &PostInputs<'_>,
        ) -> Result<bool, FilecoinError> {
            let p = prepare::<Tree>(inp)?;
            let verified = p.partition_proof(Vanilla::Verify)?;
            let assembled = p.partition_proof(Vanilla::Assemble)?;
            let bytes = |proof| bincode::serialize(proof).unwrap();
            assert_eq!(verified.sectors.len(), p.pub_params.sector_count);
            Ok(bytes(&verified) == bytes(&assembled))
        }
        let dir = tempfile::tempdir().unwrap();
        let kinds = [ProofKind::WindowPoSt, ProofKind::WinningPoSt];
        let set = crate::virtual_sector::make(dir.path(), 2 << 10, &kinds, 11).unwrap();
        for kind in kinds {
            let req = set.request(kind).unwrap();
            let inp = req.post_inputs().unwrap();
            let twice = vec![inp.vanilla_proofs[0].clone(); 2];
            let mut cases = vec![inp];
            if kind == ProofKind::WindowPoSt {
                assert!(inp.vanilla_proofs.len() > 1);
                cases.push(PostInputs {
                    vanilla_proofs: &inp.vanilla_proofs[..1],
                    ..inp
                });
                cases.push(PostInputs {
                    vanilla_proofs: &twice,
                    ..inp
                });
            }
            for case in cases {
                let n = case.vanilla_proofs.len();
                let size = u64::from(case.registered.sector_size());
                assert!(
                    with_tree!(size, same, &case).unwrap(),
                    "{kind:?}, {n} proofs"
                );
            }
        }
    }

    /// A PoSt the twin refuses (its misfit remembered) is synthesized through the
    /// gadgets instead: the same partition, the fallback counted.
    #[test]
    fn a_refused_twin_falls_back_to_the_gadgets() {
        let dir = tempfile::tempdir().unwrap();
        let set =
            crate::virtual_sector::make(dir.path(), 2 << 10, &[ProofKind::WinningPoSt], 7).unwrap();
        let req = set.request(ProofKind::WinningPoSt).unwrap();
        let inp = req.post_inputs().unwrap();
        let want = synthesize(&inp, SynthesisPath::InOrder).unwrap();
        let twin_key = format!("post {:?} twin", inp.registered);
        twin_misfits().lock().unwrap().insert(twin_key.clone());
        let before = twin_fallbacks();
        let got = synthesize(&inp, SynthesisPath::Twin);
        twin_misfits().lock().unwrap().remove(&twin_key);
        let got = got.unwrap();
        assert!(twin_fallbacks() > before);
        assert!(got.assignment == want.assignment);
        assert_eq!(got.public_inputs, want.public_inputs);
        let twin = synthesize(&inp, SynthesisPath::Twin).unwrap();
        assert!(twin.assignment == want.assignment);
    }
}
