//! Priorities, the express lane, the memory budget and the per-device kernel lock.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use filprove_engine::{Engine, EngineConfig, JobOutcome, Priority};

const WAIT: Option<Duration> = Some(Duration::from_secs(120));

fn no_loads() -> filprove_engine::SrsLoader {
    loader(Arc::new(AtomicUsize::new(0)), Duration::ZERO)
}

#[test]
fn higher_priorities_overtake_queued_partitions() {
    // One synthesis worker, no express lane: order is decided by the queue alone.
    let e = Engine::start(config(1, false), cpu(), no_loads()).unwrap();
    let probe = Arc::new(Probe::default());
    let d = Duration::from_millis(150);
    e.submit(
        key("low"),
        Priority::Low,
        Arc::new(ChainJob::new("low", 3, &probe).delay(d)),
    )
    .unwrap();
    wait_until("low's first partition to start", || {
        probe.index_of("low", "synth_start") != usize::MAX
    });
    e.submit(
        key("normal"),
        Priority::Normal,
        Arc::new(ChainJob::new("normal", 2, &probe).delay(d)),
    )
    .unwrap();
    e.submit(
        key("crit"),
        Priority::Critical,
        Arc::new(ChainJob::new("crit", 1, &probe).delay(d)),
    )
    .unwrap();
    for id in ["low", "normal", "crit"] {
        assert!(matches!(
            e.wait(id, WAIT).unwrap().unwrap().outcome,
            JobOutcome::Completed(_)
        ));
    }
    let starts: Vec<String> = probe
        .events()
        .into_iter()
        .filter(|(_, ev)| *ev == "synth_start")
        .map(|(n, _)| n)
        .collect();
    assert_eq!(starts, ["low", "crit", "normal", "normal", "low", "low"]);
}

/// Starts an engine with one regular and one express synthesis worker, submits `porep`
/// (NORMAL), then, once its synthesis has started, `winning` (CRITICAL), and checks that
/// the WinningPoSt is verified before the PoRep synthesis ends. Returns the engine, the
/// PoRep job still running.
fn post_overtakes_porep_synthesis(porep: ChainJob, winning: ChainJob, probe: &Probe) -> Engine {
    let e = Engine::start(config(1, true), cpu(), no_loads()).unwrap();
    e.submit(
        key("porep"),
        Priority::Normal,
        Arc::new(porep.kind("porep")),
    )
    .unwrap();
    wait_until("porep synthesis to start", || {
        probe.index_of("porep", "synth_start") != usize::MAX
    });
    let winning = winning.kind("winning-post");
    e.submit(key("winning"), Priority::Critical, Arc::new(winning))
        .unwrap();
    let r = e.wait("winning", WAIT).unwrap().unwrap();
    assert!(matches!(r.outcome, JobOutcome::Completed(_)));
    assert!(
        probe.index_of("winning", "verify") < probe.index_of("porep", "synth_end"),
        "{:?}",
        probe.events()
    );
    e
}

#[test]
fn the_express_worker_runs_post_while_porep_synthesizes() {
    let probe = Arc::new(Probe::default());
    let e = post_overtakes_porep_synthesis(
        ChainJob::new("porep", 2, &probe).delay(Duration::from_millis(2000)),
        ChainJob::new("winning", 1, &probe),
        &probe,
    );
    // Meanwhile the status shows both kinds.
    let st = e.status();
    assert!(
        st.queues
            .iter()
            .any(|q| q.kind == "porep" && q.in_progress == 1),
        "{:?}",
        st.queues
    );
    e.wait("porep", WAIT).unwrap().unwrap();
}

