//! Faults the daemon survives without returning an unverified proof or losing an accepted
//! job (docs/hardening.md, "Fault suite"), on the CPU backend with 2 KiB WindowPoSt:
//! a backend that fails mid-proof or returns a wrong proof, once (the job is retried and
//! proved) or every time (the job fails with the reason); and a burst of three times the
//! intake capacity (served or refused with RESOURCE_EXHAUSTED, every accepted job ends,
//! memory stays bounded). The backend faults are injected through the engine's backend
//! trait: a backend wrapping the real CPU backend. (kill -9 during proving, then restart:
//! daemon_journal.rs.)

mod daemon_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use daemon_support::*;
use filprove::client;
use filprove::server::convert::to_wire;
use filprove::server::pb;
use filprove_filecoin::ProofKind;
use filprove_groth16::cpu::CpuBackend;
use filprove_groth16::{Backend, Proof, ProofInput, ProveError, Srs};
use tonic::Code;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// The prove call fails as a device error would.
    Error,
    /// The prove call returns proofs whose A element is negated (they do not verify).
    WrongProof,
}

/// The CPU backend with `fault` injected into its next `times` prove calls.
struct FaultyBackend {
    inner: CpuBackend,
    fault: Fault,
    remaining: AtomicUsize,
    injected: AtomicUsize,
}

impl FaultyBackend {
    fn new(fault: Fault, times: usize) -> Arc<Self> {
        Arc::new(Self {
            inner: CpuBackend::new(None).unwrap(),
            fault,
            remaining: AtomicUsize::new(times),
            injected: AtomicUsize::new(0),
        })
    }

    fn take_fault(&self) -> bool {
        let hit = self
            .remaining
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if hit {
            self.injected.fetch_add(1, Ordering::SeqCst);
        }
        hit
    }
}

impl Backend for FaultyBackend {
    fn name(&self) -> String {
        format!("faulty-{}", self.inner.name())
    }

