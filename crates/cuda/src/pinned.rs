//! Page-locked host memory: host vectors registered in place (so a copy stream can read
//! them at full PCIe speed while kernels run), and a pair of pinned bounce buffers for data
//! that cannot be registered (copied in by CPU threads, then sent on a stream).

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys::{self, CUresult};
use cudarc::driver::{result, CudaContext, CudaEvent, CudaStream, CudaViewMut, DevicePtrMut};
use filprove_groth16::ProveError;
use rayon::prelude::*;

use crate::gpu::Gpu;

/// Host memory below this size is not worth registering (the call costs more than the
/// pageable copy).
pub const MIN_REGISTER_BYTES: usize = 8 << 20;

/// Host memory registered with the driver for as long as this value lives.
pub struct Registered {
    ptr: usize,
    bytes: usize,
    ctx: Arc<CudaContext>,
}

impl Registered {
    /// Registers the `bytes` bytes at `ptr` in place (a vector's whole capacity,
    /// initialised or not: the driver only pins the pages). An error is the reason
    /// registration was not possible, for the fallback's log line.
    ///
    /// # Safety
    /// The range is one live allocation that stays allocated and unmoved until this value
    /// is dropped and every copy from it has completed.
    pub unsafe fn new(gpu: &Gpu, ptr: *const u8, bytes: usize) -> Result<Self, String> {
        if bytes < MIN_REGISTER_BYTES {
            return Err(format!("{bytes} bytes: too small to register"));
        }
        // SAFETY: new_unchecked has the same contract as this function (one live range,
        // kept allocated and unmoved until the value is dropped and its copies complete),
        // which the caller upholds.
        unsafe { Self::new_unchecked(gpu, ptr, bytes) }
    }

    /// As [`Registered::new`] without the size floor.
    ///
    /// # Safety
    /// As [`Registered::new`].
    unsafe fn new_unchecked(gpu: &Gpu, ptr: *const u8, bytes: usize) -> Result<Self, String> {
        gpu.bind().map_err(|e| e.to_string())?;
        // SAFETY: the caller's contract; the driver pins the pages (PORTABLE: visible to
        // every context) and reads them only through copies we order before the drop.
        let r = unsafe {
            sys::cuMemHostRegister_v2(ptr as *mut c_void, bytes, sys::CU_MEMHOSTREGISTER_PORTABLE)
        };
        if r != CUresult::CUDA_SUCCESS {
            return Err(format!("cuMemHostRegister of {bytes} bytes: {r:?}"));
        }
        Ok(Self {
            ptr: ptr as usize,
            bytes,
            ctx: gpu.context().clone(),
        })
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: registered by `new`; every copy reading it completed (caller's contract).
        let r = unsafe { sys::cuMemHostUnregister(self.ptr as *mut c_void) };
        if r != CUresult::CUDA_SUCCESS {
            log::warn!("cuMemHostUnregister of {} bytes: {r:?}", self.bytes);
        }
    }
}

// SAFETY: the value only names a host range (an address kept as usize, never dereferenced
// here) and holds the context it was registered in; Drop binds that context before
// cuMemHostUnregister, which the driver accepts from any thread.
unsafe impl Send for Registered {}
// SAFETY: no method takes &self to touch the range or the driver; shared references can
// only read the address and length.
unsafe impl Sync for Registered {}

/// Bytes per registration of [`RegisteredPieces`]. Registering or unregistering holds
/// the driver, and every other thread's driver calls (a kernel region's launches
/// included) wait meanwhile: unregistering a 32 GiB partition's 16.7 GB in one call held
/// it ~1.4 s on the H200 host (docs/decisions/008-partition-buffers-reused.md). A 64 MiB
/// piece holds it 3-25 ms (freshly
/// written memory is the slow end), short enough to stop between two pieces when the
/// registration starts to delay kernels ([`RegisteredPieces::new_while`]).
pub const REGISTER_PIECE: usize = 64 << 20;

/// Consecutive pieces of [`REGISTER_PIECE`] bytes of a host range (the last one may be
/// shorter), registered one by one and unregistered one by one, with a pause between two
/// calls so that other threads' driver calls get through. A copy from it must not span
/// two pieces ([`piece_chunks`]).
pub struct RegisteredPieces {
    pieces: Vec<Registered>,
}

impl RegisteredPieces {
    /// Registers the `bytes` bytes at `ptr` from offset `from` (a multiple of
    /// [`REGISTER_PIECE`]) piece by piece, asking `more` before each piece whether to go
    /// on. Returns the pieces and the offset they reach (`bytes` when complete). A range
    /// below [`MIN_REGISTER_BYTES`] is refused; on an error the pieces registered by this
    /// call are released.
    ///
    /// # Safety
    /// As [`Registered::new`], for the whole range.
    pub unsafe fn new_while(
        gpu: &Gpu,
        ptr: *const u8,
        bytes: usize,
        from: usize,
        more: &mut dyn FnMut() -> bool,
    ) -> Result<(Self, usize), String> {
        if bytes < MIN_REGISTER_BYTES {
            return Err(format!("{bytes} bytes: too small to register"));
        }
        if !from.is_multiple_of(REGISTER_PIECE) && from < bytes {
            return Err(format!("offset {from}: not at a piece boundary"));
        }
        let mut pieces = Vec::with_capacity(bytes.saturating_sub(from).div_ceil(REGISTER_PIECE));
        let mut off = from;
        while off < bytes && more() {
            if !pieces.is_empty() {
                hand_over_driver();
            }
            let len = REGISTER_PIECE.min(bytes - off);
            // SAFETY: a sub-range of the caller's range. A short last piece is registered
            // directly (the size floor is for whole vectors).
            let piece = unsafe { Registered::new_unchecked(gpu, ptr.add(off), len) }?;
            pieces.push(piece);
            off += len;
        }
        Ok((Self { pieces }, off))
    }
}

impl Drop for RegisteredPieces {
    fn drop(&mut self) {
        while let Some(p) = self.pieces.pop() {
            drop(p);
            if !self.pieces.is_empty() {
                hand_over_driver();
            }
        }
    }
}

/// A pause between two registration calls that hands the driver to a thread waiting for
/// it (a kernel region's next launch or count read). It does not make registration
/// harmless: on the H200 host a region that runs while the other worker registers a
/// partition's 16.7 GB still slows down, with or without it
/// (docs/decisions/009-host-registration-piece-by-piece.md).
fn hand_over_driver() {
    std::thread::sleep(std::time::Duration::from_micros(100));
}

/// `bytes` split into consecutive `(offset, len)` chunks that never span two pieces of a
/// range registered by [`RegisteredPieces`] from the same start.
pub fn piece_chunks(bytes: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..bytes)
        .step_by(REGISTER_PIECE)
        .map(move |off| (off, REGISTER_PIECE.min(bytes - off)))
}