/// A PoRep synthesis that keeps every thread of its pool busy (its challenges in
/// parallel) does not hold up a PoSt synthesis's own parallel work: the express worker's
/// runs on rayon's global pool, the regular workers' on a pool of their own.
#[test]
fn post_parallel_work_does_not_wait_for_porep_challenges() {
    let probe = Arc::new(Probe::default());
    let e = post_overtakes_porep_synthesis(
        ChainJob::new("porep", 1, &probe).pool(Duration::from_millis(3000)),
        ChainJob::new("winning", 1, &probe).pool(Duration::ZERO),
        &probe,
    );
    e.wait("porep", WAIT).unwrap().unwrap();
}

#[test]
fn the_memory_budget_admits_partitions_only_while_they_fit() {
    let cfg = EngineConfig {
        memory_budget_bytes: Some(3 << 20),
        ..config(3, false)
    };
    let e = Engine::start(cfg, cpu(), no_loads()).unwrap();
    let probe = Arc::new(Probe::default());
    // Two partitions of 2 MiB cannot be in flight together in 3 MiB.
    e.submit(
        key("big"),
        Priority::Normal,
        Arc::new(
            ChainJob::new("big", 4, &probe)
                .memory(2 << 20)
                .delay(Duration::from_millis(100)),
        ),
    )
    .unwrap();
    wait_until("one partition's reservation", || {
        e.status().memory_reserved_bytes == 2 << 20
    });
    assert_eq!(e.status().memory_limit_bytes, 3 << 20);
    assert!(matches!(
        e.wait("big", WAIT).unwrap().unwrap().outcome,
        JobOutcome::Completed(_)
    ));
    assert_eq!(probe.max_active.load(Ordering::SeqCst), 1);
    assert_eq!(e.status().memory_reserved_bytes, 0);

    // Small partitions do run side by side.
    let probe = Arc::new(Probe::default());
    e.submit(
        key("small"),
        Priority::Normal,
        Arc::new(
            ChainJob::new("small", 3, &probe)
                .memory(1 << 20)
                .delay(Duration::from_millis(600)),
        ),
    )
    .unwrap();
    e.wait("small", WAIT).unwrap().unwrap();
    assert_eq!(probe.max_active.load(Ordering::SeqCst), 3);

    // A partition larger than the whole budget is refused up front.
    let err = e
        .submit(
            key("huge"),
            Priority::Normal,
            Arc::new(ChainJob::new("huge", 1, &probe).memory(4 << 20)),
        )
        .unwrap_err();
    assert_eq!(err.code(), "memory_exceeds_budget");
    assert!(!e.contains("huge"));
}

#[test]
fn urgent_work_may_use_headroom_beyond_the_budget() {
    let cfg = EngineConfig {
        memory_budget_bytes: Some(8 << 20),
        ..config(1, true)
    };
    let e = Engine::start(cfg, cpu(), no_loads()).unwrap();
    let probe = Arc::new(Probe::default());
    // PoRep fills the budget...
    e.submit(
        key("porep"),
        Priority::Normal,
        Arc::new(
            ChainJob::new("porep", 1, &probe)
                .memory(8 << 20)
                .delay(Duration::from_millis(2000)),
        ),
    )
    .unwrap();
    wait_until("porep synthesis to start", || {
        probe.index_of("porep", "synth_start") != usize::MAX
    });
    // ...and a WinningPoSt still starts at once, in the eighth kept for urgent work.
    e.submit(
        key("post"),
        Priority::Critical,
        Arc::new(ChainJob::new("post", 1, &probe).memory(1 << 20)),
    )
    .unwrap();
    e.wait("post", WAIT).unwrap().unwrap();
    assert!(probe.index_of("post", "verify") < probe.index_of("porep", "synth_end"));
    e.wait("porep", WAIT).unwrap().unwrap();
}

