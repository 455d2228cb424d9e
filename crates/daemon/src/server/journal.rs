//! The journal of accepted jobs: one file per accepted submission, written (temp file,
//! fsync, rename, fsync of the directory) before the submission is answered, and removed
//! when its job ends, except when shutdown cancelled it. At start the daemon resumes every
//! entry it finds, and reports the ones it cannot read as failed jobs under their ids
//! (docs/operations.md, "Durability").
//!
//! An entry's file is a short text header and the request as received (its protobuf
//! encoding, the id filled in when the caller left it empty):
//!
//! ```text
//! filprove-journal 1
//! id <request id>
//! kind <wire proof kind>
//! digest <hex input digest>
//! check <hex BLAKE2b-256 of the body>
//!
//! <body>
//! ```
//!
//! The bytes of all entries together are bounded by `journal.max_bytes`; a submission that
//! would pass it is refused, never accepted unjournaled.

use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use filprove_engine::InputDigest;
use prost::Message as _;
use serde::Deserialize;

use super::config::ByteSize;
use super::convert::input_digest;
use super::pb;

const MAGIC: &str = "filprove-journal 1";
const SUFFIX: &str = ".job";
const TEMP_PREFIX: &str = ".tmp-";
/// Where entries that could not be resumed are moved (kept for the operator).
pub const UNREADABLE_DIR: &str = "unreadable";

/// `[journal]`: where accepted jobs are recorded.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct JournalSection {
    /// False turns the journal off (accepted jobs are then lost on a restart or crash).
    pub enabled: bool,
    /// The directory (created when missing; one daemon per directory).
    pub dir: String,
    /// Bytes all entries may take together.
    pub max_bytes: ByteSize,
}

impl Default for JournalSection {
    fn default() -> Self {
        Self {
            enabled: true,
            dir: "/var/lib/filprove/journal".into(),
            max_bytes: ByteSize::Text("8GiB".into()),
        }
    }
}

impl JournalSection {
    /// The byte bound; it must hold one message of `max_message_bytes`.
    pub fn max_bytes(&self, max_message_bytes: usize) -> Result<u64, String> {
        let b = self
            .max_bytes
            .resolve()
            .map_err(|e| format!("journal.max_bytes: {e}"))?
            .ok_or("journal.max_bytes takes a size, not \"auto\"")?;
        if b < max_message_bytes as u64 {
            return Err(format!(
                "journal.max_bytes ({b}) is less than server.max_message_bytes \
                 ({max_message_bytes}): the largest request could never be journaled"
            ));
        }
        if self.enabled && self.dir.is_empty() {
            return Err("journal.dir is empty; set a directory or journal.enabled = false".into());
        }
        Ok(b)
    }
}

/// Why an entry could not be written.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The entry would pass `journal.max_bytes`.
    #[error(
        "journal_full: {used} bytes journaled, {needed} more would pass journal.max_bytes ({max})"
    )]
    Full {
        /// Bytes in the journal.
        used: u64,
        /// The entry's size.
        needed: u64,
        /// The bound.
        max: u64,
    },
    /// The file system refused.
    #[error("journal_unwritable: {0}")]
    Io(String),
}

/// One journaled submission (its file and size).
#[derive(Debug)]
pub struct Entry {
    path: PathBuf,
    bytes: u64,
}

impl Entry {
    /// The entry's file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// What a journal entry found at start holds.
#[derive(Debug)]
pub enum Recovered {
    /// A request to resume.
    Request(Entry, Box<pb::SubmitProofRequest>),
    /// An entry that cannot be read: its id (from the header, or `journal:<file name>`
    /// when even that is unreadable), its wire kind when known, and why.
    Unreadable {
        /// The entry.
        entry: Entry,
        /// The job id to report it under.
        id: String,
        /// The wire proof kind, 0 when unknown.
        kind: i32,
        /// What is wrong.
        reason: String,
    },
}

/// The journal directory and its byte count.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    max_bytes: u64,
    used: Mutex<u64>,
    seq: AtomicU64,
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> JournalError {
    JournalError::Io(format!("{what} {}: {e}", path.display()))
}

fn check_of(body: &[u8]) -> String {
    let h = blake2b_simd::Params::new()
        .hash_length(32)
        .personal(b"filprove-journal")
        .hash(body);
    hex::encode(h.as_bytes())
}

fn sync_dir(dir: &Path) -> Result<(), JournalError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err("cannot sync", dir, e))
}

