// NTT over BLS12-381 Fr, and the H polynomial's pointwise step.
//
// Layout: one array of n = 2^lg Montgomery-form Fr values. A transform is lg radix-2
// stages, decimation in time (DIT: bit-reversed input, natural output, stages 0 .. lg-1)
// or in frequency (DIF: natural input, bit-reversed output, stages lg-1 .. 0). Stage s
// pairs the indices that differ in bit s; its twiddle is omega_{2^(s+1)}^j with j the low s
// bits of the pair's index, read as tw[j << (lg-1-s)] from tw[i] = omega^i (i <= n/2,
// computed on the device). The inverse transform reads the same table: omega^-i =
// -omega^(n/2-i) (also for i = 0: omega^(n/2) = -1), and its butterflies take the sign
// (they swap their outputs, or negate their difference) instead of negating the twiddle.
// The first stages (10 from 2^13 on) run in one launch (ntt_shared_*: a block
// per 2^10 contiguous elements), the others 3 to 6 at a time (ntt_strided_*), both as
// ntt_block; strided_passes in ntt.rs splits them. The bit reversal before a DIT forward
// transform or after a DIF inverse one is ntt_bitrev(_scale), with the coset scalings.
#include "ff/bls12_381.cuh"

// log2 of the elements one block of ntt_shared_* / ntt_strided_* transforms.
#define NTT_BLOCK_LG 10
// log2 of the elements each thread holds in registers: it runs up to this many stages on
// them between two exchanges through shared memory. RADIX_LG in ntt.rs. Radix 4 (80
// registers, 256 threads, 24 warps per SM) against radix 8 (~150 registers, 12 warps) on
// the H200: H at 2^27 444 vs 896 ms, and 682 ms for the previous one-butterfly-per-thread
// kernels.
#define NTT_RADIX_LG 2
#define NTT_THREADS (1 << (NTT_BLOCK_LG - NTT_RADIX_LG))
// Launch bounds of the stage kernels: 3 resident blocks per SM hold them to 80 registers
// (`ntt_strided_dif` spills 108 bytes). Unbounded, the DIF and shared-memory kernels took
// 92-108 and 2 blocks per SM: H at 2^27 394.5 -> 386.8 ms on the H200 with the row-wise
// product; with the column-wise one two blocks (no spills) against three, NTT forward 2^27
// 44.0 against 40.0 ms on the H100 (docs/decisions/005-field-products.md, 006).
#define NTT_BOUNDS __launch_bounds__(NTT_THREADS, 3)

// Dynamic shared memory of every kernel here, in 16-byte words.
extern __shared__ uint4 smem[];

// Fr loads and stores as two 16-byte accesses (every Fr array here is 32-byte aligned)
// instead of eight 4-byte ones; ldg_fr for data no kernel writes (twiddles, tables).
__device__ __forceinline__ Fr fr_of(uint4 a, uint4 b) {
    Fr r;
    r.v[0] = a.x, r.v[1] = a.y, r.v[2] = a.z, r.v[3] = a.w;
    r.v[4] = b.x, r.v[5] = b.y, r.v[6] = b.z, r.v[7] = b.w;
    return r;
}
__device__ __forceinline__ uint4 fr_lo(const Fr& x) { return make_uint4(x.v[0], x.v[1], x.v[2], x.v[3]); }
__device__ __forceinline__ uint4 fr_hi(const Fr& x) { return make_uint4(x.v[4], x.v[5], x.v[6], x.v[7]); }
__device__ __forceinline__ Fr load_fr(const Fr* p) {
    const uint4* q = reinterpret_cast<const uint4*>(p);
    return fr_of(q[0], q[1]);
}
__device__ __forceinline__ Fr ldg_fr(const Fr* p) {
    const uint4* q = reinterpret_cast<const uint4*>(p);
    return fr_of(__ldg(q), __ldg(q + 1));
}
__device__ __forceinline__ void store_fr(Fr* p, const Fr& x) {
    uint4* q = reinterpret_cast<uint4*>(p);
    q[0] = fr_lo(x);
    q[1] = fr_hi(x);
}

__device__ __forceinline__ uint32_t brev(uint32_t i, uint32_t lg) { return lg ? __brev(i) >> (32 - lg) : 0; }

