//! The native SHA-256 twins against bellperson 0.27's gadgets: on two ProvingAssignments
//! with the same history, the gadget on one and the native code on the other must leave
//! equal assignments (a, b, inputs, aux, densities) and return the same bits.

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::{multipack, num::AllocatedNum, sha256, uint32};
use bellperson::{ConstraintSystem, Index};
use ff::Field;
use filprove_groth16::native::{self, Bit, UInt32};
use filprove_groth16::{Fr, ProvingAssignment};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Two equal systems: ONE, `inputs` bit inputs and `aux` bit variables (every other
/// one boolean-constrained). Returns them and the variables with their values.
fn setup(
    rng: &mut impl Rng,
    inputs: usize,
    aux: usize,
) -> (ProvingAssignment, ProvingAssignment, Vec<(Index, bool)>) {
    let mut g = ProvingAssignment::default();
    g.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
    let mut vars = Vec::new();
    for _ in 0..inputs {
        let v: bool = rng.gen();
        let var = g
            .alloc_input(|| "in", || Ok(if v { Fr::ONE } else { Fr::ZERO }))
            .unwrap();
        vars.push((var.get_unchecked(), v));
    }
    for i in 0..aux {
        let v: bool = rng.gen();
        let var = if i % 2 == 0 {
            AllocatedBit::alloc(&mut g, Some(v)).unwrap().get_variable()
        } else {
            // Not boolean-constrained, so in no query yet: only what the code under test
            // does marks it (xor results, for one, occur in C alone).
            g.alloc(|| "bit", || Ok(if v { Fr::ONE } else { Fr::ZERO }))
                .unwrap()
        };
        vars.push((var.get_unchecked(), v));
    }
    let n = g.clone();
    (g, n, vars)
}

/// A random bit: a constant, a variable of `vars` or its negation, weighted.
fn random_bit(rng: &mut impl Rng, vars: &[(Index, bool)], p_const: f64, p_not: f64) -> Bit {
    if vars.is_empty() || rng.gen_bool(p_const) {
        return Bit::Constant(rng.gen());
    }
    let (var, value) = vars[rng.gen_range(0..vars.len())];
    if rng.gen_bool(p_not) {
        Bit::Not { var, value }
    } else {
        Bit::Is { var, value }
    }
}

/// Panics at the first difference, naming it.
fn assert_same(g: &ProvingAssignment, n: &ProvingAssignment) {
    assert_eq!(g.input_assignment, n.input_assignment, "inputs");
    assert_eq!(g.aux_assignment.len(), n.aux_assignment.len(), "aux count");
    if let Some(i) =
        (0..g.aux_assignment.len()).find(|&i| g.aux_assignment[i] != n.aux_assignment[i])
    {
        panic!("aux {i} differs");
    }
    assert_eq!(g.a.len(), n.a.len(), "constraint count");
    for (name, x, y) in [("a", &g.a, &n.a), ("b", &g.b, &n.b)] {
        if let Some(i) = (0..x.len()).find(|&i| x[i] != y[i]) {
            panic!("{name}[{i}] differs: {:?} vs {:?}", x[i], y[i]);
        }
    }
    for (name, x, y) in [
        ("A aux", &g.a_aux_density, &n.a_aux_density),
        ("B input", &g.b_input_density, &n.b_input_density),
        ("B aux", &g.b_aux_density, &n.b_aux_density),
    ] {
        assert_eq!(x.len(), y.len(), "{name} density length");
        if let Some(i) = (0..x.len()).find(|&i| x.get(i) != y.get(i)) {
            panic!(
                "{name} density bit {i} differs: gadget {} native {}",
                x.get(i),
                y.get(i)
            );
        }
    }
    assert!(g == n, "assignments differ");
}

fn outputs(bs: &[Boolean]) -> Vec<Bit> {
    Bit::from_booleans(bs).unwrap()
}

fn check_sha256(g: &mut ProvingAssignment, n: &mut ProvingAssignment, input: &[Bit]) {
    let gin = Bit::to_booleans(input);
    let gout = sha256::sha256(&mut *g, &gin).unwrap();
    let nout = native::sha256(n, input).unwrap();
    assert_eq!(outputs(&gout), nout, "digest bits");
    assert_same(g, n);
    // And the digest is SHA-256's.
    let bytes: Vec<u8> = input
        .chunks(8)
        .map(|c| c.iter().fold(0u8, |acc, b| (acc << 1) | b.value() as u8))
        .collect();
    use sha2::Digest;
    let want = sha2::Sha256::digest(&bytes);
    let got: Vec<u8> = nout
        .chunks(8)
        .map(|c| c.iter().fold(0u8, |acc, b| (acc << 1) | b.value() as u8))
        .collect();
    assert_eq!(got.as_slice(), want.as_slice());
}

#[test]
fn boolean_operations_on_every_kind_of_operand() {
    // Operands: both constants, two aux variables, a bit input and ONE itself, each
    // plain and negated: every constant case and every merge of a linear combination.
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let (g0, _, vars) = setup(&mut rng, 1, 2);
    let mut kinds = vec![Bit::Constant(false), Bit::Constant(true)];
    let one = (Index::Input(0), true);
    for &(var, value) in vars.iter().chain([&one]) {
        kinds.push(Bit::Is { var, value });
        kinds.push(Bit::Not { var, value });
    }
    // Each operation on fresh copies: a variable marked by one operation must not hide
    // a missing mark of the next.
    for x in &kinds {
        for y in &kinds {
            let (bx, by) = (x.to_boolean(), y.to_boolean());
            let (mut g, mut n) = (g0.clone(), g0.clone());
            let r = Boolean::xor(&mut g, &bx, &by).unwrap();
            assert_eq!(
                Bit::from_boolean(&r).unwrap(),
                native::boolean::xor(&mut n, x, y)
            );
            assert_same(&g, &n);
            let (mut g, mut n) = (g0.clone(), g0.clone());
            let r = Boolean::and(&mut g, &bx, &by).unwrap();
            assert_eq!(
                Bit::from_boolean(&r).unwrap(),
                native::boolean::and(&mut n, x, y)
            );
            assert_same(&g, &n);
            for z in &kinds {
                let bz = z.to_boolean();
                let (mut g, mut n) = (g0.clone(), g0.clone());
                let r = Boolean::sha256_ch(&mut g, &bx, &by, &bz).unwrap();
                assert_eq!(
                    Bit::from_boolean(&r).unwrap(),
                    native::boolean::sha256_ch(&mut n, x, y, z),
                    "ch {x:?} {y:?} {z:?}"
                );
                assert_same(&g, &n);
                let (mut g, mut n) = (g0.clone(), g0.clone());
                let r = Boolean::sha256_maj(&mut g, &bx, &by, &bz).unwrap();
                assert_eq!(
                    Bit::from_boolean(&r).unwrap(),
                    native::boolean::sha256_maj(&mut n, x, y, z),
                    "maj {x:?} {y:?} {z:?}"
                );
                assert_same(&g, &n);
            }
        }
    }
}

#[test]
fn allocated_bit_operations() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let (mut g, mut n, vars) = setup(&mut rng, 0, 4);
    let bits: Vec<AllocatedBit> = vars
        .iter()
        .map(
            |&(var, value)| match (Bit::Is { var, value }).to_boolean() {
                Boolean::Is(b) => b,
                _ => unreachable!(),
            },
        )
        .collect();
    for (i, x) in bits.iter().enumerate() {
        for (j, y) in bits.iter().enumerate() {
            let ((xi, xv), (yi, yv)) = (vars[i], vars[j]);
            let r = AllocatedBit::xor(&mut g, x, y).unwrap();
            let m = native::boolean::allocated_xor(&mut n, xi, xv, yi, yv);
            assert_eq!(Bit::from_boolean(&Boolean::Is(r)).unwrap(), m);
            let r = AllocatedBit::and(&mut g, x, y).unwrap();
            let m = native::boolean::allocated_and(&mut n, xi, xv, yi, yv);
            assert_eq!(Bit::from_boolean(&Boolean::Is(r)).unwrap(), m);
            let r = AllocatedBit::and_not(&mut g, x, y).unwrap();
            let m = native::boolean::allocated_and_not(&mut n, xi, xv, yi, yv);
            assert_eq!(Bit::from_boolean(&Boolean::Is(r)).unwrap(), m);
            let r = AllocatedBit::nor(&mut g, x, y).unwrap();
            let m = native::boolean::allocated_nor(&mut n, xi, xv, yi, yv);
            assert_eq!(Bit::from_boolean(&Boolean::Is(r)).unwrap(), m);
        }
    }
    let r = AllocatedBit::alloc(&mut g, Some(true)).unwrap();
    let m = native::boolean::alloc(&mut n, true);
    assert_eq!(Bit::from_boolean(&Boolean::Is(r)).unwrap(), m);
    assert_same(&g, &n);
}

