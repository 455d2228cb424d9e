//! The pipeline end to end with real proofs: completion, verification and its retry,
//! typed failures, idempotency, await timeouts, cancellation and drain.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use filprove_engine::{Engine, EngineError, JobOutcome, JobStatus, Priority, RequestKey};

fn engine(workers: usize) -> Engine {
    engine_with(config(workers, true))
}

const WAIT: Option<Duration> = Some(Duration::from_secs(120));

#[test]
fn proves_a_multi_partition_job_and_verifies_it() {
    let e = engine(2);
    let probe = Arc::new(Probe::default());
    let job = Arc::new(ChainJob::new("a", 3, &probe));
    let s = e
        .submit(key("job-a"), Priority::Normal, job.clone())
        .unwrap();
    assert_eq!(s.job_id, "job-a");
    assert!(!s.existing);
    let r = e.wait("job-a", WAIT).unwrap().unwrap();
    let JobOutcome::Completed(bytes) = &r.outcome else {
        panic!("{:?}", r.outcome)
    };
    assert_eq!(bytes.len(), 3 * 192);
    // The engine verified it; check independently with the verifying key.
    use filprove_engine::ProofJob;
    assert!(job.verify(bytes).unwrap());
    // The engine keeps only the report of a finished job, not its inputs.
    wait_until("workers to drop their clones", || {
        Arc::strong_count(&job) == 1
    });
    assert!(r.timings.total >= r.timings.queue_wait);
    assert!(!r.timings.prove.is_zero() && !r.timings.synthesis.is_zero());
    let st = e.status();
    assert_eq!((st.completed, st.failed), (1, 0));
    assert_eq!(st.memory_reserved_bytes, 0, "reservations released");
    let m = e.metrics_text();
    assert!(
        m.contains("filprove_proofs_total{kind=\"chain\",outcome=\"completed\"} 1"),
        "{m}"
    );
    assert!(
        m.contains("filprove_partitions_total{kind=\"chain\",stage=\"proved\"} 3"),
        "{m}"
    );
    assert!(
        m.contains("filprove_stage_duration_seconds_count{kind=\"chain\",stage=\"total\"} 1"),
        "{m}"
    );
    assert!(
        m.contains("filprove_device_busy_seconds_total{device=\"cpu\"}"),
        "{m}"
    );
}

#[test]
fn a_retried_request_id_returns_the_existing_job() {
    let e = engine(1);
    let probe = Arc::new(Probe::default());
    let job = || Arc::new(ChainJob::new("a", 2, &probe).delay(Duration::from_millis(100)));
    let first = e.submit(key("same"), Priority::Normal, job()).unwrap();
    let second = e.submit(key("same"), Priority::Normal, job()).unwrap();
    assert!(!first.existing && second.existing);
    assert_eq!(second.job_id, "same");
    assert_eq!(e.retained(&key("same").unwrap()).unwrap(), Some(second));
    e.wait("same", WAIT).unwrap().unwrap();
    // Even after completion.
    assert!(
        e.submit(key("same"), Priority::High, job())
            .unwrap()
            .existing
    );
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        probe.synth_calls.load(Ordering::SeqCst),
        2,
        "one job's partitions only"
    );
    assert_eq!(e.status().completed, 1);
    // Without an id, every submission is a new job.
    let a = e.submit(None, Priority::Normal, job()).unwrap();
    let b = e.submit(key(""), Priority::Normal, job()).unwrap();
    assert_ne!(a.job_id, b.job_id);
}