// Twiddle e < half of the table tw (omega^i, i <= half); the inverse one by symmetry.
__device__ __forceinline__ Fr twiddle(const Fr* tw, uint32_t half, uint32_t e, bool inverse) {
    return inverse ? tw[half - e].neg() : tw[e];
}

// out[i] = c * omega^i for i < len; each thread fills 32 consecutive entries (the small
// tables of scale_at).
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
    return ldg_fr(lo + (i & ((1u << lo_bits) - 1))) * ldg_fr(hi + (i >> lo_bits));
}

// out[i] = c * g^i for i < len from the two tables of scale_at: one product per entry (the
// twiddle table; a chain of products per thread, as ntt_powers makes, took 21 ms at 2^26
// entries on the H200).
extern "C" __global__ void ntt_expand(Fr* out, uint32_t len, const Fr* lo, const Fr* hi, uint32_t lo_bits) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < len; i += gridDim.x * blockDim.x) {
        store_fr(out + i, scale_at(lo, hi, lo_bits, i));
    }
}

// d[p] *= c * g^i, two products per element and no serial chain; i = p, or with brev_lg
// != 0 (data in bit-reversed order of 2^brev_lg) i = bitreverse(p).
extern "C" __global__ void ntt_scale_table(Fr* d, uint32_t n, const Fr* lo, const Fr* hi, uint32_t lo_bits,
                                           uint32_t brev_lg) {
    for (uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < n; p += gridDim.x * blockDim.x) {
        uint32_t i = brev_lg ? brev(p, brev_lg) : p;
        store_fr(d + p, load_fr(d + p) * scale_at(lo, hi, lo_bits, i));
    }
}

// d[i] *= c.
extern "C" __global__ void ntt_scale_const(Fr* d, uint32_t n, Fr c) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        store_fr(d + i, load_fr(d + i) * c);
    }
}

// In-place bit reversal of 2^lg elements, optionally scaled: afterwards d[i] = f * (old
// d[brev(i)]) with f = c g^i (by_source 0) or f = c g^brev(i) (by_source 1), c g^x from the
// tables of scale_at; f = 1 when lo is null.
//
// From lg = 8 on, index i = (a, m, b) = a 2^(lg-4) + m 2^4 + b with a, b < 16, and the
// reversal maps (a, m, b) to (brev4(b), m', brev4(a)) with m' = brev(m) of lg-8 bits: the
// 256-element tile T_m = {(a, m, b)} goes onto T_m' and back. Block m (blocks with m > m'
// have nothing to do) reads T_m and T_m' in rows of 16 consecutive elements into shared
// memory and writes each tile's transpose into the other, again in rows. 256 threads,
// thread (a, b) = (t >> 4, t & 15); 16 KB of shared memory: tile u in
// smem[512 u + slot] (low halves) and smem[512 u + 256 + slot] (high halves), element (row,
// col) at slot 16 row + (col ^ brev4(row)), so that the row-wise writes and the
// column-wise reads hit 8 different 16-byte bank groups per quarter warp.
// Below lg = 8 (a single block) each thread swaps pairs directly.
__device__ __forceinline__ uint32_t brev4(uint32_t x) { return __brev(x) >> 28; }
__device__ __forceinline__ uint32_t tile_slot(uint32_t u, uint32_t row, uint32_t col) {
    return 512 * u + 16 * row + (col ^ brev4(row));
}
__device__ __forceinline__ void tile_put(uint32_t u, uint32_t row, uint32_t col, const Fr& x) {
    uint32_t s = tile_slot(u, row, col);
    smem[s] = fr_lo(x);
    smem[s + 256] = fr_hi(x);
}
__device__ __forceinline__ Fr tile_get(uint32_t u, uint32_t row, uint32_t col) {
    uint32_t s = tile_slot(u, row, col);
    return fr_of(smem[s], smem[s + 256]);
}
// x scaled for destination index i holding the old value of index src = brev(i).
__device__ __forceinline__ Fr bitrev_scaled(Fr x, uint32_t i, uint32_t src, const Fr* lo, const Fr* hi,
                                            uint32_t lo_bits, uint32_t by_source) {
    return lo ? x * scale_at(lo, hi, lo_bits, by_source ? src : i) : x;
}
__device__ __forceinline__ void bitrev_permute(Fr* d, uint32_t lg, const Fr* lo, const Fr* hi, uint32_t lo_bits,
                                               uint32_t by_source) {
    if (lg < 8) {
        for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < (1u << lg); i += gridDim.x * blockDim.x) {
            uint32_t j = brev(i, lg);
            if (i < j) {
                Fr x = load_fr(d + i), y = load_fr(d + j);
                store_fr(d + i, bitrev_scaled(y, i, j, lo, hi, lo_bits, by_source));
                store_fr(d + j, bitrev_scaled(x, j, i, lo, hi, lo_bits, by_source));
            } else if (i == j && lo) {
                store_fr(d + i, bitrev_scaled(load_fr(d + i), i, i, lo, hi, lo_bits, by_source));
            }
        }
        return;
    }
    const uint32_t m = blockIdx.x, mr = brev(m, lg - 8);
    if (m > mr) return;
    const uint32_t a = threadIdx.x >> 4, b = threadIdx.x & 15, sh = lg - 4;
    const uint32_t im = (a << sh) | (m << 4) | b, imr = (a << sh) | (mr << 4) | b;
    tile_put(0, a, b, load_fr(d + im));
    if (mr != m) tile_put(1, a, b, load_fr(d + imr));
    __syncthreads();
    // d[(a, m, b)] = old d[(brev4 b, m', brev4 a)]: row brev4(b), column brev4(a) of T_m'.
    const uint32_t row = brev4(b), col = brev4(a);
    const uint32_t src_m = (row << sh) | (mr << 4) | col, src_mr = (row << sh) | (m << 4) | col;
    Fr x = tile_get(mr != m ? 1 : 0, row, col);
    store_fr(d + im, bitrev_scaled(x, im, src_m, lo, hi, lo_bits, by_source));
    if (mr != m) {
        Fr y = tile_get(0, row, col);
        store_fr(d + imr, bitrev_scaled(y, imr, src_mr, lo, hi, lo_bits, by_source));
    }
}

