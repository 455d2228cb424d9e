//! Input handling on real 2 KiB fixtures: every accepted encoding, and typed errors (never a
//! panic) for truncated, corrupted, oversized or mismatching inputs.

mod common;

use base64::Engine as _;
use filprove_filecoin::c1::{C1Wrapper, MAX_C1_BYTES};
use filprove_filecoin::fixtures::FIXTURE_MINER_ID;
use filprove_filecoin::{
    FilecoinError, ProofKind, ProofRequest, RegisteredPoStProof, RegisteredUpdateProof, RequestBody,
};

fn code(r: Result<ProofRequest, FilecoinError>) -> &'static str {
    match r {
        Ok(_) => "ok",
        Err(e) => {
            assert!(!e.to_string().is_empty());
            e.code()
        }
    }
}

fn raw_c1() -> Vec<u8> {
    std::fs::read(common::env().set_2k.c1_raw.as_ref().unwrap()).unwrap()
}

#[test]
fn c1_raw_wrapped_and_request_file_agree() {
    let raw = raw_c1();
    let wrapped = std::fs::read(common::env().set_2k.c1_wrapped.as_ref().unwrap()).unwrap();
    let a = ProofRequest::parse_c1(&raw, Some(1), FIXTURE_MINER_ID).unwrap();
    let b = ProofRequest::parse_c1(&wrapped, None, FIXTURE_MINER_ID).unwrap();
    let c = common::request(ProofKind::PoRep);
    assert_eq!(a.kind(), ProofKind::PoRep);
    assert_eq!(a.num_partitions(), 1);
    assert_eq!(a.circuit().short_name, "porep-2k");
    for r in [&b, &c] {
        assert_eq!(r.to_request_json(), a.to_request_json());
        assert_eq!(r.public_inputs().unwrap(), a.public_inputs().unwrap());
    }
    // Wrapper given inline in a request file.
    let w: C1Wrapper = serde_json::from_slice(&wrapped).unwrap();
    let file = serde_json::json!({"kind": "porep", "miner_id": FIXTURE_MINER_ID, "c1_wrapped": w});
    let d = ProofRequest::from_request_json(file.to_string().as_bytes()).unwrap();
    assert_eq!(d.to_request_json(), a.to_request_json());
}

#[test]
fn request_files_round_trip() {
    for kind in ProofKind::ALL {
        let req = common::request(kind);
        assert_eq!(req.kind(), kind);
        let again = ProofRequest::from_request_json(&req.to_request_json()).unwrap();
        assert_eq!(again.to_request_json(), req.to_request_json());
        assert_eq!(again.public_inputs().unwrap(), req.public_inputs().unwrap());
    }
}

