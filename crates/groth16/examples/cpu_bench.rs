//! Times the CPU backend's NTT and MSMs on random data and prints a table.
//!
//! `cargo run --release -p filprove-groth16 --example cpu_bench [-- --quick]`, or
//! `... -- --prove [BYTES]` for whole proofs of a SHA-256 circuit against bellperson.
//!
//! - NTT: `fft` (natural order, includes the bit-reversal permutation) and the H
//!   polynomial (`compute_h`: 7 transforms of the domain size) at 2^20 and 2^22;
//! - G1 MSM at 2^16 and 2^20: full random scalars (`msm`, the H query), a Filecoin-like
//!   mix (51 % zero, 47 % one, 2 % full; `msm_split`), and blstrs' `multi_exp` (blst's
//!   Pippenger on its own thread pool) on the full scalars for comparison; both MSM
//!   engines ([`MsmEngine`]) for each.

use std::time::{Duration, Instant};

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::{multipack, sha256::sha256};
use bellperson::groth16;
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use ff::Field;
use filprove_groth16::cpu::msm::{msm, msm_split_with, msm_with, MsmEngine};
use filprove_groth16::cpu::prove_one_timed;
use filprove_groth16::cpu::{compute_h, Domain};
use filprove_groth16::{keygen, Bls12, Randomness};
use filprove_groth16::{Fr, G1Affine, G1Projective, ProvingAssignment};
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

fn time<R>(f: impl FnOnce() -> R) -> (R, Duration) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed())
}

fn points(n: usize) -> Vec<G1Affine> {
    // A random walk of additions per chunk: cheap, and every point is distinct.
    let chunks = 64.min(n);
    let per = n.div_ceil(chunks);
    let proj: Vec<G1Projective> = (0..chunks)
        .into_par_iter()
        .flat_map_iter(|c| {
            let mut rng = ChaCha8Rng::seed_from_u64(c as u64);
            let step = G1Projective::random(&mut rng);
            let mut p = G1Projective::random(&mut rng);
            (0..per).map(move |_| {
                p += step;
                p
            })
        })
        .collect();
    let mut out = vec![G1Affine::default(); n];
    G1Projective::batch_normalize(&proj[..n], &mut out);
    out
}

fn scalars(rng: &mut ChaCha8Rng, n: usize, mixed: bool) -> Vec<Fr> {
    (0..n)
        .map(|_| {
            if !mixed {
                return Fr::random(&mut *rng);
            }
            match rng.gen_range(0..1000) {
                0..=509 => Fr::ZERO,
                510..=979 => Fr::ONE,
                _ => Fr::random(&mut *rng),
            }
        })
        .collect()
}

/// SHA-256 of `bytes` (bellperson's gadgets), digest packed into public inputs.
#[derive(Clone)]
struct Sha(Vec<u8>);

