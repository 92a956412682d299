{
  "targets": [
    {
      "target_name": "devexit_native",
      "sources": [
        "addon/binding.cc",
        "addon/close_engine.cc",
        "addon/close_job.cc",
        "addon/guard.cc",
        "addon/platform.cc",
        "addon/registry.cc",
        "addon/report.cc",
        "addon/settings.cc",
        "addon/watchdog.cc"
      ],
      "include_dirs": ["<!@(node -p \"require('./gyp').include_dirs\")"],
      "defines": ["<!@(node -p \"require('./gyp').defines\")", "DEVEXIT_VERSION=\"<!(node -p \"require('./package.json').version\")\""],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags": ["<!@(node -p \"require('./gyp').cflags\")"],
      "cflags_cc": ["<!@(node -p \"require('./gyp').cflags_cc\")"],
      "ldflags": ["<!@(node -p \"require('./gyp').ldflags\")"],
      "libraries": ["<!@(node -p \"require('./gyp').libraries\")"]
    }
  ]
}
