//! A satisfiable random R1CS of a chosen size.

use bellperson::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use ff::Field;
use filprove_groth16::Fr;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `inputs` public inputs, then `constraints` constraints each defining a new aux variable
/// `v = A * B - (C terms)` over earlier variables, with a mix of coefficients (one, minus
/// one, small, random, and cancelling pairs). Everything follows from `seed`.
#[derive(Clone, Debug)]
pub struct RandomR1cs {
    /// Seed of the structure and the witness.
    pub seed: u64,
    /// Public inputs (without ONE).
    pub inputs: usize,
    /// Constraints (without the input constraints).
    pub constraints: usize,
    /// Extra aux variables that only ever occur in B (one per constraint, from the first).
    pub only_b: usize,
    /// Extra aux variables that only ever occur in C.
    pub only_c: usize,
    /// Leave one more aux variable unconstrained (parameter generation must refuse it).
    pub unconstrained: bool,
}

impl RandomR1cs {
    /// The circuit of `inputs` inputs and `constraints` constraints from `seed`.
    pub fn new(seed: u64, inputs: usize, constraints: usize) -> Self {
        Self {
            seed,
            inputs,
            constraints,
            only_b: 0,
            only_c: 0,
            unconstrained: false,
        }
    }

    /// The public inputs without ONE.
    pub fn public_inputs(&self) -> Vec<Fr> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ 0xabcdef);
        (0..self.inputs).map(|_| Fr::random(&mut rng)).collect()
    }
}

fn coeff(rng: &mut ChaCha8Rng) -> Fr {
    match rng.next_u32() % 5 {
        0 | 1 => Fr::ONE,
        2 => -Fr::ONE,
        3 => Fr::from(u64::from(rng.next_u32() % 1000 + 2)),
        _ => Fr::random(&mut *rng),
    }
}

/// A random linear combination of `k` terms over `vars`, and its value.
fn pick(rng: &mut ChaCha8Rng, vars: &[(Variable, Fr)], k: usize) -> (LinearCombination<Fr>, Fr) {
    let mut lc = LinearCombination::zero();
    let mut val = Fr::ZERO;
    for _ in 0..k {
        let (var, v) = vars[rng.next_u32() as usize % vars.len()];
        let c = coeff(rng);
        lc = lc + (c, var);
        val += c * v;
        if rng.next_u32().is_multiple_of(8) {
            // A cancelling pair: a zero net coefficient.
            lc = lc + (c, var) - (c, var);
        }
    }
    (lc, val)
}

fn alloc_n<CS: ConstraintSystem<Fr>>(
    cs: &mut CS,
    rng: &mut ChaCha8Rng,
    prefix: &str,
    n: usize,
) -> Result<Vec<(Variable, Fr)>, SynthesisError> {
    (0..n)
        .map(|i| {
            let v = Fr::random(&mut *rng);
            Ok((cs.alloc(|| format!("{prefix}{i}"), || Ok(v))?, v))
        })
        .collect()
}

impl Circuit<Fr> for RandomR1cs {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut vars: Vec<(Variable, Fr)> = vec![(CS::one(), Fr::ONE)];
        for (i, v) in self.public_inputs().into_iter().enumerate() {
            let var = cs.alloc_input(|| format!("in{i}"), || Ok(v))?;
            vars.push((var, v));
        }
        let a0 = Fr::random(&mut rng);
        let x = cs.alloc(|| "x0", || Ok(a0))?;
        vars.push((x, a0));
        let only_b = alloc_n(cs, &mut rng, "b", self.only_b)?;
        let only_c = alloc_n(cs, &mut rng, "c", self.only_c)?;
        for i in 0..self.constraints {
            let ka = 1 + rng.next_u32() as usize % 3;
            let kb = rng.next_u32() as usize % 3;
            let kc = rng.next_u32() as usize % 2;
            let (mut la, mut va) = pick(&mut rng, &vars, ka);
            let (mut lb, mut vb) = pick(&mut rng, &vars, kb);
            if kb == 0 {
                lb = lb + CS::one();
                vb = Fr::ONE;
            }
            let (mut lc, mut vc) = pick(&mut rng, &vars, kc);
            if let Some((var, v)) = only_b.get(i) {
                lb = lb + *var;
                vb += v;
            }
            if let Some((var, v)) = only_c.get(i) {
                lc = lc + *var;
                vc += v;
            }
            if i == 0 {
                la = la + x;
                va += a0;
            }
            let out = va * vb - vc;
            let nv = cs.alloc(|| format!("v{i}"), || Ok(out))?;
            cs.enforce(|| format!("c{i}"), |_| la, |_| lb, |_| lc + nv);
            vars.push((nv, out));
        }
        if self.unconstrained {
            cs.alloc(|| "free", || Ok(Fr::ONE))?;
        }
        Ok(())
    }
}
