//! Decoding `.params` and `.vk` files.
//!
//! `.params` files are read with positioned reads, piece by piece, by the decoding threads;
//! the layout is checked against the file length first (see [`super::header`]), then the
//! sections are decoded in parallel into exactly sized vectors. They are not memory-mapped:
//! a mapped file truncated while it is read kills the process with SIGBUS, where a read
//! returns an error ([`ParamsError::Truncated`] naming the file).
//!
//! Point checks, following bellperson's readers:
//! - the verifying key's six fixed points are always fully checked (on the curve, in the
//!   subgroup); the identity is accepted there, as bellperson does;
//! - ic points are always fully checked and must not be the identity;
//! - section points (h, l, a, b_g1, b_g2) must not be the identity. With
//!   [`ReadOptions::validate`] they are fully checked; without it they are decoded with
//!   blst's unchecked deserialisation, which still rejects a bad encoding (flags, a
//!   coordinate not below the field modulus) and a point off the curve, but does not check
//!   the subgroup (the expensive part). Garbage therefore is rejected in practice but a
//!   crafted on-curve point outside the subgroup is accepted: use `validate: true` for
//!   files that are not trusted.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use group::prime::PrimeCurveAffine;
use group::UncompressedEncoding;
use rayon::prelude::*;

use super::header::{ParamsHeader, SectionInfo, VkHeader, G1_BYTES, G2_BYTES, VK_FIXED_BYTES};
use crate::error::ParamsError;
use crate::{G1Affine, G2Affine, Srs, VerifyingKey};

/// How to read a parameter file.
///
/// Cost (2-core VM, the 1.1 GB 2 KiB PoRep file, 10.9 M points): `validate: false` reads it
/// in 3.8 s, `validate: true` in 673 s (a subgroup check is about 60 us of CPU per point).
/// For network files, check the digest against the manifest (1.8 s, see
/// [`super::Manifest::check`]) and read with `validate: false`; validate files of unknown
/// origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// Check that every section point is on the curve and in the prime-order subgroup.
    /// Off: faster decoding that still rejects bad encodings and off-curve points (see the
    /// module documentation).
    pub validate: bool,
}

impl Default for ReadOptions {
    /// Validating (the safe choice for files from elsewhere).
    fn default() -> Self {
        Self { validate: true }
    }
}

impl ReadOptions {
    /// Full checks of every point.
    pub fn validating() -> Self {
        Self { validate: true }
    }

    /// No subgroup checks (for files this process wrote itself or checked by digest).
    pub fn trusted() -> Self {
        Self { validate: false }
    }
}

/// A point type as found in parameter files.
trait FilePoint: PrimeCurveAffine + Send + Sync + Copy {
    const BYTES: usize;
    fn decode(bytes: &[u8], validate: bool) -> Result<Self, &'static str>;
}

/// Decodes an uncompressed point, checking the subgroup only when `validate` is set.
fn decode_uncompressed<C: UncompressedEncoding>(
    bytes: &[u8],
    validate: bool,
) -> Result<C, &'static str> {
    let mut raw = C::Uncompressed::default();
    if raw.as_ref().len() != bytes.len() {
        return Err("wrong length");
    }
    raw.as_mut().copy_from_slice(bytes);
    let p = if validate {
        C::from_uncompressed(&raw)
    } else {
        C::from_uncompressed_unchecked(&raw)
    };
    Option::from(p).ok_or(if validate {
        "bad encoding, not on the curve or not in the subgroup"
    } else {
        "bad encoding or not on the curve"
    })
}

impl FilePoint for G1Affine {
    const BYTES: usize = G1_BYTES as usize;
    fn decode(bytes: &[u8], validate: bool) -> Result<Self, &'static str> {
        decode_uncompressed(bytes, validate)
    }
}

impl FilePoint for G2Affine {
    const BYTES: usize = G2_BYTES as usize;
    fn decode(bytes: &[u8], validate: bool) -> Result<Self, &'static str> {
        decode_uncompressed(bytes, validate)
    }
}

fn invalid(path: &Path, section: &'static str, index: usize, why: &'static str) -> ParamsError {
    ParamsError::InvalidPoint {
        path: path.to_path_buf(),
        section,
        index,
        why,
    }
}

/// Decodes one point that may be the identity (the vk's fixed points), always validated.
fn fixed_point<P: FilePoint>(
    bytes: &[u8],
    offset: &mut usize,
    path: &Path,
    index: usize,
) -> Result<P, ParamsError> {
    let p = P::decode(&bytes[*offset..*offset + P::BYTES], true)
        .map_err(|why| invalid(path, "vk", index, why))?;
    *offset += P::BYTES;
    Ok(p)
}

/// Points per parallel task.
const CHUNK: usize = 4096;

/// Told the bytes of each decoded piece of a parameter file, from decoding threads.
pub type OnBytes<'a> = &'a (dyn Fn(u64) + Sync);

/// Where a parameter file's bytes come from: the file (positioned reads) or memory.
trait Source: Sync {
    /// Fills `buf` from `offset`; `UnexpectedEof` when the source ends first.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()>;
    /// The length the layout was checked against.
    fn source_len(&self) -> u64;
}

