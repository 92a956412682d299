#include "platform.h"

#include <cstdio>

#if defined(_WIN32)
#include <io.h>
#include <windows.h>
#else
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#endif

namespace devexit {

void WriteStderr(const std::string &text) {
  const char *p = text.data();
  size_t left = text.size();
  while (left > 0) {
#if defined(_WIN32)
    int n = _write(2, p, static_cast<unsigned>(left > 0x7fffffff ? 0x7fffffff : left));
#else
    ssize_t n = write(2, p, left);
#endif
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void PinSelf() {
#if defined(_WIN32)
  HMODULE self = nullptr;
  GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_PIN,
                     reinterpret_cast<LPCWSTR>(&PinSelf), &self);
#elif defined(__APPLE__)
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&PinSelf), &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);  // a reference never dropped
#endif
  // Linux and other ELF platforms: linked with -z nodelete (gyp.js).
}

void QuickExit(int code) {
  fflush(nullptr);
  std::_Exit(code);
}

void QuickExitBySignal(int signal) {
  fflush(nullptr);
#if !defined(_WIN32)
  // PID 1 (a container's entrypoint): the kernel drops signals without a handler; end as a shell
  // would report that signal.
  if (getpid() == 1) std::_Exit(128 + signal);
  struct sigaction action = {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  sigaction(signal, &action, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signal);
  pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  kill(getpid(), signal);
  // Delivered to this thread or another: the default action ends the process before long.
  for (int i = 0; i < 200; i++) usleep(10000);
#endif
  std::_Exit(128 + signal);
}

int MainThreadState() {
#if defined(__linux__)
  return syscall(SYS_gettid) == getpid() ? 1 : 0;
#elif defined(__APPLE__)
  return pthread_main_np() ? 1 : 0;
#else
  return -1;
#endif
}

const char *PlatformName() {
#if DEVEXIT_HAVE_TLS_GUARD
  return "glibc";
#elif defined(DEVEXIT_PORTABLE)
  return "portable";
#elif defined(__APPLE__)
  return "macos";
#elif defined(_WIN32)
  return "windows";
#else
  return "other";
#endif
}

}  // namespace devexit
