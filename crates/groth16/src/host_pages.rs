//! Huge pages for partition-sized vectors.
//!
//! A 32 GiB PoRep partition's vectors are about 16 GB of host memory. Backed by 4 KiB pages
//! they are slow twice over: the first write faults in four million pages, and a GPU
//! backend's page-locking (`cuMemHostRegister`) walks them all. With transparent huge pages
//! (2 MiB) both are faster. Measured on the H200 host (8.6 GB buffer,
//! `crates/cuda/bench/regbench.cu`): first write 5.40 -> 2.24 s, registration 0.82 ->
//! 0.23 s, copy to the GPU unchanged (53.5 GB/s). Hosts usually leave huge pages to the
//! program's choice (`/sys/kernel/mm/transparent_hugepage/enabled` = `madvise`), so each
//! new allocation of an assignment vector is advised to use them. Where the kernel does
//! not support it (or THP is `never`) the advice is a no-op.

/// Allocations below this are left alone (a few huge pages at most).
const MIN_ADVISED_BYTES: usize = 8 << 20;

/// The huge page size the advice aligns to (x86-64 and aarch64 with 4 KiB base pages).
const HUGE_PAGE: usize = 2 << 20;

/// Advises the kernel to back `v`'s allocation (the 2 MiB-aligned part of its whole
/// capacity) with huge pages. Pages already touched keep their size; pages faulted in
/// later get huge ones. Contents are not changed.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // one advisory system call, see SAFETY
pub(crate) fn advise_huge<T>(v: &Vec<T>) {
    let bytes = v.capacity() * size_of::<T>();
    if bytes < MIN_ADVISED_BYTES {
        return;
    }
    let start = v.as_ptr() as usize;
    let (lo, hi) = (
        start.next_multiple_of(HUGE_PAGE),
        (start + bytes) / HUGE_PAGE * HUGE_PAGE,
    );
    if hi <= lo {
        return;
    }
    // SAFETY: [lo, hi) is page-aligned and lies inside `v`'s live allocation, which `v`
    // borrows for the call. MADV_HUGEPAGE reads and writes no memory: it only marks the
    // mapping so that later page faults may be served with huge pages (the kernel keeps
    // the contents of any page it merges), so no Rust value is affected.
    let r = unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE) };
    if r != 0 {
        log::debug!(
            "madvise(MADV_HUGEPAGE) of {} bytes: {}",
            hi - lo,
            std::io::Error::last_os_error()
        );
    }
}

/// Advice is Linux-only; elsewhere vectors keep the system's default pages.
#[cfg(not(target_os = "linux"))]
pub(crate) fn advise_huge<T>(_: &Vec<T>) {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The huge pages backing the mapping that contains `addr` (kB, from
    /// /proc/self/smaps), or None when the file says nothing about it.
    fn anon_huge_kib(addr: usize) -> Option<u64> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((a, b)) = range.split_once('-') {
                    if let (Ok(a), Ok(b)) =
                        (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                    {
                        inside = a <= addr && addr < b;
                        continue;
                    }
                }
            }
            if inside {
                if let Some(kb) = line.strip_prefix("AnonHugePages:") {
                    return kb.trim().trim_end_matches("kB").trim().parse().ok();
                }
            }
        }
        None
    }

    /// An advised vector written after the advice is backed by huge pages wherever the
    /// host lets programs choose (THP `madvise` or `always`), and keeps its contents.
    #[test]
    fn advised_vectors_take_huge_pages_and_keep_their_values() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        let mut v: Vec<u64> = Vec::with_capacity(8 << 20); // 64 MiB, not yet touched
        advise_huge(&v);
        v.extend((0..8u64 << 20).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
        assert!(v
            .iter()
            .enumerate()
            .all(|(i, &x)| x == (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)));
        let huge = anon_huge_kib(v.as_ptr() as usize + (32 << 20));
        if mode.contains("[madvise]") || mode.contains("[always]") {
            let kib = huge.expect("smaps lists the vector's mapping");
            assert!(
                kib > 0,
                "no huge pages behind an advised 64 MiB vector (THP {mode:?})"
            );
        } else {
            eprintln!("transparent huge pages are {mode:?} here: only the contents are checked");
        }
    }
}