impl Source for [u8] {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        match self.get(start..).and_then(|rest| rest.get(..buf.len())) {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(std::io::ErrorKind::UnexpectedEof.into()),
        }
    }
    fn source_len(&self) -> u64 {
        self.len() as u64
    }
}

/// An open file and the length its layout was checked against.
struct FileSource {
    file: File,
    len: u64,
}

impl Source for FileSource {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.file.read_exact_at(buf, offset)
    }
    fn source_len(&self) -> u64 {
        self.len
    }
}

/// Reads `buf.len()` bytes of `what` at `offset`; a source that ends early (a file
/// truncated while it is read) is [`ParamsError::Truncated`].
fn read_piece<S: Source + ?Sized>(
    src: &S,
    offset: u64,
    buf: &mut [u8],
    what: &str,
    path: &Path,
) -> Result<(), ParamsError> {
    src.read_at(offset, buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            ParamsError::Truncated {
                path: path.to_path_buf(),
                what: format!("{what} (the file shrank while it was read)"),
                needed: buf.len() as u64,
                offset,
                len: src.source_len(),
            }
        } else {
            ParamsError::Io {
                path: path.to_path_buf(),
                source: e,
            }
        }
    })
}

/// Decodes a section of non-identity points in parallel, each task reading its own piece,
/// telling `on_bytes` each piece's bytes once decoded.
fn decode_section<P: FilePoint, S: Source + ?Sized>(
    src: &S,
    info: &SectionInfo,
    validate: bool,
    path: &Path,
    on_bytes: OnBytes<'_>,
) -> Result<Vec<P>, ParamsError> {
    debug_assert_eq!(info.point_bytes as usize, P::BYTES);
    let mut out = vec![P::identity(); info.count as usize];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .try_for_each_init(Vec::new, |raw, (ci, points)| {
            raw.resize(points.len() * P::BYTES, 0);
            let offset = info.offset + (ci * CHUNK * P::BYTES) as u64;
            read_piece(src, offset, raw, info.name, path)?;
            for (j, (p, r)) in points
                .iter_mut()
                .zip(raw.chunks_exact(P::BYTES))
                .enumerate()
            {
                let index = ci * CHUNK + j;
                let q =
                    P::decode(r, validate).map_err(|why| invalid(path, info.name, index, why))?;
                if bool::from(q.is_identity()) {
                    return Err(invalid(path, info.name, index, "point at infinity"));
                }
                *p = q;
            }
            on_bytes(raw.len() as u64);
            Ok(())
        })?;
    Ok(out)
}

/// Decodes the verifying key at the start of `bytes`, whose ic section is `ic`.
fn decode_vk(bytes: &[u8], ic: &SectionInfo, path: &Path) -> Result<VerifyingKey, ParamsError> {
    let mut off = 0usize;
    let alpha_g1 = fixed_point(bytes, &mut off, path, 0)?;
    let beta_g1 = fixed_point(bytes, &mut off, path, 1)?;
    let beta_g2 = fixed_point(bytes, &mut off, path, 2)?;
    let gamma_g2 = fixed_point(bytes, &mut off, path, 3)?;
    let delta_g1 = fixed_point(bytes, &mut off, path, 4)?;
    let delta_g2 = fixed_point(bytes, &mut off, path, 5)?;
    let ic = decode_section(bytes, ic, true, path, &|_| {})?;
    Ok(VerifyingKey {
        alpha_g1,
        beta_g1,
        beta_g2,
        gamma_g2,
        delta_g1,
        delta_g2,
        ic,
    })
}

impl Srs {
    /// Reads a `.params` file: checks the layout against the file length, then reads and
    /// decodes the sections in parallel. Trailing bytes are an error; a file truncated
    /// while it is read is [`ParamsError::Truncated`] (it is not memory-mapped).
    pub fn read_file(path: impl AsRef<Path>, opts: &ReadOptions) -> Result<Srs, ParamsError> {
        Self::read_file_observed(path, opts, &|_| {})
    }

    /// [`Srs::read_file`], telling `on_bytes` the bytes of each section piece decoded (from
    /// the decoding threads; they add up to the sections' length), for progress reports.
    pub fn read_file_observed(
        path: impl AsRef<Path>,
        opts: &ReadOptions,
        on_bytes: OnBytes<'_>,
    ) -> Result<Srs, ParamsError> {
        let path = path.as_ref();
        let io = |source| ParamsError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        // The layout first: every section read below lies within `len`.
        let header = ParamsHeader::parse(&file, path, len)?;
        Self::decode(&FileSource { file, len }, &header, path, opts, on_bytes)
    }

    /// Decodes a whole `.params` file held in memory; `label` names it in errors.
    pub fn from_bytes(
        bytes: &[u8],
        label: impl AsRef<Path>,
        opts: &ReadOptions,
    ) -> Result<Srs, ParamsError> {
        let path = label.as_ref();
        let header = ParamsHeader::parse(bytes, path, bytes.len() as u64)?;
        Self::decode(bytes, &header, path, opts, &|_| {})
    }

