//! `decode_vanilla_proofs`: the PoSt / SnapDeals vanilla proof framing (a JSON array of
//! base64 strings). Whatever decodes must survive an encode / decode round trip.

use filprove::server::convert::{decode_vanilla_proofs, encode_vanilla_proofs};

/// Decodes `data`; a decoded list must come back unchanged from its encoding. True when
/// it decodes.
pub fn run(data: &[u8]) -> bool {
    let Ok(proofs) = decode_vanilla_proofs(data) else {
        return false;
    };
    let again = decode_vanilla_proofs(&encode_vanilla_proofs(&proofs))
        .expect("re-encoded vanilla proofs decode");
    assert_eq!(again, proofs);
    true
}
