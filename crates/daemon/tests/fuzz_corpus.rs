//! Replays the committed fuzz seeds (`fuzz/corpus/<target>/`) through the fuzz targets'
//! bodies (`fuzz/targets/`) on the stable toolchain, so CI runs every target without
//! cargo-fuzz or nightly flags. A panic (a broken invariant) fails the test and names the
//! file; seeds named `valid*` must also be accepted, so they keep reaching past the
//! parsers as the formats change.

use std::path::{Path, PathBuf};

#[path = "../../../fuzz/targets/mod.rs"]
mod targets;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The seed files of `target`, sorted.
fn seeds(target: &str) -> Vec<PathBuf> {
    let dir = fuzz_dir().join("corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

fn replay(target: &str) {
    let (_, run) = targets::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .unwrap_or_else(|| panic!("no target {target}"));
    let files = seeds(target);
    assert!(!files.is_empty(), "fuzz/corpus/{target} has no seeds");
    for file in files {
        let data = std::fs::read(&file).expect("seed readable");
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let accepted = std::panic::catch_unwind(|| run(&data))
            .unwrap_or_else(|_| panic!("{target} panicked on {}", file.display()));
        if name.starts_with("valid") {
            assert!(accepted, "{target} refused {}", file.display());
        }
    }
}

macro_rules! replay_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                replay(stringify!($name));
            }
        )*

        /// Every fuzz binary has a replay test here, and every table entry a binary.
        #[test]
        fn every_fuzz_target_is_replayed() {
            let replayed = [$(stringify!($name)),*];
            let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
            let mut bins: Vec<&str> = manifest
                .split("[[bin]]")
                .skip(1)
                .filter_map(|b| b.split("name = \"").nth(1)?.split('"').next())
                .collect();
            bins.sort();
            let mut table: Vec<&str> = targets::TARGETS.iter().map(|(n, _)| *n).collect();
            table.sort();
            let mut tests = replayed.to_vec();
            tests.sort();
            assert_eq!(bins, table, "fuzz/Cargo.toml binaries vs fuzz/targets/mod.rs");
            assert_eq!(tests, table, "replay tests vs fuzz/targets/mod.rs");
        }
    };
}

replay_tests!(
    c1_json,
    c1_wrapper,
    engine_rpc,
    params_file,
    post_vanilla,
    request_json,
    snap_vanilla,
    submit_request,
    vanilla_framing,
    vk_file,
);