#[test]
fn uint32_addmany_and_multieq_flushes() {
    // Random operand counts so that flushes fall at every position, operands sharing
    // variables in both polarities (cancelling coefficients), constants.
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for round in 0..40 {
        let (mut g, mut n, vars) = setup(&mut rng, 2, 24);
        let (p_const, p_not) = [(0.0, 0.0), (0.3, 0.5), (0.9, 0.5), (0.1, 0.9)][round % 4];
        {
            let mut gm = bellperson::gadgets::multieq::MultiEq::new(&mut g);
            let mut nm = native::MultiEq::new(&mut n);
            for _ in 0..12 {
                let k = rng.gen_range(2..=10);
                let words: Vec<Vec<Bit>> = (0..k)
                    .map(|_| {
                        (0..32)
                            .map(|_| random_bit(&mut rng, &vars, p_const, p_not))
                            .collect()
                    })
                    .collect();
                let gw: Vec<uint32::UInt32> = words
                    .iter()
                    .map(|w| uint32::UInt32::from_bits(&Bit::to_booleans(w)))
                    .collect();
                let nw: Vec<UInt32> = words.iter().map(|w| UInt32::from_bits(w)).collect();
                let r = uint32::UInt32::addmany(gm.namespace(|| "add"), &gw).unwrap();
                let m = UInt32::addmany(&mut nm, &nw);
                assert_eq!(outputs(&r.into_bits()), m.into_bits());
            }
        }
        assert_same(&g, &n);
    }
}

