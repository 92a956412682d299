{
  "targets": [
    {
      "target_name": "amdhip64",
      "type": "shared_library",
      "product_prefix": "lib",
      "product_dir": "<(PRODUCT_DIR)",
      "sources": ["runtime/standin_hip.cc", "runtime/standin_hiprtc.cc", "runtime/standin_kernels.cc"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
      "cflags_cc": ["-std=c++17", "-fvisibility=hidden", "-O2", "-Wall"],
      "ldflags": ["-pthread"]
    }
  ]
}