#[test]
fn bad_c1_inputs_are_typed_errors() {
    let raw = raw_c1();
    let m = FIXTURE_MINER_ID;
    // Truncated anywhere: bad JSON.
    for cut in [0, 1, raw.len() / 3, raw.len() / 2, raw.len() - 1] {
        assert_eq!(
            code(ProofRequest::parse_c1(&raw[..cut], Some(1), m)),
            "bad_json",
            "cut {cut}"
        );
    }
    // Oversized: refused before parsing.
    let big = vec![b' '; MAX_C1_BYTES * 2];
    assert_eq!(
        code(ProofRequest::parse_c1(&big, Some(1), m)),
        "input_too_large"
    );
    // Raw C1 without a sector number.
    assert_eq!(
        code(ProofRequest::parse_c1(&raw, None, m)),
        "invalid_request"
    );
    // Wrong miner id or sector number: the replica id does not match.
    assert_eq!(
        code(ProofRequest::parse_c1(&raw, Some(2), m)),
        "invalid_request"
    );
    assert_eq!(
        code(ProofRequest::parse_c1(&raw, Some(1), m + 1)),
        "invalid_request"
    );
    // Corrupted bytes inside the JSON: never a panic, always a typed error.
    let text = String::from_utf8(raw.clone()).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["comm_r"] = serde_json::json!(vec![0u8; 32]);
    assert_eq!(
        code(ProofRequest::parse_c1(v.to_string().as_bytes(), Some(1), m)),
        "invalid_commitment"
    );
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["seed"] = serde_json::json!(vec![7u8; 32]);
    assert_eq!(
        code(ProofRequest::parse_c1(v.to_string().as_bytes(), Some(1), m)),
        "invalid_request"
    );
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["registered_proof"] = serde_json::json!("StackedDrg8MiBV1_1");
    assert_eq!(
        code(ProofRequest::parse_c1(v.to_string().as_bytes(), Some(1), m)),
        "wrong_sector_size"
    );
    // An interactive C1 (1 partition) relabelled non-interactive (13 partitions at 2 KiB).
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["registered_proof"] = serde_json::json!("StackedDrg2KiBV1_2_Feat_NonInteractivePoRep");
    assert_eq!(
        code(ProofRequest::parse_c1(v.to_string().as_bytes(), Some(1), m)),
        "wrong_vanilla_proof_count"
    );
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["registered_proof"] = serde_json::json!("NoSuchProof");
    assert_eq!(
        code(ProofRequest::parse_c1(v.to_string().as_bytes(), Some(1), m)),
        "bad_json"
    );
    // Flip bytes at many places of the document: errors or (rarely) still valid, no panic.
    for i in (0..raw.len()).step_by(raw.len() / 97) {
        let mut b = raw.clone();
        b[i] = if b[i] == b'1' { b'2' } else { b'1' };
        let _ = ProofRequest::parse_c1(&b, Some(1), m);
    }
}

#[test]
fn bad_wrappers_are_typed_errors() {
    let raw = raw_c1();
    let m = FIXTURE_MINER_ID;
    let b64 = base64::engine::general_purpose::STANDARD.encode(&raw);
    let wrap = |n: u64, p: &str, s: u64| {
        serde_json::to_vec(&C1Wrapper {
            sector_num: n,
            phase1_out: p.to_string(),
            sector_size: s,
        })
        .unwrap()
    };
    assert_eq!(
        code(ProofRequest::parse_c1(&wrap(1, &b64, 2048), None, m)),
        "ok"
    );
    assert_eq!(
        code(ProofRequest::parse_c1(&wrap(1, &b64, 8 << 20), None, m)),
        "wrong_sector_size"
    );
    assert_eq!(
        code(ProofRequest::parse_c1(&wrap(1, &b64, 2048), Some(2), m)),
        "invalid_request"
    );
    assert_eq!(
        code(ProofRequest::parse_c1(
            &wrap(1, "%%%notbase64", 2048),
            None,
            m
        )),
        "bad_base64"
    );
    let half = ProofRequest::parse_c1(&wrap(1, &b64[..b64.len() / 2 + 1], 2048), None, m);
    assert!(matches!(code(half), "bad_base64" | "bad_json"));
    let truncated = base64::engine::general_purpose::STANDARD.encode(&raw[..raw.len() / 2]);
    assert_eq!(
        code(ProofRequest::parse_c1(&wrap(1, &truncated, 2048), None, m)),
        "bad_json"
    );
}

fn post_body(kind: ProofKind) -> RequestBody {
    common::request(kind).body().clone()
}

