//! The `cuzk.v1.ProvingEngine` service over the engine.

use std::sync::Arc;
use std::time::Duration;

use filprove_engine::filecoin::{normalize_circuit_id, FilecoinJob};
use filprove_engine::{Engine, EngineError, JobOutcome, JobReport, RequestKey, SrsTier, Submitted};
use tonic::{Request, Response, Status};

use filprove_filecoin::ProofKind;

use super::callers::{Callers, Waiting};
use super::convert;
use super::intake::{check_id, Intake};
use super::journal::{Journal, JournalError};
use super::metrics::Metrics;
use super::pb;
use super::pb::proving_engine_server::ProvingEngine;

/// Maps a typed engine error to a gRPC status; the message starts with the stable code and
/// quotes no more than a short excerpt of any input ([`filprove_filecoin::excerpt::clip`]).
pub fn to_status(e: &EngineError) -> Status {
    let msg = filprove_filecoin::excerpt::clip(&format!("{}: {e}", e.code()));
    match e {
        EngineError::Input { code, .. } if code.contains("too_large") => {
            Status::resource_exhausted(msg)
        }
        EngineError::Input { .. } => Status::invalid_argument(msg),
        EngineError::MemoryExceedsBudget { .. } => Status::resource_exhausted(msg),
        EngineError::UnknownJob(_)
        | EngineError::UnknownCircuit(_)
        | EngineError::UnknownDevice(_) => Status::not_found(msg),
        EngineError::NoDeviceFor { .. } => Status::failed_precondition(msg),
        EngineError::RequestConflict(_) => Status::already_exists(msg),
        EngineError::Draining => Status::unavailable(msg),
        EngineError::Cancelled => Status::cancelled(msg),
        EngineError::Srs { .. } => Status::failed_precondition(msg),
        _ => Status::internal(msg),
    }
}

/// The service: a handle on the engine and the callers waiting on its jobs.
#[derive(Clone)]
pub struct ProvingService {
    engine: Arc<Engine>,
    callers: Arc<Callers>,
    intake: Option<Arc<Intake>>,
    journal: Option<Arc<Journal>>,
    metrics: Option<Arc<Metrics>>,
}

/// A refused submission as a status, logged (the log line quotes no input: codes, sizes).
fn refused(e: EngineError) -> Status {
    let status = to_status(&e);
    tracing::warn!(code = e.code(), error = %status.message(), "submission refused");
    status
}

/// Queues a parsed-to-be submission as a new job: parses and checks it, journals it (when
/// there is a journal), submits it, and ties the admission and the journal entry to the
/// job's end.
fn accept(
    engine: &Arc<Engine>,
    journal: Option<&Arc<Journal>>,
    key: Option<RequestKey>,
    r: &pb::SubmitProofRequest,
    mut admission: Option<super::intake::Admission>,
    retry_secs: u64,
) -> Result<Submitted, Status> {
    let (request, priority) = convert::to_request(r).map_err(refused)?;
    let entry = match (journal, &key) {
        (Some(j), Some(k)) => Some(j.record(r, k.inputs).map_err(|e| {
            tracing::warn!(error = %e, "submission refused");
            match e {
                JournalError::Full { .. } => {
                    let msg = e.to_string();
                    let (code, why) = msg
                        .split_once(": ")
                        .unwrap_or(("journal_full", msg.as_str()));
                    super::intake::exhausted(code, why, retry_secs)
                }
                JournalError::Io(_) => Status::unavailable(e.to_string()),
            }
        })?),
        _ => None,
    };
    if let Some(a) = admission.as_mut() {
        a.parsed();
    }
    let submitted = engine.submit(key, priority, Arc::new(FilecoinJob::new(request)));
    let s = match submitted {
        Ok(s) => s,
        Err(e) => {
            if let (Some(j), Some(entry)) = (journal, entry) {
                j.remove(entry);
            }
            return Err(refused(e));
        }
    };
    match (s.existing, journal, entry) {
        // Joined a job submitted meanwhile: that one has its own entry.
        (true, Some(j), Some(entry)) => j.remove(entry),
        (false, j, entry) => {
            let settle = super::resume::Settle::new(engine, j.cloned(), entry);
            // Released when the job ends (at once if it already has, or is no longer
            // known).
            let _ = engine.on_complete(&s.job_id, move |report| {
                drop(admission);
                settle.job_ended(report);
            });
        }
        _ => {}
    }
    Ok(s)
}

