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
             [srs]\nparam_cache = {:?}\npreload = [\"wpost-2k\"]\n",
            socket.display().to_string(),
            params.display().to_string()
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
