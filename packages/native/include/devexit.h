/*
 * devexit.h — the C ABI of @devexit/native's process-wide exit registry.
 *
 * A backend addon registers one close per (device, service type). The registry runs every
 * close exactly once, before native runtimes tear themselves down at process exit, on a thread
 * that is not the service's own, devices in parallel, bounded by a deadline.
 *
 * Find the registry with devexit_find_registry() (below) after @devexit/native has been loaded
 * (require('@devexit/native') before loading the backend addon). The table is versioned: it
 * only ever grows at its end, and a backend built against a newer ABI than the loaded registry
 * gets DEVEXIT_ERR_ABI with a readable message instead of a crash.
 *
 * Rules for close functions (see DESIGN.md): pure native code only (no N-API, no JS, no
 * thread-safe-function calls: V8 and libuv may already be gone); idempotent; bounded by
 * call->deadline_ns; never called on the service's own thread.
 */
#ifndef DEVEXIT_H
#define DEVEXIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DEVEXIT_ABI_VERSION 1u

/* Status codes. Non-negative: success of some kind. Negative: refused. */
#define DEVEXIT_OK 0
#define DEVEXIT_ALREADY_REGISTERED 1 /* same key registered before: the first close stays */
#define DEVEXIT_NOT_FOUND 2          /* forget: nothing registered, or its close already began */
#define DEVEXIT_ERR_EXITING (-1)     /* the process is exiting: no new service may start */
#define DEVEXIT_ERR_INVALID (-2)     /* bad argument (null close, empty or long service name) */
#define DEVEXIT_ERR_ABI (-3)         /* requested ABI is newer than this registry */
#define DEVEXIT_ERR_NOMEM (-4)
#define DEVEXIT_ERR_NOT_LOADED (-5) /* devexit_find_registry: @devexit/native is not loaded */

#define DEVEXIT_MAX_NAME 64 /* bytes, without the terminating NUL */

typedef struct devexit_device_id {
  uint16_t type; /* from device_type("cuda"): distinct per backend name, process-wide */
  uint32_t index;
} devexit_device_id;

/* What a close is told. error points to error_size bytes for a message on failure. */
typedef struct devexit_close_call_v1 {
  devexit_device_id device;
  const char *service;
  int64_t deadline_ns; /* CLOCK_MONOTONIC nanoseconds: finish (or give up) by then */
  char *error;
  size_t error_size;
  /* Who runs the close: "explicit" (closeServices() on the JS thread: the JS environment is
   * alive and non-blocking thread-safe-function calls may settle dropped work), or an exit layer
   * ("js-exit", "tls", "atexit", ...): nothing may call into JS any more. */
  const char *layer;
} devexit_close_call_v1;

/* Returns 0 on success; anything else is a failure, described in call->error. */
typedef int (*devexit_close_fn)(void *ctx, const devexit_close_call_v1 *call);

/* What backends call: the whole contract between a backend addon and the registry. */
typedef struct devexit_registry_v1 {
  uint32_t abi_version; /* first, always */
  uint32_t struct_size; /* sizeof the table the registry provides */
  const char *implementation;

  /* Register close for (device, service). DEVEXIT_OK, DEVEXIT_ALREADY_REGISTERED (no-op),
   * DEVEXIT_ERR_EXITING, DEVEXIT_ERR_INVALID. O(1). Thread-safe. */
  int (*register_close)(devexit_device_id device, const char *service, devexit_close_fn close, void *ctx);

  /* After an explicit close by the user: drop the registration so exit skips it.
   * DEVEXIT_NOT_FOUND means the exit close has already taken it: the backend's close runs or ran
   * (make it idempotent and wait on it). */
  int (*forget)(devexit_device_id device, const char *service);

  /* 1 once the process began closing services for exit: start nothing new. */
  int (*is_exiting)(void);

  /* Call after a vendor runtime's first successful use (after cuInit, hipInit...). Runtimes
   * register their teardown lazily at first use; this registers a late exit handler after it, so
   * that ours runs first even for exit() called on a non-main thread. Once per runtime name. */
  void (*runtime_initialised)(const char *runtime);

  /* Process-wide device type for a backend name: > 0, or a negative status. */
  int (*device_type)(const char *backend_name);

  /* The deadline for a close that starts now, in CLOCK_MONOTONIC nanoseconds: now plus the one
   * configured timeout (configure({ timeoutMs }) / DEVEXIT_TIMEOUT_MS). Explicit closes
   * (device.close()) use it, so that they are bounded exactly as exit closes are. */
  int64_t (*close_deadline_ns)(void);
} devexit_registry_v1;