#[test]
fn post_and_snap_mismatches_are_typed_errors() {
    // Registered proof of the other PoSt type, or of another sector size.
    let RequestBody::WindowPoSt {
        miner_id,
        randomness,
        vanilla_proofs,
        ..
    } = post_body(ProofKind::WindowPoSt)
    else {
        unreachable!()
    };
    let window = |registered, vanilla_proofs: Vec<Vec<u8>>| {
        ProofRequest::new(RequestBody::WindowPoSt {
            registered,
            miner_id,
            randomness,
            partition_index: 0,
            vanilla_proofs,
        })
    };
    assert_eq!(
        code(window(
            RegisteredPoStProof::StackedDrgWindow2KiBV1_2,
            vanilla_proofs.clone()
        )),
        "ok"
    );
    assert_eq!(
        code(window(
            RegisteredPoStProof::StackedDrgWinning2KiBV1,
            vanilla_proofs.clone()
        )),
        "registered_proof_mismatch"
    );
    let other_size = window(
        RegisteredPoStProof::StackedDrgWindow32GiBV1_2,
        vanilla_proofs.clone(),
    );
    assert!(matches!(
        code(other_size),
        "bad_vanilla_proof" | "invalid_request"
    ));
    // Wrong counts.
    assert_eq!(
        code(window(
            RegisteredPoStProof::StackedDrgWindow2KiBV1_2,
            vec![]
        )),
        "wrong_vanilla_proof_count"
    );
    let three = vec![
        vanilla_proofs[0].clone(),
        vanilla_proofs[1].clone(),
        vanilla_proofs[0].clone(),
    ];
    assert_eq!(
        code(window(RegisteredPoStProof::StackedDrgWindow2KiBV1_2, three)),
        "wrong_vanilla_proof_count"
    );
    // Truncated and corrupted vanilla proofs.
    let mut cut = vanilla_proofs.clone();
    let half = cut[0].len() / 2;
    cut[0].truncate(half);
    assert_eq!(
        code(window(RegisteredPoStProof::StackedDrgWindow2KiBV1_2, cut)),
        "bad_vanilla_proof"
    );
    for i in (0..vanilla_proofs[0].len()).step_by(vanilla_proofs[0].len() / 31) {
        let mut bad = vanilla_proofs.clone();
        bad[0][i] ^= 0x55;
        let r = window(RegisteredPoStProof::StackedDrgWindow2KiBV1_2, bad);
        assert!(r.is_err(), "corrupted byte {i} accepted");
    }
    // Randomness that is not a field element.
    let r = ProofRequest::new(RequestBody::WindowPoSt {
        registered: RegisteredPoStProof::StackedDrgWindow2KiBV1_2,
        miner_id,
        randomness: [0xff; 32],
        partition_index: 0,
        vanilla_proofs: vanilla_proofs.clone(),
    });
    assert_eq!(code(r), "invalid_commitment");

    let RequestBody::WinningPoSt {
        registered,
        miner_id,
        randomness,
        vanilla_proofs,
    } = post_body(ProofKind::WinningPoSt)
    else {
        unreachable!()
    };
    let two = vec![vanilla_proofs[0].clone(), vanilla_proofs[0].clone()];
    let r = ProofRequest::new(RequestBody::WinningPoSt {
        registered,
        miner_id,
        randomness,
        vanilla_proofs: two,
    });
    assert_eq!(code(r), "wrong_vanilla_proof_count");

    let RequestBody::SnapDeals {
        comm_r_old,
        comm_r_new,
        comm_d_new,
        vanilla_proofs,
        ..
    } = post_body(ProofKind::SnapDeals)
    else {
        unreachable!()
    };
    let snap = |registered, comm_r_old, vanilla_proofs| {
        ProofRequest::new(RequestBody::SnapDeals {
            registered,
            comm_r_old,
            comm_r_new,
            comm_d_new,
            vanilla_proofs,
        })
    };
    assert_eq!(
        code(snap(
            RegisteredUpdateProof::StackedDrg2KiBV1,
            comm_r_old,
            vanilla_proofs.clone()
        )),
        "ok"
    );
    assert_eq!(
        code(snap(
            RegisteredUpdateProof::StackedDrg8MiBV1,
            comm_r_old,
            vanilla_proofs.clone()
        )),
        "wrong_vanilla_proof_count"
    );
    assert_eq!(
        code(snap(
            RegisteredUpdateProof::StackedDrg2KiBV1,
            comm_r_new,
            vanilla_proofs.clone()
        )),
        "invalid_request"
    );
    assert_eq!(
        code(snap(
            RegisteredUpdateProof::StackedDrg2KiBV1,
            [0; 32],
            vanilla_proofs.clone()
        )),
        "invalid_commitment"
    );
    assert_eq!(
        code(snap(
            RegisteredUpdateProof::StackedDrg2KiBV1,
            comm_r_old,
            vec![]
        )),
        "wrong_vanilla_proof_count"
    );
}

