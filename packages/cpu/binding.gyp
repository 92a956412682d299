{
  "targets": [
    {
      "target_name": "devexit_cpu",
      "sources": ["addon/binding.cc", "addon/device.cc", "addon/kernels.cc"],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "<!(node -p \"require('@devexit/native/include')\")",
        "include"
      ],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags": ["-fvisibility=hidden", "-Wall", "-Wextra", "-O2"],
      "cflags_cc": ["-std=c++17", "-fvisibility=hidden", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter", "-O2"],
      "ldflags": ["-Wl,-z,nodelete", "-pthread"],
      "libraries": ["-ldl"]
    }
  ]
}
