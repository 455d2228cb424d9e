//! The on-disk layout of `.params` and `.vk` files, read without decoding any point.
//!
//! Every size a file announces is checked against the file's length here, before anything
//! is allocated, so a corrupt count gives [`ParamsError::Truncated`] instead of a huge
//! allocation.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::ParamsError;

/// Bytes of an uncompressed G1 point.
pub const G1_BYTES: u64 = 96;
/// Bytes of an uncompressed G2 point.
pub const G2_BYTES: u64 = 192;
/// Bytes of the verifying key's six fixed points (alpha_g1, beta_g1, beta_g2, gamma_g2,
/// delta_g1, delta_g2).
pub const VK_FIXED_BYTES: u64 = 3 * G1_BYTES + 3 * G2_BYTES;
/// Bytes of a section's big-endian u32 count.
const COUNT_BYTES: u64 = 4;

/// Where one section of points lies in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectionInfo {
    /// Section name: `ic`, `h`, `l`, `a`, `b_g1` or `b_g2`.
    pub name: &'static str,
    /// Number of points.
    pub count: u64,
    /// Offset of the first point (just after the count).
    pub offset: u64,
    /// Bytes per point (96 for G1, 192 for G2).
    pub point_bytes: u64,
}

impl SectionInfo {
    /// Bytes taken by the points (not the count).
    pub fn byte_len(&self) -> u64 {
        self.count * self.point_bytes
    }

    /// Offset just past the last point.
    pub fn end(&self) -> u64 {
        self.offset + self.byte_len()
    }
}

/// The numbers of points in each part of a parameter set: what a circuit's shape must match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ParamsShape {
    /// Public inputs, the ONE input included (ic points).
    pub num_inputs: u64,
    /// h points: domain size - 1.
    pub h: u64,
    /// l points: one per aux variable.
    pub l: u64,
    /// a points: inputs plus aux variables dense in A.
    pub a: u64,
    /// b_g1 (and b_g2) points: inputs and aux variables dense in B.
    pub b: u64,
}

impl ParamsShape {
    /// The shape a circuit with this captured assignment needs (densities counted as
    /// bellperson counts them).
    pub fn of_assignment(pa: &crate::ProvingAssignment) -> Self {
        let inputs = pa.input_assignment.len() as u64;
        Self {
            num_inputs: inputs,
            h: (1u64 << pa.log_domain_size()) - 1,
            l: pa.aux_assignment.len() as u64,
            a: inputs + pa.a_aux_density.count_ones() as u64,
            b: pa.b_input_density.count_ones() as u64 + pa.b_aux_density.count_ones() as u64,
        }
    }

    /// log2 of the evaluation domain (h + 1), or `None` when h + 1 is not a power of two.
    pub fn log_domain_size(&self) -> Option<u32> {
        let m = self.h + 1;
        m.is_power_of_two().then(|| m.trailing_zeros())
    }

    /// Checks that `self` (read from `path`) equals `expected`; the error names the first
    /// quantity that differs.
    pub fn check(&self, expected: &ParamsShape, path: &Path) -> Result<(), ParamsError> {
        let pairs = [
            ("public inputs (ic)", self.num_inputs, expected.num_inputs),
            ("h points (domain - 1)", self.h, expected.h),
            ("l points (aux variables)", self.l, expected.l),
            ("a points", self.a, expected.a),
            ("b points", self.b, expected.b),
        ];
        for (what, have, want) in pairs {
            if have != want {
                return Err(ParamsError::WrongCircuit {
                    path: path.to_path_buf(),
                    what: format!("{what}: file has {have}, circuit needs {want}"),
                });
            }
        }
        Ok(())
    }
}

/// The layout of a `.params` file: the verifying key's ic count and the five sections,
/// read from the counts alone (cheap: a few small reads, no point decoded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamsHeader {
    /// The file (or a label for in-memory bytes).
    pub path: PathBuf,
    /// Total length in bytes.
    pub file_len: u64,
    /// The verifying key's ic points.
    pub ic: SectionInfo,
    /// tau^i t(tau) / delta.
    pub h: SectionInfo,
    /// The aux variables' (beta A + alpha B + C) / delta.
    pub l: SectionInfo,
    /// A query.
    pub a: SectionInfo,
    /// B query in G1.
    pub b_g1: SectionInfo,
    /// B query in G2.
    pub b_g2: SectionInfo,
}

/// The layout of a `.vk` file (or the verifying key at the start of a `.params` file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VkHeader {
    /// The file (or a label).
    pub path: PathBuf,
    /// Total length in bytes.
    pub file_len: u64,
    /// The ic points.
    pub ic: SectionInfo,
}

/// Random access to the bytes of a file or buffer, for layout parsing.
pub(crate) trait ByteSource {
    /// Reads `buf.len()` bytes at `offset`; the caller has checked the bounds.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()>;
}

