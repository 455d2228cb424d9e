//! Virtual sectors (docs/virtual-sectors.md): inputs of every published size pass
//! filecoin-proofs' vanilla verifiers, 2 KiB and 8 MiB ones are proved and verified by
//! filecoin-proofs, and corrupt ones are refused on intake. Making them, and sealing
//! fixtures, reports every step.

mod common;

use filprove_filecoin::fixtures::{FIXTURE_MINER_ID, FIXTURE_SECTOR_NUMBER};
use filprove_filecoin::{
    fixtures, virtual_sector, FilecoinError, ProofKind, ProofRequest, RequestBody,
};
use filprove_groth16::progress::{ProgressUnit, RecordedPhase, RecordedProgress};
use serde_json::Value;

const SIZES: [u64; 5] = [2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30];

fn c1_json(size: u64, seed: u64) -> Value {
    serde_json::to_value(virtual_sector::porep_c1(size, seed).unwrap()).unwrap()
}

fn porep_request(c1: &Value) -> Result<ProofRequest, FilecoinError> {
    ProofRequest::new(RequestBody::PoRep {
        c1: Box::new(serde_json::from_value(c1.clone()).unwrap()),
        sector_number: FIXTURE_SECTOR_NUMBER,
        miner_id: FIXTURE_MINER_ID,
    })
}

/// The challenge proofs of every partition, flattened.
fn proofs(c1: &Value) -> Vec<&Value> {
    let (_, partitions) = c1["vanilla_proofs"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    partitions
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p.as_array().unwrap())
        .collect()
}

fn column_index(column_proof: &Value) -> u64 {
    column_proof["column"]["index"].as_u64().unwrap()
}

/// (challenged nodes, whether two challenges coincide, whether a challenged node is a
/// parent of a challenge).
fn traps(c1: &Value) -> (Vec<u64>, bool, bool) {
    let challenges: Vec<u64> = proofs(c1)
        .iter()
        .map(|p| column_index(&p["replica_column_proofs"]["c_x"]))
        .collect();
    let mut sorted = challenges.clone();
    sorted.sort_unstable();
    let coinciding = sorted.windows(2).any(|w| w[0] == w[1]);
    let parent_challenged = proofs(c1).iter().any(|p| {
        let r = &p["replica_column_proofs"];
        r["drg_parents"]
            .as_array()
            .unwrap()
            .iter()
            .chain(r["exp_parents"].as_array().unwrap())
            .any(|c| challenges.contains(&column_index(c)))
    });
    (challenges, coinciding, parent_challenged)
}

#[test]
fn every_size_passes_the_vanilla_verifiers() {
    common::env();
    for size in SIZES {
        let c1 = c1_json(size, 11);
        let req = porep_request(&c1).unwrap_or_else(|e| panic!("{size}: {e}"));
        let partitions = req.num_partitions();
        assert_eq!(partitions, if size >= 32 << 30 { 10 } else { 1 });
        let per_partition = if size >= 32 << 30 { 18 } else { 2 };
        assert_eq!(proofs(&c1).len(), partitions * per_partition, "{size}");
    }
    // PoSt and SnapDeals: WinningPoSt and SnapDeals of every size; WindowPoSt partitions of
    // test sizes and 32 GiB.
    let dir = tempfile::tempdir().unwrap();
    for size in SIZES {
        let kinds: &[ProofKind] = match size {
            s if s == 64 << 30 => &[ProofKind::WinningPoSt, ProofKind::SnapDeals],
            _ => &[
                ProofKind::WinningPoSt,
                ProofKind::WindowPoSt,
                ProofKind::SnapDeals,
            ],
        };
        let set = virtual_sector::make(dir.path(), size, kinds, 11).unwrap();
        for &kind in kinds {
            let req = set.request(kind).unwrap();
            assert_eq!(req.circuit().sector_size, size);
            if let RequestBody::WindowPoSt {
                vanilla_proofs,
                registered,
                ..
            } = req.body()
            {
                assert_eq!(
                    vanilla_proofs.len(),
                    registered.sector_count(),
                    "a full partition"
                );
            }
        }
    }
}

#[test]
fn virtual_inputs_are_deterministic_per_seed() {
    let a = c1_json(2 << 10, 5);
    assert_eq!(a, c1_json(2 << 10, 5));
    let b = c1_json(2 << 10, 6);
    assert_ne!(a["comm_r"], b["comm_r"]);
    assert_ne!(a["replica_id"], b["replica_id"]);
}

