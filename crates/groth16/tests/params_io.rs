//! Reading and writing `.params` / `.vk` files: bellperson compatibility, corruption
//! handling, atomic writes, digests and the manifest.

use std::path::Path;

use bellperson::groth16;
use ff::Field;
use filprove_groth16::params::{
    file_digest, file_digest_cached, Checked, Manifest, ParamsHeader, ParamsShape, ReadOptions,
};
use filprove_groth16::{Bls12, G1Affine, ParamsError, Srs, VerifyingKey};
use filprove_testkit::RandomR1cs;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The circuit of the parameter files: 3 public inputs and `constraints` random
/// constraints (with the 4 input constraints, 24 for 20: a domain of 32).
fn circuit(constraints: usize) -> RandomR1cs {
    RandomR1cs::new(11, 3, constraints)
}

fn bellperson_params(seed: u64) -> groth16::Parameters<Bls12> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    groth16::generate_random_parameters::<Bls12, _, _>(circuit(20), &mut rng)
        .expect("bellperson keygen")
}

fn bellperson_bytes(p: &groth16::Parameters<Bls12>) -> Vec<u8> {
    let mut out = Vec::new();
    p.write(&mut out).unwrap();
    out
}

fn opts(validate: bool) -> ReadOptions {
    ReadOptions { validate }
}

#[test]
fn round_trip_and_bellperson_identical() {
    let bp = bellperson_params(1);
    let srs = Srs::from(&bp);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v28-test.params");
    srs.write_file(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert!(
        bytes == bellperson_bytes(&bp),
        "our .params bytes differ from bellperson's"
    );
    assert_eq!(bytes.len() as u64, srs.file_len());
    // No temporary file left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    for validate in [true, false] {
        let back = Srs::read_file(&path, &opts(validate)).unwrap();
        assert_eq!(back, srs);
        assert_eq!(
            Srs::from_bytes(&bytes, "mem", &opts(validate)).unwrap(),
            srs
        );
    }
    // bellperson reads ours.
    let theirs = groth16::Parameters::<Bls12>::read(&bytes[..], true).unwrap();
    assert!(theirs == bp);

    // Verifying key alone.
    let mut vk_bp = Vec::new();
    bp.vk.write(&mut vk_bp).unwrap();
    assert!(srs.vk.to_bytes() == vk_bp);
    let vk_path = dir.path().join("v28-test.vk");
    srs.vk.write_file(&vk_path).unwrap();
    assert!(std::fs::read(&vk_path).unwrap() == vk_bp);
    assert_eq!(VerifyingKey::read_file(&vk_path).unwrap(), srs.vk);
    assert_eq!(VerifyingKey::read_from(&vk_bp).unwrap(), srs.vk);
    let mut with_tail = vk_bp.clone();
    with_tail.extend_from_slice(b"next");
    let mut reader = &with_tail[..];
    assert_eq!(VerifyingKey::read(&mut reader).unwrap(), srs.vk);
    assert_eq!(reader, b"next");
    // The .params file starts with the vk.
    assert_eq!(&bytes[..vk_bp.len()], &vk_bp[..]);
    assert_eq!(VerifyingKey::read_from_params(&path).unwrap(), srs.vk);
}

