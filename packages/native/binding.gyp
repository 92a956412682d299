{
  "targets": [
    {
      "target_name": "devexit_native",
      "sources": ["addon/binding.cc", "addon/registry.cc", "addon/guard.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "include"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "DEVEXIT_VERSION=\"<!(node -p \"require('./package.json').version\")\""],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags": ["-fvisibility=hidden", "-Wall", "-Wextra"],
      "cflags_cc": ["-std=c++17", "-fvisibility=hidden", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "ldflags": ["-Wl,-z,nodelete", "-pthread"],
      "libraries": ["-ldl"]
    }
  ]
}
