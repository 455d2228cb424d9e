//! What filecoin-proofs' verification of one request costs on the CPU, the verifying key's
//! one-time preparation apart from each verification after it:
//!
//!     FIL_PROOFS_PARAMETER_CACHE=DIR cargo run --release -p filprove-filecoin \
//!         --example verifier_bench -- REQUEST.json DIR
//!
//! With the circuit's `.vk` in DIR it is timed as is. Without one it writes a stand-in key
//! of the circuit's size (one point per public input of the request, distinct multiples of
//! the generator: no proof verifies against it, and every step costs what it costs with the
//! real key), so a 32 GiB WindowPoSt key (about 26 k points) can be timed without its
//! parameters. The proof verified is three generator points (it does not verify: only the
//! time is measured). Prints the request's intake (parse and validation), its public
//! inputs, the key's preparation (`CircuitSpec::prepare_verifier`) and three
//! verifications (`ProofRequest::verify`).

use std::path::PathBuf;
use std::time::Instant;

use filprove_filecoin::ProofRequest;
use filprove_groth16::{Fr, G1Affine, G1Projective, G2Affine, Proof, VerifyingKey};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [request, dir] = args.as_slice() else {
        eprintln!("usage: verifier_bench REQUEST.json PARAMETER_DIR (exported as FIL_PROOFS_PARAMETER_CACHE)");
        std::process::exit(2);
    };
    let dir = PathBuf::from(dir);
    if filprove_filecoin::parameter_cache_dir() != dir {
        eprintln!("FIL_PROOFS_PARAMETER_CACHE must be {}", dir.display());
        std::process::exit(2);
    }
    let t = Instant::now();
    let bytes = std::fs::read(request).expect("the request file");
    let req = ProofRequest::from_request_json(&bytes).expect("a valid request");
    println!(
        "intake (parse, validate): {:.3} s",
        t.elapsed().as_secs_f64()
    );
    let spec = req.circuit();

    let t = Instant::now();
    let inputs = req.public_inputs().expect("public inputs");
    let n = inputs.iter().map(Vec::len).max().unwrap_or(0);
    println!(
        "public inputs: {n} per partition in {:.3} s",
        t.elapsed().as_secs_f64()
    );

    let vk_path = spec.vk_path(&dir);
    if !vk_path.exists() {
        let step = G1Projective::generator() * Fr::from(7u64);
        let ic: Vec<G1Projective> = std::iter::successors(Some(step), |p| Some(p + step))
            .take(n + 1)
            .collect();
        let mut affine = vec![G1Affine::identity(); ic.len()];
        G1Projective::batch_normalize(&ic, &mut affine);
        let (g1, g2) = (G1Affine::generator(), G2Affine::generator());
        let vk = VerifyingKey {
            alpha_g1: g1,
            beta_g1: g1,
            beta_g2: g2,
            gamma_g2: g2,
            delta_g1: g1,
            delta_g2: g2,
            ic: affine,
        };
        vk.write_file(&vk_path).expect("writing the stand-in key");
        println!(
            "stand-in key written: {} ({} points)",
            vk_path.display(),
            n + 1
        );
    }

    let t = Instant::now();
    let prepared = spec.prepare_verifier().expect("the key prepared");
    println!(
        "key preparation ({}): {:.3} s",
        if prepared {
            "prepared"
        } else {
            "nothing to prepare"
        },
        t.elapsed().as_secs_f64()
    );

    let proof = Proof {
        a: G1Affine::generator(),
        b: G2Affine::generator(),
        c: G1Affine::generator(),
    };
    let proof_bytes = Proof::concat(&vec![proof; req.num_partitions()]);
    for i in 0..3 {
        let t = Instant::now();
        let verified = req.verify(&proof_bytes).expect("a well-formed proof");
        println!(
            "verification {i}: {:.3} s (verified: {verified})",
            t.elapsed().as_secs_f64()
        );
    }
}
