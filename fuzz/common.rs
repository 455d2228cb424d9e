//! Shared by the targets: the panic policy.
//!
//! libfuzzer-sys installs a panic hook that aborts on every panic, including panics that
//! filprove catches on purpose: `no_panic` in crates/filecoin/src/circuits turns a panic
//! inside filecoin-proofs / storage-proofs on a malformed vanilla proof into an input
//! error, as the daemon needs. Here those count as handled, as they are in the daemon.
//! The standard hook is put back so they are still printed. A panic that escapes the
//! parser still aborts (libfuzzer-sys catches it around the target) and is a crash.
//! Set `FILPROVE_FUZZ_STRICT_PANICS=1` to keep libfuzzer-sys' hook and count every panic,
//! caught or not.

pub fn init() {
    if std::env::var_os("FILPROVE_FUZZ_STRICT_PANICS").is_none() {
        // take_hook returns libfuzzer-sys' hook and puts the standard one back.
        drop(std::panic::take_hook());
    }
}
