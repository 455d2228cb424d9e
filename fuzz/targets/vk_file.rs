//! The `.vk` reader: `VerifyingKey::read_from` (a whole file, layout checked first) and
//! `VerifyingKey::read` (a stream, as bellperson reads it). A key that decodes is then
//! used to verify a proof, so a hostile key (identity points, many inputs) reaches the
//! pairing code.

use filprove_groth16::{Fr, G1Affine, G2Affine, Proof, VerifyingKey};
use group::prime::PrimeCurveAffine;

/// Reads `data` as a `.vk` file; both readers must agree, and a decoded key must survive
/// its encoding and a verification. True when it decodes.
pub fn run(data: &[u8]) -> bool {
    let exact = VerifyingKey::read_from(data);
    let mut stream = data;
    let streamed = VerifyingKey::read(&mut stream);
    match (&exact, &streamed) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "the two readers decode different keys");
            assert!(stream.is_empty(), "a whole-file key left bytes unread");
        }
        (Ok(_), Err(e)) => panic!("the file reader accepts what the stream reader refuses: {e}"),
        (Err(_), Ok(_)) => assert!(
            !stream.is_empty(),
            "the stream reader accepts exactly the bytes that the file reader refuses"
        ),
        (Err(_), Err(_)) => {}
    }
    let Ok(vk) = exact else { return false };
    let again = VerifyingKey::read_from(&vk.to_bytes()).expect("re-encoded key decodes");
    assert_eq!(again, vk);
    let proof = Proof {
        a: G1Affine::generator(),
        b: G2Affine::generator(),
        c: G1Affine::generator(),
    };
    let inputs: Vec<Fr> = (1..vk.ic.len() as u64).map(Fr::from).collect();
    let _ = vk.verify(&proof, &inputs);
    true
}
