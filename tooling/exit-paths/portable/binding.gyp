{
  "targets": [
    {
      "target_name": "devexit_native",
      "sources": ["<!@(node -p \"require('@devexit/native/gyp').sources\")"],
      "include_dirs": ["<!@(node -p \"require('@devexit/native/gyp').include_dirs\")"],
      "defines": [
        "<!@(node -p \"require('@devexit/native/gyp').defines\")",
        "DEVEXIT_VERSION=\"<!(node -p \"require('@devexit/native/gyp').version\")\"",
        "DEVEXIT_PORTABLE=1"
      ],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags": ["<!@(node -p \"require('@devexit/native/gyp').cflags\")"],
      "cflags_cc": ["<!@(node -p \"require('@devexit/native/gyp').cflags_cc\")"],
      "ldflags": ["<!@(node -p \"require('@devexit/native/gyp').ldflags\")"],
      "libraries": ["<!@(node -p \"require('@devexit/native/gyp').libraries\")"]
    }
  ]
}
