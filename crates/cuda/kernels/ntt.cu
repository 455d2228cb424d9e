// NTT over BLS12-381 Fr, and the H polynomial's pointwise step.
//
// Layout: one array of n = 2^lg Montgomery-form Fr values. A transform is a bit-reversal
// permutation followed by lg radix-2 decimation-in-time stages: the first SH stages (the
// butterflies inside 2^SH-element blocks) run in shared memory in one launch, the rest one
// launch per stage over global memory. Twiddles: tw[i] = omega^i for i < n/2, computed on
// the device; the inverse transform reads omega^-i = -omega^(n/2-i) from the same table.
#include "ff/bls12_381.cuh"

#define SH_LG 10  // log2 of the elements per shared-memory block

__device__ __forceinline__ Fr twiddle(const Fr* tw, uint32_t half, uint32_t e, bool inverse) {
    if (e == 0) return Fr::one();
    if (!inverse) return tw[e];
    return tw[half - e].neg();
}

// out[i] = c * omega^i for i < len; each thread fills 32 consecutive entries (the
// twiddles with c = 1, and the tables of ntt_scale_table).
extern "C" __global__ void ntt_powers(Fr* out, Fr c, Fr omega, uint32_t len) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t start = t * 32;
    if (start >= len) return;
    Fr w = c * omega.pow(start);
    uint32_t end = min(start + 32, len);
    for (uint32_t i = start; i < end; i++) {
        out[i] = w;
        w = w * omega;
    }
}

// c * g^i from two small tables (lo[k] = g^k, hi[k] = c * g^(k 2^lo_bits)).
__device__ __forceinline__ Fr scale_at(const Fr* lo, const Fr* hi, uint32_t lo_bits, uint32_t i) {
    return lo[i & ((1u << lo_bits) - 1)] * hi[i >> lo_bits];
}

// d[p] *= c * g^i, two products per element and no serial chain; i = p, or with brev_lg
// != 0 (data in bit-reversed order of 2^brev_lg) i = bitreverse(p).
extern "C" __global__ void ntt_scale_table(Fr* d, uint32_t n, const Fr* lo, const Fr* hi, uint32_t lo_bits,
                                           uint32_t brev_lg) {
    for (uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < n; p += gridDim.x * blockDim.x) {
        uint32_t i = brev_lg ? __brev(p) >> (32 - brev_lg) : p;
        d[p] = d[p] * scale_at(lo, hi, lo_bits, i);
    }
}

// Bit-reversed -> natural order with the scaling of ntt_scale_table fused in: afterwards
// d[i] = c * g^i * (old d[bitreverse(i)]).
extern "C" __global__ void ntt_bitrev_scale(Fr* d, uint32_t lg, const Fr* lo, const Fr* hi, uint32_t lo_bits) {
    uint32_t n = 1u << lg;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        uint32_t j = lg ? __brev(i) >> (32 - lg) : i;
        if (i < j) {
            Fr x = d[i], y = d[j];
            d[i] = y * scale_at(lo, hi, lo_bits, i);
            d[j] = x * scale_at(lo, hi, lo_bits, j);
        } else if (i == j) {
            d[i] = d[i] * scale_at(lo, hi, lo_bits, i);
        }
    }
}

// d[i] *= c.
extern "C" __global__ void ntt_scale_const(Fr* d, uint32_t n, Fr c) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        d[i] = d[i] * c;
    }
}

extern "C" __global__ void ntt_bitrev(Fr* d, uint32_t lg) {
    uint32_t n = 1u << lg;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        uint32_t j = __brev(i) >> (32 - lg);
        if (i < j) {
            Fr t = d[i];
            d[i] = d[j];
            d[j] = t;
        }
    }
}

// One butterfly on (x, y) with twiddle w: decimation in time (x + wy, x - wy) or in
// frequency (x + y, (x - y) w).
template <bool DIF>
__device__ __forceinline__ void butterfly(Fr& x, Fr& y, const Fr& w) {
    if (DIF) {
        Fr t = x - y;
        x = x + y;
        y = t * w;
    } else {
        Fr v = y * w;
        y = x - v;
        x = x + v;
    }
}

// The first k = min(lg, SH_LG) stages, each block on 2^k contiguous elements. Decimation in
// time runs stages 0 .. k-1 (after the bit reversal); decimation in frequency (dif) runs
// them last, k-1 .. 0, and leaves the output in bit-reversed order.
template <bool dif>
__device__ __forceinline__ void shared_stages(Fr* d, const Fr* tw, uint32_t lg, uint32_t inverse) {
    extern __shared__ Fr sm[];
    uint32_t k = lg < SH_LG ? lg : SH_LG;
    uint32_t bsize = 1u << k;
    uint32_t half = 1u << (lg - 1);
    Fr* blk = d + (size_t)blockIdx.x * bsize;
    for (uint32_t i = threadIdx.x; i < bsize; i += blockDim.x) sm[i] = blk[i];
    __syncthreads();
    for (uint32_t r = 0; r < k; r++) {
        const uint32_t s = dif ? k - 1 - r : r;
        uint32_t h = 1u << s;
        for (uint32_t t = threadIdx.x; t < bsize / 2; t += blockDim.x) {
            uint32_t j = t & (h - 1);
            uint32_t i0 = ((t >> s) << (s + 1)) + j;
            Fr w = twiddle(tw, half, j << (lg - 1 - s), inverse);
            Fr u = sm[i0], v = sm[i0 + h];
            butterfly<dif>(u, v, w);
            sm[i0] = u;
            sm[i0 + h] = v;
        }
        __syncthreads();
    }
    for (uint32_t i = threadIdx.x; i < bsize; i += blockDim.x) blk[i] = sm[i];
}

