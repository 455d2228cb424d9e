//! Compiles every `.cu` under `kernels/` (`kernels/*.cu`, `kernels/msm/*.cu`) with nvcc into
//! one fatbin per module, named by the file's stem (SASS for each target arch plus PTX),
//! embedded by `src/kernels.rs`. Headers (`.cuh`) are included from `kernels/`. Without nvcc the crate still builds,
//! without kernels (cfg `filprove_cuda_kernels` unset), and the backend says why.
//!
//! nvcc is looked for in: $NVCC, $CUDA_PATH/bin, $CUDA_HOME/bin, <repo>/.cuda (from
//! scripts/install-cuda-toolchain.sh), then $PATH. Target archs: $FILPROVE_CUDA_ARCHS,
//! comma-separated `sm_XX` (SASS) or `compute_XX` (PTX); default sm_80,sm_89,sm_90,compute_90.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const DEFAULT_ARCHS: &str = "sm_80,sm_89,sm_90,compute_90";

fn main() {
    println!("cargo::rustc-check-cfg=cfg(filprove_cuda_kernels)");
    for var in [
        "NVCC",
        "CUDA_PATH",
        "CUDA_HOME",
        "FILPROVE_CUDA_ARCHS",
        "PATH",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let manifest =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let kernels = manifest.join("kernels");
    let mut sources = Vec::new();
    track(&kernels, &mut sources);
    sources.retain(|p| p.extension().is_some_and(|e| e == "cu"));
    sources.sort();
    let mut stems: Vec<_> = sources.iter().filter_map(|p| p.file_stem()).collect();
    stems.sort();
    if let Some(w) = stems.windows(2).find(|w| w[0] == w[1]) {
        panic!("two kernel modules named {:?} under kernels/", w[0]);
    }

    let Some(nvcc) = find_nvcc(&manifest) else {
        println!(
            "cargo:warning=filprove-cuda: nvcc not found (NVCC, CUDA_PATH, CUDA_HOME, .cuda, PATH); \
             building WITHOUT CUDA kernels. Run scripts/install-cuda-toolchain.sh to build them."
        );
        fs::write(
            out.join("kernels.rs"),
            "/// The kernel modules: none (built without nvcc).\n\
             pub const MODULES: &[(&str, &[u8])] = &[];\n",
        )
        .expect("write kernels.rs");
        println!("cargo:rustc-env=FILPROVE_CUDA_BUILD_NOTE=nvcc not found at build time");
        return;
    };
    let archs = env::var("FILPROVE_CUDA_ARCHS").unwrap_or_else(|_| DEFAULT_ARCHS.to_string());
    let gencode = gencode_flags(&archs);
    // One nvcc per module, run side by side (the big modules take minutes each).
    let handles: Vec<_> = sources
        .iter()
        .map(|src| {
            let stem = src
                .file_stem()
                .expect("file name")
                .to_string_lossy()
                .to_string();
            let dst = out.join(format!("{stem}.fatbin"));
            let mut cmd = Command::new(&nvcc);
            cmd.args(["-fatbin", "-O3", "-std=c++17", "-Xptxas", "-warn-spills"])
                .args(&gencode)
                .arg("-I")
                .arg(&kernels)
                .arg("-o")
                .arg(&dst)
                .arg(src);
            let src = src.clone();
            std::thread::spawn(move || {
                let result = cmd.output();
                (stem, dst, src, result)
            })
        })
        .collect();
    let mut entries = Vec::new();
    for h in handles {
        let (stem, dst, src, result) = h.join().expect("nvcc thread");
        let output = result.unwrap_or_else(|e| panic!("cannot run {}: {e}", nvcc.display()));
        if !output.status.success() {
            panic!(
                "nvcc failed on {}:\n{}{}",
                src.display(),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        entries.push(format!(
            "    ({stem:?}, include_bytes!({:?})),\n",
            dst.display().to_string()
        ));
    }
    let code = format!(
        "/// The kernel modules: (source file stem, fatbin) for each `kernels/**/*.cu`.\n\
         pub const MODULES: &[(&str, &[u8])] = &[\n{}];\n",
        entries.concat()
    );
    fs::write(out.join("kernels.rs"), code).expect("write kernels.rs");
    println!("cargo:rustc-cfg=filprove_cuda_kernels");
    println!(
        "cargo:rustc-env=FILPROVE_CUDA_BUILD_NOTE=kernels built by {} for {archs}",
        nvcc.display()
    );
}

/// Lists the kernel sources and asks cargo to rebuild when any of them changes.
fn track(dir: &Path, files: &mut Vec<PathBuf>) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let Ok(rd) = fs::read_dir(dir) else { return };
    for entry in rd.flatten() {
        let p = entry.path();
        if p.is_dir() {
            track(&p, files);
        } else {
            println!("cargo:rerun-if-changed={}", p.display());
            files.push(p);
        }
    }
}

fn gencode_flags(archs: &str) -> Vec<String> {
    let mut flags = Vec::new();
    for a in archs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        if let Some(num) = a.strip_prefix("sm_") {
            flags.push(format!("-gencode=arch=compute_{num},code=sm_{num}"));
        } else if let Some(num) = a.strip_prefix("compute_") {
            flags.push(format!("-gencode=arch=compute_{num},code=compute_{num}"));
        } else {
            panic!("FILPROVE_CUDA_ARCHS: {a:?} is neither sm_XX nor compute_XX");
        }
    }
    flags
}

fn find_nvcc(manifest: &Path) -> Option<PathBuf> {
    let exe = |p: PathBuf| p.is_file().then_some(p);
    if let Some(p) = env::var_os("NVCC").map(PathBuf::from).and_then(exe) {
        return Some(p);
    }
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(p) = env::var_os(var).and_then(|d| exe(PathBuf::from(d).join("bin/nvcc"))) {
            return Some(p);
        }
    }
    for root in manifest.ancestors() {
        if let Some(p) = exe(root.join(".cuda/nvidia/cu13/bin/nvcc")) {
            return Some(p);
        }
    }
    env::var_os("PATH").and_then(|path| env::split_paths(&path).find_map(|d| exe(d.join("nvcc"))))
}
