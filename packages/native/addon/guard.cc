// Exit layers that do not need JS: the main-thread thread_local guard (glibc only: exit() runs the
// exiting thread's TLS destructors before any exit handler) and late exit handlers (on_exit on
// glibc, atexit elsewhere). Also the rendezvous that makes a second copy of this addon use the
// first copy's registry.
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "internal.h"

#if DEVEXIT_HAVE_TLS_GUARD
#include <sys/syscall.h>
#include <unistd.h>
#endif

extern "C" DEVEXIT_EXPORT int devexit_get_registry(uint32_t abi_version, const devexit_registry_v1 **out);
extern "C" DEVEXIT_EXPORT int devexit_get_host(uint32_t abi_version, const devexit_host_v1 **out);

namespace devexit {
namespace {

// Set once while the addon loads (serialised by the dynamic loader's lock), read-only after.
const devexit_registry_v1 *g_registry = nullptr;
const devexit_host_v1 *g_host = nullptr;
bool g_owner = false;
std::string *g_other_path = nullptr;
std::string *g_load_error = nullptr;

struct GuardState {
  std::mutex mu;
  std::string tls_armed_by;
  bool asked_off_main = false;  // arming was asked from a thread that is not the main one
  std::set<std::string> runtimes;
  std::vector<std::string> exit_hooks;
};
GuardState &G() {
  static GuardState &g = *new GuardState();
  return g;
}

void LateExit(int status) {
  if (!(EnabledLayers() & kLayerAtexit)) return;
  CloseRequest req;
  req.layer = "atexit";
  req.mark_exiting = true;
  req.on_deadline = TimeoutAction::kExitNow;
  req.exit_code = status;
  RunClose(req);
}

#if DEVEXIT_HAVE_ON_EXIT
void LateExitHook(int status, void *) { LateExit(status); }
void FastExitHook(int status, void *) { QuickExit(status); }
#else
void LateExitHook() { LateExit(-1); }  // atexit handlers cannot see the status
#endif

// One more exit handler, registered now: it runs before every handler registered earlier (a
// runtime's lazily registered teardown included). Says so when it cannot be armed.
void AddLateExitHook(const std::string &why) {
#if DEVEXIT_HAVE_ON_EXIT
  const bool ok = on_exit(LateExitHook, nullptr) == 0;
#else
  const bool ok = atexit(LateExitHook) == 0;
#endif
  if (ok) {
    G().exit_hooks.push_back(why);
    return;
  }
  const std::string text = "devexit: could not install an exit handler (" + why +
                           "): services are not closed by the atexit layer on this exit path";
  AddWarning(text);
  WriteStderr(text + "\n");  // may be on a service thread with no JS to emit it
}

#if DEVEXIT_HAVE_TLS_GUARD
bool OnMainThread() { return syscall(SYS_gettid) == getpid(); }

struct MainThreadGuard {
  bool armed = false;
  ~MainThreadGuard() {
    if (!armed || !(EnabledLayers() & kLayerTls)) return;
    CloseRequest req;
    req.layer = "tls";
    req.mark_exiting = true;
    req.on_deadline = TimeoutAction::kExitFirstHook;
    RunClose(req);
  }
};
thread_local MainThreadGuard t_guard;
#endif

int ArmOwnGuard(const char *by) {
#if DEVEXIT_HAVE_TLS_GUARD
  std::lock_guard<std::mutex> lock(G().mu);
  if (!OnMainThread()) {
    if (!t_guard.armed) G().asked_off_main = true;
    return 0;
  }
  if (!t_guard.armed) {
    t_guard.armed = true;  // first use on this thread registers its destructor
    G().tls_armed_by = by ? by : "unknown";
  }
  return 1;
#else
  (void)by;
  return 0;  // no such layer here: the JS layer and exit handlers cover the exit paths
#endif
}

const devexit_host_v1 *OtherHost(const std::string &path) {
  devexit_get_host_fn get_host = nullptr;
#if defined(_WIN32)
  const int n = MultiByteToWideChar(CP_UTF8, 0, path.c_str(), -1, nullptr, 0);
  std::wstring wide(n > 0 ? n : 1, L'\0');
  MultiByteToWideChar(CP_UTF8, 0, path.c_str(), -1, &wide[0], n);
  if (HMODULE m = GetModuleHandleW(wide.c_str()))
    get_host = reinterpret_cast<devexit_get_host_fn>(
        reinterpret_cast<void (*)()>(GetProcAddress(m, DEVEXIT_GET_HOST_SYMBOL)));
#else
  void *h = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return nullptr;
  void *sym = dlsym(h, DEVEXIT_GET_HOST_SYMBOL);
  memcpy(&get_host, &sym, sizeof get_host);
  dlclose(h);
#endif
  const devexit_host_v1 *host = nullptr;
  // Version 1 is all a copy needs; the binding uses later fields when the owner has them.
  if (!get_host || get_host(1, &host) != DEVEXIT_OK) return nullptr;
  return host;
}

// Runs while the addon loads (.init_array), under the loader's lock: copies loading at once in two
// threads are serialised here, so exactly one becomes the owner.
void OnLoad() {
  char path[4096];
  if (devexit_get_registry_fn other = devexit__lookup(&devexit_get_registry, path, sizeof path)) {
    const devexit_registry_v1 *table = nullptr;
    const int rc = other(DEVEXIT_ABI_VERSION, &table);
    g_other_path = new std::string(path);
    const char *missing = rc != DEVEXIT_OK || !table ? "registry ABI " : nullptr;
    const devexit_host_v1 *host = missing ? nullptr : OtherHost(*g_other_path);
    if (!missing && !host) missing = "host ABI ";
    if (missing) {
      g_load_error = new std::string("another copy of @devexit/native at " + *g_other_path +
                                     " was loaded first and does not provide " + missing +
                                     std::to_string(DEVEXIT_ABI_VERSION) +
                                     "; install one version (pnpm dedupe / npm dedupe)");
      return;
    }
    g_registry = table;
    g_host = host;
    g_host->arm_main_thread("init_array (shared copy)");
    return;
  }
  g_owner = true;
  InitOwnerState();
  g_registry = OwnTable();
  g_host = OwnHostTable();
  PinSelf();
  AddLateExitHook("load");
  ArmOwnGuard("init_array");
}

const bool g_loaded = (OnLoad(), true);

}  // namespace

int ArmMainThread(const char *by) { return g_owner ? ArmOwnGuard(by) : g_host ? g_host->arm_main_thread(by) : 0; }

bool AddFastExitHook() {
#if DEVEXIT_HAVE_ON_EXIT
  return on_exit(FastExitHook, nullptr) == 0;
#else
  return false;
#endif
}

void RuntimeInitialised(const char *runtime) {
  if (!runtime || !runtime[0]) runtime = "unnamed";
  GuardState &g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.runtimes.insert(runtime).second) return;
  // Registered after the runtime's own (lazy) teardown, so it runs before it.
  AddLateExitHook(std::string("after ") + runtime);
}