#[test]
fn a_request_id_with_other_inputs_never_gets_the_other_job() {
    let e = engine(1);
    let probe = Arc::new(Probe::default());
    let slow = || Arc::new(ChainJob::new("a", 1, &probe).delay(Duration::from_millis(300)));
    let other = Some(RequestKey::new("id", inputs("other inputs")));
    e.submit(key("id"), Priority::Normal, slow()).unwrap();
    // While the job is unfinished: refused, the job is untouched.
    let err = e
        .submit(other.clone(), Priority::Normal, slow())
        .unwrap_err();
    assert_eq!(err, EngineError::RequestConflict("id".into()));
    assert_eq!(err.code(), "request_id_conflict");
    assert_eq!(e.retained(other.as_ref().unwrap()).unwrap_err(), err);
    let first = e.wait("id", WAIT).unwrap().unwrap();
    assert!(matches!(&first.outcome, JobOutcome::Completed(p) if p.len() == 192));
    // Once it has finished: a new job under the same id, proved from the new inputs (two
    // partitions where the first job had one).
    assert_eq!(e.retained(other.as_ref().unwrap()).unwrap(), None);
    let rerun = e
        .submit(
            other,
            Priority::Normal,
            Arc::new(ChainJob::new("b", 2, &probe)),
        )
        .unwrap();
    assert!(!rerun.existing);
    let second = e.wait("id", WAIT).unwrap().unwrap();
    assert!(
        matches!(&second.outcome, JobOutcome::Completed(p) if p.len() == 2 * 192),
        "the new inputs' proof: {:?}",
        second.outcome
    );
    assert_eq!(e.status().completed, 2);
}

#[test]
fn a_failed_or_cancelled_job_runs_again_when_its_id_comes_back() {
    let e = engine(1);
    let probe = Arc::new(Probe::default());
    let mut broken = ChainJob::new("f", 1, &probe);
    broken.fail_partition = Some(0);
    e.submit(key("failing"), Priority::Normal, Arc::new(broken))
        .unwrap();
    let r = e.wait("failing", WAIT).unwrap().unwrap();
    assert!(
        matches!(r.outcome, JobOutcome::Failed(_)),
        "{:?}",
        r.outcome
    );
    let again = e
        .submit(
            key("failing"),
            Priority::Normal,
            Arc::new(ChainJob::new("f", 1, &probe)),
        )
        .unwrap();
    assert!(!again.existing, "a new job, not the failed one");
    assert!(matches!(
        e.wait("failing", WAIT).unwrap().unwrap().outcome,
        JobOutcome::Completed(_)
    ));

    let slow = || Arc::new(ChainJob::new("c", 2, &probe).delay(Duration::from_millis(300)));
    e.submit(key("cancelled"), Priority::Normal, slow())
        .unwrap();
    e.cancel("cancelled").unwrap();
    assert_eq!(
        e.wait("cancelled", WAIT).unwrap().unwrap().outcome,
        JobOutcome::Cancelled
    );
    assert!(
        !e.submit(key("cancelled"), Priority::Normal, slow())
            .unwrap()
            .existing
    );
    // A retry while the new job runs attaches to it.
    assert!(
        e.submit(key("cancelled"), Priority::Normal, slow())
            .unwrap()
            .existing
    );
    assert!(matches!(
        e.wait("cancelled", WAIT).unwrap().unwrap().outcome,
        JobOutcome::Completed(_)
    ));
    let st = e.status();
    assert_eq!((st.completed, st.failed, st.cancelled), (2, 1, 1));
}

#[test]
fn a_re_run_job_is_not_forgotten_with_the_job_it_replaced() {
    let mut c = config(1, true);
    c.max_retained_jobs = 1;
    let e = engine_with(c);
    let probe = Arc::new(Probe::default());
    let slow = || Arc::new(ChainJob::new("r", 1, &probe).delay(Duration::from_millis(300)));
    e.submit(key("r"), Priority::Normal, slow()).unwrap();
    e.cancel("r").unwrap();
    e.submit(key("r"), Priority::Normal, slow()).unwrap();
    // Another job finishing pushes the oldest finished id out of the table; the id "r"
    // now names a running job, which must stay.
    e.submit(
        key("other"),
        Priority::Critical,
        Arc::new(ChainJob::new("o", 1, &probe)),
    )
    .unwrap();
    e.wait("other", WAIT).unwrap().unwrap();
    assert!(matches!(
        e.wait("r", WAIT).unwrap().unwrap().outcome,
        JobOutcome::Completed(_)
    ));
}

