//! Capturing a circuit's R1CS matrices for parameter generation.
//!
//! The matrices are kept as flat coordinate lists, one per matrix (no allocation per
//! variable or per constraint): 8 bytes per non-zero entry whose coefficient is one (the
//! common case), 40 bytes otherwise. The rules are bellperson's generator's: the ONE input
//! first, then the circuit, then one `input_i * 0 = 0` constraint per input.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use ff::Field;
use rayon::prelude::*;

use crate::error::ParamsError;
use crate::Fr;

/// Column flag: the variable is an input (else aux).
pub(super) const INPUT_BIT: u32 = 1 << 31;
/// Column flag: the coefficient is one and is not stored.
pub(super) const ONE_BIT: u32 = 1 << 30;
/// Largest variable index a column can hold.
pub(super) const INDEX_MASK: u32 = ONE_BIT - 1;

/// One R1CS matrix as a list of non-zero entries in insertion (row) order.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct SparseMatrix {
    /// Constraint of each entry.
    pub(super) rows: Vec<u32>,
    /// Variable index of each entry, with [`INPUT_BIT`] / [`ONE_BIT`] flags.
    pub(super) cols: Vec<u32>,
    /// Coefficients of the entries without [`ONE_BIT`], in entry order.
    pub(super) coeffs: Vec<Fr>,
}

impl SparseMatrix {
    /// Appends the terms of `lc` as entries of row `row`; returns false when an index does
    /// not fit.
    fn push_lc(&mut self, lc: &LinearCombination<Fr>, row: u32) -> bool {
        let mut ok = true;
        let terms = lc.iter_inputs().map(|(&i, c)| (i, INPUT_BIT, c));
        let terms = terms.chain(lc.iter_aux().map(|(&i, c)| (i, 0, c)));
        for (i, flag, coeff) in terms {
            if bool::from(coeff.is_zero()) {
                continue;
            }
            let Ok(i) = u32::try_from(i) else {
                ok = false;
                continue;
            };
            if i > INDEX_MASK {
                ok = false;
                continue;
            }
            let mut col = i | flag;
            if *coeff == Fr::ONE {
                col |= ONE_BIT;
            } else {
                self.coeffs.push(*coeff);
            }
            self.rows.push(row);
            self.cols.push(col);
        }
        ok
    }

    /// Number of non-zero entries.
    pub(crate) fn nnz(&self) -> usize {
        self.rows.len()
    }

    /// Heap bytes held.
    fn heap_bytes(&self) -> usize {
        4 * (self.rows.capacity() + self.cols.capacity()) + 32 * self.coeffs.capacity()
    }

    /// Heap bytes in use (8 per entry, 32 more per stored coefficient).
    fn used_bytes(&self) -> usize {
        8 * self.rows.len() + 32 * self.coeffs.len()
    }

    /// Entries whose coefficient is not one (stored).
    fn stored_coeffs(&self) -> usize {
        self.coeffs.len()
    }

    /// Sums `coeff * at_row[row]` per variable: returns the polynomials of every input and
    /// every aux variable evaluated where the rows evaluate to `at_row` (the Lagrange
    /// basis at tau).
    ///
    /// Parallel without sorting: each task owns a range of aux variables and scans all
    /// entries, so no task writes where another does; scanning is cheap next to the
    /// multiplications, which each happen once.
    pub(crate) fn evaluate(
        &self,
        at_row: &[Fr],
        num_inputs: usize,
        num_aux: usize,
    ) -> (Vec<Fr>, Vec<Fr>) {
        let tasks = rayon::current_num_threads().max(1);
        let per_task = num_aux.div_ceil(tasks).max(1);
        let mut aux = vec![Fr::ZERO; num_aux];
        let mut inputs = vec![Fr::ZERO; num_inputs];
        let value = |row: u32, coeff: Option<&Fr>| {
            let l = at_row[row as usize];
            match coeff {
                None => l,
                Some(c) => l * c,
            }
        };
        rayon::join(
            || {
                aux.par_chunks_mut(per_task)
                    .enumerate()
                    .for_each(|(t, out)| {
                        let lo = (t * per_task) as u32;
                        self.for_each_entry(|row, col, coeff| {
                            if col & INPUT_BIT == 0 {
                                let i = (col & INDEX_MASK).wrapping_sub(lo) as usize;
                                if i < out.len() {
                                    out[i] += value(row, coeff);
                                }
                            }
                        })
                    })
            },
            || {
                self.for_each_entry(|row, col, coeff| {
                    if col & INPUT_BIT != 0 {
                        // A circuit can forge a variable index; ignore what is not allocated.
                        if let Some(x) = inputs.get_mut((col & INDEX_MASK) as usize) {
                            *x += value(row, coeff);
                        }
                    }
                })
            },
        );
        (inputs, aux)
    }

    /// Calls `f(row, col, coeff)` for every entry; `coeff` is `None` for a coefficient of
    /// one.
    #[inline]
    pub(super) fn for_each_entry(&self, mut f: impl FnMut(u32, u32, Option<&Fr>)) {
        let mut k = 0usize;
        for (&row, &col) in self.rows.iter().zip(&self.cols) {
            if col & ONE_BIT != 0 {
                f(row, col, None);
            } else {
                f(row, col, Some(&self.coeffs[k]));
                k += 1;
            }
        }
    }
}

