//! The PoSt circuit twin (sectors in parallel, Poseidon computed natively) against
//! storage-proofs' circuit: the full assignment (a, b, c, aux, inputs, densities) equal to
//! the upstream circuit synthesized in order and to storage-proofs' own parallel chunks, at
//! 2 KiB (the sealed fixture) and on virtual sectors of every tree shape (8 MiB: arity 8;
//! 32 GiB: 8 and 8; 64 GiB: 8, 8 and 2).

#[path = "common/assign.rs"]
mod assign;
mod common;

use filprove_filecoin::{
    twin_fallbacks, virtual_sector, ProofKind, ProofRequest, RequestBody, SynthesisPath,
};

fn registered(req: &ProofRequest) -> String {
    match req.body() {
        RequestBody::WinningPoSt { registered, .. }
        | RequestBody::WindowPoSt { registered, .. } => {
            format!("{registered:?}")
        }
        _ => unreachable!("a PoSt request"),
    }
}

/// Every path gives the assignment of the upstream circuit in order; the twin (twice: the
/// first run may learn the shape) without falling back, every constraint satisfied.
fn check_paths(name: &str, req: &ProofRequest) {
    let in_order = req.synthesize_with(0, SynthesisPath::InOrder).unwrap();
    let want = &in_order.assignment;
    let fallbacks = twin_fallbacks();
    for path in [
        SynthesisPath::Twin,
        SynthesisPath::Gadgets,
        SynthesisPath::Twin,
    ] {
        let got = req.synthesize_with(0, path).unwrap();
        assign::assert_same(want, &got.assignment);
        assert!(
            got.assignment == *want,
            "{name} {path:?}: assignments differ"
        );
        assert_eq!(got.public_inputs, in_order.public_inputs, "{name} {path:?}");
    }
    assert_eq!(twin_fallbacks(), fallbacks, "{name}: the twin fell back");
    let key = format!("post {}", registered(req));
    let shape = filprove_groth16::parts::known_shape(&key).expect("the twin's shape learnt");
    assert_eq!(shape.head.constraints, 0, "{name}: no head but ONE");
    let r1cs = req.circuit().blank_r1cs().unwrap();
    if let Err(e) = r1cs.check_assignment(want) {
        panic!("{name}: {e}");
    }
}

#[test]
fn twin_equals_the_upstream_circuit_2k() {
    for kind in [ProofKind::WindowPoSt, ProofKind::WinningPoSt] {
        check_paths(&format!("{kind} 2 KiB"), &common::request(kind));
    }
}

#[test]
fn twin_equals_the_upstream_circuit_virtual() {
    for (size, kinds) in [
        (
            8u64 << 20,
            &[ProofKind::WindowPoSt, ProofKind::WinningPoSt][..],
        ),
        (32 << 30, &[ProofKind::WinningPoSt][..]),
        (64 << 30, &[ProofKind::WinningPoSt][..]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let set = virtual_sector::make(dir.path(), size, kinds, 41).unwrap();
        for &kind in kinds {
            let req = set.request(kind).unwrap();
            check_paths(&format!("{kind} {size} (virtual)"), &req);
        }
    }
}
