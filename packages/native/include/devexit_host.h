/*
 * The registry's second table: what only @devexit/native's own binding (of any installed copy)
 * calls. Backends never see it: their contract is devexit_registry_v1 in devexit.h. Versioned on
 * its own, since two copies of @devexit/native of different versions may share one registry: the
 * table only grows at its end; a copy checks abi_version (and struct_size) before it uses a field
 * added after version 1, and falls back to the version 1 fields otherwise.
 */
#ifndef DEVEXIT_HOST_H
#define DEVEXIT_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "devexit.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DEVEXIT_HOST_ABI_VERSION 4u

/* Exit layers (bits of devexit_settings_v1.layers). */
#define DEVEXIT_LAYER_JS 1
#define DEVEXIT_LAYER_TLS 2
#define DEVEXIT_LAYER_ATEXIT 4

#define DEVEXIT_ON_TIMEOUT_EXIT 0 /* flush stdio, end the process with its code: skip library teardown */
#define DEVEXIT_ON_TIMEOUT_WARN 1 /* warn and let teardown go on */

#define DEVEXIT_REPORT_OFF 0
#define DEVEXIT_REPORT_TEXT 1
#define DEVEXIT_REPORT_JSON 2

/* Where a settings update comes from. The environment (DEVEXIT_*, parsed by @devexit/core) sets
 * only what still has its default, so the first copy to load decides; configure() always wins. */
#define DEVEXIT_SETTINGS_FROM_ENV 1
#define DEVEXIT_SETTINGS_FROM_API 2

/* Flags of close_from_js. */
#define DEVEXIT_CLOSE_MARK_EXITING 1u /* also refuse later registrations */
#define DEVEXIT_CLOSE_EXIT_CODE 2u    /* exit_code is the code of the exit being closed for */

/* close_async's report: how many closes were not ok, and their report lines (JSON, one per
 * line). Called on the thread that ran the closes. */
typedef void (*devexit_closes_done_fn)(void *ctx, int failures, const char *report_json);

typedef struct devexit_settings_v1 {
  uint32_t struct_size;
  int32_t origin;     /* DEVEXIT_SETTINGS_FROM_* */
  int64_t timeout_ms; /* < 0: unchanged; clamped to 1..2147483647 */
  int32_t on_timeout; /* DEVEXIT_ON_TIMEOUT_*, < 0: unchanged */
  int32_t layers;     /* DEVEXIT_LAYER_* mask, < 0: unchanged */
  int32_t report;     /* DEVEXIT_REPORT_*, < 0: unchanged */
  /* How warnings name the setting: "DEVEXIT_TIMEOUT_MS=500", "configure({ timeoutMs: 500 })".
   * NULL: unchanged. Copied. */
  const char *timeout_source;
  const char *on_timeout_source;
} devexit_settings_v1;

/* What the watchdog watches on a JS thread (host ABI 4): a JS close, an observer of one, the wait
 * for critical sections. Past deadline_ns it prints the close's report line (device.type > 0),
 * then "still running: <what>", then applies the onTimeout policy: 'exit' ends the process by
 * `signal` (> 0), else with exit_code (>= 0); with neither, or 'warn', it only warns. */
typedef struct devexit_watch_v1 {
  uint32_t struct_size;
  const char *layer;
  int32_t exit_code;
  int32_t signal;
  devexit_device_id device;
  const char *service;
  const char *what;
  int64_t deadline_ns; /* absolute, on the registry's monotonic clock (now_ns) */
  /* ---- added later: read only when struct_size covers them ---- */
  /* The JS closes of this thread's run, in the order they run: lines "<type>\t<index>\t<service>\n".
   * NULL: unchanged (a new session without one has none). Copied. */
  const char *queue;
  /* How many of them started (this close included); < 0: unchanged. Where the watchdog ends the
   * process, those not started get their report lines ("not started before the deadline"), as do
   * the native closes still registered. */
  int32_t started;
} devexit_watch_v1;

