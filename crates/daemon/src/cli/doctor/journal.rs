//! The journal of accepted jobs (`[journal]`): its directory exists or can be created,
//! the daemon can write there, and the file system has room for `journal.max_bytes`.

use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use super::report::{gib, Level, Report};
use super::socket::{id_name, own_ids};
use crate::server::Config;

/// Checks `[journal]` of `config`.
pub fn check(r: &mut Report, config: &Config) {
    r.section("journal");
    let j = &config.journal;
    if !j.enabled {
        r.add(
            Level::Warn,
            "journal.enabled = false: accepted jobs are lost on a restart or crash",
        );
        return;
    }
    let max = match j.max_bytes(config.server.max_message_bytes) {
        Ok(m) => m,
        Err(e) => {
            r.add(Level::Fail, e);
            return;
        }
    };
    let dir = Path::new(&j.dir);
    let Some(existing) = place(r, dir) else {
        return;
    };
    let used = if existing == dir { entries(r, dir) } else { 0 };
    space(r, existing, max, used);
}

/// Whether `dir` is (or can be made) a directory the daemon writes; the directory whose
/// file system it will be on (itself, or its nearest existing ancestor).
fn place<'a>(r: &mut Report, dir: &'a Path) -> Option<&'a Path> {
    let Some(existing) = dir.ancestors().find(|a| a.exists()) else {
        r.add(
            Level::Fail,
            format!(
                "journal.dir {}: no part of the path exists (give an absolute path)",
                dir.display()
            ),
        );
        return None;
    };
    let meta = match std::fs::metadata(existing) {
        Ok(m) if m.is_dir() => m,
        Ok(_) => {
            r.add(
                Level::Fail,
                format!(
                    "journal.dir {}: {} is not a directory",
                    dir.display(),
                    existing.display()
                ),
            );
            return None;
        }
        Err(e) => {
            r.add(
                Level::Fail,
                format!("journal.dir {}: {}: {e}", dir.display(), existing.display()),
            );
            return None;
        }
    };
    let (uid, gid) = own_ids().unwrap_or((u32::MAX, u32::MAX));
    let user = id_name("/etc/passwd", uid);
    let owner = format!(
        "owner {}, group {}, mode {:o}",
        id_name("/etc/passwd", meta.uid()),
        id_name("/etc/group", meta.gid()),
        meta.mode() & 0o7777
    );
    let writable = if existing == dir {
        probe(dir)
    } else {
        mode_allows_write(&meta, uid, gid)
    };
    let what = if existing == dir {
        format!("journal.dir {}", dir.display())
    } else {
        format!(
            "journal.dir {} does not exist; the daemon creates it in {}",
            dir.display(),
            existing.display()
        )
    };
    match writable {
        Ok(()) => r.add(Level::Ok, format!("{what} ({owner}): writable by {user}")),
        Err(why) => {
            r.add(
                Level::Fail,
                format!("{what} ({owner}): {user} cannot write there: {why}"),
            );
            return None;
        }
    }
    if uid == 0 {
        r.add(
            Level::Info,
            "doctor runs as root: a daemon run as another user (systemd User=) needs \
             write access there too",
        );
    }
    Some(existing)
}

/// Creates and removes a file in `dir`, named like the journal's unfinished writes (which
/// the daemon removes at start, should this one stay behind).
fn probe(dir: &Path) -> Result<(), String> {
    let path = dir.join(format!(".tmp-doctor-{}", std::process::id()));
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path);
    match made {
        Ok(_) => std::fs::remove_file(&path).map_err(|e| e.to_string()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// Whether the permission bits of a directory let `uid`/`gid` create entries in it.
fn mode_allows_write(meta: &std::fs::Metadata, uid: u32, gid: u32) -> Result<(), String> {
    let bit = if uid == 0 {
        return Ok(());
    } else if meta.uid() == uid {
        0o300
    } else if meta.gid() == gid {
        0o030
    } else {
        0o003
    };
    if meta.mode() & bit == bit {
        Ok(())
    } else {
        Err("no write and search permission".into())
    }
}

/// Reports the entries already journaled (resumed at start); their bytes.
fn entries(r: &mut Report, dir: &Path) -> u64 {
    let Ok(read) = std::fs::read_dir(dir) else {
        return 0;
    };
    let (mut count, mut bytes) = (0u64, 0u64);
    for e in read.flatten() {
        let is_entry = e.file_name().to_string_lossy().ends_with(".job");
        if let Ok(m) = e.metadata() {
            if is_entry && m.is_file() {
                count += 1;
                bytes += m.len();
            }
        }
    }
    if count > 0 {
        r.add(
            Level::Info,
            format!(
                "{count} accepted job(s) journaled ({bytes} bytes): resumed when the daemon starts"
            ),
        );
    }
    bytes
}

/// Compares the free space with what the journal may still take.
fn space(r: &mut Report, dir: &Path, max: u64, used: u64) {
    let room = max.saturating_sub(used);
    match fs2::available_space(dir) {
        Ok(free) if free >= room => r.add(
            Level::Ok,
            format!(
                "{} free on its file system, journal.max_bytes {}",
                gib(free),
                gib(max)
            ),
        ),
        Ok(free) => r.add(
            Level::Warn,
            format!(
                "{} free on its file system, less than the {} journal.max_bytes still allows: \
                 submissions fail with journal_unwritable when the disk fills first",
                gib(free),
                gib(room)
            ),
        ),
        Err(e) => r.add(Level::Warn, format!("free space of {}: {e}", dir.display())),
    }
}
