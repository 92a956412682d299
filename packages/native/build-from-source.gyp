{
  "targets": [
    {
      "target_name": "devexit_native",
      "sources": ["<!@(node -p \"require('./gyp').sources\")"],
      "include_dirs": ["<!@(node -p \"require('./gyp').include_dirs\")"],
      "defines": ["<!@(node -p \"require('./gyp').defines\")", "DEVEXIT_VERSION=\"<!(node -p \"require('./gyp').version\")\""],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags": ["<!@(node -p \"require('./gyp').cflags\")"],
      "cflags_cc": ["<!@(node -p \"require('./gyp').cflags_cc\")"],
      "ldflags": ["<!@(node -p \"require('./gyp').ldflags\")"],
      "libraries": ["<!@(node -p \"require('./gyp').libraries\")"]
    }
  ]
}
