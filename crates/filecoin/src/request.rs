//! A validated proof request: what to prove, for which circuit, in how many partitions.

use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::{PoStType, RegisteredPoStProof, RegisteredUpdateProof};
use filprove_groth16::Proof;
use rayon::prelude::*;

use crate::circuits::{porep, post, update, Partition, SynthesisPath};
use crate::error::FilecoinError;
use crate::kinds::{CircuitSpec, ProofKind, RegisteredProof};
use crate::params::{check_aggregation_srs_present, check_vk_present, parameter_cache_dir};

/// Most vanilla proofs one request may carry (a 64 GiB WindowPoSt partition has 2300).
pub const MAX_VANILLA_PROOFS: usize = 4096;

/// What to prove. Build with [`ProofRequest::new`] (or a parser), which validates it.
#[derive(Clone, Debug)]
pub enum RequestBody {
    /// Seal commit phase 2 from a C1 output.
    PoRep {
        /// The C1 output.
        c1: Box<SealCommitPhase1Output>,
        /// The sector number.
        sector_number: u64,
        /// The miner's actor id (the prover id is derived from it).
        miner_id: u64,
    },
    /// A WinningPoSt.
    WinningPoSt {
        /// A `StackedDrgWinning*` proof.
        registered: RegisteredPoStProof,
        /// The miner's actor id.
        miner_id: u64,
        /// The challenge randomness.
        randomness: [u8; 32],
        /// bincode `FallbackPoStSectorProof`, one per challenged sector.
        vanilla_proofs: Vec<Vec<u8>>,
    },
    /// One WindowPoSt partition.
    WindowPoSt {
        /// A `StackedDrgWindow*` proof.
        registered: RegisteredPoStProof,
        /// The miner's actor id.
        miner_id: u64,
        /// The challenge randomness.
        randomness: [u8; 32],
        /// Index of the partition in its deadline.
        partition_index: u32,
        /// bincode `FallbackPoStSectorProof` of the partition's sectors, in order.
        vanilla_proofs: Vec<Vec<u8>>,
    },
    /// An empty sector update proof.
    SnapDeals {
        /// The update proof type.
        registered: RegisteredUpdateProof,
        /// The CC sector's comm_r.
        comm_r_old: [u8; 32],
        /// The updated sector's comm_r.
        comm_r_new: [u8; 32],
        /// The new data commitment.
        comm_d_new: [u8; 32],
        /// bincode `PartitionProof`, one per partition.
        vanilla_proofs: Vec<Vec<u8>>,
    },
}

/// A parsed and validated request.
#[derive(Clone, Debug)]
pub struct ProofRequest {
    body: RequestBody,
    spec: CircuitSpec,
    partitions: usize,
}

/// The Filecoin prover id of an ID address `f0<miner_id>`: the address payload (the actor id
/// as an unsigned LEB128 varint), left-aligned in 32 bytes. This is what Curio sends.
pub fn prover_id_from_miner_id(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut v = miner_id;
    let mut i = 0;
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            break;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
    out
}

impl ProofRequest {
    /// Validates `body`: every number and size against the registered proof first
    /// ([`crate::bounds::check_body`]), then registered proof against kind and sector size,
    /// vanilla proof decoding, commitments; the vanilla proofs are verified with
    /// filecoin-proofs.
    pub fn new(body: RequestBody) -> Result<Self, FilecoinError> {
        let vanilla_count = match &body {
            RequestBody::PoRep { .. } => 0,
            RequestBody::WinningPoSt { vanilla_proofs, .. }
            | RequestBody::WindowPoSt { vanilla_proofs, .. }
            | RequestBody::SnapDeals { vanilla_proofs, .. } => vanilla_proofs.len(),
        };
        if vanilla_count > MAX_VANILLA_PROOFS {
            return Err(FilecoinError::WrongVanillaProofCount {
                got: vanilla_count,
                expected: format!("at most {MAX_VANILLA_PROOFS}"),
            });
        }
        let (registered, partitions) = match &body {
            RequestBody::PoRep { c1, .. } => (
                RegisteredProof::Seal(c1.registered_proof),
                usize::from(c1.registered_proof.partitions()),
            ),
            RequestBody::WinningPoSt { registered, .. }
            | RequestBody::WindowPoSt { registered, .. } => {
                let want = match body {
                    RequestBody::WinningPoSt { .. } => PoStType::Winning,
                    _ => PoStType::Window,
                };
                if registered.typ() != want {
                    return Err(FilecoinError::RegisteredProofMismatch(format!(
                        "{registered:?} is a {:?} PoSt proof, the request is {:?}",
                        registered.typ(),
                        want
                    )));
                }
                (RegisteredProof::PoSt(*registered), 1)
            }
            RequestBody::SnapDeals {
                registered,
                vanilla_proofs,
                ..
            } => (RegisteredProof::Update(*registered), vanilla_proofs.len()),
        };
        // Before anything is decoded or allocated from the request's numbers.
        crate::bounds::check_body(&body)?;
        let req = Self::unchecked(body, registered, partitions);
        match req.inputs() {
            Inputs::PoRep {
                c1,
                prover_id,
                sector_number,
            } => porep::validate(c1, &prover_id, sector_number)?,
            Inputs::Update(inp) => update::validate(&inp)?,
            Inputs::PoSt(inp) => post::validate(&inp)?,
        }
        Ok(req)
    }

