# Shared by crates/cuda/package-device.sh and scripts/package-base.sh (sourced, not run):
# mulbench's build and the stripping and xz packing of what goes to the GPU machine
# (scripts/device-unpack.sh undoes the packing there).

# build_mulbench SOURCE_TREE OUT: crates/cuda/bench/mulbench.cu of SOURCE_TREE into OUT,
# linked against the CUDA runtime beside the repo's pip-installed nvcc ($root/.cuda);
# where there is none it is left out and the rest still packaged.
build_mulbench() {
    local nvcc="$root/.cuda/nvidia/cu13/bin/nvcc"
    if [ -x "$nvcc" ] && ! "$nvcc" -O3 -std=c++17 -arch=sm_90 -I "$1/crates/cuda/kernels" \
        -L "$(dirname "$nvcc")/../lib" -o "$2" "$1/crates/cuda/bench/mulbench.cu" 2>/dev/null; then
        echo "mulbench not built (no CUDA runtime to link against)" >&2
    fi
}

# pack FILE...: strips the binaries given and compresses each to FILE.xz (missing ones are
# skipped).
pack() {
    local present=()
    local f
    for f in "$@"; do [ -f "$f" ] && present+=("$f"); done
    [ ${#present[@]} -gt 0 ] || return 0
    strip "${present[@]}" 2>/dev/null || true
    printf '%s\0' "${present[@]}" | xargs -0 -P 2 -n 1 xz -6 -f
}
