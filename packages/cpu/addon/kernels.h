// Kernels as the queue sees them: built-ins (C++) and user kernels (dlopen'ed), one ABI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "devexit_cpu_kernel.h"

namespace devexit_cpu {

struct KernelEntry {
  std::string name;
  devexit_cpu_kernel_fn_v1 fn = nullptr;
  // Runs once on the queue thread before the chunks (e.g. zeroing a reduction's output).
  void (*prologue)(const devexit_cpu_arg_v1 *args, uint32_t nargs) = nullptr;
  // Argument kinds a built-in requires; empty for user kernels (unchecked).
  std::vector<uint32_t> signature;
  bool builtin = false;
};

// Process-wide, append-only; ids index it. Never freed: launches hold raw pointers.
uint32_t RegisterKernel(KernelEntry *entry);
const KernelEntry *KernelById(uint32_t id);
// dlopen (never dlclose) + dlsym; returns the id or -1 with *error set.
int LoadUserKernel(const std::string &path, const std::string &entry, std::string *error);

}  // namespace devexit_cpu