/// A fast synthesis path that makes a wrong witness costs a retry, not the proof: the
/// retry synthesizes every partition along the reference path.
#[test]
fn a_retry_after_a_failed_verification_synthesizes_along_the_reference_path() {
    let loads = Arc::new(AtomicUsize::new(0));
    let e = Engine::start(config(2, true), cpu(), loader(loads, Duration::ZERO)).unwrap();
    let probe = Arc::new(Probe::default());
    let job = ChainJob::new("twin-bug", 2, &probe).wrong_fast_witness();
    e.submit(key("twin-bug"), Priority::Normal, Arc::new(job))
        .unwrap();
    let r = e.wait("twin-bug", WAIT).unwrap().unwrap();
    assert!(
        matches!(r.outcome, JobOutcome::Completed(_)),
        "{:?}",
        r.outcome
    );
    assert_eq!(probe.reference_calls.load(Ordering::SeqCst), 2);
    let metrics = e.metrics_text();
    assert!(
        metrics.contains("filprove_synthesis_reference_partitions_total{kind=\"chain\"} 2"),
        "{metrics}"
    );
    assert!(metrics.contains("filprove_proof_retries_total{kind=\"chain\"} 1"));
}

#[test]
fn a_proof_failing_verification_is_retried_once() {
    let loads = Arc::new(AtomicUsize::new(0));
    let e = Engine::start(
        config(2, true),
        cpu(),
        loader(loads.clone(), Duration::ZERO),
    )
    .unwrap();
    let probe = Arc::new(Probe::default());
    let job = ChainJob::new("flaky", 2, &probe);
    job.bad_verifications.store(1, Ordering::SeqCst);
    e.submit(key("flaky"), Priority::Normal, Arc::new(job))
        .unwrap();
    let r = e.wait("flaky", WAIT).unwrap().unwrap();
    assert!(
        matches!(r.outcome, JobOutcome::Completed(_)),
        "{:?}",
        r.outcome
    );
    assert_eq!(
        probe.synth_calls.load(Ordering::SeqCst),
        4,
        "both partitions proved again"
    );
    // The parameters the failed proof was made with were dropped and read again.
    assert_eq!(loads.load(Ordering::SeqCst), 2);

    let job = ChainJob::new("bad", 1, &probe);
    job.bad_verifications.store(2, Ordering::SeqCst);
    e.submit(key("bad"), Priority::Normal, Arc::new(job))
        .unwrap();
    let r = e.wait("bad", WAIT).unwrap().unwrap();
    let JobOutcome::Failed(err) = &r.outcome else {
        panic!("{:?}", r.outcome)
    };
    assert_eq!(err.code(), "proof_verification_failed");
    assert!(e
        .metrics_text()
        .contains("filprove_proof_retries_total{kind=\"chain\"} 2"));
    assert_eq!(e.status().failed, 1);
}