/// 2 KiB sectors (two challenges among 63 nodes) whose challenges coincide, and whose
/// challenged node is a parent of the other challenge: both are proved with the CPU
/// backend and verified by filecoin-proofs, as are a virtual WinningPoSt, WindowPoSt and
/// SnapDeals.
#[test]
fn virtual_2k_proofs_verify_traps_included() {
    common::env();
    let find = |want: fn(bool, bool) -> bool| {
        (0..5_000u64)
            .find(|&seed| {
                let (_, coinciding, parent) = traps(&c1_json(2 << 10, seed));
                want(coinciding, parent)
            })
            .expect("a seed with the trap among the first 5,000")
    };
    let coinciding = find(|c, _| c);
    let challenged_parent = find(|_, p| p);
    for seed in [coinciding, challenged_parent] {
        let req = porep_request(&c1_json(2 << 10, seed)).unwrap();
        let proof = common::prove_cpu(&req, seed);
        assert!(req.verify(&proof).unwrap(), "seed {seed}");
    }
    let dir = tempfile::tempdir().unwrap();
    let kinds = [
        ProofKind::WinningPoSt,
        ProofKind::WindowPoSt,
        ProofKind::SnapDeals,
    ];
    let set = virtual_sector::make(dir.path(), 2 << 10, &kinds, 3).unwrap();
    for kind in kinds {
        let req = set.request(kind).unwrap();
        let proof = common::prove_cpu(&req, 3);
        assert!(req.verify(&proof).unwrap(), "{kind}");
    }
}

#[test]
fn virtual_8m_porep_proves_and_verifies() {
    common::env();
    let dir = tempfile::tempdir().unwrap();
    let set = virtual_sector::make(dir.path(), 8 << 20, &[ProofKind::PoRep], 8).unwrap();
    let req = set.request(ProofKind::PoRep).unwrap();
    // The raw and wrapped C1 files parse to the same request.
    for path in [set.c1_raw.as_ref(), set.c1_wrapped.as_ref()] {
        let bytes = std::fs::read(path.unwrap()).unwrap();
        let parsed = ProofRequest::parse_c1(&bytes, Some(FIXTURE_SECTOR_NUMBER), FIXTURE_MINER_ID);
        assert_eq!(
            parsed.unwrap().public_inputs().unwrap(),
            req.public_inputs().unwrap()
        );
    }
    let proof = common::prove_cpu(&req, 8);
    assert!(req.verify(&proof).unwrap());
}

/// Flips the lowest bit of the 32-byte value at `pointer` (a JSON pointer into the C1);
/// the value stays a field element.
fn flip(c1: &Value, pointer: &str) -> Value {
    let mut c1 = c1.clone();
    let bytes = c1
        .pointer_mut(pointer)
        .unwrap_or_else(|| panic!("no {pointer}"));
    let b0 = bytes[0].as_u64().unwrap();
    bytes[0] = Value::from(b0 ^ 1);
    c1
}

#[test]
fn corrupt_virtual_c1s_are_refused() {
    common::env();
    let c1 = c1_json(2 << 10, 1);
    porep_request(&c1).unwrap();
    let p = "/vanilla_proofs/StackedDrg2KiBV1/0/0";
    let cases = [
        ("a challenged label", format!("{p}/replica_column_proofs/c_x/column/rows/1")),
        ("a DRG parent's label", format!("{p}/replica_column_proofs/drg_parents/2/column/rows/0")),
        ("an expander parent's label", format!("{p}/replica_column_proofs/exp_parents/5/column/rows/0")),
        ("a tree C path", format!("{p}/replica_column_proofs/c_x/inclusion_proof/data/Single/path/path/0/hashes/3")),
        ("a parent's tree C path", format!("{p}/replica_column_proofs/exp_parents/0/inclusion_proof/data/Single/path/path/1/hashes/0")),
        ("a tree D path", format!("{p}/comm_d_proofs/data/Single/path/path/4/hashes/0")),
        ("a tree D leaf", format!("{p}/comm_d_proofs/data/Single/leaf")),
        ("a tree R path", format!("{p}/comm_r_last_proof/data/Single/path/path/0/hashes/6")),
        ("a labeling proof's parent", format!("{p}/labeling_proofs/1/parents/36")),
        ("an encoding proof's parent", format!("{p}/encoding_proof/parents/0")),
        ("comm_r", "/comm_r".to_string()),
        ("comm_d", "/comm_d".to_string()),
        ("the seed", "/seed".to_string()),
        ("the ticket", "/ticket".to_string()),
    ];
    for (what, pointer) in cases {
        let err = porep_request(&flip(&c1, &pointer)).expect_err(what);
        assert!(
            matches!(err.code(), "invalid_request" | "invalid_commitment"),
            "{what}: {err}"
        );
    }
}

#[test]
fn making_inputs_reports_every_step() {
    common::env();
    let dir = tempfile::tempdir().unwrap();
    let progress = RecordedProgress::default();
    virtual_sector::make_reporting(
        &dir.path().join("v"),
        2 << 10,
        &ProofKind::ALL,
        5,
        &progress,
    )
    .unwrap();
    let kinds = ProofKind::ALL.len() as u64;
    assert_eq!(
        progress.phases(),
        [RecordedPhase {
            name: "writing inputs".into(),
            total: Some(kinds),
            unit: ProgressUnit::Items("kinds"),
            done: kinds,
        }]
    );

    // Sealed: the piece, PC1 and PC2 of the data sector and of SnapDeals' CC sector, then
    // each request.
    let progress = RecordedProgress::default();
    fixtures::make_reporting(
        &dir.path().join("s"),
        2 << 10,
        &ProofKind::ALL,
        5,
        &progress,
    )
    .unwrap();
    let phases = progress.phases();
    assert_eq!(phases.len(), 1, "{phases:?}");
    assert_eq!(phases[0].total, Some(2 * 3 + kinds));
    assert_eq!(phases[0].done, 2 * 3 + kinds);
}
