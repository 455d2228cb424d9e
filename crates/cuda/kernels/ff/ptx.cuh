// PTX carry-chain primitives. The additions and subtractions are each their own asm
// statement; callers chain them in fully unrolled loops, and the carry flag flows from one
// to the next (ptxas keeps CC.CF live between adjacent statements, as every CUDA bignum
// library relies on). mac_wide keeps its carry inside its one statement.
#pragma once
#include <stdint.h>

namespace ptx {

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

}  // namespace ptx
