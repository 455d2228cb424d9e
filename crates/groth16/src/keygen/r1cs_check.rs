//! Checking an assignment against a circuit's R1CS matrices.
//!
//! A [`ProvingAssignment`] holds the A and B evaluations of every constraint but not C's
//! (a backend forms c = a*b, which is C's evaluation exactly when the witness satisfies
//! the constraints). So satisfaction is not visible in an assignment; with the circuit's
//! matrices ([`R1csAssembly`]) it is: every row must have `(A w)(B w) = C w`, and the
//! assignment's a and b must be `A w` and `B w` (w = the assignment's inputs, then aux).

use ff::Field;
use rayon::prelude::*;
use thiserror::Error;

use super::r1cs::{R1csAssembly, SparseMatrix, INDEX_MASK, INPUT_BIT};
use crate::{Fr, ProvingAssignment};

/// Why an assignment does not match or does not satisfy an R1CS.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum R1csCheckError {
    /// The assignment's lengths are not the R1CS's.
    #[error("the assignment has {got} {what}, the R1CS {expected}")]
    Shape {
        /// What was counted.
        what: &'static str,
        /// The R1CS's count.
        expected: usize,
        /// The assignment's.
        got: usize,
    },
    /// A matrix entry names a variable the R1CS did not allocate.
    #[error("constraint {row} uses a variable beyond the allocated ones")]
    Variable {
        /// The constraint.
        row: usize,
    },
    /// The assignment's A or B evaluation of a constraint is not the matrix's.
    #[error("constraint {row}: the assignment's {matrix} evaluation differs from the R1CS's")]
    Evaluation {
        /// "A" or "B".
        matrix: &'static str,
        /// The first constraint that differs.
        row: usize,
    },
    /// `(A w)(B w) != C w`.
    #[error("constraint {row} is not satisfied: (A w)(B w) != C w ({count} in all)")]
    Unsatisfied {
        /// The first constraint not satisfied.
        row: usize,
        /// How many are not.
        count: usize,
    },
}

/// The evaluations of every constraint's three linear combinations at one witness.
#[derive(Clone, Debug, PartialEq)]
pub struct RowEvaluations {
    /// `A w`, one per constraint.
    pub a: Vec<Fr>,
    /// `B w`.
    pub b: Vec<Fr>,
    /// `C w`.
    pub c: Vec<Fr>,
}

impl SparseMatrix {
    /// `M w` for a witness of `inputs` then `aux`, one value per row.
    fn times_witness(&self, rows: usize, inputs: &[Fr], aux: &[Fr]) -> Result<Vec<Fr>, usize> {
        let mut out = vec![Fr::ZERO; rows];
        let mut bad = None;
        self.for_each_entry(|row, col, coeff| {
            let i = (col & INDEX_MASK) as usize;
            let value = if col & INPUT_BIT != 0 {
                inputs.get(i)
            } else {
                aux.get(i)
            };
            match (value, out.get_mut(row as usize)) {
                (Some(v), Some(acc)) => *acc += coeff.map_or(*v, |c| *v * c),
                _ => {
                    bad.get_or_insert(row as usize);
                }
            }
        });
        bad.map_or(Ok(out), Err)
    }
}

impl R1csAssembly {
    /// The evaluations of every constraint at `asg`'s witness (its inputs and aux), from
    /// the matrices alone (`asg`'s a and b are not read).
    pub fn evaluate_rows(&self, asg: &ProvingAssignment) -> Result<RowEvaluations, R1csCheckError> {
        let (inputs, aux) = (&asg.input_assignment, &asg.aux_assignment);
        for (what, expected, got) in [
            ("inputs", self.num_inputs, inputs.len()),
            ("aux variables", self.num_aux, aux.len()),
        ] {
            if expected != got {
                return Err(R1csCheckError::Shape {
                    what,
                    expected,
                    got,
                });
            }
        }
        let n = self.num_constraints;
        let ((a, b), c) = rayon::join(
            || {
                rayon::join(
                    || self.a.times_witness(n, inputs, aux),
                    || self.b.times_witness(n, inputs, aux),
                )
            },
            || self.c.times_witness(n, inputs, aux),
        );
        let row = |r: Result<Vec<Fr>, usize>| r.map_err(|row| R1csCheckError::Variable { row });
        Ok(RowEvaluations {
            a: row(a)?,
            b: row(b)?,
            c: row(c)?,
        })
    }