#[test]
fn a_synthesis_failure_is_a_typed_failure() {
    let e = engine(2);
    let probe = Arc::new(Probe::default());
    let mut job = ChainJob::new("broken", 3, &probe);
    job.fail_partition = Some(1);
    e.submit(key("broken"), Priority::Normal, Arc::new(job))
        .unwrap();
    let r = e.wait("broken", WAIT).unwrap().unwrap();
    match &r.outcome {
        JobOutcome::Failed(EngineError::Synthesis {
            partition, code, ..
        }) => {
            assert_eq!((*partition, code.as_str()), (1, "test_synthesis"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(e.job_status("broken").unwrap(), JobStatus::Failed);
}

#[test]
fn await_times_out_and_unknown_jobs_are_not_found() {
    let e = engine(1);
    let probe = Arc::new(Probe::default());
    e.submit(
        key("slow"),
        Priority::Normal,
        Arc::new(ChainJob::new("slow", 1, &probe).delay(Duration::from_millis(500))),
    )
    .unwrap();
    assert_eq!(
        e.wait("slow", Some(Duration::from_millis(20))).unwrap(),
        None
    );
    assert!(e.wait("slow", WAIT).unwrap().is_some());
    assert_eq!(
        e.wait("nope", Some(Duration::ZERO)).unwrap_err().code(),
        "unknown_job"
    );
    assert_eq!(e.cancel("nope").unwrap_err().code(), "unknown_job");
}

#[test]
fn cancel_stops_a_running_synthesis() {
    let e = engine(1);
    let probe = Arc::new(Probe::default());
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel();
    let gate = Gate {
        started: Mutex::new(started_tx),
        go: Mutex::new(go_rx),
    };
    // Four million variables: tens of seconds of synthesis if nothing stopped it.
    let job = ChainJob::new("big", 1, &probe).gated(gate, 1 << 22);
    e.submit(key("big"), Priority::Normal, Arc::new(job))
        .unwrap();
    started_rx
        .recv_timeout(Duration::from_secs(120))
        .expect("synthesis started");
    assert!(e.cancel("big").unwrap(), "its synthesis was running");
    go_tx.send(()).unwrap();
    assert_eq!(
        e.wait("big", WAIT).unwrap().unwrap().outcome,
        JobOutcome::Cancelled
    );
    wait_until("the synthesis to return", || {
        probe.active.load(Ordering::SeqCst) == 0 && probe.synth_calls.load(Ordering::SeqCst) == 1
    });
    assert_eq!(
        probe.cancelled_syntheses.load(Ordering::SeqCst),
        1,
        "the running synthesis stopped with the cancellation error"
    );
    wait_until("its memory to be released", || {
        e.status().memory_reserved_bytes == 0
    });
}

#[test]
fn cancel_stops_queued_and_running_jobs() {
    let e = engine(1);
    let probe = Arc::new(Probe::default());
    let slow = |n: &str| Arc::new(ChainJob::new(n, 2, &probe).delay(Duration::from_millis(400)));
    e.submit(key("running"), Priority::Normal, slow("running"))
        .unwrap();
    e.submit(key("queued"), Priority::Normal, slow("queued"))
        .unwrap();
    wait_until("the first partition to start", || {
        e.job_status("running").unwrap() == JobStatus::Running
    });
    assert!(!e.cancel("queued").unwrap(), "nothing of it had started");
    assert!(
        e.cancel("running").unwrap(),
        "its first partition was synthesizing"
    );
    for id in ["running", "queued"] {
        assert_eq!(
            e.wait(id, WAIT).unwrap().unwrap().outcome,
            JobOutcome::Cancelled
        );
    }
    // Cancelling a finished job changes nothing.
    assert!(!e.cancel("running").unwrap());
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        probe.synth_calls.load(Ordering::SeqCst),
        1,
        "the cancelled jobs' other partitions never ran"
    );
    assert_eq!(e.status().memory_reserved_bytes, 0);
    assert_eq!(e.status().cancelled, 2);
    // The engine still works.
    e.submit(
        key("after"),
        Priority::Normal,
        Arc::new(ChainJob::new("after", 1, &probe)),
    )
    .unwrap();
    assert!(matches!(
        e.wait("after", WAIT).unwrap().unwrap().outcome,
        JobOutcome::Completed(_)
    ));
}

#[test]
fn drain_finishes_in_flight_work_then_refuses_new_work() {
    let e = engine(1);
    let probe = Arc::new(Probe::default());
    e.submit(
        key("quick"),
        Priority::Normal,
        Arc::new(ChainJob::new("quick", 1, &probe)),
    )
    .unwrap();
    let d = e.drain(Duration::from_secs(60));
    assert_eq!((d.finished, d.cancelled), (1, 0));
    assert!(matches!(
        e.wait("quick", WAIT).unwrap().unwrap().outcome,
        JobOutcome::Completed(_)
    ));
    let err = e
        .submit(
            key("late"),
            Priority::Critical,
            Arc::new(ChainJob::new("late", 1, &probe)),
        )
        .unwrap_err();
    assert_eq!(err, EngineError::Draining);
    assert!(e.status().draining);
}

#[test]
fn drain_cancels_what_outlives_the_grace_period() {
    let e = engine(1);
    let probe = Arc::new(Probe::default());
    e.submit(
        key("long"),
        Priority::Normal,
        Arc::new(ChainJob::new("long", 3, &probe).delay(Duration::from_millis(300))),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let d = e.drain(Duration::from_millis(100));
    assert_eq!((d.finished, d.cancelled), (0, 1));
    assert_eq!(
        e.wait("long", WAIT).unwrap().unwrap().outcome,
        JobOutcome::Cancelled
    );
}

/// Cutting the drain short cancels what runs without waiting for the grace period, and
/// a job cancelled then is seen (in its waiter) as cancelled by shutdown; one cancelled by
/// a caller before is not.
#[test]
fn a_drain_cut_short_cancels_at_once_as_shutdown() {
    let e = Arc::new(engine(1));
    let probe = Arc::new(Probe::default());
    let by_shutdown = Arc::new(Mutex::new(Vec::new()));
    for name in ["caller", "slow"] {
        e.submit(
            key(name),
            Priority::Normal,
            Arc::new(ChainJob::new(name, 3, &probe).delay(Duration::from_millis(400))),
        )
        .unwrap();
        let (seen, engine) = (by_shutdown.clone(), e.clone());
        e.on_complete(name, move |r| {
            seen.lock()
                .unwrap()
                .push((r.job_id.clone(), engine.is_stopping()))
        })
        .unwrap();
    }
    e.cancel("caller").unwrap();
    let drain = {
        let e = e.clone();
        std::thread::spawn(move || e.drain(Duration::from_secs(600)))
    };
    wait_until("the drain to start", || e.is_draining());
    assert!(!e.is_stopping());
    e.cut_drain_short();
    let d = drain.join().unwrap();
    assert_eq!((d.finished, d.cancelled), (0, 1));
    let seen = by_shutdown.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![("caller".to_string(), false), ("slow".to_string(), true)]
    );
}

/// A failure recorded under an id is a failed job there: status, await and a new
/// submission under the id (which replaces it); not over an unfinished job.
#[test]
fn a_recorded_failure_is_a_failed_job_under_its_id() {
    let e = engine(1);
    let why = EngineError::Input {
        code: "journal_unreadable".into(),
        message: "damaged".into(),
    };
    e.record_failure("lost", "porep", why.clone()).unwrap();
    assert_eq!(e.job_status("lost").unwrap(), JobStatus::Failed);
    let r = e.wait("lost", WAIT).unwrap().unwrap();
    assert_eq!(r.outcome, JobOutcome::Failed(why.clone()));
    assert_eq!(r.kind, "porep");
    assert_eq!(e.status().failed, 1);
    let probe = Arc::new(Probe::default());
    prove_ok(&e, "lost", ChainJob::new("lost", 1, &probe));
    let slow = ChainJob::new("slow", 2, &probe).delay(Duration::from_millis(300));
    e.submit(key("slow"), Priority::Normal, Arc::new(slow))
        .unwrap();
    assert_eq!(
        e.record_failure("slow", "porep", why),
        Err(EngineError::RequestConflict("slow".into()))
    );
    assert_eq!(e.wait("slow", WAIT).unwrap().unwrap().kind, "chain");
}

/// Submits `job` as `name` and asserts that it completes (the engine verified every
/// partition's proof).
fn prove_ok(e: &Engine, name: &str, job: ChainJob) {
    e.submit(key(name), Priority::Normal, Arc::new(job))
        .unwrap();
    let r = e.wait(name, WAIT).unwrap().unwrap();
    assert!(
        matches!(r.outcome, JobOutcome::Completed(_)),
        "{name}: {:?}",
        r.outcome
    );
}

fn engine_with(cfg: filprove_engine::EngineConfig) -> Engine {
    Engine::start(
        cfg,
        cpu(),
        loader(Arc::new(AtomicUsize::new(0)), Duration::ZERO),
    )
    .unwrap()
}

/// Bytes of one chain partition's assignment (what a kept buffer holds).
fn chain_shell_bytes() -> u64 {
    let asg = filprove_groth16::ProvingAssignment::synthesize(Chain {
        x: Some(filprove_groth16::Fr::from(3u64)),
        rounds: 8,
    })
    .unwrap();
    asg.heap_bytes() as u64
}

fn buffers_metric(m: &str, how: &str) -> Option<f64> {
    let key = format!("filprove_partition_buffers_total{{allocation=\"{how}\"}} ");
    m.lines()
        .find_map(|l| l.strip_prefix(&key))
        .map(|v| v.trim().parse().unwrap())
}

#[test]
fn later_partitions_refill_proved_partitions_buffers() {
    let e = engine(1);
    let probe = Arc::new(Probe::default());
    for name in ["first", "second"] {
        prove_ok(&e, name, ChainJob::new(name, 2, &probe));
    }
    let m = e.metrics_text();
    assert_eq!(buffers_metric(&m, "new"), Some(2.0), "{m}");
    assert_eq!(buffers_metric(&m, "reused"), Some(2.0), "{m}");
    // Two prover workers: two kept, and they count as idle memory.
    let idle = 2 * chain_shell_bytes();
    assert!(
        m.contains(&format!("filprove_partition_buffers_idle_bytes {idle}")),
        "{m}"
    );
    assert_eq!(e.status().memory_reserved_bytes, 0);
}

#[test]
fn kept_buffers_give_way_to_a_partition_that_needs_the_memory() {
    let s = chain_shell_bytes();
    let mut cfg = config(1, false);
    cfg.memory_budget_bytes = Some(3 * s);
    let e = engine_with(cfg);
    let probe = Arc::new(Probe::default());
    prove_ok(&e, "a", ChainJob::new("a", 2, &probe).memory(s));
    // Two kept buffers (2s) beside a partition estimated at 2.5s exceed the budget (3s);
    // without them it fits: they are freed and the partition starts.
    prove_ok(&e, "b", ChainJob::new("b", 1, &probe).memory(5 * s / 2));
    let m = e.metrics_text();
    assert_eq!(buffers_metric(&m, "new"), Some(3.0), "{m}");
    assert_eq!(buffers_metric(&m, "reused"), None, "{m}");
}

#[test]
fn kept_buffers_are_freed_after_their_idle_time() {
    let mut cfg = config(1, false);
    cfg.reused_partition_buffers_idle = Some(Duration::from_secs(2));
    let e = engine_with(cfg);
    let probe = Arc::new(Probe::default());
    prove_ok(&e, "a", ChainJob::new("a", 2, &probe));
    let idle = |e: &Engine| {
        let m = e.metrics_text();
        m.lines()
            .find_map(|l| l.strip_prefix("filprove_partition_buffers_idle_bytes "))
            .map(|v| v.trim().parse::<f64>().unwrap())
            .unwrap()
    };
    // Kept right after the job, then freed without any further work arriving.
    wait_until("the buffers kept", || idle(&e) > 0.0);
    wait_until("the idle buffers freed", || idle(&e) == 0.0);
}

/// Buffers beyond the pool's bound are kept (and counted) while a prover is staging or
/// proving, since unpinning them would hold the driver beside a kernel region, and freed
/// once none is.
#[test]
fn surplus_buffers_wait_until_no_region_runs() {
    let dev = Arc::new(Gated::new());
    let mut cfg = config(2, false);
    cfg.reused_partition_buffers = Some(0); // every proved assignment is surplus
    let e = Engine::start(
        cfg,
        vec![dev.clone()],
        loader(Arc::new(AtomicUsize::new(0)), Duration::ZERO),
    )
    .unwrap();
    let probe = Arc::new(Probe::default());
    e.submit(
        key("burst"),
        Priority::Normal,
        Arc::new(ChainJob::new("burst", 2, &probe)),
    )
    .unwrap();
    let metric = |e: &Engine, name: &str| {
        let m = e.metrics_text();
        m.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .map(|v| v.trim().parse::<f64>().unwrap())
            .unwrap_or(0.0)
    };
    // Both partitions staged: one worker proves, the other waits for the kernel lock
    // with its partition in hand. The first proof finishes; its buffers stay.
    wait_until("both partitions staged", || {
        dev.stages.load(Ordering::SeqCst) == 2
    });
    dev.open(1);
    wait_until("the first partition's buffers kept", || {
        metric(&e, "filprove_partition_buffers_idle_bytes") > 0.0
    });
    assert_eq!(dev.finished.load(Ordering::SeqCst), 1);
    assert_eq!(metric(&e, "filprove_partition_buffers_released_total"), 0.0);
    // The second proof finishes with no other prover busy: both go.
    dev.open(2);
    let r = e.wait("burst", WAIT).unwrap().unwrap();
    assert!(
        matches!(r.outcome, JobOutcome::Completed(_)),
        "{:?}",
        r.outcome
    );
    wait_until("the surplus freed", || {
        metric(&e, "filprove_partition_buffers_idle_bytes") == 0.0
    });
    assert_eq!(metric(&e, "filprove_partition_buffers_released_total"), 2.0);
}
