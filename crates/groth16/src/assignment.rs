//! Witness capture: a `ConstraintSystem` that records what every prover backend needs.
//!
//! It follows bellperson's proving rules exactly, so proofs made from it verify against
//! keys made by bellperson (or by [`crate::keygen`]):
//! 1. the ONE input is allocated first;
//! 2. after synthesis, one constraint `input_i * 0 = 0` is added for every input;
//! 3. an aux variable is dense in A (or B) when it occurs there with a non-zero
//!    coefficient; inputs are all dense in A, and are tracked in B;
//! 4. a and b are the evaluations of each constraint's A and B linear combinations.
//!
//! C is never evaluated: every constraint of a satisfying witness has c = a*b, so each
//! backend forms c from a and b (docs/decisions/014-h-in-six-transforms.md). C never
//! contributes density either. Whether a witness satisfies its constraints is therefore
//! not visible here; a witness that does not gives a proof that fails verification, and
//! [`crate::keygen::R1csAssembly::check_assignment`] checks it where the matrices are at
//! hand.
//!
//! Memory: 2 x 32 bytes per constraint (a, b), 32 bytes per variable and 3 bits per
//! variable for the densities; nothing is allocated per constraint. A 32 GiB PoRep
//! partition (130.3 M constraints, 130.2 M aux) takes about 7.8 GiB + 3.9 GiB.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use ff::Field;

use crate::density::DensityBits;
use crate::recycle::{self, HostPins};
use crate::Fr;

/// The captured witness of one circuit, ready for any backend.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProvingAssignment {
    /// Page-lockings a backend attached to the vectors below (crate::recycle). First, so
    /// they are released before the vectors are freed.
    pub pins: HostPins,
    /// Evaluation of each constraint's A linear combination.
    pub a: Vec<Fr>,
    /// Evaluation of each constraint's B linear combination.
    pub b: Vec<Fr>,
    /// Public inputs, the ONE input first.
    pub input_assignment: Vec<Fr>,
    /// Private (auxiliary) variables.
    pub aux_assignment: Vec<Fr>,
    /// Aux variables occurring in A.
    pub a_aux_density: DensityBits,
    /// Inputs occurring in B.
    pub b_input_density: DensityBits,
    /// Aux variables occurring in B.
    pub b_aux_density: DensityBits,
}

impl ProvingAssignment {
    /// Synthesizes `circuit` and returns its finished assignment (ONE input allocated
    /// first, input constraints appended).
    ///
    /// Fills the thread's reused assignment when the engine set one
    /// ([`recycle::with_shell`]).
    pub fn synthesize<C: Circuit<Fr>>(circuit: C) -> Result<Self, SynthesisError> {
        let mut cs = recycle::take_shell().unwrap_or_default();
        cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
        circuit.synthesize(&mut cs)?;
        cs.finish();
        Ok(cs)
    }

    /// Empties every vector, keeping its allocation (and any pin on it).
    pub fn clear(&mut self) {
        self.a.clear();
        self.b.clear();
        self.input_assignment.clear();
        self.aux_assignment.clear();
        self.a_aux_density.clear();
        self.b_input_density.clear();
        self.b_aux_density.clear();
    }

    /// Makes room for exactly `constraints` values in each of a, b and `aux` in the aux
    /// witness (in all), releasing first the pin of any vector that reallocates for it.
    /// Code that fills the vectors without the `ConstraintSystem` methods calls this first.
    pub fn reserve_vectors(&mut self, constraints: usize, aux: usize) {
        for (v, n) in [
            (&mut self.a, constraints),
            (&mut self.b, constraints),
            (&mut self.aux_assignment, aux),
        ] {
            let extra = n.saturating_sub(v.len());
            grow(&self.pins, v, extra);
            v.reserve_exact(extra);
        }
    }

    /// Appends one aux variable (for native witness code, [`crate::sink`]); returns its
    /// index. Its density bits start clear.
    #[inline]
    pub(crate) fn push_aux_value(&mut self, value: Fr) -> usize {
        grow(&self.pins, &self.aux_assignment, 1);
        self.aux_assignment.push(value);
        self.a_aux_density.push_clear();
        self.b_aux_density.push_clear();
        self.aux_assignment.len() - 1
    }

    /// Appends one constraint's evaluations (for native witness code, [`crate::sink`]).
    #[inline]
    pub(crate) fn push_evaluations(&mut self, a: Fr, b: Fr) {
        for v in [&self.a, &self.b] {
            grow(&self.pins, v, 1);
        }
        self.a.push(a);
        self.b.push(b);
    }

    /// Appends the `input_i * 0 = 0` constraints that make the IC query fully dense.
    /// Call once, after synthesis (done by [`ProvingAssignment::synthesize`]).
    ///
    /// Room for them is made exactly: a vector filled to a reserved capacity (parted
    /// synthesis) would otherwise double on the first push, and with it the memory a
    /// kept partition buffer is counted at and what a backend page-locks.
    pub fn finish(&mut self) {
        let inputs = self.input_assignment.len();
        let need = self.a.len() + inputs;
        self.reserve_vectors(need, self.aux_assignment.len());
        for i in 0..inputs {
            self.enforce(
                || "",
                |lc| lc + Variable::new_unchecked(Index::Input(i)),
                |lc| lc,
                |lc| lc,
            );
        }
    }

