//! The `filprove` binary's one-shot commands, run as a user would: real fixtures, real
//! parameters, filecoin-proofs' verifier; bad inputs give a readable error, exit 1, never a
//! panic, and leave no output file behind.

use std::path::Path;
use std::process::{Command, Output};

fn filprove(args: &[&str], params: &Path) -> Output {
    filprove_in(Path::new("."), args, params)
}

/// `filprove` run in the working directory `cwd`.
fn filprove_in(cwd: &Path, args: &[&str], params: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_filprove"))
        .current_dir(cwd)
        .args(args)
        .env("FIL_PROOFS_PARAMETER_CACHE", params)
        .env("FILPROVE_BACKEND", "cpu")
        .env_remove("FIL_PROOFS_VERIFY_PRODUCTION_PARAMS")
        .output()
        .expect("run filprove")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A failure the way users should see it: exit code 1, an `error:` line, no panic.
fn assert_clean_failure(o: &Output, needle: &str) {
    let t = text(o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("error:"), "{t}");
    assert!(t.contains(needle), "expected {needle:?} in: {t}");
    assert!(!t.contains("panicked"), "{t}");
}

#[test]
fn fixtures_params_prove_verify_and_bad_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    let (fx, params) = (tmp.path().join("fx"), tmp.path().join("params"));
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let request = s(&fx.join("winning-post.request.json"));
    let proof = tmp.path().join("winning.proof");

    let o = filprove(
        &[
            "fixtures",
            "--out",
            &s(&fx),
            "--kinds",
            "winning-post,porep",
        ],
        &params,
    );
    assert!(o.status.success(), "{}", text(&o));

    // Missing parameters: the error names the command that makes them; no proof file.
    let o = filprove(
        &["prove", "--request", &request, "--out", &s(&proof)],
        &params,
    );
    assert_clean_failure(&o, "filprove params generate --circuit winning-2k");
    assert!(!proof.exists());

    let o = filprove(
        &[
            "params",
            "generate",
            "--circuit",
            "winning-2k",
            "--params-dir",
            &s(&params),
        ],
        &params,
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = filprove(&["params", "list"], &params);
    let listed = text(&o);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("winning-2k") && l.contains("present")),
        "{listed}"
    );
    // Locally generated files carry the production names, so the network manifest's digest
    // check must reject them.
    let o = filprove(&["params", "check", "--circuit", "winning-2k"], &params);
    assert_clean_failure(&o, "does not match");

    let o = filprove(
        &["prove", "--request", &request, "--out", &s(&proof)],
        &params,
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read(&proof).unwrap().len(), 192);
    let o = filprove(
        &["verify", "--request", &request, "--proof", &s(&proof)],
        &params,
    );
    assert!(
        o.status.success() && text(&o).contains("valid winning-post proof"),
        "{}",
        text(&o)
    );

    // A flipped bit is caught by filecoin-proofs' verifier (or by point decoding).
    let mut bytes = std::fs::read(&proof).unwrap();
    bytes[150] ^= 1;
    let bad = tmp.path().join("bad.proof");
    std::fs::write(&bad, &bytes).unwrap();
    let o = filprove(
        &["verify", "--request", &request, "--proof", &s(&bad)],
        &params,
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(!text(&o).contains("panicked"));

    // Synthesis alone needs no parameters; the parallel synthesis of PoRep's challenges
    // equals ordered synthesis (the second run has every challenge in parallel), and
    // satisfies the circuit's R1CS.
    let porep = s(&fx.join("porep.request.json"));
    let o = filprove(
        &["synthesize", "--request", &porep, "--runs", "2", "--check"],
        &params,
    );
    assert!(
        o.status.success()
            && text(&o).contains("equal to ordered synthesis")
            && text(&o).contains("every constraint is satisfied"),
        "{}",
        text(&o)
    );
    // On a virtual 2 KiB sector: WindowPoSt's paths, then SnapDeals' (its challenges in
    // parallel against the upstream circuit in order).
    let vfx = tmp.path().join("virtual");
    let o = filprove(
        &[
            "fixtures",
            "--virtual",
            "--out",
            &s(&vfx),
            "--kinds",
            "snap,window-post",
        ],
        &params,
    );
    assert!(o.status.success(), "{}", text(&o));
    // WindowPoSt: its sectors in parallel through the circuit twin (the second run refills
    // the first run's vectors), storage-proofs' chunks and the upstream circuit in order,
    // all equal.
    let wpost = s(&vfx.join("window-post.request.json"));
    let o = filprove(
        &["synthesize", "--request", &wpost, "--runs", "2", "--check"],
        &params,
    );
    let out = text(&o);
    assert!(
        o.status.success()
            && out.contains("twin, sectors in parallel")
            && out.contains("equal to ordered synthesis"),
        "{out}"
    );
    // Every run on new vectors: the same report.
    let o = filprove(
        &[
            "synthesize",
            "--request",
            &wpost,
            "--runs",
            "2",
            "--fresh-buffers",
        ],
        &params,
    );
    let out = text(&o);
    assert!(o.status.success() && out.contains("run 2: "), "{out}");
    let snap = s(&vfx.join("snap.request.json"));
    let o = filprove(&["synthesize", "--request", &snap, "--check"], &params);
    let out = text(&o);
    assert!(
        o.status.success()
            && out.contains("twin, challenges in parallel")
            && out.contains("gadgets, challenges in parallel")
            && out.contains("equal to ordered synthesis")
            && out.contains("every constraint is satisfied"),
        "{out}"
    );
    let o = filprove(
        &["synthesize", "--request", &request, "--partition", "3"],
        &params,
    );
    assert_clean_failure(&o, "out of range");

    // A truncated C1 output: a parse error naming the file, and no output written.
    let c1 = std::fs::read(fx.join("porep-c1.json")).unwrap();
    let truncated = tmp.path().join("truncated-c1.json");
    std::fs::write(&truncated, &c1[..c1.len() / 2]).unwrap();
    let out = tmp.path().join("never.proof");
    let o = filprove(
        &["prove", "--c1", &s(&truncated), "--out", &s(&out)],
        &params,
    );
    assert_clean_failure(&o, "truncated-c1.json");
    assert!(!out.exists());

    // A file that does not exist, and an unknown circuit name.
    let o = filprove(
        &[
            "prove",
            "--request",
            "/nonexistent/r.json",
            "--out",
            &s(&out),
        ],
        &params,
    );
    assert_clean_failure(&o, "/nonexistent/r.json");
    let o = filprove(&["params", "generate", "--circuit", "porep-3k"], &params);
    assert_clean_failure(&o, "unknown circuit");
}

