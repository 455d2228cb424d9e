//! The C1 wrapper `{"SectorNum","Phase1Out","SectorSize"}` built from its fields, so the
//! fuzzer mutates the C1 JSON inside `Phase1Out` directly rather than its base64 text.
//!
//! Layout: `SectorNum` (u64), miner id (u64), a size byte (0..=4: 2 KiB, 8 MiB, 512 MiB,
//! 32 GiB, 64 GiB; otherwise a u64 follows), a mode byte (bit 0: `Phase1Out` is the rest
//! as text instead of its base64; bits 1-2: the sector number argument of `parse_c1`:
//! none, `SectorNum`, `SectorNum + 1`, `SectorNum - 1`), then the C1 JSON.

use base64::Engine as _;
use filprove_filecoin::c1::{unwrap_c1, C1Wrapper};
use filprove_filecoin::{ProofRequest, RequestBody};

use super::input::Input;

const SIZES: [u64; 5] = [2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30];

/// Unwraps and parses the wrapper built from `data`; what is accepted must carry the
/// wrapper's sector number, size and the miner id given. True when accepted.
pub fn run(data: &[u8]) -> bool {
    let mut input = Input::new(data);
    let sector_num = input.u64();
    let miner_id = input.u64();
    let size = input.u8();
    let sector_size = match SIZES.get(usize::from(size)) {
        Some(&s) => s,
        None => input.u64(),
    };
    let mode = input.u8();
    let inner = input.rest();
    let phase1_out = if mode & 1 == 1 {
        String::from_utf8_lossy(inner).into_owned()
    } else {
        base64::engine::general_purpose::STANDARD.encode(inner)
    };
    let argument = match (mode >> 1) & 3 {
        0 => None,
        1 => Some(sector_num),
        2 => Some(sector_num.wrapping_add(1)),
        _ => Some(sector_num.wrapping_sub(1)),
    };
    let wrapper = C1Wrapper {
        sector_num,
        phase1_out,
        sector_size,
    };
    let unwrapped = unwrap_c1(&wrapper);
    if let Ok((c1, n)) = &unwrapped {
        assert_eq!(*n, sector_num);
        assert_eq!(u64::from(c1.registered_proof.sector_size()), sector_size);
    }
    let json = serde_json::to_vec(&wrapper).expect("the wrapper serializes");
    let Ok(request) = ProofRequest::parse_c1(&json, argument, miner_id) else {
        return false;
    };
    assert!(
        unwrapped.is_ok(),
        "parse_c1 accepts a wrapper unwrap_c1 refuses"
    );
    assert!(
        argument.is_none_or(|a| a == sector_num),
        "a sector number other than the wrapper's was accepted"
    );
    match request.body() {
        RequestBody::PoRep {
            sector_number,
            miner_id: m,
            ..
        } => {
            assert_eq!(*sector_number, sector_num);
            assert_eq!(*m, miner_id);
        }
        other => panic!("a C1 gave a request of another kind: {other:?}"),
    }
    true
}
