// Host driver for ff/fp64_product.cuh: the device intrinsics it uses, emulated exactly
// (fma with round-toward-zero through the floating-point environment), then one product
// per input line. Reads "fr|fq" and lines of 2N hex words (a then b, Montgomery form,
// little-endian limbs); prints the N words of a b / R mod p, fully reduced.
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#define __device__
#define __host__
#define __forceinline__ inline
static inline double __longlong_as_double(long long x) { double d; memcpy(&d, &x, 8); return d; }
static inline long long __double_as_longlong(double d) { long long x; memcpy(&x, &d, 8); return x; }
static inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
static inline double __fma_rz(double a, double b, double c) {
    fesetround(FE_TOWARDZERO);
    volatile double r = std::fma(a, b, c);
    fesetround(FE_TONEAREST);
    return r;
}
#include "ff/fp64_product.cuh"

template <class P>
static int run() {
    uint32_t a[P::N], b[P::N], r[P::N];
    for (;;) {
        for (int i = 0; i < P::N; i++)
            if (scanf("%x", &a[i]) != 1) return 0;
        for (int i = 0; i < P::N; i++)
            if (scanf("%x", &b[i]) != 1) return 1;
        fp64::mont_mul<P>(a, b, r);
        // r < 2p: subtract p (its words from the 48-bit limbs) once where it is not below p.
        uint32_t t[P::N];
        int64_t borrow = 0;
        for (int i = 0; i < P::N; i++) {
            const int bit = 32 * i, q = bit / 48, o = bit % 48;
            uint64_t w = P::limb(q) >> o;
            if (o > 16) w |= P::limb(q + 1) << (48 - o);
            int64_t d = (int64_t)r[i] - (int64_t)(uint32_t)w - borrow;
            borrow = d < 0;
            t[i] = (uint32_t)d;
        }
        for (int i = 0; i < P::N; i++) printf("%08x%c", borrow ? r[i] : t[i], i + 1 < P::N ? ' ' : '\n');
    }
}

int main() {
    char f[8] = {0};
    if (scanf("%7s", f) != 1) return 1;
    return strcmp(f, "fr") == 0 ? run<fp64::Fr48>() : run<fp64::Fq48>();
}