    /// Checks that `asg` is an assignment of this R1CS that satisfies it: its a and b are
    /// `A w` and `B w` on every constraint, and `(A w)(B w) = C w` on every constraint.
    pub fn check_assignment(&self, asg: &ProvingAssignment) -> Result<(), R1csCheckError> {
        let n = self.num_constraints;
        for (what, got) in [
            ("a evaluations", asg.a.len()),
            ("b evaluations", asg.b.len()),
        ] {
            if got != n {
                return Err(R1csCheckError::Shape {
                    what,
                    expected: n,
                    got,
                });
            }
        }
        let rows = self.evaluate_rows(asg)?;
        for (matrix, ours, theirs) in [("A", &rows.a, &asg.a), ("B", &rows.b, &asg.b)] {
            if let Some(row) = ours.par_iter().zip(theirs).position_first(|(x, y)| x != y) {
                return Err(R1csCheckError::Evaluation { matrix, row });
            }
        }
        let unsatisfied = |i: usize| rows.a[i] * rows.b[i] != rows.c[i];
        let count = (0..n).into_par_iter().filter(|&i| unsatisfied(i)).count();
        match (0..n).into_par_iter().find_first(|&i| unsatisfied(i)) {
            Some(row) => Err(R1csCheckError::Unsatisfied { row, count }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use bellperson::{Circuit, ConstraintSystem, SynthesisError};

    use super::*;

    /// x^2 = y and x * y = z, with x and z public; `lie` puts a wrong value in z.
    #[derive(Clone, Copy)]
    struct Cube {
        x: u64,
        lie: bool,
    }

    impl Circuit<Fr> for Cube {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = Fr::from(self.x);
            let xv = cs.alloc_input(|| "x", || Ok(x))?;
            let yv = cs.alloc(|| "y", || Ok(x.square()))?;
            let z = x.square() * x + if self.lie { Fr::ONE } else { Fr::ZERO };
            let zv = cs.alloc(|| "z", || Ok(z))?;
            cs.enforce(|| "sq", |lc| lc + xv, |lc| lc + xv, |lc| lc + yv);
            cs.enforce(|| "cube", |lc| lc + xv, |lc| lc + yv, |lc| lc + zv);
            Ok(())
        }
    }

    #[test]
    fn a_satisfying_assignment_passes_and_its_rows_are_the_matrices() {
        let c = Cube { x: 3, lie: false };
        let r1cs = R1csAssembly::synthesize(c).unwrap();
        let asg = ProvingAssignment::synthesize(c).unwrap();
        r1cs.check_assignment(&asg).unwrap();
        let rows = r1cs.evaluate_rows(&asg).unwrap();
        assert_eq!(
            (rows.a.clone(), rows.b.clone()),
            (asg.a.clone(), asg.b.clone())
        );
        // 3 * 3 = 9, 3 * 9 = 27, then the input constraints (ONE, x) * 0 = 0.
        let fr = |v: u64| Fr::from(v);
        assert_eq!(rows.c, vec![fr(9), fr(27), fr(0), fr(0)]);
    }

    #[test]
    fn an_unsatisfied_constraint_is_found() {
        let r1cs = R1csAssembly::synthesize(Cube { x: 3, lie: false }).unwrap();
        let asg = ProvingAssignment::synthesize(Cube { x: 3, lie: true }).unwrap();
        assert_eq!(
            r1cs.check_assignment(&asg),
            Err(R1csCheckError::Unsatisfied { row: 1, count: 1 })
        );
    }

    #[test]
    fn a_wrong_evaluation_or_length_is_found() {
        let c = Cube { x: 5, lie: false };
        let r1cs = R1csAssembly::synthesize(c).unwrap();
        let asg = ProvingAssignment::synthesize(c).unwrap();
        let mut wrong_b = asg.clone();
        wrong_b.b[2] = Fr::ONE;
        assert_eq!(
            r1cs.check_assignment(&wrong_b),
            Err(R1csCheckError::Evaluation {
                matrix: "B",
                row: 2
            })
        );
        let mut short = asg.clone();
        short.aux_assignment.pop();
        assert!(matches!(
            r1cs.check_assignment(&short),
            Err(R1csCheckError::Shape {
                what: "aux variables",
                ..
            })
        ));
        let mut no_row = asg;
        no_row.a.pop();
        assert!(matches!(
            r1cs.check_assignment(&no_row),
            Err(R1csCheckError::Shape { .. })
        ));
    }
}
