//! A circuit of public inputs alone.

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use filprove_groth16::Fr;

/// `n` public inputs (3, 4, ...) and nothing else: no aux variable, no constraint beyond
/// the input constraints bellperson adds. `InputsOnly(0)` has ONE alone.
#[derive(Clone, Copy, Debug)]
pub struct InputsOnly(pub usize);

impl InputsOnly {
    /// The public inputs without ONE.
    pub fn public_inputs(&self) -> Vec<Fr> {
        (0..self.0).map(|i| Fr::from(i as u64 + 3)).collect()
    }
}

impl Circuit<Fr> for InputsOnly {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        for (i, v) in self.public_inputs().into_iter().enumerate() {
            cs.alloc_input(|| format!("in{i}"), || Ok(v))?;
        }
        Ok(())
    }
}