impl Circuit<Fr> for Sha {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let bits = multipack::bytes_to_bits(&self.0);
        let bits = bits
            .iter()
            .enumerate()
            .map(|(i, b)| {
                AllocatedBit::alloc(cs.namespace(|| format!("bit {i}")), Some(*b))
                    .map(Boolean::from)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let digest = sha256(cs.namespace(|| "sha256"), &bits)?;
        multipack::pack_into_inputs(cs.namespace(|| "pack"), &digest)
    }
}

/// Proves a SHA-256 circuit with our CPU backend (both engines) and bellperson.
fn prove_bench(bytes: usize) {
    let circuit = Sha(vec![0x5a; bytes]);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (srs, dt) = time(|| keygen::generate_parameters(circuit.clone(), &mut rng).unwrap());
    let (pa, dt_syn) = time(|| ProvingAssignment::synthesize(circuit.clone()).unwrap());
    let size = format!("2^{}", pa.log_domain_size());
    row(
        "keygen (filprove keygen)",
        &size,
        dt,
        &format!(
            "sha256 of {bytes} bytes, {} constraints",
            pa.num_constraints()
        ),
    );
    row("synthesize (ProvingAssignment)", &size, dt_syn, "");
    let rand = Randomness::random(&mut rng);
    let mut proofs = Vec::new();
    for engine in [MsmEngine::Blst, MsmEngine::Native] {
        let (res, dt) = time(|| prove_one_timed(engine, &srs, &pa, rand).unwrap());
        let (proof, t) = res;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        row(
            "cpu prove",
            &size,
            dt,
            &format!(
                "{engine:?}: fft {:.0}, h {:.0}, l {:.0}, a {:.0}, b_g1 {:.0}, b_g2 {:.0} ms (overlapping)",
                ms(t.fft), ms(t.h_msm), ms(t.l_msm), ms(t.a_msm), ms(t.b_g1_msm), ms(t.b_g2_msm)
            ),
        );
        proofs.push(proof);
    }
    let params: groth16::Parameters<Bls12> = (&srs).into();
    let (theirs, dt) =
        time(|| groth16::create_proof::<Bls12, _, _>(circuit, &params, rand.r, rand.s).unwrap());
    row(
        "bellperson create_proof",
        &size,
        dt,
        "includes its own synthesis",
    );
    let mut bytes_theirs = Vec::new();
    theirs.write(&mut bytes_theirs).unwrap();
    assert_eq!(proofs[0].to_bytes().to_vec(), bytes_theirs);
    assert_eq!(proofs[0], proofs[1]);
}

fn row(what: &str, size: &str, d: Duration, extra: &str) {
    println!(
        "| {what:<32} | {size:>5} | {:>10.1} | {extra}",
        d.as_secs_f64() * 1e3
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let skip_ntt = args.iter().any(|a| a == "--msm-only");
    let skip_msm = args.iter().any(|a| a == "--ntt-only");
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    println!("threads: {}", rayon::current_num_threads());
    // Calibration: one core's Fr multiplication rate.
    let (x, dt) = time(|| {
        let mut x = Fr::random(&mut rng);
        let y = Fr::random(&mut rng);
        for _ in 0..10_000_000 {
            x *= y;
        }
        x
    });
    println!(
        "Fr mul: {:.1} ns (one core) {}",
        dt.as_secs_f64() * 1e9 / 1e7,
        u8::from(x == Fr::ZERO)
    );
    println!(
        "| {:<32} | {:>5} | {:>10} | notes",
        "operation", "size", "ms"
    );
    println!(
        "|{}|{}|{}|---",
        "-".repeat(34),
        "-".repeat(7),
        "-".repeat(12)
    );

    if let Some(i) = args.iter().position(|a| a == "--prove") {
        let bytes = args.get(i + 1).and_then(|b| b.parse().ok()).unwrap_or(128);
        prove_bench(bytes);
        return;
    }
    let ntt_logs: &[u32] = if args.iter().any(|a| a == "--ntt20") {
        &[20]
    } else if skip_ntt {
        &[]
    } else if quick {
        &[16]
    } else {
        &[20, 22]
    };
    for &log_n in ntt_logs {
        let n = 1usize << log_n;
        let (d, dt) = time(|| Domain::new(log_n).unwrap());
        row("domain (twiddles)", &format!("2^{log_n}"), dt, "");
        let mut v = scalars(&mut rng, n, false);
        let (_, dt) = time(|| d.fft(&mut v).unwrap());
        row("fft (natural order)", &format!("2^{log_n}"), dt, "");
        let (_, dt) = time(|| d.ifft_natural_to_bitrev_unscaled(&mut v).unwrap());
        row(
            "ifft natural->bitrev (DIF)",
            &format!("2^{log_n}"),
            dt,
            "no permutation",
        );
        let (_, dt) = time(|| filprove_groth16::cpu::ntt::bit_reverse(&mut v));
        row("bit reversal (serial)", &format!("2^{log_n}"), dt, "");
        // compute_h forms c = a * b itself.
        let pa = ProvingAssignment {
            a: scalars(&mut rng, n - 1, true),
            b: scalars(&mut rng, n - 1, true),
            ..Default::default()
        };
        let _ = Domain::cached(log_n);
        let (_, dt) = time(|| compute_h(&pa).unwrap());
        row(
            "compute_h (7 transforms)",
            &format!("2^{log_n}"),
            dt,
            "cached domain",
        );
    }

    let msm_logs: &[u32] = if skip_msm {
        &[]
    } else if quick {
        &[12]
    } else {
        &[16, 20]
    };
    for &log_n in msm_logs {
        let n = 1usize << log_n;
        let bases = points(n);
        let full = scalars(&mut rng, n, false);
        let mixed = scalars(&mut rng, n, true);
        let others = mixed
            .iter()
            .filter(|s| **s != Fr::ZERO && **s != Fr::ONE)
            .count();
        let size = format!("2^{log_n}");
        let (r1, dt) = time(|| msm_with(MsmEngine::Native, &bases, &full).unwrap());
        row("G1 msm, full scalars", &size, dt, "native engine");
        let (r0, dt) = time(|| msm_with(MsmEngine::Blst, &bases, &full).unwrap());
        row("G1 msm, full scalars", &size, dt, "blst engine (default)");
        let proj: Vec<G1Projective> = bases.iter().map(|b| b.into()).collect();
        let (r2, dt) = time(|| G1Projective::multi_exp(&proj, &full));
        row("G1 msm, full scalars", &size, dt, "blstrs multi_exp alone");
        assert_eq!(r1.to_affine(), r2.to_affine());
        assert_eq!(r0, r1);
        let pct = 100.0 * others as f64 / n as f64;
        let (r3, dt) = time(|| msm_split_with(MsmEngine::Blst, &bases, &mixed, None).unwrap());
        row(
            "G1 split msm, 0/1 mix",
            &size,
            dt,
            &format!("blst engine, {pct:.1} % full"),
        );
        let (r5, dt) = time(|| msm_split_with(MsmEngine::Native, &bases, &mixed, None).unwrap());
        row(
            "G1 split msm, 0/1 mix",
            &size,
            dt,
            &format!("native engine, {pct:.1} % full"),
        );
        let (r4, dt) = time(|| msm(&bases, &mixed).unwrap());
        row("G1 msm (no split), 0/1 mix", &size, dt, "blst engine");
        assert_eq!(r3, r5);
        assert_eq!(r3, r4);
    }
}
