//! The FP64-pipe Montgomery product (kernels/ff/fp64_product.cuh) checked on the CPU: the
//! header compiled by the host's C++ compiler with its device intrinsics emulated exactly
//! (tests/fp64/emulate.cpp), its Fr and Fq products against blstrs on random and edge
//! values. The float splitting and the partial last reduction round (Fr: 256 = 5 x 48 +
//! 16 bits) are the parts a wrong constant would break.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use blstrs::{Fp, Scalar as Fr};
use ff::Field;
use filprove_cuda::testing::field::bytes_of;
use rand::SeedableRng;

/// Builds the emulation driver once per test binary run.
fn driver() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let exe = dir.join(format!("fp64-emulate-{}", std::process::id()));
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let out = Command::new(&cxx)
        .args(["-O2", "-std=c++17", "-frounding-math", "-I"])
        .arg(manifest.join("kernels"))
        .arg("-o")
        .arg(&exe)
        .arg(manifest.join("tests/fp64/emulate.cpp"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C++ compiler {cxx}: {e}"));
    assert!(
        out.status.success(),
        "{cxx} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Words of a Montgomery-form element as hex, little-endian limbs.
fn hex_words(bytes: &[u8]) -> String {
    bytes
        .chunks_exact(4)
        .map(|w| format!("{:08x}", u32::from_le_bytes(w.try_into().unwrap())))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The driver's products for `field` ("fr" / "fq") of the pairs given as Montgomery bytes.
fn products(exe: &PathBuf, field: &str, pairs: &[(Vec<u8>, Vec<u8>)]) -> Vec<String> {
    let mut input = format!("{field}\n");
    for (a, b) in pairs {
        input += &format!("{} {}\n", hex_words(a), hex_words(b));
    }
    let mut child = Command::new(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the emulation driver");
    // Written from another thread: the driver answers line by line, and a full output
    // pipe would stop it reading.
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().expect("write the driver's input");
    assert!(out.status.success(), "driver exited with {}", out.status);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn check<T: Field + Copy>(exe: &PathBuf, field: &str, bytes: impl Fn(&T) -> Vec<u8>, seed: u64) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let edge = [T::ZERO, T::ONE, -T::ONE, T::ONE.double(), -T::ONE.double()];
    let mut pairs: Vec<(T, T)> = (0..20_000)
        .map(|_| (T::random(&mut rng), T::random(&mut rng)))
        .collect();
    for &x in &edge {
        for &y in &edge {
            pairs.push((x, y));
        }
        pairs.push((x, T::random(&mut rng)));
    }
    let input: Vec<_> = pairs.iter().map(|(a, b)| (bytes(a), bytes(b))).collect();
    let got = products(exe, field, &input);
    assert_eq!(got.len(), pairs.len(), "{field}: one product per pair");
    for (i, ((a, b), g)) in pairs.iter().zip(&got).enumerate() {
        let want = hex_words(&bytes(&(*a * b)));
        assert_eq!(g, &want, "{field} product {i}");
    }
}

#[test]
fn fp64_products_match_blstrs() {
    let exe = driver();
    check::<Fr>(
        &exe,
        "fr",
        |x| bytes_of(std::slice::from_ref(x)).to_vec(),
        1,
    );
    check::<Fp>(
        &exe,
        "fq",
        |x| bytes_of(std::slice::from_ref(x)).to_vec(),
        2,
    );
    let _ = std::fs::remove_file(&exe);
}
