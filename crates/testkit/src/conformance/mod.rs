//! The backend conformance suite: what every [`Backend`] must do, checked against the CPU
//! reference.
//!
//! For every case of [`Cases`] (mixes of bits and products from 1 to 1,500 constraints, a
//! single constraint, inputs only, ONE alone, an all-zero witness, a random R1CS, r = s = 0
//! once) the backend's proofs are byte-identical to the CPU reference's with the same r
//! and s, proved in one call, staged ([`Backend::stage`] then [`Backend::prove_staged`])
//! and unstaged (`prove_staged` with nothing staged), and they verify. Ill-shaped requests
//! (another circuit's witness, vectors of wrong lengths, no ONE input, empty density
//! bitmaps) give the CPU reference's [`ProveError`] (the same kind, quantity and lengths:
//! every backend checks shapes with [`filprove_groth16::check_shapes`]), never a panic,
//! whether staged or not, and leave the backend proving correctly; an empty request gives
//! no proof or [`ProveError::Invalid`].

mod cases;
mod shapes;

use std::panic::{catch_unwind, AssertUnwindSafe};

use filprove_groth16::cpu::prove_one;
use filprove_groth16::{Backend, Proof, ProofInput, ProveError, ProvingAssignment, Srs};

pub use cases::{Case, Cases};
pub use shapes::Expect;

/// A check the backend failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The case (circuit or ill-shaped request).
    pub case: String,
    /// The check ("batch proof", "staged proof", "shape error", ...).
    pub check: &'static str,
    /// What happened.
    pub detail: String,
}

impl Failure {
    fn new(case: &str, check: &'static str, detail: impl Into<String>) -> Self {
        Self {
            case: case.to_string(),
            check,
            detail: detail.into(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.case, self.check, self.detail)
    }
}

impl std::error::Error for Failure {}

/// What a passing backend was checked on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Proofs compared byte for byte with the reference's (and verified).
    pub proofs: usize,
    /// Of those, proved from what [`Backend::stage`] prepared (0 for a backend that
    /// stages nothing).
    pub staged: usize,
    /// Ill-shaped requests answered with the CPU reference's typed error.
    pub shape_errors: usize,
}

/// Runs `f`, turning a panic into a failure of `check` on `case`.
fn no_panic<T>(
    case: &str,
    check: &'static str,
    f: impl FnOnce() -> Result<T, Failure>,
) -> Result<T, Failure> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(Failure::new(case, check, "the backend panicked")))
}

/// Checks `backend` on every case of `cases` (see the module documentation); the first
/// failed check is the error.
pub fn check_backend(backend: &dyn Backend, cases: &Cases) -> Result<Summary, Failure> {
    let mut summary = Summary::default();
    for case in &cases.cases {
        check_case(backend, case, &mut summary)?;
    }
    let first = &cases.cases[0];
    for (what, asg, expect) in &shapes::broken(&first.assignments[0], &cases.other_circuit) {
        let input = ProofInput {
            assignment: asg,
            randomness: first.randomness[0],
        };
        let reference = reference_error(what, &first.srs, input, *expect)?;
        let unstaged = no_panic(what, "shape error", || {
            Ok(backend.prove(&first.srs, &[input]).map(|_| ()))
        })?;
        expect_error(what, "shape error", unstaged, &reference)?;
        // Staging may refuse the request, or stage it and leave the refusal to the proof.
        let staged = no_panic(what, "staged shape error", || {
            Ok(backend
                .stage(&first.srs, asg)
                .and_then(|s| backend.prove_staged(&first.srs, input, s))
                .map(|_| ()))
        })?;
        expect_error(what, "staged shape error", staged, &reference)?;
        backend.release_finished();
        summary.shape_errors += 1;
    }
    let empty = no_panic("empty request", "no proof", || {
        Ok(backend.prove(&first.srs, &[]))
    })?;
    match empty {
        Ok(p) if p.is_empty() => {}
        Err(ProveError::Invalid(_)) => {}
        other => {
            return Err(Failure::new(
                "empty request",
                "no proof",
                format!("{other:?}"),
            ))
        }
    }
    // The errors left nothing behind: the first case still proves the same bytes.
    check_case(backend, first, &mut summary)?;
    Ok(summary)
}

