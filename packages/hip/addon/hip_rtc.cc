#include "hip_rtc.h"

#include <cctype>
#include <cstring>
#include <map>
#include <mutex>

#include "builtin_kernels.h"
#include "devexit_service.hpp"

namespace devexit_hip {

CompileResult Compile(const HipApi *api, const std::string &source, const std::string &program_name,
                      const std::vector<std::string> &options) {
  CompileResult r;
  if (!api->has_rtc()) {
    r.error = "hiprtc is not available: " + api->path + " lacks hiprtc and no libhiprtc.so could be loaded";
    return r;
  }
  for (const auto &o : options) {
    if (o.rfind("--offload-arch=", 0) == 0) {
      r.error = RefuseArch(api, o.substr(15));
      if (!r.error.empty()) return r;
    }
  }
  std::vector<const char *> opts;
  for (const auto &o : options) opts.push_back(o.c_str());
  hiprtcProgram prog = nullptr;
  hiprtcResult rc = api->hiprtcCreateProgram(&prog, source.c_str(), program_name.c_str(), 0, nullptr, nullptr);
  if (rc != 0) {
    r.name = HiprtcErrorName(rc);
    r.error = "hiprtcCreateProgram failed: " + HiprtcErrorText(rc);
    return r;
  }
  rc = api->hiprtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  // hiprtc loads its code-object compiler, and registers that one's teardown, on first compile.
  if (const devexit_registry_v1 *reg = devexit::Registry()) reg->runtime_initialised("hiprtc");
  std::string log;
  size_t log_size = 0;
  if (api->hiprtcGetProgramLogSize(prog, &log_size) == 0 && log_size > 1) {
    log.resize(log_size);
    if (api->hiprtcGetProgramLog(prog, &log[0]) == 0) log.resize(strlen(log.c_str()));
    else log.clear();
  }
  if (rc != 0) {
    r.name = HiprtcErrorName(rc);
    r.error = "hiprtcCompileProgram failed: " + HiprtcErrorText(rc) + (log.empty() ? "" : "\n" + log);
    api->hiprtcDestroyProgram(&prog);
    return r;
  }
  size_t size = 0;
  rc = api->hiprtcGetCodeSize(prog, &size);
  if (rc == 0) {
    r.code.resize(size);
    rc = api->hiprtcGetCode(prog, &r.code[0]);
  }
  api->hiprtcDestroyProgram(&prog);
  if (rc != 0) {
    r.name = HiprtcErrorName(rc);
    r.error = "hiprtcGetCode failed: " + HiprtcErrorText(rc);
    return r;
  }
  r.ok = true;
  return r;
}

namespace {
struct BuiltinCache {
  std::mutex mu;
  std::map<std::string, CompileResult> by_arch;
};
BuiltinCache &TheBuiltinCache() {
  static BuiltinCache &cache = *new BuiltinCache();  // never destroyed: queue threads may still read it
  return cache;
}
}  // namespace

const CompileResult &BuiltinCode(const HipApi *api, const std::string &arch) {
  BuiltinCache &cache = TheBuiltinCache();
  std::lock_guard<std::mutex> lock(cache.mu);
  auto it = cache.by_arch.find(arch);
  if (it != cache.by_arch.end()) return it->second;
  std::vector<std::string> options;
  if (!arch.empty()) options.push_back("--offload-arch=" + arch);
  // std::map never moves its elements: the reference stays valid for the process.
  return cache.by_arch.emplace(arch, Compile(api, devexit::kGpuBuiltinSource, "devexit_builtins.hip", options)).first->second;
}

// Scans the device properties for the target name instead of relying on a struct layout that
// changed between ROCm releases.
std::string DeviceArch(const HipApi *api, int index) {
  if (!api->hipGetDeviceProperties) return "";
  std::vector<char> buf(16384, 0);
  if (api->hipGetDeviceProperties(buf.data(), index) != 0) return "";
  for (size_t i = 256; i + 8 < buf.size(); i++) {
    if (buf[i - 1] == 0 && buf[i] == 'g' && buf[i + 1] == 'f' && buf[i + 2] == 'x' &&
        isxdigit(static_cast<unsigned char>(buf[i + 3]))) {
      size_t end = i;
      while (end < buf.size() && buf[end] && isprint(static_cast<unsigned char>(buf[end]))) end++;
      if (end < buf.size() && buf[end] == 0 && end - i < 64) return std::string(&buf[i], end - i);
    }
  }
  return "";
}

}  // namespace devexit_hip
