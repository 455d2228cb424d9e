//! The CPU backend passes the conformance suite with each MSM engine and pool; a backend
//! whose proofs use other blinding factors fails it.

use filprove_groth16::cpu::{CpuBackend, MsmEngine};
use filprove_groth16::{Backend, Proof, ProofInput, ProveError, Srs};
use filprove_testkit::{check_backend, Cases};

/// A seed from the clock, printed so that a failure can be replayed.
fn seed(test: &str) -> u64 {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    eprintln!("{test}: seed {seed}");
    seed
}

#[test]
fn cpu_backend_conforms_with_each_msm_engine() {
    let cases = Cases::new(seed("cpu_backend_conforms")).unwrap();
    let witnesses: usize = cases.cases.iter().map(|c| c.assignments.len()).sum();
    let first = cases.cases[0].assignments.len();
    for backend in [
        CpuBackend::new(None).unwrap(),
        CpuBackend::new(Some(1))
            .unwrap()
            .with_msm_engine(MsmEngine::Native),
    ] {
        let what = format!("{:?} engine", backend.msm_engine());
        let summary = check_backend(&backend, &cases).unwrap_or_else(|f| panic!("{what}: {f}"));
        // Each witness proved three ways, the first case's once more after the errors.
        assert_eq!(summary.proofs, 3 * (witnesses + first), "{what}");
        assert_eq!(summary.staged, 0, "{what}: the CPU stages nothing");
        assert_eq!(summary.shape_errors, 7, "{what}");
    }
}

/// The real CPU backend proving with r and s swapped.
struct SwappedBlinding(CpuBackend);

impl Backend for SwappedBlinding {
    fn name(&self) -> String {
        "cpu with r and s swapped".into()
    }

    fn prove(&self, srs: &Srs, inputs: &[ProofInput<'_>]) -> Result<Vec<Proof>, ProveError> {
        let swapped: Vec<ProofInput<'_>> = inputs
            .iter()
            .map(|i| {
                let mut i = *i;
                std::mem::swap(&mut i.randomness.r, &mut i.randomness.s);
                i
            })
            .collect();
        self.0.prove(srs, &swapped)
    }
}

#[test]
fn proofs_with_other_blinding_fail_the_suite() {
    let cases = Cases::new(seed("other_blinding")).unwrap();
    let backend = SwappedBlinding(CpuBackend::new(Some(1)).unwrap());
    let failure = check_backend(&backend, &cases).expect_err("swapped r and s must fail");
    assert_eq!(failure.check, "batch proof", "{failure}");
    assert!(failure.detail.contains("differs"), "{failure}");
}

/// The real CPU backend, reporting every shape mismatch as an invalid request.
struct LooseErrors(CpuBackend);

impl Backend for LooseErrors {
    fn name(&self) -> String {
        "cpu with loose shape errors".into()
    }

    fn prove(&self, srs: &Srs, inputs: &[ProofInput<'_>]) -> Result<Vec<Proof>, ProveError> {
        self.0.prove(srs, inputs).map_err(|e| match e {
            ProveError::ShapeMismatch { .. } => ProveError::Invalid(e.to_string()),
            other => other,
        })
    }
}

#[test]
fn another_kind_of_shape_error_fails_the_suite() {
    let cases = Cases::new(seed("loose_errors")).unwrap();
    let backend = LooseErrors(CpuBackend::new(Some(1)).unwrap());
    let failure = check_backend(&backend, &cases).expect_err("loose errors must fail");
    assert_eq!(failure.check, "shape error", "{failure}");
    assert_eq!(failure.case, "another circuit's witness", "{failure}");
    assert!(failure.detail.contains("prove_invalid"), "{failure}");
}
