//! A squaring chain: the smallest circuit of any size.

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use ff::Field;
use filprove_groth16::Fr;

/// Proves knowledge of x with x^(2^rounds) = out, out public: `rounds + 1` aux variables
/// (x and its squares) and `rounds + 1` constraints (with `rounds` 0, a single one).
#[derive(Clone, Debug)]
pub struct Chain {
    /// The secret; `None` for parameter generation (synthesis then fails with
    /// `AssignmentMissing` if a witness is asked for).
    pub x: Option<Fr>,
    /// Squarings.
    pub rounds: usize,
}

impl Chain {
    /// The chain of `rounds` squarings of `x`.
    pub fn new(x: Fr, rounds: usize) -> Self {
        Self { x: Some(x), rounds }
    }

    /// The chain without a witness (its shape, for parameter generation).
    pub fn blank(rounds: usize) -> Self {
        Self { x: None, rounds }
    }

    /// x^(2^rounds), the public output.
    pub fn output(&self) -> Option<Fr> {
        self.x.map(|x| (0..self.rounds).fold(x, |v, _| v.square()))
    }

    /// The public inputs without ONE: the output.
    pub fn public_inputs(&self) -> Vec<Fr> {
        self.output().into_iter().collect()
    }

    /// Aux variables the chain allocates.
    pub fn aux_variables(&self) -> usize {
        self.rounds + 1
    }
}

impl Circuit<Fr> for Chain {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut val = self.x;
        let mut var = cs.alloc(|| "x", || val.ok_or(SynthesisError::AssignmentMissing))?;
        for i in 0..self.rounds {
            let next = val.map(|v| v.square());
            let nv = cs.alloc(
                || format!("sq{i}"),
                || next.ok_or(SynthesisError::AssignmentMissing),
            )?;
            cs.enforce(
                || format!("c{i}"),
                |lc| lc + var,
                |lc| lc + var,
                |lc| lc + nv,
            );
            var = nv;
            val = next;
        }
        let out = cs.alloc_input(|| "out", || val.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(|| "out", |lc| lc + var, |lc| lc + CS::one(), |lc| lc + out);
        Ok(())
    }
}
