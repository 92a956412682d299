/*
 * The baseline of `pnpm test:device`'s figures for hip: the same work through raw HIP runtime
 * calls, with no devexit (libamdhip64 by dlopen, as the backend loads it; DEVEXIT_HIP_LIBRARY
 * overrides the path, as for the backend). Built by scripts/bench-device.mjs.
 *   raw_hip <code object> launches <n>     n launches of fill_u32 (one element) on a stream, then
 *                                          a synchronize; prints "launches_per_s <x>", "sync_us <y>"
 *   raw_hip <code object> queued <us> <n>  sleep_us(<us>) running and n more queued behind it,
 *                                          then exit(0); prints "busy t=<ms since the epoch>" first
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int hipError_t;
typedef void *Ptr;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

#define SYM(name, ...) hipError_t (*name)(__VA_ARGS__) = (hipError_t(*)(__VA_ARGS__))dlsym(lib, #name)
#define CHECK(call)                                              \
  do {                                                           \
    hipError_t r_ = (call);                                      \
    if (r_) {                                                    \
      fprintf(stderr, "raw_hip: %s failed: %d\n", #call, r_);    \
      return 1;                                                  \
    }                                                            \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: raw_hip <code object> launches <n> | queued <us> <n>\n");
    return 2;
  }
  const char *libname = getenv("DEVEXIT_HIP_LIBRARY");
  void *lib = dlopen(libname && *libname ? libname : "libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libamdhip64.so.5", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "raw_hip: %s\n", dlerror());
    return 1;
  }
  SYM(hipInit, unsigned);
  SYM(hipSetDevice, int);
  SYM(hipStreamCreate, Ptr *);
  SYM(hipStreamSynchronize, Ptr);
  SYM(hipModuleLoadData, Ptr *, const void *);
  SYM(hipModuleGetFunction, Ptr *, Ptr, const char *);
  SYM(hipMalloc, Ptr *, size_t);
  SYM(hipModuleLaunchKernel, Ptr, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Ptr,
      void **, void **);
  if (!hipInit || !hipSetDevice || !hipStreamCreate || !hipStreamSynchronize || !hipModuleLoadData ||
      !hipModuleGetFunction || !hipMalloc || !hipModuleLaunchKernel) {
    fprintf(stderr, "raw_hip: a HIP symbol is missing\n");
    return 1;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 1;
  static char image[16 << 20];
  size_t len = fread(image, 1, sizeof image, f);
  fclose(f);
  if (len == 0) return 1;

  Ptr stream, mod, fill, sleep_us, buf;
  CHECK(hipInit(0));
  CHECK(hipSetDevice(0));
  CHECK(hipStreamCreate(&stream));
  CHECK(hipModuleLoadData(&mod, image));
  CHECK(hipModuleGetFunction(&fill, mod, "fill_u32"));
  CHECK(hipModuleGetFunction(&sleep_us, mod, "sleep_us"));
  CHECK(hipMalloc(&buf, 4));

  if (strcmp(argv[2], "launches") == 0) {
    long n = atol(argv[3]);
    unsigned value = 7, count = 1;
    void *args[] = {&buf, &value, &count};
    for (int i = 0; i < 1000; i++) CHECK(hipModuleLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, stream, args, NULL));
    CHECK(hipStreamSynchronize(stream));
    double t = now_ms();
    for (long i = 0; i < n; i++) CHECK(hipModuleLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, stream, args, NULL));
    CHECK(hipStreamSynchronize(stream));
    double ms = now_ms() - t;
    t = now_ms();
    for (int i = 0; i < 1000; i++) CHECK(hipStreamSynchronize(stream));
    /* 1000 synchronizes: their total milliseconds are microseconds each */
    printf("launches_per_s %.0f\nsync_us %.2f\n", n / (ms / 1e3), (now_ms() - t));
    return 0;
  }
  unsigned us = (unsigned)atol(argv[3]);
  long n = argc > 4 ? atol(argv[4]) : 1000;
  void *args[] = {&us};
  for (long i = 0; i <= n; i++) CHECK(hipModuleLaunchKernel(sleep_us, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL));
  usleep(20000); /* as the devexit child: exit 20 ms into the running kernel */
  struct timeval tv;
  gettimeofday(&tv, NULL);
  printf("busy t=%.0f\n", tv.tv_sec * 1e3 + tv.tv_usec / 1e3);
  fflush(stdout);
  exit(0);
}
