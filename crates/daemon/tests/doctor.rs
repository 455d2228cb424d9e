//! `filprove doctor` run as an operator would, on a configuration with problems: each is
//! reported under its section, and the exit code says the daemon would fail.

use std::path::Path;
use std::process::{Command, Output};

use filprove_filecoin::CircuitSpec;

fn doctor(config: &Path) -> (Output, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_filprove"))
        .args(["doctor", "--config"])
        .arg(config)
        .env_remove("FIL_PROOFS_PARAMETER_CACHE")
        .env("BELLMAN_NO_GPU", "1")
        .output()
        .expect("run filprove");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o, text)
}

#[test]
fn doctor_reports_each_problem_in_its_section() {
    let tmp = tempfile::tempdir().unwrap();
    let params = tmp.path().join("params");
    std::fs::create_dir(&params).unwrap();
    // A file under a network name whose bytes are not the network's.
    let winning = CircuitSpec::from_short_name("winning-2k").unwrap();
    std::fs::write(winning.vk_path(&params), b"not a verifying key").unwrap();
    let socket = tmp.path().join("run/filprove.sock");
    std::fs::create_dir(socket.parent().unwrap()).unwrap();
    // A socket left by a daemon that died.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let config = tmp.path().join("filprove.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nunix_socket = {:?}\nhttp_listen = \"\"\n[engine]\nbackend = \"auto\"\n\
             [srs]\nparam_cache = {:?}\npreload = [\"wpost-2k\"]\n[journal]\ndir = {:?}\n",
            socket.display().to_string(),
            params.display().to_string(),
            tmp.path().join("journal").display().to_string()
        ),
    )
    .unwrap();

    let (o, text) = doctor(&config);
    assert_eq!(o.status.code(), Some(1), "{text}");
    let section = |title: &str| -> String {
        let found: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with(title))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .collect();
        assert!(!found.is_empty(), "no section {title:?} in: {text}");
        found.join("\n")
    };
    let gpus = section("gpus");
    assert!(gpus.contains("NVML") || gpus.contains("driver"), "{gpus}");
    let memory = section("memory");
    assert!(memory.contains("cgroup limit"), "{memory}");
    assert!(memory.contains("budgets"), "{memory}");
    let params_found = section("parameters");
    assert!(
        params_found.contains("FAIL  winning-2k") && params_found.contains("does not match"),
        "{params_found}"
    );
    assert!(
        params_found.contains("FAIL  srs.preload wpost-2k: missing"),
        "{params_found}"
    );
    let listeners = section("listeners");
    assert!(listeners.contains("mode 0600"), "{listeners}");
    assert!(listeners.contains("stale socket"), "{listeners}");
    let plan = section("the daemon with this configuration");
    assert!(plan.contains("/readyz would fail"), "{plan}");
    assert!(text.contains("error: 2 failure(s)"), "{text}");
}

#[test]
fn doctor_names_filprove_s_equivalent_of_a_cuzk_key() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("cuzk.toml");
    std::fs::write(
        &config,
        "[daemon]\nlisten = \"127.0.0.1:0\"\n[logging]\nlevel = \"info\"\n",
    )
    .unwrap();
    let (o, text) = doctor(&config);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains("FAIL  ") && text.contains("use RUST_LOG"),
        "{text}"
    );
    assert!(text.contains("the daemon would not start"), "{text}");
}

/// The lines of section `title` of a doctor report.
fn section_of(text: &str, title: &str) -> String {
    text.lines()
        .skip_while(|l| *l != title)
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect::<Vec<_>>()
        .join("\n")
}

fn journal_config(dir: &Path, journal: &str) -> std::path::PathBuf {
    let config = dir.join("filprove.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nunix_socket = {:?}\nhttp_listen = \"\"\n[engine]\nbackend = \"cpu\"\n\
             [srs]\nparam_cache = {:?}\n[journal]\n{journal}\n",
            dir.join("run/filprove.sock").display().to_string(),
            dir.display().to_string()
        ),
    )
    .unwrap();
    config
}

#[test]
fn doctor_checks_the_journal_directory_and_its_room() {
    let tmp = tempfile::tempdir().unwrap();

    // A directory with an entry, on a file system with room for the bound.
    let dir = tmp.path().join("journal");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("a.job"), [0u8; 100]).unwrap();
    let config = journal_config(
        tmp.path(),
        &format!(
            "dir = {:?}\nmax_bytes = \"300MiB\"",
            dir.display().to_string()
        ),
    );
    let (o, text) = doctor(&config);
    let journal = section_of(&text, "journal");
    assert!(
        journal.contains(&format!("ok    journal.dir {} (owner", dir.display())),
        "{journal}"
    );
    assert!(
        journal.contains("1 accepted job(s) journaled (100 bytes)"),
        "{journal}"
    );
    assert!(
        journal.contains("free on its file system, journal.max_bytes 0.3 GiB"),
        "{journal}"
    );
    assert!(
        !journal.contains("FAIL") && !journal.contains("WARN"),
        "{journal}"
    );
    assert!(
        std::fs::read_dir(&dir).unwrap().count() == 1,
        "the write probe is removed"
    );
    assert!(!text.contains("failure(s)"), "{text}");
    assert!(o.status.success(), "{text}");

    // A missing directory the daemon creates; more bytes allowed than the disk has.
    let missing = tmp.path().join("new/journal");
    let config = journal_config(
        tmp.path(),
        &format!(
            "dir = {:?}\nmax_bytes = \"100000TiB\"",
            missing.display().to_string()
        ),
    );
    let (_, text) = doctor(&config);
    let journal = section_of(&text, "journal");
    assert!(
        journal.contains(&format!(
            "does not exist; the daemon creates it in {}",
            tmp.path().display()
        )),
        "{journal}"
    );
    assert!(
        journal.contains("WARN") && journal.contains("less than the"),
        "{journal}"
    );
    assert!(
        !missing.parent().unwrap().exists(),
        "the doctor creates nothing"
    );

    // Under a regular file: it can never be made.
    let file = tmp.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let config = journal_config(
        tmp.path(),
        &format!("dir = {:?}", file.join("journal").display().to_string()),
    );
    let (o, text) = doctor(&config);
    let journal = section_of(&text, "journal");
    assert!(
        journal.contains(&format!(
            "FAIL  journal.dir {}/journal: {} is not a directory",
            file.display(),
            file.display()
        )),
        "{journal}"
    );
    assert_eq!(o.status.code(), Some(1), "{text}");

    // Turned off: said, not failed.
    let config = journal_config(tmp.path(), "enabled = false");
    let journal = section_of(&doctor(&config).1, "journal");
    assert!(
        journal.contains("WARN  journal.enabled = false"),
        "{journal}"
    );
}
