//! Where a circuit's constraints go, by gadget family. A PoSt circuit is counted on the
//! blank circuit of one sector (every sector of a FallbackPoSt circuit has the same shape)
//! multiplied by its sector count; a SnapDeals partition on its head and first challenge
//! (`circuits::update_parts`), the challenge multiplied by the challenge count; plus one
//! constraint per public input (bellperson's).
//!
//! A constraint or variable belongs to the family of the namespaces it is made in
//! ([`GadgetFamily::of`]): storage-proofs' and neptune's gadgets name theirs, and those names
//! are what is matched.

use std::collections::BTreeMap;

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use filecoin_proofs::MerkleTreeTrait;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredUpdateProof};
use filprove_groth16::parts::SharedHeadCircuit;
use filprove_groth16::sink::WitnessSink;
use filprove_groth16::Fr;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCompound};

use super::update_parts::{Sha256Witness, UpdateParts};
use super::with_tree;
use crate::error::FilecoinError;

/// A family of gadgets in a circuit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GadgetFamily {
    /// SHA-256 hashing (SnapDeals' tree D: the apex tree and the paths to it).
    Sha256,
    /// Poseidon hashing: each tree level's hash, and comm_r = H(comm_c, comm_r_last)
    /// (SnapDeals: also phi, rho and the challenge digests).
    Poseidon,
    /// A Merkle path's index bits (one boolean constraint each; SnapDeals: the challenge
    /// digests' bits, the partition and h-select bits, the challenges' high bits).
    PathBits,
    /// The insertion of the current node among its siblings at each level (selects).
    Insertion,
    /// The path bits packed into public inputs.
    Packing,
    /// Equality checks (a computed root or commitment against the expected one).
    Equality,
    /// bellperson's one constraint per public input.
    InputConstraints,
    /// Variables allocated outside the gadgets above (commitments, leaves, path elements).
    Other,
}

impl GadgetFamily {
    /// Every family, in table order.
    pub const ALL: [GadgetFamily; 8] = [
        GadgetFamily::Sha256,
        GadgetFamily::Poseidon,
        GadgetFamily::PathBits,
        GadgetFamily::Insertion,
        GadgetFamily::Packing,
        GadgetFamily::Equality,
        GadgetFamily::InputConstraints,
        GadgetFamily::Other,
    ];

    /// The family of what is made under the namespaces `path` (outermost first, the
    /// constraint's or variable's own name last).
    pub fn of(path: &[String]) -> GadgetFamily {
        let any = |f: &dyn Fn(&str) -> bool| path.iter().any(|n| f(n));
        let tree_d = any(&|n| n.starts_with("por to_apex_leaf") || n == "partition-tree por");
        let path_hash = any(&|n| n.starts_with("merkle proof hash"));
        if any(&|n| n.starts_with("apex_tree generation hash")) || (tree_d && path_hash) {
            GadgetFamily::Sha256
        } else if any(&|n| {
            n == "computation of commitment hash"
                || n.starts_with("H_comm_c")
                || n == "phi"
                || n.starts_with("rho (")
                || n.starts_with("comm_r_old_calc")
                || n.starts_with("comm_r_new_calc")
                || (n.starts_with("digest_")
                    && !n.ends_with("_bits")
                    && !n.starts_with("digest_index"))
        }) || path_hash
        {
            GadgetFamily::Poseidon
        } else if any(&|n| {
            n.starts_with("index bit")
                || n.ends_with("_bits")
                || n.starts_with("k_and_h_select_bit")
                || n == "k_and_h_select binary decomp"
                || n == "pack partition bits"
                || n.starts_with("get_challenge_high_bits")
        }) {
            GadgetFamily::PathBits
        } else if any(&|n| n == "path") {
            GadgetFamily::Packing
        } else if any(&|n| {
            n.starts_with("merkle tree hash")
                || n.starts_with("merkle proof insert")
                || n.starts_with("select_apex_leaf")
        }) {
            GadgetFamily::Insertion
        } else if path
            .last()
            .is_some_and(|n| n.starts_with("enforce") || n == "calculated root == provided root")
        {
            GadgetFamily::Equality
        } else {
            GadgetFamily::Other
        }
    }

    /// The family's name in a table.
    pub fn describe(self) -> &'static str {
        match self {
            GadgetFamily::Sha256 => "SHA-256 hashing",
            GadgetFamily::Poseidon => "Poseidon hashing",
            GadgetFamily::PathBits => "path index and challenge bits",
            GadgetFamily::Insertion => "insertion among siblings (selects)",
            GadgetFamily::Packing => "path bits packed into inputs",
            GadgetFamily::Equality => "equality checks",
            GadgetFamily::InputConstraints => "one constraint per public input",
            GadgetFamily::Other => "other allocations",
        }
    }
}

/// Constraints and aux variables of one family.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FamilyCount {
    /// Constraints.
    pub constraints: u64,
    /// Private (aux) variables.
    pub aux: u64,
}

/// A circuit's constraints and variables by gadget family.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConstraintProfile {
    /// Parts of the circuit counted like the first: PoSt sectors, SnapDeals challenges.
    pub parts: usize,
    /// Per family, the whole circuit's.
    pub families: BTreeMap<GadgetFamily, FamilyCount>,
    /// Public inputs, ONE included.
    pub inputs: u64,
}

