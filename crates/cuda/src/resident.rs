//! Parameters resident in device memory: each parameter set is uploaded once (through
//! pinned bounce buffers on the copy stream) and kept while the memory budget allows,
//! keyed by a fingerprint of its verifying key, section lengths and sampled points.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::CudaSlice;
use filprove_groth16::{ProveError, Srs};
use group::prime::PrimeCurveAffine;
use group::GroupEncoding;

use crate::field::bytes_of;
use crate::folded::{fill_second_half, fold_copy};
use crate::gpu::Gpu;
use crate::msm::{Curve, G1, G2};
use crate::pinned::Bounce;

/// Section lengths of a parameter set (points).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lens {
    /// h (domain - 1).
    pub h: usize,
    /// l (aux variables).
    pub l: usize,
    /// a (inputs + aux dense in A).
    pub a: usize,
    /// b_g1 and b_g2 (dense in B).
    pub b: usize,
}

impl Lens {
    /// The lengths of a host parameter set.
    pub fn of(srs: &Srs) -> Self {
        Self {
            h: srs.h.len(),
            l: srs.l.len(),
            a: srs.a.len(),
            b: srs.b_g1.len(),
        }
    }

    /// Device bytes of the five sections.
    pub fn bytes(&self) -> u64 {
        ((self.h + self.l + self.a + self.b) * G1::AFFINE_BYTES + self.b * G2::AFFINE_BYTES) as u64
    }
}

/// Identity of a parameter set: its verifying key (delta is unique per setup), section
/// lengths and 16 points sampled from each section.
pub fn srs_key(srs: &Srs) -> u64 {
    let mut h = DefaultHasher::new();
    let vk = &srs.vk;
    for p in [&vk.alpha_g1, &vk.beta_g1, &vk.delta_g1]
        .into_iter()
        .chain(vk.ic.iter())
    {
        p.to_bytes().as_ref().hash(&mut h);
    }
    for p in [&vk.beta_g2, &vk.gamma_g2, &vk.delta_g2] {
        p.to_bytes().as_ref().hash(&mut h);
    }
    Lens::of(srs).hash(&mut h);
    for sec in [&srs.h, &srs.l, &srs.a, &srs.b_g1] {
        sample(sec, &mut h);
    }
    sample(&srs.b_g2, &mut h);
    h.finish()
}

fn sample<A: PrimeCurveAffine + GroupEncoding>(v: &[A], h: &mut DefaultHasher) {
    if v.is_empty() {
        return;
    }
    for k in 0..16 {
        v[k * (v.len() - 1) / 15].to_bytes().as_ref().hash(h);
    }
}

/// One parameter set in device memory.
pub struct DeviceSrs {
    /// [`srs_key`] of the host set it was made from.
    pub key: u64,
    /// Section lengths.
    pub lens: Lens,
    /// h, l, a, b_g1 (G1 affine, device layout) and b_g2 (G2). Folded (`h_folded`), h
    /// holds 2 lens.h points: H's, then 2^fold_shift(lens.h) times each (folded.rs).
    pub h: CudaSlice<u8>,
    /// See `h`.
    pub l: CudaSlice<u8>,
    /// See `h`.
    pub a: CudaSlice<u8>,
    /// See `h`.
    pub b_g1: CudaSlice<u8>,
    /// See `h`.
    pub b_g2: CudaSlice<u8>,
    /// Whether h is folded.
    pub h_folded: bool,
    /// Made on the device with no host copy (benchmark workloads): never evicted.
    pub device_only: bool,
    /// How long the upload took.
    pub upload_time: Duration,
}

impl DeviceSrs {
    /// Device bytes held.
    pub fn bytes(&self) -> u64 {
        self.lens.bytes() + self.folded_extra()
    }

    /// Device bytes of h's second half when folded.
    fn folded_extra(&self) -> u64 {
        if self.h_folded {
            (self.lens.h * G1::AFFINE_BYTES) as u64
        } else {
            0
        }
    }

    /// The folded H bases for an H MSM of `n` points (msm::msm_folded), when h is folded
    /// for exactly that many.
    pub fn folded_h(&self, n: usize) -> Option<&CudaSlice<u8>> {
        (self.h_folded && n == self.lens.h).then_some(&self.h)
    }

    /// Folds h (folded.rs): a buffer of twice the points, the second half made on the
    /// device; waits for it. Device-made sets (benchmarks); uploads fold as they go.
    pub fn fold_h(&mut self, gpu: &Gpu) -> Result<(), ProveError> {
        if self.h_folded {
            return Ok(());
        }
        let copy = gpu.copy_stream();
        let h = fold_copy(gpu, copy, &self.h, self.lens.h)?;
        copy.synchronize().map_err(|e| gpu.err("folding H", e))?;
        self.h = h;
        self.h_folded = true;
        Ok(())
    }

