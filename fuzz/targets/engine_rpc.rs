//! Sequences of RPCs against an in-process engine: submit, cancel, evict, preload, await,
//! status and drain in any order, with the real CPU backend and a chain circuit of four
//! squarings (parameters from the groth16 crate's keygen), so one sequence takes
//! milliseconds.
//!
//! Jobs come in flavours: honest ones, and ones that cannot give a valid proof (a witness
//! for another statement, a failing synthesis, parameters of another circuit, an unknown
//! circuit, more memory than the budget). Invariants checked:
//! - no panic; every engine error is the one the situation calls for;
//! - every accepted job reaches a terminal state (its completion callback runs) within
//!   [`END_TIMEOUT`] after the sequence, and a job the engine no longer knows had ended;
//! - a returned proof verifies against the job's statement, and only honest jobs return
//!   one; honest jobs are not failed.
//!
//! Layout: a configuration byte (bit 0: express worker; bit 1: two synthesis workers;
//! bits 2-3: retained jobs 1, 2, 4 or 10,000; bit 4: a parameter budget of one byte, so
//! every idle set is evicted), then operations of a few bytes each, the first byte
//! choosing the operation (see [`run`]).

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use ff::Field;
use filprove_engine::{
    Engine, EngineConfig, EngineError, InputDigest, JobOutcome, JobReport, Priority, ProofJob,
    RequestKey, SrsLoader,
};
use filprove_groth16::cpu::CpuBackend;
use filprove_groth16::{Backend, Fr, Proof, ProvingAssignment, Srs};
use rand::SeedableRng;

use super::input::Input;

/// Squarings of the circuit the jobs prove.
const ROUNDS: usize = 4;
/// Circuit ids: the jobs' circuit, a longer chain, and one without parameters.
const CIRCUITS: [&str; 3] = ["chain-4", "chain-6", "chain-none"];
/// Request ids a sequence uses (a fifth choice lets the engine make one up).
const IDS: [&str; 4] = ["a", "b", "c", "d"];
/// Operations per sequence, at most.
const MAX_OPS: usize = 48;
/// How long a job may take to end after the sequence.
const END_TIMEOUT: Duration = Duration::from_secs(60);

/// Proves knowledge of x with x^(2^rounds) = out (public).
struct Chain {
    x: Fr,
    rounds: usize,
}

impl Circuit<Fr> for Chain {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut val = self.x;
        let mut var = cs.alloc(|| "x", || Ok(val))?;
        for i in 0..self.rounds {
            val = val.square();
            let next = cs.alloc(|| format!("sq{i}"), || Ok(val))?;
            cs.enforce(
                || format!("c{i}"),
                |lc| lc + var,
                |lc| lc + var,
                |lc| lc + next,
            );
            var = next;
        }
        let out = cs.alloc_input(|| "out", || Ok(val))?;
        cs.enforce(|| "out", |lc| lc + var, |lc| lc + CS::one(), |lc| lc + out);
        Ok(())
    }
}

fn chain_out(x: u64, rounds: usize) -> Fr {
    (0..rounds).fold(Fr::from(x), |v, _| v.square())
}

/// Parameters of the chain of `rounds` squarings (generated once per process).
fn params(rounds: usize) -> &'static Srs {
    static FOUR: OnceLock<Srs> = OnceLock::new();
    static SIX: OnceLock<Srs> = OnceLock::new();
    let cell = if rounds == ROUNDS { &FOUR } else { &SIX };
    cell.get_or_init(|| {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(rounds as u64);
        let circuit = Chain {
            x: Fr::ZERO,
            rounds,
        };
        filprove_groth16::keygen::generate_parameters(circuit, &mut rng).expect("chain parameters")
    })
}

fn loader() -> SrsLoader {
    Arc::new(|id: &str| match id {
        "chain-4" => Ok(params(4).clone()),
        "chain-6" => Ok(params(6).clone()),
        _ => Err(EngineError::UnknownCircuit(id.to_string())),
    })
}

/// One CPU backend for every engine of the process (its threads are rayon's global pool).
fn backend() -> Arc<dyn Backend> {
    static CPU: OnceLock<Arc<CpuBackend>> = OnceLock::new();
    CPU.get_or_init(|| Arc::new(CpuBackend::new(None).expect("cpu backend")))
        .clone()
}

