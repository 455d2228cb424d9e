//! Parameter residency: load once, tiers, preload pinning, LRU eviction under the budget,
//! explicit eviction, unknown circuits.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use filprove_engine::srs::{srs_size_bytes, SrsManager};
use filprove_engine::SrsTier;

fn tier(m: &SrsManager, id: &str) -> Option<(SrsTier, u32)> {
    m.status()
        .into_iter()
        .find(|s| s.circuit_id == id)
        .map(|s| (s.tier, s.ref_count))
}

#[test]
fn concurrent_users_load_a_file_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let m = SrsManager::new(loader(calls.clone(), Duration::from_millis(200)), 1 << 30);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let m = m.clone();
            std::thread::spawn(move || {
                let (lease, _) = m.acquire("chain-8").unwrap();
                assert_eq!(lease.srs().vk.ic.len(), 2);
                std::thread::sleep(Duration::from_millis(50));
            })
        })
        .collect();
    wait_until("the load to start", || tier(&m, "chain-8").is_some());
    assert_eq!(
        tier(&m, "chain-8").map(|t| t.0),
        Some(SrsTier::Cold),
        "loading shows as cold"
    );
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(tier(&m, "chain-8"), Some((SrsTier::Warm, 0)));
    let (_lease, waited) = m.acquire("chain-8").unwrap();
    assert!(waited < Duration::from_millis(100));
    assert_eq!(tier(&m, "chain-8"), Some((SrsTier::Hot, 1)));
    assert_eq!(m.resident_bytes(), srs_size_bytes(&srs(8)));
}

#[test]
fn idle_sets_are_evicted_lru_first_and_preloads_stay() {
    let calls = Arc::new(AtomicUsize::new(0));
    let one = srs_size_bytes(&srs(8))
        .max(srs_size_bytes(&srs(9)))
        .max(srs_size_bytes(&srs(10)));
    // Room for two sets.
    let m = SrsManager::new(loader(calls.clone(), Duration::ZERO), 2 * one + 1);
    drop(m.acquire("chain-8").unwrap());
    drop(m.acquire("chain-9").unwrap());
    drop(m.acquire("chain-8").unwrap()); // chain-9 is now the least recently used
    drop(m.acquire("chain-10").unwrap());
    assert_eq!(tier(&m, "chain-9").unwrap().0, SrsTier::Cold);
    assert_eq!(tier(&m, "chain-8").unwrap().0, SrsTier::Warm);
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    // A preloaded set is pinned: hot, never evicted for budget.
    let p = m.preload("chain-9").unwrap();
    assert!(!p.already_loaded);
    assert_eq!(tier(&m, "chain-9").unwrap().0, SrsTier::Hot);
    assert!(m.preload("chain-9").unwrap().already_loaded);
    drop(m.acquire("chain-11").unwrap());
    assert_eq!(tier(&m, "chain-9").unwrap().0, SrsTier::Hot);
    assert!(m.resident_bytes() <= 2 * one + 1);

    // Explicit eviction.
    let ev = m.evict("chain-9");
    assert!(ev.was_loaded && ev.freed_bytes > 0);
    assert_eq!(tier(&m, "chain-9").unwrap().0, SrsTier::Cold);
    assert!(!m.evict("chain-9").was_loaded);
    assert!(!m.evict("never-seen").was_loaded);
}

#[test]
fn a_set_in_use_is_not_evicted_for_budget_and_unknown_ids_fail() {
    let calls = Arc::new(AtomicUsize::new(0));
    let m = SrsManager::new(loader(calls.clone(), Duration::ZERO), 1);
    let (lease, _) = m.acquire("chain-8").unwrap();
    let (lease2, _) = m.acquire("chain-9").unwrap();
    assert_eq!(tier(&m, "chain-8"), Some((SrsTier::Hot, 1)));
    drop(lease);
    // Over budget and idle: gone as soon as released.
    assert_eq!(tier(&m, "chain-8").unwrap().0, SrsTier::Cold);
    drop(lease2);
    let err = m.acquire("nonsense").err().unwrap();
    assert_eq!(err.code(), "unknown_circuit");
}