    /// Number of constraints (including the input constraints once finished).
    pub fn num_constraints(&self) -> usize {
        self.a.len()
    }

    /// log2 of the evaluation domain: the smallest power of two holding every constraint.
    pub fn log_domain_size(&self) -> u32 {
        self.a.len().max(1).next_power_of_two().trailing_zeros()
    }

    /// Bytes this assignment holds (for memory budgets and logs).
    pub fn heap_bytes(&self) -> usize {
        let fr = std::mem::size_of::<Fr>();
        (self.a.capacity() + self.b.capacity()) * fr
            + (self.input_assignment.capacity() + self.aux_assignment.capacity()) * fr
            + self.a_aux_density.heap_bytes()
            + self.b_input_density.heap_bytes()
            + self.b_aux_density.heap_bytes()
    }
}

/// Releases `v`'s pin when adding `extra` values would reallocate it (the pinned range
/// must not be freed while pinned). A comparison per push; the lock only on growth.
#[inline]
fn grow(pins: &HostPins, v: &Vec<Fr>, extra: usize) {
    if v.len() + extra > v.capacity() {
        pins.release(v.as_ptr().cast());
    }
}

/// Evaluates `lc`: `input(i)` and `aux(i)` give a variable's value and are called only
/// for terms with a non-zero coefficient (so they can mark the variable's density bit).
#[inline]
pub(crate) fn eval_lc(
    lc: &LinearCombination<Fr>,
    mut input: impl FnMut(usize) -> Fr,
    mut aux: impl FnMut(usize) -> Fr,
) -> Fr {
    let mut acc = Fr::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if *coeff != Fr::ZERO {
            add_term(&mut acc, input(i), coeff);
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if *coeff != Fr::ZERO {
            add_term(&mut acc, aux(i), coeff);
        }
    }
    acc
}

/// `acc += value * coeff`, without a product when either is 0 or 1: Filecoin witnesses
/// are mostly bits (SHA-256 gadgets) and their linear combinations mostly carry powers of
/// two, so most terms need no Montgomery product. The comparisons are of the Montgomery
/// limbs (blstrs' `PartialEq`), not constant-time: the witness is the prover's own.
#[inline]
fn add_term(acc: &mut Fr, value: Fr, coeff: &Fr) {
    if value == Fr::ZERO {
        return;
    }
    if value == Fr::ONE {
        *acc += coeff;
    } else if *coeff == Fr::ONE {
        *acc += value;
    } else {
        *acc += value * coeff;
    }
}

impl ConstraintSystem<Fr> for ProvingAssignment {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if self
            .aux_assignment
            .len()
            .is_multiple_of(crate::cancel::CHECK_EVERY)
            && crate::cancel::requested()
        {
            return Err(crate::cancel::error());
        }
        let value = f()?;
        grow(&self.pins, &self.aux_assignment, 1);
        self.aux_assignment.push(value);
        self.a_aux_density.push_clear();
        self.b_aux_density.push_clear();
        Ok(Variable::new_unchecked(Index::Aux(
            self.aux_assignment.len() - 1,
        )))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input_assignment.push(f()?);
        self.b_input_density.push_clear();
        Ok(Variable::new_unchecked(Index::Input(
            self.input_assignment.len() - 1,
        )))
    }

    /// Evaluates A and B; C is neither built nor evaluated (module doc).
    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        let (la, lb) = (a(LinearCombination::zero()), b(LinearCombination::zero()));
        let (inputs, aux) = (&self.input_assignment, &self.aux_assignment);
        let (a_aux, b_in, b_aux) = (
            &mut self.a_aux_density,
            &mut self.b_input_density,
            &mut self.b_aux_density,
        );
        // Inputs are dense in A by construction (input constraints), so only aux is tracked.
        let va = eval_lc(
            &la,
            |i| inputs[i],
            |i| {
                a_aux.set(i);
                aux[i]
            },
        );
        let vb = eval_lc(
            &lb,
            |i| {
                b_in.set(i);
                inputs[i]
            },
            |i| {
                b_aux.set(i);
                aux[i]
            },
        );
        for v in [&self.a, &self.b] {
            grow(&self.pins, v, 1);
        }
        self.a.push(va);
        self.b.push(vb);
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

    fn is_extensible() -> bool {
        true
    }

    /// Appends a sub-system synthesized on its own (WindowPoSt synthesizes sectors in
    /// parallel); `other`'s first input is its temporary ONE and is skipped.
    fn extend(&mut self, other: &Self) {
        self.a_aux_density.append(&other.a_aux_density);
        // Both systems share the ONE input: merge its B bit, append the other inputs.
        if self.b_input_density.is_empty() {
            self.b_input_density.append(&other.b_input_density);
        } else {
            if other.b_input_density.get(0) {
                self.b_input_density.set(0);
            }
            self.b_input_density.extend_from(&other.b_input_density, 1);
        }
        self.b_aux_density.append(&other.b_aux_density);
        for v in [&self.a, &self.b] {
            grow(&self.pins, v, other.a.len());
        }
        grow(&self.pins, &self.aux_assignment, other.aux_assignment.len());
        self.a.extend_from_slice(&other.a);
        self.b.extend_from_slice(&other.b);
        self.input_assignment
            .extend_from_slice(other.input_assignment.get(1..).unwrap_or(&[]));
        self.aux_assignment.extend_from_slice(&other.aux_assignment);
    }
}
