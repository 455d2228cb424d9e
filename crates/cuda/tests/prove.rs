//! The CUDA backend against the CPU backend: every option combination passes the test
//! kit's conformance suite (byte-identical proofs for the same r, s, verification, typed
//! shape errors, degenerate circuits, staged equals unstaged); transfers are reported
//! consistently with the switches.

mod common;

use filprove_cuda::CudaBackend;
use filprove_cuda::HostPath;
use filprove_cuda::{CudaOptions, RegisterAt};
use filprove_groth16::cpu::CpuBackend;
use filprove_groth16::keygen::generate_parameters;
use filprove_groth16::{Backend, Fr, ProofInput, ProveError, ProvingAssignment, Randomness, Srs};
use filprove_testkit::{check_backend, Cases, Mix};

/// The phases of a kernel region in a proof's report, in order (the engine's timeline
/// line reads them by name).
const REGION_PHASES: [&str; 11] = [
    "region_setup",
    "stage_wait",
    "ntt_h",
    "msm_h",
    "msm_l",
    "msm_a",
    "msm_b_g1",
    "msm_b_g2",
    "result_wait",
    "region_tail",
    "region",
];

/// Every combination of the transfer switches: pre-staging (through each host path;
/// without it, pageable uploads only), resident or streamed parameters, a host sync per
/// MSM batch or not, batches as large as the plan allows or of 100,000 points.
fn switch_combinations() -> Vec<CudaOptions> {
    let mut out = Vec::new();
    for prestage in [true, false] {
        for host_path in [HostPath::Register, HostPath::Bounce, HostPath::Pageable] {
            if !prestage && host_path != HostPath::Pageable {
                continue;
            }
            for resident_srs in [true, false] {
                for sync_per_batch in [false, true] {
                    for max_batch in [0u64, 100_000] {
                        out.push(CudaOptions {
                            prestage,
                            host_path,
                            resident_srs,
                            sync_per_batch,
                            max_batch,
                            ..CudaOptions::default()
                        });
                    }
                }
            }
        }
    }
    out
}

/// The switch combinations, those that register host memory with each registration
/// timing, and the defaults with step timings.
fn option_combinations() -> Vec<CudaOptions> {
    let mut out = Vec::new();
    for opts in switch_combinations() {
        if opts.host_path == HostPath::Register {
            for register_at in [RegisterAt::Staging, RegisterAt::Region] {
                out.push(CudaOptions {
                    register_at,
                    ..opts.clone()
                });
            }
        }
        out.push(opts);
    }
    out.push(CudaOptions {
        step_timings: true,
        ..CudaOptions::default()
    });
    out
}

#[test]
fn every_option_combination_passes_the_conformance_suite() {
    let Some(_) = common::gpu("every_option_combination_passes_the_conformance_suite") else {
        return;
    };
    use rand::Rng;
    let cases = Cases::new(common::rng("conformance").gen()).unwrap();
    let witnesses: usize = cases.cases.iter().map(|c| c.assignments.len()).sum();
    let first = cases.cases[0].assignments.len();
    let combinations = option_combinations();
    assert_eq!(combinations.len(), 32 + 2 * 8 + 1);
    for opts in combinations {
        let what = opts.describe();
        let backend = CudaBackend::with_options(0, opts.clone()).unwrap();
        let summary = check_backend(&backend, &cases).unwrap_or_else(|f| panic!("{what}: {f}"));
        assert_eq!(summary.proofs, 3 * (witnesses + first), "{what}");
        assert_eq!(summary.shape_errors, 7, "{what}");
        if opts.prestage {
            assert!(summary.staged > 0, "{what}: nothing staged");
        }
    }
}

#[test]
fn unavailable_reports_a_reason() {
    // With a GPU this opens; without one it must be a typed error, never a panic.
    match CudaBackend::new(0) {
        Ok(b) => assert!(b.name().starts_with("cuda:0 ")),
        Err(e) => {
            assert!(matches!(e, ProveError::Unavailable { .. }), "{e}");
            assert!(
                std::env::var("FILPROVE_REQUIRE_GPU").as_deref() != Ok("1"),
                "GPU required: {e}"
            );
        }
    }
}

