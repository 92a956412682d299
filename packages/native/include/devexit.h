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
  /* Who runs the close, and how:
   * - "explicit": closeServices() or device.close() on a live JS thread: non-blocking
   *   thread-safe-function calls may settle dropped work.
   * - "shutdown" (DEVEXIT_LAYER_SHUTDOWN): @devexit/core's shutdown(), on demand or on an opt-in
   *   signal, run on a helper thread while the JS thread stays free. JS is alive: finish the
   *   queued work by deadline_ns, delivering its completions as usual; then drop what is left
   *   (at once if is_exiting() turns 1 meanwhile: an exit began, or a second signal) and close
   *   within close_deadline_ns() counted from then, as at exit. On success write into error what
   *   the drain did: DEVEXIT_NOTE_DRAINED, or DEVEXIT_NOTE_DROPPED followed by the number of
   *   queued commands dropped ("dropped 37"). A close that does not know this layer closes by
   *   deadline_ns as at exit and writes nothing.
   * - an exit layer ("js-exit", "tls", "atexit", ...): nothing may call into JS any more. */
  const char *layer;
} devexit_close_call_v1;

#define DEVEXIT_LAYER_SHUTDOWN "shutdown"
#define DEVEXIT_NOTE_DRAINED "drained"
#define DEVEXIT_NOTE_DROPPED "dropped "

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

  /* 1 once the process began closing services for exit: start nothing new. While shutdown()
   * drains it stays 0 (JS is alive: completions must flow), but register_close already refuses
   * with DEVEXIT_ERR_EXITING. */
  int (*is_exiting)(void);

  /* Call after a vendor runtime's first successful use (after cuInit, hipInit...). Runtimes
   * register their teardown lazily at first use; this registers a late exit handler after it, so
   * that ours runs first even for exit() called on a non-main thread. Once per runtime name. */
  void (*runtime_initialised)(const char *runtime);

  /* Process-wide device type for a backend name: > 0, or a negative status. */
  int (*device_type)(const char *backend_name);

  /* The deadline for a close that starts now, in CLOCK_MONOTONIC nanoseconds: now plus the one
   * configured timeout (configure({ timeoutMs }) / DEVEXIT_TIMEOUT_MS, 1..2147483647 ms). Explicit closes
   * (device.close()) use it, so that they are bounded exactly as exit closes are. */
  int64_t (*close_deadline_ns)(void);
} devexit_registry_v1;

/* Exported by @devexit/native's addon under this name. */
typedef int (*devexit_get_registry_fn)(uint32_t abi_version, const devexit_registry_v1 **out);
#define DEVEXIT_GET_REGISTRY_SYMBOL "devexit_get_registry"

#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---- Locating the registry ----
 * @devexit/native's addon exports devexit_get_registry; Node loads addons privately
 * (RTLD_LOCAL), so a backend finds it among the loaded modules: ELF platforms through
 * dl_iterate_phdr, macOS through dyld's image list, Windows through a module snapshot. Only
 * modules already loaded are considered; nothing is ever loaded. Compiles as C11 and C++17 with no
 * feature macros (no _GNU_SOURCE needed). */
#if defined(__linux__) || defined(__FreeBSD__)
#define DEVEXIT__LOOKUP_ELF 1
#include <dlfcn.h>
#include <link.h>
#elif defined(__APPLE__)
#define DEVEXIT__LOOKUP_DYLD 1
#include <dlfcn.h>
#include <mach-o/dyld.h>
#elif defined(_WIN32)
#define DEVEXIT__LOOKUP_WIN32 1
#include <windows.h>
#include <tlhelp32.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Copies a path for messages (path may be NULL). */
static inline void devexit__copy_path(char *path, size_t path_size, const char *from) {
  if (!path || !path_size) return;
  snprintf(path, path_size, "%s", from ? from : "");
}

#if defined(DEVEXIT__LOOKUP_ELF)
#if defined(__GLIBC__) && !defined(__USE_GNU)
/* glibc declares dl_iterate_phdr only under _GNU_SOURCE, which would have to be defined before the
 * includer's first libc header. Declare it here and read dlpi_name, the second field of
 * struct dl_phdr_info (an address-sized dlpi_addr comes first: a stable ABI). */
struct dl_phdr_info;
extern int dl_iterate_phdr(int (*callback)(struct dl_phdr_info *, size_t, void *), void *data);
typedef struct devexit__phdr_head {
  uintptr_t addr;
  const char *name;
} devexit__phdr_head;
#define DEVEXIT__PHDR_NAME(info) (((const devexit__phdr_head *)(const void *)(info))->name)
#else
#define DEVEXIT__PHDR_NAME(info) ((info)->dlpi_name)
#endif

typedef struct devexit__names {
  char **names;
  size_t count, capacity;
} devexit__names;