/// The Filecoin kind of a wire kind.
pub(crate) fn kind_of(kind: i32) -> Option<ProofKind> {
    match pb::ProofKind::try_from(kind).ok()? {
        pb::ProofKind::PorepSealCommit => Some(ProofKind::PoRep),
        pb::ProofKind::SnapDealsUpdate => Some(ProofKind::SnapDeals),
        pb::ProofKind::WindowPostPartition => Some(ProofKind::WindowPoSt),
        pb::ProofKind::WinningPost => Some(ProofKind::WinningPoSt),
        pb::ProofKind::Unspecified => None,
    }
}

impl ProvingService {
    /// A service over `engine`; a job of a `cancel_abandoned` kind that a `Prove` created
    /// is cancelled when every caller waiting on it has gone away.
    pub fn new(engine: Arc<Engine>, cancel_abandoned: Vec<ProofKind>) -> Self {
        let callers = Callers::new(engine.clone(), cancel_abandoned);
        Self {
            engine,
            callers,
            intake: None,
            journal: None,
            metrics: None,
        }
    }

    /// Records every accepted submission in `journal` before answering it (a submission
    /// the journal cannot hold is refused), and removes it when its job ends.
    pub fn with_journal(mut self, journal: Arc<Journal>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Resumes the journal's entries (oldest first) as jobs under their ids, and records
    /// each entry that cannot be resumed as a failed job under its id, with the reason;
    /// such an entry is moved to the journal's `unreadable` directory. Returns how many
    /// were resumed and how many failed.
    pub fn resume_journal(&self) -> (usize, usize) {
        match &self.journal {
            Some(j) => super::resume::resume(&self.engine, j),
            None => (0, 0),
        }
    }

    /// Admits submissions through `intake` (its limits refuse work beyond them with
    /// RESOURCE_EXHAUSTED); without one, every valid submission is queued.
    pub fn with_intake(mut self, intake: Arc<Intake>) -> Self {
        self.intake = Some(intake);
        self
    }

    /// Answers `GetMetrics` with `metrics` (the engine's families and the daemon's); without
    /// them, with the engine's alone.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Submits `r`. For a `Prove` (`waiter`), the caller is counted as waiting on the job
    /// from before the submission (so that a caller of the same id leaving meanwhile does
    /// not take the job with it) and marked as its creator when the job is new; the
    /// returned guard is that count. The counting happens on the blocking task, so a
    /// caller that went away while its inputs were parsed still leaves (and may cancel the
    /// job, server.cancel_abandoned) once the job exists.
    async fn submit(
        &self,
        r: pb::SubmitProofRequest,
        waiter: bool,
    ) -> Result<(Submitted, Option<Waiting>), Status> {
        // The id goes into logs and the job table: checked before anything else.
        check_id("request_id", &r.request_id)?;
        let engine = self.engine.clone();
        let callers = waiter.then(|| self.callers.clone());
        let intake = self.intake.clone();
        let bytes = prost::Message::encoded_len(&r) as u64;
        let journal = self.journal.clone();
        let mut r = r;
        // Hashing and parsing the inputs (C1 JSON, vanilla proofs) is CPU work.
        let submitted = tokio::task::spawn_blocking(move || {
            if journal.is_some() && r.request_id.is_empty() {
                // A journaled job is recorded under its id before the engine sees it.
                r.request_id = format!("job-{:016x}", rand::random::<u64>());
            }
            let key = (!r.request_id.is_empty())
                .then(|| RequestKey::new(r.request_id.clone(), convert::input_digest(&r)));
            let mut waiting = callers
                .as_ref()
                .zip(key.as_ref())
                .map(|(c, k)| c.enter(&k.id));
            let retained = key
                .as_ref()
                .map(|k| engine.retained(k))
                .transpose()
                .map_err(refused)?;
            let submitted = match retained {
                // A retry of a job with the same inputs: no parsing, no second proof.
                Some(Some(existing)) => existing,
                _ if engine.is_draining() => return Err(refused(EngineError::Draining)),
                _ => {
                    // Counted from before parsing (which is where a request's memory
                    // multiplies) until its job ends.
                    let admission = match (&intake, kind_of(r.proof_kind)) {
                        (Some(intake), Some(kind)) => {
                            Some(intake.admit(kind, bytes).inspect_err(|s| {
                                tracing::warn!(kind = %kind, bytes, error = %s.message(), "submission refused");
                            })?)
                        }
                        _ => None,
                    };
                    let retry_secs = intake.as_ref().map_or(5, |i| i.retry_after_secs());
                    accept(&engine, journal.as_ref(), key, &r, admission, retry_secs)?
                }
            };
            if let Some(c) = &callers {
                let w = waiting.get_or_insert_with(|| c.enter(&submitted.job_id));
                if !submitted.existing {
                    w.created_job(kind_of(r.proof_kind));
                }
            }
            Ok((submitted, waiting))
        })
        .await
        .map_err(|e| Status::internal(format!("internal: {e}")))??;
        Ok(submitted)
    }

    async fn await_job(
        &self,
        job_id: &str,
        timeout_ms: u64,
    ) -> Result<pb::AwaitProofResponse, Status> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.engine
            .on_complete(job_id, move |r| {
                let _ = tx.send(r.clone());
            })
            .map_err(|e| to_status(&e))?;
        let report = if timeout_ms == 0 {
            rx.await.ok()
        } else {
            tokio::time::timeout(Duration::from_millis(timeout_ms), rx)
                .await
                .ok()
                .and_then(Result::ok)
        };
        Ok(match report {
            Some(r) => report_to_response(&r),
            None => pb::AwaitProofResponse {
                job_id: job_id.to_string(),
                status: pb::await_proof_response::Status::Timeout as i32,
                ..Default::default()
            },
        })
    }
}