    fn decode<S: Source + ?Sized>(
        bytes: &S,
        header: &ParamsHeader,
        path: &Path,
        opts: &ReadOptions,
        on_bytes: OnBytes<'_>,
    ) -> Result<Srs, ParamsError> {
        let v = opts.validate;
        let mut vk_bytes = vec![0u8; header.ic.end() as usize];
        read_piece(bytes, 0, &mut vk_bytes, "verifying key", path)?;
        let vk = decode_vk(&vk_bytes, &header.ic, path)?;
        let ((h, l), (a, (b_g1, b_g2))) = rayon::join(
            || {
                rayon::join(
                    || decode_section(bytes, &header.h, v, path, on_bytes),
                    || decode_section(bytes, &header.l, v, path, on_bytes),
                )
            },
            || {
                rayon::join(
                    || decode_section(bytes, &header.a, v, path, on_bytes),
                    || {
                        rayon::join(
                            || decode_section(bytes, &header.b_g1, v, path, on_bytes),
                            || decode_section(bytes, &header.b_g2, v, path, on_bytes),
                        )
                    },
                )
            },
        );
        Ok(Srs {
            vk,
            h: h?,
            l: l?,
            a: a?,
            b_g1: b_g1?,
            b_g2: b_g2?,
        })
    }
}

/// Label used in errors for keys read from memory or a reader.
fn mem_label() -> PathBuf {
    PathBuf::from("<memory>")
}

impl VerifyingKey {
    /// Reads a `.vk` file (exactly one verifying key; trailing bytes are an error).
    pub fn read_file(path: impl AsRef<Path>) -> Result<VerifyingKey, ParamsError> {
        let path = path.as_ref();
        let io = |source| ParamsError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        // Layout first, so that the read below is bounded by a consistent size.
        VkHeader::parse(&file, path, len)?;
        let bytes = std::fs::read(path).map_err(io)?;
        Self::decode_exact(&bytes, path)
    }

    /// Reads only the verifying key at the start of a `.params` file (the whole file's
    /// layout is still checked, cheaply; no section point is decoded).
    pub fn read_from_params(path: impl AsRef<Path>) -> Result<VerifyingKey, ParamsError> {
        use std::os::unix::fs::FileExt;
        let path = path.as_ref();
        let io = |source| ParamsError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let header = ParamsHeader::parse(&file, path, len)?;
        let mut bytes = vec![0u8; header.ic.end() as usize];
        file.read_exact_at(&mut bytes, 0).map_err(io)?;
        decode_vk(&bytes, &header.ic, path)
    }

    /// Decodes a verifying key that fills `bytes` exactly.
    pub fn read_from(bytes: &[u8]) -> Result<VerifyingKey, ParamsError> {
        Self::decode_exact(bytes, &mem_label())
    }

    fn decode_exact(bytes: &[u8], path: &Path) -> Result<VerifyingKey, ParamsError> {
        let header = VkHeader::parse(bytes, path, bytes.len() as u64)?;
        decode_vk(bytes, &header.ic, path)
    }

    /// Reads one verifying key from `reader`, consuming exactly its bytes (as bellperson's
    /// `VerifyingKey::read` does; what follows is left unread). Memory grows with the
    /// points actually read, not with the announced count.
    pub fn read<R: Read>(mut reader: R) -> Result<VerifyingKey, ParamsError> {
        let path = mem_label();
        let mut pos = 0u64;
        let mut take = |buf: &mut [u8], what: &str| -> Result<(), ParamsError> {
            reader.read_exact(buf).map_err(|e| {
                if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    ParamsError::Truncated {
                        path: path.clone(),
                        what: what.to_string(),
                        needed: buf.len() as u64,
                        offset: pos,
                        len: pos,
                    }
                } else {
                    ParamsError::Io {
                        path: path.clone(),
                        source: e,
                    }
                }
            })?;
            pos += buf.len() as u64;
            Ok(())
        };
        let mut fixed = vec![0u8; VK_FIXED_BYTES as usize + 4];
        take(&mut fixed, "verifying key")?;
        let n = u32::from_be_bytes([fixed[864], fixed[865], fixed[866], fixed[867]]) as usize;
        let mut ic = Vec::with_capacity(n.min(1 << 16));
        let mut raw = [0u8; 96];
        for i in 0..n {
            take(&mut raw, "ic")?;
            let p = <G1Affine as FilePoint>::decode(&raw, true)
                .map_err(|why| invalid(&path, "ic", i, why))?;
            if bool::from(p.is_identity()) {
                return Err(invalid(&path, "ic", i, "point at infinity"));
            }
            ic.push(p);
        }
        let no_ic = SectionInfo {
            name: "ic",
            count: 0,
            offset: VK_FIXED_BYTES + 4,
            point_bytes: G1_BYTES,
        };
        let mut vk = decode_vk(&fixed, &no_ic, &path)?;
        vk.ic = ic;
        Ok(vk)
    }
}