/// Two pinned host buffers used in turn: a chunk of pageable host data is copied into one
/// by CPU threads while the other is being sent to the device on a stream.
pub struct Bounce {
    bufs: [(usize, Option<CudaEvent>); 2],
    chunk: usize,
    next: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: the buffers are owned host allocations; events are plain driver handles.
unsafe impl Send for Bounce {}

impl Bounce {
    /// Allocates two pinned buffers of `chunk` bytes.
    pub fn new(gpu: &Gpu, chunk: usize) -> Result<Self, ProveError> {
        gpu.bind()?;
        let mut ptrs = [0usize; 2];
        for p in &mut ptrs {
            // SAFETY: cuMemHostAlloc of `chunk` bytes in the context bound just above; the
            // pointer is kept in self, written before it is read, and freed once in Drop.
            let ptr = unsafe { result::malloc_host(chunk, sys::CU_MEMHOSTALLOC_PORTABLE) }
                .map_err(|e| gpu.err("cuMemHostAlloc (bounce buffer)", e))?;
            *p = ptr as usize;
        }
        Ok(Self {
            bufs: [(ptrs[0], None), (ptrs[1], None)],
            chunk,
            next: 0,
            ctx: gpu.context().clone(),
        })
    }

    /// Bytes per buffer.
    pub fn chunk(&self) -> usize {
        self.chunk
    }

    /// Queues `host` -> `dst` on `stream` through the two buffers. Returns when the last
    /// chunk is queued (the host waits only for a buffer's previous copy to finish before
    /// refilling it). The copy is complete when `stream` reaches this point.
    pub fn upload(
        &mut self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        host: &[u8],
        dst: &mut CudaViewMut<'_, u8>,
    ) -> Result<(), ProveError> {
        if dst.len() < host.len() {
            return Err(ProveError::Invalid(format!(
                "upload of {} bytes into {}",
                host.len(),
                dst.len()
            )));
        }
        let (base, _guard) = dst.device_ptr_mut(stream);
        for (k, piece) in host.chunks(self.chunk).enumerate() {
            let (ptr, ev) = &mut self.bufs[self.next];
            if let Some(e) = ev.take() {
                e.synchronize().map_err(|e| gpu.err("bounce wait", e))?;
            }
            // SAFETY: the buffer holds `chunk` >= piece.len() bytes and no copy reads it
            // (its last event completed above).
            let buf = unsafe { std::slice::from_raw_parts_mut(*ptr as *mut u8, piece.len()) };
            buf.par_chunks_mut(4 << 20)
                .zip(piece.par_chunks(4 << 20))
                .for_each(|(d, s)| d.copy_from_slice(s));
            let off = (k * self.chunk) as u64;
            // SAFETY: dst has room for host.len() bytes from base; buf stays allocated and
            // unwritten until the event recorded after the copy completes.
            unsafe { result::memcpy_htod_async(base + off, &*buf, stream.cu_stream()) }
                .map_err(|e| gpu.err("bounce copy", e))?;
            *ev = Some(gpu.record(stream)?);
            self.next ^= 1;
        }
        Ok(())
    }

    /// Waits until both buffers are free.
    pub fn drain(&mut self, gpu: &Gpu) -> Result<(), ProveError> {
        for (_, ev) in &mut self.bufs {
            if let Some(e) = ev.take() {
                e.synchronize().map_err(|e| gpu.err("bounce wait", e))?;
            }
        }
        Ok(())
    }
}

impl Drop for Bounce {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        for (ptr, ev) in &mut self.bufs {
            if let Some(e) = ev.take() {
                let _ = e.synchronize();
            }
            // SAFETY: allocated by malloc_host in new; no copy reads it any more.
            let _ = unsafe { result::free_host(*ptr as *mut c_void) };
        }
    }
}

#[cfg(test)]
mod piece_tests {
    use super::*;

    #[test]
    fn chunks_tile_the_range_and_stay_inside_pieces() {
        for bytes in [
            0,
            1,
            REGISTER_PIECE - 1,
            REGISTER_PIECE,
            REGISTER_PIECE + 1,
            5 * REGISTER_PIECE + 12345,
        ] {
            let mut next = 0;
            for (off, len) in piece_chunks(bytes) {
                assert_eq!(off, next, "{bytes}");
                assert!(len > 0 && len <= REGISTER_PIECE);
                assert_eq!(off / REGISTER_PIECE, (off + len - 1) / REGISTER_PIECE);
                next = off + len;
            }
            assert_eq!(next, bytes);
        }
    }
}