/// Test parameters go to a directory of their own by default, not to the parameter cache
/// FIL_PROOFS_PARAMETER_CACHE names; the production cache is refused as a target.
#[test]
fn generated_parameters_never_land_in_the_parameter_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("production-cache");
    std::fs::create_dir(&cache).unwrap();
    let o = filprove_in(
        tmp.path(),
        &["params", "generate", "--circuit", "winning-2k"],
        &cache,
    );
    assert!(o.status.success(), "{}", text(&o));
    // stderr is a pipe here, as in a log: stage lines, no progress bar drawing.
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(
        log.lines().any(
            |l| l.starts_with("[filprove] generating parameters for winning-2k")
                && l.ends_with(" ...")
        ),
        "{log}"
    );
    assert!(!log.contains('\r') && !log.contains('\u{1b}'), "{log:?}");
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 0);
    let own = tmp.path().join(filprove::cli::test_params::TEST_PARAMS_DIR);
    let written: Vec<String> = std::fs::read_dir(&own)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        written.iter().any(|f| f.ends_with(".params")),
        "{written:?}"
    );
    assert!(written.iter().any(|f| f.ends_with(".vk")), "{written:?}");

    let production = filprove_filecoin::params::DEFAULT_PARAMETER_CACHE;
    let o = filprove_in(
        tmp.path(),
        &[
            "params",
            "generate",
            "--circuit",
            "winning-2k",
            "--params-dir",
            production,
        ],
        &cache,
    );
    assert_clean_failure(&o, "production parameter cache");
}

