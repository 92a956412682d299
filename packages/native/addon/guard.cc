// Exit layers that do not need JS: the main-thread thread_local guard (glibc runs a thread's TLS
// destructors in exit() before any atexit handler) and late on_exit hooks. Also the rendezvous
// that makes a second copy of this addon use the first copy's registry.
#include <dlfcn.h>
#include <link.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "registry.h"

extern "C" __attribute__((visibility("default"))) int devexit_get_registry(uint32_t abi_version,
                                                                          const devexit_registry_v1 **out);
extern "C" __attribute__((visibility("default"))) int devexit_get_host(uint32_t abi_version,
                                                                      const devexit_host_v1 **out);

namespace devexit {
std::string ConfigJson();

namespace {

// Set once in the load constructor (serialised by the dynamic loader's lock), read-only after.
const devexit_registry_v1 *g_registry = nullptr;
const devexit_host_v1 *g_host = nullptr;
bool g_owner = false;
std::string *g_other_path = nullptr;
std::string *g_load_error = nullptr;

struct GuardState {
  std::mutex mu;
  std::string tls_armed_by;
  std::set<std::string> runtimes;
  std::vector<std::string> atexit_hooks;
};
GuardState &G() {
  static GuardState *g = new GuardState();
  return *g;
}

bool OnMainThread() { return syscall(SYS_gettid) == getpid(); }

void LateExitHook(int status, void *) {
  if (!(EnabledLayers() & kLayerAtexit)) return;
  RunClose("atexit", true, TimeoutAction::kExitNow, status);
}

struct MainThreadGuard {
  bool armed = false;
  ~MainThreadGuard() {
    if (armed && (EnabledLayers() & kLayerTls)) RunClose("tls", true, TimeoutAction::kExitFirstHook, -1);
  }
};
thread_local MainThreadGuard t_guard;

int CollectNames(struct dl_phdr_info *info, size_t, void *data) {
  auto *names = static_cast<std::vector<std::string> *>(data);
  if (info->dlpi_name && strstr(info->dlpi_name, ".node")) names->emplace_back(info->dlpi_name);
  return 0;
}

// Another copy of @devexit/native already loaded in this process (different path)?
devexit_get_registry_fn FindOtherCopy(std::string *path) {
  std::vector<std::string> names;
  dl_iterate_phdr(CollectNames, &names);  // names only: no dlopen under the phdr lock
  for (const std::string &name : names) {
    void *h = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (!h) continue;
    auto fn = reinterpret_cast<devexit_get_registry_fn>(dlsym(h, DEVEXIT_GET_REGISTRY_SYMBOL));
    dlclose(h);
    if (fn && fn != &devexit_get_registry) {
      *path = name;
      return fn;
    }
  }
  return nullptr;
}

// Runs from .init_array, under the loader's lock: copies loading at once in two threads are
// serialised here, so exactly one becomes the owner.
__attribute__((constructor)) void OnLoad() {
  std::string other_path;
  if (devexit_get_registry_fn other = FindOtherCopy(&other_path)) {
    const devexit_registry_v1 *table = nullptr;
    int rc = other(DEVEXIT_ABI_VERSION, &table);
    g_other_path = new std::string(other_path);
    if (rc != DEVEXIT_OK || !table) {
      g_load_error = new std::string("another copy of @devexit/native at " + other_path +
                                     " was loaded first and does not provide registry ABI " +
                                     std::to_string(DEVEXIT_ABI_VERSION) +
                                     "; install one version (pnpm dedupe / npm dedupe)");
      return;
    }
    void *h = dlopen(other_path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    auto get_host = h ? reinterpret_cast<devexit_get_host_fn>(dlsym(h, DEVEXIT_GET_HOST_SYMBOL)) : nullptr;
    if (h) dlclose(h);
    const devexit_host_v1 *host = nullptr;
    if (!get_host || get_host(DEVEXIT_HOST_ABI_VERSION, &host) != DEVEXIT_OK || !host) {
      g_load_error = new std::string("another copy of @devexit/native at " + other_path +
                                     " was loaded first and does not provide host ABI " +
                                     std::to_string(DEVEXIT_HOST_ABI_VERSION) +
                                     "; install one version (pnpm dedupe / npm dedupe)");
      return;
    }
    g_registry = table;
    g_host = host;
    if (OnMainThread()) g_host->arm_main_thread("init_array (shared copy)");
    return;
  }
  g_owner = true;
  InitOwnerState();
  g_registry = OwnTable();
  g_host = OwnHostTable();
  on_exit(LateExitHook, nullptr);
  G().atexit_hooks.emplace_back("load");
  if (OnMainThread()) ArmMainThread("init_array");
}

}  // namespace

int ArmMainThread(const char *by) {
  if (!g_owner) return g_host ? g_host->arm_main_thread(by) : 0;
  if (!OnMainThread()) return 0;
  std::lock_guard<std::mutex> lock(G().mu);
  if (!t_guard.armed) {
    t_guard.armed = true;  // first use on this thread registers its destructor
    G().tls_armed_by = by ? by : "unknown";
  }
  return 1;
}

void RuntimeInitialised(const char *runtime) {
  if (!runtime || !runtime[0]) runtime = "unnamed";
  GuardState &g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.runtimes.insert(runtime).second) return;
  // Registered after the runtime's own (lazy) teardown, so it runs before it.
  on_exit(LateExitHook, nullptr);
  g.atexit_hooks.emplace_back(std::string("after ") + runtime);
}

size_t StateJson(char *buf, size_t size) {
  GuardState &g = G();
  std::string out;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    uint32_t layers = EnabledLayers();
    out = "{\"owner\":true,\"layers\":{\"js\":" + std::string(layers & kLayerJs ? "true" : "false") +
          ",\"tls\":" + (layers & kLayerTls ? "true" : "false") +
          ",\"atexit\":" + (layers & kLayerAtexit ? "true" : "false") + "},\"tls\":{\"armed\":" +
          (g.tls_armed_by.empty() ? "false" : "true") + ",\"by\":\"" + JsonEscape(g.tls_armed_by) +
          "\"},\"atexitHooks\":[";
    for (size_t i = 0; i < g.atexit_hooks.size(); i++)
      out += (i ? ",\"" : "\"") + JsonEscape(g.atexit_hooks[i]) + "\"";
    out += "]," + ConfigJson() + ",\"abi\":" + std::to_string(DEVEXIT_ABI_VERSION) + "}";
  }
  return CopyOut(out, buf, size);
}

// For the binding: the registry this copy uses, and why there is none.
const devexit_registry_v1 *Registry() { return g_registry; }
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
