/* A @devexit/cpu user kernel for the bench: spins args[0] microseconds (u32), once per launch
 * (the first chunk only), touching no memory: a long command with nothing to tear down. */
#include <time.h>

#include "devexit_cpu_kernel.h"

void devexit_bench_spin(uint64_t begin, uint64_t end, const devexit_cpu_arg_v1 *args, uint32_t nargs) {
  (void)end;
  if (begin != 0 || nargs < 1 || args[0].kind != DEVEXIT_CPU_ARG_U32) return;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const long long us = args[0].v.u32;
  do {
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000000LL + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}