/// Every combination of the transfer switches (pre-staging, host path, resident
/// parameters, per-batch syncs, small MSM batches, a budget that forces streaming) proves
/// the same bytes as the CPU, staged the way the engine's workers stage, and reports its
/// transfers consistently with the switches.
#[test]
fn every_switch_combination_gives_the_cpu_proof() {
    use filprove_groth16::Direction;
    let Some(_) = common::gpu("every_switch_combination_gives_the_cpu_proof") else {
        return;
    };
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let mut rng = common::rng("switches");
    // Large enough (~2^19 rows) that a, b and aux are registered, not just copied.
    let mk = |rng: &mut rand_chacha::ChaCha8Rng| Mix::random(rng, 300_000, 100_000);
    let srs = generate_parameters(mk(&mut rng), &mut rng).unwrap();
    let asg = ProvingAssignment::synthesize(mk(&mut rng)).unwrap();
    let input = ProofInput {
        assignment: &asg,
        randomness: Randomness::random(&mut rng),
    };
    let want = cpu.prove(&srs, &[input]).unwrap()[0].to_bytes();
    let mut n = 0;
    for opts in switch_combinations() {
        let CudaOptions {
            prestage,
            host_path,
            resident_srs,
            sync_per_batch,
            max_batch,
            ..
        } = opts;
        let what = opts.describe();
        let backend = CudaBackend::with_options(0, opts).unwrap();
        for round in 0..2 {
            let staged = backend.stage(&srs, &asg).unwrap();
            let (proof, report) = backend.prove_staged(&srs, input, staged).unwrap();
            assert_eq!(proof.to_bytes(), want, "{what}, round {round}");
            let h2d = report.bytes(Direction::HostToDevice, None);
            assert!(h2d >= (asg.a.len() * 3 * 32) as u64, "{what}: {h2d}");
            let pageable = report.bytes(Direction::HostToDevice, Some(false));
            if host_path != HostPath::Pageable && prestage {
                // Only the public inputs go pageable, inside the region;
                // everything staged (bitmaps included) is page-locked.
                assert!(pageable < h2d / 4, "{what}: {report:?}");
                let staged_pageable = report
                    .transfers
                    .iter()
                    .filter(|t| t.phase == "stage" && !t.pinned)
                    .count();
                assert_eq!(staged_pageable, 0, "{what}: {report:?}");
            }
            if sync_per_batch && max_batch > 0 {
                assert!(report.host_syncs > 5, "{what}: {}", report.host_syncs);
            } else if resident_srs && round == 1 && !sync_per_batch {
                assert_eq!(report.host_syncs, 1, "{what}");
            }
            if !resident_srs {
                assert!(
                    report.transfers.iter().any(|t| t.phase == "msm_h"),
                    "{what}: streamed parameters not counted"
                );
            }
            // The region's phases, once each, in the order the region runs them.
            let region: Vec<&str> = report
                .phases
                .iter()
                .map(|(p, _)| *p)
                .filter(|p| REGION_PHASES.contains(p))
                .collect();
            assert_eq!(region, REGION_PHASES, "{what}");
        }
        n += 1;
    }
    assert_eq!(n, 32);
    // A budget too small for resident parameters streams them and still agrees.
    let m = 1u64 << asg.log_domain_size();
    let small = CudaOptions {
        vram_budget: Some(3 * m * 32 * 2 + (256 << 20)),
        ..CudaOptions::default()
    };
    let backend = CudaBackend::with_options(0, small).unwrap();
    let staged = backend.stage(&srs, &asg).unwrap();
    let (proof, report) = backend.prove_staged(&srs, input, staged).unwrap();
    assert_eq!(proof.to_bytes(), want);
    assert!(!report.fallbacks.is_empty(), "{report:?}");
}

/// A small parameter set, its verifying key alone, a satisfying assignment with fixed r, s
/// and the CPU's proof bytes for it (the reference the GPU must match).
struct SmallSet {
    cpu: CpuBackend,
    srs: Srs,
    vk_only: Srs,
    asg: ProvingAssignment,
    randomness: Randomness,
    want: [u8; filprove_groth16::Proof::SIZE],
}

