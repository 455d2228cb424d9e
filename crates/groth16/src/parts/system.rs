//! The constraint system of one part: its head into an assignment of its own (or read
//! from a head synthesized once), then the part into its slots of the whole assignment.

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use ff::Field;

use super::{Failure, Lengths, PartShape, Watch};
use crate::assignment::eval_lc;
use crate::density::DensityBits;
use crate::sink::WitnessSink;
use crate::{cancel, Fr, ProvingAssignment};

/// One part's slots in the whole assignment.
pub(super) struct Slots<'a> {
    pub(super) a: &'a mut [Fr],
    pub(super) b: &'a mut [Fr],
    pub(super) aux: &'a mut [Fr],
}

/// What a part leaves besides its slots.
pub(super) struct PartOut {
    /// Its own synthesis of the head, with the density bits of head variables that the
    /// part uses.
    pub(super) head: ProvingAssignment,
    /// The part's public inputs.
    pub(super) inputs: Vec<Fr>,
    /// Density bits of the part's own variables and inputs.
    pub(super) a_aux: DensityBits,
    pub(super) b_aux: DensityBits,
    pub(super) b_input: DensityBits,
}

/// The constraint system of one part: the head into a small assignment of its own, then,
/// from the marker on, the part into its slots.
pub(super) struct PartSystem<'a, 'm> {
    watch: Watch<'m>,
    shape: PartShape,
    slots: Slots<'a>,
    /// Constraints and variables the part has written.
    constraints: usize,
    aux: usize,
    out: PartOut,
    /// Whether the marker was seen (the part is being synthesized).
    in_part: bool,
    /// What went wrong, if the part did not fit its slots.
    pub(super) misfit: Option<String>,
    /// A cancellation seen by native witness code (which cannot return it).
    pub(super) cancelled: bool,
    /// The values of a head synthesized once for every part ([`super::shared`]); `None`: the
    /// part synthesizes its own head (`out.head`).
    shared: Option<HeadValues<'a>>,
}

/// The values of a head that parts read without synthesizing it.
#[derive(Clone, Copy)]
pub(super) struct HeadValues<'a> {
    pub(super) inputs: &'a [Fr],
    pub(super) aux: &'a [Fr],
}

impl<'a, 'm> PartSystem<'a, 'm> {
    pub(super) fn new(marker: &'m str, shape: PartShape, slots: Slots<'a>) -> Self {
        let mut head = ProvingAssignment::default();
        // The ONE input, as ProvingAssignment::synthesize allocates it.
        head.input_assignment.push(Fr::ONE);
        head.b_input_density.push_clear();
        Self {
            watch: Watch::new(marker),
            shape,
            slots,
            constraints: 0,
            aux: 0,
            out: PartOut {
                head,
                inputs: Vec::new(),
                a_aux: DensityBits::with_capacity(shape.part.aux),
                b_aux: DensityBits::with_capacity(shape.part.aux),
                b_input: DensityBits::new(),
            },
            in_part: false,
            misfit: None,
            cancelled: false,
            shared: None,
        }
    }

    /// A part that reads `head` (of the shape's head lengths) instead of synthesizing it:
    /// it is in its part from the start, and its copy of the head holds only the density
    /// bits of the head variables it uses.
    pub(super) fn reading(shape: PartShape, slots: Slots<'a>, head: HeadValues<'a>) -> Self {
        let mut sys = Self::new("", shape, slots);
        sys.watch.seen = true;
        sys.in_part = true;
        let h = &mut sys.out.head;
        h.input_assignment.clear();
        h.b_input_density = DensityBits::from_words(Vec::new(), shape.head.inputs);
        h.a_aux_density = DensityBits::from_words(Vec::new(), shape.head.aux);
        h.b_aux_density = DensityBits::from_words(Vec::new(), shape.head.aux);
        sys.shared = Some(head);
        sys
    }

    fn misfit(&mut self, why: String) {
        self.misfit.get_or_insert(why);
    }

    /// The part's result, once its circuit is synthesized.
    pub(super) fn finish(self) -> Result<PartOut, Failure> {
        let part = self.shape.part;
        if let Some(why) = self.misfit {
            return Err(Failure::Shape(why));
        }
        let got = Lengths {
            constraints: self.constraints,
            inputs: self.out.inputs.len(),
            aux: self.aux,
        };
        if !self.in_part || got != part {
            return Err(Failure::Shape(format!(
                "a part of {got:?} against {part:?} (marker seen: {})",
                self.in_part
            )));
        }
        Ok(self.out)
    }
}

