//! Real small jobs for engine tests: the test kit's squaring chain with parameters from the
//! groth16 crate's keygen, proved by the real CPU backend and verified with the real
//! verifying key. Knobs slow synthesis down, fail it, or fail verification, to drive the
//! scheduler, the budget and the retry path.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use ff::Field;
use filprove_engine::{EngineError, InputDigest, ProofJob, RequestKey, SrsLoader};
use filprove_groth16::{Fr, Proof, ProvingAssignment, Srs};
use rand::SeedableRng;

/// An input digest standing for `what` (distinct strings of up to 32 bytes, distinct
/// digests).
pub fn inputs(what: &str) -> InputDigest {
    let mut d = [0u8; 32];
    for (i, b) in what.bytes().enumerate() {
        d[i % 32] ^= b;
    }
    InputDigest(d)
}

/// A request key for `id` whose inputs stand for the id itself.
pub fn key(id: &str) -> Option<RequestKey> {
    Some(RequestKey::new(id, inputs(id)))
}

/// The test kit's squaring chain: knowledge of x with x^(2^rounds) = out (public).
pub use filprove_testkit::Chain;

/// The circuit id of a chain of `rounds`.
pub fn circuit_id(rounds: usize) -> String {
    format!("chain-{rounds}")
}

/// Parameters of a chain (generated once per size per process).
pub fn srs(rounds: usize) -> Arc<Srs> {
    static CACHE: OnceLock<Mutex<HashMap<usize, Arc<Srs>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut c = cache.lock().unwrap();
    c.entry(rounds)
        .or_insert_with(|| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(rounds as u64);
            Arc::new(
                filprove_groth16::keygen::generate_parameters(Chain { x: None, rounds }, &mut rng)
                    .unwrap(),
            )
        })
        .clone()
}

/// A loader for `chain-<rounds>` ids that counts its calls.
pub fn loader(calls: Arc<AtomicUsize>, delay: Duration) -> SrsLoader {
    Arc::new(move |id: &str| {
        calls.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(delay);
        let rounds: usize = id
            .strip_prefix("chain-")
            .and_then(|r| r.parse().ok())
            .ok_or_else(|| EngineError::UnknownCircuit(id.to_string()))?;
        Ok((*srs(rounds)).clone())
    })
}

/// Shared observations across jobs of one test.
#[derive(Default)]
pub struct Probe {
    /// Synthesis calls in progress now / at most.
    pub active: AtomicUsize,
    pub max_active: AtomicUsize,
    /// Total synthesis calls.
    pub synth_calls: AtomicUsize,
    /// (job name, event) in order.
    pub log: Mutex<Vec<(String, &'static str, Instant)>>,
    /// Syntheses that ended with the cancellation error (groth16 `cancel`).
    pub cancelled_syntheses: AtomicUsize,
    /// Syntheses along the reference path ([`ProofJob::synthesize_reference`]).
    pub reference_calls: AtomicUsize,
}

/// Holds a synthesis at its start: it reports `started`, then waits for `go`.
pub struct Gate {
    pub started: Mutex<std::sync::mpsc::Sender<()>>,
    pub go: Mutex<std::sync::mpsc::Receiver<()>>,
}

impl Probe {
    pub fn events(&self) -> Vec<(String, &'static str)> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|(n, e, _)| (n.clone(), *e))
            .collect()
    }
    /// Index of the first event `e` of job `name`.
    pub fn index_of(&self, name: &str, e: &str) -> usize {
        self.events()
            .iter()
            .position(|(n, ev)| n == name && *ev == e)
            .unwrap_or(usize::MAX)
    }
}

/// A chain job of several partitions (one x each).
pub struct ChainJob {
    pub name: String,
    pub kind: &'static str,
    pub rounds: usize,
    pub xs: Vec<Fr>,
    pub synth_delay: Duration,
    pub memory: u64,
    /// Verification returns false this many times.
    pub bad_verifications: AtomicUsize,
    /// The fast path's witness has a wrong value (its proofs do not verify); the
    /// reference path's is right.
    pub wrong_fast_witness: bool,
    /// Synthesis of this partition fails.
    pub fail_partition: Option<usize>,
    /// Synthesis waits at this gate, then synthesizes a chain of `gate_rounds`.
    pub gate: Option<Gate>,
    pub gate_rounds: usize,
    /// Synthesis first holds every thread of its rayon pool this long (PoRep's challenges
    /// do that), or, with zero, runs a parallel step of its own there (as PoSt does).
    pub pool: Option<Duration>,
    pub probe: Arc<Probe>,
}

impl ChainJob {
    pub fn new(name: &str, partitions: usize, probe: &Arc<Probe>) -> Self {
        Self {
            name: name.to_string(),
            kind: "chain",
            rounds: 8,
            xs: (0..partitions).map(|i| Fr::from(3 + i as u64)).collect(),
            synth_delay: Duration::ZERO,
            memory: 1 << 20,
            bad_verifications: AtomicUsize::new(0),
            wrong_fast_witness: false,
            fail_partition: None,
            gate: None,
            gate_rounds: 0,
            pool: None,
            probe: probe.clone(),
        }
    }

