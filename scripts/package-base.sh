#!/usr/bin/env bash
# Builds a baseline for an A/B on the GPU machine: gpu_bench, filprove and mulbench at git
# revision REV (default HEAD, i.e. without the uncommitted changes), stripped and packed
# with xz into <repo>/.device/NAME/ (default base; run it once per build to compare).
# Then crates/cuda/package-device.sh packs the working tree beside them (keeping
# .device/NAME), and on the GPU machine
#
#   bash scripts/h200-ab.sh OUTDIR STEPS base@.device/base new@.device
#
# times both builds in one call (REGION=1 adds the GPU region of a 32 GiB partition).
#
#   bash scripts/package-base.sh [REV [NAME]]
#
# The revision is built from a temporary worktree with the repo's target directory, so the
# dependencies are not rebuilt; run it before package-device.sh (both write
# target/release).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rev="$(git -C "$root" rev-parse --verify "${1:-HEAD}^{commit}")"
name="${2:-base}"
case "$name" in tests | */* | .*) echo "NAME must be a plain directory name other than tests" >&2; exit 2 ;; esac
cd "$root"
# shellcheck source=device-pack.sh
. scripts/device-pack.sh
grep -qx '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >> .git/info/exclude
tree="$(mktemp -d)/filprove-base"
git worktree add --detach "$tree" "$rev" > /dev/null
trap 'git -C "$root" worktree remove --force "$tree"' EXIT
# The worktree finds the CUDA toolchain of this checkout (build.rs looks in <repo>/.cuda).
[ -d "$root/.cuda" ] && ln -s "$root/.cuda" "$tree/.cuda"
(
    cd "$tree"
    export CARGO_TARGET_DIR="$root/target"
    cargo build -p filprove-bench --release --bin gpu_bench
    cargo build -p filprove --release --bin filprove
)
dest=".device/$name"
rm -rf "$dest" && mkdir -p "$dest"
cp target/release/gpu_bench target/release/filprove "$dest/"
build_mulbench "$tree" "$dest/mulbench"
pack "$dest"/*
echo "$rev" > "$dest/REVISION"
ls -la "$dest"
