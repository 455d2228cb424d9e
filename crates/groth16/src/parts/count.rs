//! The shape of a parted circuit (head and part lengths), counted without a witness.

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use ff::Field;

use super::{Failure, Lengths, PartShape, Watch};
use crate::sink::{SinkCircuit, WitnessSink};
use crate::Fr;

/// The shape of `circuit` (a head, then one part from the top-level namespace `marker`
/// on), counted by a constraint system that keeps nothing: value closures are never
/// called and linear combinations never built.
pub(super) fn count_parts<L: SinkCircuit>(marker: &str, circuit: L) -> Result<PartShape, Failure> {
    let mut counter = Counter {
        watch: Watch::new(marker),
        lens: Lengths {
            inputs: 1, // ONE
            ..Lengths::default()
        },
        head: None,
    };
    circuit.synthesize(&mut counter)?;
    let head = counter
        .head
        .ok_or_else(|| Failure::Shape(format!("no top-level namespace {marker}")))?;
    let all = counter.lens;
    let part = Lengths {
        constraints: all.constraints - head.constraints,
        inputs: all.inputs - head.inputs,
        aux: all.aux - head.aux,
    };
    Ok(PartShape { head, part })
}

/// Counts allocations and constraints, noting the counts where the marker begins.
struct Counter<'m> {
    watch: Watch<'m>,
    lens: Lengths,
    head: Option<Lengths>,
}

impl ConstraintSystem<Fr> for Counter<'_> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        Ok(Variable::new_unchecked(Index::Aux(self.push_aux(Fr::ZERO))))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.lens.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.lens.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.lens.constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        if self.watch.push(name) {
            self.head = Some(self.lens);
        }
    }

    fn pop_namespace(&mut self) {
        self.watch.pop();
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Native witness code is counted the same way.
impl WitnessSink for Counter<'_> {
    fn next_aux(&self) -> usize {
        self.lens.aux
    }

    fn push_aux(&mut self, _: Fr) -> usize {
        self.lens.aux += 1;
        self.lens.aux - 1
    }

    fn push_constraint(&mut self, _: Fr, _: Fr) {
        self.lens.constraints += 1;
    }

    fn mark_a(&mut self, _: Index) {}

    fn mark_b(&mut self, _: Index) {}
}