    fn unchecked(body: RequestBody, registered: RegisteredProof, partitions: usize) -> Self {
        Self {
            body,
            spec: CircuitSpec::for_registered(registered),
            partitions,
        }
    }

    /// The proof kind.
    pub fn kind(&self) -> ProofKind {
        self.spec.kind
    }

    /// The request as given.
    pub fn body(&self) -> &RequestBody {
        &self.body
    }

    /// The circuit (and so the parameter files) this request needs.
    pub fn circuit(&self) -> CircuitSpec {
        self.spec.clone()
    }

    /// Number of Groth16 proofs (partitions) this request makes.
    pub fn num_partitions(&self) -> usize {
        self.partitions
    }

    /// The prover id (PoRep and PoSt), from the miner id.
    pub fn prover_id(&self) -> Option<[u8; 32]> {
        match &self.body {
            RequestBody::PoRep { miner_id, .. }
            | RequestBody::WinningPoSt { miner_id, .. }
            | RequestBody::WindowPoSt { miner_id, .. } => Some(prover_id_from_miner_id(*miner_id)),
            RequestBody::SnapDeals { .. } => None,
        }
    }

    /// The body as the circuit modules take it. Every body has exactly one view, so the
    /// callers below match without a fallback arm.
    fn inputs(&self) -> Inputs<'_> {
        match &self.body {
            RequestBody::PoRep {
                c1,
                sector_number,
                miner_id,
            } => Inputs::PoRep {
                c1,
                prover_id: prover_id_from_miner_id(*miner_id),
                sector_number: *sector_number,
            },
            RequestBody::WinningPoSt {
                registered,
                miner_id,
                randomness,
                vanilla_proofs,
            } => Inputs::PoSt(post::PostInputs {
                registered: *registered,
                prover_id: prover_id_from_miner_id(*miner_id),
                randomness: *randomness,
                partition_index: 0,
                vanilla_proofs,
            }),
            RequestBody::WindowPoSt {
                registered,
                miner_id,
                randomness,
                partition_index,
                vanilla_proofs,
            } => Inputs::PoSt(post::PostInputs {
                registered: *registered,
                prover_id: prover_id_from_miner_id(*miner_id),
                randomness: *randomness,
                partition_index: *partition_index as usize,
                vanilla_proofs,
            }),
            RequestBody::SnapDeals {
                registered,
                comm_r_old,
                comm_r_new,
                comm_d_new,
                vanilla_proofs,
            } => Inputs::Update(update::UpdateInputs {
                registered: *registered,
                comm_r_old: *comm_r_old,
                comm_r_new: *comm_r_new,
                comm_d_new: *comm_d_new,
                vanilla_proofs,
            }),
        }
    }

    /// The PoSt view of a WinningPoSt or WindowPoSt request.
    #[cfg(test)]
    pub(crate) fn post_inputs(&self) -> Option<post::PostInputs<'_>> {
        match self.inputs() {
            Inputs::PoSt(inp) => Some(inp),
            _ => None,
        }
    }

    /// The update view of a SnapDeals request.
    #[cfg(test)]
    pub(crate) fn update_inputs(&self) -> Option<update::UpdateInputs<'_>> {
        match self.inputs() {
            Inputs::Update(inp) => Some(inp),
            _ => None,
        }
    }

    /// Builds and synthesizes partition `partition` (0-based). Independent partitions may be
    /// synthesized in parallel from several threads.
    pub fn synthesize(&self, partition: usize) -> Result<Partition, FilecoinError> {
        self.synthesize_with(partition, SynthesisPath::Twin)
    }

    /// [`ProofRequest::synthesize`] in constraint order on one thread, as filecoin-proofs
    /// synthesizes (the reference the parallel synthesis of PoRep's challenges is tested
    /// against).
    pub fn synthesize_in_order(&self, partition: usize) -> Result<Partition, FilecoinError> {
        self.synthesize_with(partition, SynthesisPath::InOrder)
    }

    /// [`ProofRequest::synthesize`] along a chosen path (A/B comparisons; every path gives
    /// the same partition).
    pub fn synthesize_with(
        &self,
        partition: usize,
        path: SynthesisPath,
    ) -> Result<Partition, FilecoinError> {
        if partition >= self.partitions {
            return Err(FilecoinError::PartitionOutOfRange {
                partition,
                partitions: self.partitions,
            });
        }
        match self.inputs() {
            Inputs::PoRep { c1, .. } => porep::synthesize(c1, partition, path),
            Inputs::Update(inp) => update::synthesize(&inp, partition, path),
            Inputs::PoSt(inp) => post::synthesize(&inp, path),
        }
    }

    /// Synthesizes every partition, in parallel (rayon).
    pub fn synthesize_all(&self) -> Result<Vec<Partition>, FilecoinError> {
        (0..self.partitions)
            .into_par_iter()
            .map(|k| self.synthesize(k))
            .collect()
    }

    /// Public inputs of every partition (without ONE), as the verifier computes them.
    pub fn public_inputs(&self) -> Result<Vec<Vec<filprove_groth16::Fr>>, FilecoinError> {
        match self.inputs() {
            Inputs::PoRep { c1, .. } => porep::all_public_inputs(c1),
            Inputs::Update(inp) => update::all_public_inputs(&inp),
            Inputs::PoSt(inp) => Ok(vec![post::public_inputs(&inp)?]),
        }
    }

    /// Whether this is a non-interactive PoRep, whose proof is a SnarkPack aggregate.
    pub fn is_aggregated(&self) -> bool {
        self.spec.registered.is_non_interactive()
    }

    /// Assembles partition proofs into the bytes filecoin-proofs-api returns: the partition
    /// proofs concatenated in order, 192 bytes each (for WindowPoSt, the one partition's
    /// proof); for non-interactive PoRep, their SnarkPack aggregate (which needs the `.vk` and
    /// `v28-fil-inner-product-v1.srs` in the parameter cache).
    pub fn assemble(&self, partition_proofs: &[Proof]) -> Result<Vec<u8>, FilecoinError> {
        if partition_proofs.len() != self.partitions {
            return Err(FilecoinError::MalformedProof(format!(
                "{} partition proofs for a request of {} partitions",
                partition_proofs.len(),
                self.partitions
            )));
        }
        let concatenated = Proof::concat(partition_proofs);
        match &self.body {
            RequestBody::PoRep { c1, .. } if self.is_aggregated() => {
                let dir = parameter_cache_dir();
                check_vk_present(&self.spec, &dir)?;
                check_aggregation_srs_present(&dir, &self.spec.short_name)?;
                porep::aggregate(c1, &concatenated)
            }
            _ => Ok(concatenated),
        }
    }

    /// Verifies proof bytes with filecoin-proofs' own verifiers, which read the `.vk` from
    /// the parameter cache (`FIL_PROOFS_PARAMETER_CACHE`; for non-interactive PoRep also the
    /// SnarkPack SRS). `Ok(false)` for a proof that does not verify (including one that does
    /// not decode); `Err` when verification cannot run.
    pub fn verify(&self, proof: &[u8]) -> Result<bool, FilecoinError> {
        check_vk_present(&self.spec, &parameter_cache_dir())?;
        let inputs = self.inputs();
        if let Inputs::PoRep {
            c1,
            prover_id,
            sector_number,
        } = &inputs
        {
            if self.is_aggregated() {
                check_aggregation_srs_present(&parameter_cache_dir(), &self.spec.short_name)?;
                return porep::verify_aggregate(c1, *prover_id, *sector_number, proof);
            }
        }
        if proof.len() != self.partitions * Proof::SIZE || Proof::split(proof).is_err() {
            return Ok(false);
        }
        match inputs {
            Inputs::PoRep {
                c1,
                prover_id,
                sector_number,
            } => porep::verify(c1, prover_id, sector_number, proof),
            Inputs::Update(inp) => update::verify(&inp, proof),
            Inputs::PoSt(inp) => post::verify(&inp, proof),
        }
    }
}

/// A request body as the circuit modules take it.
enum Inputs<'a> {
    PoRep {
        c1: &'a SealCommitPhase1Output,
        prover_id: [u8; 32],
        sector_number: u64,
    },
    PoSt(post::PostInputs<'a>),
    Update(update::UpdateInputs<'a>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_id_is_leb128_left_aligned() {
        let id = prover_id_from_miner_id(1000);
        assert_eq!(&id[..3], &[0xe8, 0x07, 0x00]);
        assert_eq!(prover_id_from_miner_id(0)[0], 0);
        assert_eq!(&prover_id_from_miner_id(127)[..2], &[0x7f, 0]);
        assert_eq!(&prover_id_from_miner_id(128)[..3], &[0x80, 0x01, 0]);
        let max = prover_id_from_miner_id(u64::MAX);
        assert_eq!(max[9], 0x01);
        assert!(max[..9].iter().all(|&b| b == 0xff));
    }
}
