//! Typed errors. Each has a stable machine-readable `code()` for logs and the API.

use std::path::PathBuf;

use thiserror::Error;

/// Errors reading, validating or writing parameter files.
#[derive(Debug, Error)]
pub enum ParamsError {
    /// The file could not be opened, read or written.
    #[error("I/O error on parameter file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file ends before a section it announces.
    #[error("parameter file {path} is truncated: {what} needs {needed} bytes at offset {offset}, file has {len}")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Which part.
        what: String,
        /// Bytes needed.
        needed: u64,
        /// Where.
        offset: u64,
        /// File length.
        len: u64,
    },
    /// The file has bytes after its last section.
    #[error("parameter file {path} has {extra} unexpected trailing bytes")]
    TrailingBytes {
        /// The file.
        path: PathBuf,
        /// How many.
        extra: u64,
    },
    /// A point is not on the curve, not in the subgroup, or badly encoded.
    #[error("parameter file {path}: {section}[{index}] is not a valid point ({why})")]
    InvalidPoint {
        /// The file.
        path: PathBuf,
        /// Section name (vk, h, l, a, b_g1, b_g2, ic).
        section: &'static str,
        /// Index in the section.
        index: usize,
        /// What failed.
        why: &'static str,
    },
    /// The digest does not match the manifest.
    #[error("parameter file {path}: digest {actual} does not match {expected} from parameters.json; the file is corrupt or not the network's (delete it and fetch it again, or unset FIL_PROOFS_VERIFY_PRODUCTION_PARAMS for locally generated files)")]
    DigestMismatch {
        /// The file.
        path: PathBuf,
        /// Expected digest (hex).
        expected: String,
        /// Actual digest (hex).
        actual: String,
    },
    /// The parameters do not fit the circuit they are used for.
    #[error("parameter file {path} does not match the circuit: {what}")]
    WrongCircuit {
        /// The file.
        path: PathBuf,
        /// What differs.
        what: String,
    },
    /// Generation failed (the circuit could not be synthesized, or is degenerate).
    #[error("parameter generation failed: {0}")]
    Generate(String),
    /// A parameter manifest (parameters.json) could not be parsed.
    #[error("invalid parameter manifest: {0}")]
    Manifest(String),
    /// The device that generation ran on failed (driver error, out of device memory, no
    /// device): the inner error says which.
    #[error("parameter generation on a device failed: {0}")]
    Device(#[from] ProveError),
}

impl ParamsError {
    /// Stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Io { .. } => "params_io",
            Self::Truncated { .. } => "params_truncated",
            Self::TrailingBytes { .. } => "params_trailing_bytes",
            Self::InvalidPoint { .. } => "params_invalid_point",
            Self::DigestMismatch { .. } => "params_digest_mismatch",
            Self::WrongCircuit { .. } => "params_wrong_circuit",
            Self::Generate(_) => "params_generate",
            Self::Manifest(_) => "params_manifest",
            Self::Device(_) => "params_device",
        }
    }
}

/// Errors decoding a proof.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ProofDecodeError {
    /// Wrong byte length.
    #[error("proof bytes have length {got}, expected {expected}")]
    Length {
        /// Expected length.
        expected: usize,
        /// Actual length.
        got: usize,
    },
    /// A point is invalid.
    #[error("proof element {0} is not a valid point")]
    Point(&'static str),
}

/// Errors from a prover backend.
#[derive(Debug, Error)]
pub enum ProveError {
    /// The assignment and the parameters disagree (wrong params for this circuit).
    #[error("assignment does not fit the parameters: {what} (params {params}, circuit {circuit})")]
    ShapeMismatch {
        /// Which quantity.
        what: &'static str,
        /// What the parameters have.
        params: usize,
        /// What the circuit needs.
        circuit: usize,
    },
    /// The backend cannot be used on this machine.
    #[error("backend {backend} unavailable: {why}")]
    Unavailable {
        /// Backend name.
        backend: String,
        /// Why.
        why: String,
    },
    /// Device memory is insufficient for the planned work.
    #[error("out of device memory on {device}: needed {needed} bytes, {free} free")]
    DeviceOutOfMemory {
        /// Device name.
        device: String,
        /// Bytes needed.
        needed: u64,
        /// Bytes free.
        free: u64,
    },
    /// A device (CUDA driver, launch) error.
    #[error("device error on {device}: {message}")]
    Device {
        /// Device name.
        device: String,
        /// Message (driver error name and context).
        message: String,
    },
    /// Invalid request (e.g. no assignments).
    #[error("invalid proving request: {0}")]
    Invalid(String),
    /// The parameters came without their proving sections (the host released them once
    /// every device held them) and this backend does not hold them (any more): the caller
    /// reads the parameters again.
    #[error("parameters without their proving sections, which {backend} does not hold")]
    ParametersOffHost {
        /// Backend name.
        backend: String,
    },
}

impl ProveError {
    /// Stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::ShapeMismatch { .. } => "prove_shape_mismatch",
            Self::Unavailable { .. } => "backend_unavailable",
            Self::DeviceOutOfMemory { .. } => "device_out_of_memory",
            Self::Device { .. } => "device_error",
            Self::Invalid(_) => "prove_invalid",
            Self::ParametersOffHost { .. } => "parameters_off_host",
        }
    }
}
