//! The circuits, parameters and reference proofs the conformance suite proves against.

use ff::Field;
use filprove_groth16::cpu::CpuBackend;
use filprove_groth16::{Backend, Fr, Proof, ProofInput, ProvingAssignment, Randomness, Srs};

use super::Failure;
use crate::circuits::{Chain, InputsOnly, Mix, RandomR1cs};
use crate::random;

/// One circuit: its parameters, a few witnesses, their blinding factors and the CPU
/// reference's proofs of them.
pub struct Case {
    /// What the circuit is.
    pub name: String,
    /// Its parameters.
    pub srs: Srs,
    /// Witnesses of it.
    pub assignments: Vec<ProvingAssignment>,
    /// r and s of each witness's proof.
    pub randomness: Vec<Randomness>,
    /// The CPU reference's proof of each witness.
    pub expected: Vec<Proof>,
}

impl Case {
    /// The proof inputs of every witness.
    pub fn inputs(&self) -> Vec<ProofInput<'_>> {
        self.assignments
            .iter()
            .zip(&self.randomness)
            .map(|(assignment, &randomness)| ProofInput {
                assignment,
                randomness,
            })
            .collect()
    }
}

/// Every case of the suite, built once and checked against any number of backends.
pub struct Cases {
    /// Proved and compared byte for byte.
    pub cases: Vec<Case>,
    /// A witness of a circuit one bit larger than the first `mix` case's (its parameters
    /// do not fit it).
    pub other_circuit: ProvingAssignment,
    /// The seed everything was drawn from.
    pub seed: u64,
}

/// The witness of `circuit`, checked to carry `public` as its public inputs.
fn witness<C: bellperson::Circuit<Fr>>(
    case: &str,
    circuit: C,
    public: Vec<Fr>,
) -> Result<ProvingAssignment, Failure> {
    let assignment = ProvingAssignment::synthesize(circuit)
        .map_err(|e| Failure::new(case, "synthesis", e.to_string()))?;
    if assignment.input_assignment.get(1..) != Some(&public[..]) {
        return Err(Failure::new(
            case,
            "synthesis",
            "the witness's public inputs are not the circuit's",
        ));
    }
    Ok(assignment)
}

impl Cases {
    /// Builds every case from `seed`: parameters, witnesses, random r and s (and once
    /// r = s = 0), the CPU reference's proofs, each checked to verify and to fail with a
    /// changed public input.
    pub fn new(seed: u64) -> Result<Self, Failure> {
        let mut rng = random::rng(seed);
        let reference = CpuBackend::new(Some(2))
            .map_err(|e| Failure::new("reference", "cpu backend", e.to_string()))?;
        let mut cases = Vec::new();
        for (bits, vals) in [(1, 1), (5, 3), (100, 27), (1000, 500)] {
            let name = format!("mix of {bits} bits and {vals} factors");
            let circuits: Vec<Mix> = (0..2).map(|_| Mix::random(&mut rng, bits, vals)).collect();
            let shape = circuits[0].clone();
            let witnesses = circuits
                .into_iter()
                .map(|c| {
                    let public = c.public_inputs();
                    witness(&name, c, public)
                })
                .collect::<Result<_, _>>()?;
            cases.push((name, random::params(shape, seed ^ bits as u64), witnesses));
        }
        let x = Fr::random(&mut rng);
        for (name, rounds) in [("one constraint", 0), ("chain of 200 squarings", 200)] {
            let c = Chain::new(x, rounds);
            let w = witness(name, c.clone(), c.public_inputs())?;
            cases.push((
                name.into(),
                random::params(Chain::blank(rounds), seed),
                vec![w],
            ));
        }
        for n in [0, 3] {
            let name = format!("{n} public inputs and no constraint beyond them");
            let c = InputsOnly(n);
            let w = witness(&name, c, c.public_inputs())?;
            cases.push((name, random::params(c, seed), vec![w]));
        }
        let zeros = Mix::zeros(20, 10);
        let w = witness("all-zero witness", zeros.clone(), zeros.public_inputs())?;
        cases.push((
            "all-zero witness".into(),
            random::params(zeros, seed),
            vec![w],
        ));
        let r1cs = RandomR1cs {
            only_b: 5,
            only_c: 5,
            ..RandomR1cs::new(seed, 4, 300)
        };
        let w = witness("random R1CS", r1cs.clone(), r1cs.public_inputs())?;
        cases.push(("random R1CS".into(), random::params(r1cs, seed), vec![w]));

        let mut built = Vec::new();
        for (name, srs, witnesses) in cases {
            let srs = srs.map_err(|e| Failure::new(&name, "parameters", e.to_string()))?;
            built.push(reference_case(&reference, &mut rng, name, srs, witnesses)?);
        }
        // Blinding factors of zero: the proof is then a function of the witness alone.
        let zero = Randomness {
            r: Fr::ZERO,
            s: Fr::ZERO,
        };
        built[1].randomness[1] = zero;
        built[1].expected[1] = prove_reference(&reference, &built[1], 1)?;
        let other = Mix::random(&mut rng, 6, 3);
        let other_circuit = witness("other circuit", other.clone(), other.public_inputs())?;
        Ok(Self {
            cases: built,
            other_circuit,
            seed,
        })
    }
}

fn prove_reference(reference: &CpuBackend, case: &Case, i: usize) -> Result<Proof, Failure> {
    let inputs = case.inputs();
    let proof = reference
        .prove(&case.srs, &inputs[i..=i])
        .map_err(|e| Failure::new(&case.name, "reference proof", e.to_string()))?
        .pop()
        .ok_or_else(|| Failure::new(&case.name, "reference proof", "no proof returned"))?;
    let public = &case.assignments[i].input_assignment[1..];
    if !case.srs.vk.verify(&proof, public) {
        return Err(Failure::new(
            &case.name,
            "reference proof",
            "does not verify",
        ));
    }
    if let Some((first, rest)) = public.split_first() {
        let wrong: Vec<Fr> = std::iter::once(*first + Fr::ONE)
            .chain(rest.iter().copied())
            .collect();
        if case.srs.vk.verify(&proof, &wrong) {
            return Err(Failure::new(
                &case.name,
                "reference proof",
                "verifies with a changed public input",
            ));
        }
    }
    Ok(proof)
}

fn reference_case(
    reference: &CpuBackend,
    rng: &mut rand_chacha::ChaCha8Rng,
    name: String,
    srs: Srs,
    witnesses: Vec<ProvingAssignment>,
) -> Result<Case, Failure> {
    let n = witnesses.len();
    let mut case = Case {
        name,
        srs,
        randomness: random::randomness(rng, n),
        assignments: witnesses,
        expected: Vec::new(),
    };
    for i in 0..n {
        let proof = prove_reference(reference, &case, i)?;
        case.expected.push(proof);
    }
    Ok(case)
}
