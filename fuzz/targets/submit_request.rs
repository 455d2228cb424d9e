//! `convert::to_request`: a gRPC `SubmitProofRequest` into a validated `ProofRequest`.
//!
//! The input is split into the message's fields: a small header picks proof_kind,
//! registered_proof and priority (biased towards valid values so the parsers behind them
//! are reached), then the scalar fields, the three commitments and the randomness (each
//! usually 32 bytes), half the time a list of `vanilla_proofs` entries (bincode vanilla
//! proofs for PoSt and SnapDeals), and whatever is left is `vanilla_proof` (the C1 JSON for
//! PoRep, the older JSON-array-of-base64 framing for PoSt and SnapDeals).

use arbitrary::{Arbitrary, Unstructured};
use filprove::server::convert::to_request;
use filprove::server::pb::SubmitProofRequest;

/// 32 bytes most of the time, otherwise any length (to reach the length checks).
fn bytes32(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<u8>> {
    if u.ratio(7, 8)? {
        Ok(<[u8; 32]>::arbitrary(u)?.to_vec())
    } else {
        Ok(Vec::<u8>::arbitrary(u)?)
    }
}

fn message(mut raw: Unstructured<'_>) -> arbitrary::Result<SubmitProofRequest> {
    let u = &mut raw;
    // proof_kind 0..=4 and priority 0..=4 are the defined values; a few others as well.
    let proof_kind = i32::from(u.int_in_range(0u8..=6)?);
    let priority = i32::from(u.int_in_range(0u8..=5)?);
    let registered_proof = if u.ratio(15, 16)? {
        u64::from(u.int_in_range(0u8..=20)?)
    } else {
        u64::arbitrary(u)?
    };
    let sector_size = if u.ratio(3, 4)? {
        0
    } else {
        u64::arbitrary(u)?
    };
    Ok(SubmitProofRequest {
        request_id: String::new(),
        proof_kind,
        sector_size,
        registered_proof,
        priority,
        sector_number: u64::arbitrary(u)?,
        miner_id: u64::arbitrary(u)?,
        partition_index: u32::arbitrary(u)?,
        randomness: bytes32(u)?,
        comm_r_old: bytes32(u)?,
        comm_r_new: bytes32(u)?,
        comm_d_new: bytes32(u)?,
        vanilla_proofs: if u.ratio(1, 2)? {
            Vec::<Vec<u8>>::arbitrary(u)?
        } else {
            Vec::new()
        },
        vanilla_proof: raw.take_rest().to_vec(),
    })
}

/// Builds a `SubmitProofRequest` from `data` and converts it; true when accepted.
pub fn run(data: &[u8]) -> bool {
    message(Unstructured::new(data)).is_ok_and(|request| to_request(&request).is_ok())
}