/// Reading with an observer reports every section byte, once, for progress bars.
#[test]
fn an_observed_read_reports_every_section_byte() {
    let srs = Srs::from(&bellperson_params(3));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.params");
    srs.write_file(&path).unwrap();
    let sections: u64 = ParamsHeader::read(&path)
        .unwrap()
        .sections()
        .iter()
        .map(|s| s.byte_len())
        .sum();
    let seen = std::sync::atomic::AtomicU64::new(0);
    let back = Srs::read_file_observed(&path, &opts(false), &|n| {
        seen.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(back, srs);
    assert!(sections > 0);
    assert_eq!(seen.into_inner(), sections);
}

#[test]
fn header_and_shape() {
    let bp = bellperson_params(2);
    let srs = Srs::from(&bp);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.params");
    srs.write_file(&path).unwrap();
    let h = ParamsHeader::read(&path).unwrap();
    assert_eq!(h.file_len, std::fs::metadata(&path).unwrap().len());
    assert_eq!(h.ic.count as usize, srs.vk.ic.len());
    assert_eq!(h.h.count as usize, srs.h.len());
    assert_eq!(h.l.count as usize, srs.l.len());
    assert_eq!(h.a.count as usize, srs.a.len());
    assert_eq!(h.b_g1.count as usize, srs.b_g1.len());
    assert_eq!(h.b_g2.count as usize, srs.b_g2.len());
    assert_eq!(h.b_g2.end(), h.file_len);
    let shape = h.shape();
    assert_eq!(shape.log_domain_size(), Some(5)); // 20 + 4 constraints -> 32
    assert_eq!(shape.num_inputs, 4);
    shape.check(&shape, &path).unwrap();

    // The shape of a captured assignment of the same circuit matches.
    let pa = filprove_groth16::ProvingAssignment::synthesize(circuit(20)).unwrap();
    assert_eq!(ParamsShape::of_assignment(&pa), shape);
    let other = filprove_groth16::ProvingAssignment::synthesize(circuit(19)).unwrap();
    let err = shape
        .check(&ParamsShape::of_assignment(&other), &path)
        .unwrap_err();
    assert_eq!(err.code(), "params_wrong_circuit");
}

fn is_truncated(e: &ParamsError) -> bool {
    matches!(e, ParamsError::Truncated { .. })
}

#[test]
fn truncated_files_are_rejected_without_panic() {
    let bytes = bellperson_bytes(&bellperson_params(3));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.params");
    let mut cuts: Vec<usize> = (0..1000).collect();
    cuts.extend((1000..bytes.len()).step_by(97));
    cuts.push(bytes.len() - 1);
    for cut in cuts {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let e = Srs::read_file(&path, &opts(false)).unwrap_err();
        assert!(is_truncated(&e), "cut {cut}: {e}");
        assert_eq!(e.code(), "params_truncated");
        assert!(
            is_truncated(&ParamsHeader::read(&path).unwrap_err()),
            "cut {cut}"
        );
        let e = Srs::from_bytes(&bytes[..cut], "mem", &opts(true)).unwrap_err();
        assert!(is_truncated(&e), "cut {cut}: {e}");
    }
    let vk = VerifyingKey::read_from(&bytes[..900]).unwrap_err();
    assert!(is_truncated(&vk));
    assert!(is_truncated(
        &VerifyingKey::read(&bytes[..900]).unwrap_err()
    ));
}

#[test]
fn huge_counts_are_truncation_not_allocation() {
    let bp = bellperson_params(4);
    let bytes = bellperson_bytes(&bp);
    let h = ParamsHeader::from_bytes(&bytes, "mem").unwrap();
    for section in h.sections() {
        let mut b = bytes.clone();
        let at = section.offset as usize - 4;
        b[at..at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        let e = Srs::from_bytes(&b, "mem", &opts(true)).unwrap_err();
        match &e {
            ParamsError::Truncated { what, offset, .. } => {
                assert!(what.starts_with(section.name), "{what}");
                assert_eq!(*offset, section.offset);
            }
            other => panic!("{}: expected truncation, got {other}", section.name),
        }
    }
    // A smaller count leaves trailing bytes.
    let mut b = bytes.clone();
    let at = h.b_g2.offset as usize - 4;
    b[at..at + 4].copy_from_slice(&((h.b_g2.count - 1) as u32).to_be_bytes());
    let e = Srs::from_bytes(&b, "mem", &opts(true)).unwrap_err();
    assert!(
        matches!(e, ParamsError::TrailingBytes { extra: 192, .. }),
        "{e}"
    );
}

#[test]
fn trailing_bytes_are_rejected() {
    let mut bytes = bellperson_bytes(&bellperson_params(5));
    bytes.extend_from_slice(&[0u8; 3]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.params");
    std::fs::write(&path, &bytes).unwrap();
    let e = Srs::read_file(&path, &opts(true)).unwrap_err();
    assert!(
        matches!(e, ParamsError::TrailingBytes { extra: 3, .. }),
        "{e}"
    );
    assert_eq!(e.code(), "params_trailing_bytes");
    assert!(matches!(
        ParamsHeader::read(&path),
        Err(ParamsError::TrailingBytes { .. })
    ));
    let bp = bellperson_params(5);
    let mut vk = Vec::new();
    bp.vk.write(&mut vk).unwrap();
    vk.push(0);
    assert!(matches!(
        VerifyingKey::read_from(&vk),
        Err(ParamsError::TrailingBytes { .. })
    ));
}

#[test]
fn flipped_bytes_give_invalid_points() {
    let bytes = bellperson_bytes(&bellperson_params(6));
    let h = ParamsHeader::from_bytes(&bytes, "mem").unwrap();
    for section in h.sections().into_iter().chain([h.ic]) {
        for index in [0, section.count / 2, section.count - 1] {
            for byte in [5u64, 47, 60, 95] {
                let mut b = bytes.clone();
                let at = (section.offset + index * section.point_bytes + byte) as usize;
                b[at] ^= 0x21;
                match Srs::from_bytes(&b, "mem", &opts(true)) {
                    Err(ParamsError::InvalidPoint {
                        section: s,
                        index: i,
                        ..
                    }) => {
                        assert_eq!(s, section.name);
                        assert_eq!(i as u64, index);
                    }
                    other => panic!("{} {index} {byte}: {other:?}", section.name),
                }
                // Unchecked decoding must not panic (blst still checks the curve equation).
                let _ = Srs::from_bytes(&b, "mem", &opts(false));
            }
        }
    }
    // A corrupt vk point.
    let mut b = bytes.clone();
    b[10] ^= 1;
    assert!(matches!(
        Srs::from_bytes(&b, "mem", &opts(false)),
        Err(ParamsError::InvalidPoint {
            section: "vk",
            index: 0,
            ..
        })
    ));
}

/// The uncompressed encoding of the point at infinity.
fn infinity_g1() -> [u8; 96] {
    let mut b = [0u8; 96];
    b[0] = 0x40;
    b
}

#[test]
fn identity_points_rejected_in_sections_and_ic() {
    let bytes = bellperson_bytes(&bellperson_params(7));
    let h = ParamsHeader::from_bytes(&bytes, "mem").unwrap();
    for section in [h.ic, h.h, h.l, h.a, h.b_g1] {
        let mut b = bytes.clone();
        let at = section.offset as usize + 96;
        b[at..at + 96].copy_from_slice(&infinity_g1());
        for validate in [true, false] {
            match Srs::from_bytes(&b, "mem", &opts(validate)) {
                Err(ParamsError::InvalidPoint {
                    section: s,
                    index: 1,
                    why,
                    ..
                }) => {
                    assert_eq!(s, section.name);
                    assert!(why.contains("infinity"));
                }
                other => panic!("{}: {other:?}", section.name),
            }
        }
    }
}

/// A point on the G1 curve outside the prime-order subgroup.
fn non_subgroup_point() -> [u8; 96] {
    let mut x = blstrs::Fp::ONE;
    loop {
        x += blstrs::Fp::ONE;
        let rhs = x.square() * x + blstrs::Fp::from(4u64);
        if let Some(y) = Option::<blstrs::Fp>::from(rhs.sqrt()) {
            let mut b = [0u8; 96];
            b[..48].copy_from_slice(&x.to_bytes_be());
            b[48..].copy_from_slice(&y.to_bytes_be());
            let p = Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(&b)).unwrap();
            if !bool::from(p.is_torsion_free()) {
                return b;
            }
        }
    }
}

#[test]
fn subgroup_check_only_when_validating() {
    let bytes = bellperson_bytes(&bellperson_params(8));
    let h = ParamsHeader::from_bytes(&bytes, "mem").unwrap();
    let mut b = bytes.clone();
    let at = h.l.offset as usize;
    b[at..at + 96].copy_from_slice(&non_subgroup_point());
    assert!(matches!(
        Srs::from_bytes(&b, "mem", &opts(true)),
        Err(ParamsError::InvalidPoint {
            section: "l",
            index: 0,
            ..
        })
    ));
    // Documented: unchecked reading accepts an on-curve point outside the subgroup.
    assert!(Srs::from_bytes(&b, "mem", &opts(false)).is_ok());
}

#[test]
fn missing_file_is_io_error() {
    let e = Srs::read_file("/nonexistent/x.params", &ReadOptions::default()).unwrap_err();
    assert_eq!(e.code(), "params_io");
    assert!(VerifyingKey::read_file(Path::new("/nonexistent/x.vk")).is_err());
}

#[test]
fn digests() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("abc");
    std::fs::write(&p, b"abc").unwrap();
    // BLAKE2b-512("abc") from RFC 7693, first 16 bytes.
    assert_eq!(file_digest(&p).unwrap(), "ba80a53f981c4d0d6a2797b69f12f6e9");
    std::fs::write(&p, b"").unwrap();
    assert_eq!(file_digest(&p).unwrap(), "786a02f742015903c6c6fd852552d272");
    // Several MiB (crosses the read buffer) against a one-shot hash.
    let data: Vec<u8> = (0..5_000_003u32).map(|i| (i * 7 + i / 255) as u8).collect();
    std::fs::write(&p, &data).unwrap();
    let expected = blake2b_simd::blake2b(&data).to_hex()[..32].to_string();
    assert_eq!(file_digest(&p).unwrap(), expected);
    assert_eq!(file_digest_cached(&p).unwrap(), expected);
}

#[test]
fn manifest_check() {
    let dir = tempfile::tempdir().unwrap();
    let listed = dir.path().join("v28-listed.params");
    std::fs::write(&listed, b"parameter bytes").unwrap();
    let digest = file_digest(&listed).unwrap();
    let json = format!(
        r#"{{
          "v28-listed.params": {{ "cid": "Qm1", "digest": "{digest}", "sector_size": 2048 }},
          "v28-bad.params": {{ "cid": "Qm2", "digest": "00112233445566778899aabbccddeeff", "sector_size": 2048 }}
        }}"#
    );
    let m = Manifest::from_json(&json).unwrap();
    assert_eq!(m.entries.len(), 2);
    assert_eq!(m.get("v28-listed.params").unwrap().sector_size, 2048);
    assert_eq!(m.check(&listed).unwrap(), Checked::Matches);
    assert_eq!(m.check(&listed).unwrap(), Checked::Matches); // cached
    let unlisted = dir.path().join("v28-local.params");
    std::fs::write(&unlisted, b"x").unwrap();
    assert_eq!(m.check(&unlisted).unwrap(), Checked::NotListed);
    let bad = dir.path().join("v28-bad.params");
    std::fs::write(&bad, b"something else").unwrap();
    let e = m.check(&bad).unwrap_err();
    assert_eq!(e.code(), "params_digest_mismatch");
    assert!(matches!(e, ParamsError::DigestMismatch { .. }));
    // A changed file is hashed again (different length => different stamp).
    std::fs::write(&listed, b"parameter bytes, changed").unwrap();
    assert!(matches!(
        m.check(&listed),
        Err(ParamsError::DigestMismatch { .. })
    ));
    assert_eq!(
        Manifest::from_json("{ not json").unwrap_err().code(),
        "params_manifest"
    );
}

