//! Several devices in one engine, on the CPU backend (each backend is one logical device):
//! a device whose proofs keep failing is taken out of rotation and its jobs complete on the
//! other; status and metrics say so; an operator brings it back. A device reserved for
//! urgent work proves a PoSt while PoRep work holds the other device. A device with a
//! circuit list proves those circuits alone. A GPU whose NVML sampler reports a device
//! fault (a fault Xid, new uncorrectable ECC errors) is taken out of rotation at once.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use filprove_engine::gpu_sampler::{self, GpuSample};
use filprove_engine::{
    DevicePolicy, Engine, EngineConfig, EngineError, JobOutcome, Priority, SrsLoader,
};
use filprove_groth16::cpu::CpuBackend;
use filprove_groth16::{Backend, Proof, ProofInput, ProveError, Srs};

const WAIT: Option<Duration> = Some(Duration::from_secs(120));

fn loads() -> SrsLoader {
    loader(Arc::new(AtomicUsize::new(0)), Duration::ZERO)
}

/// The CPU backend, failing every prove call as a device error while `failing` is set,
/// counting the calls it proved and the ones it failed.
struct Flaky {
    inner: CpuBackend,
    name: &'static str,
    failing: AtomicBool,
    proved: AtomicUsize,
    failed: AtomicUsize,
}

impl Flaky {
    fn new(name: &'static str, failing: bool) -> Arc<Self> {
        Arc::new(Self {
            inner: CpuBackend::new(Some(1)).unwrap(),
            name,
            failing: AtomicBool::new(failing),
            proved: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
        })
    }
}

