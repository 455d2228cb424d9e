// The binned scatter of one window (step 3 of msm/msm.cuh for the large MSMs, whose
// groups hold one window each; src/msm/). Curve-independent: it only orders indices.
//
// The direct scatter (msm_scatter) makes two global atomics per entry and window: its
// bucket's cursor and the next window's count. Those bound it, not memory: on the H200,
// 11.55 ms for a window of 2^27 entries, 69 % of warp cycles waiting on the atomics with
// return, DRAM 29 % busy (Nsight Compute). Here
// the per-entry atomics are in shared memory and the global ones per block and bin:
// 0. msm_canonical_planes, once per MSM: the scalars as integers, word-transposed, with
//    their digits' carries, so a window's pass reads 16 of a scalar's 32 bytes;
// 1. msm_bin_scatter (bin_scatter): a block takes BIN_THREADS x PER entries,
//    counts their digits per bin (2^BIN_SHIFT buckets) in shared memory, reserves each
//    bin's run of the pair list with one atomic and writes the (bucket, base index | sign
//    << 31) pairs into the runs: the list is in bin order. The bins' offsets come from
//    the previous window's pass, which counts the next window's bins the same way (the
//    first window's from a count-only launch);
// 2. msm_bin_count and msm_bin_place (bin_place), over tiles of PLACE_THREADS x
//    PLACE_PER_THREAD pairs: a tile lies in one or a few bins, so its buckets fit shared
//    memory. The counting launch adds the tile's counts with one atomic per bucket; after
//    the scan of the counts (the bucket offsets) the placing launch reserves each
//    bucket's slots with one atomic and writes the entries there (any order inside a
//    bucket). A tile over sparse bins whose buckets do not fit uses one global atomic
//    per entry instead.
#pragma once
#include "msm/digits.cuh"

#define BIN_SHIFT 11
// Threads of msm_bin_scatter; its entries per thread (PER) set the tile
// (src/msm/scatter.rs, BIN_PER_THREAD). The block's global atomics, one per bin for its pairs
// and one for the next window's counts, come to 1 per 2 entries of the 2^27 MSM at 8.
#define BIN_THREADS 512
#define PLACE_THREADS 512
#define PLACE_PER_THREAD 16
#define PLACE_KEYS 8192  // shared-memory buckets of a tile (32 KB)
#define NO_DIGIT 0xffffffffu

// The scalars of a binned MSM as integers (out of Montgomery form), transposed: word j of
// entry i's scalar at planes[j n + i], and at planes[8 n + i] the carries of its signed
// c-bit digits (bit v: window v's digit gets +1 from window v - 1's, which went
// negative). A window's pass then reads the two or three words its digits lie in and the
// carries, 16 of the 32 bytes of a scalar (entry i's scalar is s[idx[i]], or s[i]).
extern "C" __global__ void msm_canonical_planes(const Fr* s, const uint32_t* idx, uint32_t n, uint32_t c,
                                                uint32_t* planes) {
    const uint32_t B = 1u << (c - 1), windows = (256 + c - 1) / c;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const Fr k = s[idx ? idx[i] : i].from_mont();
        uint32_t carry = 0, carries = 0;
        for (uint32_t v = 0; v < windows; v++) {
            carries |= carry << v;
            carry = scalar_bits(k, v * c, c) + carry > B;
        }
#pragma unroll
        for (int j = 0; j < 8; j++) planes[(size_t)j * n + i] = k.v[j];
        planes[(size_t)8 * n + i] = carries;
    }
}

// The signed digit (a c-bit field plus its carry): |digit| - 1 with the sign in bit 31
// (the bucket within the window and whether the point is negated), NO_DIGIT for zero.
__device__ __forceinline__ uint32_t signed_digit(uint32_t bits, uint32_t carry, uint32_t c) {
    const uint32_t d = bits + carry;
    const uint32_t neg = d > (1u << (c - 1));
    const uint32_t a = neg ? (1u << c) - d : d;
    return a == 0 ? NO_DIGIT : (a - 1) | (neg << 31);
}

// The words that window w's and w + 1's digits of entry i lie in (planes as
// msm_canonical_planes wrote them): bits [w c, (w + 2) c) lie in words wd, wd + 1, wd + 2
// (2 c + 31 <= 96 bits); x[3] the entry's carries.
__device__ __forceinline__ void window_words(const uint32_t* planes, uint32_t n, uint32_t i, uint32_t wd,
                                             uint32_t x[4]) {
#pragma unroll
    for (int j = 0; j < 3; j++) x[j] = wd + j < 8 ? planes[(size_t)(wd + j) * n + i] : 0;
    x[3] = planes[(size_t)8 * n + i];
}

