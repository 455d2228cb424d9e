//! Parts that read a head synthesized once.
//!
//! A circuit whose head is large next to one part (SnapDeals: the head hashes a
//! partition's 128 apex leaves with SHA-256, about 7 % of the partition at 32 GiB, while
//! a part is one of 86 challenges) cannot afford [`super::synthesize_parts`]'s way, where
//! every part synthesizes the head again. Here the head is synthesized once, in order,
//! into the whole assignment, and hands the parts what they read of it (its gadgets'
//! variables, [`SharedHeadCircuit::Head`]); each part is then synthesized on its own
//! thread straight into its slots, reading the head's values in place. Synthesizing the
//! head and then parts `0..n` in order ([`InOrder`]) is the whole circuit; the result here
//! is equal to that, field for field.
//!
//! Head and parts are synthesized into systems whose root is a [`crate::sink::WitnessSink`] (the
//! whole assignment, the part systems), so either may write natively computed witness
//! ([`crate::sink`]).
//!
//! The shape (head and part lengths) is learnt per key as in [`super::synthesize_parts`]:
//! the first synthesis of a key runs part 0 in order after the head; a head of other
//! lengths or a part that does not fit the shape is a misfit, remembered for the key.

use bellperson::{ConstraintSystem, SynthesisError};
use ff::Field;
use rayon::prelude::*;

use super::{
    lookup, merge_parts, remember, zero_extend, Failure, HeadValues, Learnt, Lengths, PartShape,
    PartSystem, PartsError, Slots,
};
use crate::sink::{SinkCircuit, SinkRoot};
use crate::{cancel, recycle, Fr, ProvingAssignment};

/// A circuit of a head and `parts()` parts, each of which reads the head's variables
/// (through `Head`) and none of another part's.
pub trait SharedHeadCircuit: Sync {
    /// What the parts read of the head (its gadgets' variables).
    type Head: Sync;

    /// How many parts follow the head.
    fn parts(&self) -> usize;

    /// Synthesizes the head.
    fn head<CS>(&self, cs: &mut CS) -> Result<Self::Head, SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot;

    /// Synthesizes part `j`, which every synthesis of a key gives the same lengths.
    fn part<CS>(&self, cs: &mut CS, head: &Self::Head, j: usize) -> Result<(), SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot;
}

/// The whole circuit in order: the head, then every part ([`crate::sink::synthesize`]).
pub struct InOrder<C>(pub C);

impl<C: SharedHeadCircuit> SinkCircuit for InOrder<C> {
    fn synthesize<CS>(self, cs: &mut CS) -> Result<(), SynthesisError>
    where
        CS: ConstraintSystem<Fr>,
        CS::Root: SinkRoot,
    {
        let head = self.0.head(cs)?;
        for j in 0..self.0.parts() {
            self.0.part(cs, &head, j)?;
        }
        Ok(())
    }
}

/// Synthesizes `circuit` with its parts in parallel; equal to
/// `crate::sink::synthesize(InOrder(circuit))`. A misfit (the circuit's head or
/// parts do not have the shape learnt for `key`, or `key` misfitted before) is returned
/// with the assignment being filled, for the caller's ordered synthesis. Fills the
/// thread's reused assignment when the engine set one ([`recycle::with_shell`]).
pub fn synthesize_shared_head<C: SharedHeadCircuit>(
    key: &str,
    circuit: &C,
) -> Result<ProvingAssignment, PartsError> {
    let mut cs = recycle::take_shell().unwrap_or_default();
    let known = match lookup(key) {
        Some(Learnt::Misfit) => None,
        Some(Learnt::Fits(shape)) => Some(Some(shape)),
        None => Some(None),
    };
    let result = match known {
        _ if circuit.parts() == 0 => Err(Failure::Shape("no parts".into())),
        None => Err(Failure::Shape(format!("{key} is synthesized in order"))),
        Some(shape) => parted(&mut cs, key, shape, circuit),
    };
    match result {
        Ok(()) => Ok(cs),
        Err(Failure::Circuit(e)) => Err(PartsError::Circuit(e)),
        Err(Failure::Shape(why)) => {
            if !matches!(lookup(key), Some(Learnt::Misfit)) && circuit.parts() > 0 {
                log::warn!("{key}: its parts do not fit one shape ({why})");
                remember(key, Learnt::Misfit);
            }
            cs.clear();
            Err(PartsError::Misfit {
                why,
                shell: Box::new(cs),
            })
        }
    }
}

