//! The `.params` reader: layout parsing (`ParamsHeader`), section decoding (`Srs`) and the
//! verifying key at the start of the file (`VerifyingKey::read`).
//!
//! Every count in a file is a u32 that the reader must check against the file's length
//! before it allocates. The cargo-fuzz binary aborts on any single allocation above 64 MiB
//! (`CappedAlloc` in fuzz/common.rs; scripts/fuzz.sh gives inputs of at most 64 KiB), so an
//! allocation sized by a count rather than by the input is a crash.

use filprove_groth16::params::{ParamsHeader, ReadOptions};
use filprove_groth16::{Srs, VerifyingKey};

/// Inputs up to this size are also decoded with full point checks (about 60 us a point).
const VALIDATE_MAX_BYTES: usize = 16 << 10;

/// Reads `data` as a `.params` file; what decodes must agree with its layout and come
/// back unchanged from its encoding. True when it decodes.
pub fn run(data: &[u8]) -> bool {
    let header = ParamsHeader::from_bytes(data, "fuzz.params");
    let trusted = Srs::from_bytes(data, "fuzz.params", &ReadOptions::trusted());
    let mut prefix = data;
    let vk = VerifyingKey::read(&mut prefix);
    if data.len() <= VALIDATE_MAX_BYTES {
        let validated = Srs::from_bytes(data, "fuzz.params", &ReadOptions::validating());
        if let Ok(v) = &validated {
            // Full checks accept a subset of what the trusted decoding accepts.
            assert_eq!(trusted.as_ref().ok(), Some(v), "validated but not trusted");
        }
    }
    let Ok(srs) = trusted else { return false };
    let header = header.expect("a file that decodes has a valid layout");
    let shape = header.shape();
    assert_eq!(srs.vk.ic.len() as u64, shape.num_inputs);
    assert_eq!(srs.h.len() as u64, shape.h);
    assert_eq!(srs.l.len() as u64, shape.l);
    assert_eq!(srs.a.len() as u64, shape.a);
    assert_eq!(srs.b_g1.len() as u64, shape.b);
    assert_eq!(srs.b_g2.len() as u64, header.b_g2.count);
    assert_eq!(srs.file_len(), data.len() as u64);
    assert_eq!(
        vk.as_ref().ok(),
        Some(&srs.vk),
        "the streaming verifying-key reader disagrees with the file reader"
    );
    let mut encoded = Vec::with_capacity(data.len());
    srs.write_to(&mut encoded).expect("writing to a Vec");
    let again = Srs::from_bytes(&encoded, "re-encoded", &ReadOptions::trusted())
        .expect("re-encoded parameters decode");
    assert_eq!(again, srs);
    true
}