typedef struct devexit_host_v1 {
  uint32_t abi_version; /* first, always */
  uint32_t struct_size;

  /* ---- host ABI 1 ---- */
  /* Close everything now. layer names the caller in the report ("js-exit", "explicit", ...).
   * mark_exiting: also refuse later registrations. Returns the number of closes not ok. */
  int (*close_all)(const char *layer, int mark_exiting);
  /* timeout_ms < 0 leaves it unchanged; on_timeout: DEVEXIT_ON_TIMEOUT_*, < 0 unchanged. */
  void (*configure)(int64_t timeout_ms, int on_timeout);
  /* The report as JSON lines into buf; returns the length needed (without NUL). */
  size_t (*report_json)(char *buf, size_t size);
  /* Arms the main-thread guard if called on the main thread; returns 1 if armed now or before. */
  int (*arm_main_thread)(const char *by);
  /* JSON object describing which layers are armed and by whom; returns the length needed. */
  size_t (*state_json)(char *buf, size_t size);
  /* Address of the 32-bit exiting word, an atomic that only ever gains bits: non-zero once no
   * new service may start. Bit 0: exiting (is_exiting()); bit 1 (host ABI 3): shutdown() began. */
  const volatile uint32_t *exiting_flag;
  /* Exit code to keep if a deadline forces _exit from a layer that cannot see it. */
  void (*set_exit_code)(int code);

  /* ---- host ABI 2 ---- */
  /* The settings in force for the whole process (see DEVEXIT_SETTINGS_FROM_*). 0 or
   * DEVEXIT_ERR_INVALID. */
  int (*apply_settings)(const devexit_settings_v1 *settings);
  /* close_all for a JS thread (no service runs there: it takes closes itself), inside the JS
   * layer's deadline when one is running. flags: DEVEXIT_CLOSE_*. With DEVEXIT_CLOSE_EXIT_CODE, a
   * deadline ends the process with exit_code per the onTimeout policy in force. */
  int (*close_from_js)(const char *layer, uint32_t flags, int exit_code);
  /* The JS layer runs a JS close: the watchdog bounds it by the deadline. exit_code < 0: an
   * explicit close (warn only). The first call starts the JS layer's deadline. */
  void (*js_close_begin)(const char *layer, int exit_code, devexit_device_id device, const char *service);
  /* That close returned (or was abandoned by a nested exit): 1 if past the deadline. */
  int (*js_close_end)(void);
  /* Warnings not yet emitted in this process, one per line; returns the length needed. Each
   * warning is handed out once. */
  size_t (*take_warnings)(char *buf, size_t size);

  /* ---- host ABI 3: shutdown() ---- */
  /* Refuses new registrations process-wide (register_close answers DEVEXIT_ERR_EXITING, bit 1 of
   * the exiting word) while is_exiting() stays 0: services being drained still deliver their
   * completions to the live JS thread. */
  void (*begin_shutdown)(void);
  /* Takes every registration and runs the closes on a new thread, without blocking the caller:
   * each close gets drain_deadline_ns as call->deadline_ns (layer "shutdown": finish queued work
   * by then), the job as a whole the timeout on top. done runs on that thread once every close
   * returned, unless an exit layer began meanwhile (JS may be going away: then it is never
   * called). DEVEXIT_OK, or DEVEXIT_ERR_NOMEM when no thread could start (done is not called). */
  int (*close_async)(const char *layer, int64_t drain_deadline_ns, devexit_closes_done_fn done, void *ctx);
  /* Ends every drain in progress: is_exiting() turns 1, so draining closes drop what is left. */
  void (*hurry_shutdown)(void);

  /* ---- host ABI 4: a watch of any JS-thread work, the end of the process ---- */
  /* The registry's monotonic clock, for watch deadlines. */
  int64_t (*now_ns)(void);
  /* Starts watching (replaces what this thread watched); the first watch of a session also gives
   * the deadline native closes run from this thread inherit (close_from_js). Copied. */
  void (*watch)(const devexit_watch_v1 *watch);
  /* It ended: 2 if the watchdog reported it at the deadline, 1 if past the deadline, else 0. */
  int (*unwatch)(void);
  /* The JS layer's session ended: the next watch starts a new one. */
  void (*end_watch)(void);
  /* Writes text to stderr, flushes stdio and ends the process now, skipping exit handlers: by
   * `signal` (> 0; its default action restored first), else with `code`. Never returns. */
  void (*end_process)(int code, int signal, const char *text);
} devexit_host_v1;

typedef int (*devexit_get_host_fn)(uint32_t abi_version, const devexit_host_v1 **out);
#define DEVEXIT_GET_HOST_SYMBOL "devexit_get_host"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DEVEXIT_HOST_H */