#[test]
fn sha256_random_inputs_of_zero_to_three_blocks() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let lengths = [
        0usize, 8, 64, 440, 448, 504, 512, 952, 960, 1024, 1472, 1536,
    ];
    for (i, &len) in lengths.iter().enumerate() {
        // Mixes: fresh variables; few variables in both polarities (aliasing, cancelling
        // coefficients); mostly constants; inputs among the variables.
        let (inputs, aux, p_const, p_not) = [
            (0, 2000, 0.0, 0.0),
            (2, 12, 0.2, 0.5),
            (3, 40, 0.8, 0.3),
            (0, 600, 0.3, 0.3),
        ][i % 4];
        let (mut g, mut n, mut vars) = setup(&mut rng, inputs, aux);
        if inputs > 0 {
            // ONE itself among the variables.
            vars.push((Index::Input(0), true));
        }
        let input: Vec<Bit> = if aux >= len {
            // Each variable once.
            (0..len)
                .map(|j| Bit::Is {
                    var: vars[inputs + j].0,
                    value: vars[inputs + j].1,
                })
                .collect()
        } else {
            (0..len)
                .map(|_| random_bit(&mut rng, &vars, p_const, p_not))
                .collect()
        };
        check_sha256(&mut g, &mut n, &input);
    }
}

#[test]
fn sha256_of_all_constants_allocates_nothing() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let (mut g, mut n, _) = setup(&mut rng, 0, 0);
    let input: Vec<Bit> = (0..1024).map(|_| Bit::Constant(rng.gen())).collect();
    check_sha256(&mut g, &mut n, &input);
    assert_eq!(n.aux_assignment.len(), 0);
}

