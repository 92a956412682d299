{
  "targets": [
    {
      "target_name": "devexit_crash_rt",
      "type": "shared_library",
      "product_prefix": "lib",
      "product_dir": "<(PRODUCT_DIR)",
      "sources": ["runtime/crash_rt.c"],
      "cflags": ["-fvisibility=hidden", "-O2"],
      "ldflags": ["-pthread"]
    },
    {
      "target_name": "exit_fixture",
      "sources": ["addon/exit_fixture.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "<!(node -p \"require('@devexit/native/include')\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-fvisibility=hidden", "-fexceptions", "-Wall"],
      "ldflags": ["-Wl,-z,nodelete", "-pthread"],
      "libraries": ["-ldl"]
    }
  ]
}
