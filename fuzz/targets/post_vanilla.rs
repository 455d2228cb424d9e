//! The PoSt vanilla proof decoder: bincode `FallbackPoStSectorProof` entries (field 11 of
//! `SubmitProofRequest`), one input entry per vanilla proof, through `ProofRequest::new`
//! (bounds, decoding, shape checks, filecoin-proofs' vanilla verification).
//!
//! Layout: a proof byte (index into [`PROOFS`], modulo its length), a body byte (bit 0:
//! a WindowPoSt body, else WinningPoSt; a mismatch with the proof's type must be refused),
//! miner id (u64), randomness (32 bytes), partition index (u32), then the entries (u32
//! length, bytes; see `Input::entries`).

use filprove_filecoin::{ProofKind, ProofRequest, RequestBody};

use super::input::Input;

/// Every PoSt proof filecoin-proofs-api 19.1 registers (the daemon's own table).
pub use filprove::server::convert::POST_PROOFS as PROOFS;

/// Validates the PoSt request built from `data`; an accepted one is one partition of the
/// body's kind, and its public inputs can be computed. True when accepted.
pub fn run(data: &[u8]) -> bool {
    let mut input = Input::new(data);
    let registered = PROOFS[usize::from(input.u8()) % PROOFS.len()];
    let window = input.u8() & 1 == 1;
    let miner_id = input.u64();
    let randomness = input.array::<32>();
    let partition_index = input.u32();
    let vanilla_proofs = input.entries();
    let body = if window {
        RequestBody::WindowPoSt {
            registered,
            miner_id,
            randomness,
            partition_index,
            vanilla_proofs,
        }
    } else {
        RequestBody::WinningPoSt {
            registered,
            miner_id,
            randomness,
            vanilla_proofs,
        }
    };
    let Ok(request) = ProofRequest::new(body) else {
        return false;
    };
    let kind = if window {
        ProofKind::WindowPoSt
    } else {
        ProofKind::WinningPoSt
    };
    assert_eq!(request.kind(), kind);
    assert_eq!(request.num_partitions(), 1);
    let inputs = request
        .public_inputs()
        .expect("a validated request has public inputs");
    assert_eq!(inputs.len(), 1);
    true
}
