//! From request inputs to circuits: one module per proof family. Each builds the compound
//! proof's circuit and public inputs exactly as filecoin-proofs does inside its own prover,
//! and the blank circuit used for parameter generation.

use std::panic::{catch_unwind, AssertUnwindSafe};

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use filprove_groth16::{Fr, ProvingAssignment};
use serde::de::DeserializeOwned;

use crate::error::FilecoinError;

pub(crate) mod porep;
pub(crate) mod porep_twin;
pub(crate) mod post;
mod post_twin;
pub mod profile;
pub(crate) mod update;
mod update_parts;

/// Dispatches a function generic over the Merkle tree shape on a sector size. Only the three
/// shapes the published sector sizes use are instantiated (2 KiB, 8 MiB and 512 MiB share one).
macro_rules! with_tree {
    ($size:expr, $f:ident $(, $args:expr)* $(,)?) => {
        match $size {
            s if s == (2u64 << 10) || s == (8u64 << 20) || s == (512u64 << 20) => {
                $f::<filecoin_proofs::SectorShapeBase>($($args),*)
            }
            s if s == (32u64 << 30) => $f::<filecoin_proofs::SectorShape32GiB>($($args),*),
            s if s == (64u64 << 30) => $f::<filecoin_proofs::SectorShape64GiB>($($args),*),
            s => Err($crate::error::FilecoinError::Unsupported(format!("sector size {s}"))),
        }
    };
}
pub(crate) use with_tree;

pub use porep::twin_fallbacks;

/// How a partition is synthesized.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SynthesisPath {
    /// In constraint order on one thread, through storage-proofs' circuit, as
    /// filecoin-proofs synthesizes (the reference).
    InOrder,
    /// The challenges in parallel ([`filprove_groth16::parts`]), through storage-proofs'
    /// gadgets (SnapDeals: `update_parts`; PoSt: storage-proofs' own chunks of sectors
    /// in parallel, as filecoin-proofs synthesizes it).
    Gadgets,
    /// Production. PoRep: the challenges in parallel through filprove's twin of the
    /// circuit, whose SHA-256 and Poseidon parts are computed natively; PoSt: the sectors
    /// in parallel through filprove's twin (`post_twin`, Poseidon computed natively); a
    /// partition the twin cannot synthesize goes the [`SynthesisPath::Gadgets`] way.
    /// SnapDeals: the challenges in parallel with tree D's SHA-256 computed natively
    /// (`update_parts`); a partition whose parts fail or do not fit is synthesized in
    /// order. Either fallback is counted by [`twin_fallbacks`].
    #[default]
    Twin,
}

/// One partition, ready for a backend: its witness and its public inputs (without ONE).
#[derive(Debug)]
pub struct Partition {
    /// The captured witness.
    pub assignment: ProvingAssignment,
    /// Public inputs as the verifier computes them (filecoin-proofs' `generate_public_inputs`).
    pub public_inputs: Vec<Fr>,
}

/// Synthesizes a circuit into an assignment; circuit errors and panics inside the gadgets
/// (which malformed vanilla proofs can trigger) become a typed error.
pub(crate) fn synthesize_circuit<C: Circuit<Fr>>(
    circuit: C,
    partition: usize,
) -> Result<ProvingAssignment, FilecoinError> {
    synthesize_guarded(partition, || ProvingAssignment::synthesize(circuit))
}

/// Runs a synthesis (`f`), its errors and panics made typed as in [`synthesize_circuit`].
pub(crate) fn synthesize_guarded(
    partition: usize,
    f: impl FnOnce() -> Result<ProvingAssignment, SynthesisError>,
) -> Result<ProvingAssignment, FilecoinError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(a)) => Ok(a),
        Ok(Err(e)) => Err(FilecoinError::SynthesisFailed {
            partition,
            message: e.to_string(),
        }),
        Err(p) => Err(FilecoinError::SynthesisFailed {
            partition,
            message: panic_message(&p),
        }),
    }
}

/// Runs `f`, turning a panic into a typed error (filecoin-proofs asserts on some bad inputs).
pub(crate) fn no_panic<T>(
    what: &str,
    f: impl FnOnce() -> Result<T, FilecoinError>,
) -> Result<T, FilecoinError> {
    contain_panic(what, FilecoinError::InvalidRequest, f)
}

/// [`no_panic`] with the error a panic becomes (`err` gets "what: panicked: message").
pub(crate) fn contain_panic<T>(
    what: &str,
    err: impl FnOnce(String) -> FilecoinError,
    f: impl FnOnce() -> Result<T, FilecoinError>,
) -> Result<T, FilecoinError> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|p| Err(err(format!("{what}: {}", panic_message(&p)))))
}

/// A panic's message, clipped: assertions in the gadgets print the values they compared.
pub(crate) fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("panicked: {}", crate::excerpt::clip(s))
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("panicked: {}", crate::excerpt::clip(s))
    } else {
        "panicked".to_string()
    }
}

/// Decodes one bincode vanilla proof as filecoin-proofs-api encodes it (fixed-int, as
/// `bincode::serialize`), reading no more than the input holds.
pub(crate) fn decode_vanilla<T: DeserializeOwned>(
    bytes: &[u8],
    index: usize,
) -> Result<T, FilecoinError> {
    use bincode::Options;
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .allow_trailing_bytes()
        .with_limit(bytes.len() as u64)
        .deserialize(bytes)
        .map_err(|e| FilecoinError::BadVanillaProof {
            index,
            message: crate::excerpt::clip(&e.to_string()),
        })
}