extern "C" __global__ void __launch_bounds__(256) ntt_bitrev(Fr* d, uint32_t lg) {
    bitrev_permute(d, lg, nullptr, nullptr, 0, 0);
}
extern "C" __global__ void __launch_bounds__(256) ntt_bitrev_scale(Fr* d, uint32_t lg, const Fr* lo,
                                                                   const Fr* hi, uint32_t lo_bits,
                                                                   uint32_t by_source) {
    bitrev_permute(d, lg, lo, hi, lo_bits, by_source);
}

// One butterfly on (x, y) with twiddle w: decimation in time (x + wy, x - wy) or in
// frequency (x + y, (x - y) w); with NEG the twiddle is -w: (x - wy, x + wy) or
// (x + y, (y - x) w). butterfly1 is either with twiddle 1. Between a transform's first
// load and its last store the values stay below 2p, not p (the products skip their final
// subtraction; ff/field.cuh, *_below_2p): the last store reduces them (`canonical`).
template <bool DIF, bool NEG = false>
__device__ __forceinline__ void butterfly(Fr& x, Fr& y, const Fr& w) {
    if (DIF) {
        Fr t = NEG ? Fr::sub_below_2p(y, x) : Fr::sub_below_2p(x, y);
        x = Fr::add_below_2p(x, y);
        y = Fr::mul_below_2p(w, t);
    } else {
        Fr v = Fr::mul_below_2p(w, y);
        Fr sum = Fr::add_below_2p(x, v);
        y = NEG ? sum : Fr::sub_below_2p(x, v);
        x = NEG ? Fr::sub_below_2p(x, v) : sum;
    }
}
__device__ __forceinline__ void butterfly1(Fr& x, Fr& y) {
    Fr t = Fr::sub_below_2p(x, y);
    x = Fr::add_below_2p(x, y);
    y = t;
}
// A value below 2p as the transform's output: below p, scaled first by c g^i when lo is
// not null (the tables of scale_at).
__device__ __forceinline__ Fr canonical(const Fr& x, const Fr* lo, const Fr* hi, uint32_t lo_bits, uint32_t i) {
    return Fr::reduce_once(lo ? Fr::mul_below_2p(scale_at(lo, hi, lo_bits, i), x) : x);
}

