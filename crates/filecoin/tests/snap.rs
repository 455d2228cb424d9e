//! SnapDeals at 2 KiB, end to end: fixture update proofs, generated parameters, the CPU
//! backend, filecoin-proofs' `verify_empty_sector_update_proof`; parted synthesis against
//! ordered synthesis at 2 KiB and on a virtual 8 MiB sector; the constraint profile.

mod common;

use std::time::Instant;

use filprove_filecoin::{virtual_sector, ProofKind, ProofRequest, SynthesisPath};

#[test]
fn snap_2k_end_to_end() {
    let req = common::request(ProofKind::SnapDeals);
    assert_eq!(req.num_partitions(), 1);
    let proof = common::prove_cpu(&req, 6);
    assert_eq!(proof.len(), 192);
    assert!(req.verify(&proof).unwrap());
    for i in [0, 47, 48, 143, 144, 191] {
        assert!(
            !req.verify(&common::flip(&proof, i)).unwrap(),
            "flipped byte {i} verified"
        );
    }
}

/// A SnapDeals partition with its challenges in parallel (a head synthesized once, one
/// part per challenge) gives the assignment that the upstream circuit synthesized in order
/// gives, field for field and bit for bit: the first time (challenge 0 in order, the shape
/// learnt) and after (every challenge in parallel), along both parted paths, without a
/// fallback.
#[test]
fn parted_snap_synthesis_equals_ordered_2k() {
    let req = common::request(ProofKind::SnapDeals);
    let fallbacks = filprove_filecoin::twin_fallbacks();
    filprove_groth16::parts::forget_shapes();
    check_parted("2 KiB", &req, &[0, 0]);
    assert_eq!(filprove_filecoin::twin_fallbacks(), fallbacks);
}

/// The same on a virtual 8 MiB sector (4 partitions of 10 challenges; the apex tree of
/// 128 leaves in the head): the first and the last partition.
#[test]
fn parted_snap_synthesis_equals_ordered_virtual_8m() {
    common::env();
    let dir = tempfile::tempdir().unwrap();
    let set = virtual_sector::make(dir.path(), 8 << 20, &[ProofKind::SnapDeals], 25).unwrap();
    let req = set.request(ProofKind::SnapDeals).unwrap();
    assert_eq!(req.num_partitions(), 4);
    let fallbacks = filprove_filecoin::twin_fallbacks();
    check_parted("8 MiB", &req, &[0, 3]);
    assert_eq!(filprove_filecoin::twin_fallbacks(), fallbacks);
}

/// Each partition of `partitions` along the parted paths, equal to ordered synthesis
/// (the time per constraint of each printed).
fn check_parted(name: &str, req: &ProofRequest, partitions: &[usize]) {
    for &k in partitions {
        let t = Instant::now();
        let want = req.synthesize_in_order(k).unwrap();
        let n = want.assignment.num_constraints() as f64;
        eprintln!(
            "{name} partition {k}: {n} constraints, in order {:.0} ns/constraint",
            t.elapsed().as_secs_f64() * 1e9 / n
        );
        for path in [SynthesisPath::Twin, SynthesisPath::Gadgets] {
            let t = Instant::now();
            let got = req.synthesize_with(k, path).unwrap();
            eprintln!(
                "{name} partition {k}: {path:?} {:.0} ns/constraint",
                t.elapsed().as_secs_f64() * 1e9 / n
            );
            assert!(
                got.assignment == want.assignment,
                "{name} partition {k} ({path:?}): parted synthesis differs ({} / {} constraints)",
                got.assignment.num_constraints(),
                want.assignment.num_constraints()
            );
            assert_eq!(got.public_inputs, want.public_inputs);
        }
    }
}

/// The SnapDeals profile (head and one challenge counted, the challenge times the count)
/// adds up to the whole blank circuit, and nearly all of it is tree D's SHA-256: what the
/// twin computes natively.
#[test]
fn snap_constraint_profiles_add_up_and_are_sha256() {
    use filprove_filecoin::{CircuitSpec, GadgetFamily};
    for (name, challenges) in [("snap-2k", 10u64), ("snap-8m", 10)] {
        let spec = CircuitSpec::from_short_name(name).unwrap();
        let profile = spec.constraint_profile().unwrap();
        let shape = spec.blank_shape().unwrap();
        assert_eq!(profile.constraints(), shape.constraints as u64, "{name}");
        assert_eq!(profile.aux(), shape.aux as u64, "{name}");
        assert_eq!(profile.inputs, shape.inputs as u64, "{name}");
        assert_eq!(profile.parts as u64, challenges, "{name}");
        let family = |f| profile.families.get(&f).copied().unwrap_or_default();
        let sha = family(GadgetFamily::Sha256).constraints;
        assert!(
            sha as f64 > 0.98 * profile.constraints() as f64,
            "{name}: SHA-256 {sha} of {}",
            profile.constraints()
        );
        // Three root checks per challenge (trees R old and new, tree D to the apex leaf).
        assert!(
            family(GadgetFamily::Equality).constraints >= 3 * challenges,
            "{name}"
        );
        assert!(family(GadgetFamily::Poseidon).constraints > 0, "{name}");
    }
}
