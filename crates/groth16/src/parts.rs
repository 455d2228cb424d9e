//! Synthesis of a circuit made of a shared head and independent parts, the parts in
//! parallel.
//!
//! Filecoin's largest circuits repeat one sub-circuit per challenge. A PoRep partition
//! of a 32 GiB sector is a head of a few thousand constraints (its public commitments,
//! their bits, one hash) followed by 18 challenge proofs of identical shape, each of which
//! reads only the head's variables besides its own. Synthesized in order, one core does
//! all 130 M constraints. Here part `j` is synthesized on its own thread from a circuit
//! that holds the head and part `j` alone (`part_circuit(j)`): its head is synthesized
//! again (and must come out equal, value for value), its constraints and new variables go
//! straight into the slots that ordered synthesis gives part `j` in the whole assignment,
//! and its uses of head variables are merged into the head's density bits. The result is
//! equal to synthesizing the whole circuit in order, field for field and bit for bit
//! (tests below, and the Filecoin crate's on real PoRep circuits).
//!
//! Where part `j` begins is a top-level namespace named `marker` (the first one so named).
//! The shape of head and part is learnt once per `key` and process, by counting the
//! circuit of the head and part 0 without a witness (no values computed, no linear
//! combinations built: a fraction of its synthesis); every part then runs in parallel.
//! Anything that does not fit the shape (a part of another
//! size, a different head, no marker) is not an error of the circuit: the whole circuit is
//! then synthesized in order, and so is every later synthesis of the key.

use std::collections::HashMap;
use std::sync::Mutex;

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use ff::Field;
use rayon::prelude::*;

use crate::assignment::eval_lc;
use crate::density::DensityBits;
use crate::sink::{GadgetCircuit, SinkCircuit, WitnessSink};
use crate::{cancel, recycle, Fr, ProvingAssignment};

mod shared;
pub use shared::{synthesize_shared_head, InOrder, SharedHeadCircuit};

/// Lengths of an assignment, or of a piece of one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lengths {
    /// Constraints (entries of a and b).
    pub constraints: usize,
    /// Public inputs (the ONE input included in a head).
    pub inputs: usize,
    /// Private variables.
    pub aux: usize,
}

impl Lengths {
    fn of(cs: &ProvingAssignment) -> Self {
        Self {
            constraints: cs.a.len(),
            inputs: cs.input_assignment.len(),
            aux: cs.aux_assignment.len(),
        }
    }
}

/// The shape of a parted circuit: its head (up to the marker, the ONE input included) and
/// each part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartShape {
    /// What precedes the first part.
    pub head: Lengths,
    /// One part.
    pub part: Lengths,
}

/// What a key's first synthesis found.
#[derive(Clone, Copy, Debug)]
enum Learnt {
    Fits(PartShape),
    /// The parts did not fit one shape: the key is synthesized in order from then on.
    Misfit,
}

/// What was learnt so far, by key.
fn learnt() -> &'static Mutex<HashMap<String, Learnt>> {
    static LEARNT: std::sync::OnceLock<Mutex<HashMap<String, Learnt>>> = std::sync::OnceLock::new();
    LEARNT.get_or_init(Default::default)
}

fn lookup(key: &str) -> Option<Learnt> {
    learnt()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(key)
        .copied()
}

/// The shape learnt for `key`, if any.
pub fn known_shape(key: &str) -> Option<PartShape> {
    match lookup(key)? {
        Learnt::Fits(shape) => Some(shape),
        Learnt::Misfit => None,
    }
}

/// Whether `key`'s parts were found not to fit one shape (it is synthesized in order).
pub fn misfits(key: &str) -> bool {
    matches!(lookup(key), Some(Learnt::Misfit))
}

/// Forgets everything learnt: the next synthesis of each key counts its shape again
/// (tests of that path; a process never needs it).
pub fn forget_shapes() {
    learnt().lock().unwrap_or_else(|p| p.into_inner()).clear();
}

fn remember(key: &str, what: Learnt) {
    let mut map = learnt().lock().unwrap_or_else(|p| p.into_inner());
    map.insert(key.to_string(), what);
}