/// The wire form of a finished job.
pub fn report_to_response(r: &JobReport) -> pb::AwaitProofResponse {
    use pb::await_proof_response::Status as S;
    let ms = |d: Duration| d.as_millis() as u64;
    let (status, proof, error_message) = match &r.outcome {
        JobOutcome::Completed(p) => (S::Completed, p.clone(), String::new()),
        JobOutcome::Failed(e) => (S::Failed, Vec::new(), format!("{}: {e}", e.code())),
        JobOutcome::Cancelled => (
            S::Cancelled,
            Vec::new(),
            "cancelled: the job was cancelled".into(),
        ),
    };
    pb::AwaitProofResponse {
        job_id: r.job_id.clone(),
        status: status as i32,
        proof,
        error_message,
        queue_wait_ms: ms(r.timings.queue_wait),
        srs_load_ms: ms(r.timings.srs_load),
        synthesis_ms: ms(r.timings.synthesis),
        gpu_compute_ms: ms(r.timings.prove),
        total_ms: ms(r.timings.total),
    }
}

#[tonic::async_trait]
impl ProvingEngine for ProvingService {
    async fn submit_proof(
        &self,
        request: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        let (s, _) = self.submit(request.into_inner(), false).await?;
        Ok(Response::new(pb::SubmitProofResponse {
            job_id: s.job_id,
            queue_position: s.queue_position,
            assigned_gpu: s.assigned_device,
        }))
    }

    async fn await_proof(
        &self,
        request: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let r = request.into_inner();
        check_id("job_id", &r.job_id)?;
        let waiting = self.callers.enter(&r.job_id);
        let response = self.await_job(&r.job_id, r.timeout_ms).await?;
        waiting.answered();
        Ok(Response::new(response))
    }

    async fn prove(
        &self,
        request: Request<pb::ProveRequest>,
    ) -> Result<Response<pb::ProveResponse>, Status> {
        let submit = request.into_inner().submit.ok_or_else(|| {
            Status::invalid_argument("invalid_request: ProveRequest.submit is missing")
        })?;
        // Dropped unanswered (the RPC cancelled or past its deadline), `waiting` may
        // cancel the job (server.cancel_abandoned).
        let (submitted, waiting) = self.submit(submit, true).await?;
        let waiting = waiting.expect("a Prove's submission counts its caller");
        let result = self.await_job(&submitted.job_id, 0).await?;
        waiting.answered();
        Ok(Response::new(pb::ProveResponse {
            result: Some(result),
        }))
    }

