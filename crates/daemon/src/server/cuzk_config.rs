//! cuzk's configuration keys in a filprove configuration file: each one is understood
//! (moved to the filprove key of the same meaning) or refused with the filprove setting
//! that does its job named, never silently ignored. The table follows cuzk's
//! `cuzk.example.toml` and its `Config` sections: `[daemon]`, `[memory]`, `[gpus]`,
//! `[scheduler]`, `[synthesis]`, `[pipeline]`, `[srs]`, `[logging]`. `[srs] param_cache`
//! and `[srs] preload` are filprove keys too and need no translation.

use toml::{Table, Value};

/// What becomes of one cuzk key.
enum Action {
    /// The gRPC listen address: `server.unix_socket` or `server.tcp_listen`, by its form.
    Listen,
    /// The same meaning under a filprove key (`section.key`).
    Rename(&'static str),
    /// No filprove key of that meaning; the text names what does the job.
    Refuse(&'static str),
}

const POOLS: &str = "engine.partition_workers (partitions synthesized at once) and \
    memory.budget; filprove always pipelines synthesis and proving by partition";

/// cuzk's keys (`section.key`) and their fate.
const CUZK_KEYS: &[(&str, Action)] = &[
    ("daemon.listen", Action::Listen),
    ("daemon.status_listen", Action::Rename("server.http_listen")),
    (
        "gpus.gpu_workers_per_device",
        Action::Rename("engine.gpu_workers_per_device"),
    ),
    (
        "synthesis.partition_workers",
        Action::Rename("engine.partition_workers"),
    ),
    (
        "memory.total_budget",
        Action::Refuse(
            "memory.budget (partitions' working memory) plus srs.budget (resident \
             parameters); both default to shares of the machine's or cgroup's limit",
        ),
    ),
    (
        "memory.safety_margin",
        Action::Refuse(
            "memory.budget: \"auto\" is 80 % of the machine's or cgroup's limit, less \
             srs.budget",
        ),
    ),
    (
        "memory.eviction_min_idle",
        Action::Refuse("srs.budget: parameters stay resident until a load needs their room"),
    ),
    ("memory.pinned_budget", Action::Refuse("srs.budget")),
    (
        "memory.working_memory_budget",
        Action::Refuse("memory.budget"),
    ),
    (
        "gpus.devices",
        Action::Refuse("CUDA_VISIBLE_DEVICES in the service's environment"),
    ),
    (
        "gpus.gpu_threads",
        Action::Refuse("RAYON_NUM_THREADS in the service's environment (one CPU pool)"),
    ),
    ("scheduler.max_batch_size", Action::Refuse(POOLS)),
    ("scheduler.max_batch_wait_ms", Action::Refuse(POOLS)),
    (
        "scheduler.sort_by_type",
        Action::Refuse("each request's priority (CRITICAL, HIGH, NORMAL) orders the work"),
    ),
    (
        "synthesis.threads",
        Action::Refuse("RAYON_NUM_THREADS in the service's environment"),
    ),
    ("pipeline.enabled", Action::Refuse(POOLS)),
    ("pipeline.synthesis_lookahead", Action::Refuse(POOLS)),
    ("pipeline.synthesis_concurrency", Action::Refuse(POOLS)),
    ("pipeline.max_parallel_synthesis", Action::Refuse(POOLS)),
    ("pipeline.slot_size", Action::Refuse(POOLS)),
    ("pipeline.max_gpu_queue_depth", Action::Refuse(POOLS)),
    (
        "logging.level",
        Action::Refuse("RUST_LOG in the service's environment (e.g. RUST_LOG=info)"),
    ),
    (
        "logging.format",
        Action::Refuse("filprove --log-format json"),
    ),
];

/// Sections only cuzk has: removed once their keys are translated.
const CUZK_ONLY_SECTIONS: &[&str] = &[
    "daemon",
    "gpus",
    "scheduler",
    "synthesis",
    "pipeline",
    "logging",
];

/// Whether `table` holds any of cuzk's keys.
pub fn has_cuzk_keys(table: &Table) -> bool {
    CUZK_KEYS
        .iter()
        .any(|(path, _)| lookup(table, path).is_some())
}

/// Translates cuzk's keys in `table` to filprove's, in place; returns cuzk's listen
/// address when given (applied with [`super::Config::set_listeners`]). Refused keys are
/// all listed in one error, each with its filprove equivalent; a key set both ways is an
/// error.
pub fn translate(table: &mut Table) -> Result<Option<String>, String> {
    let mut refused = Vec::new();
    let mut listen = None;
    for (path, action) in CUZK_KEYS {
        let Some(value) = lookup(table, path).cloned() else {
            continue;
        };
        match action {
            Action::Refuse(instead) => refused.push(format!(
                "cuzk's {path} is not a filprove setting: use {instead}"
            )),
            Action::Listen => {
                for own in ["server.unix_socket", "server.tcp_listen"] {
                    if lookup(table, own).is_some() {
                        return Err(format!("both cuzk's {path} and {own} are set: keep one"));
                    }
                }
                let Value::String(address) = value else {
                    return Err(format!("{path} must be a string"));
                };
                listen = Some(address);
            }
            Action::Rename(target) => {
                if lookup(table, target).is_some() {
                    return Err(format!(
                        "both cuzk's {path} and {target} are set: keep {target}"
                    ));
                }
                insert(table, target, value)?;
            }
        }
        remove(table, path);
    }
    if !refused.is_empty() {
        return Err(refused.join("; "));
    }
    for section in CUZK_ONLY_SECTIONS {
        if table
            .get(*section)
            .and_then(Value::as_table)
            .is_some_and(Table::is_empty)
        {
            table.remove(*section);
        }
    }
    Ok(listen)
}

fn split(path: &str) -> (&str, &str) {
    path.split_once('.').unwrap_or(("", path))
}

fn lookup<'a>(table: &'a Table, path: &str) -> Option<&'a Value> {
    let (section, key) = split(path);
    table.get(section)?.as_table()?.get(key)
}