impl SmallSet {
    fn new(seed_name: &str) -> Self {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let mut rng = common::rng(seed_name);
        let mk = |rng: &mut rand_chacha::ChaCha8Rng| Mix::random(rng, 20_000, 5_000);
        let srs = generate_parameters(mk(&mut rng), &mut rng).unwrap();
        let vk_only = srs.verifying_key_only();
        let asg = ProvingAssignment::synthesize(mk(&mut rng)).unwrap();
        let randomness = Randomness::random(&mut rng);
        let input = ProofInput {
            assignment: &asg,
            randomness,
        };
        let want = cpu.prove(&srs, &[input]).unwrap()[0].to_bytes();
        Self {
            cpu,
            srs,
            vk_only,
            asg,
            randomness,
            want,
        }
    }
}

/// A held parameter set proves from the verifying key alone (the engine's host copy once
/// released) with the bytes of the full set; not held, or evicted, the verifying key alone
/// is a typed error, never an upload of empty sections.
#[test]
fn held_parameters_prove_without_their_host_sections() {
    let Some(_) = common::gpu("held_parameters_prove_without_their_host_sections") else {
        return;
    };
    let SmallSet {
        cpu,
        srs,
        vk_only,
        asg,
        randomness,
        want,
    } = SmallSet::new("held");
    let input = ProofInput {
        assignment: &asg,
        randomness,
    };
    let backend = CudaBackend::new(0).unwrap();
    let off_host =
        |r: Result<_, ProveError>| matches!(r, Err(ProveError::ParametersOffHost { .. }));
    // Not resident yet: nothing to hold, and the verifying key alone cannot prove.
    assert!(!backend.hold_parameters(&srs, &vk_only));
    assert!(off_host(backend.prove(&vk_only, &[input]).map(|_| ())));
    // The CPU needs the sections: a typed error.
    assert!(cpu.prove(&vk_only, &[input]).is_err());
    // Resident after a proof; held, the verifying key alone gives the same bytes, staged too.
    assert_eq!(backend.prove(&srs, &[input]).unwrap()[0].to_bytes(), want);
    assert!(backend.hold_parameters(&srs, &vk_only));
    assert_eq!(
        backend.prove(&vk_only, &[input]).unwrap()[0].to_bytes(),
        want
    );
    let staged = backend.stage(&vk_only, &asg).unwrap();
    let (proof, _) = backend.prove_staged(&vk_only, input, staged).unwrap();
    assert_eq!(proof.to_bytes(), want);
    // Evicted through the verifying key alone: gone for both.
    backend.evict(&vk_only);
    assert!(off_host(backend.prove(&vk_only, &[input]).map(|_| ())));
    assert_eq!(backend.prove(&srs, &[input]).unwrap()[0].to_bytes(), want);
}

/// Parameters loaded before any proof (a preload) are resident: the device holds them, and
/// the verifying key alone then proves with the full set's bytes, the first proof
/// included (nothing is uploaded in its region). Loading again is a no-op.
#[test]
fn parameters_loaded_before_any_proof_are_held_and_prove() {
    let Some(_) = common::gpu("parameters_loaded_before_any_proof_are_held_and_prove") else {
        return;
    };
    let SmallSet {
        cpu: _,
        srs,
        vk_only,
        asg,
        randomness,
        want,
    } = SmallSet::new("loaded");
    let input = ProofInput {
        assignment: &asg,
        randomness,
    };
    let backend = CudaBackend::new(0).unwrap();
    assert!(
        !backend.hold_parameters(&srs, &vk_only),
        "nothing loaded yet"
    );
    assert!(backend.load_parameters(&srs).unwrap());
    assert!(
        backend.load_parameters(&srs).unwrap(),
        "loaded again: still resident"
    );
    assert!(backend.hold_parameters(&srs, &vk_only));
    let staged = backend.stage(&vk_only, &asg).unwrap();
    let (proof, report) = backend.prove_staged(&vk_only, input, staged).unwrap();
    assert_eq!(proof.to_bytes(), want);
    assert!(
        report.phase("srs_upload").is_none(),
        "the first proof uploaded the parameters again: {report:?}"
    );
    // The verifying key alone cannot be loaded: its sections are not on the host.
    backend.evict(&srs);
    assert!(matches!(
        backend.load_parameters(&vk_only),
        Err(ProveError::ParametersOffHost { .. })
    ));
}

