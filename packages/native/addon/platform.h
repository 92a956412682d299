// What the platform offers the exit layers, decided at compile time. DEVEXIT_PORTABLE (gyp.js
// adds it when DEVEXIT_PORTABLE=1 is set for the build) compiles the glibc-only pieces out on
// Linux, so that CI runs what musl, macOS and Windows get.
#pragma once

#include <cstdlib>  // first: defines __GLIBC__ on glibc

#if defined(__GLIBC__) && !defined(DEVEXIT_PORTABLE)
// on_exit: exit handlers see the exit status.
#define DEVEXIT_HAVE_ON_EXIT 1
// exit() runs the exiting thread's thread_local destructors before any exit handler, so a
// destructor armed on the main thread runs before every runtime's teardown.
#define DEVEXIT_HAVE_TLS_GUARD 1
#else
#define DEVEXIT_HAVE_ON_EXIT 0
#define DEVEXIT_HAVE_TLS_GUARD 0
#endif

#if defined(_WIN32)
#define DEVEXIT_EXPORT __declspec(dllexport)
#else
#define DEVEXIT_EXPORT __attribute__((visibility("default")))
#endif

#include <string>

namespace devexit {

// One write to stderr, bypassing stdio buffers (usable in any exit layer).
void WriteStderr(const std::string &text);
// Keeps this addon mapped for the process's life where the linker cannot (-z nodelete is Linux
// only): Node unloads addons first loaded by a Worker while their threads may still run.
void PinSelf();
// Ends the process now: exit handlers and library teardown are skipped.
[[noreturn]] void QuickExit(int code);
// Ends the process by `signal`, its default action restored (as a shell sees an unhandled one);
// where signals cannot end it so, with 128 + signal.
[[noreturn]] void QuickExitBySignal(int signal);
// 1 on the process's main thread, 0 on another thread, -1 where the platform cannot tell. For JS:
// asking worker_threads costs loading it (~1-3 ms), on the exit path.
int MainThreadState();
// "glibc", "portable (musl, macOS, Windows layers)": for the state JSON.
const char *PlatformName();

}  // namespace devexit
