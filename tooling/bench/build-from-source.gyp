{
  "targets": [
    {
      "target_name": "devexit_bench",
      "sources": ["addon/bench_addon.cc"],
      "include_dirs": [
        "<!@(node -p \"require('@devexit/native/gyp').include_dirs\")",
        "<!(node -p \"require('path').join(require.resolve('@devexit/native/package.json'), '..', 'addon')\")"
      ],
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