/// Why a parted synthesis gave up (the whole circuit is then synthesized in order).
#[derive(Debug)]
enum Failure {
    /// The circuit's own error (a missing value, a cancellation): returned as it is.
    Circuit(SynthesisError),
    /// The circuit did not have the shape of a head and equal parts.
    Shape(String),
}

impl From<SynthesisError> for Failure {
    fn from(e: SynthesisError) -> Self {
        Failure::Circuit(e)
    }
}

/// Synthesizes a circuit of a head and `parts` independent parts: `part_circuit(j)` is the
/// circuit of the head and part `j` alone, in which part `j` begins at the top-level
/// namespace `marker`; `whole()` is the whole circuit, synthesized in order when the parts
/// do not fit one shape. Equal to [`ProvingAssignment::synthesize`] of the whole circuit.
/// Fills the thread's reused assignment when the engine set one ([`recycle::with_shell`]),
/// and keeps its page-locking unless the vectors must grow.
pub fn synthesize_parts<C, W>(
    key: &str,
    parts: usize,
    marker: &str,
    part_circuit: impl Fn(usize) -> Result<C, SynthesisError> + Sync,
    whole: impl FnOnce() -> Result<W, SynthesisError>,
) -> Result<ProvingAssignment, SynthesisError>
where
    C: Circuit<Fr>,
    W: Circuit<Fr>,
{
    let mut cs = recycle::take_shell().unwrap_or_default();
    let learnt = lookup(key);
    if parts > 0 && !matches!(learnt, Some(Learnt::Misfit)) {
        let shape = learnt.and_then(|l| match l {
            Learnt::Fits(shape) => Some(shape),
            Learnt::Misfit => None,
        });
        let part = |j| part_circuit(j).map(GadgetCircuit);
        match parted(&mut cs, key, shape, parts, marker, || part(0), &part) {
            Ok(()) => return Ok(cs),
            Err(Failure::Circuit(e)) => return Err(e),
            Err(Failure::Shape(why)) => {
                log::warn!(
                    "synthesizing {key} in order from now on: its parts do not fit one \
                     shape ({why})"
                );
                remember(key, Learnt::Misfit);
            }
        }
    }
    let circuit = whole()?;
    let (r, _) = recycle::with_shell(Some(cs), || ProvingAssignment::synthesize(circuit));
    r
}

/// Why [`try_synthesize_parts`] gave up.
#[derive(Debug)]
pub enum PartsError {
    /// A circuit's own error (a missing value, a cancellation).
    Circuit(SynthesisError),
    /// The parts did not fit the shape learnt for the key (or the key's circuits are
    /// synthesized in order): nothing is remembered against the key, and the assignment
    /// that was being filled is handed back for the caller's other synthesis.
    Misfit {
        /// What did not fit.
        why: String,
        /// The assignment being filled (the engine's reused one, when it set one).
        shell: Box<ProvingAssignment>,
    },
}

impl std::fmt::Display for PartsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PartsError::Circuit(e) => write!(f, "{e}"),
            PartsError::Misfit { why, .. } => write!(f, "the parts do not fit: {why}"),
        }
    }
}

/// [`synthesize_parts`] for parts that may write witness natively, held to a reference:
/// when `key`'s shape is not known yet, `learn()` (the reference circuit of the head and
/// part 0, e.g. the upstream gadgets') gives it, counted; every part comes from
/// `part_circuit(j)`, in parallel, and must fit that shape.
/// A misfit is returned, not synthesized in order, so that the caller can fall back to its
/// reference path; the key keeps the shape `learn` gave.
pub fn try_synthesize_parts<L, C>(
    key: &str,
    parts: usize,
    marker: &str,
    learn: impl FnOnce() -> Result<L, SynthesisError>,
    part_circuit: impl Fn(usize) -> Result<C, SynthesisError> + Sync,
) -> Result<ProvingAssignment, PartsError>
where
    L: SinkCircuit,
    C: SinkCircuit,
{
    let mut cs = recycle::take_shell().unwrap_or_default();
    let misfit = |why: String, mut cs: ProvingAssignment| {
        cs.clear();
        Err(PartsError::Misfit {
            why,
            shell: Box::new(cs),
        })
    };
    let shape = match lookup(key) {
        _ if parts == 0 => return misfit("no parts".into(), cs),
        Some(Learnt::Misfit) => return misfit(format!("{key} is synthesized in order"), cs),
        Some(Learnt::Fits(shape)) => Some(shape),
        None => None,
    };
    match parted(&mut cs, key, shape, parts, marker, learn, &part_circuit) {
        Ok(()) => Ok(cs),
        Err(Failure::Circuit(e)) => Err(PartsError::Circuit(e)),
        Err(Failure::Shape(why)) => misfit(why, cs),
    }
}

