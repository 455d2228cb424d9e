# Shared by crates/cuda/package-device.sh and scripts/package-base.sh (sourced, not run):
# mulbench's build and the stripping and xz packing of what goes to the GPU machine
# (scripts/device-unpack.sh undoes the packing there). The device scripts (h200-ab.sh,
# h200-daemon-ab.sh, h200-fullscale.sh) source it for archive_logs and the variants.

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

# archive_logs DIR ARCHIVE KEEP PATTERN...: moves DIR's files that match the patterns,
# all but KEEP, into DIR/ARCHIVE (tar, xz): the device tool returns at most 8 files.
archive_logs() {
    local dir=$1 archive=$2 keep=$3
    shift 3
    (
        cd "$dir" || exit
        shopt -s nullglob
        local files=() f p
        for p in "$@"; do
            # shellcheck disable=SC2066,SC2231 # the pattern is meant to expand here
            for f in $p; do [ "$f" = "$keep" ] || files+=("$f"); done
        done
        [ ${#files[@]} -eq 0 ] || { tar -cJf "$archive" "${files[@]}" && rm -f "${files[@]}"; }
    )
}

# An A/B variant `name[@DIR][:settings]`: its name, and its build's directory (default
# .device).
variant_name() { local h="${1%%:*}"; echo "${h%%@*}"; }
variant_dir() { local h="${1%%:*}"; [ "$h" = "${h%%@*}" ] && echo .device || echo "${h#*@}"; }
