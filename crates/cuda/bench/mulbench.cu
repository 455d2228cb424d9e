// Field-product micro-benchmark: throughput of the Fq and Fr Montgomery products and of
// the G1 mixed XYZZ addition, and a checksum of fixed-input results (two builds with
// different product routines must print the same checksums).
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -I ../kernels mulbench.cu
// The throughputs are the inputs of the multiplier-bound figures in docs/benchmarks.md.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "ec/xyzz.cuh"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

// The product a chain or a pair applies: this build's operator* (or square) ...
template <class F, bool SQR>
struct Product {
    __device__ __forceinline__ static F apply(const F& x, const F& y) { return SQR ? x.sqr() : x * y; }
};

template <class F, int ILP, class Op>
__global__ void mul_chain(F* data, uint32_t iters) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    F x[ILP];
    for (int k = 0; k < ILP; k++) x[k] = data[t * ILP + k];
    F y = data[(t * ILP + ILP) % (gridDim.x * blockDim.x * ILP)];
    for (uint32_t i = 0; i < iters; i++)
#pragma unroll
        for (int k = 0; k < ILP; k++) x[k] = Op::apply(x[k], y);
    for (int k = 0; k < ILP; k++) data[t * ILP + k] = x[k];
}

__global__ void madd_chain(const G1A* pts, uint32_t npts, G1X* out, uint32_t iters) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    G1X acc = G1X::from_affine(pts[t % npts]);
    for (uint32_t i = 0; i < iters; i++) acc = acc.add_affine(pts[(t + 7 * i + 1) % npts]);
    out[t] = acc;
}

