// The registry's second table: what only @devexit/native's own binding (of any installed copy)
// calls. Backends never see it: their contract is devexit_registry_v1 in devexit.h. Versioned on
// its own, since two copies of @devexit/native of different versions may share one registry.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "devexit.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DEVEXIT_HOST_ABI_VERSION 1u

typedef struct devexit_host_v1 {
  uint32_t abi_version; /* first, always */
  uint32_t struct_size;

  /* Close everything now. layer names the caller in the report ("js-exit", "explicit", ...).
   * mark_exiting: also refuse later registrations. Returns the number of closes not ok. */
  int (*close_all)(const char *layer, int mark_exiting);
  /* timeout_ms < 0 leaves it unchanged; on_timeout: 0 = _exit (skip library teardown),
   * 1 = warn and continue, < 0 unchanged. */
  void (*configure)(int64_t timeout_ms, int on_timeout);
  /* The report as JSON lines into buf; returns the length needed (without NUL). */
  size_t (*report_json)(char *buf, size_t size);
  /* Arms the main-thread guard if called on the main thread; returns 1 if armed now or before. */
  int (*arm_main_thread)(const char *by);
  /* JSON object describing which layers are armed and by whom; returns the length needed. */
  size_t (*state_json)(char *buf, size_t size);
  /* Address of the 32-bit exiting flag (an atomic that only ever goes 0 -> 1). */
  const volatile uint32_t *exiting_flag;
  /* Exit code to keep if a deadline forces _exit from a layer that cannot see it. */
  void (*set_exit_code)(int code);
} devexit_host_v1;

typedef int (*devexit_get_host_fn)(uint32_t abi_version, const devexit_host_v1 **out);
#define DEVEXIT_GET_HOST_SYMBOL "devexit_get_host"

#ifdef __cplusplus
} /* extern "C" */
#endif