/// The parted synthesis into `cs` (empty), with `known` the shape learnt for `key`;
/// `learn()`: the circuit of the head and part 0 that gives the shape when it is not known.
fn parted<L: SinkCircuit, C: SinkCircuit>(
    cs: &mut ProvingAssignment,
    key: &str,
    known: Option<PartShape>,
    parts: usize,
    marker: &str,
    learn: impl FnOnce() -> Result<L, SynthesisError>,
    part_circuit: &(impl Fn(usize) -> Result<C, SynthesisError> + Sync),
) -> Result<(), Failure> {
    // When the shape is not known yet, `learn()` gives it, counted without a witness (a
    // fraction of its synthesis: no values, no linear combinations evaluated).
    let shape = match known {
        Some(shape) => shape,
        None => {
            let t = std::time::Instant::now();
            let shape = count_parts(marker, learn()?)?;
            remember(key, Learnt::Fits(shape));
            log::info!(
                "{key}: shape counted in {:.1} ms (head {:?}, {parts} parts of {:?})",
                t.elapsed().as_secs_f64() * 1e3,
                shape.head,
                shape.part
            );
            shape
        }
    };
    let PartShape { head, part } = shape;
    if part.constraints == 0 || part.aux == 0 {
        return Err(Failure::Shape(
            "a part with no constraints or no variables".into(),
        ));
    }
    // Slots for every part, zeroed in parallel (only the vectors that must grow lose
    // their page-locking).
    let total_c = head.constraints + parts * part.constraints;
    let total_aux = head.aux + parts * part.aux;
    cs.reserve_vectors(total_c, total_aux);
    for v in [&mut cs.a, &mut cs.b] {
        zero_extend(v, total_c);
    }
    zero_extend(&mut cs.aux_assignment, total_aux);
    let flag = cancel::current();
    let results: Vec<Result<PartOut, Failure>> = {
        let (c0, a0) = (head.constraints, head.aux);
        let slots = cs.a[c0..]
            .par_chunks_mut(part.constraints)
            .zip(cs.b[c0..].par_chunks_mut(part.constraints))
            .zip(cs.aux_assignment[a0..].par_chunks_mut(part.aux));
        slots
            .enumerate()
            .map(|(i, ((a, b), aux))| {
                let mut run = move || {
                    let mut sys = PartSystem::new(marker, shape, Slots { a, b, aux });
                    let r = part_circuit(i)?.synthesize(&mut sys);
                    // A part that outgrew its slots fails its allocations: a misfit, not
                    // the circuit's error.
                    match (r, sys.misfit.take()) {
                        _ if sys.cancelled => Err(Failure::Circuit(cancel::error())),
                        (_, Some(why)) => Err(Failure::Shape(why)),
                        (Err(e), None) => Err(Failure::Circuit(e)),
                        (Ok(()), None) => sys.finish(),
                    }
                };
                match &flag {
                    Some(f) => cancel::with_cancel_flag(f.clone(), run),
                    None => run(),
                }
            })
            .collect()
    };
    let mut outs = Vec::with_capacity(results.len());
    for r in results {
        outs.push(r?);
    }
    merge(cs, shape, outs)?;
    cs.finish();
    Ok(())
}

/// Extends `v` with zeros to `len`, in parallel (`v` has the capacity).
fn zero_extend(v: &mut Vec<Fr>, len: usize) {
    let extra = len.saturating_sub(v.len());
    v.par_extend(rayon::iter::repeat_n(Fr::ZERO, extra));
}

