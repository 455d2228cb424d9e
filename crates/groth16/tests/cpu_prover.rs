//! The CPU prover against bellperson 0.27: byte-identical proofs with the same r and s,
//! verification, shape errors, the WindowPoSt-style extend path, and an unsatisfied
//! witness (the assignment holds no c: the prover forms c = a*b).

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::{multipack, sha256::sha256};
use bellperson::groth16::{self, Parameters};
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use ff::Field;
use filprove_groth16::backend::{Backend, ProofInput, Randomness};
use filprove_groth16::cpu::{CpuBackend, MsmEngine};
use filprove_groth16::keygen::{R1csAssembly, R1csCheckError};
use filprove_groth16::{Bls12, Fr, Proof, ProveError, ProvingAssignment, Srs};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// x_{i+1} = x_i * x_i + k_i for `len` steps; x_0 private, the last x public.
#[derive(Clone)]
struct MulChain {
    x0: Fr,
    len: usize,
}

impl MulChain {
    fn output(&self) -> Fr {
        (0..self.len).fold(self.x0, |x, i| x * x + Fr::from(i as u64))
    }
}

impl Circuit<Fr> for MulChain {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut x_val = self.x0;
        let mut x = cs.alloc(|| "x0", || Ok(x_val))?;
        for i in 0..self.len {
            let k = Fr::from(i as u64);
            let next_val = x_val * x_val + k;
            let last = i + 1 == self.len;
            let next = if last {
                cs.alloc_input(|| "out", || Ok(next_val))?
            } else {
                cs.alloc(|| format!("x{}", i + 1), || Ok(next_val))?
            };
            cs.enforce(
                || format!("step {i}"),
                |lc| lc + x,
                |lc| lc + x,
                |lc| lc + next - (k, CS::one()),
            );
            x = next;
            x_val = next_val;
        }
        Ok(())
    }
}

/// Several public inputs; a variable used only in B; one used only in C (bellperson's
/// generator rejects variables used nowhere); an input used in B and one not; coefficients other than one; a non-power-of-two count.
#[derive(Clone)]
struct Mixed {
    p: Vec<Fr>,
    w: Vec<Fr>,
}

impl Mixed {
    fn new(rng: &mut ChaCha8Rng, k: usize) -> Self {
        Self {
            p: (0..k).map(|_| Fr::random(&mut *rng)).collect(),
            w: (0..k).map(|_| Fr::random(&mut *rng)).collect(),
        }
    }
    fn inputs(&self) -> Vec<Fr> {
        let mut out = self.p.clone();
        out.push(self.p.iter().zip(&self.w).map(|(p, w)| *p * w).sum());
        out
    }
}

impl Circuit<Fr> for Mixed {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut prods = Vec::new();
        let mut sum = Fr::ZERO;
        for (i, (p, w)) in self.p.iter().zip(&self.w).enumerate() {
            let pv = cs.alloc_input(|| format!("p{i}"), || Ok(*p))?;
            let wv = cs.alloc(|| format!("w{i}"), || Ok(*w))?;
            let prod = cs.alloc(|| format!("prod{i}"), || Ok(*p * w))?;
            if i % 2 == 0 {
                // input in A, aux in B
                cs.enforce(
                    || format!("m{i}"),
                    |lc| lc + pv,
                    |lc| lc + wv,
                    |lc| lc + prod,
                );
            } else {
                // aux in A, input in B, with coefficients
                let three = Fr::from(3u64);
                cs.enforce(
                    || format!("m{i}"),
                    |lc| lc + (three, wv),
                    |lc| lc + pv,
                    |lc| lc + (three, prod),
                );
            }
            prods.push(prod);
            sum += *p * w;
        }
        // Only in B: `b_only` (value 5), `1 * b_only = 5`.
        let b_only = cs.alloc(|| "b only", || Ok(Fr::from(5u64)))?;
        cs.enforce(
            || "b only",
            |lc| lc + CS::one(),
            |lc| lc + b_only,
            |lc| lc + (Fr::from(5u64), CS::one()),
        );
        // Only in C, and never used at all.
        let c_only = cs.alloc(|| "c only", || Ok(Fr::ZERO))?;
        cs.enforce(|| "c only", |lc| lc, |lc| lc, |lc| lc + c_only);
        // The sum of the products is public.
        let total = cs.alloc_input(|| "sum", || Ok(sum))?;
        cs.enforce(
            || "sum",
            |lc| prods.iter().fold(lc, |lc, p| lc + *p),
            |lc| lc + CS::one(),
            |lc| lc + total,
        );
        Ok(())
    }
}