fn remove(table: &mut Table, path: &str) {
    let (section, key) = split(path);
    if let Some(Value::Table(t)) = table.get_mut(section) {
        t.remove(key);
    }
}

fn insert(table: &mut Table, path: &str, value: Value) -> Result<(), String> {
    let (section, key) = split(path);
    match table
        .entry(section.to_owned())
        .or_insert_with(|| Value::Table(Table::new()))
    {
        Value::Table(t) => {
            t.insert(key.to_owned(), value);
            Ok(())
        }
        _ => Err(format!("{section} must be a table")),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::Config;

    #[test]
    fn cuzk_keys_with_a_filprove_meaning_are_understood() {
        let c = Config::from_toml(
            r#"
[daemon]
listen = "unix:///run/curio/cuzk.sock"
status_listen = "127.0.0.1:9831"
[srs]
param_cache = "/data/zk/params"
preload = ["porep-32g"]
[gpus]
gpu_workers_per_device = 1
[synthesis]
partition_workers = 7
"#,
        )
        .unwrap();
        assert_eq!(
            c.unix_socket().unwrap(),
            Some(PathBuf::from("/run/curio/cuzk.sock"))
        );
        assert_eq!(c.tcp_addr().unwrap(), None);
        assert_eq!(c.server.http_listen, "127.0.0.1:9831");
        assert_eq!(c.srs.param_cache, "/data/zk/params");
        assert_eq!(c.srs.preload, ["porep-32g"]);
        assert_eq!(c.engine.gpu_workers_per_device, 1);
        assert_eq!(c.engine.partition_workers, 7);

        let e = Config::from_toml("[daemon]\nlisten = \"0.0.0.0:9820\"\n").unwrap_err();
        assert!(e.contains("server.allow_remote"), "{e}");
        let tcp = Config::from_toml(
            "[daemon]\nlisten = \"0.0.0.0:9820\"\n[server]\nallow_remote = true\n",
        )
        .unwrap();
        assert_eq!(
            tcp.tcp_addr().unwrap(),
            Some("0.0.0.0:9820".parse().unwrap())
        );
        assert_eq!(tcp.unix_socket().unwrap(), None);
    }

    #[test]
    fn cuzk_keys_without_one_are_refused_naming_the_equivalent() {
        let e = Config::from_toml(
            "[memory]\ntotal_budget = \"auto\"\n[gpus]\ndevices = [0]\n[scheduler]\nmax_batch_size = 1\n[logging]\nlevel = \"info\"\n",
        )
        .unwrap_err();
        for expected in [
            "cuzk's memory.total_budget is not a filprove setting: use memory.budget",
            "cuzk's gpus.devices is not a filprove setting: use CUDA_VISIBLE_DEVICES",
            "cuzk's scheduler.max_batch_size is not a filprove setting: use engine.partition_workers",
            "cuzk's logging.level is not a filprove setting: use RUST_LOG",
        ] {
            assert!(e.contains(expected), "{expected:?} missing from: {e}");
        }
    }

    #[test]
    fn a_setting_given_both_ways_is_an_error() {
        let e = Config::from_toml(
            "[daemon]\nlisten = \"127.0.0.1:9820\"\n[server]\ntcp_listen = \"127.0.0.1:1\"\n",
        )
        .unwrap_err();
        assert!(e.contains("keep one"), "{e}");
        let e = Config::from_toml(
            "[synthesis]\npartition_workers = 2\n[engine]\npartition_workers = 3\n",
        )
        .unwrap_err();
        assert!(e.contains("keep engine.partition_workers"), "{e}");
        // Keys neither filprove nor cuzk knows stay unknown.
        let e =
            Config::from_toml("[daemon]\nlisten = \"127.0.0.1:9820\"\nlisten2 = 1\n").unwrap_err();
        assert!(e.contains("unknown field"), "{e}");
    }
}
