//! Where natively computed witness goes: the seam between gadget-free witness code and
//! the constraint systems that capture assignments.
//!
//! Most of a Filecoin PoRep circuit is SHA-256. Its witness can be computed with word
//! arithmetic instead of bellperson's gadgets, provided the values land exactly where the
//! gadgets would have put them: the same aux variables in the same order, the same
//! constraints in the same order with the same a and b evaluations, and the same density
//! bits (C is not evaluated: a backend forms c = a*b, [`crate::assignment`]). Native witness code writes through [`WitnessSink`]; every constraint system that
//! captures assignments ([`crate::ProvingAssignment`], the part systems of
//! [`crate::parts`]) implements it, so native code and upstream gadgets can take turns on
//! one system.

use bellperson::{Circuit, ConstraintSystem, Index, SynthesisError};

use crate::Fr;

/// A constraint system that native witness code can append to directly.
pub trait WitnessSink {
    /// The index the next allocated aux variable will get (as in `Index::Aux`).
    fn next_aux(&self) -> usize;

    /// Allocates one aux variable holding `value`; returns its index (as in `Index::Aux`).
    fn push_aux(&mut self, value: Fr) -> usize;

    /// Appends one constraint, given the evaluations of its A and B linear combinations
    /// (C's is a*b for a satisfying witness and is not recorded). The caller marks the densities of the variables it uses with
    /// [`WitnessSink::mark_a`] and [`WitnessSink::mark_b`].
    fn push_constraint(&mut self, a: Fr, b: Fr);

    /// Records that `var` occurs in A with a non-zero coefficient (inputs are dense in A
    /// by construction and may be ignored).
    fn mark_a(&mut self, var: Index);

    /// Records that `var` occurs in B with a non-zero coefficient.
    fn mark_b(&mut self, var: Index);
}

impl WitnessSink for crate::ProvingAssignment {
    #[inline]
    fn next_aux(&self) -> usize {
        self.aux_assignment.len()
    }

    #[inline]
    fn push_aux(&mut self, value: Fr) -> usize {
        self.push_aux_value(value)
    }

    #[inline]
    fn push_constraint(&mut self, a: Fr, b: Fr) {
        self.push_evaluations(a, b);
    }

    #[inline]
    fn mark_a(&mut self, var: Index) {
        if let Index::Aux(i) = var {
            self.a_aux_density.set(i);
        }
    }

    #[inline]
    fn mark_b(&mut self, var: Index) {
        match var {
            Index::Aux(i) => self.b_aux_density.set(i),
            Index::Input(i) => self.b_input_density.set(i),
        }
    }
}

/// The root of a constraint system that native witness code can write to: a sink whose
/// own root is itself. bellperson's namespaces take their root's root, so only with this
/// equality does code inside any depth of namespaces still see a sink (every constraint
/// system of this crate is its own root).
pub trait SinkRoot: WitnessSink + ConstraintSystem<Fr, Root = Self> {}

impl<T: WitnessSink + ConstraintSystem<Fr, Root = T>> SinkRoot for T {}

/// A circuit whose synthesis may append natively computed witness: bellperson's
/// `Circuit`, for the constraint systems that are also [`WitnessSink`]s (a `Circuit` must
/// accept every constraint system, so it cannot ask for the sink).
pub trait SinkCircuit {
    /// Synthesizes the circuit into `cs`, through gadgets or the sink at `cs.get_root()`.
    fn synthesize<CS>(self, cs: &mut CS) -> Result<(), SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot;
}

/// A bellperson circuit as a [`SinkCircuit`] (it never uses the sink).
pub struct GadgetCircuit<C>(pub C);

impl<C: Circuit<Fr>> SinkCircuit for GadgetCircuit<C> {
    fn synthesize<CS>(self, cs: &mut CS) -> Result<(), SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot,
    {
        self.0.synthesize(cs)
    }
}

/// Synthesizes `circuit` in order into a finished assignment, as
/// [`crate::ProvingAssignment::synthesize`] does for a bellperson circuit (the same
/// reused assignment, the ONE input first, the input constraints appended).
pub fn synthesize<C: SinkCircuit>(circuit: C) -> Result<crate::ProvingAssignment, SynthesisError> {
    let mut cs = crate::recycle::take_shell().unwrap_or_default();
    cs.alloc_input(|| "one", || Ok(<Fr as ff::Field>::ONE))?;
    circuit.synthesize(&mut cs)?;
    cs.finish();
    Ok(cs)
}
