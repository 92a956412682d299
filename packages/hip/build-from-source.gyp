{
  "targets": [
    {
      "target_name": "devexit_hip",
      "sources": ["addon/hip_addon.cc", "addon/hip_api.cc"],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "<!(node -p \"require('@devexit/native/include')\")"
      ],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-fvisibility=hidden", "-fexceptions", "-Wall"],
      "ldflags": ["-Wl,-z,nodelete", "-pthread"],
      "libraries": ["-ldl"]
    }
  ]
}
