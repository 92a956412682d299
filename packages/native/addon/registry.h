// The process-wide registry and close engine. Everything here is pure native code: it runs in
// exit layers where V8, libuv and the platform are gone.
#pragma once

#include <cstdint>
#include <string>

#include "devexit.h"
#include "devexit_host.h"

namespace devexit {

// Exit layers, as bits of the DEVEXIT_LAYERS mask.
enum Layer : uint32_t {
  kLayerJs = 1u << 0,      // the JS 'exit' listener (in @devexit/core)
  kLayerTls = 1u << 1,     // main-thread thread_local destructor
  kLayerAtexit = 1u << 2,  // on_exit handlers: at load and after each runtime's first use
  kLayerAll = kLayerJs | kLayerTls | kLayerAtexit,
};

enum OnTimeout : int { kTimeoutExit = 0, kTimeoutWarn = 1 };

// What the caller of RunClose may do when the deadline passes.
enum class TimeoutAction {
  kNone,          // explicit close: report only
  kExitNow,       // we know the exit code: flush stdio and _exit(code) here
  kExitFirstHook  // main-thread TLS layer: register an on_exit hook that runs before all others
};

void InitOwnerState();
const devexit_registry_v1 *OwnTable();
const devexit_host_v1 *OwnHostTable();
uint32_t EnabledLayers();
int64_t NowNs();

// Runs every registered close (see devexit.h close_all). exit_code < 0: unknown.
int RunClose(const char *layer, bool mark_exiting, TimeoutAction on_deadline, int exit_code);

// Main-thread guard (guard.cc).
int ArmMainThread(const char *by);
size_t StateJson(char *buf, size_t size);

std::string JsonEscape(const std::string &s);
size_t CopyOut(const std::string &s, char *buf, size_t size);

}  // namespace devexit
