//! Two `ProvingAssignment`s compared field by field: the differential tests of the native
//! twins run the upstream gadget on one and the twin on the other.

#![allow(dead_code)]

use bellperson::ConstraintSystem;
use ff::Field;
use filprove_groth16::{Fr, ProvingAssignment};

/// An assignment with the ONE input, as synthesis starts one.
pub fn fresh() -> ProvingAssignment {
    let mut cs = ProvingAssignment::default();
    cs.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
    cs
}

/// Panics at the first difference, naming it.
pub fn assert_same(g: &ProvingAssignment, n: &ProvingAssignment) {
    assert_eq!(g.input_assignment, n.input_assignment, "inputs");
    assert_eq!(g.aux_assignment.len(), n.aux_assignment.len(), "aux count");
    if let Some(i) =
        (0..g.aux_assignment.len()).find(|&i| g.aux_assignment[i] != n.aux_assignment[i])
    {
        panic!("aux {i} differs");
    }
    assert_eq!(g.a.len(), n.a.len(), "constraint count");
    for (name, x, y) in [("a", &g.a, &n.a), ("b", &g.b, &n.b)] {
        if let Some(i) = (0..x.len()).find(|&i| x[i] != y[i]) {
            panic!("{name}[{i}] differs");
        }
    }
    for (name, x, y) in [
        ("A aux", &g.a_aux_density, &n.a_aux_density),
        ("B input", &g.b_input_density, &n.b_input_density),
        ("B aux", &g.b_aux_density, &n.b_aux_density),
    ] {
        assert_eq!(x.len(), y.len(), "{name} density length");
        if let Some(i) = (0..x.len()).find(|&i| x.get(i) != y.get(i)) {
            panic!("{name} density bit {i} differs");
        }
    }
    assert!(g == n, "assignments differ");
}