/* Exported by @devexit/native's addon under this name. */
typedef int (*devexit_get_registry_fn)(uint32_t abi_version, const devexit_registry_v1 **out);
#define DEVEXIT_GET_REGISTRY_SYMBOL "devexit_get_registry"

#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---- Locating the registry (Linux/glibc and other ELF dl_iterate_phdr platforms) ---- */
#if defined(__linux__) || defined(__FreeBSD__)
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEVEXIT__MAX_CANDIDATES 64

typedef struct devexit__find_state {
  char names[DEVEXIT__MAX_CANDIDATES][512];
  int count;
} devexit__find_state;

/* Only collects names: calling dlopen inside dl_iterate_phdr's callback would take the loader's
 * locks in the opposite order to a concurrent dlopen. */
static int devexit__phdr_cb(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  devexit__find_state *st = (devexit__find_state *)data;
  const char *name = info->dlpi_name;
  if (!name || !strstr(name, ".node") || strlen(name) >= sizeof st->names[0]) return 0;
  if (st->count < DEVEXIT__MAX_CANDIDATES) strcpy(st->names[st->count++], name);
  return 0;
}

static inline devexit_get_registry_fn devexit__lookup(void) {
  /* heap: 32 KiB is a lot for a small thread stack */
  devexit__find_state *st = (devexit__find_state *)calloc(1, sizeof *st);
  devexit_get_registry_fn fn = NULL;
  if (!st) return NULL;
  dl_iterate_phdr(devexit__phdr_cb, st);
  for (int i = 0; i < st->count && !fn; i++) {
    /* RTLD_NOLOAD: only objects already loaded; never loads anything. */
    void *h = dlopen(st->names[i], RTLD_LAZY | RTLD_NOLOAD);
    if (!h) continue;
    fn = (devexit_get_registry_fn)dlsym(h, DEVEXIT_GET_REGISTRY_SYMBOL);
    dlclose(h); /* drops only the reference NOLOAD took */
  }
  free(st);
  return fn;
}

/* Finds the loaded registry and checks its ABI. On failure writes a readable message into err
 * (may be NULL) and returns a negative status. */
static inline int devexit_find_registry(uint32_t abi_version, const devexit_registry_v1 **out, char *err,
                                        size_t err_size) {
  *out = NULL;
  devexit_get_registry_fn fn = devexit__lookup();
  if (!fn) {
    if (err && err_size)
      snprintf(err, err_size,
               "devexit: the registry is not loaded: require('@devexit/native') before loading this addon");
    return DEVEXIT_ERR_NOT_LOADED;
  }
  int rc = fn(abi_version, out);
  if (rc == DEVEXIT_ERR_ABI && err && err_size) {
    const devexit_registry_v1 *have = NULL;
    fn(1, &have);
    snprintf(err, err_size,
             "devexit: this addon needs registry ABI %u but the loaded @devexit/native provides ABI %u (%s); "
             "upgrade @devexit/native",
             (unsigned)abi_version, have ? (unsigned)have->abi_version : 0u,
             have && have->implementation ? have->implementation : "unknown");
  } else if (rc < 0 && err && err_size) {
    snprintf(err, err_size, "devexit: registry lookup failed with status %d", rc);
  }
  return rc;
}
#endif

#endif /* DEVEXIT_H */
