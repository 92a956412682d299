{
  "targets": [
    {
      "target_name": "devexit_example",
      "sources": ["addon/binding.cc", "addon/host_queue.cc"],
      "include_dirs": ["<!@(node -p \"require('@devexit/native/gyp').include_dirs\")"],
      "defines": ["<!@(node -p \"require('@devexit/native/gyp').defines\")"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags": ["<!@(node -p \"require('@devexit/native/gyp').cflags\")"],
      "cflags_cc": ["<!@(node -p \"require('@devexit/native/gyp').cflags_cc\")"],
      "ldflags": ["<!@(node -p \"require('@devexit/native/gyp').ldflags\")"],
      "libraries": ["<!@(node -p \"require('@devexit/native/gyp').libraries\")"]
    }
  ]
}