// omega^e, or for the inverse omega^(n/2-e) = -omega^-e (the butterfly takes the sign).
template <bool INV>
__device__ __forceinline__ Fr twiddle_of(const Fr* tw, uint32_t half, uint32_t e) {
    return ldg_fr(tw + (INV ? half - e : e));
}

// Stage q = b + H of a block (block-relative: global stage s0 + q) on the 2^ME elements
// x[i] of one thread, whose block rows are rlow + (i << b) + (bits above b + ME): it pairs
// x[i] and x[i + 2^H]. The pair's row has low bits jq = rlow + ((i mod 2^H) << b), its
// global index low bits j = low + (jq << s0), and its twiddle exponent j << (lg-1-s0-q).
// With SKIP (the shared kernel's first window: s0 = 0, b = 0, low = 0, rlow = 0) the pairs
// with i mod 2^H = 0 have twiddle 1 and no product; the test is on compile-time indices,
// so every warp skips the same ones. H is a template argument so that x and w stay in
// registers (every index a constant).
template <bool DIF, bool INV, bool SKIP, int ME, int H>
__device__ __forceinline__ void radix_stage(Fr (&x)[1 << ME], const Fr* tw, uint32_t lg, uint32_t s0, uint32_t low,
                                            uint32_t rlow, uint32_t b) {
    const uint32_t half = 1u << (lg - 1), q = b + H;
    Fr w[1 << H];
#pragma unroll
    for (int t = SKIP ? 1 : 0; t < (1 << H); t++) {
        const uint32_t jq = rlow + ((uint32_t)t << b);
        w[t] = twiddle_of<INV>(tw, half, (low + (jq << s0)) << (lg - 1 - s0 - q));
    }
#pragma unroll
    for (int i = 0; i < (1 << ME); i++) {
        if (i & (1 << H)) continue;
        const int t = i & ((1 << H) - 1);
        if (SKIP && t == 0) {
            butterfly1(x[i], x[i + (1 << H)]);
        } else {
            butterfly<DIF, INV>(x[i], x[i + (1 << H)], w[t]);
        }
    }
}

// The stages q0 .. q1-1 of a window (see ntt_block) among b .. b+ME-1, in increasing order
// for decimation in time and decreasing for frequency; R counts the ones done.
template <bool DIF, bool INV, bool SKIP, int ME, int R = 0>
__device__ __forceinline__ void radix_stages(Fr (&x)[1 << ME], const Fr* tw, uint32_t lg, uint32_t s0, uint32_t low,
                                             uint32_t rlow, uint32_t b, uint32_t q0, uint32_t q1) {
    if constexpr (R < ME) {
        constexpr int H = DIF ? ME - 1 - R : R;
        if (b + H >= q0 && b + H < q1) radix_stage<DIF, INV, SKIP, ME, H>(x, tw, lg, s0, low, rlow, b);
        radix_stages<DIF, INV, SKIP, ME, R + 1>(x, tw, lg, s0, low, rlow, b, q0, q1);
    }
}

// Shared-memory layout of a block of E elements: the low 16 bytes of element e at
// smem[sw(e)], the high 16 bytes at smem[E + sw(e)], so a 16-byte access by 8 threads
// (a quarter warp) is conflict-free when their sw(e) differ in bits 0-2 (the bank group).
// In ntt_block they differ in e's bits 0-2 (strided passes; windows above the first),
// or 3-5 (the shared kernel's first window), or with NTT_RADIX_LG = 2 also in bits
// {2, 3, 4} or {0, 1, 4}; sw() XORs bits 0-2 with (e3, e4, e4 ^ e5), one-to-one on each.
__device__ __forceinline__ uint32_t sw(uint32_t e) { return e ^ ((e >> 3) & 7) ^ ((e >> 2) & 4); }

// The first load's pointwise product (ntt_block's PW): x = x pw[p], or pw_out[p] = x pw[p].
__device__ __forceinline__ void pointwise(Fr& x, const Fr* pw, Fr* pw_out, uint32_t p) {
    const Fr t = x * load_fr(pw + p);
    if (pw_out) {
        store_fr(pw_out + p, t);
    } else {
        x = t;
    }
}

