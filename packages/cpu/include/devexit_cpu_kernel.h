/*
 * devexit_cpu_kernel.h — the C ABI of @devexit/cpu kernels (version 1).
 *
 * A kernel is a C function exported from a shared object:
 *
 *   void my_kernel(uint64_t begin, uint64_t end, const devexit_cpu_arg_v1 *args, uint32_t nargs);
 *
 * A launch with grid g runs the index range [0, g) (a 2D/3D grid is flattened to x*y*z) split into
 * chunks [begin, end) that run in parallel on the device's worker threads, in no given order.
 * args are the launch arguments in order: buffers as pointer + size in bytes, scalars by value.
 * The kernel must stay inside the buffers it is given (check against size) and must not keep
 * pointers past its return. It runs on a device thread: no JS, no N-API, no blocking on the JS
 * thread. Load one with device.loadKernel('/path/libk.so', 'my_kernel'): the object is dlopen'ed
 * and never unloaded.
 *
 * Build: cc -shared -fPIC -O2 -o libk.so k.c -I<@devexit/cpu>/include
 */
#ifndef DEVEXIT_CPU_KERNEL_H
#define DEVEXIT_CPU_KERNEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DEVEXIT_CPU_KERNEL_ABI 1u

typedef enum devexit_cpu_arg_kind {
  DEVEXIT_CPU_ARG_BUFFER = 1,
  DEVEXIT_CPU_ARG_U32 = 2,
  DEVEXIT_CPU_ARG_I32 = 3,
  DEVEXIT_CPU_ARG_F32 = 4
} devexit_cpu_arg_kind;

typedef struct devexit_cpu_arg_v1 {
  uint32_t kind; /* a devexit_cpu_arg_kind */
  uint32_t reserved;
  union {
    struct {
      void *data;
      uint64_t size; /* bytes */
    } buffer;
    uint32_t u32;
    int32_t i32;
    float f32;
  } v;
} devexit_cpu_arg_v1;

typedef void (*devexit_cpu_kernel_fn_v1)(uint64_t begin, uint64_t end, const devexit_cpu_arg_v1 *args,
                                         uint32_t nargs);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DEVEXIT_CPU_KERNEL_H */
