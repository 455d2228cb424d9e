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

use bellperson::{Circuit, SynthesisError};
use ff::Field;
use rayon::prelude::*;

use crate::sink::{GadgetCircuit, SinkCircuit};
use crate::{cancel, recycle, Fr, ProvingAssignment};

mod count;
mod shared;
mod system;
#[cfg(test)]
mod tests;

use count::count_parts;
pub use shared::{synthesize_shared_head, InOrder, SharedHeadCircuit};
use system::{HeadValues, PartOut, PartSystem, Slots};

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