/// SHA-256 of `bytes` with bellperson's gadgets; the digest bits are packed into inputs.
#[derive(Clone)]
struct Sha {
    bytes: Vec<u8>,
}

impl Sha {
    fn inputs(&self) -> Vec<Fr> {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(&self.bytes);
        multipack::compute_multipacking(&multipack::bytes_to_bits(&digest))
    }
}

impl Circuit<Fr> for Sha {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let bits = multipack::bytes_to_bits(&self.bytes);
        let bits = bits
            .iter()
            .enumerate()
            .map(|(i, b)| {
                AllocatedBit::alloc(cs.namespace(|| format!("bit {i}")), Some(*b))
                    .map(Boolean::from)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let digest = sha256(cs.namespace(|| "sha256"), &bits)?;
        multipack::pack_into_inputs(cs.namespace(|| "pack"), &digest)
    }
}

/// WindowPoSt's shape: independent "sectors", each with a public input, synthesized
/// in their own constraint systems and appended with `extend` when `use_extend`.
#[derive(Clone)]
struct Sectors {
    seeds: Vec<Fr>,
    use_extend: bool,
}

fn sector<CS: ConstraintSystem<Fr>>(cs: &mut CS, i: usize, seed: Fr) -> Result<(), SynthesisError> {
    let chain = MulChain {
        x0: seed,
        len: 5 + i,
    };
    let out = chain.output();
    let x = cs.alloc(|| "seed", || Ok(seed))?;
    let pub_out = cs.alloc_input(|| "out", || Ok(out))?;
    let mut val = seed;
    let mut var = x;
    for k in 0..chain.len {
        let next_val = val * val + Fr::from(k as u64);
        let next = cs.alloc(|| format!("x{k}"), || Ok(next_val))?;
        cs.enforce(
            || format!("s{k}"),
            |lc| lc + var,
            |lc| lc + var,
            |lc| lc + next - (Fr::from(k as u64), CS::one()),
        );
        var = next;
        val = next_val;
    }
    cs.enforce(
        || "out",
        |lc| lc + var,
        |lc| lc + CS::one(),
        |lc| lc + pub_out,
    );
    Ok(())
}

impl Sectors {
    fn inputs(&self) -> Vec<Fr> {
        self.seeds
            .iter()
            .enumerate()
            .map(|(i, s)| MulChain { x0: *s, len: 5 + i }.output())
            .collect()
    }
}

impl Circuit<Fr> for Sectors {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        if self.use_extend && CS::is_extensible() {
            let subs = self
                .seeds
                .iter()
                .enumerate()
                .map(|(i, seed)| {
                    let mut sub = CS::new();
                    sub.alloc_input(|| "temp ONE", || Ok(Fr::ONE))?;
                    sector(&mut sub, i, *seed)?;
                    Ok(sub)
                })
                .collect::<Result<Vec<_>, SynthesisError>>()?;
            for sub in &subs {
                cs.extend(sub);
            }
        } else {
            for (i, seed) in self.seeds.iter().enumerate() {
                sector(&mut cs.namespace(|| format!("sector {i}")), i, *seed)?;
            }
        }
        Ok(())
    }
}

