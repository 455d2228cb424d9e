//! Typed engine errors. Each has a stable machine-readable [`EngineError::code`] that the
//! daemon returns over the API and writes to its logs.

use thiserror::Error;

/// Everything that can go wrong with a job or an engine call.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum EngineError {
    /// The request itself is unusable (bad input, wrong parameters for the kind, ...).
    #[error("{code}: {message}")]
    Input {
        /// The stable code of the underlying error (e.g. the filecoin crate's).
        code: String,
        /// Readable cause.
        message: String,
    },
    /// Witness synthesis of a partition failed.
    #[error("synthesis of partition {partition} failed: {code}: {message}")]
    Synthesis {
        /// Partition index.
        partition: usize,
        /// Stable code of the cause.
        code: String,
        /// Readable cause.
        message: String,
    },
    /// The backend failed to prove (device error, shape mismatch, ...).
    #[error("proving failed on {device}: {code}: {message}")]
    Prove {
        /// Device (backend name) that failed.
        device: String,
        /// The backend error's stable code.
        code: String,
        /// Readable cause.
        message: String,
    },
    /// Assembling the partition proofs into the final proof failed.
    #[error("assembling the proof failed: {code}: {message}")]
    Assemble {
        /// Stable code of the cause.
        code: String,
        /// Readable cause.
        message: String,
    },
    /// The proof did not verify, also after the retry.
    #[error("the proof failed verification after {attempts} attempts (device or driver fault?)")]
    Verification {
        /// How many times the job was proved.
        attempts: u32,
    },
    /// Loading a circuit's parameters failed.
    #[error("parameters for {circuit_id} unavailable: {code}: {message}")]
    Srs {
        /// Circuit.
        circuit_id: String,
        /// Stable code of the cause.
        code: String,
        /// Readable cause.
        message: String,
    },
    /// A partition needs more host memory than the whole budget.
    #[error("a partition needs {needed} bytes of host memory, the budget is {limit} bytes; raise memory.budget or use a bigger machine")]
    MemoryExceedsBudget {
        /// Bytes one partition needs.
        needed: u64,
        /// The budget.
        limit: u64,
    },
    /// No job has this id.
    #[error("no job with id {0:?}")]
    UnknownJob(String),
    /// The id belongs to an unfinished job whose inputs differ from this request's.
    #[error("request id {0:?} belongs to an unfinished job with different inputs; wait for it or cancel it, or use another id")]
    RequestConflict(String),
    /// No circuit has this id.
    #[error("unknown circuit {0:?}")]
    UnknownCircuit(String),
    /// The engine is draining (shutting down) and accepts no new work.
    #[error("the engine is shutting down and accepts no new work")]
    Draining,
    /// The job was cancelled.
    #[error("the job was cancelled")]
    Cancelled,
    /// No device has this ordinal.
    #[error("no device {0} (see GetStatus or /status for the devices)")]
    UnknownDevice(u32),
    /// No device's policy accepts the job (every device is reserved for other work).
    #[error("no device proves {circuit_id} at {priority} priority (devices are reserved for other work; see [[devices.device]])")]
    NoDeviceFor {
        /// The job's circuit.
        circuit_id: String,
        /// The job's priority.
        priority: &'static str,
    },
    /// A bug or an impossible state.
    #[error("internal error: {0}")]
    Internal(String),
}

impl EngineError {
    /// Stable code, for the API and logs.
    pub fn code(&self) -> &str {
        match self {
            Self::Input { code, .. } => code,
            Self::Synthesis { code, .. } => code,
            Self::Prove { code, .. } => code,
            Self::Assemble { code, .. } => code,
            Self::Verification { .. } => "proof_verification_failed",
            Self::Srs { code, .. } => code,
            Self::MemoryExceedsBudget { .. } => "memory_exceeds_budget",
            Self::UnknownJob(_) => "unknown_job",
            Self::RequestConflict(_) => "request_id_conflict",
            Self::UnknownCircuit(_) => "unknown_circuit",
            Self::Draining => "draining",
            Self::Cancelled => "cancelled",
            Self::UnknownDevice(_) => "unknown_device",
            Self::NoDeviceFor { .. } => "no_device_for_job",
            Self::Internal(_) => "internal",
        }
    }

    /// Builds [`EngineError::Input`] from any error with a code; the message is clipped
    /// ([`filprove_filecoin::excerpt::clip`]): it goes to logs and the API, and may quote
    /// the input.
    pub fn input(code: impl Into<String>, message: impl ToString) -> Self {
        Self::Input {
            code: code.into(),
            message: filprove_filecoin::excerpt::clip(&message.to_string()),
        }
    }

    /// Builds [`EngineError::Prove`] from a backend error.
    pub fn prove(device: &str, e: &filprove_groth16::ProveError) -> Self {
        Self::Prove {
            device: device.to_string(),
            code: e.code().to_string(),
            message: e.to_string(),
        }
    }
}
