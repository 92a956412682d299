#include "nvrtc_api.h"

#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "devexit_service.hpp"

namespace devexit_cuda {

namespace {

template <typename F>
bool Sym(void *lib, const char *name, F *out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

// NVRTC opens libnvrtc-builtins by soname at its first compile. When NVRTC itself came from an
// explicit path, load the builtins beside it first: the loader then finds them by soname.
void PreloadBuiltinsBeside(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return;
  std::string dir = path.substr(0, slash);
  DIR *d = opendir(dir.c_str());
  if (!d) return;
  while (dirent *e = readdir(d)) {
    if (strncmp(e->d_name, "libnvrtc-builtins.so", 20) == 0) {
      dlopen((dir + "/" + e->d_name).c_str(), RTLD_NOW | RTLD_LOCAL);
      break;
    }
  }
  closedir(d);
}

const NvrtcApi *LoadOnce(std::string *error) {
  std::vector<std::string> candidates;
  const char *env = getenv("DEVEXIT_NVRTC_LIBRARY");
  const bool overridden = env && *env;
  if (overridden) candidates.push_back(env);
  else candidates = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"};
  void *lib = nullptr;
  std::string path, tried;
  for (const std::string &c : candidates) {
    if (overridden) PreloadBuiltinsBeside(c);
    lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      path = c;
      break;
    }
    const char *why = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(why ? why : c + ": cannot be loaded");
  }
  if (!lib) {
    *error = "NVRTC not found (" + tried + ")" +
             (overridden ? " (DEVEXIT_NVRTC_LIBRARY)" : "; install NVRTC (Debian: libnvrtc11.2) or set DEVEXIT_NVRTC_LIBRARY");
    return nullptr;
  }
  // NVRTC registered its exit handlers while it loaded: arm the registry's late handler after them.
  if (const devexit_registry_v1 *reg = devexit::Registry()) reg->runtime_initialised("nvrtc");
  auto *api = new NvrtcApi();  // lives for the process, like the library
  api->path = path;
  bool ok = Sym(lib, "nvrtcVersion", &api->nvrtcVersion) && Sym(lib, "nvrtcCreateProgram", &api->nvrtcCreateProgram) &&
            Sym(lib, "nvrtcCompileProgram", &api->nvrtcCompileProgram) &&
            Sym(lib, "nvrtcGetPTXSize", &api->nvrtcGetPTXSize) && Sym(lib, "nvrtcGetPTX", &api->nvrtcGetPTX) &&
            Sym(lib, "nvrtcGetProgramLogSize", &api->nvrtcGetProgramLogSize) &&
            Sym(lib, "nvrtcGetProgramLog", &api->nvrtcGetProgramLog) &&
            Sym(lib, "nvrtcDestroyProgram", &api->nvrtcDestroyProgram) &&
            Sym(lib, "nvrtcGetErrorString", &api->nvrtcGetErrorString);
  if (!ok) {
    *error = path + " is not an NVRTC this backend supports (a required symbol is missing)";
    return nullptr;
  }
  api->nvrtcVersion(&api->major, &api->minor);
  int n = 0;
  if (Sym(lib, "nvrtcGetNumSupportedArchs", &api->nvrtcGetNumSupportedArchs) &&
      Sym(lib, "nvrtcGetSupportedArchs", &api->nvrtcGetSupportedArchs) && api->nvrtcGetNumSupportedArchs(&n) == 0 &&
      n > 0 && n < 1024) {
    api->archs.resize(static_cast<size_t>(n));
    if (api->nvrtcGetSupportedArchs(api->archs.data()) != 0) api->archs.clear();
    std::sort(api->archs.begin(), api->archs.end());
  }
  return api;
}

}  // namespace

const NvrtcApi *LoadNvrtc(std::string *error) {
  struct Loaded {
    std::mutex mu;
    bool tried = false;
    const NvrtcApi *api = nullptr;
    std::string error;
  };
  static Loaded &s = *new Loaded();  // never destroyed: the compiler thread may ask during exit
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.tried) {
    s.tried = true;
    s.api = LoadOnce(&s.error);
  }
  if (!s.api && error) *error = s.error;
  return s.api;
}