/// What a job does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavor {
    /// Proves its statement.
    Honest,
    /// Synthesizes x + 1 for a statement about x: the proof cannot verify.
    WrongWitness,
    /// The last partition's synthesis fails.
    SynthesisFails,
    /// Names parameters of the longer chain.
    WrongParameters,
    /// Names a circuit without parameters.
    UnknownCircuit,
    /// Needs more memory than the budget.
    TooBig,
}

const FLAVORS: [Flavor; 6] = [
    Flavor::Honest,
    Flavor::WrongWitness,
    Flavor::SynthesisFails,
    Flavor::WrongParameters,
    Flavor::UnknownCircuit,
    Flavor::TooBig,
];

/// A job's inputs: what its request digest stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Spec {
    flavor: Flavor,
    /// One x per partition.
    xs: Vec<u8>,
    delay_ms: u8,
}

impl Spec {
    fn read(input: &mut Input<'_>) -> Self {
        let flavor = FLAVORS[usize::from(input.u8()) % FLAVORS.len()];
        let partitions = 1 + usize::from(input.u8() % 3);
        Self {
            flavor,
            xs: input.array::<3>()[..partitions].to_vec(),
            delay_ms: input.u8() % 3,
        }
    }

    /// Distinct specs, distinct digests (at most 3 xs, each a byte).
    fn digest(&self) -> InputDigest {
        let mut d = [0u8; 32];
        let flavor = FLAVORS.iter().position(|f| *f == self.flavor).unwrap_or(0);
        d[0] = flavor as u8;
        d[1] = self.delay_ms;
        d[2] = self.xs.len() as u8;
        d[3..3 + self.xs.len()].copy_from_slice(&self.xs);
        InputDigest(d)
    }

    /// True when `bytes` are valid proofs of this job's statements, one per partition.
    fn verifies(&self, bytes: &[u8]) -> bool {
        let Ok(proofs) = Proof::split(bytes) else {
            return false;
        };
        let vk = &params(ROUNDS).vk;
        proofs.len() == self.xs.len()
            && proofs
                .iter()
                .zip(&self.xs)
                .all(|(p, &x)| vk.verify(p, &[chain_out(u64::from(x), ROUNDS)]))
    }
}

struct ChainJob(Spec);

impl ProofJob for ChainJob {
    fn kind(&self) -> &'static str {
        "chain"
    }
    fn circuit_id(&self) -> String {
        match self.0.flavor {
            Flavor::WrongParameters => CIRCUITS[1],
            Flavor::UnknownCircuit => CIRCUITS[2],
            _ => CIRCUITS[0],
        }
        .to_string()
    }
    fn num_partitions(&self) -> usize {
        self.0.xs.len()
    }
    fn partition_memory_bytes(&self) -> u64 {
        match self.0.flavor {
            Flavor::TooBig => u64::MAX / 4,
            _ => 1 << 20,
        }
    }
    fn synthesize(&self, k: usize) -> Result<ProvingAssignment, EngineError> {
        std::thread::sleep(Duration::from_millis(u64::from(self.0.delay_ms)));
        let fail = |code: &str, message: String| EngineError::Synthesis {
            partition: k,
            code: code.into(),
            message,
        };
        if self.0.flavor == Flavor::SynthesisFails && k + 1 == self.0.xs.len() {
            return Err(fail(
                "fuzz_synthesis",
                "this job's last partition fails".into(),
            ));
        }
        let x = self
            .0
            .xs
            .get(k)
            .ok_or_else(|| fail("range", "no such partition".into()))?;
        let mut x = Fr::from(u64::from(*x));
        if self.0.flavor == Flavor::WrongWitness {
            x += Fr::ONE;
        }
        ProvingAssignment::synthesize(Chain { x, rounds: ROUNDS })
            .map_err(|e| fail("synthesis", e.to_string()))
    }
    fn assemble(&self, proofs: &[Proof]) -> Result<Vec<u8>, EngineError> {
        Ok(Proof::concat(proofs))
    }
    fn verify(&self, proof: &[u8]) -> Result<bool, EngineError> {
        Ok(self.0.verifies(proof))
    }
}

/// Completion reports by submission number, filled by the engine's callbacks.
#[derive(Default)]
struct Reports {
    by_submission: Mutex<HashMap<usize, JobReport>>,
    arrived: Condvar,
}