/// Registration in the region: a fresh assignment is staged through the bounce buffers
/// and its vectors are registered inside its own kernel regions (behind the queued H MSM,
/// until the kernels are done); once all is page-locked, it registers nothing. The default
/// (auto) does the same within a time budget per region; `staging` registers at staging.
/// Proofs verify either way.
#[test]
fn fresh_vectors_are_registered_inside_their_region() {
    let Some(_) = common::gpu("fresh_vectors_are_registered_inside_their_region") else {
        return;
    };
    let in_region = CudaOptions {
        register_at: RegisterAt::Region,
        ..Default::default()
    };
    let mut rng = common::rng("register_at");
    // Large enough (~2^19 rows) that the vectors are registered, not just copied.
    let mk = |rng: &mut rand_chacha::ChaCha8Rng| Mix::random(rng, 300_000, 100_000);
    let srs = generate_parameters(mk(&mut rng), &mut rng).unwrap();
    let prove =
        |backend: &CudaBackend, asg: &ProvingAssignment, rng: &mut rand_chacha::ChaCha8Rng| {
            let input = ProofInput {
                assignment: asg,
                randomness: Randomness::random(rng),
            };
            let staged = backend.stage(&srs, asg).unwrap();
            let (proof, report) = backend.prove_staged(&srs, input, staged).unwrap();
            backend.release_finished();
            assert!(srs.vk.verify(&proof, &asg.input_assignment[1..]));
            report
        };
    let backend = CudaBackend::with_options(0, in_region).unwrap();
    let first = ProvingAssignment::synthesize(mk(&mut rng)).unwrap();
    let report = prove(&backend, &first, &mut rng);
    assert!(
        !first.pins.is_empty(),
        "the region registered while its H MSM ran"
    );
    assert!(
        report.phase("region_register").is_some() && report.phase("stage_register").is_none(),
        "{report:?}"
    );
    // Each region registers while its own kernels run and stops when they are done:
    // a few rounds of the same assignment page-lock all of it, then nothing is left.
    let all_pinned = |asg: &ProvingAssignment| {
        [&asg.a, &asg.b, &asg.aux_assignment]
            .iter()
            .all(|v| asg.pins.covers(v.as_ptr().cast(), v.capacity() * 32))
    };
    let mut rounds = 1;
    while !all_pinned(&first) {
        assert!(rounds < 8, "still not page-locked after {rounds} regions");
        let report = prove(&backend, &first, &mut rng);
        assert!(report.phase("stage_register").is_none(), "{report:?}");
        rounds += 1;
    }
    let report = prove(&backend, &first, &mut rng);
    assert!(
        report.phase("region_register").is_none() && report.phase("stage_register").is_none(),
        "{report:?}"
    );
    // By default (auto) too, but within a time budget per region; staging at staging.
    let auto = CudaBackend::new(0).unwrap();
    let second = ProvingAssignment::synthesize(mk(&mut rng)).unwrap();
    let report = prove(&auto, &second, &mut rng);
    assert!(
        report.phase("stage_register").is_none() && report.phase("region_register").is_some(),
        "{report:?}"
    );
    assert!(report.phase("stage_copy_wait").is_some(), "{report:?}");
    let at_staging = CudaOptions {
        register_at: RegisterAt::Staging,
        ..Default::default()
    };
    let staging = CudaBackend::with_options(0, at_staging).unwrap();
    let third = ProvingAssignment::synthesize(mk(&mut rng)).unwrap();
    let report = prove(&staging, &third, &mut rng);
    assert!(
        report.phase("stage_register").is_some() && report.phase("region_register").is_none(),
        "{report:?}"
    );
    assert!(all_pinned(&third));
}