// H's last store (ntt_block's FIN): x (below 2p) is value number brev(p) of c's inverse
// transform, a[p] the same value of the inverse coset transform of a*b, already scaled.
__device__ __forceinline__ void finish(const Fr& x, const Fr* a, Fr* out, const Fr& k, uint32_t p, uint32_t lg) {
    store_fr(out + brev(p, lg), load_fr(a + p) - Fr::reduce_once(Fr::mul_below_2p(k, x)));
}

// Stages s0 .. s0+k-1 of a transform, decimation in time (in this order) or in frequency
// (in reverse), on one block of E = blockDim.x 2^ME elements. The block takes C = E / 2^k
// columns of 2^k rows: element (r, c) is d[base + c + (r << s0)], the 2^k indices that
// differ only in bits s0 .. s0+k-1, for C consecutive values `low` of the bits below s0
// (in rows of C consecutive elements); the shared kernel has s0 = 0, C = 1 and the block's
// 2^k contiguous elements. Thread u takes column c = u mod C and rho = u / C (k - ME bits).
//
// The k stages go in windows of ME: window w runs stages q0 = w ME .. min(q0 + ME, k)-1
// on the rows whose bits b .. b+ME-1 (b = min(q0, k - ME), so the window fits) come from
// the thread's register index i and the other k - ME bits from rho, in order. The first
// window loads from global memory, the last stores to global memory, and between windows
// the elements go through shared memory (one barrier each). The transform's last launch
// (`last`) stores its values reduced below p, and with lo != null scaled: value number v of
// the transform's output (p for DIT, brev(p) for DIF at position p) times c g^v (the
// tables of scale_at); the others store values below 2p.
//
// With PW (a transform's first launch, `pw` not null) the first load also takes a
// pointwise product with pw: the value loaded becomes d[p] pw[p], or with pw_out not
// null stays d[p] while pw_out[p] = d[p] pw[p] is written (H's pointwise products,
// compute_h_in_place in ntt.rs, without passes of their own). With FIN (H's last launch,
// decimation in frequency: `fin_out` not null) the last store writes value number v =
// brev(p), not to d[p] but fin_out[v] = fin_a[p] - k x (H's last step: fin_a holds the
// other inverse transform's values, already scaled, in the same bit-reversed order).
template <bool DIF, bool INV, bool SHARED, bool PW, bool FIN, int ME>
__device__ __forceinline__ void ntt_block(Fr* d, const Fr* tw, uint32_t lg, uint32_t s0, uint32_t k, uint32_t last,
                                          const Fr* lo, const Fr* hi, uint32_t lo_bits, const Fr* pw, Fr* pw_out,
                                          const Fr* fin_a, Fr* fin_out, const Fr& fin_k) {
    constexpr uint32_t R = 1u << ME;
    const uint32_t lg_e = 31 - __clz(blockDim.x) + ME;
    const uint32_t E = 1u << lg_e, cl = lg_e - k;  // C = 2^cl columns (cl <= s0)
    const uint32_t col = threadIdx.x & ((1u << cl) - 1), rho = threadIdx.x >> cl;
    const uint32_t low = ((blockIdx.x << cl) & ((1u << s0) - 1)) + col;  // bits below s0
    const uint32_t base = ((blockIdx.x >> (s0 - cl)) << (s0 + k)) + low;  // row 0
    const uint32_t windows = (k + ME - 1) / ME;
    for (uint32_t r = 0; r < windows; r++) {
        const uint32_t w = DIF ? windows - 1 - r : r;
        const uint32_t q0 = w * ME, q1 = min(q0 + ME, k), b = min(q0, k - ME);
        const uint32_t rows = (rho & ((1u << b) - 1)) | ((rho >> b) << (b + ME));  // i = 0
        Fr x[R];
        if (r == 0) {
#pragma unroll
            for (uint32_t i = 0; i < R; i++) {
                const uint32_t p = base + ((rows | (i << b)) << s0);
                x[i] = load_fr(d + p);
                if (PW) pointwise(x[i], pw, pw_out, p);
            }
        } else {
            __syncthreads();
#pragma unroll
            for (uint32_t i = 0; i < R; i++) {
                const uint32_t e = sw((rows | (i << b)) << cl | col);
                x[i] = fr_of(smem[e], smem[E + e]);
            }
        }
        if (SHARED && w == 0) {
            radix_stages<DIF, INV, true, ME>(x, tw, lg, s0, low, 0, 0, q0, q1);
        } else {
            radix_stages<DIF, INV, false, ME>(x, tw, lg, s0, low, rows & ((1u << b) - 1), b, q0, q1);
        }
        if (r == windows - 1) {
#pragma unroll
            for (uint32_t i = 0; i < R; i++) {
                const uint32_t p = base + ((rows | (i << b)) << s0);
                if (FIN) {
                    finish(x[i], fin_a, fin_out, fin_k, p, lg);
                    continue;
                }
                if (last) x[i] = canonical(x[i], lo, hi, lo_bits, DIF ? brev(p, lg) : p);
                store_fr(d + p, x[i]);
            }
        } else {
#pragma unroll
            for (uint32_t i = 0; i < R; i++) {
                const uint32_t e = sw((rows | (i << b)) << cl | col);
                smem[e] = fr_lo(x[i]);
                smem[E + e] = fr_hi(x[i]);
            }
        }
    }
}

