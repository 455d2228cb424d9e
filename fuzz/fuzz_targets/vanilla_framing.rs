//! `decode_vanilla_proofs`: the PoSt / SnapDeals vanilla proof framing (a JSON array of
//! base64 strings). Whatever decodes must survive an encode / decode round trip.
#![no_main]

#[path = "../common.rs"]
mod common;

use filprove::server::convert::{decode_vanilla_proofs, encode_vanilla_proofs};
use libfuzzer_sys::fuzz_target;

fuzz_target!(init: common::init(), |data: &[u8]| {
    if let Ok(proofs) = decode_vanilla_proofs(data) {
        let again = decode_vanilla_proofs(&encode_vanilla_proofs(&proofs))
            .expect("re-encoded vanilla proofs decode");
        assert_eq!(again, proofs);
    }
});