// One radix-2 stage with half-size 2^s over global memory.
extern "C" __global__ void ntt_stage(Fr* d, const Fr* tw, uint32_t lg, uint32_t s, uint32_t inverse) {
    uint32_t half = 1u << (lg - 1);
    uint32_t h = 1u << s;
    for (uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < half; t += gridDim.x * blockDim.x) {
        uint32_t j = t & (h - 1);
        size_t i0 = ((size_t)(t >> s) << (s + 1)) + j;
        Fr w = twiddle(tw, half, j << (lg - 1 - s), inverse);
        Fr u = d[i0], v = d[i0 + h] * w;
        d[i0] = u + v;
        d[i0 + h] = u - v;
    }
}

// Stages s0 .. s0+k-1 (s0 >= SH_LG, k <= 6) in shared memory, in decreasing order for
// decimation in frequency. A butterfly group is the 2^k elements that differ only in
// index bits s0 .. s0+k-1; a block takes STRIDED_G groups with consecutive low bits so
// that its loads and stores are 512-byte runs.
#define STRIDED_G 16
template <bool dif>
__device__ __forceinline__ void strided_stages(Fr* d, const Fr* tw, uint32_t lg, uint32_t s0, uint32_t k,
                                               uint32_t inverse) {
    extern __shared__ Fr sm[];
    const uint32_t half = 1u << (lg - 1);
    const uint32_t E = STRIDED_G << k;
    const uint32_t lows = (1u << s0) / STRIDED_G;
    const uint32_t base_low = (blockIdx.x % lows) * STRIDED_G;
    const size_t high = (size_t)(blockIdx.x / lows) << (s0 + k);
    for (uint32_t e = threadIdx.x; e < E; e += blockDim.x) {
        uint32_t g = e % STRIDED_G, t = e / STRIDED_G;
        sm[e] = d[high + base_low + g + ((size_t)t << s0)];
    }
    __syncthreads();
    for (uint32_t r = 0; r < k; r++) {
        const uint32_t q = dif ? k - 1 - r : r;
        const uint32_t h = 1u << q;
        for (uint32_t u = threadIdx.x; u < E / 2; u += blockDim.x) {
            uint32_t g = u % STRIDED_G, p = u / STRIDED_G;
            uint32_t jq = p & (h - 1);
            uint32_t t0 = ((p >> q) << (q + 1)) + jq;
            uint32_t e0 = t0 * STRIDED_G + g, e1 = e0 + h * STRIDED_G;
            uint32_t j = base_low + g + (jq << s0);
            Fr w = twiddle(tw, half, j << (lg - 1 - s0 - q), inverse);
            Fr a = sm[e0], b = sm[e1];
            butterfly<dif>(a, b, w);
            sm[e0] = a;
            sm[e1] = b;
        }
        __syncthreads();
    }
    for (uint32_t e = threadIdx.x; e < E; e += blockDim.x) {
        uint32_t g = e % STRIDED_G, t = e / STRIDED_G;
        d[high + base_low + g + ((size_t)t << s0)] = sm[e];
    }
}

// Entry points, one per direction, so that each butterfly loop is compiled (registers,
// scheduling) for its own direction alone.
extern "C" __global__ void ntt_shared_dit(Fr* d, const Fr* tw, uint32_t lg, uint32_t inverse) {
    shared_stages<false>(d, tw, lg, inverse);
}
extern "C" __global__ void ntt_shared_dif(Fr* d, const Fr* tw, uint32_t lg, uint32_t inverse) {
    shared_stages<true>(d, tw, lg, inverse);
}
extern "C" __global__ void ntt_strided_dit(Fr* d, const Fr* tw, uint32_t lg, uint32_t s0, uint32_t k,
                                           uint32_t inverse) {
    strided_stages<false>(d, tw, lg, s0, k, inverse);
}
extern "C" __global__ void ntt_strided_dif(Fr* d, const Fr* tw, uint32_t lg, uint32_t s0, uint32_t k,
                                           uint32_t inverse) {
    strided_stages<true>(d, tw, lg, s0, k, inverse);
}

// a = (a*b - c) * zinv: the quotient by Z on the coset, where Z is the constant g^n - 1.
extern "C" __global__ void h_pointwise(Fr* a, const Fr* b, const Fr* c, uint32_t n, Fr zinv) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        a[i] = (a[i] * b[i] - c[i]) * zinv;
    }
}

// Field self-test kernels: out[i] = op(x[i], y[i]) on Montgomery values.
// op: 0 mul, 1 add, 2 sub, 3 neg(x), 4 from_mont(x), 5 to_mont(x), 6 sqr(x)
extern "C" __global__ void fr_test_op(Fr* out, const Fr* x, const Fr* y, uint32_t n, uint32_t op) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fr a = x[i], b = y[i], r;
    switch (op) {
        case 0: r = a * b; break;
        case 1: r = a + b; break;
        case 2: r = a - b; break;
        case 3: r = a.neg(); break;
        case 4: r = a.from_mont(); break;
        case 5: r = a.to_mont(); break;
        default: r = a.sqr(); break;
    }
    out[i] = r;
}