    /// Uploads `srs` through `bounce` on the copy stream and waits for it (once per
    /// parameter set); with `fold`, h is folded (folded.rs) on the device.
    pub fn upload(
        gpu: &Gpu,
        srs: &Srs,
        bounce: &mut Bounce,
        fold: bool,
    ) -> Result<Self, ProveError> {
        let t = Instant::now();
        let copy = gpu.copy_stream();
        let mut up = |bytes: &[u8], room: usize| -> Result<CudaSlice<u8>, ProveError> {
            let mut d = gpu.alloc_on::<u8>(copy, room)?;
            if !bytes.is_empty() {
                let mut v = d.slice_mut(0..bytes.len());
                bounce.upload(gpu, copy, bytes, &mut v)?;
            }
            Ok(d)
        };
        let hb = bytes_of(&srs.h);
        let mut h = up(hb, if fold { 2 * hb.len() } else { hb.len() })?;
        if fold {
            fill_second_half(gpu, copy, &mut h, srs.h.len())?;
        }
        let mut up_all = |bytes: &[u8]| up(bytes, bytes.len());
        let l = up_all(bytes_of(&srs.l))?;
        let a = up_all(bytes_of(&srs.a))?;
        let b_g1 = up_all(bytes_of(&srs.b_g1))?;
        let b_g2 = up_all(bytes_of(&srs.b_g2))?;
        bounce.drain(gpu)?;
        copy.synchronize()
            .map_err(|e| gpu.err("parameter upload", e))?;
        Ok(Self {
            key: srs_key(srs),
            lens: Lens::of(srs),
            h,
            l,
            a,
            b_g1,
            b_g2,
            h_folded: fold,
            device_only: false,
            upload_time: t.elapsed(),
        })
    }
}

/// The resident parameter sets of one device, least recently used first.
#[derive(Default)]
pub struct ResidentSet {
    entries: Vec<Arc<DeviceSrs>>,
    /// Keys held for good ([`ResidentSet::hold`]): never evicted to make room.
    held: Vec<u64>,
    /// (key of a set without its sections, key of the full set it stands for).
    aliases: Vec<(u64, u64)>,
}

impl ResidentSet {
    /// The key `key` stands for (itself unless it is an alias).
    fn resolve(&self, key: u64) -> u64 {
        self.aliases
            .iter()
            .find(|(alias, _)| *alias == key)
            .map_or(key, |(_, full)| *full)
    }

    /// The set with `key` (or the set it is an alias of), marked most recently used.
    pub fn get(&mut self, key: u64) -> Option<Arc<DeviceSrs>> {
        let key = self.resolve(key);
        let i = self.entries.iter().position(|e| e.key == key)?;
        let e = self.entries.remove(i);
        self.entries.push(e.clone());
        Some(e)
    }

    /// Adds a set (most recently used).
    pub fn insert(&mut self, e: Arc<DeviceSrs>) {
        self.entries.retain(|x| x.key != e.key);
        self.entries.push(e);
    }

    /// Holds the resident set `key` for good and makes `alias` (the key of the same set
    /// without its host sections) find it. False, with nothing changed, when `key` is not
    /// resident.
    pub fn hold(&mut self, key: u64, alias: u64) -> bool {
        if !self.entries.iter().any(|e| e.key == key) {
            return false;
        }
        if !self.held.contains(&key) {
            self.held.push(key);
        }
        self.aliases.retain(|(a, _)| *a != alias);
        self.aliases.push((alias, key));
        true
    }

    /// Removes the least recently used set that no proof is using, that has a host copy
    /// and that is not held; returns its bytes.
    pub fn evict_one(&mut self) -> Option<u64> {
        let i = self.entries.iter().position(|e| {
            Arc::strong_count(e) == 1 && !e.device_only && !self.held.contains(&e.key)
        })?;
        Some(self.entries.remove(i).bytes())
    }

    /// Removes the set with `key` (or the set it is an alias of) when no proof is using
    /// it, held or not; returns its bytes.
    pub fn remove(&mut self, key: u64) -> Option<u64> {
        let key = self.resolve(key);
        let i = self
            .entries
            .iter()
            .position(|e| e.key == key && Arc::strong_count(e) == 1)?;
        self.held.retain(|k| *k != key);
        self.aliases.retain(|(_, full)| *full != key);
        Some(self.entries.remove(i).bytes())
    }

    /// Bytes resident.
    pub fn bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.bytes()).sum()
    }
}
