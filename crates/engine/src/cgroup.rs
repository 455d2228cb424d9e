//! The memory limit of the process's own cgroup, so that systemd's `MemoryMax=` (cgroup
//! v2 `memory.max`) or a container's limit (v1 `memory.limit_in_bytes`) is honoured.
//!
//! The process's cgroup comes from `/proc/self/cgroup`; the limit in force is the smallest
//! one set on that cgroup or any of its ancestors, under the v2 mount
//! (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on hybrid hosts) and the v1 memory
//! controller's mount (`/sys/fs/cgroup/memory`). A cgroup namespace (the process sees its
//! cgroup as `/`) and a container's mount of its own cgroup at the mount root are covered
//! by the same walk, which ends at the mount root.

use std::path::{Path, PathBuf};

/// A memory limit and the file it was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupLimit {
    /// The limit, bytes.
    pub bytes: u64,
    /// The `memory.max` or `memory.limit_in_bytes` file that set it.
    pub file: PathBuf,
}

/// cgroup v1 reports "no limit" as a number near `i64::MAX` (page-rounded).
const V1_UNLIMITED: u64 = 1 << 62;

/// The live limit: [`memory_limit_under`] the real root.
pub fn memory_limit() -> Option<CgroupLimit> {
    memory_limit_under(Path::new("/"))
}

/// The process's cgroup memory limit, reading `proc/self/cgroup` and `sys/fs/cgroup`
/// below `root` (`/` for the live system, a fake tree in tests); `None` when no limit is
/// set. Without a readable `/proc/self/cgroup` the mount roots' own files are read.
pub fn memory_limit_under(root: &Path) -> Option<CgroupLimit> {
    let text = std::fs::read_to_string(root.join("proc/self/cgroup")).unwrap_or_default();
    let (v2, v1) = process_cgroups(&text);
    let mounts = root.join("sys/fs/cgroup");
    let v2_path = v2.as_deref().unwrap_or("/");
    let v1_path = v1.as_deref().unwrap_or("/");
    [
        smallest_limit(&mounts, v2_path, "memory.max"),
        smallest_limit(&mounts.join("unified"), v2_path, "memory.max"),
        smallest_limit(&mounts.join("memory"), v1_path, "memory.limit_in_bytes"),
    ]
    .into_iter()
    .flatten()
    .min_by_key(|l| l.bytes)
}

/// The v2 path (the `0::` line) and the v1 memory controller's path of
/// `/proc/self/cgroup` (`hierarchy-id:controllers:path` per line).
fn process_cgroups(text: &str) -> (Option<String>, Option<String>) {
    let (mut v2, mut v1) = (None, None);
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            v2 = Some(path.to_owned());
        } else if controllers.split(',').any(|c| c == "memory") {
            v1 = Some(path.to_owned());
        }
    }
    (v2, v1)
}

/// The smallest limit in `file` of the cgroup `path` under `mount` and its ancestors up
/// to the mount root.
fn smallest_limit(mount: &Path, path: &str, file: &str) -> Option<CgroupLimit> {
    Path::new(path.trim_start_matches('/'))
        .ancestors()
        .filter_map(|dir| read_limit(&mount.join(dir).join(file)))
        .min_by_key(|l| l.bytes)
}

/// One limit file: bytes, or `max` / v1's huge number for none.
fn read_limit(file: &Path) -> Option<CgroupLimit> {
    let text = std::fs::read_to_string(file).ok()?;
    let bytes = text.trim().parse::<u64>().ok()?;
    (bytes < V1_UNLIMITED).then(|| CgroupLimit {
        bytes,
        file: file.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake root with `/proc/self/cgroup` and the given limit files.
    fn fake_root(cgroup: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let path = root.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("proc/self/cgroup", cgroup);
        for (rel, text) in files {
            write(rel, text);
        }
        root
    }

    #[test]
    fn systemd_memory_max_on_the_service_cgroup_is_found() {
        let root = fake_root(
            "0::/system.slice/filprove.service\n",
            &[
                (
                    "sys/fs/cgroup/system.slice/filprove.service/memory.max",
                    "68719476736\n",
                ),
                ("sys/fs/cgroup/system.slice/memory.max", "max\n"),
                // Another service's limit must not apply.
                (
                    "sys/fs/cgroup/system.slice/curio.service/memory.max",
                    "1024\n",
                ),
            ],
        );
        let l = memory_limit_under(root.path()).unwrap();
        assert_eq!(l.bytes, 64 << 30);
        assert!(l.file.ends_with("filprove.service/memory.max"), "{l:?}");
    }

    #[test]
    fn an_ancestor_s_smaller_limit_applies() {
        let root = fake_root(
            "0::/machine.slice/app.scope/worker\n",
            &[
                (
                    "sys/fs/cgroup/machine.slice/app.scope/worker/memory.max",
                    "max\n",
                ),
                ("sys/fs/cgroup/machine.slice/memory.max", "17179869184\n"),
            ],
        );
        assert_eq!(memory_limit_under(root.path()).unwrap().bytes, 16 << 30);
    }

    #[test]
    fn cgroup_v1_memory_controller_with_its_unlimited_value() {
        let root = fake_root(
            "12:cpu,cpuacct:/\n4:memory:/docker/abc\n0::/\n",
            &[
                (
                    "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes",
                    "8589934592\n",
                ),
                (
                    "sys/fs/cgroup/memory/memory.limit_in_bytes",
                    "9223372036854771712\n",
                ),
            ],
        );
        assert_eq!(memory_limit_under(root.path()).unwrap().bytes, 8 << 30);

        let unlimited = fake_root(
            "4:memory:/user.slice\n",
            &[(
                "sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes",
                "9223372036854771712\n",
            )],
        );
        assert_eq!(memory_limit_under(unlimited.path()), None);
    }

    #[test]
    fn a_container_sees_its_own_cgroup_at_the_mount_root() {
        // cgroup namespace: the process's cgroup is "/", its limit at the mount root.
        let ns = fake_root("0::/\n", &[("sys/fs/cgroup/memory.max", "4294967296\n")]);
        assert_eq!(memory_limit_under(ns.path()).unwrap().bytes, 4 << 30);
        // No namespace, but the container's cgroup mounted as the root: the walk ends there.
        let mounted = fake_root(
            "0::/kubepods/pod1/ctr\n",
            &[("sys/fs/cgroup/memory.max", "2147483648\n")],
        );
        assert_eq!(memory_limit_under(mounted.path()).unwrap().bytes, 2 << 30);
    }

    #[test]
    fn no_limit_anywhere_is_none() {
        let root = fake_root(
            "0::/user.slice\n",
            &[("sys/fs/cgroup/user.slice/memory.max", "max\n")],
        );
        assert_eq!(memory_limit_under(root.path()), None);
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(memory_limit_under(empty.path()), None);
    }
}
