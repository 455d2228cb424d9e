//! The journal's side of a job's life: an entry leaves the journal when its job ends, and
//! stays when shutdown cancelled the job; at start every entry is resumed, or recorded as
//! a failed job with the reason when it cannot be.

use std::sync::{Arc, Weak};

use filprove_engine::filecoin::FilecoinJob;
use filprove_engine::{Engine, EngineError, JobOutcome, JobReport, RequestKey};

use super::convert;
use super::journal::{Entry, Journal, Recovered};
use super::pb;

/// What happens to a job's journal entry when the job ends: removed when it completed,
/// failed or was cancelled by a caller; kept (to be resumed at the next start) when the
/// daemon's shutdown cancelled it.
pub(crate) struct Settle {
    engine: Weak<Engine>,
    journal: Option<Arc<Journal>>,
    entry: Option<Entry>,
}

impl Settle {
    pub fn new(engine: &Arc<Engine>, journal: Option<Arc<Journal>>, entry: Option<Entry>) -> Self {
        Self {
            engine: Arc::downgrade(engine),
            journal,
            entry,
        }
    }

    /// The job ended with `report`.
    pub fn job_ended(self, report: &JobReport) {
        let (Some(journal), Some(entry)) = (self.journal, self.entry) else {
            return;
        };
        let by_shutdown = matches!(report.outcome, JobOutcome::Cancelled)
            && self.engine.upgrade().is_none_or(|e| e.is_stopping());
        if by_shutdown {
            tracing::info!(
                job = %report.job_id, file = %entry.path().display(),
                "cancelled by shutdown; kept in the journal, resumed at the next start"
            );
        } else {
            journal.remove(entry);
        }
    }
}

/// Resumes `journal`'s entries on `engine` (oldest first); see
/// [`super::grpc::ProvingService::resume_journal`].
pub(crate) fn resume(engine: &Arc<Engine>, journal: &Arc<Journal>) -> (usize, usize) {
    let recovered = match journal.recover() {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e, "cannot read the journal; nothing resumed");
            return (0, 0);
        }
    };
    let (mut resumed, mut failed) = (0, 0);
    for rec in recovered {
        let outcome = match rec {
            Recovered::Request(entry, r) => resubmit(engine, journal, entry, &r),
            Recovered::Unreadable {
                entry,
                id,
                kind,
                reason,
            } => Err(Box::new((
                entry,
                id,
                kind,
                EngineError::Input {
                    code: "journal_unreadable".into(),
                    message: reason,
                },
            ))),
        };
        match outcome {
            Ok(()) => resumed += 1,
            Err(not) => {
                let (entry, id, kind, error) = *not;
                failed += 1;
                report_failure(engine, journal, entry, &id, kind, error);
            }
        }
    }
    if resumed + failed > 0 {
        tracing::info!(resumed, failed, dir = %journal.dir().display(), "journal replayed");
    }
    (resumed, failed)
}

/// An entry that was not resumed: the entry, its id and kind, and why.
type NotResumed = Box<(Entry, String, i32, EngineError)>;

fn resubmit(
    engine: &Arc<Engine>,
    journal: &Arc<Journal>,
    entry: Entry,
    r: &pb::SubmitProofRequest,
) -> Result<(), NotResumed> {
    let id = r.request_id.clone();
    let key = RequestKey::new(id.clone(), convert::input_digest(r));
    let (request, priority) = match convert::to_request(r) {
        Ok(x) => x,
        Err(e) => return Err(Box::new((entry, id, r.proof_kind, e))),
    };
    match engine.submit(Some(key), priority, Arc::new(FilecoinJob::new(request))) {
        Ok(s) if s.existing => {
            // A second entry of the same request (a retry journaled twice): one job.
            journal.remove(entry);
            Ok(())
        }
        Ok(s) => {
            tracing::info!(job = %s.job_id, "resumed from the journal");
            let settle = Settle::new(engine, Some(journal.clone()), Some(entry));
            let _ = engine.on_complete(&s.job_id, move |report| settle.job_ended(report));
            Ok(())
        }
        Err(e) => Err(Box::new((entry, id, r.proof_kind, e))),
    }
}

/// Records an entry that cannot be resumed as a failed job under `id` and sets the entry
/// aside.
fn report_failure(
    engine: &Engine,
    journal: &Journal,
    entry: Entry,
    id: &str,
    kind: i32,
    error: EngineError,
) {
    let kept = journal.set_aside(entry);
    let kind = super::grpc::kind_of(kind).map_or("unknown", |k| k.as_str());
    let code = error.code().to_string();
    let text = error.to_string();
    let cause = text.strip_prefix(&format!("{code}: ")).unwrap_or(&text);
    let error = EngineError::Input {
        message: format!(
            "journaled job not resumed: {}; the entry is kept as {}",
            filprove_filecoin::excerpt::clip(cause),
            kept.display()
        ),
        code,
    };
    tracing::error!(job = %id, kind, error = %error, "journaled job not resumed");
    if let Err(e) = engine.record_failure(id, kind, error) {
        tracing::error!(job = %id, error = %e, "cannot report the journaled job's failure");
    }
}