/// Puts the parts' heads, inputs and density bits into `cs` (whose a, b and aux slots
/// the parts filled), in part order; the head comes from part 0's own.
fn merge(cs: &mut ProvingAssignment, shape: PartShape, outs: Vec<PartOut>) -> Result<(), Failure> {
    merge_parts(cs, shape, 0, outs, false)
}

/// [`merge`] of parts `first..`: with `first` = 1, `cs` already holds the head and part 0;
/// with `shared`, the parts read the head in `cs` rather than synthesizing their own
/// ([`shared`]): there is no head of theirs to copy or compare, only the density bits of
/// the head variables they used.
fn merge_parts(
    cs: &mut ProvingAssignment,
    shape: PartShape,
    first: usize,
    outs: Vec<PartOut>,
    shared: bool,
) -> Result<(), Failure> {
    let head = shape.head;
    if first == 0 && !shared {
        let h = &outs[0].head;
        cs.a[..head.constraints].copy_from_slice(&h.a);
        cs.b[..head.constraints].copy_from_slice(&h.b);
        cs.aux_assignment[..head.aux].copy_from_slice(&h.aux_assignment);
        // `cs` was empty: its inputs and density bits begin with part 0's head's.
        cs.input_assignment.extend_from_slice(&h.input_assignment);
        cs.a_aux_density.append(&h.a_aux_density);
        cs.b_aux_density.append(&h.b_aux_density);
        cs.b_input_density.append(&h.b_input_density);
    }
    for (i, out) in outs.iter().enumerate() {
        let h = &out.head;
        let same = shared
            || h.a[..] == cs.a[..head.constraints]
                && h.b[..] == cs.b[..head.constraints]
                && h.aux_assignment[..] == cs.aux_assignment[..head.aux]
                && h.input_assignment[..] == cs.input_assignment[..head.inputs];
        if !same {
            return Err(Failure::Shape(format!(
                "part {}'s head differs from part 0's",
                first + i
            )));
        }
        cs.a_aux_density.or_prefix(&h.a_aux_density);
        cs.b_aux_density.or_prefix(&h.b_aux_density);
        cs.b_input_density.or_prefix(&h.b_input_density);
        cs.a_aux_density.append(&out.a_aux);
        cs.b_aux_density.append(&out.b_aux);
        cs.b_input_density.append(&out.b_input);
        cs.input_assignment.extend_from_slice(&out.inputs);
    }
    Ok(())
}

/// Finds the first top-level namespace called `marker`.
struct Watch<'m> {
    marker: &'m str,
    depth: usize,
    seen: bool,
}

impl<'m> Watch<'m> {
    fn new(marker: &'m str) -> Self {
        Self {
            marker,
            depth: 0,
            seen: false,
        }
    }

    /// A namespace is entered: true when it is the marker (names are built only at the
    /// top level and until the marker is seen).
    fn push<NR: Into<String>>(&mut self, name: impl FnOnce() -> NR) -> bool {
        let found = self.depth == 0 && !self.seen && name().into() == self.marker;
        self.seen |= found;
        self.depth += 1;
        found
    }

    fn pop(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
}

/// The shape of `circuit` (a head, then one part from the top-level namespace `marker`
/// on), counted by a constraint system that keeps nothing: value closures are never
/// called and linear combinations never built.
fn count_parts<L: SinkCircuit>(marker: &str, circuit: L) -> Result<PartShape, Failure> {
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

/// One part's slots in the whole assignment.
struct Slots<'a> {
    a: &'a mut [Fr],
    b: &'a mut [Fr],
    aux: &'a mut [Fr],
}

/// What a part leaves besides its slots.
struct PartOut {
    /// Its own synthesis of the head, with the density bits of head variables that the
    /// part uses.
    head: ProvingAssignment,
    /// The part's public inputs.
    inputs: Vec<Fr>,
    /// Density bits of the part's own variables and inputs.
    a_aux: DensityBits,
    b_aux: DensityBits,
    b_input: DensityBits,
}

/// The constraint system of one part: the head into a small assignment of its own, then,
/// from the marker on, the part into its slots.
struct PartSystem<'a, 'm> {
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
    misfit: Option<String>,
    /// A cancellation seen by native witness code (which cannot return it).
    cancelled: bool,
    /// The values of a head synthesized once for every part ([`shared`]); `None`: the
    /// part synthesizes its own head (`out.head`).
    shared: Option<HeadValues<'a>>,
}

/// The values of a head that parts read without synthesizing it.
#[derive(Clone, Copy)]
struct HeadValues<'a> {
    inputs: &'a [Fr],
    aux: &'a [Fr],
}