// Window w's and w + 1's signed digits from the words window_words loaded.
__device__ __forceinline__ void window_digits(const uint32_t x[4], uint32_t c, uint32_t w, uint32_t& dw,
                                              uint32_t& dn) {
    const uint32_t off = (w * c) & 31, carries = x[3];
    const uint32_t mask = (1u << c) - 1;
    const uint64_t lo = x[0] | ((uint64_t)x[1] << 32), hi = x[1] | ((uint64_t)x[2] << 32);
    const uint32_t bw = (uint32_t)(lo >> off) & mask;
    const uint32_t on = off + c;  // window w + 1's offset: below 32 + c
    const uint32_t bn = (uint32_t)(on < 32 ? lo >> on : hi >> (on - 32)) & mask;
    dw = signed_digit(bw, (carries >> w) & 1, c);
    dn = signed_digit(bn, w + 1 < 32 ? (carries >> (w + 1)) & 1 : 0, c);
}

// Pass 1 over `entries` entries (planes: the n scalars, msm_canonical_planes), PER
// entries per thread. Entry e < n is scalar e's window w with base idx[e], or e. A folded
// MSM (entries = 2 n, no idx) has a second base per scalar, 2^(c fw) times the first, at
// index n + e: entry n + e is scalar e's window w + fw with that base, so one group of
// buckets takes two windows. With `pairs`: scatters the digits into bin order (bin_off:
// the nbins + 1 bin offsets, fill: nbins zeroed words). With `counted`: adds the digits
// of the next group (cw = w + 1; cw = w: this one) per bin to counted[bin]. Shared
// memory: 2 nbins words.
//
// The loads of AHEAD entries are issued before their shared-memory atomics: ptxas keeps
// loads behind earlier atomics, so with AHEAD = 1 each entry waits for its own loads in
// turn (one DRAM round trip per entry and thread).
template <int PER, int AHEAD>
__device__ __forceinline__ void bin_scatter(const uint32_t* planes, const uint32_t* idx, uint32_t n,
                                            uint32_t entries, uint32_t fw, uint32_t c, uint32_t w, uint32_t nbins,
                                            const uint32_t* bin_off, uint32_t* fill, uint2* pairs,
                                            uint32_t* counted, uint32_t cw) {
    static_assert(PER % AHEAD == 0, "whole chunks of entries");
    extern __shared__ uint32_t sm[];
    uint32_t* hist = sm;
    uint32_t* chist = sm + nbins;
    for (uint32_t b = threadIdx.x; b < 2 * nbins; b += blockDim.x) sm[b] = 0;
    __syncthreads();
    const uint32_t tile = blockIdx.x * (blockDim.x * PER);
    // Entry e's scalar and window.
    auto scalar_of = [&](uint32_t e) { return e < n ? e : e - n; };
    auto window_of = [&](uint32_t e) { return e < n ? w : w + fw; };
    uint32_t key[PER];
#pragma unroll
    for (int e0 = 0; e0 < PER; e0 += AHEAD) {
        uint32_t x[AHEAD][4];
#pragma unroll
        for (int a = 0; a < AHEAD; a++) {
            const uint32_t e = tile + (e0 + a) * blockDim.x + threadIdx.x;
            if (e < entries) window_words(planes, n, scalar_of(e), (window_of(e) * c) >> 5, x[a]);
        }
#pragma unroll
        for (int a = 0; a < AHEAD; a++) {
            const uint32_t e = tile + (e0 + a) * blockDim.x + threadIdx.x;
            key[e0 + a] = NO_DIGIT;
            if (e >= entries) continue;
            uint32_t dw, dn;
            window_digits(x[a], c, window_of(e), dw, dn);
            if (pairs && dw != NO_DIGIT) {
                key[e0 + a] = dw;
                atomicAdd(&hist[(dw & 0x7fffffffu) >> BIN_SHIFT], 1u);
            }
            const uint32_t dc = cw == w ? dw : dn;
            if (counted && dc != NO_DIGIT) atomicAdd(&chist[(dc & 0x7fffffffu) >> BIN_SHIFT], 1u);
        }
    }
    __syncthreads();
    for (uint32_t b = threadIdx.x; b < nbins; b += blockDim.x) {
        if (pairs && hist[b]) hist[b] = bin_off[b] + atomicAdd(&fill[b], hist[b]);
        if (counted && chist[b]) atomicAdd(&counted[b], chist[b]);
    }
    if (!pairs) return;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < PER; k++) {
        if (key[k] == NO_DIGIT) continue;
        const uint32_t e = tile + k * blockDim.x + threadIdx.x;
        const uint32_t bucket = key[k] & 0x7fffffffu;
        const uint32_t p = atomicAdd(&hist[bucket >> BIN_SHIFT], 1u);
        pairs[p] = make_uint2(bucket, (idx ? idx[e] : e) | (key[k] & 0x80000000u));
    }
}

