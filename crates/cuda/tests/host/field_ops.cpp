// The device field code (kernels/ff) built for the host, so that its arithmetic is checked
// against blstrs on machines without a GPU (tests/field.rs builds and runs it).
//
//   field_ops FIELD OP N    FIELD: fr, fq or fq2; OP: ff/ops.cuh's operation number
//
// Reads N x then N y elements (Montgomery form, little-endian 32-bit words) on stdin and
// writes the N results op(x[i], y[i]) on stdout.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// CUDA's qualifiers and the intrinsics the field code uses, for a host compiler.
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
static inline uint32_t __funnelshift_r(uint32_t lo, uint32_t hi, uint32_t s) {
    return (uint32_t)((((uint64_t)hi << 32) | lo) >> (s & 31));
}
static inline uint32_t __funnelshift_l(uint32_t lo, uint32_t hi, uint32_t s) {
    return (uint32_t)(((((uint64_t)hi << 32) | lo) << (s & 31)) >> 32);
}
static inline int __ffs(uint32_t x) { return __builtin_ffs((int)x); }

#include "ff/ops.cuh"

template <class T, class Op>
static int run(size_t n, Op op) {
    std::vector<T> x(n), y(n), out(n);
    if (fread(x.data(), sizeof(T), n, stdin) != n || fread(y.data(), sizeof(T), n, stdin) != n) {
        fprintf(stderr, "field_ops: expected %zu x and %zu y elements on stdin\n", n, n);
        return 2;
    }
    for (size_t i = 0; i < n; i++) out[i] = op(x[i], y[i]);
    return fwrite(out.data(), sizeof(T), n, stdout) == n ? 0 : 2;
}

int main(int argc, char** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: field_ops fr|fq|fq2 OP N\n");
        return 2;
    }
    const uint32_t op = (uint32_t)strtoul(argv[2], nullptr, 10);
    const size_t n = strtoull(argv[3], nullptr, 10);
    if (!strcmp(argv[1], "fr")) return run<Fr>(n, [&](const Fr& a, const Fr& b) { return field_op(a, b, op); });
    if (!strcmp(argv[1], "fq")) return run<Fq>(n, [&](const Fq& a, const Fq& b) { return field_op(a, b, op); });
    if (!strcmp(argv[1], "fq2")) return run<Fq2>(n, [&](const Fq2& a, const Fq2& b) { return field_op(a, b, op); });
    fprintf(stderr, "field_ops: unknown field %s\n", argv[1]);
    return 2;
}