    /// Synthesis waits at `gate`, then synthesizes a chain of `rounds` (not the one the
    /// parameters are for: such a job is meant to be cancelled before it proves).
    pub fn gated(mut self, gate: Gate, rounds: usize) -> Self {
        self.gate = Some(gate);
        self.gate_rounds = rounds;
        self
    }

    pub fn delay(mut self, d: Duration) -> Self {
        self.synth_delay = d;
        self
    }

    pub fn kind(mut self, k: &'static str) -> Self {
        self.kind = k;
        self
    }

    /// See [`ChainJob::pool`].
    pub fn pool(mut self, hold: Duration) -> Self {
        self.pool = Some(hold);
        self
    }

    pub fn memory(mut self, m: u64) -> Self {
        self.memory = m;
        self
    }

    /// See [`ChainJob::wrong_fast_witness`].
    pub fn wrong_fast_witness(mut self) -> Self {
        self.wrong_fast_witness = true;
        self
    }

    fn out(&self, k: usize) -> Fr {
        let mut v = self.xs[k];
        for _ in 0..self.rounds {
            v = v.square();
        }
        v
    }
}

impl ProofJob for ChainJob {
    fn kind(&self) -> &'static str {
        self.kind
    }
    fn circuit_id(&self) -> String {
        circuit_id(self.rounds)
    }
    fn num_partitions(&self) -> usize {
        self.xs.len()
    }
    fn partition_memory_bytes(&self) -> u64 {
        self.memory
    }
    fn synthesize(&self, k: usize) -> Result<ProvingAssignment, EngineError> {
        let p = &self.probe;
        p.synth_calls.fetch_add(1, Ordering::SeqCst);
        let now = p.active.fetch_add(1, Ordering::SeqCst) + 1;
        p.max_active.fetch_max(now, Ordering::SeqCst);
        p.log
            .lock()
            .unwrap()
            .push((self.name.clone(), "synth_start", Instant::now()));
        std::thread::sleep(self.synth_delay);
        if let Some(hold) = self.pool {
            use rayon::prelude::*;
            (0..rayon::current_num_threads())
                .into_par_iter()
                .for_each(|_| std::thread::sleep(hold));
        }
        let rounds = match &self.gate {
            Some(g) => {
                let _ = g.started.lock().unwrap().send(());
                let _ = g.go.lock().unwrap().recv();
                self.gate_rounds
            }
            None => self.rounds,
        };
        let r = if self.fail_partition == Some(k) {
            Err(EngineError::Synthesis {
                partition: k,
                code: "test_synthesis".into(),
                message: "told to fail".into(),
            })
        } else {
            ProvingAssignment::synthesize(Chain {
                x: Some(self.xs[k]),
                rounds,
            })
            .inspect_err(|e| {
                if filprove_groth16::cancel::is_cancellation(e) {
                    p.cancelled_syntheses.fetch_add(1, Ordering::SeqCst);
                }
            })
            .map_err(|e| EngineError::Synthesis {
                partition: k,
                code: "synthesis".into(),
                message: e.to_string(),
            })
        };
        p.active.fetch_sub(1, Ordering::SeqCst);
        p.log
            .lock()
            .unwrap()
            .push((self.name.clone(), "synth_end", Instant::now()));
        if !self.wrong_fast_witness {
            return r;
        }
        r.map(|mut pa| {
            if let Some(v) = pa.aux_assignment.first_mut() {
                *v += Fr::ONE;
            }
            pa
        })
    }
    fn synthesize_reference(&self, k: usize) -> Result<ProvingAssignment, EngineError> {
        self.probe.reference_calls.fetch_add(1, Ordering::SeqCst);
        let right = ChainJob {
            wrong_fast_witness: false,
            ..ChainJob::new(&self.name, self.xs.len(), &self.probe)
        };
        right.synthesize(k)
    }
    fn assemble(&self, proofs: &[Proof]) -> Result<Vec<u8>, EngineError> {
        Ok(Proof::concat(proofs))
    }
    fn verify(&self, bytes: &[u8]) -> Result<bool, EngineError> {
        self.probe
            .log
            .lock()
            .unwrap()
            .push((self.name.clone(), "verify", Instant::now()));
        if self
            .bad_verifications
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Ok(false);
        }
        let proofs = Proof::split(bytes).map_err(|e| EngineError::Assemble {
            code: "decode".into(),
            message: e.to_string(),
        })?;
        let vk = &srs(self.rounds).vk;
        Ok(proofs.len() == self.xs.len()
            && proofs
                .iter()
                .enumerate()
                .all(|(k, p)| vk.verify(p, &[self.out(k)])))
    }
}