#[test]
fn atomic_write_replaces_and_leaves_no_temp_on_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.vk");
    std::fs::write(&path, b"old").unwrap();
    let e = filprove_groth16::params::write_atomic(&path, |w| {
        use std::io::Write;
        w.write_all(b"partial")?;
        Err(std::io::Error::other("simulated crash"))
    })
    .unwrap_err();
    assert_eq!(e.code(), "params_io");
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    let vk = Srs::from(&bellperson_params(9)).vk;
    vk.write_file(&path).unwrap();
    assert_eq!(VerifyingKey::read_file(&path).unwrap(), vk);
    assert!(!filprove_groth16::params::temp_path(&path).exists());
}

/// A file truncated while it is read gives `params_truncated` naming the file, never
/// SIGBUS: the decoding threads read their pieces with positioned reads (a memory-mapped
/// file cut under the reader kills the process). One decoding thread, so the cut lands
/// between the first piece and the rest, deterministically.
#[test]
fn a_file_truncated_while_read_is_an_error_naming_it() {
    let srs = Srs::from(
        &groth16::generate_random_parameters::<Bls12, _, _>(
            circuit(600),
            &mut ChaCha8Rng::seed_from_u64(5),
        )
        .unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shrinking.params");
    srs.write_file(&path).unwrap();
    let header = ParamsHeader::read(&path).unwrap();
    // Several pages past the verifying key, so the lost part is whole pages.
    assert!(header.file_len > header.ic.end() + 4 * 4096);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let cut = std::sync::Once::new();
    let e = pool
        .install(|| {
            Srs::read_file_observed(&path, &opts(false), &|_| {
                cut.call_once(|| {
                    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                    f.set_len(header.ic.end()).unwrap();
                });
            })
        })
        .unwrap_err();
    assert!(is_truncated(&e), "{e}");
    assert_eq!(e.code(), "params_truncated");
    assert!(e.to_string().contains("shrinking.params"), "{e}");
    assert!(cut.is_completed());
}
