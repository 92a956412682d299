// The directory of devexit.h, for backend binding.gyp files:
//   "include_dirs": ["<!(node -p \"require('@devexit/native/include')\")"]
// Plain JS (not built from src/) so that it works before this package is built.
module.exports = require('node:path').join(__dirname, 'include');
