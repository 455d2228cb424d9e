// The field operations the self-tests compare with blstrs, by number: the device kernels
// of selftest.cu and the host build of the same code (tests/host/field_ops.cpp) apply them.
#pragma once
#include <type_traits>

#include "ff/bls12_381.cuh"
#include "ff/inverse.cuh"

// op(a, b) on Montgomery values of Fr, Fq or Fq2. op: 0 mul, 1 add, 2 sub, 3 neg(a),
// 6 sqr(a); on the prime fields also 4 from_mont(a), 5 to_mont(a), 7 a^-1 (0 for 0) and,
// on values below 2p (the NTT's), 8 mul_below_2p (a below p), 9 add_below_2p,
// 10 sub_below_2p. Other numbers: a^-1 on a prime field, sqr(a) on Fq2.
template <class F>
__device__ __forceinline__ F field_op(const F& a, const F& b, uint32_t op) {
    switch (op) {
        case 0: return a * b;
        case 1: return a + b;
        case 2: return a - b;
        case 3: return a.neg();
        case 6: return a.sqr();
    }
    if constexpr (std::is_same_v<F, Fq2>) {
        return a.sqr();
    } else {
        switch (op) {
            case 4: return a.from_mont();
            case 5: return a.to_mont();
            case 8: return F::mul_below_2p(a, b);
            case 9: return F::add_below_2p(a, b);
            case 10: return F::sub_below_2p(a, b);
            default: return field_inverse(a);
        }
    }
}
