//! Shared by the targets: the panic policy, and the allocation cap of the file readers.
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

/// The largest single allocation [`CappedAlloc`] lets through: 64 MiB, a thousand times the
/// largest input `scripts/fuzz.sh` gives the file readers.
#[allow(dead_code)]
pub const MAX_ALLOCATION_BYTES: usize = 64 << 20;

/// The system allocator, aborting on any single allocation above [`MAX_ALLOCATION_BYTES`]:
/// a reader that sizes a buffer by a count in the file rather than by the file's length
/// crashes the run. libFuzzer's `-malloc_limit_mb` does the same only in sanitizer builds
/// (it needs their malloc hooks); this works in every build (docs/fuzzing.md).
#[allow(dead_code)]
pub struct CappedAlloc;

#[allow(dead_code)]
fn too_large() -> ! {
    use std::io::Write as _;
    // No formatting: nothing here may allocate.
    let _ = std::io::stderr().write_all(b"fuzz: a single allocation above 64 MiB\n");
    std::process::abort()
}

// SAFETY: every call is forwarded to `System` unchanged, or the process aborts.
unsafe impl std::alloc::GlobalAlloc for CappedAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION_BYTES {
            too_large();
        }
        std::alloc::System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION_BYTES {
            too_large();
        }
        std::alloc::System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        if new_size > MAX_ALLOCATION_BYTES {
            too_large();
        }
        std::alloc::System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        std::alloc::System.dealloc(ptr, layout)
    }
}