// Pass 2 over the bin-ordered pairs (bin_off[nbins] of them). COUNT: counts[bucket] +=
// the tile's entries per bucket. Otherwise `counts` are the buckets' cursors (a copy of
// their offsets) and each entry goes to sorted[cursor++]. Shared memory: PLACE_KEYS words.
template <bool COUNT>
__device__ __forceinline__ void bin_place(const uint2* pairs, const uint32_t* bin_off, uint32_t nbins,
                                              uint32_t* counts, uint32_t* sorted) {
    extern __shared__ uint32_t sm[];
    const uint32_t total = bin_off[nbins];
    const uint32_t p0 = blockIdx.x * (blockDim.x * PLACE_PER_THREAD);
    if (p0 >= total) return;
    const uint32_t p1 = min(p0 + blockDim.x * PLACE_PER_THREAD, total);
    // The tile's buckets lie in [lo, hi): its first bin to its last.
    const uint32_t lo = (pairs[p0].x >> BIN_SHIFT) << BIN_SHIFT;
    const uint32_t hi = ((pairs[p1 - 1].x >> BIN_SHIFT) + 1) << BIN_SHIFT;
    uint2 e[PLACE_PER_THREAD];
#pragma unroll
    for (int j = 0; j < PLACE_PER_THREAD; j++) {
        const uint32_t p = p0 + j * blockDim.x + threadIdx.x;
        e[j] = p < p1 ? pairs[p] : make_uint2(NO_DIGIT, 0);
    }
    if (hi - lo > PLACE_KEYS) {
#pragma unroll
        for (int j = 0; j < PLACE_PER_THREAD; j++) {
            if (e[j].x == NO_DIGIT) continue;
            const uint32_t slot = atomicAdd(&counts[e[j].x], 1u);
            if (!COUNT) sorted[slot] = e[j].y;
        }
        return;
    }
    for (uint32_t k = threadIdx.x; k < hi - lo; k += blockDim.x) sm[k] = 0;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < PLACE_PER_THREAD; j++)
        if (e[j].x != NO_DIGIT) atomicAdd(&sm[e[j].x - lo], 1u);
    __syncthreads();
    for (uint32_t k = threadIdx.x; k < hi - lo; k += blockDim.x) {
        const uint32_t h = sm[k];
        if (!h) continue;
        if (COUNT) atomicAdd(&counts[lo + k], h);
        else sm[k] = atomicAdd(&counts[lo + k], h);
    }
    if (COUNT) return;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < PLACE_PER_THREAD; j++)
        if (e[j].x != NO_DIGIT) sorted[atomicAdd(&sm[e[j].x - lo], 1u)] = e[j].y;
}

// The bin pass: 8 entries per thread with their loads issued together, two blocks per SM
// (64 registers, none spilled; src/msm/scatter.rs BIN_PER_THREAD). On the H200 its pass
// over the 2^27 G1 MSM took 35.7 ms, against 48.7 when each entry's loads waited for the
// previous entry's atomics (8 -> 32 entries, 1 ahead) and 38.6-44.5 for other tiles and
// occupancies (16 or 32 entries, 8 or 16 ahead, 1 to 3 blocks per SM;
// docs/decisions/007-binned-digit-scatter.md).
extern "C" __global__ void __launch_bounds__(BIN_THREADS, 2)
    msm_bin_scatter(const uint32_t* planes, const uint32_t* idx, uint32_t n, uint32_t entries, uint32_t fw,
                    uint32_t c, uint32_t w, uint32_t nbins, const uint32_t* bin_off, uint32_t* fill, uint2* pairs,
                    uint32_t* counted, uint32_t cw) {
    bin_scatter<8, 8>(planes, idx, n, entries, fw, c, w, nbins, bin_off, fill, pairs, counted, cw);
}
extern "C" __global__ void __launch_bounds__(PLACE_THREADS)
    msm_bin_count(const uint2* pairs, const uint32_t* bin_off, uint32_t nbins, uint32_t* counts) {
    bin_place<true>(pairs, bin_off, nbins, counts, nullptr);
}
extern "C" __global__ void __launch_bounds__(PLACE_THREADS)
    msm_bin_place(const uint2* pairs, const uint32_t* bin_off, uint32_t nbins, uint32_t* cursors,
                  uint32_t* sorted) {
    bin_place<false>(pairs, bin_off, nbins, cursors, sorted);
}