/// An explicit eviction of a set in use takes effect when its last user finishes: a new
/// user meanwhile shares the resident copy instead of loading a second one.
#[test]
fn evicting_a_set_in_use_never_loads_a_second_copy() {
    let calls = Arc::new(AtomicUsize::new(0));
    let m = SrsManager::new(loader(calls.clone(), Duration::ZERO), 1 << 30);
    let one = srs_size_bytes(&srs(8));
    let (first, _) = m.acquire("chain-8").unwrap();
    let ev = m.evict("chain-8");
    assert!(ev.was_loaded && ev.freed_bytes == one);
    let (second, _) = m.acquire("chain-8").unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1, "a second copy was loaded");
    assert_eq!(m.resident_bytes(), one);
    assert_eq!(tier(&m, "chain-8"), Some((SrsTier::Hot, 2)));
    drop(first);
    assert_eq!(tier(&m, "chain-8"), Some((SrsTier::Hot, 1)));
    drop(second);
    // The eviction took effect with the last user.
    assert_eq!(tier(&m, "chain-8").unwrap().0, SrsTier::Cold);
    assert_eq!(m.resident_bytes(), 0);
    drop(m.acquire("chain-8").unwrap());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

/// A set whose proof failed verification is re-read from its file for the retry, and only
/// once the users of the suspect copy are done (never two copies at once).
#[test]
fn a_set_that_failed_verification_is_reread_after_its_users_finish() {
    let calls = Arc::new(AtomicUsize::new(0));
    let m = SrsManager::new(loader(calls.clone(), Duration::ZERO), 1 << 30);
    let (suspect, _) = m.acquire("chain-8").unwrap();
    assert!(m.invalidate("chain-8"));
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = {
        let m = m.clone();
        std::thread::spawn(move || {
            let (lease, _) = m.acquire("chain-8").unwrap();
            tx.send(()).unwrap();
            drop(lease);
        })
    };
    // The new user does not get the suspect copy, nor a second one beside it.
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    drop(suspect);
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the waiting user got the re-read set");
    waiter.join().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the file was read again");
    assert_eq!(m.resident_bytes(), srs_size_bytes(&srs(8)));
    // An idle suspect set is dropped at once; an unknown one was not resident.
    assert!(m.invalidate("chain-8"));
    assert_eq!(m.resident_bytes(), 0);
    assert!(!m.invalidate("chain-9"));
}