/// The size of a circuit: what parameter generation and memory planning need.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CircuitShape {
    /// Constraints, including the one constraint per input bellperson appends (published
    /// circuit figures usually count without them).
    pub constraints: usize,
    /// Public inputs, including ONE.
    pub inputs: usize,
    /// Private (aux) variables.
    pub aux: usize,
}

impl CircuitShape {
    /// log2 of the evaluation domain.
    pub fn log_domain_size(&self) -> u32 {
        self.constraints.max(1).next_power_of_two().trailing_zeros()
    }
}

/// A constraint system that only counts (no witness, no matrices).
#[derive(Default)]
struct ShapeCounter(CircuitShape);

impl ConstraintSystem<Fr> for ShapeCounter {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.0.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.0.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.0.constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Counts a (blank) circuit's constraints, inputs and aux variables the way bellperson lays
/// them out (ONE input first, one extra constraint per input).
pub(crate) fn count_shape<C: Circuit<Fr>>(circuit: C) -> Result<CircuitShape, FilecoinError> {
    let mut cs = ShapeCounter::default();
    cs.0.inputs = 1;
    circuit
        .synthesize(&mut cs)
        .map_err(|e| FilecoinError::SynthesisFailed {
            partition: 0,
            message: e.to_string(),
        })?;
    cs.0.constraints += cs.0.inputs;
    Ok(cs.0)
}

/// A circuit-building error of partition `partition`.
pub(crate) fn synth_err(partition: usize, e: impl std::fmt::Display) -> FilecoinError {
    FilecoinError::SynthesisFailed {
        partition,
        message: crate::excerpt::clip(&format!("{e:#}")),
    }
}

impl crate::kinds::CircuitSpec {
    /// Where this circuit's constraints go, by gadget family (PoSt and SnapDeals circuits;
    /// [`profile`]).
    pub fn constraint_profile(&self) -> Result<profile::ConstraintProfile, FilecoinError> {
        match self.registered {
            crate::kinds::RegisteredProof::PoSt(p) => profile::post_profile(p),
            crate::kinds::RegisteredProof::Update(p) => profile::update_profile(p),
            _ => Err(FilecoinError::Unsupported(format!(
                "a constraint profile of {} (PoSt and SnapDeals circuits only)",
                self.short_name
            ))),
        }
    }

    /// Has filecoin-proofs read and prepare this circuit's verifying key now, so that the
    /// first proof of the process does not wait for it at verification. WindowPoSt only
    /// (`post::prepare_window_verifier`): its key takes seconds to prepare at 32 GiB,
    /// the other kinds' keys a fraction of a second, and for them `Ok(false)` says nothing
    /// was done. Fails with [`FilecoinError::ParamsMissing`] when the `.vk` file is not in
    /// the parameter cache.
    pub fn prepare_verifier(&self) -> Result<bool, FilecoinError> {
        match self.registered {
            crate::kinds::RegisteredProof::PoSt(p) if self.kind == crate::ProofKind::WindowPoSt => {
                crate::params::check_vk_present(self, &crate::params::parameter_cache_dir())?;
                post::prepare_window_verifier(p)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The R1CS of this circuit for parameter generation: PoRep's from its head and first
    /// challenge (`porep::r1cs`), PoSt's from one sector (`post::r1cs`), SnapDeals' by
    /// synthesizing its blank circuit.
    pub fn blank_r1cs(&self) -> Result<filprove_groth16::keygen::R1csAssembly, FilecoinError> {
        use crate::kinds::RegisteredProof;
        use filecoin_proofs::{MerkleTreeTrait, TreeRHasher};
        use filprove_groth16::keygen::R1csAssembly;
        match self.registered {
            RegisteredProof::Seal(p) => porep::r1cs(p),
            RegisteredProof::PoSt(p) => post::r1cs(p),
            RegisteredProof::Update(p) => {
                fn g<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
                    p: filecoin_proofs_api::RegisteredUpdateProof,
                ) -> Result<R1csAssembly, FilecoinError> {
                    Ok(R1csAssembly::synthesize(update::blank::<Tree>(p))?)
                }
                with_tree!(self.sector_size, g, p)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use filecoin_proofs::SectorShapeBase as Tree;
    use filprove_groth16::keygen::R1csAssembly;

    use super::{porep, post};
    use crate::kinds::{CircuitSpec, RegisteredProof};

    /// The parameter-generation R1CS of PoRep (from its head and first challenge) and of
    /// PoSt (from one sector) equals the R1CS of the whole blank circuit: 2 challenges or
    /// sectors at these sizes, WinningPoSt's 66 one-challenge sectors; 18 challenges and
    /// 2,349 sectors at 32 GiB follow the same rule.
    #[test]
    fn parted_r1cs_equals_the_whole_blank_circuit() {
        for name in ["porep-2k", "porep-8m", "wpost-2k", "wpost-8m", "winning-2k"] {
            let spec = CircuitSpec::from_short_name(name).unwrap();
            let whole = match spec.registered {
                RegisteredProof::Seal(p) => {
                    R1csAssembly::synthesize(porep::blank::<Tree>(p).unwrap())
                }
                RegisteredProof::PoSt(p) => {
                    R1csAssembly::synthesize(post::blank::<Tree>(p).unwrap())
                }
                RegisteredProof::Update(_) => unreachable!("not parted"),
            }
            .unwrap();
            let parted = spec.blank_r1cs().unwrap();
            assert_eq!(parted.num_constraints(), whole.num_constraints(), "{name}");
            assert!(parted == whole, "{name}: the parted R1CS differs");
        }
    }
}