    fn prove(&self, srs: &Srs, inputs: &[ProofInput<'_>]) -> Result<Vec<Proof>, ProveError> {
        let faulty = self.take_fault();
        if faulty && self.fault == Fault::Error {
            return Err(ProveError::Device {
                device: self.name(),
                message: "injected fault: kernel launch failed".into(),
            });
        }
        let proofs = self.inner.prove(srs, inputs)?;
        Ok(if faulty {
            proofs.into_iter().map(|p| Proof { a: -p.a, ..p }).collect()
        } else {
            proofs
        })
    }
}

/// Proves one WindowPoSt through `Prove` on a daemon whose only backend is `backend`.
async fn prove_on(backend: Arc<FaultyBackend>, id: &str) -> pb::AwaitProofResponse {
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path());
    let d = TestDaemon::start_on(dir, config, Some(vec![backend as Arc<dyn Backend>]));
    let mut c = client::connect(&d.unix_addr()).await.unwrap();
    let window = request(ProofKind::WindowPoSt);
    let r = c
        .prove(pb::ProveRequest {
            submit: Some(to_wire(&window, id, pb::Priority::Normal)),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert!(
        spawned::journaled_ids(&d.dir.path().join("journal")).is_empty(),
        "an ended job leaves the journal"
    );
    d.shutdown().unwrap();
    r
}

fn completed() -> i32 {
    pb::await_proof_response::Status::Completed as i32
}

fn failed() -> i32 {
    pb::await_proof_response::Status::Failed as i32
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_backend_error_is_retried_and_the_proof_verifies() {
    let b = FaultyBackend::new(Fault::Error, 1);
    let r = prove_on(b.clone(), "error-once").await;
    assert_eq!(b.injected.load(Ordering::SeqCst), 1);
    assert_eq!(r.status, completed(), "{}", r.error_message);
    assert!(request(ProofKind::WindowPoSt).verify(&r.proof).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_wrong_result_is_caught_retried_and_the_proof_verifies() {
    let b = FaultyBackend::new(Fault::WrongProof, 1);
    let r = prove_on(b.clone(), "wrong-once").await;
    assert_eq!(b.injected.load(Ordering::SeqCst), 1);
    assert_eq!(r.status, completed(), "{}", r.error_message);
    assert!(request(ProofKind::WindowPoSt).verify(&r.proof).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_that_keeps_failing_fails_the_job_with_the_reason() {
    let b = FaultyBackend::new(Fault::Error, usize::MAX);
    let r = prove_on(b.clone(), "error-always").await;
    assert_eq!(
        b.injected.load(Ordering::SeqCst),
        2,
        "proved twice: once and the retry"
    );
    assert_eq!(r.status, failed());
    assert!(r.proof.is_empty(), "no proof with a failure");
    assert!(
        r.error_message
            .contains("injected fault: kernel launch failed"),
        "{}",
        r.error_message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_that_keeps_proving_wrong_never_returns_its_proof() {
    let b = FaultyBackend::new(Fault::WrongProof, usize::MAX);
    let r = prove_on(b.clone(), "wrong-always").await;
    assert_eq!(b.injected.load(Ordering::SeqCst), 2);
    assert_eq!(r.status, failed());
    assert!(r.proof.is_empty(), "the unverified proof is not returned");
    assert!(
        r.error_message.starts_with("proof_verification_failed:"),
        "{}",
        r.error_message
    );
}

/// The resident set of this process, bytes (Linux).
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024
}

/// Three times the intake capacity of WindowPoSt and of WinningPoSt at once: each
/// submission is accepted or refused with RESOURCE_EXHAUSTED; every accepted id reaches a
/// terminal state with a proof that verifies, the journal ends empty, and the process
/// grows by less than 256 MiB meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_three_times_capacity_loses_nothing_and_memory_stays_bounded() {
    const CAPACITY: usize = 3;
    let d = TestDaemon::start(|c| {
        c.intake.queued_jobs_window_post = CAPACITY;
        c.intake.queued_jobs_winning_post = CAPACITY;
    });
    let c = client::connect(&d.unix_addr()).await.unwrap();
    // One proof of each kind first: parameters loaded, pools warm.
    for kind in [ProofKind::WindowPoSt, ProofKind::WinningPoSt] {
        let r = c
            .clone()
            .prove(pb::ProveRequest {
                submit: Some(to_wire(
                    &request(kind),
                    &format!("warm-{kind}"),
                    pb::Priority::Normal,
                )),
            })
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap();
        assert_eq!(r.status, completed(), "{}", r.error_message);
    }
    let before = rss_bytes();
    let peak = Arc::new(AtomicUsize::new(before as usize));
    let sampling = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (peak.clone(), sampling.clone());
        std::thread::spawn(move || {
            while sampling.load(Ordering::SeqCst) {
                peak.fetch_max(rss_bytes() as usize, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let burst: Vec<_> = (0..3 * CAPACITY)
        .flat_map(|i| [(ProofKind::WindowPoSt, i), (ProofKind::WinningPoSt, i)])
        .map(|(kind, i)| {
            let mut c = c.clone();
            let wire = to_wire(
                &request(kind),
                &format!("burst-{kind}-{i}"),
                pb::Priority::Normal,
            );
            tokio::spawn(async move { (kind, c.submit_proof(wire).await) })
        })
        .collect();
    let mut accepted = Vec::new();
    let mut refused = 0;
    for t in burst {
        match t.await.unwrap() {
            (kind, Ok(s)) => accepted.push((kind, s.into_inner().job_id)),
            (_, Err(e)) => {
                assert_eq!(e.code(), Code::ResourceExhausted, "{}", e.message());
                refused += 1;
            }
        }
    }
    assert_eq!(accepted.len() + refused, 6 * CAPACITY);
    assert!(refused > 0, "nothing refused");
    assert!(accepted.len() >= 2 * CAPACITY, "{accepted:?}");
    for (kind, id) in &accepted {
        let r = c
            .clone()
            .await_proof(pb::AwaitProofRequest {
                job_id: id.clone(),
                timeout_ms: 0,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.status, completed(), "{id}: {}", r.error_message);
        assert!(request(*kind).verify(&r.proof).unwrap(), "{id}");
    }
    sampling.store(false, Ordering::SeqCst);
    sampler.join().unwrap();
    let grew = peak.load(Ordering::SeqCst) as u64 - before.min(peak.load(Ordering::SeqCst) as u64);
    assert!(grew < 256 << 20, "grew by {grew} bytes during the burst");
    assert!(spawned::journaled_ids(&d.dir.path().join("journal")).is_empty());
    d.shutdown().unwrap();
}
