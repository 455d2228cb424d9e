// PTX carry-chain primitives. The additions and subtractions are each their own asm
// statement; callers chain them in fully unrolled loops, and the carry flag flows from one
// to the next (ptxas keeps CC.CF live between adjacent statements, as every CUDA bignum
// library relies on). mac_wide keeps its carry inside its one statement.
#pragma once
#include <stdint.h>

namespace ptx {

#ifdef __CUDACC__

__device__ __forceinline__ uint32_t add_cc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
__device__ __forceinline__ uint32_t addc_cc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
__device__ __forceinline__ uint32_t addc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("addc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
__device__ __forceinline__ uint32_t sub_cc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
__device__ __forceinline__ uint32_t subc_cc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
__device__ __forceinline__ uint32_t subc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("subc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
// acc + c 2^64 += a b: a 64-bit product added to a 64-bit accumulator, its carry counted in
// c. ptxas fuses the wide multiply and the 64-bit add into one IMAD.WIDE.U32 with a carry
// out, and the carry counts of two such steps into one IADD3.X.
__device__ __forceinline__ void mac_wide(uint64_t& acc, uint32_t& c, uint32_t a, uint32_t b) {
    asm("{\n\t.reg .u64 t;\n\tmul.wide.u32 t, %2, %3;\n\tadd.cc.u64 %0, %0, t;\n\taddc.u32 %1, %1, 0;\n\t}"
        : "+l"(acc), "+r"(c)
        : "r"(a), "r"(b));
}
// acc + c 2^64 += x + y 2^64.
__device__ __forceinline__ void add_wide(uint64_t& acc, uint32_t& c, uint64_t x, uint32_t y) {
    asm("add.cc.u64 %0, %0, %2;\n\taddc.u32 %1, %1, %3;" : "+l"(acc), "+r"(c) : "l"(x), "r"(y));
}

#else
// The host build of the field code (tests/host/field_ops.cpp, run by tests/field.rs on
// machines without a GPU): the same primitives in portable C++, the carry flag a
// thread-local (a chain is one thread's straight-line code, as on the device).
inline thread_local uint32_t carry_flag = 0;
inline uint32_t add_cc(uint32_t a, uint32_t b) {
    const uint64_t s = (uint64_t)a + b;
    carry_flag = (uint32_t)(s >> 32);
    return (uint32_t)s;
}
inline uint32_t addc_cc(uint32_t a, uint32_t b) {
    const uint64_t s = (uint64_t)a + b + carry_flag;
    carry_flag = (uint32_t)(s >> 32);
    return (uint32_t)s;
}
inline uint32_t addc(uint32_t a, uint32_t b) { return a + b + carry_flag; }
inline uint32_t sub_cc(uint32_t a, uint32_t b) {
    carry_flag = a < b;
    return a - b;
}
inline uint32_t subc_cc(uint32_t a, uint32_t b) {
    const uint64_t d = (uint64_t)a - b - carry_flag;
    carry_flag = (uint32_t)(d >> 63);
    return (uint32_t)d;
}
inline uint32_t subc(uint32_t a, uint32_t b) { return a - b - carry_flag; }
inline void mac_wide(uint64_t& acc, uint32_t& c, uint32_t a, uint32_t b) {
    const uint64_t p = (uint64_t)a * b;
    acc += p;
    c += acc < p;
}
inline void add_wide(uint64_t& acc, uint32_t& c, uint64_t x, uint32_t y) {
    acc += x;
    c += y + (acc < x);
}
#endif

}  // namespace ptx
