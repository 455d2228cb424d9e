//! C1 (`SealCommitPhase1Output`) input: raw JSON or the lotus-bench / Curio wrapper.

use base64::Engine as _;
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use serde::{Deserialize, Serialize};

use crate::error::FilecoinError;
use crate::request::{ProofRequest, RequestBody};

/// Largest C1 JSON accepted (a 64 GiB C1 is about 60 MB); checked before parsing.
pub const MAX_C1_BYTES: usize = 256 << 20;

/// The lotus-bench / Curio wrapper around a C1 output.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct C1Wrapper {
    /// The sector number.
    #[serde(rename = "SectorNum")]
    pub sector_num: u64,
    /// base64 (standard, padded) of the raw C1 JSON.
    #[serde(rename = "Phase1Out")]
    pub phase1_out: String,
    /// The sector size in bytes.
    #[serde(rename = "SectorSize")]
    pub sector_size: u64,
}

pub(crate) fn check_size(
    what: &'static str,
    size: usize,
    limit: usize,
) -> Result<(), FilecoinError> {
    if size > limit {
        return Err(FilecoinError::InputTooLarge { what, size, limit });
    }
    Ok(())
}

pub(crate) fn json_err(what: &'static str, e: serde_json::Error) -> FilecoinError {
    // serde_json quotes the offending value (a whole string field), so clip it.
    FilecoinError::BadJson {
        what,
        message: crate::excerpt::clip(&e.to_string()),
    }
}

/// Decodes standard base64 (Go's `[]byte` JSON encoding), with a decoded-size limit.
pub(crate) fn decode_base64(what: &str, s: &str, limit: usize) -> Result<Vec<u8>, FilecoinError> {
    // 3 bytes per 4 characters: refuse before allocating.
    if s.len() / 4 * 3 > limit {
        return Err(FilecoinError::InputTooLarge {
            what: "base64 field",
            size: s.len() / 4 * 3,
            limit,
        });
    }
    base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|e| FilecoinError::BadBase64 {
            what: what.to_string(),
            message: crate::excerpt::clip(&e.to_string()),
        })
}

/// Parses a raw C1 JSON.
pub fn parse_raw_c1(bytes: &[u8]) -> Result<SealCommitPhase1Output, FilecoinError> {
    check_size("C1 JSON", bytes.len(), MAX_C1_BYTES)?;
    serde_json::from_slice(bytes).map_err(|e| json_err("C1 output", e))
}

/// Unwraps a wrapper: checks its sector size against the C1's registered proof.
pub fn unwrap_c1(w: &C1Wrapper) -> Result<(SealCommitPhase1Output, u64), FilecoinError> {
    let raw = decode_base64("Phase1Out", &w.phase1_out, MAX_C1_BYTES)?;
    let c1 = parse_raw_c1(&raw)?;
    let expected = u64::from(c1.registered_proof.sector_size());
    if w.sector_size != expected {
        return Err(FilecoinError::WrongSectorSize {
            registered: format!("{:?}", c1.registered_proof),
            expected,
            got: w.sector_size,
        });
    }
    Ok((c1, w.sector_num))
}

/// Picks the sector number from the argument and the wrapper; both given must agree.
pub(crate) fn pick_sector_number(
    arg: Option<u64>,
    wrapped: Option<u64>,
) -> Result<u64, FilecoinError> {
    match (arg, wrapped) {
        (Some(a), Some(w)) if a != w => Err(FilecoinError::InvalidRequest(format!(
            "sector number {a} differs from the wrapper's SectorNum {w}"
        ))),
        (Some(n), _) | (None, Some(n)) => Ok(n),
        (None, None) => Err(FilecoinError::InvalidRequest(
            "a raw C1 output needs the sector number".into(),
        )),
    }
}

impl ProofRequest {
    /// Parses a C1 output (raw `SealCommitPhase1Output` JSON or the
    /// `{"SectorNum","Phase1Out","SectorSize"}` wrapper) into a validated PoRep request. The
    /// size limit ([`MAX_C1_BYTES`]) is checked before parsing.
    pub fn parse_c1(
        bytes: &[u8],
        sector_number: Option<u64>,
        miner_id: u64,
    ) -> Result<Self, FilecoinError> {
        check_size("C1 input", bytes.len(), MAX_C1_BYTES * 4 / 3 + 4096)?;
        // The wrapper denies unknown fields, so a raw C1 fails at its first key.
        let (c1, wrapped) = match serde_json::from_slice::<C1Wrapper>(bytes) {
            Ok(w) => {
                let (c1, n) = unwrap_c1(&w)?;
                (c1, Some(n))
            }
            Err(_) => (parse_raw_c1(bytes)?, None),
        };
        let sector_number = pick_sector_number(sector_number, wrapped)?;
        ProofRequest::new(RequestBody::PoRep {
            c1: Box::new(c1),
            sector_number,
            miner_id,
        })
    }
}
