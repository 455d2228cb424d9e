//! cuzk.v1 `SubmitProofRequest` -> a validated [`ProofRequest`] and its priority.
//!
//! - `registered_proof` uses the FFI's numbering (go-state-types `abi`):
//!   RegisteredSealProof 0..=4 V1, 5..=9 V1_1, 10..=14 V1_1 synthetic, 15..=19 V1_2
//!   non-interactive (each run: 2 KiB, 8 MiB, 512 MiB, 32 GiB, 64 GiB);
//!   RegisteredPoStProof 0..=4 Winning V1, 5..=9 Window V1, 10..=14 Window V1_1
//!   (filecoin-proofs-api's `V1_2`); RegisteredUpdateProof 0..=4.
//! - PoRep `vanilla_proof` (10): the C1 output JSON, raw or in the
//!   `{"SectorNum","Phase1Out","SectorSize"}` wrapper.
//! - PoSt and SnapDeals `vanilla_proofs` (11): one bincode vanilla proof per entry, as
//!   Curio sends them. When 11 is empty, `vanilla_proof` (10) may carry them instead as a
//!   JSON array of base64 strings (Go's `json.Marshal([][]byte)`).
//! - PoSt `randomness`: 32 bytes; the top two bits are cleared (as the Go side does before
//!   calling the FFI) so it is a field element.
//! - SnapDeals commitments: raw 32 bytes in comm_r_old, comm_r_new, comm_d_new.

use base64::Engine as _;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use filprove_engine::{EngineError, InputDigest, Priority};
use filprove_filecoin::{ProofRequest, RequestBody};

use super::pb;

/// Most vanilla proofs in one request's array (a 64 GiB WindowPoSt partition has 2,349).
const MAX_VANILLA_ENTRIES: usize = 4096;

/// Seal proofs in FFI order.
pub const SEAL_PROOFS: [RegisteredSealProof; 20] = {
    use RegisteredSealProof::*;
    [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
        StackedDrg2KiBV1_1,
        StackedDrg8MiBV1_1,
        StackedDrg512MiBV1_1,
        StackedDrg32GiBV1_1,
        StackedDrg64GiBV1_1,
        StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
    ]
};

/// PoSt proofs in FFI order (the FFI's Window V1_1 is the API's V1_2).
pub const POST_PROOFS: [RegisteredPoStProof; 15] = {
    use RegisteredPoStProof::*;
    [
        StackedDrgWinning2KiBV1,
        StackedDrgWinning8MiBV1,
        StackedDrgWinning512MiBV1,
        StackedDrgWinning32GiBV1,
        StackedDrgWinning64GiBV1,
        StackedDrgWindow2KiBV1,
        StackedDrgWindow8MiBV1,
        StackedDrgWindow512MiBV1,
        StackedDrgWindow32GiBV1,
        StackedDrgWindow64GiBV1,
        StackedDrgWindow2KiBV1_2,
        StackedDrgWindow8MiBV1_2,
        StackedDrgWindow512MiBV1_2,
        StackedDrgWindow32GiBV1_2,
        StackedDrgWindow64GiBV1_2,
    ]
};

/// Update proofs in FFI order.
pub const UPDATE_PROOFS: [RegisteredUpdateProof; 5] = {
    use RegisteredUpdateProof::*;
    [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
    ]
};

fn bad(message: impl Into<String>) -> EngineError {
    EngineError::input("invalid_request", message.into())
}

fn pick<T: Copy>(table: &[T], n: u64, what: &str) -> Result<T, EngineError> {
    usize::try_from(n)
        .ok()
        .and_then(|i| table.get(i).copied())
        .ok_or_else(|| {
            bad(format!(
                "registered_proof {n} is not a known {what} (0..{})",
                table.len()
            ))
        })
}

/// The FFI number of a seal proof (for clients building requests).
pub fn seal_proof_number(p: RegisteredSealProof) -> u64 {
    SEAL_PROOFS.iter().position(|&x| x == p).unwrap_or(0) as u64
}