/* Only collects names: calling dlopen inside dl_iterate_phdr's callback would take the loader's
 * locks in the opposite order to a concurrent dlopen. */
static inline int devexit__phdr_cb(struct dl_phdr_info *info, size_t size, void *data) {
  devexit__names *st = (devexit__names *)data;
  const char *name = DEVEXIT__PHDR_NAME(info);
  size_t len;
  char *copy;
  (void)size;
  if (!name || !strstr(name, ".node")) return 0;
  if (st->count == st->capacity) {
    size_t capacity = st->capacity ? st->capacity * 2 : 16;
    char **grown = (char **)realloc(st->names, capacity * sizeof *grown);
    if (!grown) return 1;
    st->names = grown;
    st->capacity = capacity;
  }
  len = strlen(name);
  copy = (char *)malloc(len + 1);
  if (!copy) return 1;
  memcpy(copy, name, len + 1);
  st->names[st->count++] = copy;
  return 0;
}
#endif

/* The devexit_get_registry of a loaded module, skipping `skip` (NULL: none); its path into path. */
static inline devexit_get_registry_fn devexit__lookup(devexit_get_registry_fn skip, char *path, size_t path_size) {
  devexit_get_registry_fn found = NULL;
#if defined(DEVEXIT__LOOKUP_ELF)
  devexit__names st = {NULL, 0, 0};
  size_t i;
  dl_iterate_phdr(devexit__phdr_cb, &st);
  for (i = 0; i < st.count; i++) {
    if (!found) {
      /* RTLD_NOLOAD: only objects already loaded; never loads anything. */
      void *h = dlopen(st.names[i], RTLD_LAZY | RTLD_NOLOAD);
      if (h) {
        devexit_get_registry_fn fn;
        void *sym = dlsym(h, DEVEXIT_GET_REGISTRY_SYMBOL);
        memcpy(&fn, &sym, sizeof fn); /* object to function pointer, as POSIX dlsym intends */
        dlclose(h);                   /* drops only the reference NOLOAD took */
        if (fn && fn != skip) {
          found = fn;
          devexit__copy_path(path, path_size, st.names[i]);
        }
      }
    }
    free(st.names[i]);
  }
  free(st.names);
#elif defined(DEVEXIT__LOOKUP_DYLD)
  uint32_t i, n = _dyld_image_count();
  for (i = 0; i < n && !found; i++) {
    const char *name = _dyld_get_image_name(i);
    void *h;
    if (!name || !strstr(name, ".node")) continue;
    h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) continue;
    {
      devexit_get_registry_fn fn;
      void *sym = dlsym(h, DEVEXIT_GET_REGISTRY_SYMBOL);
      memcpy(&fn, &sym, sizeof fn);
      dlclose(h);
      if (fn && fn != skip) {
        found = fn;
        devexit__copy_path(path, path_size, name);
      }
    }
  }
#elif defined(DEVEXIT__LOOKUP_WIN32)
  HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPMODULE, GetCurrentProcessId());
  if (snap != INVALID_HANDLE_VALUE) {
    MODULEENTRY32W me;
    BOOL ok;
    me.dwSize = sizeof me;
    for (ok = Module32FirstW(snap, &me); ok && !found; ok = Module32NextW(snap, &me)) {
      devexit_get_registry_fn fn =
          (devexit_get_registry_fn)(void (*)(void))GetProcAddress(me.hModule, DEVEXIT_GET_REGISTRY_SYMBOL);
      if (fn && fn != skip) {
        found = fn;
        if (path && path_size &&
            !WideCharToMultiByte(CP_UTF8, 0, me.szExePath, -1, path, (int)path_size, NULL, NULL))
          path[0] = 0;
      }
    }
    CloseHandle(snap);
  }
#else
  (void)skip;
#endif
  if (!found) devexit__copy_path(path, path_size, "");
  return found;
}

/* Finds the loaded registry and checks its ABI. On failure writes a readable message into err
 * (may be NULL) and returns a negative status. */
static inline int devexit_find_registry(uint32_t abi_version, const devexit_registry_v1 **out, char *err,
                                        size_t err_size) {
  devexit_get_registry_fn fn = devexit__lookup(NULL, NULL, 0);
  int rc;
  *out = NULL;
  if (!fn) {
#if defined(DEVEXIT__LOOKUP_ELF) || defined(DEVEXIT__LOOKUP_DYLD) || defined(DEVEXIT__LOOKUP_WIN32)
    if (err && err_size)
      snprintf(err, err_size,
               "devexit: the registry is not loaded: require('@devexit/native') before loading this addon");
#else
    if (err && err_size) snprintf(err, err_size, "devexit: finding the registry is not supported on this platform");
#endif
    return DEVEXIT_ERR_NOT_LOADED;
  }
  rc = fn(abi_version, out);
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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DEVEXIT_H */