std::string NvrtcErrorName(const NvrtcApi *api, nvrtcResult r) {
  const char *name = api && api->nvrtcGetErrorString ? api->nvrtcGetErrorString(r) : nullptr;
  // NVRTC answers "NVRTC_ERROR unknown" for values it does not know.
  if (name && strncmp(name, "NVRTC_", 6) == 0 && !strchr(name, ' ')) return name;
  return "NVRTC_ERROR_UNKNOWN_" + std::to_string(r);
}

namespace {

// NVRTC 11 installs SIGINT and SIGTERM handlers of its own during its first compile and then puts
// the previous ones back with signal(), which drops their flags. Node's handler for both ends the
// process by raising the signal again, and relies on SA_RESETHAND to find the default action
// then: without it, it re-enters itself and the process never ends (measured: a cuda child that
// compiled survived SIGTERM in 9 of 10 runs). Put back what was there, flags and all, unless
// someone installed another handler meanwhile (a JS listener on another thread).
class SignalFlagsGuard {
 public:
  SignalFlagsGuard() {
    for (int i = 0; i < 2; i++) ok_[i] = sigaction(kSignals[i], nullptr, &saved_[i]) == 0;
  }
  ~SignalFlagsGuard() {
    for (int i = 0; i < 2; i++) {
      struct sigaction now;
      if (!ok_[i] || sigaction(kSignals[i], nullptr, &now) != 0) continue;
      const bool same_handler = reinterpret_cast<void *>(now.sa_handler) == reinterpret_cast<void *>(saved_[i].sa_handler);
      if (same_handler && now.sa_flags != saved_[i].sa_flags) sigaction(kSignals[i], &saved_[i], nullptr);
    }
  }

 private:
  static constexpr int kSignals[2] = {SIGINT, SIGTERM};
  struct sigaction saved_[2];
  bool ok_[2] = {false, false};
};

}  // namespace

CompileResult CompileToPtx(const NvrtcApi *api, const std::string &source, const std::string &name,
                           const std::vector<std::string> &options) {
  CompileResult r;
  auto failed = [&](const char *call, nvrtcResult rc) {
    r.name = NvrtcErrorName(api, rc);
    r.error = std::string(call) + " failed: " + r.name + " (" + std::to_string(rc) + ")" +
              (r.log.empty() ? "" : "\n" + r.log);
  };
  nvrtcProgram prog = nullptr;
  nvrtcResult rc = api->nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (rc != 0) {
    failed("nvrtcCreateProgram", rc);
    return r;
  }
  std::vector<const char *> opts;
  for (const std::string &o : options) opts.push_back(o.c_str());
  {
    SignalFlagsGuard guard;
    rc = api->nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  }
  size_t log_size = 0;
  if (api->nvrtcGetProgramLogSize(prog, &log_size) == 0 && log_size > 1) {
    r.log.resize(log_size);
    if (api->nvrtcGetProgramLog(prog, &r.log[0]) == 0) r.log.resize(strlen(r.log.c_str()));
    else r.log.clear();
    while (!r.log.empty() && (r.log.back() == '\n' || r.log.back() == ' ')) r.log.pop_back();
  }
  if (rc != 0) {
    failed("nvrtcCompileProgram", rc);
    api->nvrtcDestroyProgram(&prog);
    return r;
  }
  size_t size = 0;
  rc = api->nvrtcGetPTXSize(prog, &size);
  if (rc == 0 && size > 0) {
    r.ptx.resize(size);
    rc = api->nvrtcGetPTX(prog, &r.ptx[0]);
    r.ptx.resize(strlen(r.ptx.c_str()));  // the size counts the terminating NUL
  }
  api->nvrtcDestroyProgram(&prog);
  if (rc != 0) {
    r.log.clear();
    failed("nvrtcGetPTX", rc);
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace devexit_cuda