/// The FFI number of a PoSt proof.
pub fn post_proof_number(p: RegisteredPoStProof) -> u64 {
    POST_PROOFS.iter().position(|&x| x == p).unwrap_or(0) as u64
}

/// The FFI number of an update proof.
pub fn update_proof_number(p: RegisteredUpdateProof) -> u64 {
    UPDATE_PROOFS.iter().position(|&x| x == p).unwrap_or(0) as u64
}

/// Decodes the older vanilla proof framing of PoSt and SnapDeals in `vanilla_proof` (10):
/// a JSON array of base64 strings.
pub fn decode_vanilla_proofs(bytes: &[u8]) -> Result<Vec<Vec<u8>>, EngineError> {
    let items: Option<Vec<String>> = serde_json::from_slice(bytes).map_err(|e| {
        bad(format!(
            "vanilla_proof must be a JSON array of base64 strings (Go json.Marshal([][]byte)) \
             when vanilla_proofs is empty: {e}"
        ))
    })?;
    let items = items.unwrap_or_default();
    check_vanilla_count(items.len())?;
    items
        .iter()
        .enumerate()
        .map(|(i, s)| {
            base64::engine::general_purpose::STANDARD
                .decode(s.as_bytes())
                .map_err(|e| bad(format!("vanilla proof {i} is not base64: {e}")))
        })
        .collect()
}

/// Encodes vanilla proofs in the framing [`decode_vanilla_proofs`] reads.
pub fn encode_vanilla_proofs(proofs: &[Vec<u8>]) -> Vec<u8> {
    let items: Vec<String> = proofs
        .iter()
        .map(|p| base64::engine::general_purpose::STANDARD.encode(p))
        .collect();
    serde_json::to_vec(&items).expect("strings serialize")
}

fn check_vanilla_count(n: usize) -> Result<(), EngineError> {
    if n > MAX_VANILLA_ENTRIES {
        return Err(bad(format!(
            "{n} vanilla proofs, at most {MAX_VANILLA_ENTRIES}"
        )));
    }
    Ok(())
}

/// The vanilla proofs of a PoSt or SnapDeals request: `vanilla_proofs` (11), or the JSON
/// framing in `vanilla_proof` (10) when 11 is empty. Both set is refused as ambiguous.
fn vanilla_entries(r: &pb::SubmitProofRequest) -> Result<Vec<Vec<u8>>, EngineError> {
    if r.vanilla_proofs.is_empty() {
        return decode_vanilla_proofs(&r.vanilla_proof);
    }
    if !r.vanilla_proof.is_empty() {
        return Err(bad(
            "both vanilla_proof (10) and vanilla_proofs (11) are set; PoSt and SnapDeals \
             take their vanilla proofs in vanilla_proofs",
        ));
    }
    check_vanilla_count(r.vanilla_proofs.len())?;
    Ok(r.vanilla_proofs.clone())
}

fn commitment(field: &str, b: &[u8]) -> Result<[u8; 32], EngineError> {
    b.try_into()
        .map_err(|_| bad(format!("{field} must be 32 raw bytes, got {}", b.len())))
}

