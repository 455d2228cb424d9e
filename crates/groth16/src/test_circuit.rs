//! A circuit for the crate's unit tests.

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use ff::Field;

use crate::Fr;

/// Allocates `n` variables, each constrained to square to the next.
pub(crate) struct Chain(pub usize);

impl Circuit<Fr> for Chain {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut v = Fr::from(3u64);
        let mut prev = cs.alloc(|| "x0", || Ok(v))?;
        for i in 1..self.0 {
            let next = v.square();
            let var = cs.alloc(|| format!("x{i}"), || Ok(next))?;
            cs.enforce(|| "sq", |lc| lc + prev, |lc| lc + prev, |lc| lc + var);
            prev = var;
            v = next;
        }
        Ok(())
    }
}
