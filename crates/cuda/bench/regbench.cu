// Host-registration micro-benchmark: how fast the driver page-locks a partition-sized host
// buffer in place (cudaHostRegister in 64 MiB pieces, as crates/cuda/src/pinned.rs does),
// for ordinary 4 KiB pages and for transparent huge pages (madvise MADV_HUGEPAGE before
// the first write), against a pinned allocation (cudaHostAlloc). Also the copy speed from
// each and the unregistration time. Prints the host's THP settings first.
// Build: nvcc -O3 -std=c++17 -o regbench regbench.cu   Run: regbench [GiB, default 4]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static void show(const char* path) {
    FILE* f = fopen(path, "r");
    char line[256] = "(unreadable)";
    if (f) {
        if (!fgets(line, sizeof line, f)) strcpy(line, "(empty)\n");
        fclose(f);
    }
    printf("%s: %s", path, line);
}

static long anon_huge_kib() {
    FILE* f = fopen("/proc/self/smaps_rollup", "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "AnonHugePages: %ld kB", &kib) == 1) break;
    fclose(f);
    return kib;
}

static const size_t PIECE = 64ull << 20;

// Registers [p, p + bytes) piece by piece; returns seconds, and the longest piece in ms.
static double register_pieces(char* p, size_t bytes, double* worst_ms) {
    double t0 = now();
    *worst_ms = 0;
    for (size_t off = 0; off < bytes; off += PIECE) {
        size_t len = bytes - off < PIECE ? bytes - off : PIECE;
        double t = now();
        CK(cudaHostRegister(p + off, len, cudaHostRegisterPortable));
        double ms = (now() - t) * 1e3;
        if (ms > *worst_ms) *worst_ms = ms;
    }
    return now() - t0;
}

static double unregister_pieces(char* p, size_t bytes) {
    double t0 = now();
    for (size_t off = 0; off < bytes; off += PIECE) CK(cudaHostUnregister(p + off));
    return now() - t0;
}

// Copies in pieces (a registered piece cannot be crossed by one copy), timed once warm.
static double copy_gbps(void* dev, const char* host, size_t bytes, cudaStream_t s) {
    double t = 0;
    for (int round = 0; round < 2; round++) {
        t = now();
        for (size_t off = 0; off < bytes; off += PIECE) {
            size_t len = bytes - off < PIECE ? bytes - off : PIECE;
            CK(cudaMemcpyAsync((char*)dev + off, host + off, len, cudaMemcpyHostToDevice, s));
        }
        CK(cudaStreamSynchronize(s));
    }
    return bytes / (now() - t) / 1e9;
}

int main(int argc, char** argv) {
    double gib = argc > 1 ? atof(argv[1]) : 4.0;
    size_t bytes = (size_t)(gib * (1ull << 30));
    bytes -= bytes % PIECE;
    show("/sys/kernel/mm/transparent_hugepage/enabled");
    show("/sys/kernel/mm/transparent_hugepage/defrag");
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    void* dev;
    CK(cudaMalloc(&dev, bytes));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    double gb = bytes / 1e9;
    printf("buffer %.2f GB, pieces of %zu MiB\n", gb, PIECE >> 20);
    for (int huge = 0; huge < 2; huge++) {
        char* p = (char*)mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) { printf("mmap failed\n"); return 1; }
        if (huge && madvise(p, bytes, MADV_HUGEPAGE) != 0) printf("madvise(MADV_HUGEPAGE) failed\n");
        long before = anon_huge_kib();
        double t = now();
        memset(p, 1, bytes);
        double fill = now() - t;
        long thp = anon_huge_kib() - before;
        double pageable = copy_gbps(dev, p, bytes, s);
        double worst;
        double reg = register_pieces(p, bytes, &worst);
        double pinned = copy_gbps(dev, p, bytes, s);
        double unreg = unregister_pieces(p, bytes);
        // A refilled buffer (the steady state of reused partition buffers): written again,
        // then registered again.
        memset(p, 2, bytes);
        double worst2;
        double reg2 = register_pieces(p, bytes, &worst2);
        unregister_pieces(p, bytes);
        printf("%-10s first write %.2f s (%.1f GB/s, THP %.1f GB) | pageable copy %.1f GB/s | "
               "register %.3f s = %.2f s/GB (worst piece %.1f ms) | pinned copy %.1f GB/s | "
               "unregister %.3f s | re-register after refill %.3f s = %.2f s/GB (worst %.1f ms)\n",
               huge ? "huge" : "4k", fill, gb / fill, thp / 1e6 * 1.024, pageable, reg, reg / gb, worst,
               pinned, unreg, reg2, reg2 / gb, worst2);
        munmap(p, bytes);
    }
    char* h;
    double t = now();
    CK(cudaHostAlloc((void**)&h, bytes, cudaHostAllocPortable));
    double alloc = now() - t;
    t = now();
    memset(h, 1, bytes);
    double fill = now() - t;
    double pinned = copy_gbps(dev, h, bytes, s);
    t = now();
    CK(cudaFreeHost(h));
    printf("%-10s cudaHostAlloc %.3f s = %.2f s/GB | first write %.2f s | pinned copy %.1f GB/s | free %.3f s\n",
           "hostalloc", alloc, alloc / gb, fill, pinned, now() - t);
    return 0;
}
