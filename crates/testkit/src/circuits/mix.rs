//! Bits and a product chain: the witness shapes a prover's MSMs and NTTs must handle.

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use ff::Field;
use filprove_groth16::Fr;
use rand::Rng;

/// Bits of a secret, their products chained, two public outputs: a mix of 0/1 and full
/// values, variables only in A, only in B, only in C, and inputs in B.
#[derive(Clone, Debug)]
pub struct Mix {
    /// Boolean-constrained bits.
    pub bits: Vec<bool>,
    /// Factors of the product chain.
    pub vals: Vec<Fr>,
}

impl Mix {
    /// `bits` random bits and `vals` random factors.
    pub fn random<R: Rng>(rng: &mut R, bits: usize, vals: usize) -> Self {
        Self {
            bits: (0..bits).map(|_| rng.gen()).collect(),
            vals: (0..vals).map(|_| Fr::random(&mut *rng)).collect(),
        }
    }

    /// The same shape with an all-zero witness (every bit clear, every factor zero, so
    /// every product and both outputs are zero).
    pub fn zeros(bits: usize, vals: usize) -> Self {
        Self {
            bits: vec![false; bits],
            vals: vec![Fr::ZERO; vals],
        }
    }

    fn sum(&self) -> Fr {
        let product: Fr = self.vals.iter().product();
        Fr::from(self.bits.iter().filter(|b| **b).count() as u64) + product
    }

    /// The public inputs without ONE: the sum of the bits and the product, and its square.
    pub fn public_inputs(&self) -> Vec<Fr> {
        let sum = self.sum();
        vec![sum, sum.square()]
    }
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
        let sum_val = self.sum();
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
