//! Progress of long work (parameter generation, fixture making), reported to whoever
//! drives it. Libraries only count; the `filprove` binary draws bars with rate and ETA on a
//! terminal and nothing elsewhere.

/// What the units of a counted phase are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressUnit {
    /// Bytes.
    Bytes,
    /// Things of the given name, plural ("points", "proofs").
    Items(&'static str),
}

/// Receives progress: phases one after another, each counted or not. Called from worker
/// threads, so it must be `Sync`.
pub trait Progress: Sync {
    /// A phase starts (the previous one, if any, is over): `total` units of `unit` when the
    /// work is counted, `None` when it is not.
    fn phase(&self, name: &str, total: Option<u64>, unit: ProgressUnit);
    /// `n` more units of the current phase are done.
    fn advance(&self, n: u64);
    /// Whether anyone sees the reports. Work that would split itself only to report
    /// (parameter points made a piece at a time) runs whole when no one does.
    fn shown(&self) -> bool {
        true
    }
}

/// Reports to no one.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn phase(&self, _: &str, _: Option<u64>, _: ProgressUnit) {}
    fn advance(&self, _: u64) {}
    fn shown(&self) -> bool {
        false
    }
}

/// One phase as [`RecordedProgress`] kept it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedPhase {
    /// The phase's name.
    pub name: String,
    /// Its total, when counted.
    pub total: Option<u64>,
    /// What it counts.
    pub unit: ProgressUnit,
    /// The units advanced while it was the current phase.
    pub done: u64,
}

/// Keeps every report in memory: for tests, and for callers that summarise work after it.
#[derive(Debug, Default)]
pub struct RecordedProgress(std::sync::Mutex<Vec<RecordedPhase>>);

impl RecordedProgress {
    /// The phases reported so far, in order.
    pub fn phases(&self) -> Vec<RecordedPhase> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Progress for RecordedProgress {
    fn phase(&self, name: &str, total: Option<u64>, unit: ProgressUnit) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(RecordedPhase {
                name: name.to_string(),
                total,
                unit,
                done: 0,
            });
    }

    fn advance(&self, n: u64) {
        if let Some(p) = self.0.lock().unwrap_or_else(|e| e.into_inner()).last_mut() {
            p.done += n;
        }
    }
}