#[test]
fn sha256_filecoin_shapes() {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    // Tree D node: two 255-bit numbers, each padded to 256 bits and byte-reversed.
    let (mut g, mut n, vars) = setup(&mut rng, 0, 510);
    let mut input = Vec::new();
    for half in vars.chunks(255) {
        let mut bits: Vec<Bit> = half
            .iter()
            .map(|&(var, value)| Bit::Is { var, value })
            .collect();
        bits.push(Bit::Constant(false));
        input.extend(bits.chunks(8).flat_map(|c| c.iter().rev().copied()));
    }
    check_sha256(&mut g, &mut n, &input);

    // Label: replica id, layer and node, 37 parents of 6 (repeated) with zero runs.
    let (mut g, mut n, vars) = setup(&mut rng, 0, 256 + 64 + 6 * 255);
    let word = |vs: &[(Index, bool)]| -> Vec<Bit> {
        let mut bits: Vec<Bit> = vs
            .iter()
            .map(|&(var, value)| Bit::Is { var, value })
            .collect();
        bits.push(Bit::Constant(false));
        bits.chunks(8)
            .flat_map(|c| c.iter().rev().copied())
            .collect()
    };
    let mut input: Vec<Bit> = vars[..256]
        .iter()
        .map(|&(var, value)| Bit::Is { var, value })
        .collect();
    input.extend((0..32).rev().map(|j| Bit::Constant((7u32 >> j) & 1 == 1)));
    input.extend(
        vars[256..320]
            .iter()
            .rev()
            .map(|&(var, value)| Bit::Is { var, value }),
    );
    input.extend((0..160).map(|_| Bit::Constant(false)));
    let parents: Vec<Vec<Bit>> = vars[320..].chunks(255).map(word).collect();
    for p in 0..37 {
        input.extend_from_slice(&parents[p % 6]);
    }
    assert_eq!(input.len(), 1248 * 8);
    check_sha256(&mut g, &mut n, &input);
}

#[test]
fn compression_of_a_constant_block_with_variable_state() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for p_not in [0.0, 0.5] {
        let (mut g, mut n, vars) = setup(&mut rng, 0, 256);
        let state: Vec<Vec<Bit>> = vars
            .chunks(32)
            .map(|w| {
                w.iter()
                    .map(|&(var, value)| {
                        if rng.gen_bool(p_not) {
                            Bit::Not { var, value }
                        } else {
                            Bit::Is { var, value }
                        }
                    })
                    .collect()
            })
            .collect();
        // The padding block of a 64-byte message.
        let mut block = vec![Bit::Constant(true)];
        block.resize(448, Bit::Constant(false));
        block.extend((0..64).rev().map(|j| Bit::Constant((512u64 >> j) & 1 == 1)));
        let gstate: Vec<uint32::UInt32> = state
            .iter()
            .map(|w| uint32::UInt32::from_bits(&Bit::to_booleans(w)))
            .collect();
        let nstate: Vec<UInt32> = state.iter().map(|w| UInt32::from_bits(w)).collect();
        let gout = sha256::sha256_compression_function(&mut g, &Bit::to_booleans(&block), &gstate)
            .unwrap();
        let nout = native::sha256_compression_function(&mut n, &block, &nstate).unwrap();
        for (x, y) in gout.into_iter().zip(nout) {
            assert_eq!(outputs(&x.into_bits()), y.into_bits());
        }
        assert_same(&g, &n);
    }
}

