//! File digests and the `parameters.json` manifest.
//!
//! The digest Filecoin records for a parameter file is the first 16 bytes of the
//! BLAKE2b-512 hash of the whole file, as lower-case hex (32 characters). Hashing a
//! multi-GB file takes seconds, so digests are cached in-process by (path, length,
//! modification time): a file is hashed once unless it changes.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::error::ParamsError;

/// Hex characters of a manifest digest (16 bytes).
pub const DIGEST_HEX_LEN: usize = 32;

/// The manifest digest of the file at `path`: hex of the first 16 bytes of BLAKE2b-512
/// over the whole file, streamed (constant memory).
pub fn file_digest(path: impl AsRef<Path>) -> Result<String, ParamsError> {
    let path = path.as_ref();
    let io = |source| ParamsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let mut state = blake2b_simd::Params::new().to_state();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        state.update(&buf[..n]);
    }
    Ok(hex::encode(
        &state.finalize().as_bytes()[..DIGEST_HEX_LEN / 2],
    ))
}

/// What identifies a file version in the digest cache.
type Stamp = (u64, Option<SystemTime>);

fn digest_cache() -> &'static Mutex<HashMap<PathBuf, (Stamp, String)>> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, (Stamp, String)>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn stamp(path: &Path) -> Result<(PathBuf, Stamp), ParamsError> {
    let io = |source| ParamsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    let key = std::fs::canonicalize(path).map_err(io)?;
    Ok((key, (meta.len(), meta.modified().ok())))
}

/// [`file_digest`], remembered in-process: a file whose path, length and modification
/// time are unchanged is not hashed again.
pub fn file_digest_cached(path: impl AsRef<Path>) -> Result<String, ParamsError> {
    let path = path.as_ref();
    let (key, st) = stamp(path)?;
    if let Some((s, d)) = digest_cache()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
    {
        if *s == st {
            return Ok(d.clone());
        }
    }
    let digest = file_digest(path)?;
    // Only cache when the file did not change while it was hashed.
    if stamp(path)?.1 == st {
        digest_cache()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, (st, digest.clone()));
    }
    Ok(digest)
}

/// One file's entry in `parameters.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// IPFS content id of the file.
    pub cid: String,
    /// First 16 bytes of BLAKE2b-512 of the file, hex.
    pub digest: String,
    /// Sector size the file is for, in bytes.
    pub sector_size: u64,
}

/// A `parameters.json` manifest: file name (e.g. `v28-stacked-proof-of-replication-...
/// .params`) to its entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Manifest {
    /// Entries by file name.
    pub entries: BTreeMap<String, ManifestEntry>,
}

/// Result of checking a file against a manifest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checked {
    /// The file is listed and its digest matches.
    Matches,
    /// The file's name is not in the manifest (e.g. locally generated parameters).
    NotListed,
}

impl Manifest {
    /// Parses manifest JSON (the format of filecoin-proofs' `parameters.json`).
    pub fn from_json(text: &str) -> Result<Self, ParamsError> {
        serde_json::from_str(text).map_err(|e| ParamsError::Manifest(e.to_string()))
    }

    /// Reads and parses a manifest file.
    pub fn read_file(path: impl AsRef<Path>) -> Result<Self, ParamsError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ParamsError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_json(&text)
            .map_err(|e| ParamsError::Manifest(format!("{}: {e}", path.display())))
    }

    /// The entry for a file name, if listed.
    pub fn get(&self, file_name: &str) -> Option<&ManifestEntry> {
        self.entries.get(file_name)
    }

    /// Checks the file at `path` (looked up by its file name) against the manifest:
    /// [`Checked::NotListed`] when absent, [`Checked::Matches`] when the digest agrees,
    /// [`ParamsError::DigestMismatch`] otherwise. Digests are cached (see
    /// [`file_digest_cached`]).
    pub fn check(&self, path: impl AsRef<Path>) -> Result<Checked, ParamsError> {
        let path = path.as_ref();
        let Some(entry) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| self.get(n))
        else {
            return Ok(Checked::NotListed);
        };
        let actual = file_digest_cached(path)?;
        if actual.eq_ignore_ascii_case(&entry.digest) {
            Ok(Checked::Matches)
        } else {
            Err(ParamsError::DigestMismatch {
                path: path.to_path_buf(),
                expected: entry.digest.clone(),
                actual,
            })
        }
    }
}