impl Backend for Flaky {
    fn name(&self) -> String {
        self.name.into()
    }
    fn prove(&self, srs: &Srs, inputs: &[ProofInput<'_>]) -> Result<Vec<Proof>, ProveError> {
        if self.failing.load(Ordering::SeqCst) {
            self.failed.fetch_add(1, Ordering::SeqCst);
            return Err(ProveError::Device {
                device: self.name.into(),
                message: "injected fault: uncorrectable ECC error".into(),
            });
        }
        let r = self.inner.prove(srs, inputs);
        self.proved.fetch_add(1, Ordering::SeqCst);
        r
    }
}

/// The CPU backend named as GPU `cuda:<ordinal>`, whose NVML readings are scripted: each
/// prove call publishes the next reading of the script as the device's latest sample, as
/// the GPU sampler would while the kernels run.
struct ScriptedGpu {
    inner: CpuBackend,
    ordinal: u64,
    readings: Mutex<Vec<(u64, u64, u64)>>,
    proved: AtomicUsize,
}

impl ScriptedGpu {
    /// `readings`: (uncorrectable ECC errors, fault Xids, latest Xid), one per prove call.
    fn new(ordinal: u64, readings: &[(u64, u64, u64)]) -> Arc<Self> {
        let mut readings = readings.to_vec();
        readings.reverse();
        Arc::new(Self {
            inner: CpuBackend::new(Some(1)).unwrap(),
            ordinal,
            readings: Mutex::new(readings),
            proved: AtomicUsize::new(0),
        })
    }
}

impl Backend for ScriptedGpu {
    fn name(&self) -> String {
        format!("cuda:{} scripted GPU", self.ordinal)
    }
    fn prove(&self, srs: &Srs, inputs: &[ProofInput<'_>]) -> Result<Vec<Proof>, ProveError> {
        let r = self.inner.prove(srs, inputs);
        if let Some((ecc, xids, last)) = self.readings.lock().unwrap().pop() {
            gpu_sampler::publish(GpuSample {
                device: self.ordinal,
                ecc_uncorrected: ecc,
                fault_xids: xids,
                last_xid: last,
                ..GpuSample::default()
            });
        }
        self.proved.fetch_add(1, Ordering::SeqCst);
        r
    }
}

/// Submits one-partition jobs one at a time until `gpu` has proved `n` of them; every
/// job completes.
fn until_proved(e: &Engine, gpu: &ScriptedGpu, n: usize, tag: &str) {
    let probe = Arc::new(Probe::default());
    let mut i = 0;
    while gpu.proved.load(Ordering::SeqCst) < n {
        assert!(i < 60, "{tag}: the GPU never proved {n}");
        let id = format!("{tag}{i}");
        e.submit(
            key(&id),
            Priority::Normal,
            Arc::new(ChainJob::new(&id, 1, &probe)),
        )
        .unwrap();
        assert!(completed(e, &id), "{id} completes");
        i += 1;
    }
}

fn one_worker(quarantine_after: u32, policies: Vec<DevicePolicy>) -> EngineConfig {
    EngineConfig {
        gpu_workers_per_device: 1,
        quarantine_after_failures: quarantine_after,
        device_policies: policies,
        ..config(2, true)
    }
}

/// A chain job of `rounds` rounds (its own circuit id).
fn chain(name: &str, partitions: usize, probe: &Arc<Probe>, rounds: usize) -> ChainJob {
    ChainJob {
        rounds,
        ..ChainJob::new(name, partitions, probe)
    }
}

/// Submits `count` chain jobs of `partitions` partitions (ids `{tag}{k}`), one at a time,
/// each completing before the next.
fn one_by_one(e: &Engine, probe: &Arc<Probe>, tag: &str, count: usize, partitions: usize) {
    for k in 0..count {
        let id = format!("{tag}{k}");
        e.submit(
            key(&id),
            Priority::Normal,
            Arc::new(ChainJob::new(&id, partitions, probe)),
        )
        .unwrap();
        assert!(completed(e, &id), "{id} completes");
    }
}

fn completed(e: &Engine, id: &str) -> bool {
    matches!(
        e.wait(id, WAIT).unwrap().unwrap().outcome,
        JobOutcome::Completed(_)
    )
}

#[test]
fn a_failing_device_is_quarantined_its_jobs_complete_elsewhere_and_it_comes_back() {
    let bad = Flaky::new("dev0", true);
    let good = Flaky::new("dev1", false);
    let e = Engine::start(
        one_worker(3, vec![]),
        vec![bad.clone(), good.clone()],
        loads(),
    )
    .unwrap();
    let probe = Arc::new(Probe::default());
    // One partition each, one at a time: every job's first attempt that lands on dev0
    // fails there and is retried on dev1.
    let mut i = 0;
    while bad.failed.load(Ordering::SeqCst) < 3 {
        assert!(i < 40, "dev0 never got three jobs");
        let id = format!("j{i}");
        e.submit(
            key(&id),
            Priority::Normal,
            Arc::new(ChainJob::new(&id, 1, &probe)),
        )
        .unwrap();
        assert!(completed(&e, &id), "{id} completes on the other device");
        i += 1;
    }
    let st = e.status();
    let dev0 = &st.devices[0];
    assert!(
        dev0.health
            .quarantined
            .as_deref()
            .is_some_and(|w| w.contains("3 failed proofs in a row") && w.contains("ECC")),
        "{:?}",
        dev0.health
    );
    assert_eq!((dev0.health.failures, dev0.health.quarantines), (3, 1));
    assert!(st.devices[1].health.quarantined.is_none());
    assert_eq!(e.usable_devices(), 1);
    assert_eq!(st.failed, 0, "no job failed");
    let m = e.metrics_text();
    assert!(
        m.contains("filprove_device_healthy{device=\"dev0\"} 0"),
        "{m}"
    );
    assert!(
        m.contains("filprove_device_healthy{device=\"dev1\"} 1"),
        "{m}"
    );
    assert!(
        m.contains("filprove_device_failures_total{device=\"dev0\"} 3"),
        "{m}"
    );
    assert!(
        m.contains("filprove_device_quarantines_total{device=\"dev0\"} 1"),
        "{m}"
    );

    // Out of rotation: everything runs on dev1, dev0 is not asked again.
    let failed_before = bad.failed.load(Ordering::SeqCst);
    for k in 0..4 {
        let id = format!("after{k}");
        e.submit(
            key(&id),
            Priority::Normal,
            Arc::new(ChainJob::new(&id, 2, &probe)),
        )
        .unwrap();
    }
    for k in 0..4 {
        assert!(completed(&e, &format!("after{k}")));
    }
    assert_eq!(bad.failed.load(Ordering::SeqCst), failed_before);
    assert_eq!(bad.proved.load(Ordering::SeqCst), 0);

    // The device is repaired and brought back: it proves again.
    bad.failing.store(false, Ordering::SeqCst);
    assert_eq!(e.restore_device(0), Ok(true));
    assert_eq!(e.restore_device(0), Ok(false), "already back");
    assert_eq!(e.restore_device(7), Err(EngineError::UnknownDevice(7)));
    assert_eq!(e.usable_devices(), 2);
    assert!(e.status().devices[0].health.quarantined.is_none());
    assert!(e
        .metrics_text()
        .contains("filprove_device_healthy{device=\"dev0\"} 1"));
    // Both devices' workers take work: keep two jobs in flight until dev0 proved one.
    let mut k = 0;
    while bad.proved.load(Ordering::SeqCst) == 0 {
        assert!(k < 40, "dev0 never proved after it came back");
        let ids = [format!("back{k}a"), format!("back{k}b")];
        for id in &ids {
            e.submit(
                key(id),
                Priority::Normal,
                Arc::new(ChainJob::new(id, 2, &probe)),
            )
            .unwrap();
        }
        for id in &ids {
            assert!(completed(&e, id));
        }
        k += 1;
    }
}

#[test]
fn an_operator_quarantine_moves_work_and_the_last_device_may_go_too() {
    let d0 = Flaky::new("dev0", false);
    let d1 = Flaky::new("dev1", false);
    let e = Engine::start(one_worker(3, vec![]), vec![d0.clone(), d1.clone()], loads()).unwrap();
    assert_eq!(e.quarantine_device(1, "operator: maintenance"), Ok(true));
    assert_eq!(e.quarantine_device(1, "again"), Ok(false));
    let probe = Arc::new(Probe::default());
    one_by_one(&e, &probe, "m", 3, 2);
    assert_eq!(d1.proved.load(Ordering::SeqCst), 0);
    assert_eq!(d0.proved.load(Ordering::SeqCst), 6);
    assert_eq!(
        e.status().devices[1].health.quarantined.as_deref(),
        Some("operator: maintenance")
    );
    // With no device in rotation, a job waits (queued) until one comes back.
    assert_eq!(e.quarantine_device(0, "operator"), Ok(true));
    assert_eq!(e.usable_devices(), 0);
    e.submit(
        key("waits"),
        Priority::Normal,
        Arc::new(ChainJob::new("waits", 1, &probe)),
    )
    .unwrap();
    wait_until("the partition is synthesized", || {
        e.status().prove_waiting == 1
    });
    assert_eq!(
        e.wait("waits", Some(Duration::from_millis(200))).unwrap(),
        None
    );
    assert_eq!(e.restore_device(1), Ok(true));
    assert!(completed(&e, "waits"));
    assert_eq!(d1.proved.load(Ordering::SeqCst), 1);
}

#[test]
fn a_post_runs_on_the_reserved_device_while_porep_holds_the_other() {
    // dev0 takes any work; its prove calls wait for the test's gate. dev1 is reserved for
    // HIGH and CRITICAL work.
    let busy = Arc::new(Gated::new());
    let post = Flaky::new("post", false);
    let policies = vec![
        DevicePolicy::default(),
        DevicePolicy {
            urgent_only: true,
            circuits: vec![],
        },
    ];
    let e = Engine::start(
        one_worker(3, policies),
        vec![busy.clone() as Arc<dyn Backend>, post.clone()],
        loads(),
    )
    .unwrap();
    let probe = Arc::new(Probe::default());
    for k in 0..2 {
        let id = format!("porep{k}");
        e.submit(
            key(&id),
            Priority::Normal,
            Arc::new(ChainJob::new(&id, 2, &probe)),
        )
        .unwrap();
    }
    wait_until("dev0 holds a PoRep partition", || {
        busy.stages.load(Ordering::SeqCst) >= 1
    });
    // The PoRep work is all queued on dev0 (none on the reserved device), which proves
    // nothing until the gate opens: the PoSt completes meanwhile.
    e.submit(
        key("winning"),
        Priority::Critical,
        Arc::new(ChainJob::new("winning", 1, &probe).kind("winning-post")),
    )
    .unwrap();
    assert!(completed(&e, "winning"));
    assert_eq!(post.proved.load(Ordering::SeqCst), 1);
    assert_eq!(
        busy.finished.load(Ordering::SeqCst),
        0,
        "dev0 is still held"
    );
    assert!(!e.status().queues.is_empty(), "PoRep still unfinished");
    busy.open(usize::MAX);
    assert!(completed(&e, "porep0") && completed(&e, "porep1"));
    assert_eq!(busy.finished.load(Ordering::SeqCst), 4);
    assert_eq!(post.proved.load(Ordering::SeqCst), 1, "no PoRep on dev1");
    let st = e.status();
    assert!(st.devices[1].policy.urgent_only && !st.devices[0].policy.urgent_only);
}

#[test]
fn circuit_lists_keep_each_circuit_on_its_devices() {
    let d0 = Flaky::new("dev0", false);
    let d1 = Flaky::new("dev1", false);
    let policies = vec![
        DevicePolicy {
            urgent_only: false,
            circuits: vec![circuit_id(4)],
        },
        DevicePolicy {
            urgent_only: false,
            circuits: vec![circuit_id(8)],
        },
    ];
    let e = Engine::start(
        one_worker(3, policies),
        vec![d0.clone(), d1.clone()],
        loads(),
    )
    .unwrap();
    let probe = Arc::new(Probe::default());
    for k in 0..3 {
        let small = format!("small{k}");
        let large = format!("large{k}");
        e.submit(
            key(&small),
            Priority::Normal,
            Arc::new(chain(&small, 2, &probe, 4)),
        )
        .unwrap();
        e.submit(
            key(&large),
            Priority::Normal,
            Arc::new(chain(&large, 1, &probe, 8)),
        )
        .unwrap();
    }
    for k in 0..3 {
        assert!(completed(&e, &format!("small{k}")));
        assert!(completed(&e, &format!("large{k}")));
    }
    assert_eq!(d0.proved.load(Ordering::SeqCst), 6, "the 4-round chains");
    assert_eq!(d1.proved.load(Ordering::SeqCst), 3, "the 8-round chains");
    // A circuit no device proves is refused at submission, with a typed error.
    let err = e
        .submit(
            key("nowhere"),
            Priority::Normal,
            Arc::new(chain("nowhere", 1, &probe, 5)),
        )
        .unwrap_err();
    assert_eq!(err.code(), "no_device_for_job");
}

#[test]
fn backends_with_one_name_get_their_position_in_it() {
    let cpu = || Arc::new(CpuBackend::new(Some(1)).unwrap()) as Arc<dyn Backend>;
    let e = Engine::start(one_worker(3, vec![]), vec![cpu(), cpu()], loads()).unwrap();
    let names: Vec<String> = e.status().devices.into_iter().map(|d| d.name).collect();
    assert_eq!(names, ["cpu:0", "cpu:1"]);
    let err = Engine::start(
        one_worker(3, vec![DevicePolicy::default(); 3]),
        vec![cpu(), cpu()],
        loads(),
    )
    .err()
    .unwrap();
    assert_eq!(err.code(), "internal");
}

#[test]
fn a_gpu_reporting_a_fault_xid_leaves_rotation_after_that_proof() {
    // Xid 13 (raised by an application) during the first proof, Xid 79 (fallen off the
    // bus) during the second.
    let gpu = ScriptedGpu::new(7, &[(0, 0, 13), (0, 1, 79)]);
    let other = Flaky::new("dev1", false);
    let e = Engine::start(
        one_worker(3, vec![]),
        vec![gpu.clone() as Arc<dyn Backend>, other.clone()],
        loads(),
    )
    .unwrap();
    until_proved(&e, &gpu, 1, "x");
    assert!(
        e.status().devices[0].health.quarantined.is_none(),
        "Xid 13 is not the device's"
    );
    until_proved(&e, &gpu, 2, "y");
    let health = e.status().devices[0].health.clone();
    assert!(
        health
            .quarantined
            .as_deref()
            .is_some_and(|w| w.contains("1 Xid event(s) of a device fault") && w.contains("79")),
        "{health:?}"
    );
    assert_eq!(e.usable_devices(), 1);
    let m = e.metrics_text();
    assert!(
        m.contains("filprove_device_quarantines_total{device=\"cuda:7 scripted GPU\"} 1"),
        "{m}"
    );
    // Its work goes to the other device; an operator brings it back.
    let before = gpu.proved.load(Ordering::SeqCst);
    one_by_one(&e, &Arc::new(Probe::default()), "z", 3, 2);
    assert_eq!(gpu.proved.load(Ordering::SeqCst), before);
    assert_eq!(e.restore_device(0), Ok(true));
    assert_eq!(e.usable_devices(), 2);
}

#[test]
fn new_uncorrectable_ecc_errors_take_the_last_gpu_out_of_rotation() {
    // Five errors from before the engine started (NVML counts since the driver loaded),
    // then one more during the second proof. The GPU is the only device.
    let gpu = ScriptedGpu::new(8, &[(5, 0, 0), (5, 0, 0), (6, 0, 0)]);
    let e = Engine::start(
        one_worker(3, vec![]),
        vec![gpu.clone() as Arc<dyn Backend>],
        loads(),
    )
    .unwrap();
    until_proved(&e, &gpu, 2, "e");
    assert_eq!(e.usable_devices(), 1, "the errors from before do not count");
    until_proved(&e, &gpu, 3, "f");
    let health = e.status().devices[0].health.clone();
    assert!(
        health
            .quarantined
            .as_deref()
            .is_some_and(|w| w.contains("1 uncorrectable ECC error(s)")),
        "{health:?}"
    );
    assert_eq!(e.usable_devices(), 0);
}
