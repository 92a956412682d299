#include "builtins.h"

#include <map>
#include <mutex>

namespace devexit_cuda {

namespace {
struct Cache {
  std::mutex mu;
  std::map<std::string, BuiltinPtx> by_arch;
};
Cache &TheCache() {
  static Cache &c = *new Cache();  // never destroyed: queue threads may read it during exit
  return c;
}
}  // namespace

bool FindBuiltins(const std::string &arch, BuiltinPtx *out) {
  Cache &c = TheCache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.by_arch.find(arch);
  if (it == c.by_arch.end()) return false;
  *out = it->second;
  return true;
}

void StoreBuiltins(const std::string &arch, const BuiltinPtx &ptx) {
  Cache &c = TheCache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.by_arch.find(arch);
  // A success stays; a failure may be replaced by a later success.
  if (it != c.by_arch.end() && it->second.ok) return;
  c.by_arch[arch] = ptx;
}

}  // namespace devexit_cuda