impl Journal {
    /// Opens (creating) `dir`: removes temp files of writes a crash interrupted (their
    /// submissions were never answered) and counts the entries' bytes.
    pub fn open(dir: &Path, max_bytes: u64) -> Result<Arc<Self>, JournalError> {
        fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, e))?;
        let mut used = 0;
        for (path, name) in Self::files(dir)? {
            if name.starts_with(TEMP_PREFIX) {
                tracing::info!(file = %path.display(), "removing an unfinished journal write");
                fs::remove_file(&path).map_err(|e| io_err("cannot remove", &path, e))?;
            } else if name.ends_with(SUFFIX) {
                used += fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            }
        }
        Ok(Arc::new(Self {
            dir: dir.to_path_buf(),
            max_bytes,
            used: Mutex::new(used),
            seq: AtomicU64::new(0),
        }))
    }

    fn files(dir: &Path) -> Result<Vec<(PathBuf, String)>, JournalError> {
        let mut out = Vec::new();
        for e in fs::read_dir(dir).map_err(|e| io_err("cannot read", dir, e))? {
            let e = e.map_err(|e| io_err("cannot read", dir, e))?;
            if e.file_type().map(|t| t.is_file()).unwrap_or(false) {
                let name = e.file_name().to_string_lossy().into_owned();
                out.push((e.path(), name));
            }
        }
        out.sort();
        Ok(out)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Bytes the entries take now.
    pub fn used_bytes(&self) -> u64 {
        *self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes `r` (whose `request_id` is the job id) durably; refused when it would pass
    /// the byte bound.
    pub fn record(
        &self,
        r: &pb::SubmitProofRequest,
        digest: InputDigest,
    ) -> Result<Entry, JournalError> {
        let body = r.encode_to_vec();
        let header = format!(
            "{MAGIC}\nid {}\nkind {}\ndigest {}\ncheck {}\n\n",
            r.request_id,
            r.proof_kind,
            hex::encode(digest.0),
            check_of(&body)
        );
        let bytes = (header.len() + body.len()) as u64;
        {
            let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
            if *used + bytes > self.max_bytes {
                return Err(JournalError::Full {
                    used: *used,
                    needed: bytes,
                    max: self.max_bytes,
                });
            }
            *used += bytes;
        }
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let name = format!(
            "{stamp:024}-{:08}{SUFFIX}",
            self.seq.fetch_add(1, Ordering::Relaxed)
        );
        let path = self.dir.join(&name);
        let temp = self.dir.join(format!("{TEMP_PREFIX}{name}"));
        match self.write_durably(&temp, &path, &[header.as_bytes(), &body]) {
            Ok(()) => Ok(Entry { path, bytes }),
            Err(e) => {
                let _ = fs::remove_file(&temp);
                self.release(bytes);
                Err(e)
            }
        }
    }

    /// Writes `parts` to `temp`, fsyncs it, renames it to `path` and fsyncs the directory.
    fn write_durably(&self, temp: &Path, path: &Path, parts: &[&[u8]]) -> Result<(), JournalError> {
        let mut f = File::create(temp).map_err(|e| io_err("cannot create", temp, e))?;
        for part in parts {
            f.write_all(part)
                .map_err(|e| io_err("cannot write", temp, e))?;
        }
        f.sync_all().map_err(|e| io_err("cannot sync", temp, e))?;
        fs::rename(temp, path).map_err(|e| io_err("cannot rename", temp, e))?;
        sync_dir(&self.dir)
    }

    fn release(&self, bytes: u64) {
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        *used = used.saturating_sub(bytes);
    }

    /// Removes an entry (its job ended, or the submission was not accepted).
    pub fn remove(&self, entry: Entry) {
        match fs::remove_file(&entry.path) {
            Ok(()) => {
                let _ = sync_dir(&self.dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::error!(file = %entry.path.display(), error = %e, "cannot remove a journal entry");
                return;
            }
        }
        self.release(entry.bytes);
    }

    /// Moves an entry that cannot be resumed to the `unreadable` directory, where it stays
    /// for the operator (no longer counted against the bound). Returns its new path.
    pub fn set_aside(&self, entry: Entry) -> PathBuf {
        let aside = self.dir.join(UNREADABLE_DIR);
        let name = entry
            .path
            .file_name()
            .map(PathBuf::from)
            .unwrap_or_default();
        let to = aside.join(name);
        let moved = fs::create_dir_all(&aside).and_then(|_| fs::rename(&entry.path, &to));
        match moved {
            Ok(()) => {
                let _ = sync_dir(&self.dir);
                self.release(entry.bytes);
                to
            }
            Err(e) => {
                tracing::error!(file = %entry.path.display(), error = %e, "cannot set an unreadable journal entry aside");
                entry.path
            }
        }
    }

    /// Every entry, oldest first, decoded and checked.
    pub fn recover(&self) -> Result<Vec<Recovered>, JournalError> {
        let mut out = Vec::new();
        for (path, name) in Self::files(&self.dir)? {
            if !name.ends_with(SUFFIX) {
                continue;
            }
            let bytes = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            let entry = Entry { path, bytes };
            out.push(match fs::read(&entry.path) {
                Ok(data) => decode(entry, &name, &data),
                Err(e) => Recovered::Unreadable {
                    id: format!("journal:{name}"),
                    kind: 0,
                    reason: format!("cannot read {}: {e}", entry.path.display()),
                    entry,
                },
            });
        }
        Ok(out)
    }
}

/// The header's fields and the body, or why not.
struct Parsed<'a> {
    id: Option<String>,
    kind: i32,
    digest: Option<String>,
    check: Option<String>,
    body: Option<&'a [u8]>,
}

fn parse(data: &[u8]) -> Parsed<'_> {
    let mut p = Parsed {
        id: None,
        kind: 0,
        digest: None,
        check: None,
        body: None,
    };
    let Some(end) = data.windows(2).position(|w| w == b"\n\n") else {
        return p;
    };
    let Ok(head) = std::str::from_utf8(&data[..end]) else {
        return p;
    };
    let mut lines = head.lines();
    if lines.next() != Some(MAGIC) {
        return p;
    }
    for line in lines {
        let (k, v) = line.split_once(' ').unwrap_or((line, ""));
        match k {
            "id" if super::intake::check_id("request_id", v).is_ok() && !v.is_empty() => {
                p.id = Some(v.to_string())
            }
            "kind" => p.kind = v.parse().unwrap_or(0),
            "digest" => p.digest = Some(v.to_string()),
            "check" => p.check = Some(v.to_string()),
            _ => {}
        }
    }
    p.body = Some(&data[end + 2..]);
    p
}

