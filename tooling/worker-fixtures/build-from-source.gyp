# Built as a third-party binding is built (node-addon-api's own C++-exceptions target), not with
# @devexit/native's gyp flags: NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS there would hide the crash.
{
  "targets": [
    {
      "target_name": "standin_binding",
      "sources": ["addon/standin_binding.cc"],
      "dependencies": ["<!(node -p \"require('node-addon-api').targets\"):node_addon_api_except"],
      "cflags_cc": ["-std=c++17"]
    }
  ]
}