/// Staging page-locks a vector piece by piece while it is allowed to, sends the rest
/// through the bounce buffers, and a later staging picks up where the pins end: the device
/// buffers hold the host bytes (zero padded) every time, and the transfers are counted
/// page-locked.
#[test]
fn staging_registers_piece_by_piece_and_bounces_the_rest() {
    use filprove_cuda::testing::field::bytes_of;
    use filprove_cuda::testing::pinned::{Bounce, REGISTER_PIECE};
    use filprove_cuda::testing::stage;
    use filprove_groth16::density::DensityBits;
    use filprove_groth16::{Direction, ProveReport};
    use rand::Rng;
    let Some(gpu) = common::gpu("staging_registers_piece_by_piece_and_bounces_the_rest") else {
        return;
    };
    let mut rng = common::rng("piecewise");
    // Two whole pieces and a short one per vector: a domain of 2^23.
    let per_piece = REGISTER_PIECE / 32;
    let n = 2 * per_piece + 1000 + rng.gen_range(0..1000);
    let lg = 23;
    assert!(n <= 1 << lg);
    let mut vals = |n: usize| -> Vec<Fr> { (0..n).map(|_| Fr::from(rng.gen::<u64>())).collect() };
    let mut asg = ProvingAssignment {
        a: vals(n),
        b: vals(n),
        input_assignment: vals(1),
        aux_assignment: vals(n),
        ..Default::default()
    };
    let mut bits = DensityBits::with_capacity(n);
    for _ in 0..n {
        bits.push_set();
    }
    asg.a_aux_density = bits.clone();
    asg.b_aux_density = bits;
    let prefix = |v: &Vec<Fr>| asg.pins.pinned_prefix(v.as_ptr().cast(), v.capacity() * 32);
    let mut bounce = Bounce::new(&gpu, 32 << 20).unwrap();
    let check = |part: &stage::StagedPartition, report: &ProveReport, what: &str| {
        gpu.copy_stream().synchronize().unwrap();
        let ab = part.ab.as_ref().expect("a and b staged");
        for (d, v) in ab.iter().zip([&asg.a, &asg.b]) {
            let got = common::download(&gpu, d);
            let host = bytes_of(v);
            assert!(got[..host.len()] == *host, "{what}: a/b bytes");
            assert!(got[host.len()..].iter().all(|&x| x == 0), "{what}: padding");
        }
        let aux = common::download(&gpu, &part.aux);
        assert!(aux == bytes_of(&asg.aux_assignment), "{what}: aux bytes");
        let pageable = report.bytes(Direction::HostToDevice, Some(false));
        assert_eq!(pageable, 0, "{what}: {report:?}");
        let pinned = report.bytes(Direction::HostToDevice, Some(true));
        // a, b and aux are sent, c never (the device forms it).
        assert!(pinned >= 3 * n as u64 * 32, "{what}: {pinned}");
        assert!(
            pinned < 4 * n as u64 * 32,
            "{what}: c was sent ({pinned} bytes)"
        );
    };

    // Stages the partition (registering while `more` allows), checks the device copy and
    // returns the report; the device buffers are freed at once.
    let mut stage_checked = |more: &mut dyn FnMut() -> bool, what: &str| {
        let mut part = stage::stage(
            &gpu,
            gpu.copy_stream(),
            &asg,
            lg,
            HostPath::Register,
            Some(&mut bounce),
            "stage",
            more,
        )
        .unwrap();
        let report = std::mem::take(&mut part.report);
        check(&part, &report, what);
        report
    };

    // Two pieces allowed: a's first two, nothing of the others.
    let mut left = 2;
    let report = stage_checked(
        &mut || {
            left -= 1;
            left >= 0
        },
        "two pieces",
    );
    assert!(report.phase("stage_register").is_some(), "{report:?}");
    assert_eq!(prefix(&asg.a), 2 * REGISTER_PIECE);
    for v in [&asg.b, &asg.aux_assignment] {
        assert_eq!(prefix(v), 0);
    }

    // With the compute stream idle, the region's registration does nothing.
    let mut report = ProveReport::default();
    assert_eq!(stage::pin_unpinned(&gpu, &asg, None, &mut report), 0);
    assert!(report.phase("region_register").is_none());

    // Nothing allowed: the pinned prefix is still used, the rest bounces.
    let report = stage_checked(&mut || false, "none allowed");
    assert!(report.phase("stage_register").is_none(), "{report:?}");

    // Everything allowed: registration resumes at a's third piece.
    stage_checked(&mut || true, "all allowed");
    for v in [&asg.a, &asg.b, &asg.aux_assignment] {
        assert_eq!(prefix(v), v.capacity() * 32, "whole allocation page-locked");
    }
    // a: its two first pieces and the rest; b, aux: one range each.
    assert_eq!(asg.pins.len(), 4);
}
