//! What the engine proves: the [`ProofJob`] trait, priorities, outcomes and timings.

use std::time::Duration;

use filprove_groth16::{Proof, ProvingAssignment};

use crate::EngineError;

/// Scheduling priority. Higher values run first; within one priority, first come first
/// served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// Background work.
    Low = 1,
    /// The default (PoRep C2, SnapDeals).
    Normal = 2,
    /// Deadline-bound work (WindowPoSt).
    High = 3,
    /// Must not wait (WinningPoSt).
    Critical = 4,
}

impl Priority {
    /// Lower-case name for logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Normal => "normal",
            Self::High => "high",
            Self::Critical => "critical",
        }
    }
}

/// A digest of everything that decides a request's proof (the daemon hashes every input
/// field of the wire request but its id and priority).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InputDigest(pub [u8; 32]);

/// How a caller names a request: its id (the job id) and the digest of its inputs. A
/// submission under a known id re-attaches to that job only when the inputs are the same
/// (see [`crate::Engine::submit`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestKey {
    /// The caller's id; empty: the engine makes one up.
    pub id: String,
    /// The digest of the request's inputs.
    pub inputs: InputDigest,
}

impl RequestKey {
    /// A key from an id and an input digest.
    pub fn new(id: impl Into<String>, inputs: InputDigest) -> Self {
        Self {
            id: id.into(),
            inputs,
        }
    }
}

/// One proof request as the engine sees it: a number of partitions, each synthesized into
/// an assignment and proved against one circuit's parameters, then assembled and verified.
///
/// Implemented for Filecoin requests in [`crate::filecoin`]; tests implement it for small
/// circuits of their own.
pub trait ProofJob: Send + Sync + 'static {
    /// Kind label for metrics and queues ("porep", "snap", "window-post", "winning-post").
    fn kind(&self) -> &'static str;
    /// The circuit whose parameters every partition is proved with (the SRS manager's key).
    fn circuit_id(&self) -> String;
    /// Number of partitions (at least 1).
    fn num_partitions(&self) -> usize;
    /// Host bytes one partition holds from synthesis start until its proof is made.
    fn partition_memory_bytes(&self) -> u64;
    /// Synthesizes partition `k`'s witness (CPU work, can take minutes).
    fn synthesize(&self, k: usize) -> Result<ProvingAssignment, EngineError>;
    /// Synthesizes partition `k` along the reference path (the upstream gadgets, which
    /// the fast path is tested equal to). The retry of a job whose proof failed
    /// verification synthesizes this way, so a fault of the fast path costs time, not
    /// the proof. The default is [`ProofJob::synthesize`] (a job with one path).
    fn synthesize_reference(&self, k: usize) -> Result<ProvingAssignment, EngineError> {
        self.synthesize(k)
    }
    /// Assembles the per-partition proofs (in partition order) into the returned bytes.
    fn assemble(&self, proofs: &[Proof]) -> Result<Vec<u8>, EngineError>;
    /// Verifies assembled bytes; `Ok(false)` for a proof that does not verify.
    fn verify(&self, proof: &[u8]) -> Result<bool, EngineError>;
}

/// Where a job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStatus {
    /// Waiting for a synthesis worker.
    Queued,
    /// Some partition has started.
    Running,
    /// Finished with a verified proof.
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl JobStatus {
    /// True once the job will not change any more.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobOutcome {
    /// The verified proof.
    Completed(Vec<u8>),
    /// A typed failure.
    Failed(EngineError),
    /// Cancelled by a caller or by shutdown.
    Cancelled,
}

/// Time a job spent in each stage. Synthesis and prove times are summed over partitions
/// (and attempts), so with overlap they can exceed `total`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timings {
    /// From submission to the first partition's synthesis start.
    pub queue_wait: Duration,
    /// Waiting for parameters to load.
    pub srs_load: Duration,
    /// Witness synthesis.
    pub synthesis: Duration,
    /// Backend prove calls (the kernel region).
    pub prove: Duration,
    /// Assembly and verification.
    pub verify: Duration,
    /// From submission to the end.
    pub total: Duration,
}

/// The final report of a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobReport {
    /// The job id.
    pub job_id: String,
    /// Kind label.
    pub kind: &'static str,
    /// The outcome.
    pub outcome: JobOutcome,
    /// Stage times.
    pub timings: Timings,
}