#[test]
fn to_bits_and_pack_bits() {
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let (mut g, mut n, vars) = setup(&mut rng, 1, 300);
    for _ in 0..4 {
        let v = Fr::random(&mut rng);
        let gn = AllocatedNum::alloc(&mut g, || Ok(v)).unwrap();
        let nn = AllocatedNum::alloc(&mut n, || Ok(v)).unwrap();
        let gb = gn.to_bits_le(&mut g).unwrap();
        let nb = native::to_bits_le(&mut n, &nn).unwrap();
        assert_eq!(outputs(&gb), nb);
        let gp = multipack::pack_bits(&mut g, &gb).unwrap();
        let np = native::pack_bits(&mut n, &nb).unwrap();
        assert_eq!(gp.get_value(), np.get_value());
        assert_eq!(
            gp.get_value(),
            Some(v).map(|v| {
                // The low 254 bits of v.
                let mut limbs = [0u64; 4];
                for (i, b) in nb.iter().take(254).enumerate() {
                    limbs[i / 64] |= (b.value() as u64) << (i % 64);
                }
                let _ = v;
                Option::<Fr>::from(Fr::from_u64s_le(&limbs)).unwrap()
            })
        );
        // Packing of mixed bits (constants, negations, repeated variables).
        let bits: Vec<Bit> = (0..300)
            .map(|_| random_bit(&mut rng, &vars, 0.3, 0.5))
            .collect();
        let gp = multipack::pack_bits(&mut g, &Bit::to_booleans(&bits)).unwrap();
        let np = native::pack_bits(&mut n, &bits).unwrap();
        assert_eq!(gp.get_value(), np.get_value());
        assert_same(&g, &n);
    }
}

#[test]
fn cancelling_coefficients_leave_variables_unmarked() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    // addmany of x and (not x) on some bits: those variables cancel in MultiEq's left
    // side, in one equality or summed over several of one flush.
    for trial in 0..8 {
        let (mut g, mut n, vars) = setup(&mut rng, 1, 80);
        // Variables in no query yet, and variables that are (boolean constrained).
        let unmarked: Vec<(Index, bool)> = vars[1..].iter().copied().skip(1).step_by(2).collect();
        let marked: Vec<(Index, bool)> = vars[1..].iter().copied().step_by(2).collect();
        let w1: Vec<Bit> = (0..32)
            .map(|j| {
                let (var, value) = unmarked[j];
                Bit::Is { var, value }
            })
            .collect();
        let w2: Vec<Bit> = w1
            .iter()
            .enumerate()
            .map(|(j, b)| {
                if (j + trial) % 3 != 0 {
                    b.not()
                } else {
                    random_bit(&mut rng, &marked, 0.5, 0.5)
                }
            })
            .collect();
        let w3: Vec<Bit> = (0..32).map(|_| Bit::Constant(rng.gen())).collect();
        {
            let mut gm = bellperson::gadgets::multieq::MultiEq::new(&mut g);
            let mut nm = native::MultiEq::new(&mut n);
            let sets: [&[&Vec<Bit>]; 2] = [&[&w1, &w2], &[&w2, &w3, &w1]];
            for set in sets.iter().cycle().skip(trial % 2).take(2 + trial) {
                let gw: Vec<uint32::UInt32> = set
                    .iter()
                    .map(|w| uint32::UInt32::from_bits(&Bit::to_booleans(w)))
                    .collect();
                let nw: Vec<UInt32> = set.iter().map(|w| UInt32::from_bits(w)).collect();
                let r = uint32::UInt32::addmany(gm.namespace(|| "add"), &gw).unwrap();
                let m = UInt32::addmany(&mut nm, &nw);
                assert_eq!(outputs(&r.into_bits()), m.into_bits());
            }
        }
        assert_same(&g, &n);
        // Some variable did cancel.
        assert!(w1.iter().any(|b| match b {
            Bit::Is {
                var: Index::Aux(i), ..
            } => !n.a_aux_density.get(*i),
            _ => false,
        }));
    }
    // pack_bits: a variable plain and negated (distinct powers of two never cancel).
    let (mut g, mut n, vars) = setup(&mut rng, 0, 40);
    let (var, value) = vars[1];
    let (var2, value2) = vars[3];
    let mut bits = vec![Bit::Constant(true); 10];
    bits[3] = Bit::Is { var, value };
    bits[4] = Bit::Not { var, value };
    bits.push(Bit::Is {
        var: var2,
        value: value2,
    });
    let gp = multipack::pack_bits(&mut g, &Bit::to_booleans(&bits)).unwrap();
    let np = native::pack_bits(&mut n, &bits).unwrap();
    assert_eq!(gp.get_value(), np.get_value());
    assert_same(&g, &n);
}
