//! Where natively computed witness goes: the seam between gadget-free witness code and
//! the constraint systems that capture assignments.
//!
//! Most of a Filecoin PoRep circuit is SHA-256. Its witness can be computed with word
//! arithmetic instead of bellperson's gadgets, provided the values land exactly where the
//! gadgets would have put them: the same aux variables in the same order, the same
//! constraints in the same order with the same a, b, c evaluations, and the same density
//! bits. Native witness code writes through [`WitnessSink`]; every constraint system that
//! captures assignments ([`crate::ProvingAssignment`], the part systems of
//! [`crate::parts`]) implements it, so native code and upstream gadgets can take turns on
//! one system.

use bellperson::Index;

use crate::Fr;

/// A constraint system that native witness code can append to directly.
pub trait WitnessSink {
    /// The index the next allocated aux variable will get (as in `Index::Aux`).
    fn next_aux(&self) -> usize;

    /// Allocates one aux variable holding `value`; returns its index (as in `Index::Aux`).
    fn push_aux(&mut self, value: Fr) -> usize;

    /// Appends one constraint, given the evaluations of its A, B and C linear
    /// combinations. The caller marks the densities of the variables it uses with
    /// [`WitnessSink::mark_a`] and [`WitnessSink::mark_b`].
    fn push_constraint(&mut self, a: Fr, b: Fr, c: Fr);

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
    fn push_constraint(&mut self, a: Fr, b: Fr, c: Fr) {
        self.push_evaluations(a, b, c);
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