fn decode(entry: Entry, name: &str, data: &[u8]) -> Recovered {
    let p = parse(data);
    let id = p.id.clone().unwrap_or_else(|| format!("journal:{name}"));
    let unreadable = |entry, reason: String| Recovered::Unreadable {
        entry,
        id: id.clone(),
        kind: p.kind,
        reason,
    };
    let Some(body) = p.body.filter(|_| p.id.is_some()) else {
        return unreadable(entry, "the entry's header is damaged".into());
    };
    if p.check.as_deref() != Some(check_of(body).as_str()) {
        return unreadable(
            entry,
            "the entry's body does not match its checksum (damaged or truncated)".into(),
        );
    }
    let r = match pb::SubmitProofRequest::decode(body) {
        Ok(r) => r,
        Err(e) => return unreadable(entry, format!("the request does not decode: {e}")),
    };
    if Some(r.request_id.as_str()) != p.id.as_deref()
        || p.digest.as_deref() != Some(hex::encode(input_digest(&r).0).as_str())
    {
        return unreadable(
            entry,
            "the request does not match the entry's header".into(),
        );
    }
    Recovered::Request(entry, Box::new(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: &str) -> pb::SubmitProofRequest {
        pb::SubmitProofRequest {
            request_id: id.into(),
            proof_kind: pb::ProofKind::WinningPost as i32,
            vanilla_proof: vec![7; 100],
            ..Default::default()
        }
    }

    #[test]
    fn entries_round_trip_and_count_against_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path(), 1000).unwrap();
        let r = request("a");
        let e = j.record(&r, input_digest(&r)).unwrap();
        assert!(e.path().exists());
        let used = j.used_bytes();
        assert!(used > 100, "{used}");
        // Past the bound: refused, nothing written.
        let big = pb::SubmitProofRequest {
            vanilla_proof: vec![1; 900],
            ..request("b")
        };
        match j.record(&big, input_digest(&big)) {
            Err(JournalError::Full { .. }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(j.used_bytes(), used);
        // A second open sees the entry and its bytes.
        let j2 = Journal::open(dir.path(), 1000).unwrap();
        assert_eq!(j2.used_bytes(), used);
        let rec = j2.recover().unwrap();
        assert_eq!(rec.len(), 1);
        match &rec[0] {
            Recovered::Request(_, got) => assert_eq!(**got, r),
            other => panic!("{other:?}"),
        }
        j.remove(e);
        assert_eq!(j.used_bytes(), 0);
        assert!(j.recover().unwrap().is_empty());
    }

    #[test]
    fn damaged_entries_are_unreadable_under_their_ids() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path(), 1 << 20).unwrap();
        let r = request("flipped");
        let e = j.record(&r, input_digest(&r)).unwrap();
        let mut data = fs::read(e.path()).unwrap();
        let last = data.len() - 1;
        data[last] ^= 1;
        fs::write(e.path(), &data).unwrap();
        fs::write(dir.path().join("0-garbage.job"), b"\x00\x01not a journal").unwrap();
        fs::write(dir.path().join(".tmp-1.job"), b"half").unwrap();
        let j = Journal::open(dir.path(), 1 << 20).unwrap();
        assert!(
            !dir.path().join(".tmp-1.job").exists(),
            "temp files removed"
        );
        let rec = j.recover().unwrap();
        let mut ids: Vec<(String, String)> = rec
            .into_iter()
            .map(|r| match r {
                Recovered::Unreadable {
                    id, reason, entry, ..
                } => {
                    let to = j.set_aside(entry);
                    assert!(to.exists());
                    (id, reason)
                }
                other => panic!("{other:?}"),
            })
            .collect();
        ids.sort();
        assert_eq!(ids[0].0, "flipped");
        assert!(ids[0].1.contains("checksum"), "{}", ids[0].1);
        assert_eq!(ids[1].0, "journal:0-garbage.job");
        assert!(j.recover().unwrap().is_empty(), "set aside");
        assert_eq!(j.used_bytes(), 0);
    }
}
