//! Writing `.params` and `.vk` files, byte-identical to bellperson's `Parameters::write`
//! and `VerifyingKey::write`. File writes are atomic: the data goes to
//! `<path>.tmp-<pid>`, is flushed and fsynced, then renamed over `path` (and the directory
//! is fsynced), so a crash never leaves a half-written file under the real name.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use group::UncompressedEncoding;
use rayon::prelude::*;

use crate::error::ParamsError;
use crate::{Srs, VerifyingKey};

/// Points encoded per batch (in parallel) before the batch is written.
const BATCH: usize = 1 << 14;

fn write_count<W: Write>(w: &mut W, n: usize) -> io::Result<()> {
    let n = u32::try_from(n).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "section has more than 2^32-1 points",
        )
    })?;
    w.write_all(&n.to_be_bytes())
}

/// Writes a count and the points, encoding batches in parallel.
fn write_section<W, P>(w: &mut W, points: &[P]) -> io::Result<()>
where
    W: Write,
    P: UncompressedEncoding + Sync,
{
    write_count(w, points.len())?;
    let size = std::mem::size_of::<P::Uncompressed>();
    let mut buf = vec![0u8; size * BATCH.min(points.len())];
    for batch in points.chunks(BATCH) {
        let out = &mut buf[..batch.len() * size];
        out.par_chunks_mut(size * 256)
            .zip(batch.par_chunks(256))
            .for_each(|(o, ps)| {
                for (o, p) in o.chunks_exact_mut(size).zip(ps) {
                    o.copy_from_slice(p.to_uncompressed().as_ref());
                }
            });
        w.write_all(out)?;
    }
    Ok(())
}

impl VerifyingKey {
    /// Writes the verifying key in bellperson's format.
    pub fn write_to<W: Write>(&self, mut w: W) -> io::Result<()> {
        w.write_all(self.alpha_g1.to_uncompressed().as_ref())?;
        w.write_all(self.beta_g1.to_uncompressed().as_ref())?;
        w.write_all(self.beta_g2.to_uncompressed().as_ref())?;
        w.write_all(self.gamma_g2.to_uncompressed().as_ref())?;
        w.write_all(self.delta_g1.to_uncompressed().as_ref())?;
        w.write_all(self.delta_g2.to_uncompressed().as_ref())?;
        write_section(&mut w, &self.ic)
    }

    /// The encoded verifying key.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(868 + 96 * self.ic.len());
        self.write_to(&mut out)
            .expect("writing to a Vec cannot fail");
        out
    }

    /// Writes a `.vk` file atomically.
    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<(), ParamsError> {
        write_atomic(path.as_ref(), |w| self.write_to(w))
    }
}

impl Srs {
    /// Writes the parameters in bellperson's `.params` format.
    pub fn write_to<W: Write>(&self, mut w: W) -> io::Result<()> {
        self.vk.write_to(&mut w)?;
        write_section(&mut w, &self.h)?;
        write_section(&mut w, &self.l)?;
        write_section(&mut w, &self.a)?;
        write_section(&mut w, &self.b_g1)?;
        write_section(&mut w, &self.b_g2)
    }

    /// Size in bytes of the encoded `.params` file.
    pub fn file_len(&self) -> u64 {
        let g1 = (self.vk.ic.len() + self.h.len() + self.l.len() + self.a.len() + self.b_g1.len())
            as u64;
        super::header::VK_FIXED_BYTES + 6 * 4 + 96 * g1 + 192 * self.b_g2.len() as u64
    }

    /// Writes a `.params` file atomically.
    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<(), ParamsError> {
        write_atomic(path.as_ref(), |w| self.write_to(w))
    }
}

/// The temporary name a file is written under before it is renamed to `path`.
pub fn temp_path(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".tmp-{}", std::process::id()));
    path.with_file_name(name)
}

/// Writes a file atomically: `write` fills `<path>.tmp-<pid>`, which is fsynced and then
/// renamed to `path`; the directory is fsynced after the rename. On any error the
/// temporary file is removed and `path` is untouched.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> Result<(), ParamsError> {
    let tmp = temp_path(path);
    let result = (|| -> io::Result<()> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        write(&mut w)?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)?;
        // Make the rename durable; not every filesystem lets a directory be opened.
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    result.map_err(|source| {
        let _ = std::fs::remove_file(&tmp);
        ParamsError::Io {
            path: path.to_path_buf(),
            source,
        }
    })
}