impl Reports {
    fn record(&self, submission: usize, report: &JobReport) {
        let mut m = self.by_submission.lock().unwrap_or_else(|p| p.into_inner());
        m.insert(submission, report.clone());
        self.arrived.notify_all();
    }

    /// Waits until every one of `submissions` has a report; false after `timeout`.
    fn wait_for(&self, submissions: &[usize], timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut m = self.by_submission.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if submissions.iter().all(|s| m.contains_key(s)) {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            m = self
                .arrived
                .wait_timeout(m, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// The sequence's view of what it submitted.
struct Session {
    engine: Engine,
    reports: Arc<Reports>,
    /// Each accepted submission's job id and spec, by submission number.
    submissions: Vec<(String, Spec)>,
    /// Submissions whose job had ended and been forgotten before its callback could be
    /// registered (only finished jobs are forgotten): no report will come.
    unobserved: Vec<usize>,
    /// The spec of the newest job under each id.
    current: HashMap<String, Spec>,
    /// Jobs created (accepted and not attached to an existing one).
    created: u64,
    draining: bool,
}

impl Session {
    /// The id an operation names: a known one, or one never used.
    fn pick(&self, sel: u8) -> String {
        let mut known: Vec<&String> = self.current.keys().collect();
        known.sort();
        known
            .get(usize::from(sel) % (known.len() + 1))
            .map(|s| s.to_string())
            .unwrap_or_else(|| "never-submitted".to_string())
    }

    /// An `UnknownJob` answer for `id`: fine for an id never used; a known job may only
    /// have been forgotten after it ended.
    fn unknown_job(&self, id: &str) {
        let mine = self.observed(|sid| sid == id);
        assert!(
            self.reports.wait_for(&mine, END_TIMEOUT),
            "job {id} was forgotten before it ended"
        );
    }

    /// The submissions with a callback whose job id passes `filter`.
    fn observed(&self, filter: impl Fn(&str) -> bool) -> Vec<usize> {
        (0..self.submissions.len())
            .filter(|i| !self.unobserved.contains(i) && filter(&self.submissions[*i].0))
            .collect()
    }

    fn submit(&mut self, input: &mut Input<'_>) {
        let id_sel = usize::from(input.u8()) % (IDS.len() + 1);
        let priority = [
            Priority::Low,
            Priority::Normal,
            Priority::High,
            Priority::Critical,
        ][usize::from(input.u8() % 4)];
        let spec = Spec::read(input);
        let id = IDS.get(id_sel).map(|s| s.to_string());
        let key = id.as_ref().map(|id| RequestKey::new(id, spec.digest()));
        let job = Arc::new(ChainJob(spec.clone()));
        match self.engine.submit(key, priority, job) {
            Ok(s) => {
                if s.existing {
                    let same = id.as_ref().and_then(|i| self.current.get(i));
                    assert_eq!(same, Some(&spec), "attached to a job with other inputs");
                } else {
                    assert!(!self.draining, "a new job was accepted while draining");
                    assert_ne!(
                        spec.flavor,
                        Flavor::TooBig,
                        "a job over budget was accepted"
                    );
                    self.created += 1;
                    self.current.insert(s.job_id.clone(), spec.clone());
                }
                let n = self.submissions.len();
                self.submissions.push((s.job_id.clone(), spec));
                let reports = self.reports.clone();
                match self
                    .engine
                    .on_complete(&s.job_id, move |r| reports.record(n, r))
                {
                    Ok(()) => {}
                    Err(EngineError::UnknownJob(_)) => self.unobserved.push(n),
                    Err(e) => panic!("on_complete: {e}"),
                }
            }
            Err(EngineError::MemoryExceedsBudget { .. }) => {
                assert_eq!(spec.flavor, Flavor::TooBig, "refused for memory");
            }
            Err(EngineError::RequestConflict(c)) => {
                let known = self.current.get(&c);
                assert!(
                    known.is_some_and(|k| *k != spec),
                    "conflict reported for {c} without a job with other inputs"
                );
            }
            Err(EngineError::Draining) => assert!(self.draining, "draining reported"),
            Err(e) => panic!("unexpected submit error: {e}"),
        }
    }

    fn check_status(&self) {
        let st = self.engine.status();
        assert!(
            st.completed + st.failed + st.cancelled <= self.created,
            "more jobs ended than were created"
        );
        let _ = self.engine.metrics_text();
    }

    /// Waits for every job to end and checks the outcomes; true when a proof came back.
    fn finish(self) -> bool {
        let all = self.observed(|_| true);
        assert!(
            self.reports.wait_for(&all, END_TIMEOUT),
            "an accepted job did not end within {END_TIMEOUT:?}"
        );
        let reports = self
            .reports
            .by_submission
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for n in all {
            let (id, spec) = &self.submissions[n];
            let report = &reports[&n];
            assert_eq!(&report.job_id, id);
            match &report.outcome {
                JobOutcome::Completed(bytes) => {
                    assert_eq!(spec.flavor, Flavor::Honest, "job {id} returned a proof");
                    assert!(spec.verifies(bytes), "job {id} returned a proof that fails");
                }
                JobOutcome::Failed(e) => {
                    assert_ne!(spec.flavor, Flavor::Honest, "honest job {id} failed: {e}");
                }
                JobOutcome::Cancelled => {}
            }
        }
        let st = self.engine.status();
        assert!(
            st.queues
                .iter()
                .all(|q| q.pending == 0 && q.in_progress == 0),
            "jobs left unfinished: {:?}",
            st.queues
        );
        reports
            .values()
            .any(|r| matches!(r.outcome, JobOutcome::Completed(_)))
    }
}

/// Runs the sequence of operations in `data` against a new engine. Operation bytes
/// (modulo 8): 0, 1 submit (id choice, priority, flavour, partitions, xs, delay); 2 cancel;
/// 3 evict; 4 preload; 5 await (up to 7 ms); 6 status; 7 drain (stop accepting new jobs).
/// True when some job returned a proof.
pub fn run(data: &[u8]) -> bool {
    let mut input = Input::new(data);
    let cfg = input.u8();
    let config = EngineConfig {
        partition_workers: 1 + usize::from((cfg >> 1) & 1),
        gpu_workers_per_device: 1,
        express_worker: cfg & 1 == 1,
        memory_budget_bytes: Some(256 << 20),
        srs_budget_bytes: Some(if (cfg >> 4) & 1 == 1 { 1 } else { 64 << 20 }),
        max_retained_jobs: [1, 2, 4, 10_000][usize::from((cfg >> 2) & 3)],
        ..EngineConfig::default()
    };
    let engine = Engine::start(config, vec![backend()], loader()).expect("engine starts");
    let mut s = Session {
        engine,
        reports: Arc::default(),
        submissions: Vec::new(),
        unobserved: Vec::new(),
        current: HashMap::new(),
        created: 0,
        draining: false,
    };
    for _ in 0..MAX_OPS {
        if input.is_empty() {
            break;
        }
        match input.u8() % 8 {
            0 | 1 => s.submit(&mut input),
            2 => {
                let id = s.pick(input.u8());
                match s.engine.cancel(&id) {
                    Ok(_) => {}
                    Err(EngineError::UnknownJob(_)) => s.unknown_job(&id),
                    Err(e) => panic!("cancel: {e}"),
                }
            }
            3 => {
                let c = CIRCUITS[usize::from(input.u8()) % CIRCUITS.len()];
                let _ = s.engine.srs().evict(c);
            }
            4 => {
                let c = CIRCUITS[usize::from(input.u8()) % CIRCUITS.len()];
                let loaded = s.engine.srs().preload(c);
                assert_eq!(loaded.is_ok(), c != CIRCUITS[2], "preload {c}: {loaded:?}");
            }
            5 => {
                let id = s.pick(input.u8());
                let wait = Duration::from_millis(u64::from(input.u8() % 8));
                match s.engine.wait(&id, Some(wait)) {
                    Ok(Some(report)) => assert_eq!(report.job_id, id),
                    Ok(None) => {}
                    Err(EngineError::UnknownJob(_)) => s.unknown_job(&id),
                    Err(e) => panic!("await: {e}"),
                }
            }
            6 => {
                let id = s.pick(input.u8());
                match s.engine.job_status(&id) {
                    Ok(_) => {}
                    Err(EngineError::UnknownJob(_)) => s.unknown_job(&id),
                    Err(e) => panic!("status: {e}"),
                }
                s.check_status();
            }
            _ => {
                s.engine.begin_drain();
                s.draining = true;
            }
        }
    }
    s.check_status();
    s.finish()
}