    async fn cancel_proof(
        &self,
        request: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let job_id = request.into_inner().job_id;
        check_id("job_id", &job_id)?;
        let was_running = self.engine.cancel(&job_id).map_err(|e| to_status(&e))?;
        Ok(Response::new(pb::CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let s = self.engine.status();
        Ok(Response::new(pb::GetStatusResponse {
            gpus: s
                .devices
                .iter()
                .map(|d| pb::GpuStatus {
                    ordinal: d.ordinal,
                    // cuzk's message has no health field: a device out of rotation says
                    // so in its name.
                    name: match d.health.quarantined {
                        Some(_) => format!("{} [quarantined]", d.name),
                        None => d.name.clone(),
                    },
                    vram_total_bytes: d.memory.map_or(0, |m| m.1),
                    vram_free_bytes: d.memory.map_or(0, |m| m.0),
                    current_job_id: d
                        .current_job
                        .as_ref()
                        .map(|c| c.0.clone())
                        .unwrap_or_default(),
                    current_proof_kind: d
                        .current_job
                        .as_ref()
                        .map(|c| c.1.to_string())
                        .unwrap_or_default(),
                })
                .collect(),
            loaded_srs: s
                .srs
                .iter()
                .map(|e| pb::SrsStatus {
                    circuit_id: e.circuit_id.clone(),
                    tier: match e.tier {
                        SrsTier::Hot => pb::srs_status::Tier::Hot,
                        SrsTier::Warm => pb::srs_status::Tier::Warm,
                        SrsTier::Cold => pb::srs_status::Tier::Cold,
                    } as i32,
                    size_bytes: e.size_bytes,
                    ref_count: e.ref_count,
                })
                .collect(),
            queues: s
                .queues
                .iter()
                .map(|q| pb::QueueStatus {
                    proof_kind: q.kind.clone(),
                    pending: q.pending,
                    in_progress: q.in_progress,
                })
                .collect(),
            total_proofs_completed: s.completed,
            total_proofs_failed: s.failed,
            uptime_seconds: s.uptime.as_secs(),
            pinned_memory_bytes: s.memory_reserved_bytes,
            pinned_memory_limit_bytes: s.memory_limit_bytes,
        }))
    }

    async fn get_metrics(
        &self,
        _request: Request<pb::GetMetricsRequest>,
    ) -> Result<Response<pb::GetMetricsResponse>, Status> {
        Ok(Response::new(pb::GetMetricsResponse {
            prometheus_text: match &self.metrics {
                Some(m) => m.text(),
                None => self.engine.metrics_text(),
            },
        }))
    }

    async fn preload_srs(
        &self,
        request: Request<pb::PreloadSrsRequest>,
    ) -> Result<Response<pb::PreloadSrsResponse>, Status> {
        let id =
            normalize_circuit_id(&request.into_inner().circuit_id).map_err(|e| to_status(&e))?;
        let engine = self.engine.clone();
        let out = tokio::task::spawn_blocking(move || super::srs_loading::preload(&engine, &id))
            .await
            .map_err(|e| Status::internal(format!("internal: {e}")))?
            .map_err(|e| to_status(&e))?;
        Ok(Response::new(pb::PreloadSrsResponse {
            already_loaded: out.already_loaded,
            load_time_ms: out.load_time.as_millis() as u64,
        }))
    }

    async fn evict_srs(
        &self,
        request: Request<pb::EvictSrsRequest>,
    ) -> Result<Response<pb::EvictSrsResponse>, Status> {
        let id =
            normalize_circuit_id(&request.into_inner().circuit_id).map_err(|e| to_status(&e))?;
        let out = self.engine.evict_parameters(&id);
        Ok(Response::new(pb::EvictSrsResponse {
            was_loaded: out.was_loaded,
            freed_bytes: out.freed_bytes,
        }))
    }
}