impl<'a, 'm> PartSystem<'a, 'm> {
    fn new(marker: &'m str, shape: PartShape, slots: Slots<'a>) -> Self {
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
    fn reading(shape: PartShape, slots: Slots<'a>, head: HeadValues<'a>) -> Self {
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
    fn finish(self) -> Result<PartOut, Failure> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
    use bellperson::Namespace;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A head (a value, its public input, its low bits) and one part per entry of
    /// `parts` (their value and length); `only`: the circuit of the head and that part
    /// alone, named "part_0" as a circuit of one part names it. Each part uses head
    /// variables and inputs in A, B and C, with coefficients 0, 1, 2 and others.
    struct Parted {
        head: u64,
        parts: Vec<(u64, usize)>,
        only: Option<usize>,
        /// The head's value as part j's circuit sees it (a head that differs).
        head_of: Option<fn(usize) -> u64>,
        /// The marker's name.
        marker: &'static str,
        /// Part j's value is missing.
        missing: Option<usize>,
        /// As a [`SinkCircuit`]: the parts' chains written natively; `Some(j)`: part j's
        /// chain one link longer there (a native part that does not fit).
        native: bool,
        native_extra: Option<usize>,
    }

    impl Parted {
        fn new(head: u64, parts: &[(u64, usize)]) -> Self {
            Self {
                head,
                parts: parts.to_vec(),
                only: None,
                head_of: None,
                marker: "part_",
                missing: None,
                native: false,
                native_extra: None,
            }
        }

        fn part(&self, j: usize) -> Self {
            Self {
                parts: vec![self.parts[j]],
                only: Some(j),
                head: self.head_of.map_or(self.head, |f| f(j)),
                ..Self::new(self.head, &[])
            }
            .with(self)
        }

        fn with(mut self, from: &Self) -> Self {
            self.marker = from.marker;
            self.missing = from.missing;
            self.native = from.native;
            self.native_extra = from.native_extra;
            self
        }
    }

    /// One link of a part's chain: y = (prev + coeff h + bit) * (h + 2 input) + coeff x.
    struct Link {
        prev: (Variable, Fr),
        coeff: Fr,
        h: (Variable, Fr),
        hin: Variable,
        bit: Boolean,
        x: (Variable, Fr),
    }

    impl Link {
        /// The values of A, B and y.
        fn values(&self) -> (Fr, Fr, Fr) {
            let bitv = Fr::from(self.bit.get_value().unwrap_or(false) as u64);
            let left = self.prev.1 + self.coeff * self.h.1 + bitv;
            let right = self.h.1 + Fr::from(2u64) * self.h.1;
            (left, right, left * right + self.coeff * self.x.1)
        }

        /// Through `alloc` and `enforce`.
        fn gadget<CS: ConstraintSystem<Fr>>(
            &self,
            cs: &mut CS,
            i: usize,
        ) -> Result<(Variable, Fr), SynthesisError> {
            let (_, _, yv) = self.values();
            let y = cs.alloc(|| format!("y{i}"), || Ok(yv))?;
            cs.enforce(
                || format!("c{i}"),
                |lc| lc + self.prev.0 + (self.coeff, self.h.0) + &self.bit.lc(CS::one(), Fr::ONE),
                |lc| lc + self.h.0 + (Fr::from(2u64), self.hin),
                |lc| lc + y - (self.coeff, self.x.0),
            );
            Ok((y, yv))
        }

        /// Through the sink, marking what `enforce` would mark.
        fn native(&self, sink: &mut impl WitnessSink) -> (Variable, Fr) {
            let (a, b, yv) = self.values();
            let y = sink.push_aux(yv);
            sink.push_constraint(a, b);
            sink.mark_a(self.prev.0.get_unchecked());
            if self.coeff != Fr::ZERO {
                sink.mark_a(self.h.0.get_unchecked());
            }
            if let Boolean::Is(bit) = &self.bit {
                sink.mark_a(bit.get_variable().get_unchecked());
            }
            sink.mark_b(self.h.0.get_unchecked());
            sink.mark_b(self.hin.get_unchecked());
            (Variable::new_unchecked(Index::Aux(y)), yv)
        }
    }

    /// How a part's links are written.
    type Linker<'l, R> = &'l mut dyn FnMut(
        &mut Namespace<'_, Fr, R>,
        &Link,
        usize,
    ) -> Result<(Variable, Fr), SynthesisError>;

    impl Circuit<Fr> for Parted {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            self.body(cs, &mut |cs, link, i| link.gadget(cs, i))
        }
    }

    impl SinkCircuit for Parted {
        fn synthesize<CS>(self, cs: &mut CS) -> Result<(), SynthesisError>
        where
            CS: ConstraintSystem<Fr>,
            CS::Root: crate::sink::SinkRoot,
        {
            if !self.native {
                return Circuit::synthesize(self, cs);
            }
            self.body(cs, &mut |cs, link, _| Ok(link.native(cs.get_root())))
        }
    }

    impl Parted {
        fn body<CS: ConstraintSystem<Fr>>(
            self,
            cs: &mut CS,
            link: Linker<'_, CS::Root>,
        ) -> Result<(), SynthesisError> {
            let h = cs.alloc(|| "h", || Ok(Fr::from(self.head)))?;
            let hin = cs.alloc_input(|| "h input", || Ok(Fr::from(self.head)))?;
            cs.enforce(
                || "h = input",
                |lc| lc + h,
                |lc| lc + CS::one(),
                |lc| lc + hin,
            );
            let mut bits = Vec::new();
            for i in 0..8 {
                let mut ns = cs.namespace(|| format!("bit {i}"));
                let bit = AllocatedBit::alloc(&mut ns, Some((self.head >> i) & 1 == 1))?;
                bits.push(Boolean::from(bit));
            }
            // Head variables that only the parts use: in A, in B, and an input in B (their
            // density bits come from the parts alone).
            let ga = cs.alloc(|| "ga", || Ok(Fr::from(7u64)))?;
            let gb = cs.alloc(|| "gb", || Ok(Fr::from(9u64)))?;
            let gin = cs.alloc_input(|| "g input", || Ok(Fr::from(11u64)))?;
            let first = self.only.unwrap_or(0);
            for (k, &(value, len)) in self.parts.iter().enumerate() {
                let j = first + k;
                let mut cs = cs.namespace(|| format!("{}{k}", self.marker));
                let missing = self.missing == Some(j);
                let x = cs.alloc(
                    || "x",
                    || {
                        if missing {
                            Err(SynthesisError::AssignmentMissing)
                        } else {
                            Ok(Fr::from(value))
                        }
                    },
                )?;
                let xin = cs.alloc_input(|| "x input", || Ok(Fr::from(value)))?;
                cs.enforce(
                    || "x = input",
                    |lc| lc + xin,
                    |lc| lc + CS::one(),
                    |lc| lc + x,
                );
                // Only parts 1, 4, ... use gb and g input, only parts 2, 5, ... use ga
                // (so their bits come from parts other than the first).
                if j % 3 == 1 {
                    // x * (gb + g input) = 20 x, ga in A at coefficient 0.
                    cs.enforce(
                        || "g",
                        |lc| lc + x + (Fr::ZERO, ga),
                        |lc| lc + gb + gin,
                        |lc| lc + (Fr::from(20u64), x),
                    );
                } else {
                    let g = if j % 3 == 2 { ga } else { x };
                    cs.enforce(
                        || "g",
                        |lc| lc + (Fr::from(7u64), x) - ga + ga + g,
                        |lc| lc + CS::one(),
                        |lc| lc + (Fr::from(7u64), x) + g,
                    );
                }
                let mut prev = (x, Fr::from(value));
                let len = len + usize::from(self.native && self.native_extra == Some(j));
                for i in 0..len {
                    let coeff = match i % 4 {
                        0 => Fr::ZERO,
                        1 => Fr::ONE,
                        2 => Fr::from(2u64),
                        _ => Fr::from(0x1234_5678 + i as u64),
                    };
                    let l = Link {
                        prev,
                        coeff,
                        h: (h, Fr::from(self.head)),
                        hin,
                        bit: bits[i % 8].clone(),
                        x: (x, Fr::from(value)),
                    };
                    prev = link(&mut cs, &l, i)?;
                }
                // One gadget constraint after the native links (they interleave).
                cs.enforce(
                    || "end",
                    |lc| lc + prev.0,
                    |lc| lc + CS::one(),
                    |lc| lc + prev.0,
                );
            }
            Ok(())
        }
    }

    /// A key no other test uses.
    fn key() -> String {
        static N: AtomicUsize = AtomicUsize::new(0);
        format!("test-{}", N.fetch_add(1, Ordering::Relaxed))
    }

    fn parted(c: &Parted, key: &str) -> Result<ProvingAssignment, SynthesisError> {
        synthesize_parts(
            key,
            c.parts.len(),
            &format!("{}0", c.marker),
            |j| Ok(c.part(j)),
            || Ok(c.clone_whole()),
        )
    }

    impl Parted {
        fn clone_whole(&self) -> Self {
            Self {
                head: self.head,
                parts: self.parts.clone(),
                only: None,
                head_of: None,
                marker: self.marker,
                missing: self.missing,
                native: self.native,
                native_extra: self.native_extra,
            }
        }
    }

    fn ordered(c: &Parted) -> ProvingAssignment {
        ProvingAssignment::synthesize(c.clone_whole()).unwrap()
    }

    #[test]
    fn parts_in_parallel_equal_ordered_synthesis() {
        let c = Parted::new(0xa5, &[(3, 40), (5, 40), (7, 40), (11, 40), (13, 40)]);
        let want = ordered(&c);
        let key = key();
        // First time: the shape counted, then every part in parallel; later, at once.
        assert_eq!(parted(&c, &key).unwrap(), want);
        let shape = known_shape(&key).expect("shape learnt");
        assert_eq!(shape.part.inputs, 1);
        assert_eq!(parted(&c, &key).unwrap(), want);
        // One part, and another witness of the same shape.
        let one = Parted::new(0x3c, &[(9, 40)]);
        assert_eq!(parted(&one, &key).unwrap(), ordered(&one));
        let other = Parted::new(0x5a, &[(2, 40), (4, 40)]);
        assert_eq!(parted(&other, &key).unwrap(), ordered(&other));
    }

    /// Parts whose chains go through the sink (with gadget constraints between) fill the
    /// same assignment as the gadget path: learnt from the gadget circuit's part 0, then
    /// every part native; learnt from a native part 0 (the sink of ordered synthesis); and
    /// the native whole circuit synthesized in order.
    #[test]
    fn native_parts_equal_gadget_parts() {
        let c = Parted::new(0x96, &[(3, 40), (5, 40), (7, 40), (11, 40)]);
        let want = ordered(&c);
        let mut native = c.clone_whole();
        native.native = true;
        assert_eq!(crate::sink::synthesize(native.clone_whole()).unwrap(), want);
        let key = key();
        let run = |learn: &Parted| {
            try_synthesize_parts(
                &key,
                4,
                "part_0",
                || Ok(learn.part(0)),
                |j| Ok(native.part(j)),
            )
            .unwrap()
        };
        assert_eq!(run(&c), want, "learnt from the gadget part");
        assert!(known_shape(&key).is_some());
        assert_eq!(run(&c), want, "every part native");
        parted(&c, &key).unwrap();
        let key2 = self::key();
        let r = try_synthesize_parts(
            &key2,
            4,
            "part_0",
            || Ok(native.part(0)),
            |j| Ok(native.part(j)),
        );
        assert_eq!(r.unwrap(), want, "learnt from a native part");
    }

    /// A native part that does not fit the shape learnt from the gadget circuit is a
    /// misfit handed back with the shell; the key keeps its shape (the gadget path still
    /// synthesizes it in parts).
    #[test]
    fn a_native_misfit_is_returned() {
        let c = Parted::new(0x69, &[(3, 30), (5, 30), (7, 30)]);
        let want = ordered(&c);
        let key = key();
        // Part 1 first (the shape then comes from the gadget part 0), then part 0 (the
        // shape known, every part native).
        for extra in [1, 0] {
            let mut native = c.clone_whole();
            native.native = true;
            native.native_extra = Some(extra);
            let r = try_synthesize_parts(
                &key,
                3,
                "part_0",
                || Ok(GadgetCircuit(c.part(0))),
                |j| Ok(native.part(j)),
            );
            match r {
                Err(PartsError::Misfit { why, shell }) => {
                    assert!(why.contains("more than"), "{why}");
                    assert_eq!(shell.num_constraints(), 0);
                }
                Err(e) => panic!("part {extra} one link longer: {e}"),
                Ok(_) => panic!("part {extra} one link longer fitted"),
            }
        }
        assert!(known_shape(&key).is_some() && !misfits(&key));
        assert_eq!(parted(&c, &key).unwrap(), want);
    }

    #[test]
    fn circuits_that_do_not_fit_are_synthesized_in_order() {
        // Parts of different lengths: the parallel parts outgrow or underfill the shape
        // learnt from part 0 (longer ones fail their allocations, not the circuit).
        for lens in [[40, 41, 40], [40, 39, 40], [40, 40, 100]] {
            let c = Parted::new(0x11, &lens.map(|l| (3, l)));
            let key = key();
            assert_eq!(parted(&c, &key).unwrap(), ordered(&c), "{lens:?}");
            assert!(
                known_shape(&key).is_none() && misfits(&key),
                "{lens:?}: shape kept"
            );
            // From then on in order at once (and still right).
            assert_eq!(parted(&c, &key).unwrap(), ordered(&c), "{lens:?}");
        }
        // A head that differs between the parts' circuits (not a parted circuit: the
        // whole one has a single head).
        let mut c = Parted::new(0x22, &[(3, 10), (5, 10), (7, 10)]);
        c.head_of = Some(|j| 0x22 + j as u64);
        assert_eq!(parted(&c, &key()).unwrap(), ordered(&c));
        // No namespace of the marker's name.
        let c = Parted::new(0x33, &[(3, 10), (5, 10)]);
        let r = synthesize_parts(
            &key(),
            2,
            "nowhere",
            |j| Ok(c.part(j)),
            || Ok(c.clone_whole()),
        );
        assert_eq!(r.unwrap(), ordered(&c));
    }

    #[test]
    fn a_circuit_error_is_returned_as_it_is() {
        for missing in [0, 2] {
            let mut c = Parted::new(0x44, &[(3, 10), (5, 10), (7, 10)]);
            c.missing = Some(missing);
            let key = key();
            for _ in 0..2 {
                let r = parted(&c, &key);
                assert!(matches!(r, Err(SynthesisError::AssignmentMissing)), "{r:?}");
            }
        }
    }

    #[test]
    fn a_cancelled_synthesis_stops_in_every_part() {
        let c = Parted::new(
            0x55,
            &[(3, 3 * cancel::CHECK_EVERY), (5, 3 * cancel::CHECK_EVERY)],
        );
        let key = key();
        // Learn the shape first, so that the cancelled run has every part in parallel.
        assert_eq!(parted(&c, &key).unwrap(), ordered(&c));
        let flag = Arc::new(AtomicBool::new(true));
        let r = cancel::with_cancel_flag(flag, || parted(&c, &key));
        let err = r.expect_err("cancelled");
        assert!(cancel::is_cancellation(&err), "{err:?}");
    }

    #[test]
    fn the_engines_shell_is_filled() {
        let c = Parted::new(0x66, &[(3, 20), (5, 20)]);
        let key = key();
        let shell = ordered(&Parted::new(1, &[(1, 500), (1, 500)]));
        let cap = shell.a.capacity();
        let (r, left) = recycle::with_shell(Some(shell), || parted(&c, &key));
        let got = r.unwrap();
        assert!(left.is_none());
        assert_eq!(got, ordered(&c));
        assert_eq!(got.a.capacity(), cap, "the shell's vectors were replaced");
    }
}
