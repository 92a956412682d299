// hiprtc: HIP C++ to code objects, on whichever service thread asks (the compiler service, or a
// queue compiling the built-in kernels for its device).
#pragma once

#include <string>
#include <vector>

#include "hip_api.h"

namespace devexit_hip {

struct CompileResult {
  bool ok = false;
  std::string code;
  std::string error;  // why, for people (with the compiler log)
  std::string name;   // HIPRTC_ERROR_... when hiprtc said so
};

// Refuses targets this runtime's hiprtc would abort on (RefuseArch) before calling it. Tells the
// registry that hiprtc was used (it loads its code-object compiler on the first compile).
CompileResult Compile(const HipApi *api, const std::string &source, const std::string &program_name,
                      const std::vector<std::string> &options);

// The built-in kernels' code object for a target ("" = hiprtc's default), compiled once per
// process and target.
const CompileResult &BuiltinCode(const HipApi *api, const std::string &arch);

// The device's target name ("gfx90a:sramecc+:xnack-"), or "" when the runtime does not say.
std::string DeviceArch(const HipApi *api, int index);

}  // namespace devexit_hip