/// A circuit's R1CS, captured by synthesizing it with this `ConstraintSystem` (bellperson's
/// `KeypairAssembly` rules). Not extensible: like bellperson's generator, parameter
/// generation requires a sequential synthesis.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct R1csAssembly {
    pub(super) num_inputs: usize,
    pub(super) num_aux: usize,
    pub(super) num_constraints: usize,
    pub(crate) a: SparseMatrix,
    pub(crate) b: SparseMatrix,
    pub(crate) c: SparseMatrix,
    /// A variable index or the constraint count exceeded the compact representation.
    pub(super) overflow: bool,
}

impl R1csAssembly {
    /// Appends bellperson's closing `input_i * 0 = 0` constraint of every input.
    pub(super) fn enforce_inputs(&mut self) {
        for i in 0..self.num_inputs {
            self.enforce(
                || "",
                |lc| lc + Variable::new_unchecked(Index::Input(i)),
                |lc| lc,
                |lc| lc,
            );
        }
    }

    /// Synthesizes `circuit`: allocates the ONE input, runs the circuit, then appends the
    /// `input_i * 0 = 0` constraints.
    pub fn synthesize<C: Circuit<Fr>>(circuit: C) -> Result<Self, ParamsError> {
        let mut cs = Self::default();
        cs.alloc_input(|| "one", || Ok(Fr::ONE))
            .map_err(|e| ParamsError::Generate(format!("allocating ONE: {e}")))?;
        circuit
            .synthesize(&mut cs)
            .map_err(|e| ParamsError::Generate(format!("synthesis failed: {e}")))?;
        cs.enforce_inputs();
        if cs.overflow {
            return Err(ParamsError::Generate(format!(
                "circuit too large for the keygen representation ({} variables, {} constraints; \
                 at most 2^30 variables and 2^32 constraints)",
                cs.num_inputs + cs.num_aux,
                cs.num_constraints
            )));
        }
        Ok(cs)
    }

    /// Public inputs, ONE included.
    pub fn num_inputs(&self) -> usize {
        self.num_inputs
    }

    /// Aux (private) variables.
    pub fn num_aux(&self) -> usize {
        self.num_aux
    }

    /// Constraints, the input constraints included.
    pub fn num_constraints(&self) -> usize {
        self.num_constraints
    }

    /// Non-zero entries of A, B and C.
    pub fn nnz(&self) -> [usize; 3] {
        [self.a.nnz(), self.b.nnz(), self.c.nnz()]
    }

    /// Heap bytes held by the matrices (capacity).
    pub fn heap_bytes(&self) -> usize {
        self.a.heap_bytes() + self.b.heap_bytes() + self.c.heap_bytes()
    }

    /// Heap bytes the matrices' entries take (length; [`R1csAssembly::heap_bytes`] less the
    /// vectors' spare capacity).
    pub fn used_bytes(&self) -> usize {
        self.a.used_bytes() + self.b.used_bytes() + self.c.used_bytes()
    }

    /// Entries of A, B and C whose coefficient is not one (40 bytes each, 8 otherwise).
    pub fn stored_coeffs(&self) -> [usize; 3] {
        [
            self.a.stored_coeffs(),
            self.b.stored_coeffs(),
            self.c.stored_coeffs(),
        ]
    }
}

impl ConstraintSystem<Fr> for R1csAssembly {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        // No assignment is needed (nor computed) for parameter generation.
        self.num_aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.num_aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.num_inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.num_inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        let Ok(row) = u32::try_from(self.num_constraints) else {
            self.overflow = true;
            return;
        };
        let ok_a = self.a.push_lc(&a(LinearCombination::zero()), row);
        let ok_b = self.b.push_lc(&b(LinearCombination::zero()), row);
        let ok_c = self.c.push_lc(&c(LinearCombination::zero()), row);
        self.overflow |= !(ok_a && ok_b && ok_c);
        self.num_constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// x * (2 y + 1) = z - 3 ONE, with a zero coefficient dropped.
    struct Small;

    impl Circuit<Fr> for Small {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Fr::ONE))?;
            let y = cs.alloc(|| "y", || Ok(Fr::ONE))?;
            let z = cs.alloc(|| "z", || Ok(Fr::ONE))?;
            let two = Fr::from(2u64);
            cs.enforce(
                || "c",
                |lc| lc + x + (Fr::ZERO, y),
                |lc| lc + (two, y) + CS::one(),
                |lc| lc + z - (Fr::from(3u64), CS::one()),
            );
            Ok(())
        }
    }

    #[test]
    fn counts_entries_coefficients_and_bytes() {
        let r = R1csAssembly::synthesize(Small).unwrap();
        // The circuit's constraint and ONE's input constraint (ONE in A).
        assert_eq!(r.num_constraints(), 2);
        assert_eq!((r.num_inputs(), r.num_aux()), (1, 3));
        assert_eq!(r.nnz(), [2, 2, 2]);
        assert_eq!(r.stored_coeffs(), [0, 1, 1]);
        assert_eq!(r.used_bytes(), 6 * 8 + 2 * 32);
        assert!(r.heap_bytes() >= r.used_bytes());
    }
}
