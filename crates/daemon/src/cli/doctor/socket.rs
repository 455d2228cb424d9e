//! The gRPC listeners: the unix socket's directory, mode and group (who can connect), what
//! is at its path now, and whether TCP is exposed.

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use super::report::{Level, Report};
use crate::server::{socket_state, Config, SocketState};

/// This process's effective user and group ids, from `/proc/self/status`.
pub(super) fn own_ids() -> Option<(u32, u32)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u32> {
        let line = status.lines().find_map(|l| l.strip_prefix(name))?;
        // Real, effective, saved, filesystem: the effective one.
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some((field("Uid:")?, field("Gid:")?))
}

/// The name of `id` in `/etc/passwd` or `/etc/group` (`name:x:id:...`), else the number.
pub(super) fn id_name(file: &str, id: u32) -> String {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|text| {
            text.lines().find_map(|l| {
                let mut f = l.split(':');
                let name = f.next()?;
                (f.nth(1)?.parse::<u32>().ok()? == id).then(|| name.to_owned())
            })
        })
        .unwrap_or_else(|| id.to_string())
}

/// Checks the unix socket and the TCP listener of `config`.
pub fn check(r: &mut Report, config: &Config) {
    r.section("listeners");
    match config.unix_socket() {
        Ok(Some(path)) => unix_socket(r, &path, config),
        Ok(None) => r.add(Level::Info, "no unix socket (server.unix_socket is empty)"),
        Err(e) => r.add(Level::Fail, e),
    }
    match config.tcp_addr() {
        Ok(Some(a)) if a.ip().is_loopback() => {
            r.add(Level::Ok, format!("gRPC on TCP {a} (loopback only)"))
        }
        Ok(Some(a)) => r.add(
            Level::Warn,
            format!("gRPC on TCP {a}, beyond loopback and without TLS: firewall it"),
        ),
        Ok(None) => r.add(Level::Info, "no TCP listener (server.tcp_listen is empty)"),
        Err(e) => r.add(Level::Fail, e),
    }
}

fn unix_socket(r: &mut Report, path: &Path, config: &Config) {
    let (uid, gid) = own_ids().unwrap_or((u32::MAX, u32::MAX));
    let user = id_name("/etc/passwd", uid);
    match path.parent().map(std::fs::metadata) {
        Some(Ok(dir)) => {
            let writable = if dir.uid() == uid {
                dir.mode() & 0o200 != 0
            } else if dir.gid() == gid {
                dir.mode() & 0o020 != 0
            } else {
                dir.mode() & 0o002 != 0
            };
            let text = format!(
                "{}: owner {}, group {}, mode {:o}",
                path.parent().unwrap_or(path).display(),
                id_name("/etc/passwd", dir.uid()),
                id_name("/etc/group", dir.gid()),
                dir.mode() & 0o7777
            );
            if writable || uid == 0 {
                r.add(Level::Ok, text);
            } else {
                r.add(
                    Level::Fail,
                    format!("{text}: {user} cannot create the socket there"),
                );
            }
        }
        _ => r.add(
            Level::Info,
            format!(
                "{} does not exist: the daemon creates it (under systemd, \
                 RuntimeDirectory=filprove makes /run/filprove for the service's User=)",
                path.parent().unwrap_or(path).display()
            ),
        ),
    }
    let who = match config.socket_mode() {
        Ok(0o660) => format!(
            "mode 0660: the daemon's user ({user} when run as now) and its group ({}) may \
             connect; Curio's user must be in that group",
            id_name("/etc/group", gid)
        ),
        Ok(_) => format!(
            "mode 0600: only the daemon's user ({user} when run as now) may connect; run \
             Curio as that user, or set server.socket_mode = \"0660\" and give the daemon \
             Curio's group"
        ),
        Err(e) => {
            r.add(Level::Fail, e);
            return;
        }
    };
    r.add(Level::Info, format!("gRPC on {}: {who}", path.display()));
    match socket_state(path) {
        SocketState::Absent => {}
        SocketState::Stale => r.add(
            Level::Info,
            format!("{} is a stale socket: removed at start", path.display()),
        ),
        SocketState::Answering => r.add(
            Level::Warn,
            format!(
                "a daemon already answers on {}: a second one would refuse to start",
                path.display()
            ),
        ),
        SocketState::NotASocket => r.add(
            Level::Fail,
            format!(
                "{} exists and is not a socket: the daemon refuses to replace it",
                path.display()
            ),
        ),
    }
}
