//! An MSM's result while it is still on the device.

use cudarc::driver::CudaSlice;
use filprove_groth16::ProveError;
use group::Group as _;

use crate::gpu::Gpu;

use super::{launch_err, Curve};

/// An MSM result left on the device: the window sums of Pippenger (combined by Horner's
/// rule on the host after the proof's one download: 255 doublings take ~0.1 ms there and
/// ~8 ms on one GPU thread) and an extra point to add (the sum of the bases whose scalar
/// is 1).
pub struct DeviceMsm {
    pub(super) sums: Option<CudaSlice<u8>>,
    pub(super) windows: u32,
    pub(super) c: u32,
    pub(super) extra: Option<CudaSlice<u8>>,
}

impl DeviceMsm {
    pub(super) fn identity() -> Self {
        Self {
            sums: None,
            windows: 0,
            c: 0,
            extra: None,
        }
    }

    /// Device-to-host bytes of [`DeviceMsm::download`].
    pub fn bytes<C: Curve>(&self) -> usize {
        (self.windows as usize + usize::from(self.extra.is_some())) * C::XYZZ_BYTES
    }

    /// Waits for the stream, reads the window sums and combines them.
    pub fn download<C: Curve>(&self, gpu: &Gpu) -> Result<C::Projective, ProveError> {
        let x = C::XYZZ_BYTES;
        let mut r = <C::Projective as group::Group>::identity();
        if let Some(sums) = &self.sums {
            let mut host = vec![0u8; self.windows as usize * x];
            gpu.stream()
                .memcpy_dtoh(&sums.slice(0..host.len()), &mut host)
                .map_err(launch_err(gpu, "download window sums"))?;
            gpu.sync()?;
            for w in host.chunks_exact(x).rev() {
                for _ in 0..self.c {
                    r = r.double();
                }
                r += C::from_xyzz(w);
            }
        }
        if let Some(e) = &self.extra {
            r += download_point::<C>(gpu, e)?;
        }
        Ok(r)
    }
}

/// Waits for the stream and reads one device XYZZ point.
fn download_point<C: Curve>(gpu: &Gpu, p: &CudaSlice<u8>) -> Result<C::Projective, ProveError> {
    let mut host = vec![0u8; C::XYZZ_BYTES];
    gpu.stream()
        .memcpy_dtoh(p, &mut host)
        .map_err(launch_err(gpu, "download"))?;
    gpu.sync()?;
    Ok(C::from_xyzz(&host))
}
