/*
 * The baseline of `pnpm test:device`'s figures: the same work through raw driver calls, with
 * no devexit (libcuda by dlopen, as the backend loads it). Built by scripts/bench-device.mjs.
 *   raw_driver <ptx> launches <n>   n launches of fill_u32 (one element) on a stream, then a
 *                                   synchronize; prints "launches_per_s <x>" and "sync_us <y>"
 *   raw_driver <ptx> exit <us>      a kernel spinning <us> in flight, then exit(0); prints
 *                                   "busy t=<ms since the epoch>" first
 *   raw_driver <ptx> queued <us> <n>  the same with n more spinning kernels queued behind it
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef void *Ptr;
typedef unsigned long long Dptr;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

#define SYM(name, ...) CUresult (*name)(__VA_ARGS__) = (CUresult(*)(__VA_ARGS__))dlsym(lib, #name)
#define CHECK(call)                                                        \
  do {                                                                     \
    CUresult r_ = (call);                                                  \
    if (r_) {                                                              \
      fprintf(stderr, "raw_driver: %s failed: %d\n", #call, r_);           \
      return 1;                                                            \
    }                                                                      \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: raw_driver <ptx> launches <n> | exit <us>\n");
    return 2;
  }
  const char *libname = getenv("DEVEXIT_CUDA_LIBRARY");
  void *lib = dlopen(libname && *libname ? libname : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "raw_driver: %s\n", dlerror());
    return 1;
  }
  SYM(cuInit, unsigned);
  SYM(cuDeviceGet, int *, int);
  SYM(cuDevicePrimaryCtxRetain, Ptr *, int);
  SYM(cuCtxSetCurrent, Ptr);
  SYM(cuStreamCreate, Ptr *, unsigned);
  SYM(cuStreamSynchronize, Ptr);
  SYM(cuModuleLoadData, Ptr *, const void *);
  SYM(cuModuleGetFunction, Ptr *, Ptr, const char *);
  SYM(cuMemAlloc_v2, Dptr *, size_t);
  SYM(cuLaunchKernel, Ptr, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Ptr,
                                   void **, void **);
  if (!cuInit || !cuDeviceGet || !cuDevicePrimaryCtxRetain || !cuCtxSetCurrent || !cuStreamCreate ||
      !cuStreamSynchronize || !cuModuleLoadData || !cuModuleGetFunction || !cuMemAlloc_v2 || !cuLaunchKernel) {
    fprintf(stderr, "raw_driver: a driver symbol is missing\n");
    return 1;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 1;
  static char ptx[1 << 20];
  size_t len = fread(ptx, 1, sizeof ptx - 1, f);
  fclose(f);
  ptx[len] = 0;

  int dev;
  Ptr ctx, stream, mod, fill, spin;
  Dptr buf;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuStreamCreate(&stream, 1));
  CHECK(cuModuleLoadData(&mod, ptx));
  CHECK(cuModuleGetFunction(&fill, mod, "fill_u32"));
  CHECK(cuModuleGetFunction(&spin, mod, "spin"));
  CHECK(cuMemAlloc_v2(&buf, 4));

  if (strcmp(argv[2], "launches") == 0) {
    long n = atol(argv[3]);
    unsigned value = 7, count = 1;
    void *args[] = {&buf, &value, &count};
    for (int i = 0; i < 1000; i++) CHECK(cuLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, stream, args, NULL));
    CHECK(cuStreamSynchronize(stream));
    double t = now_ms();
    for (long i = 0; i < n; i++) CHECK(cuLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, stream, args, NULL));
    CHECK(cuStreamSynchronize(stream));
    double ms = now_ms() - t;
    t = now_ms();
    for (int i = 0; i < 1000; i++) CHECK(cuStreamSynchronize(stream));
    /* 1000 synchronizes: their total milliseconds are microseconds each */
    printf("launches_per_s %.0f\nsync_us %.2f\n", n / (ms / 1e3), (now_ms() - t));
    return 0;
  }
  unsigned us = (unsigned)atol(argv[3]);
  void *args[] = {&us};
  CHECK(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL));
  if (strcmp(argv[2], "queued") == 0) {
    long n = argc > 4 ? atol(argv[4]) : 1000;
    for (long i = 0; i < n; i++) CHECK(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL));
    usleep(20000); /* as the devexit child: exit 20 ms into the running kernel */
  }
  struct timeval tv;
  gettimeofday(&tv, NULL);
  printf("busy t=%.0f\n", tv.tv_sec * 1e3 + tv.tv_usec / 1e3);
  fflush(stdout);
  exit(0);
}