#[test]
fn the_kernel_lock_serializes_prove_calls_of_one_device() {
    let active = Arc::new(AtomicUsize::new(0));
    let max = Arc::new(AtomicUsize::new(0));
    let dev = Arc::new(Counting::new("dev0", &active, &max));
    let cfg = EngineConfig {
        gpu_workers_per_device: 3,
        ..config(3, false)
    };
    let e = Engine::start(cfg, vec![dev.clone()], no_loads()).unwrap();
    let probe = Arc::new(Probe::default());
    for i in 0..3 {
        let id = format!("j{i}");
        e.submit(
            key(&id),
            Priority::Normal,
            Arc::new(ChainJob::new(&id, 2, &probe)),
        )
        .unwrap();
    }
    for i in 0..3 {
        assert!(matches!(
            e.wait(&format!("j{i}"), WAIT).unwrap().unwrap().outcome,
            JobOutcome::Completed(_)
        ));
    }
    assert_eq!(dev.calls.load(Ordering::SeqCst), 6);
    assert_eq!(
        max.load(Ordering::SeqCst),
        1,
        "three workers, one kernel region at a time"
    );
}

#[test]
fn two_devices_prove_partitions_of_different_jobs_at_once() {
    let active = Arc::new(AtomicUsize::new(0));
    let max = Arc::new(AtomicUsize::new(0));
    let d0 = Arc::new(Counting::new("dev0", &active, &max));
    let d1 = Arc::new(Counting::new("dev1", &active, &max));
    let cfg = EngineConfig {
        gpu_workers_per_device: 1,
        ..config(2, false)
    };
    let e = Engine::start(cfg, vec![d0.clone(), d1.clone()], no_loads()).unwrap();
    let probe = Arc::new(Probe::default());
    for i in 0..4 {
        let id = format!("j{i}");
        e.submit(
            key(&id),
            Priority::Normal,
            Arc::new(ChainJob::new(&id, 2, &probe)),
        )
        .unwrap();
    }
    for i in 0..4 {
        assert!(matches!(
            e.wait(&format!("j{i}"), WAIT).unwrap().unwrap().outcome,
            JobOutcome::Completed(_)
        ));
    }
    assert_eq!(
        d0.calls.load(Ordering::SeqCst) + d1.calls.load(Ordering::SeqCst),
        8
    );
    assert!(
        d0.calls.load(Ordering::SeqCst) > 0 && d1.calls.load(Ordering::SeqCst) > 0,
        "both devices used"
    );
    let st = e.status();
    assert_eq!(st.devices.len(), 2);
    assert!(st.devices.iter().all(|d| !d.busy.is_zero()));
    // These backends report no device memory (only a GPU backend does).
    assert!(st.devices.iter().all(|d| d.memory.is_none()));
}

#[test]
fn a_retry_runs_on_another_device() {
    let active = Arc::new(AtomicUsize::new(0));
    let max = Arc::new(AtomicUsize::new(0));
    let d0 = Arc::new(Counting::new("dev0", &active, &max));
    let d1 = Arc::new(Counting::new("dev1", &active, &max));
    let cfg = EngineConfig {
        gpu_workers_per_device: 1,
        ..config(1, false)
    };
    let e = Engine::start(cfg, vec![d0.clone(), d1.clone()], no_loads()).unwrap();
    let probe = Arc::new(Probe::default());
    for i in 0..3 {
        let job = ChainJob::new("flaky", 1, &probe);
        job.bad_verifications.store(1, Ordering::SeqCst);
        let id = format!("flaky{i}");
        // Counted before submitting: the first attempt may start at once.
        let before = (
            d0.calls.load(Ordering::SeqCst),
            d1.calls.load(Ordering::SeqCst),
        );
        e.submit(key(&id), Priority::Normal, Arc::new(job)).unwrap();
        assert!(matches!(
            e.wait(&id, WAIT).unwrap().unwrap().outcome,
            JobOutcome::Completed(_)
        ));
        let after = (
            d0.calls.load(Ordering::SeqCst),
            d1.calls.load(Ordering::SeqCst),
        );
        assert_eq!(
            (after.0 - before.0, after.1 - before.1),
            (1, 1),
            "one attempt on each device"
        );
    }
}