/// The real CPU backend, with a count of prove calls running at once.
pub struct Counting {
    pub inner: filprove_groth16::cpu::CpuBackend,
    pub name: String,
    pub active: Arc<AtomicUsize>,
    pub max_active: Arc<AtomicUsize>,
    pub calls: AtomicUsize,
}

impl Counting {
    pub fn new(name: &str, active: &Arc<AtomicUsize>, max_active: &Arc<AtomicUsize>) -> Self {
        Self {
            inner: filprove_groth16::cpu::CpuBackend::new(Some(1)).unwrap(),
            name: name.to_string(),
            active: active.clone(),
            max_active: max_active.clone(),
            calls: AtomicUsize::new(0),
        }
    }
}

impl filprove_groth16::Backend for Counting {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn prove(
        &self,
        srs: &Srs,
        inputs: &[filprove_groth16::ProofInput<'_>],
    ) -> Result<Vec<Proof>, filprove_groth16::ProveError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_active.fetch_max(now, Ordering::SeqCst);
        // Long enough that a second worker would overlap if the lock allowed it.
        std::thread::sleep(Duration::from_millis(30));
        let r = self.inner.prove(srs, inputs);
        self.active.fetch_sub(1, Ordering::SeqCst);
        r
    }
}

/// The plain CPU backend.
pub fn cpu() -> Vec<Arc<dyn filprove_groth16::Backend>> {
    vec![Arc::new(
        filprove_groth16::cpu::CpuBackend::new(Some(1)).unwrap(),
    )]
}

/// An engine config with small explicit budgets (no host detection surprises).
pub fn config(partition_workers: usize, express: bool) -> filprove_engine::EngineConfig {
    filprove_engine::EngineConfig {
        partition_workers,
        gpu_workers_per_device: 2,
        express_worker: express,
        memory_budget_bytes: Some(1 << 30),
        srs_budget_bytes: Some(1 << 30),
        max_retained_jobs: 1000,
        reused_partition_buffers: None,
        reused_partition_buffers_idle: None,
        release_host_parameters: true,
        device_policies: Vec::new(),
        quarantine_after_failures: 3,
    }
}

/// Polls `cond` every 5 ms for up to 30 s (tests wait for states, not for fixed sleeps).
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The real CPU backend whose prove calls each wait until the test opens their gate
/// ([`Gated::open`], by call number from 0), counting its stage calls: a test can hold
/// workers at known points.
pub struct Gated {
    pub inner: filprove_groth16::cpu::CpuBackend,
    opened: Mutex<usize>,
    cond: std::sync::Condvar,
    pub stages: AtomicUsize,
    proves: AtomicUsize,
    pub finished: AtomicUsize,
}

impl Gated {
    pub fn new() -> Self {
        Self {
            inner: filprove_groth16::cpu::CpuBackend::new(Some(1)).unwrap(),
            opened: Mutex::new(0),
            cond: std::sync::Condvar::new(),
            stages: AtomicUsize::new(0),
            proves: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
        }
    }

    /// Lets prove calls 0..n finish.
    pub fn open(&self, n: usize) {
        *self.opened.lock().unwrap() = n;
        self.cond.notify_all();
    }
}

impl filprove_groth16::Backend for Gated {
    fn name(&self) -> String {
        "gated".into()
    }
    fn stage<'a>(
        &self,
        _srs: &Srs,
        _assignment: &'a ProvingAssignment,
    ) -> Result<Option<filprove_groth16::Staged<'a>>, filprove_groth16::ProveError> {
        self.stages.fetch_add(1, Ordering::SeqCst);
        Ok(None)
    }
    fn prove(
        &self,
        srs: &Srs,
        inputs: &[filprove_groth16::ProofInput<'_>],
    ) -> Result<Vec<Proof>, filprove_groth16::ProveError> {
        let k = self.proves.fetch_add(1, Ordering::SeqCst);
        let mut opened = self.opened.lock().unwrap();
        while *opened <= k {
            opened = self.cond.wait(opened).unwrap();
        }
        drop(opened);
        let r = self.inner.prove(srs, inputs);
        self.finished.fetch_add(1, Ordering::SeqCst);
        r
    }
}