/// The digest of a request's inputs: BLAKE2b-256 over every field but `request_id` and
/// `priority`, each as its field number, byte length and bytes (integers little-endian,
/// each vanilla proof entry length-prefixed), so two requests share a digest only when
/// every input is the same. It is computed before anything is parsed.
pub fn input_digest(r: &pb::SubmitProofRequest) -> InputDigest {
    let mut h = blake2b_simd::Params::new()
        .hash_length(32)
        .personal(b"filprove-inputs1")
        .to_state();
    let mut field = |number: u8, bytes: &[u8]| {
        h.update(&[number]);
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(2, &r.proof_kind.to_le_bytes());
    field(3, &r.sector_size.to_le_bytes());
    field(4, &r.registered_proof.to_le_bytes());
    field(10, &r.vanilla_proof);
    field(11, &(r.vanilla_proofs.len() as u64).to_le_bytes());
    for entry in &r.vanilla_proofs {
        field(11, entry);
    }
    field(20, &r.sector_number.to_le_bytes());
    field(21, &r.miner_id.to_le_bytes());
    field(22, &r.randomness);
    field(23, &r.partition_index.to_le_bytes());
    field(30, &r.comm_r_old);
    field(31, &r.comm_r_new);
    field(32, &r.comm_d_new);
    let mut out = [0u8; 32];
    out.copy_from_slice(h.finalize().as_bytes());
    InputDigest(out)
}

/// The lowest priority a kind runs at: WinningPoSt is always CRITICAL, WindowPoSt at least
/// HIGH, so a PoSt never queues behind PoRep partitions whatever the caller sent.
pub fn effective_priority(kind: pb::ProofKind, requested: pb::Priority) -> Priority {
    let floor = match kind {
        pb::ProofKind::WinningPost => Priority::Critical,
        pb::ProofKind::WindowPostPartition => Priority::High,
        _ => Priority::Low,
    };
    let asked = match requested {
        pb::Priority::Low => Priority::Low,
        pb::Priority::Normal | pb::Priority::Unspecified => Priority::Normal,
        pb::Priority::High => Priority::High,
        pb::Priority::Critical => Priority::Critical,
    };
    asked.max(floor)
}

fn fil(e: filprove_filecoin::FilecoinError) -> EngineError {
    EngineError::input(e.code(), e)
}

/// Converts and validates a request.
pub fn to_request(r: &pb::SubmitProofRequest) -> Result<(ProofRequest, Priority), EngineError> {
    let kind = pb::ProofKind::try_from(r.proof_kind)
        .map_err(|_| bad(format!("unknown proof_kind {}", r.proof_kind)))?;
    let priority = pb::Priority::try_from(r.priority)
        .map_err(|_| bad(format!("unknown priority {}", r.priority)))?;
    let randomness = || -> Result<[u8; 32], EngineError> {
        let mut rand = commitment("randomness", &r.randomness)?;
        rand[31] &= 0x3f;
        Ok(rand)
    };
    let check_size = |actual: u64| -> Result<(), EngineError> {
        if r.sector_size != 0 && r.sector_size != actual {
            return Err(bad(format!(
                "sector_size {} does not match registered_proof {} ({actual} bytes)",
                r.sector_size, r.registered_proof
            )));
        }
        Ok(())
    };
    let request = match kind {
        pb::ProofKind::Unspecified => return Err(bad("proof_kind is unspecified")),
        pb::ProofKind::PorepSealCommit => {
            let registered = pick(&SEAL_PROOFS, r.registered_proof, "RegisteredSealProof")?;
            check_size(u64::from(registered.sector_size()))?;
            if !r.vanilla_proofs.is_empty() {
                return Err(bad(
                    "a PoRep takes its C1 output in vanilla_proof (10); vanilla_proofs (11) \
                     must be empty",
                ));
            }
            let req = ProofRequest::parse_c1(&r.vanilla_proof, Some(r.sector_number), r.miner_id)
                .map_err(fil)?;
            if let RequestBody::PoRep { c1, .. } = req.body() {
                if c1.registered_proof != registered {
                    return Err(bad(format!(
                        "registered_proof {} ({registered:?}) differs from the C1 output's {:?}",
                        r.registered_proof, c1.registered_proof
                    )));
                }
            }
            req
        }
        pb::ProofKind::WinningPost | pb::ProofKind::WindowPostPartition => {
            let registered = pick(&POST_PROOFS, r.registered_proof, "RegisteredPoStProof")?;
            check_size(u64::from(registered.sector_size()))?;
            let vanilla_proofs = vanilla_entries(r)?;
            let body = if kind == pb::ProofKind::WinningPost {
                RequestBody::WinningPoSt {
                    registered,
                    miner_id: r.miner_id,
                    randomness: randomness()?,
                    vanilla_proofs,
                }
            } else {
                RequestBody::WindowPoSt {
                    registered,
                    miner_id: r.miner_id,
                    randomness: randomness()?,
                    partition_index: r.partition_index,
                    vanilla_proofs,
                }
            };
            ProofRequest::new(body).map_err(fil)?
        }
        pb::ProofKind::SnapDealsUpdate => {
            let registered = pick(&UPDATE_PROOFS, r.registered_proof, "RegisteredUpdateProof")?;
            check_size(u64::from(registered.sector_size()))?;
            let body = RequestBody::SnapDeals {
                registered,
                comm_r_old: commitment("comm_r_old", &r.comm_r_old)?,
                comm_r_new: commitment("comm_r_new", &r.comm_r_new)?,
                comm_d_new: commitment("comm_d_new", &r.comm_d_new)?,
                vanilla_proofs: vanilla_entries(r)?,
            };
            ProofRequest::new(body).map_err(fil)?
        }
    };
    Ok((request, effective_priority(kind, priority)))
}

/// The wire request for a validated [`ProofRequest`] (what clients send; the inverse of
/// [`to_request`]).
pub fn to_wire(
    request: &ProofRequest,
    request_id: &str,
    priority: pb::Priority,
) -> pb::SubmitProofRequest {
    let mut w = pb::SubmitProofRequest {
        request_id: request_id.to_string(),
        priority: priority as i32,
        sector_size: request.circuit().sector_size,
        ..Default::default()
    };
    match request.body() {
        RequestBody::PoRep {
            c1,
            sector_number,
            miner_id,
        } => {
            w.proof_kind = pb::ProofKind::PorepSealCommit as i32;
            w.registered_proof = seal_proof_number(c1.registered_proof);
            w.vanilla_proof = serde_json::to_vec(c1).expect("a C1 output serializes");
            w.sector_number = *sector_number;
            w.miner_id = *miner_id;
        }
        RequestBody::WinningPoSt {
            registered,
            miner_id,
            randomness,
            vanilla_proofs,
        } => {
            w.proof_kind = pb::ProofKind::WinningPost as i32;
            w.registered_proof = post_proof_number(*registered);
            w.miner_id = *miner_id;
            w.randomness = randomness.to_vec();
            w.vanilla_proofs = vanilla_proofs.clone();
        }
        RequestBody::WindowPoSt {
            registered,
            miner_id,
            randomness,
            partition_index,
            vanilla_proofs,
        } => {
            w.proof_kind = pb::ProofKind::WindowPostPartition as i32;
            w.registered_proof = post_proof_number(*registered);
            w.miner_id = *miner_id;
            w.randomness = randomness.to_vec();
            w.partition_index = *partition_index;
            w.vanilla_proofs = vanilla_proofs.clone();
        }
        RequestBody::SnapDeals {
            registered,
            comm_r_old,
            comm_r_new,
            comm_d_new,
            vanilla_proofs,
        } => {
            w.proof_kind = pb::ProofKind::SnapDealsUpdate as i32;
            w.registered_proof = update_proof_number(*registered);
            w.comm_r_old = comm_r_old.to_vec();
            w.comm_r_new = comm_r_new.to_vec();
            w.comm_d_new = comm_d_new.to_vec();
            w.vanilla_proofs = vanilla_proofs.clone();
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ffi_numbering() {
        assert_eq!(SEAL_PROOFS[3], RegisteredSealProof::StackedDrg32GiBV1);
        assert_eq!(SEAL_PROOFS[8], RegisteredSealProof::StackedDrg32GiBV1_1);
        assert_eq!(
            POST_PROOFS[3],
            RegisteredPoStProof::StackedDrgWinning32GiBV1
        );
        assert_eq!(
            POST_PROOFS[13],
            RegisteredPoStProof::StackedDrgWindow32GiBV1_2
        );
        assert_eq!(UPDATE_PROOFS[0], RegisteredUpdateProof::StackedDrg2KiBV1);
        assert_eq!(
            seal_proof_number(RegisteredSealProof::StackedDrg2KiBV1_1),
            5
        );
        assert_eq!(
            post_proof_number(RegisteredPoStProof::StackedDrgWindow2KiBV1_2),
            10
        );
        assert!(pick(&POST_PROOFS, 15, "x").is_err());
    }

    #[test]
    fn vanilla_framing_round_trips() {
        let proofs = vec![vec![1u8, 2, 3], vec![], vec![255; 100]];
        let enc = encode_vanilla_proofs(&proofs);
        assert!(enc.starts_with(b"[\"AQID\""));
        assert_eq!(decode_vanilla_proofs(&enc).unwrap(), proofs);
        assert_eq!(
            decode_vanilla_proofs(b"null").unwrap(),
            Vec::<Vec<u8>>::new()
        );
        assert_eq!(
            decode_vanilla_proofs(b"\x01\x02").unwrap_err().code(),
            "invalid_request"
        );
        assert!(decode_vanilla_proofs(b"[\"***\"]").is_err());
    }

    #[test]
    fn the_input_digest_covers_every_input_but_id_and_priority() {
        let base = pb::SubmitProofRequest {
            request_id: "a".into(),
            proof_kind: 3,
            registered_proof: 10,
            vanilla_proofs: vec![vec![1, 2], vec![3]],
            randomness: vec![7; 32],
            ..Default::default()
        };
        let d = input_digest(&base);
        let same = pb::SubmitProofRequest {
            request_id: "b".into(),
            priority: pb::Priority::Critical as i32,
            ..base.clone()
        };
        assert_eq!(input_digest(&same), d);
        let changes: [fn(&mut pb::SubmitProofRequest); 12] = [
            |r| r.proof_kind = 4,
            |r| r.sector_size = 2048,
            |r| r.registered_proof = 11,
            |r| r.vanilla_proof = b"[]".to_vec(),
            // Entry boundaries count: [1, 2], [3] is not [1], [2, 3].
            |r| r.vanilla_proofs = vec![vec![1], vec![2, 3]],
            |r| r.sector_number = 1,
            |r| r.miner_id = 1000,
            |r| r.randomness[0] = 8,
            |r| r.partition_index = 1,
            |r| r.comm_r_old = vec![0; 32],
            |r| r.comm_r_new = vec![0; 32],
            |r| r.comm_d_new = vec![0; 32],
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut r = base.clone();
            change(&mut r);
            assert_ne!(input_digest(&r), d, "change {i}");
        }
    }

    #[test]
    fn priorities_have_floors() {
        use pb::{Priority as P, ProofKind as K};
        assert_eq!(
            effective_priority(K::WinningPost, P::Low),
            Priority::Critical
        );
        assert_eq!(
            effective_priority(K::WindowPostPartition, P::Normal),
            Priority::High
        );
        assert_eq!(
            effective_priority(K::PorepSealCommit, P::Unspecified),
            Priority::Normal
        );
        assert_eq!(
            effective_priority(K::PorepSealCommit, P::Low),
            Priority::Low
        );
    }

    #[test]
    fn rejects_bad_requests() {
        let mut r = pb::SubmitProofRequest {
            proof_kind: pb::ProofKind::WinningPost as i32,
            ..Default::default()
        };
        r.vanilla_proofs = vec![vec![1]];
        r.randomness = vec![0; 31];
        assert!(to_request(&r)
            .unwrap_err()
            .to_string()
            .contains("randomness"));
        r.proof_kind = 0;
        assert!(to_request(&r).is_err());
        r.proof_kind = 99;
        assert!(to_request(&r).is_err());
        let r = pb::SubmitProofRequest {
            proof_kind: pb::ProofKind::SnapDealsUpdate as i32,
            registered_proof: 0,
            sector_size: 32 << 30,
            ..Default::default()
        };
        assert!(to_request(&r)
            .unwrap_err()
            .to_string()
            .contains("sector_size"));
        let r = pb::SubmitProofRequest {
            proof_kind: pb::ProofKind::PorepSealCommit as i32,
            registered_proof: 5,
            vanilla_proofs: vec![vec![1]],
            ..Default::default()
        };
        assert!(to_request(&r).unwrap_err().to_string().contains("(11)"));
        let r = pb::SubmitProofRequest {
            proof_kind: pb::ProofKind::WindowPostPartition as i32,
            registered_proof: 10,
            vanilla_proofs: vec![Vec::new(); MAX_VANILLA_ENTRIES + 1],
            randomness: vec![0; 32],
            ..Default::default()
        };
        assert!(to_request(&r).unwrap_err().to_string().contains("at most"));
    }
}
