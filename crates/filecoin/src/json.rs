//! The request file of the CLI (documented in docs/formats.md): one JSON object per proof.

use base64::Engine as _;
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredUpdateProof};
use serde::{Deserialize, Serialize};

use crate::c1::{check_size, decode_base64, json_err, pick_sector_number, unwrap_c1, C1Wrapper};
use crate::error::FilecoinError;
use crate::kinds::ProofKind;
use crate::request::{ProofRequest, RequestBody, MAX_VANILLA_PROOFS};

/// Largest request file accepted; checked before parsing.
pub const MAX_REQUEST_BYTES: usize = 512 << 20;

/// Largest single vanilla proof accepted (decoded).
pub const MAX_VANILLA_PROOF_BYTES: usize = 16 << 20;

/// The request file, field by field (see docs/formats.md).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestFile {
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    registered_proof: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    miner_id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sector_number: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    randomness: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    partition_index: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    comm_r_old: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    comm_r_new: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    comm_d_new: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    vanilla_proofs: Option<Vec<String>>,
    /// Raw C1 output, inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    c1: Option<Box<SealCommitPhase1Output>>,
    /// The lotus-bench / Curio wrapper, inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    c1_wrapped: Option<C1Wrapper>,
}

fn missing(field: &str, kind: ProofKind) -> FilecoinError {
    FilecoinError::InvalidRequest(format!("field {field:?} is required for kind {kind}"))
}

fn unexpected(field: &str, kind: ProofKind) -> FilecoinError {
    FilecoinError::InvalidRequest(format!("field {field:?} does not apply to kind {kind}"))
}