// Transforms of 1 or 2 elements (lg < NTT_RADIX_LG, one block of one thread): the first
// load's pointwise product, the stages one after the other in global memory, then the
// last store of ntt_block (or H's last step).
template <bool DIF>
__device__ __forceinline__ void tiny_transform(Fr* d, const Fr* tw, uint32_t lg, uint32_t inverse, const Fr* lo,
                                               const Fr* hi, uint32_t lo_bits, const Fr* pw, Fr* pw_out,
                                               const Fr* fin_a, Fr* fin_out, const Fr& fin_k) {
    const uint32_t n = 1u << lg, half = n >> 1;
    if (pw) {
        for (uint32_t p = 0; p < n; p++) {
            Fr x = d[p];
            pointwise(x, pw, pw_out, p);
            d[p] = x;
        }
    }
    for (uint32_t r = 0; r < lg; r++) {
        const uint32_t s = DIF ? lg - 1 - r : r, h = 1u << s;
        for (uint32_t t = 0; t < half; t++) {
            const uint32_t j = t & (h - 1), i0 = ((t >> s) << (s + 1)) + j;
            Fr x = d[i0], y = d[i0 + h];
            butterfly<DIF>(x, y, twiddle(tw, half, j << (lg - 1 - s), inverse));
            d[i0] = x;
            d[i0 + h] = y;
        }
    }
    for (uint32_t p = 0; p < n; p++) {
        if (fin_out) {
            finish(d[p], fin_a, fin_out, fin_k, p, lg);
        } else {
            d[p] = canonical(d[p], lo, hi, lo_bits, DIF ? brev(p, lg) : p);
        }
    }
}