#[test]
fn host_sections_are_released_only_when_every_device_holds_them() {
    let calls = Arc::new(AtomicUsize::new(0));
    let m = SrsManager::new(loader(calls.clone(), Duration::ZERO), 1 << 30);
    let (in_flight, _) = m.acquire("chain-9").unwrap();
    let full_bytes = srs_size_bytes(in_flight.srs());

    // A device that does not hold the set: nothing changes.
    assert_eq!(m.release_host_sections("chain-9", |_, _| false), 0);
    assert!(m.resident("chain-9").unwrap().has_sections());
    assert_eq!(m.release_host_sections("never-seen", |_, _| true), 0);

    // Every device holds it: the entry keeps the verifying key alone.
    let released = m.release_host_sections("chain-9", |full, vk_only| {
        assert!(full.has_sections() && !vk_only.has_sections());
        assert_eq!(full.vk, vk_only.vk);
        true
    });
    let kept = m.resident("chain-9").unwrap();
    assert!(!kept.has_sections());
    assert_eq!(released, full_bytes - srs_size_bytes(&kept));
    assert!(released > 0);
    assert_eq!(m.resident_bytes(), srs_size_bytes(&kept));
    // The user that had the full copy keeps it; a new user gets the verifying key alone.
    assert!(in_flight.srs().has_sections());
    assert!(!m.acquire("chain-9").unwrap().0.srs().has_sections());
    // Released once.
    assert_eq!(m.release_host_sections("chain-9", |_, _| true), 0);
    drop(in_flight);

    // A device that lost the set: invalidation reads the file again, sections included.
    assert!(m.invalidate("chain-9"));
    let (again, _) = m.acquire("chain-9").unwrap();
    assert!(again.srs().has_sections());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

/// A backend that keeps its own copy of a parameter set (as a GPU does): the CPU backend
/// proving with the copy it loaded, counting loads and the proofs made without the host's
/// sections.
struct KeepsACopy {
    inner: filprove_groth16::cpu::CpuBackend,
    copy: std::sync::Mutex<Option<filprove_groth16::Srs>>,
    loads: AtomicUsize,
    from_copy: AtomicUsize,
}

impl filprove_groth16::Backend for KeepsACopy {
    fn name(&self) -> String {
        "keeps-a-copy".into()
    }
    fn prove(
        &self,
        srs: &filprove_groth16::Srs,
        inputs: &[filprove_groth16::ProofInput<'_>],
    ) -> Result<Vec<filprove_groth16::Proof>, filprove_groth16::ProveError> {
        if srs.has_sections() {
            return self.inner.prove(srs, inputs);
        }
        let copy = self.copy.lock().unwrap();
        let full = copy.as_ref().filter(|c| c.vk == srs.vk).ok_or(
            filprove_groth16::ProveError::ParametersOffHost {
                backend: self.name(),
            },
        )?;
        self.from_copy.fetch_add(1, Ordering::SeqCst);
        self.inner.prove(full, inputs)
    }
    fn load_parameters(
        &self,
        srs: &filprove_groth16::Srs,
    ) -> Result<bool, filprove_groth16::ProveError> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        *self.copy.lock().unwrap() = Some(srs.clone());
        Ok(true)
    }
    fn hold_parameters(&self, full: &filprove_groth16::Srs, _: &filprove_groth16::Srs) -> bool {
        self.copy
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|c| c.vk == full.vk)
    }
}

/// A preload copies the parameters onto every device that keeps its own copy and, once all
/// hold them, releases the host's proving sections at once (before any proof); proofs
/// then come from the devices' copies. A device without a copy of its own (the CPU) keeps
/// the host's sections in place.
#[test]
fn a_preload_loads_the_devices_and_releases_the_host_sections_before_any_proof() {
    let id = circuit_id(8);
    let keeper = Arc::new(KeepsACopy {
        inner: filprove_groth16::cpu::CpuBackend::new(Some(1)).unwrap(),
        copy: Default::default(),
        loads: AtomicUsize::new(0),
        from_copy: AtomicUsize::new(0),
    });
    let calls = Arc::new(AtomicUsize::new(0));
    let e = filprove_engine::Engine::start(
        config(1, false),
        vec![keeper.clone()],
        loader(calls.clone(), Duration::ZERO),
    )
    .unwrap();
    let full_bytes = srs_size_bytes(&srs(8));
    e.preload_parameters(&id).unwrap();
    assert_eq!(keeper.loads.load(Ordering::SeqCst), 1);
    let kept = e.srs().resident(&id).expect("still resident");
    assert!(!kept.has_sections(), "host sections released at preload");
    assert!(e.srs().resident_bytes() < full_bytes);
    // A proof now comes from the device's copy, and verifies.
    let probe = Arc::new(Probe::default());
    e.submit(
        key("after-preload"),
        filprove_engine::Priority::Normal,
        Arc::new(ChainJob::new("after-preload", 2, &probe)),
    )
    .unwrap();
    let done = e
        .wait("after-preload", Some(Duration::from_secs(120)))
        .unwrap()
        .unwrap();
    assert!(
        matches!(done.outcome, filprove_engine::JobOutcome::Completed(_)),
        "{:?}",
        done.outcome
    );
    assert_eq!(keeper.from_copy.load(Ordering::SeqCst), 2);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the file was read once");

    // The CPU backend keeps no copy: the host keeps the sections.
    let e = filprove_engine::Engine::start(config(1, false), cpu(), loader(calls, Duration::ZERO))
        .unwrap();
    e.preload_parameters(&id).unwrap();
    assert!(e.srs().resident(&id).unwrap().has_sections());
}
