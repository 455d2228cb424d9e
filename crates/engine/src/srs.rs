//! SRS (parameter) residency: each circuit's parameter file is loaded once, kept in memory
//! while used, and evicted least-recently-used first when the resident bytes exceed the
//! budget.
//!
//! Tiers, as reported over the API:
//! - **hot**: resident and in use by a partition, or pinned by a preload;
//! - **warm**: resident and idle (the first to go under pressure);
//! - **cold**: known (loaded before) but not in memory.
//!
//! A set is never loaded twice at once: an explicit eviction of a set in use takes effect
//! when its last user finishes (a new user meanwhile shares it), and a set whose proof
//! failed verification ([`SrsManager::invalidate`]) is re-read from its file only once the
//! users of the suspect copy have finished.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use filprove_groth16::{G1Affine, G2Affine, Srs};

use crate::EngineError;

/// Loads one circuit's parameters by circuit id (e.g. via `Srs::read_file`).
pub type SrsLoader = Arc<dyn Fn(&str) -> Result<Srs, EngineError> + Send + Sync>;

/// Residency tier of a circuit's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrsTier {
    /// Resident and in use, or pinned by a preload.
    Hot,
    /// Resident and idle.
    Warm,
    /// Not resident.
    Cold,
}

/// One circuit's residency as reported by [`SrsManager::status`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SrsEntryStatus {
    /// Circuit id.
    pub circuit_id: String,
    /// Tier.
    pub tier: SrsTier,
    /// Bytes in memory (last known size when cold).
    pub size_bytes: u64,
    /// Partitions using it now.
    pub ref_count: u32,
}

/// Result of [`SrsManager::preload`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PreloadOutcome {
    /// It was resident already.
    pub already_loaded: bool,
    /// Time this call spent loading (or waiting for another loader).
    pub load_time: Duration,
}

/// Result of [`SrsManager::evict`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvictOutcome {
    /// It was resident.
    pub was_loaded: bool,
    /// Bytes released (in-flight users keep their copy until they finish).
    pub freed_bytes: u64,
}

enum Residency {
    Loading,
    Resident(Arc<Srs>),
    Cold,
}

struct Entry {
    residency: Residency,
    size_bytes: u64,
    refs: u32,
    pinned: bool,
    last_used: Instant,
    /// Evicted while in use: dropped when the last user finishes.
    evict_when_idle: bool,
    /// Suspect (a proof made with it failed verification): given to no new user; re-read
    /// from the file once the current users finish.
    stale: bool,
}

impl Entry {
    /// Drops the resident copy (its users keep theirs until they finish).
    fn make_cold(&mut self) {
        self.residency = Residency::Cold;
        self.evict_when_idle = false;
        self.stale = false;
    }
}

/// The residency manager. Share it as `Arc<SrsManager>`.
pub struct SrsManager {
    loader: SrsLoader,
    budget_bytes: u64,
    entries: Mutex<HashMap<String, Entry>>,
    changed: Condvar,
}

/// A use of one circuit's parameters; the ref count drops when it does.
pub struct SrsLease {
    manager: Arc<SrsManager>,
    circuit_id: String,
    srs: Arc<Srs>,
}

impl SrsLease {
    /// The parameters.
    pub fn srs(&self) -> &Srs {
        &self.srs
    }
}

impl Drop for SrsLease {
    fn drop(&mut self) {
        let mut entries = self.manager.lock();
        if let Some(e) = entries.get_mut(&self.circuit_id) {
            e.refs = e.refs.saturating_sub(1);
            e.last_used = Instant::now();
            if e.refs == 0 && (e.evict_when_idle || e.stale) {
                tracing::info!(circuit_id = %self.circuit_id, stale = e.stale, "parameters dropped: their last user finished");
                e.make_cold();
            }
        }
        self.manager.enforce_budget(&mut entries, None);
        // A caller may be waiting for a suspect set's users to finish.
        self.manager.changed.notify_all();
    }
}

/// In-memory size of a parameter set.
pub fn srs_size_bytes(srs: &Srs) -> u64 {
    let g1 = std::mem::size_of::<G1Affine>() as u64;
    let g2 = std::mem::size_of::<G2Affine>() as u64;
    g1 * (srs.h.len() + srs.l.len() + srs.a.len() + srs.b_g1.len() + srs.vk.ic.len()) as u64
        + g2 * srs.b_g2.len() as u64
}