/// A virtual sector's WinningPoSt and WindowPoSt proved through the engine in-process with
/// parameters generated in memory: the report counts two verified proofs, only the keys
/// reach the disk, and the default parameter directory is refused.
#[test]
fn virtual_fixtures_and_prove_bench() {
    let tmp = tempfile::tempdir().unwrap();
    let (fx, params) = (tmp.path().join("fx"), tmp.path().join("params"));
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let o = filprove(
        &[
            "fixtures",
            "--virtual",
            "--out",
            &s(&fx),
            "--kinds",
            "winning-post,window-post",
        ],
        &params,
    );
    assert!(o.status.success(), "{}", text(&o));
    let report = tmp.path().join("report.json");
    let bench = |dir: &str| {
        filprove(
            &[
                "prove-bench",
                "--request",
                &s(&fx.join("winning-post.request.json")),
                "--request",
                &s(&fx.join("window-post.request.json")),
                "--params-dir",
                dir,
                "--generate-params",
                "--backend",
                "cpu",
                "--report",
                &s(&report),
            ],
            &params,
        )
    };
    // Keys go to a directory of their own, not the process's parameter cache.
    let keys = tmp.path().join("keys");
    let o = bench(&s(&keys));
    assert!(o.status.success(), "{}", text(&o));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(r["proofs"].as_array().unwrap().len(), 2, "{r}");
    assert!(r["failures"].as_array().unwrap().is_empty(), "{r}");
    let files: Vec<String> = std::fs::read_dir(&keys)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(files.iter().any(|f| f.ends_with(".vk")), "{files:?}");
    assert!(!files.iter().any(|f| f.ends_with(".params")), "{files:?}");

    for refused in [
        filprove_filecoin::params::DEFAULT_PARAMETER_CACHE,
        &s(&params),
    ] {
        let o = bench(refused);
        assert_clean_failure(&o, "other than the default parameter cache");
    }
}

/// 32 and 64 GiB test parameters go only to a `--params-dir` that is not the parameter
/// cache; nothing is generated when refused.
#[test]
fn large_parameters_need_a_directory_of_their_own() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let o = filprove(&["params", "generate", "--circuit", "porep-32g"], &cache);
    assert_clean_failure(&o, "no --params-dir given");
    let o = filprove(
        &[
            "params",
            "generate",
            "--circuit",
            "winning-2k,wpost-64g",
            "--params-dir",
            &s(&cache),
        ],
        &cache,
    );
    assert_clean_failure(&o, "is the default parameter cache");
    // The same directory through another spelling.
    std::fs::create_dir_all(&cache).unwrap();
    let o = filprove(
        &[
            "params",
            "generate",
            "--circuit",
            "wpost-32g",
            "--params-dir",
            &format!("{}/../cache", s(&cache)),
        ],
        &cache,
    );
    assert_clean_failure(&o, "is the default parameter cache");
    let o = filprove(
        &[
            "params",
            "generate",
            "--circuit",
            "porep-32g",
            "--params-dir",
            "/var/tmp/filecoin-proof-parameters",
        ],
        &cache,
    );
    assert_clean_failure(&o, "is the default parameter cache");
    // Refused before anything was written (winning-2k came first in the list).
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 0);
    // The old switch is gone.
    let o = filprove(
        &[
            "params",
            "generate",
            "--circuit",
            "porep-32g",
            "--allow-large",
        ],
        &cache,
    );
    assert!(!o.status.success());
    assert!(text(&o).contains("--allow-large"), "{}", text(&o));
    // Bellperson's generator runs on the CPU only.
    let o = filprove(
        &[
            "params",
            "generate",
            "--circuit",
            "winning-2k",
            "--bellperson",
            "--backend",
            "cuda",
            "--params-dir",
            &s(&tmp.path().join("other")),
        ],
        &cache,
    );
    assert_clean_failure(&o, "--bellperson");
}

/// The help texts are current: the binary describes itself (not a stale package line),
/// and every command `filprove --help` lists is shown in the README's command lines.
#[test]
fn every_command_in_the_help_is_in_the_readme() {
    let o = filprove(&["--help"], Path::new("/nonexistent"));
    let help = text(&o);
    assert!(o.status.success(), "{help}");
    assert!(
        help.starts_with("A GPU-resident Groth16 prover for Filecoin"),
        "{help}"
    );
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let shown: Vec<&str> = readme
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("filprove "))
        .collect();
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() > 10, "{help}");
    for command in commands {
        let listed = shown.iter().any(|l| {
            l.split(|c: char| c.is_whitespace() || c == '|')
                .any(|word| word == command)
        });
        assert!(listed, "README shows no `filprove {command}` line");
    }
}