impl ConstraintProfile {
    /// Every constraint of the circuit, the input constraints included.
    pub fn constraints(&self) -> u64 {
        self.families.values().map(|c| c.constraints).sum()
    }

    /// Every aux variable of the circuit.
    pub fn aux(&self) -> u64 {
        self.families.values().map(|c| c.aux).sum()
    }
}

/// The constraint profile of a PoSt circuit (WinningPoSt's 66 challenges are 66
/// one-challenge sectors).
pub(crate) fn post_profile(
    registered: RegisteredPoStProof,
) -> Result<ConstraintProfile, FilecoinError> {
    fn inner<Tree: 'static + MerkleTreeTrait>(
        registered: RegisteredPoStProof,
    ) -> Result<ConstraintProfile, FilecoinError> {
        let whole = super::post::setup(registered)?;
        let one = fallback::SetupParams {
            sector_count: 1,
            ..whole.clone()
        };
        let pub_params = FallbackPoSt::<Tree>::setup(&one).map_err(FilecoinError::fp)?;
        let circuit =
            <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&pub_params);
        let mut counter = Profiler::default();
        circuit
            .synthesize(&mut counter)
            .map_err(|e| FilecoinError::SynthesisFailed {
                partition: 0,
                message: e.to_string(),
            })?;
        let n = whole.sector_count as u64;
        let mut families: BTreeMap<_, _> = counter
            .counts
            .into_iter()
            .map(|(f, c)| {
                let c = FamilyCount {
                    constraints: c.constraints * n,
                    aux: c.aux * n,
                };
                (f, c)
            })
            .collect();
        let inputs = 1 + counter.inputs * n;
        families.insert(
            GadgetFamily::InputConstraints,
            FamilyCount {
                constraints: inputs,
                aux: 0,
            },
        );
        Ok(ConstraintProfile {
            parts: whole.sector_count,
            families,
            inputs,
        })
    }
    with_tree!(u64::from(registered.sector_size()), inner, registered)
}

/// The constraint profile of one SnapDeals partition: its head and first challenge
/// counted on the blank circuit, the challenge multiplied by the challenge count.
pub(crate) fn update_profile(
    registered: RegisteredUpdateProof,
) -> Result<ConstraintProfile, FilecoinError> {
    fn inner<Tree: 'static + MerkleTreeTrait<Hasher = filecoin_proofs::TreeRHasher>>(
        registered: RegisteredUpdateProof,
    ) -> Result<ConstraintProfile, FilecoinError> {
        let failed = |e: SynthesisError| FilecoinError::SynthesisFailed {
            partition: 0,
            message: e.to_string(),
        };
        let parts = UpdateParts::new(
            super::update::blank::<Tree>(registered),
            Sha256Witness::Gadgets,
        );
        let mut counter = Profiler::default();
        let head = parts.head(&mut counter).map_err(failed)?;
        let (head_counts, head_inputs) = (counter.counts.clone(), counter.inputs);
        parts.part(&mut counter, &head, 0).map_err(failed)?;
        let n = parts.parts() as u64;
        let mut families = head_counts;
        for (f, c) in &counter.counts {
            let e = families.entry(*f).or_default();
            // `e` holds the head's count, `c` the head's and the first challenge's.
            let part = (c.constraints - e.constraints, c.aux - e.aux);
            e.constraints += part.0 * n;
            e.aux += part.1 * n;
        }
        let inputs = 1 + head_inputs + (counter.inputs - head_inputs) * n;
        families.insert(
            GadgetFamily::InputConstraints,
            FamilyCount {
                constraints: inputs,
                aux: 0,
            },
        );
        Ok(ConstraintProfile {
            parts: n as usize,
            families,
            inputs,
        })
    }
    with_tree!(u64::from(registered.sector_size()), inner, registered)
}

/// A constraint system that counts by family (no witness, no matrices).
#[derive(Default)]
struct Profiler {
    names: Vec<String>,
    counts: BTreeMap<GadgetFamily, FamilyCount>,
    aux: usize,
    inputs: u64,
}

impl Profiler {
    fn count(&mut self, name: String) -> &mut FamilyCount {
        self.names.push(name);
        let family = GadgetFamily::of(&self.names);
        self.names.pop();
        self.counts.entry(family).or_default()
    }
}

impl ConstraintSystem<Fr> for Profiler {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, name: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.count(name().into()).aux += 1;
        self.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        // Index 0 is ONE, which the blank circuit does not allocate.
        Ok(Variable::new_unchecked(Index::Input(self.inputs as usize)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, name: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.count(name().into()).constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        self.names.push(name().into());
    }

    fn pop_namespace(&mut self) {
        self.names.pop();
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// The sink the shared-head circuits require; the gadgets' path writes nothing through it,
/// and what native code would write is counted in the namespace it is written in.
impl WitnessSink for Profiler {
    fn next_aux(&self) -> usize {
        self.aux
    }

    fn push_aux(&mut self, _: Fr) -> usize {
        self.count(String::new()).aux += 1;
        self.aux += 1;
        self.aux - 1
    }

    fn push_constraint(&mut self, _: Fr, _: Fr) {
        self.count(String::new()).constraints += 1;
    }

    fn mark_a(&mut self, _: Index) {}

    fn mark_b(&mut self, _: Index) {}
}
