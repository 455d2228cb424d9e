//! Callers waiting on jobs (`Prove`, `AwaitProof`), and what happens to a job when the
//! last of them goes away before it ends (the RPC was cancelled or its deadline passed):
//! a job that a `Prove` call created is cancelled when its kind is in
//! `server.cancel_abandoned` (by default the PoSt kinds: a late WinningPoSt is worthless,
//! while a PoRep is worth finishing for the caller's retry). A job created by
//! `SubmitProof` is never cancelled this way: its caller may come back for it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use filprove_engine::Engine;
use filprove_filecoin::ProofKind;

/// Waiting callers per job id.
pub struct Callers {
    engine: Arc<Engine>,
    cancel_abandoned: Vec<ProofKind>,
    jobs: Mutex<HashMap<String, Interest>>,
}

/// The callers of one job id.
#[derive(Default)]
struct Interest {
    waiting: usize,
    /// Set by the `Prove` call that created the job, when its kind is cancelled once
    /// abandoned.
    cancel_when_abandoned: bool,
}

impl Callers {
    /// Callers of `engine`'s jobs; jobs of the `cancel_abandoned` kinds are cancelled when
    /// abandoned.
    pub fn new(engine: Arc<Engine>, cancel_abandoned: Vec<ProofKind>) -> Arc<Self> {
        Arc::new(Self {
            engine,
            cancel_abandoned,
            jobs: Mutex::new(HashMap::new()),
        })
    }

    /// Counts a caller waiting on `job_id` until the returned guard drops. Enter before
    /// submitting under a known id, so that a caller leaving meanwhile does not take the
    /// job with it.
    pub fn enter(self: &Arc<Self>, job_id: &str) -> Waiting {
        let mut jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        jobs.entry(job_id.to_string()).or_default().waiting += 1;
        Waiting {
            callers: self.clone(),
            job_id: job_id.to_string(),
            answered: false,
        }
    }

    fn leave(&self, job_id: &str, answered: bool) {
        let abandoned = {
            let mut jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
            let Some(interest) = jobs.get_mut(job_id) else {
                return;
            };
            interest.waiting = interest.waiting.saturating_sub(1);
            if interest.waiting > 0 {
                return;
            }
            let cancel = interest.cancel_when_abandoned && !answered;
            jobs.remove(job_id);
            cancel
        };
        if abandoned {
            match self.engine.cancel(job_id) {
                Ok(was_running) => tracing::warn!(
                    job = %job_id, was_running,
                    "the last caller waiting on the job went away: job cancelled"
                ),
                Err(e) => tracing::debug!(job = %job_id, error = %e, "abandoned job not found"),
            }
        }
    }
}

/// One caller waiting on a job; leaving (dropping it) unanswered may cancel the job.
pub struct Waiting {
    callers: Arc<Callers>,
    job_id: String,
    answered: bool,
}

impl Waiting {
    /// This caller's `Prove` created the job, of `kind`: it is cancelled once every caller
    /// has gone unanswered when the kind is one of `server.cancel_abandoned`.
    pub fn created_job(&self, kind: Option<ProofKind>) {
        if kind.is_some_and(|k| self.callers.cancel_abandoned.contains(&k)) {
            let mut jobs = self.callers.jobs.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(interest) = jobs.get_mut(&self.job_id) {
                interest.cancel_when_abandoned = true;
            }
        }
    }

    /// The caller got its answer: leaving now cancels nothing.
    pub fn answered(mut self) {
        self.answered = true;
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.callers.leave(&self.job_id, self.answered);
    }
}