template <class F, class Op>
__global__ void mul_pairs(const F* a, const F* b, F* out, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = Op::apply(a[i], b[i]);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next32() { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (uint32_t)rng; }

template <class F>
static std::vector<F> random_elems(size_t n, uint32_t top_mask) {
    std::vector<F> v(n);
    for (auto& e : v) { for (int i = 0; i < F::N; i++) e.v[i] = next32(); e.v[F::N - 1] &= top_mask; }
    return v;
}

template <class F>
static uint64_t checksum_pairs(uint32_t top_mask, const uint32_t* pm1, bool sqr) {
    const uint32_t n = 1 << 20;
    rng = 0x9e3779b97f4a7c15ull;  // the same inputs for every checksum of a field
    auto a = random_elems<F>(n, top_mask), b = random_elems<F>(n, top_mask);
    // edge values: 0, 1, p - 1 on both sides
    for (int i = 0; i < 9; i++) {
        F* xs[2] = {&a[i], &b[i]};
        int sel[2] = {i % 3, i / 3};
        for (int s = 0; s < 2; s++) {
            for (int k = 0; k < F::N; k++) xs[s]->v[k] = sel[s] == 0 ? 0 : sel[s] == 1 ? (k == 0) : pm1[k];
        }
    }
    F *da, *db, *dout;
    CK(cudaMalloc(&da, n * sizeof(F))); CK(cudaMalloc(&db, n * sizeof(F))); CK(cudaMalloc(&dout, n * sizeof(F)));
    CK(cudaMemcpy(da, a.data(), n * sizeof(F), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b.data(), n * sizeof(F), cudaMemcpyHostToDevice));
    const uint32_t grid = n / 256;
    if (sqr) mul_pairs<F, Product<F, true>><<<grid, 256>>>(da, db, dout, n);
    else mul_pairs<F, Product<F, false>><<<grid, 256>>>(da, db, dout, n);
    CK(cudaDeviceSynchronize());
    std::vector<F> out(n);
    CK(cudaMemcpy(out.data(), dout, n * sizeof(F), cudaMemcpyDeviceToHost));
    uint64_t h = 1469598103934665603ull;
    for (auto& e : out) for (int k = 0; k < F::N; k++) { h ^= e.v[k]; h *= 1099511628211ull; }
    cudaFree(da); cudaFree(db); cudaFree(dout);
    return h;
}

// Best of 5 timed launches of `run(iters)` after a warm-up, as `unit` (n per iteration)
// per second.
template <class Run>
static double time_best(const char* name, const char* unit, size_t n, uint32_t iters, Run run) {
    run(8u);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    float best = 1e30f;
    for (int r = 0; r < 5; r++) {
        cudaEventRecord(e0);
        run(iters);
        cudaEventRecord(e1);
        CK(cudaEventSynchronize(e1));
        float ms; cudaEventElapsedTime(&ms, e0, e1);
        if (ms < best) best = ms;
    }
    double rate = (double)n * iters / (best * 1e-3);
    printf("%-28s %.3e %s/s  (%.2f ms)\n", name, rate, unit, best);
    return rate;
}

template <class F, int ILP, class Op = Product<F, false>>
static double bench_mul(const char* name, uint32_t top_mask) {
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const uint32_t threads = 256, blocks = sms * 8, iters = 512;
    size_t n = (size_t)blocks * threads * ILP;
    auto h = random_elems<F>(n, top_mask);
    F* d; CK(cudaMalloc(&d, n * sizeof(F)));
    CK(cudaMemcpy(d, h.data(), n * sizeof(F), cudaMemcpyHostToDevice));
    double rate = time_best(name, "products", n, iters, [&](uint32_t it) { mul_chain<F, ILP, Op><<<blocks, threads>>>(d, it); });
    cudaFree(d);
    return rate;
}

int main() {
    cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
    printf("products of kernels/ff/field.cuh on %s\n", p.name);
    const uint32_t fq_pm1[12] = {0xffffaaaa, 0xb9feffff, 0xb153ffff, 0x1eabfffe, 0xf6b0f624, 0x6730d2a0,
                                 0xf38512bf, 0x64774b84, 0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
    const uint32_t fr_pm1[8] = {0x00000000, 0xffffffff, 0xfffe5bfe, 0x53bda402,
                                0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
    for (int sq = 0; sq < 2; sq++) {
        printf("checksum Fq %s %016llx\n", sq ? "sqr" : "mul", (unsigned long long)checksum_pairs<Fq>(0x0fffffff, fq_pm1, sq));
        printf("checksum Fr %s %016llx\n", sq ? "sqr" : "mul", (unsigned long long)checksum_pairs<Fr>(0x3fffffff, fr_pm1, sq));
    }
    bench_mul<Fq, 2>("Fq product, ILP 2", 0x0fffffff);
    bench_mul<Fq, 4>("Fq product, ILP 4", 0x0fffffff);
    bench_mul<Fr, 4>("Fr product, ILP 4", 0x3fffffff);
    bench_mul<Fr, 8>("Fr product, ILP 8", 0x3fffffff);
    bench_mul<Fq, 4, Product<Fq, true>>("Fq square, ILP 4", 0x0fffffff);
    bench_mul<Fr, 4, Product<Fr, true>>("Fr square, ILP 4", 0x3fffffff);
    // G1 mixed additions over valid points are not needed for a throughput figure: the
    // formulas' cost does not depend on the values (no doubling/identity case is hit for
    // random field elements).
    {
        int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        const uint32_t threads = 128, blocks = sms * 6, iters = 256, npts = 1 << 16;
        auto h = random_elems<Fq>(2 * npts, 0x0fffffff);
        G1A* dp; G1X* dout;
        CK(cudaMalloc(&dp, npts * sizeof(G1A))); CK(cudaMalloc(&dout, blocks * threads * sizeof(G1X)));
        CK(cudaMemcpy(dp, h.data(), npts * sizeof(G1A), cudaMemcpyHostToDevice));
        time_best("G1 XYZZ += affine", "additions", (size_t)blocks * threads, iters,
                  [&](uint32_t it) { madd_chain<<<blocks, threads>>>(dp, npts, dout, it); });
    }
    return 0;
}