/// The CPU reference's error for an ill-shaped request, checked to be of the kind
/// expected.
fn reference_error(
    case: &str,
    srs: &Srs,
    input: ProofInput<'_>,
    expect: Expect,
) -> Result<ProveError, Failure> {
    let check = "reference shape error";
    match no_panic(case, check, || {
        Ok(prove_one(srs, input.assignment, input.randomness))
    })? {
        Err(e) if expect.admits(&e) => Ok(e),
        Err(e) => Err(Failure::new(
            case,
            check,
            format!("expected {expect:?}, got {} ({e})", e.code()),
        )),
        Ok(_) => Err(Failure::new(
            case,
            check,
            format!("expected {expect:?}, got a proof"),
        )),
    }
}

/// `got` must be the reference's error: the same kind, naming the same quantity and
/// lengths (every backend shares `filprove_groth16::check_shapes`).
fn expect_error(
    case: &str,
    check: &'static str,
    got: Result<(), ProveError>,
    reference: &ProveError,
) -> Result<(), Failure> {
    match got {
        Err(e) if e.code() == reference.code() && e.to_string() == reference.to_string() => Ok(()),
        Err(e) => Err(Failure::new(
            case,
            check,
            format!(
                "expected the reference's error ({reference}), got {} ({e})",
                e.code()
            ),
        )),
        Ok(()) => Err(Failure::new(
            case,
            check,
            format!("expected the reference's error ({reference}), got a proof"),
        )),
    }
}

/// Compares `got` with the case's proof `i` and verifies it.
fn compare(case: &Case, i: usize, check: &'static str, got: &Proof) -> Result<(), Failure> {
    if got.to_bytes() != case.expected[i].to_bytes() {
        return Err(Failure::new(
            &case.name,
            check,
            format!("proof {i} differs from the CPU reference's"),
        ));
    }
    let asg: &ProvingAssignment = &case.assignments[i];
    if !case.srs.vk.verify(got, &asg.input_assignment[1..]) {
        return Err(Failure::new(
            &case.name,
            check,
            format!("proof {i} does not verify"),
        ));
    }
    Ok(())
}

fn check_case(backend: &dyn Backend, case: &Case, summary: &mut Summary) -> Result<(), Failure> {
    let name = case.name.as_str();
    let inputs = case.inputs();
    let batch = no_panic(name, "batch proof", || {
        backend
            .prove(&case.srs, &inputs)
            .map_err(|e| Failure::new(name, "batch proof", e.to_string()))
    })?;
    backend.release_finished();
    if batch.len() != inputs.len() {
        return Err(Failure::new(
            name,
            "batch proof",
            format!("{} proofs for {} inputs", batch.len(), inputs.len()),
        ));
    }
    for (i, proof) in batch.iter().enumerate() {
        compare(case, i, "batch proof", proof)?;
        summary.proofs += 1;
    }
    for (i, input) in inputs.iter().enumerate() {
        let (staged, proof) = no_panic(name, "staged proof", || {
            let staged = backend
                .stage(&case.srs, input.assignment)
                .map_err(|e| Failure::new(name, "staging", e.to_string()))?;
            let was_staged = staged.is_some();
            let (proof, _) = backend
                .prove_staged(&case.srs, *input, staged)
                .map_err(|e| Failure::new(name, "staged proof", e.to_string()))?;
            Ok((was_staged, proof))
        })?;
        backend.release_finished();
        compare(case, i, "staged proof", &proof)?;
        summary.proofs += 1;
        summary.staged += usize::from(staged);
        let unstaged = no_panic(name, "unstaged proof", || {
            backend
                .prove_staged(&case.srs, *input, None)
                .map_err(|e| Failure::new(name, "unstaged proof", e.to_string()))
        })?;
        backend.release_finished();
        compare(case, i, "unstaged proof", &unstaged.0)?;
        summary.proofs += 1;
    }
    Ok(())
}