#[test]
fn bad_request_files_are_typed_errors() {
    let ok = common::request(ProofKind::WindowPoSt).to_request_json();
    let v: serde_json::Value = serde_json::from_slice(&ok).unwrap();
    let with = |k: &str, x: serde_json::Value| {
        let mut v = v.clone();
        v[k] = x;
        ProofRequest::from_request_json(v.to_string().as_bytes())
    };
    let without = |k: &str| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove(k);
        ProofRequest::from_request_json(v.to_string().as_bytes())
    };
    assert_eq!(code(ProofRequest::from_request_json(&ok)), "ok");
    assert_eq!(
        code(ProofRequest::from_request_json(&ok[..ok.len() - 2])),
        "bad_json"
    );
    assert_eq!(code(with("kind", "nope".into())), "invalid_request");
    assert_eq!(code(with("unknown_field", 1.into())), "bad_json");
    assert_eq!(code(with("comm_r_old", "00".into())), "invalid_request");
    assert_eq!(
        code(with("registered_proof", "StackedDrg2KiBV1_1".into())),
        "registered_proof_mismatch"
    );
    assert_eq!(code(with("randomness", "zz".into())), "bad_hex");
    assert_eq!(code(with("randomness", "ab".repeat(31).into())), "bad_hex");
    assert_eq!(
        code(with("vanilla_proofs", serde_json::json!(["!!"]))),
        "bad_base64"
    );
    assert_eq!(code(without("miner_id")), "invalid_request");
    assert_eq!(code(without("vanilla_proofs")), "invalid_request");
    let big = vec![b' '; filprove_filecoin::json::MAX_REQUEST_BYTES + 1];
    assert_eq!(
        code(ProofRequest::from_request_json(&big)),
        "input_too_large"
    );
}

#[test]
fn missing_params_name_the_command() {
    let req = common::request(ProofKind::PoRep);
    let empty = common::env().root.join("no-params");
    let err = req.circuit().load_srs(&empty, false).unwrap_err();
    assert_eq!(err.code(), "params_missing");
    assert!(
        err.to_string()
            .contains("filprove params generate --circuit porep-2k"),
        "{err}"
    );
}

