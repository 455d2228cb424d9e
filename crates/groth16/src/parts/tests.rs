//! Parted synthesis against ordered synthesis, value for value and bit for bit, and what
//! happens to circuits that do not fit, to errors and to cancellation.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::{ConstraintSystem, Index, Namespace, Variable};
use ff::Field;

use super::*;
use crate::sink::WitnessSink;

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
