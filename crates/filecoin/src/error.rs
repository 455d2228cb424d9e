//! Typed errors of the Filecoin layer. Each has a stable machine-readable [`FilecoinError::code`].

use std::path::PathBuf;

use thiserror::Error;

/// Everything that can go wrong between a request and verified proof bytes.
#[derive(Debug, Error)]
pub enum FilecoinError {
    /// An input is larger than the configured limit (checked before parsing).
    #[error("{what} is {size} bytes, over the limit of {limit} bytes")]
    InputTooLarge {
        /// Which input.
        what: &'static str,
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// JSON that does not parse or does not have the expected shape.
    #[error("invalid JSON in {what}: {message}")]
    BadJson {
        /// Which input.
        what: &'static str,
        /// The parser's message (with line and column).
        message: String,
    },
    /// Base64 that does not decode.
    #[error("invalid base64 in {what}: {message}")]
    BadBase64 {
        /// Which field.
        what: String,
        /// The decoder's message.
        message: String,
    },
    /// Hex that does not decode or has the wrong length.
    #[error("invalid hex in {what}: {message}")]
    BadHex {
        /// Which field.
        what: String,
        /// What is wrong.
        message: String,
    },
    /// A request field is missing, unknown or out of range.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// A vanilla proof (bincode) does not decode.
    #[error("vanilla proof {index} does not decode: {message}")]
    BadVanillaProof {
        /// Index in the request.
        index: usize,
        /// The decoder's message.
        message: String,
    },
    /// The sector size does not match the registered proof.
    #[error("wrong sector size: {got} bytes, the registered proof {registered} has {expected}")]
    WrongSectorSize {
        /// Registered proof name.
        registered: String,
        /// Its sector size.
        expected: u64,
        /// The size found in the input.
        got: u64,
    },
    /// The registered proof does not fit the input (kind, shape or version).
    #[error("registered proof mismatch: {0}")]
    RegisteredProofMismatch(String),
    /// The number of vanilla proofs is wrong for the registered proof.
    #[error("wrong number of vanilla proofs: got {got}, expected {expected}")]
    WrongVanillaProofCount {
        /// What was given.
        got: usize,
        /// What is expected (a number or a range).
        expected: String,
    },
    /// A commitment or randomness is not a valid field element, or is all zero.
    #[error("invalid {what}: {message}")]
    InvalidCommitment {
        /// Which value.
        what: &'static str,
        /// Why.
        message: String,
    },
    /// The proof type is recognised but this prover does not make it.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A partition index outside the request.
    #[error("partition {partition} out of range: the request has {partitions}")]
    PartitionOutOfRange {
        /// Index asked for.
        partition: usize,
        /// Partitions in the request.
        partitions: usize,
    },
    /// Building or synthesizing a circuit failed.
    #[error("synthesis of partition {partition} failed: {message}")]
    SynthesisFailed {
        /// Partition index.
        partition: usize,
        /// The cause.
        message: String,
    },
    /// A parameter or verifying-key file is missing.
    #[error("parameter file {} is missing; generate it with `filprove params generate --circuit {short_name}` (test sizes) or fetch the network parameters", path.display())]
    ParamsMissing {
        /// The expected file.
        path: PathBuf,
        /// The circuit's short name.
        short_name: String,
    },
    /// Reading, generating or writing parameters failed.
    #[error("parameters: {0}")]
    Params(String),
    /// The prover backend failed.
    #[error("prover backend: {0}")]
    Prove(#[from] filprove_groth16::ProveError),
    /// The proof does not verify.
    #[error("proof verification failed: {0}")]
    VerificationFailed(String),
    /// A proof byte string has the wrong length or encoding.
    #[error("malformed proof: {0}")]
    MalformedProof(String),
    /// filecoin-proofs returned an error (sealing, vanilla proofs, verification).
    #[error("filecoin-proofs: {0}")]
    FilecoinProofs(String),
    /// Making a fixture (a sealed or virtual sector) failed a self-check.
    #[error("fixture: {0}")]
    Fixture(String),
    /// A file-system operation failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl FilecoinError {
    /// Stable code for logs and the API.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InputTooLarge { .. } => "input_too_large",
            Self::BadJson { .. } => "bad_json",
            Self::BadBase64 { .. } => "bad_base64",
            Self::BadHex { .. } => "bad_hex",
            Self::InvalidRequest(_) => "invalid_request",
            Self::BadVanillaProof { .. } => "bad_vanilla_proof",
            Self::WrongSectorSize { .. } => "wrong_sector_size",
            Self::RegisteredProofMismatch(_) => "registered_proof_mismatch",
            Self::WrongVanillaProofCount { .. } => "wrong_vanilla_proof_count",
            Self::InvalidCommitment { .. } => "invalid_commitment",
            Self::Unsupported(_) => "unsupported",
            Self::PartitionOutOfRange { .. } => "partition_out_of_range",
            Self::SynthesisFailed { .. } => "synthesis_failed",
            Self::ParamsMissing { .. } => "params_missing",
            Self::Params(_) => "params_error",
            Self::Prove(e) => e.code(),
            Self::VerificationFailed(_) => "verification_failed",
            Self::MalformedProof(_) => "malformed_proof",
            Self::FilecoinProofs(_) => "filecoin_proofs_error",
            Self::Fixture(_) => "fixture_error",
            Self::Io { .. } => "io_error",
        }
    }

    /// Wraps an error from filecoin-proofs (anyhow), keeping its whole context chain.
    pub(crate) fn fp(e: impl std::fmt::Display) -> Self {
        Self::FilecoinProofs(crate::excerpt::clip(&format!("{e:#}")))
    }

    /// The error's text made safe for a log line or an API message
    /// ([`crate::excerpt::clip`]): whatever an underlying library quoted of the input is
    /// cut to a short escaped excerpt.
    pub fn message(&self) -> String {
        crate::excerpt::clip(&self.to_string())
    }

    pub(crate) fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            what,
            path: path.into(),
            source,
        }
    }
}

impl From<filprove_groth16::ParamsError> for FilecoinError {
    fn from(e: filprove_groth16::ParamsError) -> Self {
        Self::Params(format!("{} ({})", e, e.code()))
    }
}