// Entry points, one per direction, so that each butterfly loop is compiled (registers,
// scheduling) for its own direction alone; the inverse selects a whole copy of the code,
// and so do a first launch's pointwise product (pw not null; ntt_block's PW) and H's last
// launch (fin_out not null, decimation in frequency; FIN). `last` is set on a
// transform's last launch (ntt_block). Shared: stages 0 .. k-1 (k <= NTT_BLOCK_LG; k = lg
// or k >= NTT_RADIX_LG), grid 2^(lg-k), blockDim 2^(k - min(k, NTT_RADIX_LG)), 32 2^k
// bytes of shared memory; lo may be null (no scaling). Strided: stages s0 .. s0+k-1
// (NTT_RADIX_LG <= k <= NTT_BLOCK_LG - 4, s0 + k >= NTT_BLOCK_LG, so 2^NTT_BLOCK_LG / 2^k
// columns fit below s0), blockDim NTT_THREADS, grid n / 2^NTT_BLOCK_LG, 32 2^NTT_BLOCK_LG
// bytes of shared memory. A strided launch is never a transform's last in frequency.
template <bool DIF, bool SHARED, bool INV>
__device__ __forceinline__ void ntt_launch(Fr* d, const Fr* tw, uint32_t lg, uint32_t s0, uint32_t k, uint32_t last,
                                           const Fr* lo, const Fr* hi, uint32_t lo_bits, const Fr* pw, Fr* pw_out,
                                           const Fr* fin_a, Fr* fin_out, const Fr& fin_k) {
    constexpr int ME = NTT_RADIX_LG;
    if (pw) {
        ntt_block<DIF, INV, SHARED, true, false, ME>(d, tw, lg, s0, k, last, lo, hi, lo_bits, pw, pw_out, fin_a, fin_out,
                                                     fin_k);
    } else if (DIF && SHARED && fin_out) {
        ntt_block<DIF, INV, SHARED, false, DIF && SHARED, ME>(d, tw, lg, s0, k, last, lo, hi, lo_bits, pw, pw_out, fin_a,
                                                              fin_out, fin_k);
    } else {
        ntt_block<DIF, INV, SHARED, false, false, ME>(d, tw, lg, s0, k, last, lo, hi, lo_bits, pw, pw_out, fin_a,
                                                      fin_out, fin_k);
    }
}
template <bool DIF>
__device__ __forceinline__ void ntt_shared(Fr* d, const Fr* tw, uint32_t lg, uint32_t k, uint32_t inverse,
                                           uint32_t last, const Fr* lo, const Fr* hi, uint32_t lo_bits, const Fr* pw,
                                           Fr* pw_out, const Fr* fin_a, Fr* fin_out, const Fr& fin_k) {
    if (k < NTT_RADIX_LG) {
        tiny_transform<DIF>(d, tw, lg, inverse, lo, hi, lo_bits, pw, pw_out, fin_a, fin_out, fin_k);
    } else if (inverse) {
        ntt_launch<DIF, true, true>(d, tw, lg, 0, k, last, lo, hi, lo_bits, pw, pw_out, fin_a, fin_out, fin_k);
    } else {
        ntt_launch<DIF, true, false>(d, tw, lg, 0, k, last, lo, hi, lo_bits, pw, pw_out, fin_a, fin_out, fin_k);
    }
}
template <bool DIF>
__device__ __forceinline__ void ntt_strided(Fr* d, const Fr* tw, uint32_t lg, uint32_t s0, uint32_t k,
                                            uint32_t inverse, uint32_t last, const Fr* pw, Fr* pw_out) {
    const Fr zero = Fr::zero();
    if (inverse) {
        ntt_launch<DIF, false, true>(d, tw, lg, s0, k, last, nullptr, nullptr, 0, pw, pw_out, nullptr, nullptr, zero);
    } else {
        ntt_launch<DIF, false, false>(d, tw, lg, s0, k, last, nullptr, nullptr, 0, pw, pw_out, nullptr, nullptr, zero);
    }
}
extern "C" __global__ void NTT_BOUNDS ntt_shared_dit(Fr* d, const Fr* tw, uint32_t lg, uint32_t k, uint32_t inverse,
                                                     uint32_t last, const Fr* lo, const Fr* hi, uint32_t lo_bits,
                                                     const Fr* pw, Fr* pw_out, const Fr* fin_a, Fr* fin_out, Fr fin_k) {
    ntt_shared<false>(d, tw, lg, k, inverse, last, lo, hi, lo_bits, pw, pw_out, fin_a, fin_out, fin_k);
}
extern "C" __global__ void NTT_BOUNDS ntt_shared_dif(Fr* d, const Fr* tw, uint32_t lg, uint32_t k, uint32_t inverse,
                                                     uint32_t last, const Fr* lo, const Fr* hi, uint32_t lo_bits,
                                                     const Fr* pw, Fr* pw_out, const Fr* fin_a, Fr* fin_out, Fr fin_k) {
    ntt_shared<true>(d, tw, lg, k, inverse, last, lo, hi, lo_bits, pw, pw_out, fin_a, fin_out, fin_k);
}
extern "C" __global__ void NTT_BOUNDS ntt_strided_dit(Fr* d, const Fr* tw, uint32_t lg, uint32_t s0, uint32_t k,
                                                      uint32_t inverse, uint32_t last, const Fr* pw, Fr* pw_out) {
    ntt_strided<false>(d, tw, lg, s0, k, inverse, last, pw, pw_out);
}
extern "C" __global__ void NTT_BOUNDS ntt_strided_dif(Fr* d, const Fr* tw, uint32_t lg, uint32_t s0, uint32_t k,
                                                      uint32_t inverse, uint32_t last, const Fr* pw, Fr* pw_out) {
    ntt_strided<true>(d, tw, lg, s0, k, inverse, last, pw, pw_out);
}