impl SrsManager {
    /// A manager that loads with `loader` and keeps at most `budget_bytes` resident
    /// (beyond that only while in use or pinned).
    pub fn new(loader: SrsLoader, budget_bytes: u64) -> Arc<Self> {
        Arc::new(Self {
            loader,
            budget_bytes,
            entries: Mutex::new(HashMap::new()),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The byte budget.
    pub fn budget_bytes(&self) -> u64 {
        self.budget_bytes
    }

    /// Bytes resident now.
    pub fn resident_bytes(&self) -> u64 {
        Self::resident_of(&self.lock())
    }

    fn resident_of(entries: &HashMap<String, Entry>) -> u64 {
        entries
            .values()
            .filter(|e| matches!(e.residency, Residency::Resident(_)))
            .map(|e| e.size_bytes)
            .sum()
    }

    /// Takes a lease on `circuit_id`'s parameters, loading them first if needed (once: a
    /// concurrent caller waits for the loading one). Returns the lease and the time spent
    /// loading or waiting.
    pub fn acquire(
        self: &Arc<Self>,
        circuit_id: &str,
    ) -> Result<(SrsLease, Duration), EngineError> {
        let start = Instant::now();
        let srs = self.get_or_load(circuit_id, true)?;
        Ok((
            SrsLease {
                manager: self.clone(),
                circuit_id: circuit_id.to_string(),
                srs,
            },
            start.elapsed(),
        ))
    }

    /// Resident parameters with a ref taken (when `take_ref`), loading if needed.
    fn get_or_load(&self, circuit_id: &str, take_ref: bool) -> Result<Arc<Srs>, EngineError> {
        let mut entries = self.lock();
        loop {
            let entry = entries
                .entry(circuit_id.to_string())
                .or_insert_with(|| Entry {
                    residency: Residency::Cold,
                    size_bytes: 0,
                    refs: 0,
                    pinned: false,
                    last_used: Instant::now(),
                    evict_when_idle: false,
                    stale: false,
                });
            if entry.stale && matches!(entry.residency, Residency::Resident(_)) {
                if entry.refs > 0 {
                    // Not the suspect copy, and not a second copy beside it: wait.
                    entries = self
                        .changed
                        .wait(entries)
                        .unwrap_or_else(|p| p.into_inner());
                    continue;
                }
                entry.make_cold();
            }
            match &entry.residency {
                Residency::Resident(srs) => {
                    let srs = srs.clone();
                    if take_ref {
                        entry.refs += 1;
                    }
                    entry.last_used = Instant::now();
                    return Ok(srs);
                }
                Residency::Loading => {
                    entries = self
                        .changed
                        .wait(entries)
                        .unwrap_or_else(|p| p.into_inner());
                }
                Residency::Cold => {
                    entry.residency = Residency::Loading;
                    drop(entries);
                    let t = Instant::now();
                    let loaded = (self.loader)(circuit_id);
                    entries = self.lock();
                    let entry = entries.get_mut(circuit_id).expect("loading entries stay");
                    match loaded {
                        Ok(srs) => {
                            let srs = Arc::new(srs);
                            entry.size_bytes = srs_size_bytes(&srs);
                            entry.residency = Residency::Resident(srs.clone());
                            entry.last_used = Instant::now();
                            if take_ref {
                                entry.refs += 1;
                            }
                            tracing::info!(
                                circuit_id,
                                bytes = entry.size_bytes,
                                ms = t.elapsed().as_millis() as u64,
                                "parameters loaded"
                            );
                            self.enforce_budget(&mut entries, Some(circuit_id));
                            self.changed.notify_all();
                            return Ok(srs);
                        }
                        Err(e) => {
                            entry.residency = Residency::Cold;
                            self.changed.notify_all();
                            tracing::error!(circuit_id, error = %e, "loading parameters failed");
                            return Err(match e {
                                EngineError::Srs { .. } | EngineError::UnknownCircuit(_) => e,
                                other => EngineError::Srs {
                                    circuit_id: circuit_id.to_string(),
                                    code: other.code().to_string(),
                                    message: other.to_string(),
                                },
                            });
                        }
                    }
                }
            }
        }
    }

    /// Evicts idle, unpinned entries, least recently used first, until the resident bytes
    /// fit the budget. `keep` is never evicted (it was just loaded).
    fn enforce_budget(&self, entries: &mut HashMap<String, Entry>, keep: Option<&str>) {
        while Self::resident_of(entries) > self.budget_bytes {
            let victim = entries
                .iter()
                .filter(|(id, e)| {
                    matches!(e.residency, Residency::Resident(_))
                        && e.refs == 0
                        && !e.pinned
                        && Some(id.as_str()) != keep
                })
                .min_by_key(|(_, e)| e.last_used)
                .map(|(id, _)| id.clone());
            let Some(victim) = victim else {
                tracing::warn!(
                    resident = Self::resident_of(entries),
                    budget = self.budget_bytes,
                    "parameters over budget, but every resident set is in use or pinned"
                );
                return;
            };
            let e = entries.get_mut(&victim).expect("victim exists");
            e.residency = Residency::Cold;
            tracing::info!(circuit_id = %victim, bytes = e.size_bytes, "parameters evicted (budget)");
        }
    }

    /// Marks `circuit_id`'s resident parameters as suspect: a proof made with them failed
    /// verification, and a corrupt read (or a file replaced since) is one cause the
    /// retry must not inherit. No new user gets this copy; once its current users finish it
    /// is dropped and the next user re-reads the file. Returns whether a copy was resident.
    pub fn invalidate(&self, circuit_id: &str) -> bool {
        let mut entries = self.lock();
        match entries.get_mut(circuit_id) {
            Some(e) if matches!(e.residency, Residency::Resident(_)) => {
                tracing::warn!(
                    circuit_id,
                    in_use = e.refs,
                    "parameters invalidated: they will be re-read"
                );
                if e.refs == 0 {
                    e.make_cold();
                } else {
                    e.stale = true;
                }
                true
            }
            _ => false,
        }
    }

    /// Loads `circuit_id` and pins it (hot until evicted explicitly).
    pub fn preload(&self, circuit_id: &str) -> Result<PreloadOutcome, EngineError> {
        let start = Instant::now();
        let already_loaded = matches!(
            self.lock().get(circuit_id).map(|e| &e.residency),
            Some(Residency::Resident(_))
        );
        self.get_or_load(circuit_id, false)?;
        if let Some(e) = self.lock().get_mut(circuit_id) {
            e.pinned = true;
            e.evict_when_idle = false;
        }
        Ok(PreloadOutcome {
            already_loaded,
            load_time: start.elapsed(),
        })
    }

    /// Starts loading `circuit_id` in the background if it is not resident (so the load
    /// overlaps synthesis of the job that needs it).
    pub fn prefetch(self: &Arc<Self>, circuit_id: &str) {
        if matches!(
            self.lock().get(circuit_id).map(|e| &e.residency),
            Some(Residency::Resident(_) | Residency::Loading)
        ) {
            return;
        }
        let me = self.clone();
        let id = circuit_id.to_string();
        let _ = std::thread::Builder::new()
            .name("srs-prefetch".into())
            .spawn(move || {
                let _ = me.get_or_load(&id, false);
            });
    }

    /// The resident copy of `circuit_id`, if any (no ref taken).
    pub fn resident(&self, circuit_id: &str) -> Option<Arc<Srs>> {
        match &self.lock().get(circuit_id)?.residency {
            Residency::Resident(srs) => Some(srs.clone()),
            Residency::Loading | Residency::Cold => None,
        }
    }

    /// Releases the host copy of `circuit_id`'s proving sections when `hold` (asked with
    /// the full set and its verifying-key-only twin) says every device holds them: the
    /// entry then keeps the verifying key alone, and the sections' memory goes when the
    /// last user of the full copy finishes. Returns the bytes released (0 when nothing
    /// changed: not resident, already released, suspect, or not held everywhere).
    pub fn release_host_sections(
        &self,
        circuit_id: &str,
        hold: impl Fn(&Srs, &Srs) -> bool,
    ) -> u64 {
        let mut entries = self.lock();
        let Some(e) = entries.get_mut(circuit_id) else {
            return 0;
        };
        let Residency::Resident(full) = &e.residency else {
            return 0;
        };
        if e.stale || !full.has_sections() {
            return 0;
        }
        let vk_only = full.verifying_key_only();
        if !hold(full, &vk_only) {
            return 0;
        }
        let released = e.size_bytes.saturating_sub(srs_size_bytes(&vk_only));
        e.size_bytes = srs_size_bytes(&vk_only);
        e.residency = Residency::Resident(Arc::new(vk_only));
        tracing::info!(
            circuit_id,
            released_bytes = released,
            in_use = e.refs,
            "parameters' proving sections released from host memory: every device holds them"
        );
        released
    }

    /// Drops `circuit_id` from memory and unpins it. A set in use stays until its last user
    /// finishes (a new user meanwhile shares it rather than loading a second copy); the
    /// memory goes then.
    pub fn evict(&self, circuit_id: &str) -> EvictOutcome {
        let mut entries = self.lock();
        match entries.get_mut(circuit_id) {
            Some(e) if matches!(e.residency, Residency::Resident(_)) => {
                if e.refs == 0 {
                    e.make_cold();
                } else {
                    e.evict_when_idle = true;
                }
                e.pinned = false;
                tracing::info!(
                    circuit_id,
                    bytes = e.size_bytes,
                    in_use = e.refs,
                    "parameters evicted (request)"
                );
                EvictOutcome {
                    was_loaded: true,
                    freed_bytes: e.size_bytes,
                }
            }
            Some(e) => {
                e.pinned = false;
                EvictOutcome {
                    was_loaded: false,
                    freed_bytes: 0,
                }
            }
            None => EvictOutcome {
                was_loaded: false,
                freed_bytes: 0,
            },
        }
    }

    /// Every known circuit's residency, sorted by id.
    pub fn status(&self) -> Vec<SrsEntryStatus> {
        let entries = self.lock();
        let mut out: Vec<_> = entries
            .iter()
            .map(|(id, e)| SrsEntryStatus {
                circuit_id: id.clone(),
                tier: match e.residency {
                    Residency::Resident(_) if e.refs > 0 || e.pinned => SrsTier::Hot,
                    Residency::Resident(_) => SrsTier::Warm,
                    Residency::Loading | Residency::Cold => SrsTier::Cold,
                },
                size_bytes: e.size_bytes,
                ref_count: e.refs,
            })
            .collect();
        out.sort_by(|a, b| a.circuit_id.cmp(&b.circuit_id));
        out
    }
}