/// Non-interactive PoRep inputs: the NI C1 parses (13 partitions, the plain PoRep circuit);
/// mislabelled, truncated or corrupted ones are typed errors; proof bytes that are not the
/// aggregate of this sector's partition proofs (garbage, partition proofs, an aggregate of
/// wrong proofs and its corruptions) do not verify - no panic anywhere.
#[test]
fn non_interactive_porep_inputs() {
    use filprove_groth16::Proof;

    let req = common::non_interactive_porep_request();
    let RequestBody::PoRep { c1, .. } = req.body() else {
        panic!("not a PoRep request");
    };
    assert_eq!(
        c1.registered_proof,
        filprove_filecoin::RegisteredSealProof::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep
    );
    assert_eq!(req.num_partitions(), 13);
    assert!(req.is_aggregated());
    assert!(!common::request(ProofKind::PoRep).is_aggregated());
    assert_eq!(
        req.circuit().cache_id,
        common::request(ProofKind::PoRep).circuit().cache_id
    );
    assert_eq!(req.public_inputs().unwrap().len(), 13);

    let raw = serde_json::to_vec(c1.as_ref()).unwrap();
    let m = FIXTURE_MINER_ID;
    assert_eq!(code(ProofRequest::parse_c1(&raw, Some(1), m)), "ok");
    let text = String::from_utf8(raw).unwrap();
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        f(&mut v);
        code(ProofRequest::parse_c1(v.to_string().as_bytes(), Some(1), m))
    };
    // 13 partitions of vanilla proofs under the interactive label (1 partition).
    assert_eq!(
        edit(&|v| v["registered_proof"] = serde_json::json!("StackedDrg2KiBV1_1")),
        "wrong_vanilla_proof_count"
    );
    // A partition missing.
    assert_eq!(
        edit(&|v| {
            v["vanilla_proofs"]["StackedDrg2KiBV1"]
                .as_array_mut()
                .unwrap()
                .pop();
        }),
        "wrong_vanilla_proof_count"
    );
    // The seed is not used by NI challenges, but C2 still refuses an all-zero one.
    assert_eq!(
        edit(&|v| v["seed"] = serde_json::json!(vec![0u8; 32])),
        "invalid_commitment"
    );
    assert_eq!(
        edit(&|v| v["comm_r"] = serde_json::json!(vec![0u8; 32])),
        "invalid_commitment"
    );
    assert_eq!(
        edit(&|v| v["comm_r"][0] = serde_json::json!(1)),
        "invalid_request"
    );
    // Other miner or sector: the replica id does not match.
    assert_eq!(
        code(ProofRequest::parse_c1(text.as_bytes(), Some(2), m)),
        "invalid_request"
    );

    // Assembly and verification need the parameters and the SnarkPack SRS (test ones).
    common::ensure_params(&req.circuit());
    // A well-formed proof that is no partition's proof (points hashed to the curve).
    let g = Proof {
        a: blstrs::G1Projective::hash_to_curve(b"a", b"filprove-test", &[]).into(),
        b: blstrs::G2Projective::hash_to_curve(b"b", b"filprove-test", &[]).into(),
        c: blstrs::G1Projective::hash_to_curve(b"c", b"filprove-test", &[]).into(),
    };
    assert_eq!(
        req.assemble(&vec![g; 12]).unwrap_err().code(),
        "malformed_proof"
    );
    for bytes in [
        Vec::new(),
        vec![0u8; 100],
        Proof::concat(&vec![g; 13]),
        vec![0xff; 20_000],
    ] {
        assert!(
            !req.verify(&bytes).unwrap(),
            "{} bytes verified",
            bytes.len()
        );
    }
    // The aggregate of 13 wrong proofs is well-formed but does not verify; nor do its
    // corruptions, truncations or extensions.
    let agg = req.assemble(&vec![g; 13]).unwrap();
    assert!(agg.len() > 13 * Proof::SIZE / 2, "{} bytes", agg.len());
    assert!(!req.verify(&agg).unwrap());
    for i in (0..agg.len()).step_by(agg.len() / 29) {
        assert!(!req.verify(&common::flip(&agg, i)).unwrap());
    }
    assert!(!req.verify(&agg[..agg.len() - 1]).unwrap());
    assert!(!req.verify(&[&agg[..], &[0]].concat()).unwrap());
}

/// The WindowPoSt body of the fixture with another partition index and vanilla proofs.
fn window_at(index: u32, vanilla_proofs: Vec<Vec<u8>>) -> Result<ProofRequest, FilecoinError> {
    let RequestBody::WindowPoSt {
        registered,
        miner_id,
        randomness,
        ..
    } = post_body(ProofKind::WindowPoSt)
    else {
        unreachable!()
    };
    ProofRequest::new(RequestBody::WindowPoSt {
        registered,
        miner_id,
        randomness,
        partition_index: index,
        vanilla_proofs,
    })
}

/// A partition index past what a deadline can have is refused before anything is allocated
/// from it (placeholder sectors for the earlier partitions once aborted the process at
/// u32::MAX); the last valid index is accepted, and with WindowPoSt V1_2 the public inputs
/// do not depend on the index (no placeholders are needed).
#[test]
fn window_post_partition_index_is_range_checked() {
    let RequestBody::WindowPoSt { vanilla_proofs, .. } = post_body(ProofKind::WindowPoSt) else {
        unreachable!()
    };
    let max = filprove_filecoin::bounds::MAX_WINDOW_POST_PARTITIONS;
    for index in [u32::MAX, u32::MAX / 2, max] {
        let e = window_at(index, vanilla_proofs.clone()).unwrap_err();
        assert_eq!(e.code(), "invalid_request", "{e}");
        assert!(e.to_string().contains("partition_index"), "{e}");
    }
    let last = window_at(max - 1, vanilla_proofs.clone()).unwrap();
    let first = window_at(0, vanilla_proofs).unwrap();
    assert_eq!(
        last.public_inputs().unwrap(),
        first.public_inputs().unwrap()
    );
}