impl ConstraintSystem<Fr> for PartSystem<'_, '_> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, a: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if !self.in_part {
            return self.out.head.alloc(a, f);
        }
        if self.aux.is_multiple_of(cancel::CHECK_EVERY) && cancel::requested() {
            return Err(cancel::error());
        }
        let value = f()?;
        let Some(slot) = self.slots.aux.get_mut(self.aux) else {
            self.misfit(format!(
                "a part of more than {} variables",
                self.shape.part.aux
            ));
            return Err(SynthesisError::Unsatisfiable);
        };
        *slot = value;
        self.aux += 1;
        self.out.a_aux.push_clear();
        self.out.b_aux.push_clear();
        Ok(Variable::new_unchecked(Index::Aux(
            self.shape.head.aux + self.aux - 1,
        )))
    }

    fn alloc_input<F, A, AR>(&mut self, a: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if !self.in_part {
            return self.out.head.alloc_input(a, f);
        }
        self.out.inputs.push(f()?);
        self.out.b_input.push_clear();
        Ok(Variable::new_unchecked(Index::Input(
            self.shape.head.inputs + self.out.inputs.len() - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, a: A, la: LA, lb: LB, lc: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        if !self.in_part {
            return self.out.head.enforce(a, la, lb, lc);
        }
        let n = self.constraints;
        // After a misfit, variables may lie beyond the slots: nothing more is evaluated.
        if self.misfit.is_some() {
            return;
        }
        if n == self.slots.a.len() {
            self.misfit(format!(
                "a part of more than {} constraints",
                self.shape.part.constraints
            ));
            return;
        }
        // C is neither built nor evaluated (crate::assignment).
        let (la, lb) = (la(LinearCombination::zero()), lb(LinearCombination::zero()));
        let (hi, ha) = (self.shape.head.inputs, self.shape.head.aux);
        let head = &mut self.out.head;
        let (head_inputs, head_aux) = match self.shared {
            Some(h) => (h.inputs, h.aux),
            None => (&head.input_assignment[..], &head.aux_assignment[..]),
        };
        let (head_a, head_b, head_b_in) = (
            &mut head.a_aux_density,
            &mut head.b_aux_density,
            &mut head.b_input_density,
        );
        let (inputs, aux) = (&self.out.inputs, &*self.slots.aux);
        let (a_aux, b_aux, b_in) = (
            &mut self.out.a_aux,
            &mut self.out.b_aux,
            &mut self.out.b_input,
        );
        // Variables below the head's lengths are the head's; the rest are the part's.
        let va = eval_lc(
            &la,
            |i| input_value(head_inputs, inputs, hi, i),
            |i| aux_value(head_aux, aux, ha, i, (&mut *head_a, &mut *a_aux)),
        );
        let vb = eval_lc(
            &lb,
            |i| {
                if i < hi {
                    head_b_in.set(i);
                } else {
                    b_in.set(i - hi);
                }
                input_value(head_inputs, inputs, hi, i)
            },
            |i| aux_value(head_aux, aux, ha, i, (&mut *head_b, &mut *b_aux)),
        );
        self.slots.a[n] = va;
        self.slots.b[n] = vb;
        self.constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        if self.watch.push(name) {
            let got = Lengths::of(&self.out.head);
            if got == self.shape.head {
                self.in_part = true;
            } else {
                self.misfit(format!("a head of {got:?} against {:?}", self.shape.head));
            }
        }
    }

    fn pop_namespace(&mut self) {
        self.watch.pop();
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Native witness code in a part: as in [`ConstraintSystem::enforce`], variables below the
/// head's lengths are the head's (their density bits go to the part's copy of the head,
/// merged later), the rest are the part's own, in its slots.
impl WitnessSink for PartSystem<'_, '_> {
    fn next_aux(&self) -> usize {
        if !self.in_part {
            return self.out.head.next_aux();
        }
        self.shape.head.aux + self.aux
    }

    fn push_aux(&mut self, value: Fr) -> usize {
        if !self.in_part {
            return self.out.head.push_aux(value);
        }
        if self.aux.is_multiple_of(cancel::CHECK_EVERY) && cancel::requested() {
            self.cancelled = true;
        }
        let index = self.shape.head.aux + self.aux;
        match self.slots.aux.get_mut(self.aux) {
            Some(slot) => {
                *slot = value;
                self.out.a_aux.push_clear();
                self.out.b_aux.push_clear();
            }
            None => self.misfit(format!(
                "a part of more than {} variables",
                self.shape.part.aux
            )),
        }
        // Counted past the slots too, so that every index handed out is distinct.
        self.aux += 1;
        index
    }

    fn push_constraint(&mut self, a: Fr, b: Fr) {
        if !self.in_part {
            return self.out.head.push_constraint(a, b);
        }
        let n = self.constraints;
        if n == self.slots.a.len() {
            self.misfit(format!(
                "a part of more than {} constraints",
                self.shape.part.constraints
            ));
            return;
        }
        self.slots.a[n] = a;
        self.slots.b[n] = b;
        self.constraints += 1;
    }

    fn mark_a(&mut self, var: Index) {
        if !self.in_part {
            return self.out.head.mark_a(var);
        }
        if let Index::Aux(i) = var {
            mark(
                &mut self.out.head.a_aux_density,
                &mut self.out.a_aux,
                self.shape.head.aux,
                i,
            );
        }
    }

    fn mark_b(&mut self, var: Index) {
        if !self.in_part {
            return self.out.head.mark_b(var);
        }
        match var {
            Index::Aux(i) => mark(
                &mut self.out.head.b_aux_density,
                &mut self.out.b_aux,
                self.shape.head.aux,
                i,
            ),
            Index::Input(i) => mark(
                &mut self.out.head.b_input_density,
                &mut self.out.b_input,
                self.shape.head.inputs,
                i,
            ),
        }
    }
}

/// Sets the density bit of variable `i`: the head's below `h`, else the part's own (an
/// index past the part's variables is a misfit already recorded, and sets nothing).
#[inline]
fn mark(head: &mut DensityBits, part: &mut DensityBits, h: usize, i: usize) {
    if i < h {
        head.set(i);
    } else if i - h < part.len() {
        part.set(i - h);
    }
}

/// Aux variable `i` of a part: the head's below `ha`, else the part's own; its density
/// bit set in `bits` (the head's, the part's).
#[inline]
fn aux_value(
    head: &[Fr],
    part: &[Fr],
    ha: usize,
    i: usize,
    bits: (&mut DensityBits, &mut DensityBits),
) -> Fr {
    if i < ha {
        bits.0.set(i);
        head[i]
    } else {
        bits.1.set(i - ha);
        part[i - ha]
    }
}

/// Input `i` of a part: the head's below `hi`, else the part's own.
#[inline]
fn input_value(head: &[Fr], part: &[Fr], hi: usize, i: usize) -> Fr {
    if i < hi {
        head[i]
    } else {
        part[i - hi]
    }
}