fn params<C: Circuit<Fr>>(circuit: C, seed: u64) -> Parameters<Bls12> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    groth16::generate_random_parameters::<Bls12, _, _>(circuit, &mut rng).expect("params")
}

fn bellperson_bytes(p: &groth16::Proof<Bls12>) -> Vec<u8> {
    let mut out = Vec::new();
    p.write(&mut out).expect("write");
    out
}

/// Proves `circuit` on our CPU backend and with bellperson, with the same r, s; checks
/// the bytes are identical and that the proof verifies (and fails for wrong inputs). The
/// assignment is first checked against the circuit's R1CS: a and b are A w and B w, and
/// every constraint holds.
fn check<C: Circuit<Fr> + Clone + Send>(
    circuit: C,
    inputs: &[Fr],
    seed: u64,
) -> (Srs, ProvingAssignment, Proof) {
    let params = params(circuit.clone(), seed);
    let srs = Srs::from(&params);
    let pa = ProvingAssignment::synthesize(circuit.clone()).expect("synthesize");
    let r1cs = R1csAssembly::synthesize(circuit.clone()).expect("r1cs");
    r1cs.check_assignment(&pa)
        .expect("a satisfying assignment of the R1CS");
    let mut rng = ChaCha8Rng::seed_from_u64(seed + 1000);
    let rand = Randomness::random(&mut rng);
    let backend = CpuBackend::new(Some(2)).unwrap();
    assert_eq!(backend.name(), "cpu");
    let ours = backend
        .prove(
            &srs,
            &[ProofInput {
                assignment: &pa,
                randomness: rand,
            }],
        )
        .expect("prove");
    assert_eq!(ours.len(), 1);
    // The native MSM engine, on one thread, gives the same proof.
    let native = CpuBackend::new(Some(1))
        .unwrap()
        .with_msm_engine(MsmEngine::Native)
        .prove(
            &srs,
            &[ProofInput {
                assignment: &pa,
                randomness: rand,
            }],
        )
        .expect("prove native");
    assert_eq!(native, ours, "native and blst MSM engines disagree");
    let theirs =
        groth16::create_proof::<Bls12, _, _>(circuit, &params, rand.r, rand.s).expect("bellperson");
    assert_eq!(
        ours[0].to_bytes().to_vec(),
        bellperson_bytes(&theirs),
        "proof bytes differ from bellperson's"
    );
    assert!(srs.vk.verify(&ours[0], inputs), "proof does not verify");
    if !inputs.is_empty() {
        let mut wrong = inputs.to_vec();
        wrong[0] += Fr::ONE;
        assert!(
            !srs.vk.verify(&ours[0], &wrong),
            "proof verifies with wrong inputs"
        );
    }
    (srs, pa, ours[0])
}

#[test]
fn mul_chains_match_bellperson() {
    // Constraint counts (with the 2 input constraints): 3, 33, 64 (a power of two), 102.
    for (len, seed) in [(1usize, 1u64), (31, 2), (62, 3), (100, 4)] {
        let c = MulChain {
            x0: Fr::from(3u64 + len as u64),
            len,
        };
        let out = c.output();
        let (_, pa, _) = check(c, &[out], seed);
        assert_eq!(pa.num_constraints(), len + 2);
    }
}

#[test]
fn mixed_circuit_matches_bellperson() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for k in [1usize, 4, 7] {
        let c = Mixed::new(&mut rng, k);
        let inputs = c.inputs();
        let (_, pa, _) = check(c, &inputs, 10 + k as u64);
        // The b-only variable is in B but not in A.
        assert!(pa.b_aux_density.count_ones() > 0);
        assert!(pa.a_aux_density.count_ones() < pa.aux_assignment.len());
    }
}

#[test]
fn sha256_gadget_matches_bellperson() {
    let c = Sha {
        bytes: b"filprove cpu backend".to_vec(),
    };
    let inputs = c.inputs();
    let (_, pa, _) = check(c, &inputs, 20);
    assert!(pa.num_constraints() > 20_000);
}

