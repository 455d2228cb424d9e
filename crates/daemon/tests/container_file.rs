//! deploy/Containerfile against the repository it builds: no container engine runs here,
//! so what can go stale is checked by reading it. The paths it copies exist and are not
//! left out of the build context, it builds and starts the binary this crate makes, the
//! configuration it installs is valid and agrees with its volumes, environment and health
//! check (`filprove health` on that configuration), and the command it runs is one the
//! binary accepts.

use std::path::{Path, PathBuf};
use std::process::Command;

use filprove::server::Config;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Containerfile's instructions, continuation lines joined, comments dropped:
/// (keyword, arguments).
fn instructions() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo().join("deploy/Containerfile")).unwrap();
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || (line.is_empty() && current.is_empty()) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(part) => {
                current.push_str(part);
                current.push(' ');
            }
            None => {
                current.push_str(line);
                let (keyword, args) = current.trim().split_once(' ').unwrap();
                out.push((keyword.to_string(), args.trim().to_string()));
                current.clear();
            }
        }
    }
    out
}

fn all<'a>(ins: &'a [(String, String)], keyword: &str) -> Vec<&'a str> {
    ins.iter()
        .filter(|(k, _)| k == keyword)
        .map(|(_, a)| a.as_str())
        .collect()
}

fn one<'a>(ins: &'a [(String, String)], keyword: &str) -> &'a str {
    let v = all(ins, keyword);
    assert_eq!(v.len(), 1, "one {keyword}: {v:?}");
    v[0]
}

/// A JSON-array (exec form) argument list.
fn exec_form(args: &str) -> Vec<String> {
    serde_json::from_str(args).unwrap_or_else(|e| panic!("{args}: {e}"))
}

/// `KEY=value` pairs of ENV instructions.
fn env_value(ins: &[(String, String)], key: &str) -> Option<String> {
    all(ins, "ENV")
        .iter()
        .flat_map(|a| a.split_whitespace())
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")).map(str::to_string))
}

#[test]
fn the_containerfile_matches_the_repository() {
    let ins = instructions();
    let manifest: toml::Table =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .unwrap()
            .parse()
            .unwrap();
    let package = manifest["package"]["name"].as_str().unwrap();
    let bins = manifest["bin"].as_array().unwrap();
    let bin = bins[0]["name"].as_str().unwrap();
    assert_eq!(
        bin,
        env!("CARGO_BIN_EXE_filprove").rsplit('/').next().unwrap()
    );

    // Two stages: a CUDA devel image builds, a CUDA runtime image runs.
    let from = all(&ins, "FROM");
    assert_eq!(from.len(), 2, "{from:?}");
    assert!(from[0].contains("-devel-") && from[0].ends_with(" AS build"));
    assert!(from[1].contains("-runtime-"));

    // Every path copied from the build context exists, and the context keeps it.
    let ignored: Vec<String> = std::fs::read_to_string(repo().join(".dockerignore"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.trim().to_string())
        .collect();
    let mut installed_config = None;
    for copy in all(&ins, "COPY") {
        if copy.starts_with("--from=") {
            continue;
        }
        let parts: Vec<&str> = copy.split_whitespace().collect();
        let (dest, sources) = parts.split_last().unwrap();
        for s in sources {
            assert!(
                repo().join(s).exists(),
                "COPY {s}: no such path in the repository"
            );
            let first = s.split('/').next().unwrap();
            assert!(
                !ignored.iter().any(|i| i == first),
                "{s} is in .dockerignore"
            );
            if *s == "deploy/filprove.toml" {
                installed_config = Some(dest.to_string());
            }
        }
    }
    let installed_config = installed_config.expect("the image installs deploy/filprove.toml");

    // The build makes this crate's binary and installs it where ENTRYPOINT runs it.
    let build = all(&ins, "RUN")
        .into_iter()
        .find(|r| r.contains("cargo build"))
        .expect("a cargo build step");
    assert!(
        build.contains(&format!("-p {package} --bin {bin}")),
        "{build}"
    );
    assert!(build.contains("--release --locked"), "{build}");
    let installed_bin = format!("/usr/local/bin/{bin}");
    assert!(
        build.contains(&format!("target/release/{bin} {installed_bin}")),
        "{build}"
    );
    assert!(all(&ins, "COPY")
        .contains(&format!("--from=build {installed_bin} {installed_bin}").as_str()));
    assert_eq!(
        exec_form(one(&ins, "ENTRYPOINT")),
        std::slice::from_ref(&installed_bin)
    );
    assert!(one(&ins, "USER").starts_with("filprove"), "not root");

    // The command is one the binary accepts, with the installed configuration.
    let mut cmd = exec_form(one(&ins, "CMD"));
    let at = cmd.iter().position(|a| *a == installed_config).unwrap();
    let repo_config = repo().join("deploy/filprove.toml");
    cmd[at] = repo_config.display().to_string();
    let o = Command::new(env!("CARGO_BIN_EXE_filprove"))
        .args(&cmd)
        .arg("--check-config")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );

    // The configuration agrees with the volumes, the environment and the health check.
    let config = Config::read(&repo_config).unwrap();
    let volumes: Vec<String> = exec_form(one(&ins, "VOLUME"));
    let socket = config.unix_socket().unwrap().expect("a unix socket");
    let socket_dir = socket.parent().unwrap().display().to_string();
    assert!(volumes.contains(&socket_dir), "{socket_dir} in {volumes:?}");
    assert!(volumes.contains(&config.srs.param_cache), "{volumes:?}");
    assert_eq!(
        env_value(&ins, "FIL_PROOFS_PARAMETER_CACHE").as_deref(),
        Some(config.srs.param_cache.as_str())
    );
    // The health check is this binary's probe of the installed configuration, which
    // parses it and dials its HTTP admin (nothing answers there in this test).
    let http = config.http_addr().unwrap().expect("the HTTP admin");
    let health = one(&ins, "HEALTHCHECK");
    let (_, probe) = health.split_once("CMD ").expect("HEALTHCHECK ... CMD");
    let mut probe = exec_form(probe);
    assert_eq!(
        probe[..3],
        [installed_bin.as_str(), "health", "--config"],
        "{health}"
    );
    assert_eq!(probe[3], installed_config);
    probe[3] = repo_config.display().to_string();
    let o = Command::new(env!("CARGO_BIN_EXE_filprove"))
        .args(&probe[1..])
        .args(["--timeout-secs", "2"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() || stderr.contains(&format!("http://{http}/readyz")),
        "{probe:?}: {stderr}"
    );
    let dirs = all(&ins, "RUN")
        .into_iter()
        .find(|r| r.contains("useradd"))
        .expect("a user");
    for v in &volumes {
        let made = dirs.split("&&").map(str::trim).any(|step| {
            step.starts_with("install -d -o filprove -g filprove") && step.ends_with(v.as_str())
        });
        assert!(made, "{v} is made for the user: {dirs}");
    }
}
