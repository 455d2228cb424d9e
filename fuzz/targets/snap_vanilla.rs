//! The SnapDeals vanilla proof decoder: bincode `PartitionProof` entries (field 11 of
//! `SubmitProofRequest`), one input entry per partition proof, through `ProofRequest::new`
//! (bounds, commitments, decoding, filecoin-proofs' vanilla verification).
//!
//! Layout: a proof byte (index into [`PROOFS`], modulo its length), comm_r_old,
//! comm_r_new and comm_d_new (32 bytes each), then the entries (u32 length, bytes; see
//! `Input::entries`).

use filprove_filecoin::{ProofKind, ProofRequest, RegisteredUpdateProof, RequestBody};

use super::input::Input;

/// Every update proof filecoin-proofs-api 19.1 registers.
pub const PROOFS: [RegisteredUpdateProof; 5] = {
    use RegisteredUpdateProof::*;
    [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
    ]
};

/// Validates the SnapDeals request built from `data`; an accepted one has one partition
/// per entry, each with public inputs. True when
/// accepted.
pub fn run(data: &[u8]) -> bool {
    let mut input = Input::new(data);
    let registered = PROOFS[usize::from(input.u8()) % PROOFS.len()];
    let comm_r_old = input.array::<32>();
    let comm_r_new = input.array::<32>();
    let comm_d_new = input.array::<32>();
    let vanilla_proofs = input.entries();
    let entries = vanilla_proofs.len();
    let Ok(request) = ProofRequest::new(RequestBody::SnapDeals {
        registered,
        comm_r_old,
        comm_r_new,
        comm_d_new,
        vanilla_proofs,
    }) else {
        return false;
    };
    assert_eq!(request.kind(), ProofKind::SnapDeals);
    assert_eq!(request.num_partitions(), entries);
    let inputs = request
        .public_inputs()
        .expect("a validated request has public inputs");
    assert_eq!(inputs.len(), entries);
    true
}
