//! Assignments that do not fit their parameters, and the typed errors they must give.

use filprove_groth16::density::DensityBits;
use filprove_groth16::{ProveError, ProvingAssignment};

/// The kind of error an ill-shaped request must give (the CPU reference's exact error
/// too: see [`super::check_backend`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// [`ProveError::ShapeMismatch`]: a length disagrees, inside the assignment or with
    /// the parameters.
    ShapeMismatch,
    /// [`ProveError::Invalid`]: the assignment has no ONE input.
    Invalid,
}

impl Expect {
    /// Whether `e` is of the kind expected.
    pub fn admits(self, e: &ProveError) -> bool {
        match self {
            Expect::ShapeMismatch => matches!(e, ProveError::ShapeMismatch { .. }),
            Expect::Invalid => matches!(e, ProveError::Invalid(_)),
        }
    }
}

/// Copies of `good` (a witness that fits its parameters) broken one way each, with the
/// error each must give; `other` is a consistent witness of another circuit.
pub fn broken(
    good: &ProvingAssignment,
    other: &ProvingAssignment,
) -> Vec<(&'static str, ProvingAssignment, Expect)> {
    let edit = |f: &dyn Fn(&mut ProvingAssignment)| {
        let mut a = good.clone();
        f(&mut a);
        a
    };
    vec![
        (
            "another circuit's witness",
            other.clone(),
            Expect::ShapeMismatch,
        ),
        (
            "b one evaluation short",
            edit(&|a| {
                a.b.pop();
            }),
            Expect::ShapeMismatch,
        ),
        (
            "b one evaluation long",
            edit(&|a| a.b.push(filprove_groth16::Fr::from(7u64))),
            Expect::ShapeMismatch,
        ),
        (
            "one aux value short",
            edit(&|a| {
                a.aux_assignment.pop();
            }),
            Expect::ShapeMismatch,
        ),
        (
            "one public input too many",
            edit(&|a| a.input_assignment.push(filprove_groth16::Fr::from(7u64))),
            Expect::ShapeMismatch,
        ),
        (
            "no ONE input",
            edit(&|a| a.input_assignment.clear()),
            Expect::Invalid,
        ),
        (
            "empty density bitmaps",
            edit(&|a| {
                a.a_aux_density = DensityBits::new();
                a.b_aux_density = DensityBits::new();
                a.b_input_density = DensityBits::new();
            }),
            Expect::ShapeMismatch,
        ),
    ]
}