// Warnings for @devexit/native's JS to emit, once per process. The main-thread guard is checked
// now, when the layers in force are known: asked from a Worker and never armed since.
size_t TakeGuardWarnings(char *buf, size_t size) {
#if DEVEXIT_HAVE_TLS_GUARD
  {
    GuardState &g = G();
    std::lock_guard<std::mutex> lock(g.mu);
    if (g.asked_off_main && g.tls_armed_by.empty() && (EnabledLayers() & kLayerTls))
      AddWarning(
          "devexit: the main-thread guard is not armed: @devexit/native was first loaded in a Worker. Until the main "
          "thread loads devexit, its exits rely on exit handlers alone, and teardown a runtime registers after them "
          "(ROCm's compiler, in its first compile) runs first; preload it with `node -r @devexit/native/register`");
  }
#endif
  return TakeWarnings(buf, size);
}

size_t StateJson(char *buf, size_t size) {
  GuardState &g = G();
  std::string out;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    const uint32_t layers = EnabledLayers();
    out = "{\"owner\":true,\"platform\":\"" + std::string(PlatformName()) + "\",\"available\":{\"tls\":" +
          (DEVEXIT_HAVE_TLS_GUARD ? "true" : "false") + ",\"exitStatus\":" + (DEVEXIT_HAVE_ON_EXIT ? "true" : "false") +
          "},\"layers\":{\"js\":" + (layers & kLayerJs ? "true" : "false") +
          ",\"tls\":" + (layers & kLayerTls ? "true" : "false") + ",\"atexit\":" + (layers & kLayerAtexit ? "true" : "false") +
          "},\"tls\":{\"armed\":" + (g.tls_armed_by.empty() ? "false" : "true") + ",\"by\":\"" +
          JsonEscape(g.tls_armed_by) + "\"},\"atexitHooks\":[";
    for (size_t i = 0; i < g.exit_hooks.size(); i++) out += (i ? ",\"" : "\"") + JsonEscape(g.exit_hooks[i]) + "\"";
    out += "]," + SettingsJson() + ",\"abi\":" + std::to_string(DEVEXIT_ABI_VERSION) +
           ",\"hostAbi\":" + std::to_string(DEVEXIT_HOST_ABI_VERSION) + "}";
  }
  return CopyOut(out, buf, size);
}

// For the binding: the registry this copy uses, and why there is none.
const devexit_registry_v1 *Registry() { return g_loaded ? g_registry : nullptr; }
const devexit_host_v1 *Host() { return g_host; }
bool IsOwner() { return g_owner; }
const char *LoadError() { return g_load_error ? g_load_error->c_str() : nullptr; }
const char *OtherCopyPath() { return g_other_path ? g_other_path->c_str() : nullptr; }

}  // namespace devexit

extern "C" int devexit_get_registry(uint32_t abi_version, const devexit_registry_v1 **out) {
  using namespace devexit;
  if (!out) return DEVEXIT_ERR_INVALID;
  *out = nullptr;
  if (!g_registry) return DEVEXIT_ERR_NOT_LOADED;
  if (abi_version == 0 || abi_version > g_registry->abi_version) return DEVEXIT_ERR_ABI;
  *out = g_registry;
  return DEVEXIT_OK;
}

extern "C" int devexit_get_host(uint32_t abi_version, const devexit_host_v1 **out) {
  using namespace devexit;
  if (!out) return DEVEXIT_ERR_INVALID;
  *out = nullptr;
  if (!g_host) return DEVEXIT_ERR_NOT_LOADED;
  if (abi_version == 0 || abi_version > g_host->abi_version) return DEVEXIT_ERR_ABI;
  *out = g_host;
  return DEVEXIT_OK;
}