#[test]
fn extend_path_gives_the_monolithic_proof() {
    let mut rng = ChaCha8Rng::seed_from_u64(30);
    let seeds: Vec<Fr> = (0..4).map(|_| Fr::random(&mut rng)).collect();
    let mono = Sectors {
        seeds: seeds.clone(),
        use_extend: false,
    };
    let split = Sectors {
        seeds,
        use_extend: true,
    };
    let inputs = mono.inputs();
    let (srs, pa_mono, proof_mono) = check(mono, &inputs, 31);
    let pa_split = ProvingAssignment::synthesize(split.clone()).unwrap();
    assert_eq!(
        pa_split, pa_mono,
        "extend must reproduce the monolithic assignment"
    );
    let rand = Randomness::random(&mut ChaCha8Rng::seed_from_u64(31 + 1000));
    let backend = CpuBackend::default();
    let proof_split = backend
        .prove(
            &srs,
            &[ProofInput {
                assignment: &pa_split,
                randomness: rand,
            }],
        )
        .unwrap();
    assert_eq!(proof_split[0].to_bytes(), proof_mono.to_bytes());
    // bellperson's own prover takes the extend path too.
    let params: Parameters<Bls12> = (&srs).into();
    let theirs = groth16::create_proof::<Bls12, _, _>(split, &params, rand.r, rand.s).unwrap();
    assert_eq!(bellperson_bytes(&theirs), proof_mono.to_bytes().to_vec());
}

#[test]
fn batches_and_shape_errors() {
    let c = MulChain {
        x0: Fr::from(9u64),
        len: 20,
    };
    let out = c.output();
    let (srs, pa, proof) = check(c, &[out], 40);
    let backend = CpuBackend::new(Some(1)).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(40 + 1000);
    let rand = Randomness::random(&mut rng);
    let other = Randomness::random(&mut rng);
    let two = backend
        .prove(
            &srs,
            &[
                ProofInput {
                    assignment: &pa,
                    randomness: rand,
                },
                ProofInput {
                    assignment: &pa,
                    randomness: other,
                },
            ],
        )
        .unwrap();
    assert_eq!(two[0], proof);
    assert_ne!(two[1], proof);
    assert!(srs.vk.verify(&two[1], &[out]));

    assert!(matches!(
        backend.prove(&srs, &[]),
        Err(ProveError::Invalid(_))
    ));
    assert!(CpuBackend::new(Some(0)).is_err());

    // Params of another circuit.
    let c2 = MulChain {
        x0: Fr::from(9u64),
        len: 40,
    };
    let pa2 = ProvingAssignment::synthesize(c2).unwrap();
    let err = backend
        .prove(
            &srs,
            &[ProofInput {
                assignment: &pa2,
                randomness: rand,
            }],
        )
        .unwrap_err();
    assert!(matches!(err, ProveError::ShapeMismatch { .. }), "{err}");
    // Each SRS section truncated in turn.
    for section in 0..5 {
        let mut bad = srs.clone();
        match section {
            0 => drop(bad.h.pop()),
            1 => drop(bad.l.pop()),
            2 => drop(bad.a.pop()),
            3 => drop(bad.b_g1.pop()),
            _ => drop(bad.b_g2.pop()),
        }
        let err = backend
            .prove(
                &bad,
                &[ProofInput {
                    assignment: &pa,
                    randomness: rand,
                }],
            )
            .unwrap_err();
        assert!(
            matches!(err, ProveError::ShapeMismatch { .. }),
            "section {section}: {err}"
        );
        assert_eq!(err.code(), "prove_shape_mismatch");
    }
    // An inconsistent assignment.
    let mut broken = pa.clone();
    broken.b.pop();
    let err = backend
        .prove(
            &srs,
            &[ProofInput {
                assignment: &broken,
                randomness: rand,
            }],
        )
        .unwrap_err();
    assert!(matches!(err, ProveError::ShapeMismatch { .. }));
}

