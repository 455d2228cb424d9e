//! The CUDA backend against the CPU backend: byte-identical proofs for the same r, s;
//! the proofs verify; shape errors are reported, not panics.

mod common;

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use ff::Field;
use filprove_cuda::CudaBackend;
use filprove_groth16::cpu::CpuBackend;
use filprove_groth16::keygen::generate_parameters;
use filprove_groth16::{Backend, Fr, ProofInput, ProveError, ProvingAssignment, Randomness};

/// Bits of a secret, their products chained, a few public sums: a mix of 0/1 and full
/// values, variables only in A, only in B, only in C, and inputs in B.
#[derive(Clone)]
struct Mix {
    bits: Vec<bool>,
    vals: Vec<Fr>,
}

impl Circuit<Fr> for Mix {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let one = CS::one();
        let mut bit_vars = Vec::new();
        for (i, b) in self.bits.iter().enumerate() {
            let v = cs.alloc(
                || format!("b{i}"),
                || Ok(if *b { Fr::ONE } else { Fr::ZERO }),
            )?;
            cs.enforce(
                || format!("bool{i}"),
                |lc| lc + v,
                |lc| lc + one - v,
                |lc| lc,
            );
            bit_vars.push(v);
        }
        let mut acc_val = Fr::ONE;
        let mut acc = one;
        for (i, x) in self.vals.iter().enumerate() {
            let xv = cs.alloc(|| format!("x{i}"), || Ok(*x))?;
            let next_val = acc_val * x;
            let next = cs.alloc(|| format!("p{i}"), || Ok(next_val))?;
            cs.enforce(
                || format!("mul{i}"),
                |lc| lc + acc,
                |lc| lc + xv,
                |lc| lc + next,
            );
            acc = next;
            acc_val = next_val;
        }
        let sum_val: Fr = Fr::from(self.bits.iter().filter(|b| **b).count() as u64) + acc_val;
        let out = cs.alloc_input(|| "out", || Ok(sum_val))?;
        cs.enforce(
            || "sum",
            |lc| bit_vars.iter().fold(lc, |lc, v| lc + *v) + acc,
            |lc| lc + one,
            |lc| lc + out,
        );
        let sq = cs.alloc_input(|| "sq", || Ok(sum_val.square()))?;
        cs.enforce(|| "square", |lc| lc + out, |lc| lc + out, |lc| lc + sq);
        Ok(())
    }
}

#[test]
fn gpu_proofs_equal_cpu_proofs() {
    let Some(_) = common::gpu("gpu_proofs_equal_cpu_proofs") else {
        return;
    };
    let backend = CudaBackend::new(0).unwrap();
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let mut rng = common::rng("prove");
    use rand::Rng;
    for (nbits, nvals) in [
        (1usize, 1usize),
        (5, 3),
        (100, 27),
        (1000, 500),
        (3000, 5000),
    ] {
        let mk = |rng: &mut rand_chacha::ChaCha8Rng| Mix {
            bits: (0..nbits).map(|_| rng.gen()).collect(),
            vals: (0..nvals).map(|_| Fr::random(&mut *rng)).collect(),
        };
        let srs = generate_parameters(mk(&mut rng), &mut rng).unwrap();
        let circuits: Vec<_> = (0..2).map(|_| mk(&mut rng)).collect();
        let asgs: Vec<ProvingAssignment> = circuits
            .into_iter()
            .map(|c| ProvingAssignment::synthesize(c).unwrap())
            .collect();
        let inputs: Vec<ProofInput> = asgs
            .iter()
            .map(|a| ProofInput {
                assignment: a,
                randomness: Randomness::random(&mut rng),
            })
            .collect();
        let want = cpu.prove(&srs, &inputs).unwrap();
        let got = backend.prove(&srs, &inputs).unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.to_bytes(), w.to_bytes(), "proof {i} of {nbits}/{nvals}");
            assert!(
                srs.vk.verify(g, &asgs[i].input_assignment[1..]),
                "proof {i} of {nbits}/{nvals} does not verify"
            );
        }
    }
}

#[test]
fn shape_errors_are_typed() {
    let Some(_) = common::gpu("shape_errors_are_typed") else {
        return;
    };
    let backend = CudaBackend::new(0).unwrap();
    let mut rng = common::rng("shape");
    let c = Mix {
        bits: vec![true; 10],
        vals: vec![Fr::ONE; 4],
    };
    let srs = generate_parameters(c.clone(), &mut rng).unwrap();
    let other = Mix {
        bits: vec![true; 11],
        vals: vec![Fr::ONE; 4],
    };
    let a = ProvingAssignment::synthesize(other).unwrap();
    let r = backend.prove(
        &srs,
        &[ProofInput {
            assignment: &a,
            randomness: Randomness::random(&mut rng),
        }],
    );
    assert!(matches!(r, Err(ProveError::ShapeMismatch { .. })), "{r:?}");
}

#[test]
fn unavailable_reports_a_reason() {
    // With a GPU this opens; without one it must be a typed error, never a panic.
    match CudaBackend::new(0) {
        Ok(b) => assert!(b.name().starts_with("cuda:0 ")),
        Err(e) => {
            assert!(matches!(e, ProveError::Unavailable { .. }), "{e}");
            assert!(
                std::env::var("FILPROVE_REQUIRE_GPU").as_deref() != Ok("1"),
                "GPU required: {e}"
            );
        }
    }
}
