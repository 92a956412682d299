{
  "targets": [
    {
      "target_name": "cuda",
      "type": "shared_library",
      "product_prefix": "lib",
      "product_extension": "so.1",
      "sources": ["runtime/standin_cuda.cc", "runtime/standin_modules.cc"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
      "cflags_cc": ["-std=c++17", "-fvisibility=hidden", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "ldflags": ["-pthread"]
    },
    {
      "target_name": "nvrtc_control",
      "sources": ["fixture/nvrtc_control.cc"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-fvisibility=hidden", "-O2", "-Wall"],
      "ldflags": ["-Wl,-z,nodelete", "-pthread"],
      "libraries": ["-ldl"]
    }
  ]
}