/// Counts and sizes are checked against the registered proof before decoding; decoded
/// vanilla proofs with more sectors, challenges or path levels than the proof has are
/// refused before filecoin-proofs pads them to a whole partition.
#[test]
fn vanilla_proof_shapes_and_sizes_are_bounded() {
    use filecoin_proofs::{FallbackPoStSectorProof, SectorShapeBase};
    let RequestBody::WindowPoSt { vanilla_proofs, .. } = post_body(ProofKind::WindowPoSt) else {
        unreachable!()
    };
    let decode = || -> FallbackPoStSectorProof<SectorShapeBase> {
        bincode::deserialize(&vanilla_proofs[0]).unwrap()
    };
    let reencode = |p: &FallbackPoStSectorProof<SectorShapeBase>| {
        let mut v = vanilla_proofs.clone();
        v[0] = bincode::serialize(p).unwrap();
        v
    };
    assert_eq!(code(window_at(0, reencode(&decode()))), "ok");

    // Twenty times the challenges of the registered proof.
    let mut inflated = decode();
    let s = &mut inflated.vanilla_proof.sectors[0];
    s.inclusion_proofs = (0..20).flat_map(|_| s.inclusion_proofs.clone()).collect();
    let e = window_at(0, reencode(&inflated)).unwrap_err();
    assert_eq!(e.code(), "bad_vanilla_proof", "{e}");
    assert!(e.to_string().contains("inclusion proofs"), "{e}");

    // Two sector proofs in one vanilla proof.
    let mut two = decode();
    two.vanilla_proof
        .sectors
        .push(two.vanilla_proof.sectors[0].clone());
    let e = window_at(0, reencode(&two)).unwrap_err();
    assert_eq!(e.code(), "bad_vanilla_proof", "{e}");
    assert!(e.to_string().contains("sector proofs"), "{e}");

    // One vanilla proof over the per-proof size limit.
    let mut big = vanilla_proofs.clone();
    big[0] = vec![0; filprove_filecoin::json::MAX_VANILLA_PROOF_BYTES + 1];
    assert_eq!(code(window_at(0, big)), "input_too_large");

    // A PoRep sector number past the chain's range.
    let raw = raw_c1();
    let e = ProofRequest::parse_c1(&raw, Some(u64::MAX), FIXTURE_MINER_ID).unwrap_err();
    assert_eq!(e.code(), "invalid_request", "{e}");
    assert!(e.to_string().contains("sector number"), "{e}");
}

/// Errors quote at most a short escaped prefix of the input, however large the input.
#[test]
fn errors_quote_a_short_prefix_of_the_input() {
    let long = "A".repeat(4 << 20);
    let ok = common::request(ProofKind::WindowPoSt).to_request_json();
    let v: serde_json::Value = serde_json::from_slice(&ok).unwrap();
    let with = |k: &str, x: serde_json::Value| {
        let mut v = v.clone();
        v[k] = x;
        ProofRequest::from_request_json(v.to_string().as_bytes()).unwrap_err()
    };
    for (field, value) in [
        ("kind", serde_json::Value::from(long.clone())),
        ("miner_id", long.clone().into()),
        ("registered_proof", long.clone().into()),
        (&long, 1.into()),
        ("kind", format!("x\n{long}").into()),
    ] {
        let e = with(field, value);
        let text = e.to_string();
        assert!(text.len() < 700, "{}: {} bytes", e.code(), text.len());
        assert!(!text.contains('\n'), "{text}");
        assert!(!text.contains(&"A".repeat(65)), "{text}");
    }
    let e = ProofRequest::parse_c1(long.as_bytes(), Some(1), FIXTURE_MINER_ID).unwrap_err();
    assert!(e.to_string().len() < 700);
}