impl ByteSource for [u8] {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| std::io::ErrorKind::InvalidInput)?;
        let src = self
            .get(start..start + buf.len())
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

impl ByteSource for File {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.read_exact_at(buf, offset)
    }
}

/// Walks a layout, checking each announced size against the length.
pub(crate) struct LayoutCursor<'a, S: ByteSource + ?Sized> {
    src: &'a S,
    path: &'a Path,
    len: u64,
    offset: u64,
}

impl<'a, S: ByteSource + ?Sized> LayoutCursor<'a, S> {
    pub(crate) fn new(src: &'a S, path: &'a Path, len: u64) -> Self {
        Self {
            src,
            path,
            len,
            offset: 0,
        }
    }

    fn truncated(&self, what: String, needed: u64) -> ParamsError {
        ParamsError::Truncated {
            path: self.path.to_path_buf(),
            what,
            needed,
            offset: self.offset,
            len: self.len,
        }
    }

    /// Reserves `needed` bytes at the cursor for `what`.
    fn need(&mut self, what: impl FnOnce() -> String, needed: u64) -> Result<u64, ParamsError> {
        if self.len.saturating_sub(self.offset) < needed {
            return Err(self.truncated(what(), needed));
        }
        let at = self.offset;
        self.offset += needed;
        Ok(at)
    }

    /// The verifying key's fixed points.
    pub(crate) fn skip_vk_fixed(&mut self) -> Result<u64, ParamsError> {
        self.need(|| "verifying key".to_string(), VK_FIXED_BYTES)
    }

    /// A big-endian u32 count followed by that many points.
    pub(crate) fn section(
        &mut self,
        name: &'static str,
        point_bytes: u64,
    ) -> Result<SectionInfo, ParamsError> {
        let at = self.need(|| format!("{name} count"), COUNT_BYTES)?;
        let mut raw = [0u8; 4];
        self.src
            .read_at(at, &mut raw)
            .map_err(|e| ParamsError::Io {
                path: self.path.to_path_buf(),
                source: e,
            })?;
        let count = u64::from(u32::from_be_bytes(raw));
        let offset = self.need(|| format!("{name} ({count} points)"), count * point_bytes)?;
        Ok(SectionInfo {
            name,
            count,
            offset,
            point_bytes,
        })
    }

    /// Rejects bytes after the last section.
    pub(crate) fn finish(&self) -> Result<(), ParamsError> {
        if self.offset < self.len {
            return Err(ParamsError::TrailingBytes {
                path: self.path.to_path_buf(),
                extra: self.len - self.offset,
            });
        }
        Ok(())
    }
}

impl VkHeader {
    pub(crate) fn parse<S: ByteSource + ?Sized>(
        src: &S,
        path: &Path,
        len: u64,
    ) -> Result<Self, ParamsError> {
        let mut cur = LayoutCursor::new(src, path, len);
        cur.skip_vk_fixed()?;
        let ic = cur.section("ic", G1_BYTES)?;
        cur.finish()?;
        Ok(Self {
            path: path.to_path_buf(),
            file_len: len,
            ic,
        })
    }
}

impl ParamsHeader {
    /// Reads the layout of the `.params` file at `path` (a few small reads).
    pub fn read(path: impl AsRef<Path>) -> Result<Self, ParamsError> {
        let path = path.as_ref();
        let io = |source| ParamsError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        Self::parse(&file, path, len)
    }

    /// Parses the layout of a `.params` file held in memory; `label` names it in errors.
    pub fn from_bytes(bytes: &[u8], label: impl AsRef<Path>) -> Result<Self, ParamsError> {
        Self::parse(bytes, label.as_ref(), bytes.len() as u64)
    }

    pub(crate) fn parse<S: ByteSource + ?Sized>(
        src: &S,
        path: &Path,
        len: u64,
    ) -> Result<Self, ParamsError> {
        let mut cur = LayoutCursor::new(src, path, len);
        cur.skip_vk_fixed()?;
        let ic = cur.section("ic", G1_BYTES)?;
        let h = cur.section("h", G1_BYTES)?;
        let l = cur.section("l", G1_BYTES)?;
        let a = cur.section("a", G1_BYTES)?;
        let b_g1 = cur.section("b_g1", G1_BYTES)?;
        let b_g2 = cur.section("b_g2", G2_BYTES)?;
        cur.finish()?;
        Ok(Self {
            path: path.to_path_buf(),
            file_len: len,
            ic,
            h,
            l,
            a,
            b_g1,
            b_g2,
        })
    }

    /// The point counts.
    pub fn shape(&self) -> ParamsShape {
        ParamsShape {
            num_inputs: self.ic.count,
            h: self.h.count,
            l: self.l.count,
            a: self.a.count,
            b: self.b_g1.count,
        }
    }

    /// The five sections in file order (h, l, a, b_g1, b_g2).
    pub fn sections(&self) -> [SectionInfo; 5] {
        [self.h, self.l, self.a, self.b_g1, self.b_g2]
    }
}