#[test]
fn compute_h_is_bellpersons_quotient() {
    // Check h against the definition: A(x) B(x) - C(x) = h(x) Z(x) at a random point.
    use filprove_groth16::cpu::{compute_h, Domain};
    let c = MulChain {
        x0: Fr::from(2u64),
        len: 50,
    };
    let pa = ProvingAssignment::synthesize(c.clone()).unwrap();
    let h = compute_h(&pa).unwrap();
    let d = Domain::for_len(pa.num_constraints()).unwrap();
    assert_eq!(h.len(), d.size() - 1);
    let interp = |v: &[Fr]| {
        let mut v = v.to_vec();
        v.resize(d.size(), Fr::ZERO);
        d.ifft(&mut v).unwrap();
        v
    };
    let eval = |coeffs: &[Fr], x: Fr| coeffs.iter().rev().fold(Fr::ZERO, |acc, c| acc * x + c);
    // C's evaluations from the circuit's matrices (the assignment holds none).
    let rows = R1csAssembly::synthesize(c)
        .unwrap()
        .evaluate_rows(&pa)
        .unwrap();
    let (a, b, cc) = (interp(&pa.a), interp(&pa.b), interp(&rows.c));
    let x = Fr::random(&mut ChaCha8Rng::seed_from_u64(50));
    let z = x.pow_vartime([d.size() as u64]) - Fr::ONE;
    assert_eq!(eval(&a, x) * eval(&b, x) - eval(&cc, x), eval(&h, x) * z);
}

/// x * x = y, with y public; `lie` allocates y = x^2 + 1, which breaks the constraint.
#[derive(Clone, Copy)]
struct Square {
    x: u64,
    lie: bool,
}

impl Circuit<Fr> for Square {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = Fr::from(self.x);
        let y = x.square() + if self.lie { Fr::ONE } else { Fr::ZERO };
        let xv = cs.alloc(|| "x", || Ok(x))?;
        let yv = cs.alloc_input(|| "y", || Ok(y))?;
        cs.enforce(|| "square", |lc| lc + xv, |lc| lc + xv, |lc| lc + yv);
        Ok(())
    }
}

/// A witness that does not satisfy its constraints: the R1CS check finds the row, and the
/// proof the CPU backend makes of it (with c = a*b formed, not the circuit's C w) fails
/// verification for the witness's own public input.
#[test]
fn an_unsatisfied_witness_gives_a_proof_that_fails_verification() {
    let honest = Square { x: 7, lie: false };
    let lie = Square { x: 7, lie: true };
    let params = params(honest, 60);
    let srs = Srs::from(&params);
    let pa = ProvingAssignment::synthesize(lie).unwrap();
    let r1cs = R1csAssembly::synthesize(honest).unwrap();
    assert_eq!(
        r1cs.check_assignment(&pa),
        Err(R1csCheckError::Unsatisfied { row: 0, count: 1 })
    );
    let rand = Randomness::random(&mut ChaCha8Rng::seed_from_u64(61));
    let proof = CpuBackend::new(Some(1))
        .unwrap()
        .prove(
            &srs,
            &[ProofInput {
                assignment: &pa,
                randomness: rand,
            }],
        )
        .unwrap();
    let y = pa.input_assignment[1];
    assert_eq!(y, Fr::from(50u64), "the lying witness's public input");
    assert!(
        !srs.vk.verify(&proof[0], &[y]),
        "an unsatisfied witness verified"
    );
    // The honest witness of the same key verifies (so the failure is the witness's).
    let good = ProvingAssignment::synthesize(honest).unwrap();
    let proof = CpuBackend::new(Some(1))
        .unwrap()
        .prove(
            &srs,
            &[ProofInput {
                assignment: &good,
                randomness: rand,
            }],
        )
        .unwrap();
    assert!(srs.vk.verify(&proof[0], &[Fr::from(49u64)]));
}