fn hex32(field: &str, s: &Option<String>, kind: ProofKind) -> Result<[u8; 32], FilecoinError> {
    let s = s.as_deref().ok_or_else(|| missing(field, kind))?;
    let s = s.strip_prefix("0x").unwrap_or(s);
    let bad = |message: String| FilecoinError::BadHex {
        what: field.to_string(),
        message,
    };
    if s.len() != 64 {
        return Err(bad(format!("expected 64 hex digits, got {}", s.len())));
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(s, &mut out).map_err(|e| bad(e.to_string()))?;
    Ok(out)
}

/// Parses a registered proof by its filecoin-proofs-api name ("StackedDrgWindow2KiBV1_2").
fn registered<T: for<'de> Deserialize<'de>>(
    name: &Option<String>,
    kind: ProofKind,
) -> Result<T, FilecoinError> {
    let name = name
        .as_deref()
        .ok_or_else(|| missing("registered_proof", kind))?;
    serde_json::from_value(serde_json::Value::String(name.to_string())).map_err(|_| {
        FilecoinError::RegisteredProofMismatch(format!(
            "{} is not a registered proof of kind {kind}",
            crate::excerpt::quote_str(name)
        ))
    })
}

fn vanilla(v: &Option<Vec<String>>, kind: ProofKind) -> Result<Vec<Vec<u8>>, FilecoinError> {
    let v = v.as_ref().ok_or_else(|| missing("vanilla_proofs", kind))?;
    if v.len() > MAX_VANILLA_PROOFS {
        return Err(FilecoinError::WrongVanillaProofCount {
            got: v.len(),
            expected: format!("at most {MAX_VANILLA_PROOFS}"),
        });
    }
    v.iter()
        .enumerate()
        .map(|(i, s)| decode_base64(&format!("vanilla_proofs[{i}]"), s, MAX_VANILLA_PROOF_BYTES))
        .collect()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

impl ProofRequest {
    /// Parses and validates a request file (docs/formats.md). The size limit
    /// ([`MAX_REQUEST_BYTES`]) is checked before parsing; unknown fields are rejected.
    pub fn from_request_json(bytes: &[u8]) -> Result<Self, FilecoinError> {
        check_size("request file", bytes.len(), MAX_REQUEST_BYTES)?;
        let f: RequestFile =
            serde_json::from_slice(bytes).map_err(|e| json_err("request file", e))?;
        let kind: ProofKind = f.kind.parse()?;
        let miner_id = |k| f.miner_id.ok_or_else(|| missing("miner_id", k));
        let reject = |present: bool, field: &str| {
            if present {
                Err(unexpected(field, kind))
            } else {
                Ok(())
            }
        };
        if kind != ProofKind::PoRep {
            reject(f.c1.is_some(), "c1")?;
            reject(f.c1_wrapped.is_some(), "c1_wrapped")?;
            reject(f.sector_number.is_some(), "sector_number")?;
        }
        if kind != ProofKind::WindowPoSt {
            reject(f.partition_index.is_some(), "partition_index")?;
        }
        if kind != ProofKind::SnapDeals {
            for (field, v) in [
                ("comm_r_old", &f.comm_r_old),
                ("comm_r_new", &f.comm_r_new),
                ("comm_d_new", &f.comm_d_new),
            ] {
                reject(v.is_some(), field)?;
            }
        }
        let body = match kind {
            ProofKind::PoRep => {
                reject(f.randomness.is_some(), "randomness")?;
                reject(f.vanilla_proofs.is_some(), "vanilla_proofs")?;
                let (c1, wrapped) = match (f.c1, &f.c1_wrapped) {
                    (Some(c1), None) => (c1, None),
                    (None, Some(w)) => {
                        let (c1, n) = unwrap_c1(w)?;
                        (Box::new(c1), Some(n))
                    }
                    _ => {
                        return Err(FilecoinError::InvalidRequest(
                            "kind porep needs exactly one of \"c1\" and \"c1_wrapped\"".into(),
                        ))
                    }
                };
                if let Some(name) = &f.registered_proof {
                    let want = format!("{:?}", c1.registered_proof);
                    if *name != want {
                        return Err(FilecoinError::RegisteredProofMismatch(format!(
                            "registered_proof {} but the C1 output is {want}",
                            crate::excerpt::quote_str(name)
                        )));
                    }
                }
                RequestBody::PoRep {
                    c1,
                    sector_number: pick_sector_number(f.sector_number, wrapped)?,
                    miner_id: miner_id(kind)?,
                }
            }
            ProofKind::WinningPoSt => RequestBody::WinningPoSt {
                registered: registered::<RegisteredPoStProof>(&f.registered_proof, kind)?,
                miner_id: miner_id(kind)?,
                randomness: hex32("randomness", &f.randomness, kind)?,
                vanilla_proofs: vanilla(&f.vanilla_proofs, kind)?,
            },
            ProofKind::WindowPoSt => RequestBody::WindowPoSt {
                registered: registered::<RegisteredPoStProof>(&f.registered_proof, kind)?,
                miner_id: miner_id(kind)?,
                randomness: hex32("randomness", &f.randomness, kind)?,
                partition_index: f.partition_index.unwrap_or(0),
                vanilla_proofs: vanilla(&f.vanilla_proofs, kind)?,
            },
            ProofKind::SnapDeals => {
                reject(f.randomness.is_some(), "randomness")?;
                reject(f.miner_id.is_some(), "miner_id")?;
                RequestBody::SnapDeals {
                    registered: registered::<RegisteredUpdateProof>(&f.registered_proof, kind)?,
                    comm_r_old: hex32("comm_r_old", &f.comm_r_old, kind)?,
                    comm_r_new: hex32("comm_r_new", &f.comm_r_new, kind)?,
                    comm_d_new: hex32("comm_d_new", &f.comm_d_new, kind)?,
                    vanilla_proofs: vanilla(&f.vanilla_proofs, kind)?,
                }
            }
        };
        ProofRequest::new(body)
    }

    /// Writes the request in the request-file format (PoRep with the raw C1 inline).
    pub fn to_request_json(&self) -> Vec<u8> {
        let kind = self.kind();
        let mut f = RequestFile {
            kind: kind.as_str().to_string(),
            ..Default::default()
        };
        let vanilla = |v: &[Vec<u8>]| Some(v.iter().map(|p| b64(p)).collect());
        match self.body() {
            RequestBody::PoRep {
                c1,
                sector_number,
                miner_id,
            } => {
                f.registered_proof = Some(format!("{:?}", c1.registered_proof));
                f.miner_id = Some(*miner_id);
                f.sector_number = Some(*sector_number);
                f.c1 = Some(c1.clone());
            }
            RequestBody::WinningPoSt {
                registered,
                miner_id,
                randomness,
                vanilla_proofs,
            } => {
                f.registered_proof = Some(format!("{registered:?}"));
                f.miner_id = Some(*miner_id);
                f.randomness = Some(hex::encode(randomness));
                f.vanilla_proofs = vanilla(vanilla_proofs);
            }
            RequestBody::WindowPoSt {
                registered,
                miner_id,
                randomness,
                partition_index,
                vanilla_proofs,
            } => {
                f.registered_proof = Some(format!("{registered:?}"));
                f.miner_id = Some(*miner_id);
                f.randomness = Some(hex::encode(randomness));
                f.partition_index = Some(*partition_index);
                f.vanilla_proofs = vanilla(vanilla_proofs);
            }
            RequestBody::SnapDeals {
                registered,
                comm_r_old,
                comm_r_new,
                comm_d_new,
                vanilla_proofs,
            } => {
                f.registered_proof = Some(format!("{registered:?}"));
                f.comm_r_old = Some(hex::encode(comm_r_old));
                f.comm_r_new = Some(hex::encode(comm_r_new));
                f.comm_d_new = Some(hex::encode(comm_d_new));
                f.vanilla_proofs = vanilla(vanilla_proofs);
            }
        }
        serde_json::to_vec(&f).expect("a request serializes")
    }
}