fn parted<C: SharedHeadCircuit>(
    cs: &mut ProvingAssignment,
    key: &str,
    known: Option<PartShape>,
    circuit: &C,
) -> Result<(), Failure> {
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    let head = circuit.head(cs)?;
    let head_len = Lengths::of(cs);
    let (shape, first) = match known {
        Some(shape) if shape.head == head_len => (shape, 0),
        Some(shape) => {
            return Err(Failure::Shape(format!(
                "a head of {head_len:?} against {:?}",
                shape.head
            )))
        }
        None => {
            circuit.part(cs, &head, 0)?;
            let all = Lengths::of(cs);
            let part = Lengths {
                constraints: all.constraints - head_len.constraints,
                inputs: all.inputs - head_len.inputs,
                aux: all.aux - head_len.aux,
            };
            let shape = PartShape {
                head: head_len,
                part,
            };
            if part.constraints == 0 || part.aux == 0 {
                return Err(Failure::Shape(
                    "a part with no constraints or no variables".into(),
                ));
            }
            remember(key, Learnt::Fits(shape));
            (shape, 1)
        }
    };
    let PartShape { part, .. } = shape;
    let parts = circuit.parts();
    let total_c = head_len.constraints + parts * part.constraints;
    let total_aux = head_len.aux + parts * part.aux;
    cs.reserve_vectors(total_c, total_aux);
    for v in [&mut cs.a, &mut cs.b] {
        zero_extend(v, total_c);
    }
    zero_extend(&mut cs.aux_assignment, total_aux);
    let flag = cancel::current();
    let results: Vec<Result<_, Failure>> = {
        let c0 = head_len.constraints + first * part.constraints;
        let (head_aux, rest) = cs.aux_assignment.split_at_mut(head_len.aux);
        let values = HeadValues {
            inputs: &cs.input_assignment,
            aux: head_aux,
        };
        let slots = cs.a[c0..]
            .par_chunks_mut(part.constraints)
            .zip(cs.b[c0..].par_chunks_mut(part.constraints))
            .zip(rest[first * part.aux..].par_chunks_mut(part.aux));
        let head = &head;
        slots
            .enumerate()
            .map(|(i, ((a, b), aux))| {
                let mut run = move || {
                    let mut sys = PartSystem::reading(shape, Slots { a, b, aux }, values);
                    let r = circuit.part(&mut sys, head, first + i);
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
    merge_parts(cs, shape, first, outs, true)?;
    cs.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use bellperson::gadgets::boolean::AllocatedBit;
    use bellperson::gadgets::num::AllocatedNum;

    use super::*;

    /// A head (an input, its square, the square's low bits) and parts that each read
    /// some of it: in A, B or C, an input in B; each part has an input of its own.
    struct Squares {
        x: u64,
        parts: Vec<usize>,
        /// Part j's value is missing.
        missing: Option<usize>,
    }

    struct Head {
        x: AllocatedNum<Fr>,
        square: AllocatedNum<Fr>,
        bits: Vec<AllocatedBit>,
    }

    impl SharedHeadCircuit for Squares {
        type Head = Head;

        fn parts(&self) -> usize {
            self.parts.len()
        }

        fn head<CS>(&self, cs: &mut CS) -> Result<Head, SynthesisError>
        where
            CS: ConstraintSystem<Fr>,
            CS::Root: SinkRoot,
        {
            let x = AllocatedNum::alloc(cs.namespace(|| "x"), || Ok(Fr::from(self.x)))?;
            x.inputize(cs.namespace(|| "x input"))?;
            let square = x.square(cs.namespace(|| "square"))?;
            let bits = (0..6)
                .map(|i| {
                    let bit = ((self.x * self.x) >> i) & 1 == 1;
                    AllocatedBit::alloc(cs.namespace(|| format!("bit {i}")), Some(bit))
                })
                .collect::<Result<_, _>>()?;
            Ok(Head { x, square, bits })
        }

        fn part<CS>(&self, cs: &mut CS, head: &Head, j: usize) -> Result<(), SynthesisError>
        where
            CS: ConstraintSystem<Fr>,
            CS::Root: SinkRoot,
        {
            let mut cs = cs.namespace(|| format!("part {j}"));
            let missing = self.missing == Some(j);
            let mut acc = AllocatedNum::alloc(cs.namespace(|| "start"), || {
                if missing {
                    Err(SynthesisError::AssignmentMissing)
                } else {
                    Ok(Fr::from(j as u64 + 3))
                }
            })?;
            acc.inputize(cs.namespace(|| "start input"))?;
            for i in 0..self.parts[j] {
                let bit = &head.bits[(i + j) % 6];
                let by = if j.is_multiple_of(2) {
                    &head.square
                } else {
                    &head.x
                };
                let next = acc.mul(cs.namespace(|| format!("mul {i}")), by)?;
                let v = next.get_value().zip(bit.get_value()).map(
                    |(n, b)| {
                        if b {
                            n + Fr::ONE
                        } else {
                            n
                        }
                    },
                );
                let out = AllocatedNum::alloc(cs.namespace(|| format!("out {i}")), || {
                    v.ok_or(SynthesisError::AssignmentMissing)
                })?;
                cs.enforce(
                    || format!("out {i}"),
                    |lc| lc + next.get_variable() + bit.get_variable(),
                    |lc| lc + CS::one(),
                    |lc| lc + out.get_variable(),
                );
                acc = out;
            }
            Ok(())
        }
    }

    fn key() -> String {
        static N: AtomicUsize = AtomicUsize::new(0);
        format!("shared-test-{}", N.fetch_add(1, Ordering::Relaxed))
    }

    fn squares(x: u64, parts: &[usize]) -> Squares {
        Squares {
            x,
            parts: parts.to_vec(),
            missing: None,
        }
    }

    fn ordered(c: Squares) -> ProvingAssignment {
        crate::sink::synthesize(InOrder(c)).unwrap()
    }

    #[test]
    fn parts_reading_the_head_equal_ordered_synthesis() {
        let key = key();
        for (x, n) in [(5, 4), (7, 4), (9, 1), (11, 7)] {
            let parts = vec![12; n];
            let got = synthesize_shared_head(&key, &squares(x, &parts)).unwrap();
            assert!(super::super::known_shape(&key).is_some());
            assert_eq!(got, ordered(squares(x, &parts)), "x {x}, {n} parts");
        }
    }

    #[test]
    fn a_misfit_is_returned_and_remembered() {
        // A later part longer or shorter than part 0, and (the shape learnt) a longer
        // part 0.
        for parts in [[10, 10, 11], [10, 9, 10]] {
            let key = key();
            let r = synthesize_shared_head(&key, &squares(3, &parts));
            assert!(matches!(r, Err(PartsError::Misfit { .. })), "{parts:?}");
            assert!(super::super::misfits(&key));
            let r = synthesize_shared_head(&key, &squares(3, &[10, 10, 10]));
            assert!(matches!(r, Err(PartsError::Misfit { .. })), "remembered");
        }
        let key = key();
        synthesize_shared_head(&key, &squares(3, &[10, 10])).unwrap();
        let r = synthesize_shared_head(&key, &squares(3, &[11, 11]));
        match r {
            Err(PartsError::Misfit { why, shell }) => {
                assert!(why.contains("more than"), "{why}");
                assert_eq!(shell.num_constraints(), 0);
            }
            _ => panic!("a longer part 0 fitted"),
        }
    }

    #[test]
    fn a_circuit_error_is_returned_as_it_is() {
        for missing in [0, 2] {
            let key = key();
            for _ in 0..2 {
                let mut c = squares(3, &[5, 5, 5]);
                c.missing = Some(missing);
                let r = synthesize_shared_head(&key, &c);
                assert!(
                    matches!(
                        r,
                        Err(PartsError::Circuit(SynthesisError::AssignmentMissing))
                    ),
                    "{r:?}"
                );
            }
        }
    }
}
